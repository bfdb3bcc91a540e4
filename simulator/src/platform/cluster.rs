//! A target machine made of nodes like a calibrated one: `simulator
//! platform cluster`. The calibrated platform gives the node (its first
//! host's speed, pstates and power, its intra-node model, `[smpi]` costs,
//! collectives and file systems); the user gives the node count, the
//! cores per node, the inter-node network and its topology.

use super::{Host, Mapping, Platform};
use crate::network::topology::Topology;
use crate::network::{FlowSharing, P2pModel, Piecewise, Segment};

/// The inter-node network of a generated cluster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InterNet {
    /// One message's latency between two nodes, seconds (≥ 0).
    pub latency_s: f64,
    /// A node's link bandwidth, bytes/s (> 0, finite).
    pub bandwidth_bytes_per_s: f64,
}

impl InterNet {
    /// Parses `latency=<time>,bandwidth=<rate>` with SimGrid's units
    /// (`1us`, `10GBps`, `100Gbps`; bare numbers are seconds and bytes/s).
    ///
    /// # Errors
    /// A message quoting the part that does not parse, or naming the key
    /// missing or out of range.
    pub fn parse(spec: &str) -> Result<InterNet, String> {
        let (mut lat, mut bw) = (None, None);
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| format!("{part:?}: expected key=value (latency=..., bandwidth=...)"))?;
            match k.trim() {
                "latency" => lat = Some(super::simgrid::parse_time(v).ok_or_else(|| format!("latency={v}: not a time (e.g. 1.5us)"))?),
                "bandwidth" => {
                    bw = Some(super::simgrid::parse_bandwidth(v).ok_or_else(|| format!("bandwidth={v}: not a bandwidth (e.g. 12.5GBps)"))?)
                }
                other => return Err(format!("{other:?}: unknown key (latency, bandwidth)")),
            }
        }
        let latency_s = lat.ok_or("latency=... is missing")?;
        let bandwidth_bytes_per_s = bw.ok_or("bandwidth=... is missing")?;
        if !(latency_s.is_finite() && latency_s >= 0.0) {
            return Err(format!("latency {latency_s} s: must be finite and >= 0"));
        }
        if !(bandwidth_bytes_per_s.is_finite() && bandwidth_bytes_per_s > 0.0) {
            return Err(format!("bandwidth {bandwidth_bytes_per_s} B/s: must be finite and > 0"));
        }
        Ok(InterNet { latency_s, bandwidth_bytes_per_s })
    }
}

/// Parses a topology: `crossbar`, `backbone:<ratio>` (the backbone's
/// capacity over a node link's), `torus:<d1>,<d2>,...` or
/// `fat-tree:<levels>;<down,...>;<up,...>;<count,...>` (SimGrid's
/// `topo_parameters`).
///
/// # Errors
/// A message quoting the specification.
pub fn parse_topology(spec: &str) -> Result<Topology, String> {
    let (kind, params) = spec.split_once(':').unwrap_or((spec, ""));
    match kind {
        "crossbar" if params.is_empty() => Ok(Topology::Crossbar),
        "backbone" => match params.parse::<f64>() {
            Ok(ratio) if ratio.is_finite() && ratio > 0.0 => Ok(Topology::Backbone { ratio }),
            _ => Err(format!("{spec:?}: backbone:<ratio> needs a ratio > 0")),
        },
        "torus" => Topology::from_simgrid("TORUS", params).map_err(|e| format!("{spec:?}: {e}")),
        "fat-tree" => Topology::from_simgrid("FAT_TREE", params).map_err(|e| format!("{spec:?}: {e}")),
        _ => Err(format!("{spec:?}: expected crossbar, backbone:<ratio>, torus:<dims> or fat-tree:<params>")),
    }
}

impl Platform {
    /// `hosts` nodes like `from`'s first host (`cores` each when given),
    /// its intra-node model kept, joined by `inter` on `topology` with
    /// max-min sharing of the node links (`[links]`); ranks placed
    /// block-wise. The inter-node model's eager threshold and overheads
    /// are `from`'s inter-node model's (else its intra-node model's); its
    /// transfer is `latency + bytes / bandwidth`.
    ///
    /// # Errors
    /// A message when `from` has no host, `hosts` or `cores` is 0, or the
    /// result does not validate (a torus whose dimensions do not multiply
    /// to `hosts`, say).
    pub fn cluster(from: &Platform, hosts: usize, cores: Option<u32>, inter: InterNet, topology: Topology) -> Result<Platform, String> {
        let node = from.hosts.first().ok_or("the calibrated platform has no host")?;
        if hosts == 0 || cores == Some(0) {
            return Err("a cluster needs at least one host and one core per host".into());
        }
        let width = (hosts - 1).to_string().len();
        let hosts: Vec<Host> =
            (0..hosts).map(|i| Host { name: format!("node-{i:0width$}"), cores: cores.unwrap_or(node.cores), ..node.clone() }).collect();
        let like = from.network.inter.as_ref().unwrap_or(&from.network.intra);
        let transfer = Piecewise {
            segments: vec![Segment { max_bytes: None, intercept_s: inter.latency_s, bandwidth_bytes_per_s: inter.bandwidth_bytes_per_s }],
        };
        let inter_model = P2pModel { transfer, rma: None, ..like.clone() };
        let mut p = from.clone();
        p.name = format!("{}-cluster-{}", from.name, hosts.len());
        p.hosts = hosts;
        p.mapping = Mapping::Block;
        p.network.inter = Some(inter_model);
        p.links = Some(FlowSharing { link_bw_bytes_per_s: inter.bandwidth_bytes_per_s, topology, ..FlowSharing::unshared() });
        p.validate().map_err(|e| e.to_string())?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibrated() -> Platform {
        let intra = P2pModel {
            eager_threshold_bytes: 4096,
            transfer: Piecewise { segments: vec![Segment { max_bytes: None, intercept_s: 3e-7, bandwidth_bytes_per_s: 5e9 }] },
            send_overhead: Piecewise { segments: vec![Segment { max_bytes: None, intercept_s: 2e-7, bandwidth_bytes_per_s: 1e10 }] },
            recv_overhead: Piecewise::default(),
            rma: None,
        };
        Platform::new("vm", vec![Host::new("vm", 2)], intra)
    }

    #[test]
    fn a_cluster_has_nodes_like_the_calibrated_one_and_the_given_network() {
        let net = InterNet::parse("latency=1.5us, bandwidth=100Gbps").unwrap();
        assert_eq!(net, InterNet { latency_s: 1.5e-6, bandwidth_bytes_per_s: 12.5e9 });
        let from = calibrated();
        let p = Platform::cluster(&from, 64, Some(16), net, parse_topology("torus:4,4,4").unwrap()).unwrap();
        assert_eq!(p.hosts.len(), 64);
        assert!(p.hosts.iter().all(|h| h.cores == 16 && h.speed_ratio == from.hosts[0].speed_ratio));
        assert_eq!((p.hosts[0].name.as_str(), p.hosts[63].name.as_str()), ("node-00", "node-63"));
        assert_eq!(p.network.intra, from.network.intra);
        let inter = p.network.inter.as_ref().unwrap();
        assert_eq!(inter.transfer.eval(12_500), 1.5e-6 + 1e-6);
        assert_eq!((inter.eager_threshold_bytes, &inter.send_overhead), (4096, &from.network.intra.send_overhead));
        let links = p.links.as_ref().unwrap();
        assert_eq!((links.link_bw_bytes_per_s, &links.topology), (12.5e9, &Topology::Torus { dims: vec![4, 4, 4] }));
        // Ranks fill a node's cores before the next node's.
        assert_eq!((p.host_of(15), p.host_of(16)), (0, 1));
    }

    #[test]
    fn bad_specifications_are_refused_by_name() {
        for (spec, word) in [("latency=1us", "bandwidth"), ("latency=x,bandwidth=1GBps", "latency=x"), ("lat=1us", "unknown key")] {
            let e = InterNet::parse(spec).unwrap_err();
            assert!(e.contains(word), "{spec}: {e}");
        }
        assert!(parse_topology("ring").unwrap_err().contains("ring"));
        let net = InterNet::parse("latency=1us,bandwidth=1GBps").unwrap();
        let e = Platform::cluster(&calibrated(), 10, None, net, parse_topology("torus:4,4").unwrap()).unwrap_err();
        assert!(e.contains("torus") || e.contains("16") || e.contains("10"), "{e}");
        assert!(Platform::cluster(&calibrated(), 0, None, net, Topology::Crossbar).is_err());
    }
}

//! [`SmpiProps`]: SMPI's point-to-point model as `smpi/*` properties
//! (SimGrid 3.32, "Configuring SimGrid": `smpi/os`, `smpi/ois`,
//! `smpi/or`, `smpi/bw-factor`, `smpi/lat-factor`,
//! `smpi/async-small-thresh`, `smpi/send-is-detached-thresh`,
//! `smpi/wtime`, `smpi/iprobe`), with the link they are relative to.
//!
//! SMPI (Heinrich et al., IEEE Cluster 2017, §6.3) splits a
//! point-to-point message of `s` bytes into a sender overhead `smpi/os`
//! (`isend`: `smpi/ois`), a network time `lat_factor(s) × L + s /
//! (bw_factor(s) × B)` on a route of latency `L` and bandwidth `B`, and a
//! receiver overhead `smpi/or`. Each property is a `;`-separated list of
//! entries, each starting with a size threshold in bytes:
//! `size:intercept_s:slope_s_per_byte` for `os`/`or`/`ois`, `size:factor`
//! for `bw-factor`/`lat-factor`; an entry applies to sizes strictly above
//! its threshold (SimGrid's `FactorSet` lookup).
//!
//! [`SmpiProps::from_platform`] and [`to_xml`] export our [`Platform`]; what
//! [`super::parse`] reads back:
//! - **exactly** (to rounding): the inter-host model's transfer time at
//!   every size (the lists compensate SMPI's [`SMPI_HEADER_BYTES`]: a
//!   segment from payload m has threshold m + 15, its latency part is the
//!   intercept minus 16 bytes' worth of its bandwidth), its eager
//!   threshold, its send and receive overheads at every size ≥ 1 byte,
//!   the host count, cores, speeds, pstates and their power, the
//!   topology and the crosstraffic (0 or 0.05);
//! - **not**: overheads at 0 bytes (SMPI looks sizes up strictly above a
//!   threshold, so a 0-byte message never pays `smpi/os` or `smpi/or`);
//!   a transfer segment whose intercept is below 16 bytes' worth of its
//!   bandwidth (the latency factor would be negative: it is written as 0,
//!   so such sizes take up to 16 bytes' time longer); the intra-host
//!   model (SimGrid times it on the cluster's loopback link with the same
//!   factors); host names (`node0…`), the mapping (round-robin on import),
//!   `speed_ratio`, `recorded_pstate`, `[smpi]` beyond the thresholds and
//!   `[collectives]`.

use super::SMPI_HEADER_BYTES;
use crate::network::topology::Topology;
use crate::network::Piecewise;
use crate::platform::Platform;

/// SimGrid's default `network/TCP-gamma`, bytes.
const DEFAULT_TCP_GAMMA: f64 = 4194304.0;

/// SMPI's point-to-point properties, with the link they are relative to.
#[derive(Debug, Clone, PartialEq)]
pub struct SmpiProps {
    /// `smpi/os`: `(threshold_bytes, intercept_s, slope_s_per_byte)` per
    /// entry; an entry applies to sizes strictly above its threshold.
    pub os: Vec<(u64, f64, f64)>,
    /// `smpi/ois`, same shape as `os`.
    pub ois: Vec<(u64, f64, f64)>,
    /// `smpi/or`, same shape as `os`.
    pub or: Vec<(u64, f64, f64)>,
    /// `smpi/bw-factor`: `(threshold_bytes, factor)`, factor dimensionless.
    pub bw_factor: Vec<(u64, f64)>,
    /// `smpi/lat-factor`: `(threshold_bytes, factor)`, factor dimensionless.
    pub lat_factor: Vec<(u64, f64)>,
    /// `smpi/async-small-thresh`, bytes.
    pub async_small_thresh: u64,
    /// `smpi/send-is-detached-thresh`, bytes.
    pub send_is_detached_thresh: u64,
    /// `smpi/wtime`: time of one `MPI_Wtime` call, seconds.
    pub wtime_s: Option<f64>,
    /// `smpi/iprobe`: time of one `MPI_Iprobe` call, seconds.
    pub iprobe_s: Option<f64>,
    /// Latency `L` of the route the factors apply to, seconds.
    pub link_latency_s: f64,
    /// Bandwidth `B` of that route, bytes per second.
    pub link_bandwidth_bytes_per_s: f64,
}

impl SmpiProps {
    /// `(id, value)` of each property, in SimGrid's syntax (numbers
    /// written to round trip exactly). `network/TCP-gamma` is added when
    /// SimGrid's default (4 MiB) would bound the rate of a route of
    /// latency `L` below `B` (SimGrid bounds it by gamma / 2L).
    pub fn props(&self) -> Vec<(&'static str, String)> {
        let three = |v: &[(u64, f64, f64)]| v.iter().map(|(s, a, b)| format!("{s}:{a:e}:{b:e}")).collect::<Vec<_>>().join(";");
        let two = |v: &[(u64, f64)]| v.iter().map(|(s, f)| format!("{s}:{f}")).collect::<Vec<_>>().join(";");
        let mut out = vec![
            ("smpi/os", three(&self.os)),
            ("smpi/ois", three(&self.ois)),
            ("smpi/or", three(&self.or)),
            ("smpi/bw-factor", two(&self.bw_factor)),
            ("smpi/lat-factor", two(&self.lat_factor)),
            ("smpi/async-small-thresh", self.async_small_thresh.to_string()),
            ("smpi/send-is-detached-thresh", self.send_is_detached_thresh.to_string()),
        ];
        out.extend(self.wtime_s.map(|w| ("smpi/wtime", format!("{w:e}"))));
        out.extend(self.iprobe_s.map(|p| ("smpi/iprobe", format!("{p:e}"))));
        let (l, b) = (self.link_latency_s, self.link_bandwidth_bytes_per_s);
        if l > 0.0 && DEFAULT_TCP_GAMMA / (2.0 * l) < b {
            out.push(("network/TCP-gamma", format!("{:e}", 4.0 * l * b)));
        }
        out
    }

    /// The `<config>` block to paste before the first zone of a SimGrid
    /// platform, preceded by a comment giving the link it assumes.
    pub fn snippet(&self) -> String {
        let mut out = format!(
            "<!-- calibrate network: factors are relative to a link of latency=\"{}\" bandwidth=\"{}\" -->\n<config>\n",
            latency_attr(self.link_latency_s),
            bandwidth_attr(self.link_bandwidth_bytes_per_s)
        );
        for (id, value) in self.props() {
            out.push_str(&format!("  <prop id=\"{id}\" value=\"{value}\"/>\n"));
        }
        out.push_str("</config>\n");
        out
    }

    /// A complete SimGrid 4.1 platform: the [`SmpiProps::snippet`], then
    /// `hosts` hosts `node0..` of `cores` cores at 1 Gflop/s, each pair
    /// joined by one private link of the calibrated latency and bandwidth.
    pub fn platform_xml(&self, hosts: usize, cores: u32) -> String {
        let mut out = String::from(
            "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n",
        );
        out.push_str(&self.snippet());
        out.push_str("<zone id=\"calibrated\" routing=\"Full\">\n");
        for h in 0..hosts {
            out.push_str(&format!("  <host id=\"node{h}\" speed=\"1Gf\" core=\"{cores}\"/>\n"));
        }
        let (lat, bw) = (latency_attr(self.link_latency_s), bandwidth_attr(self.link_bandwidth_bytes_per_s));
        for a in 0..hosts {
            for b in a + 1..hosts {
                out.push_str(&format!("  <link id=\"l{a}-{b}\" bandwidth=\"{bw}\" latency=\"{lat}\"/>\n"));
                out.push_str(&format!("  <route src=\"node{a}\" dst=\"node{b}\"><link_ctn id=\"l{a}-{b}\"/></route>\n"));
            }
        }
        out.push_str("</zone>\n</platform>\n");
        out
    }
}

/// A SimGrid latency attribute, e.g. `2.5e-7s`.
fn latency_attr(s: f64) -> String {
    format!("{s:e}s")
}

/// A SimGrid bandwidth attribute, e.g. `8e9Bps`.
fn bandwidth_attr(b: f64) -> String {
    format!("{b:e}Bps")
}

impl SmpiProps {
    /// SMPI properties reproducing `platform`'s inter-host model
    /// (`network.inter`, else `network.intra`) on a route of latency
    /// [`SmpiProps::link_latency_s`] and bandwidth
    /// [`SmpiProps::link_bandwidth_bytes_per_s`] (the module docs say what
    /// round trips). Transfer segment k, from payload m_k with intercept
    /// a_k (seconds) and bandwidth b_k (bytes/s), gives the factor entries
    /// at threshold m_k + 15 (0 for the first): `bw-factor` b_k / B and
    /// `lat-factor` (a_k − 16 / b_k) / L, as SMPI times s + 16 bytes. B is
    /// the `[links]` bandwidth when link sharing is on, else the fastest
    /// b_k; L is the first positive a_k − 16 / b_k (1 µs if none is).
    /// Overhead segments give `os`/`or` entries at threshold m_k − 1 (0 for
    /// the first). `async-small-thresh` is `[smpi]`'s, else the eager
    /// threshold (every eager message starts at its send).
    ///
    /// # Errors
    /// A message naming the segment whose bandwidth is not finite (SMPI's
    /// time always has a size term).
    pub fn from_platform(platform: &Platform) -> Result<SmpiProps, String> {
        let m = platform.network.inter.as_ref().unwrap_or(&platform.network.intra);
        let hdr = SMPI_HEADER_BYTES as f64;
        let starts = |p: &Piecewise| -> Vec<u64> {
            (0..p.segments.len()).map(|k| if k == 0 { 0 } else { p.segments[k - 1].max_bytes.unwrap_or(0) }).collect()
        };
        let segs = &m.transfer.segments;
        if let Some(k) = segs.iter().position(|s| !s.bandwidth_bytes_per_s.is_finite()) {
            return Err(format!("transfer segment {k}: bandwidth_bytes_per_s must be finite for SMPI"));
        }
        let lat_parts: Vec<f64> = segs.iter().map(|s| s.intercept_s - hdr / s.bandwidth_bytes_per_s).collect();
        let latency = lat_parts.iter().copied().find(|&l| l > 0.0).unwrap_or(1e-6);
        let fastest = segs.iter().map(|s| s.bandwidth_bytes_per_s).fold(0.0, f64::max);
        let bandwidth = platform.links.as_ref().map_or(fastest, |l| l.link_bw_bytes_per_s);
        let thresholds: Vec<u64> =
            starts(&m.transfer).iter().enumerate().map(|(k, &s)| if k == 0 { 0 } else { s + SMPI_HEADER_BYTES - 1 }).collect();
        let lat_factor = thresholds.iter().zip(&lat_parts).map(|(&t, &l)| (t, (l / latency).max(0.0))).collect();
        let bw_factor = thresholds.iter().zip(segs).map(|(&t, s)| (t, s.bandwidth_bytes_per_s / bandwidth)).collect();
        let overhead = |p: &Piecewise| -> Vec<(u64, f64, f64)> {
            if p.segments.is_empty() {
                return vec![(0, 0.0, 0.0)];
            }
            let at = starts(p).into_iter().map(|s| s.saturating_sub(1));
            at.zip(&p.segments).map(|(t, s)| (t, s.intercept_s, 1.0 / s.bandwidth_bytes_per_s)).collect()
        };
        let os = overhead(&m.send_overhead);
        Ok(SmpiProps {
            ois: os.clone(),
            os,
            or: overhead(&m.recv_overhead),
            bw_factor,
            lat_factor,
            async_small_thresh: platform.smpi.async_small_thresh_bytes.unwrap_or(m.eager_threshold_bytes),
            send_is_detached_thresh: m.eager_threshold_bytes,
            wtime_s: None,
            iprobe_s: None,
            link_latency_s: latency,
            link_bandwidth_bytes_per_s: bandwidth,
        })
    }
}

/// `platform` as a SimGrid 4.1 platform of one `<cluster>` that
/// [`super::parse`] reads back (the module docs say what round trips):
/// the [`SmpiProps::from_platform`] properties in `<config>`, hosts
/// `node0…` with the first host's cores and speed (its pstates' speeds,
/// `wattage_per_state` and `pstate`; 1 Gflop/s when unknown), links of
/// latency L / 2 and bandwidth B (a route crosses two), the `[links]`
/// topology and crosstraffic.
///
/// # Errors
/// A message when hosts differ in cores, speed or pstates (a cluster's
/// hosts are identical), when the crosstraffic is neither 0 nor 0.05, or
/// from [`SmpiProps::from_platform`].
pub fn to_xml(platform: &Platform) -> Result<String, String> {
    let smpi = SmpiProps::from_platform(platform)?;
    let h0 = platform.hosts.first().ok_or("the platform has no host")?;
    let same = |h: &crate::platform::Host| {
        h.cores == h0.cores && h.speed_flops == h0.speed_flops && h.pstates == h0.pstates && h.pstate == h0.pstate
    };
    if let Some(h) = platform.hosts.iter().find(|h| !same(h)) {
        return Err(format!(
            "host {} differs from host {} in cores, speed or pstates; a SimGrid cluster's hosts are identical",
            h.name, h0.name
        ));
    }
    let speed = match (&h0.pstates[..], h0.speed_flops) {
        ([], s) => format!("{:e}f", s.unwrap_or(1e9)),
        (p, _) => p.iter().map(|p| format!("{:e}f", p.speed_flops)).collect::<Vec<_>>().join(","),
    };
    let mut config = smpi.props();
    let mut topo = String::new();
    if let Some(l) = &platform.links {
        match l.crosstraffic {
            0.0 => config.push(("network/crosstraffic", "no".into())),
            0.05 => {}
            c => return Err(format!("crosstraffic {c}: SimGrid's network/crosstraffic gives 0 or 0.05")),
        }
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        topo = match &l.topology {
            Topology::Crossbar => String::new(),
            // The route's whole latency is on the private links (`lat`).
            Topology::Backbone { ratio } => format!(" bb_bw=\"{}\" bb_lat=\"0s\"", bandwidth_attr(ratio * smpi.link_bandwidth_bytes_per_s)),
            Topology::Torus { dims } => format!(" topology=\"TORUS\" topo_parameters=\"{}\"", list(dims)),
            Topology::FatTree { down, up, count } => {
                format!(" topology=\"FAT_TREE\" topo_parameters=\"{};{};{};{}\"", down.len(), list(down), list(up), list(count))
            }
        };
    }
    let mut out = String::from(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n<config>\n",
    );
    for (id, value) in config {
        out.push_str(&format!("  <prop id=\"{id}\" value=\"{value}\"/>\n"));
    }
    out.push_str("</config>\n<zone id=\"world\" routing=\"Full\">\n");
    let name = if platform.name.is_empty() { "cluster" } else { platform.name.as_str() };
    out.push_str(&format!(
        "  <cluster id=\"{}\" prefix=\"node\" suffix=\"\" radical=\"0-{}\" speed=\"{speed}\" core=\"{}\" bw=\"{}\" lat=\"{}\"{topo}>\n",
        escape(name),
        platform.hosts.len() - 1,
        h0.cores,
        bandwidth_attr(smpi.link_bandwidth_bytes_per_s),
        latency_attr(smpi.link_latency_s / 2.0),
    ));
    if !h0.pstates.is_empty() && h0.pstates.iter().all(|p| p.watts.is_some()) {
        let w = h0.pstates.iter().filter_map(|p| p.watts).map(|w| format!("{}:{}:{}", w.idle_w, w.epsilon_w, w.all_cores_w));
        out.push_str(&format!("    <prop id=\"wattage_per_state\" value=\"{}\"/>\n", w.collect::<Vec<_>>().join(", ")));
    }
    if h0.pstate != 0 {
        out.push_str(&format!("    <prop id=\"pstate\" value=\"{}\"/>\n", h0.pstate));
    }
    out.push_str("  </cluster>\n</zone>\n</platform>\n");
    Ok(out)
}

/// `s` with XML's special characters escaped, for an attribute value.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests;

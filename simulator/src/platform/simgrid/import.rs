//! [`parse`]: a SimGrid platform XML to a [`Platform`] (mapping in the
//! parent module's docs).

use std::path::Path;

use roxmltree::{Document, Node, ParsingOptions};

use super::{factors, piecewise, with_unit, Factors, BW, MAX_HOSTS, SMPI_BW_FACTOR, SMPI_HEADER_BYTES, SMPI_LAT_FACTOR, SPEED, TIME};
use crate::collectives::{Coll, CollAlgs, Collectives};
use crate::network::topology::Topology;
use crate::network::{FlowSharing, P2pModel};
use crate::platform::power::{PowerRange, Pstate};
use crate::platform::{Host, Mapping, Network, Platform, PlatformError, Smpi, WaitingRanks};

/// `<cluster>` attributes that are read.
const CLUSTER_ATTRS: &[&str] = &[
    "id",
    "prefix",
    "suffix",
    "radical",
    "speed",
    "core",
    "bw",
    "lat",
    "topology",
    "topo_parameters",
    "bb_bw",
    "bb_lat",
    "loopback_bw",
    "loopback_lat",
];
/// `<cluster>` attributes accepted and ignored (see the module docs).
const IGNORED_CLUSTER_ATTRS: &[&str] = &["sharing_policy", "bb_sharing_policy", "router_id"];

/// Settings collected from `<config>`/`<prop>` and options, with the
/// line of the `<prop>` (`None` for an option).
struct Cfg(Vec<(String, String)>, Vec<Option<u32>>);

impl Cfg {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    /// Where the setting `k` in force comes from, for an error message:
    /// `line N: <prop> k` or `--cfg k`.
    fn at(&self, k: &str) -> String {
        match self.0.iter().rposition(|(n, _)| n == k).map(|i| self.1[i]) {
            Some(Some(line)) => format!("line {line}: <prop> {k}"),
            Some(None) => format!("--cfg {k}"),
            None => k.to_string(),
        }
    }
}

/// Parses SimGrid platform XML `text` (read from `path`) with `options`
/// (`name:value`, as `--cfg=name:value`, applied last).
///
/// # Errors
/// [`PlatformError`] naming `path`, with the line of the offending element
/// (or of the XML syntax error): see the parent module's docs.
pub fn parse(text: &str, path: &Path, options: &[String]) -> Result<Platform, PlatformError> {
    parse_limited(text, path, options, MAX_HOSTS)
}

/// [`parse`] with at most `max_hosts` hosts (`--max-hosts`): a `radical`
/// giving more is an error before any host is made.
///
/// # Errors
/// As [`parse`].
pub fn parse_limited(text: &str, path: &Path, options: &[String], max_hosts: u64) -> Result<Platform, PlatformError> {
    let e = |what: String| PlatformError { path: path.to_path_buf(), what };
    let xml_opts = ParsingOptions { allow_dtd: true, ..ParsingOptions::default() };
    let doc = Document::parse_with_options(text, xml_opts).map_err(|x| {
        let line = match x {
            roxmltree::Error::UnclosedRootNode => text.lines().count().max(1) as u32,
            _ => x.pos().row,
        };
        e(format!("line {line}: malformed XML: {x}"))
    })?;
    let line = |n: Node| doc.text_pos_at(n.range().start).row;
    let mut cfg = Cfg(Vec::new(), Vec::new());
    let mut cluster: Option<Node> = None;
    // Hosts holding `<disk>`s: the servers of an imported file system.
    let mut storage: Vec<Node> = Vec::new();
    // `<prop>`s of the cluster (host properties such as `wattage_per_state`).
    let mut props: Vec<(String, String, Node)> = Vec::new();
    for n in doc.descendants().filter(Node::is_element) {
        match n.tag_name().name() {
            "prop" => {
                let parent = n.parent_element().map(|p| p.tag_name().name());
                if !matches!(parent, Some("config" | "cluster")) {
                    continue;
                }
                let (Some(k), Some(v)) = (n.attribute("id"), n.attribute("value")) else {
                    return Err(e(format!("line {}: <prop> needs id and value", line(n))));
                };
                if parent == Some("config") {
                    cfg.0.push((k.to_string(), v.to_string()));
                    cfg.1.push(Some(line(n)));
                } else {
                    props.push((k.to_string(), v.to_string(), n));
                }
            }
            "cluster" => {
                if let Some(c) = cluster {
                    return Err(e(format!("line {}: only one <cluster> is supported (first at line {})", line(n), line(c))));
                }
                cluster = Some(n);
            }
            "host" if n.children().any(|c| c.has_tag_name("disk")) => storage.push(n),
            name @ ("host" | "link" | "route" | "peer" | "cabinet" | "backbone") => {
                return Err(e(format!(
                    "line {}: <{name}> platforms are not supported, only one <cluster> (and <host>s holding <disk>s)",
                    line(n)
                )));
            }
            _ => {}
        }
    }
    for o in options {
        let (k, v) = o.split_once(':').ok_or_else(|| e(format!("option `{o}` is not name:value")))?;
        cfg.0.push((k.to_string(), v.to_string()));
        cfg.1.push(None);
    }
    let c = cluster.ok_or_else(|| e("no <cluster> element".into()))?;
    let at = |what: String| e(format!("line {}: <cluster>: {what}", line(c)));
    for a in c.attributes() {
        let name = a.name();
        if name == "limiter_link" {
            return Err(at("limiter_link is not supported".into()));
        }
        if !CLUSTER_ATTRS.contains(&name) && !IGNORED_CLUSTER_ATTRS.contains(&name) {
            let valid = [CLUSTER_ATTRS, IGNORED_CLUSTER_ATTRS].concat().join(", ");
            return Err(at(format!("unknown attribute `{name}` (valid: {valid})")));
        }
    }
    let req = |k: &str| c.attribute(k).ok_or_else(|| at(format!("missing attribute {k}")));
    // Speeds and bandwidths must be > 0, latencies >= 0.
    let unit = |k: &str, v: &str, s: &[(&str, f64)]| {
        with_unit(v, s).filter(|x| x.is_finite() && *x > 0.0).ok_or_else(|| at(format!("bad {k} `{v}`")))
    };
    let time = |k: &str, v: &str| with_unit(v, TIME).filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| at(format!("bad {k} `{v}`")));
    let topology = Topology::from_simgrid(c.attribute("topology").unwrap_or("FLAT"), c.attribute("topo_parameters").unwrap_or(""))
        .map_err(|w| at(w.0))?;
    let speeds: Vec<f64> = req("speed")?.split(',').map(|v| unit("speed", v, SPEED)).collect::<Result<_, _>>()?;
    let speed = speeds[0];
    let cores: u32 = c.attribute("core").unwrap_or("1").parse().ok().filter(|&n| n > 0).ok_or_else(|| at("bad core".into()))?;
    let bw = unit("bw", req("bw")?, BW)?;
    let lat = time("lat", req("lat")?)?;
    let (mut route_lat, mut route_bw) = (2.0 * lat, bw);
    let mut backbone = None;
    if let Some(v) = c.attribute("bb_bw") {
        let bb = unit("bb_bw", v, BW)?;
        route_bw = route_bw.min(bb);
        route_lat += time("bb_lat", c.attribute("bb_lat").unwrap_or("0"))?;
        backbone = Some(Topology::Backbone { ratio: bb / bw });
    }
    let lb_bw = unit("loopback_bw", c.attribute("loopback_bw").or(cfg.get("network/loopback-bw")).unwrap_or("10GBps"), BW)?;
    let lb_lat = time("loopback_lat", c.attribute("loopback_lat").or(cfg.get("network/loopback-lat")).unwrap_or("0"))?;
    let mut hosts = host_names(req("radical")?, c.attribute("prefix").unwrap_or(""), c.attribute("suffix").unwrap_or(""), max_hosts)
        .map_err(&at)?
        .into_iter()
        .map(|name| Host::new(name, cores))
        .collect::<Vec<_>>();
    let fl = |k: &str, default: &str| factors(cfg.get(k).unwrap_or(default)).map_err(|w| e(format!("{}: {w}", cfg.at(k))));
    let model = cfg.get("network/model").unwrap_or("SMPI");
    let (bwf, latf) = match model {
        "SMPI" => (fl("smpi/bw-factor", SMPI_BW_FACTOR)?, fl("smpi/lat-factor", SMPI_LAT_FACTOR)?),
        "CM02" => (fl("network/bandwidth-factor", "0:1")?, fl("network/latency-factor", "0:1")?),
        "LV08" => (fl("network/bandwidth-factor", "0:0.97")?, fl("network/latency-factor", "0:13.01")?),
        m => return Err(e(format!("network/model {m} is not supported (SMPI, CM02, LV08)"))),
    };
    // CM02/LV08 factors apply to every size, including 0.
    let first = |f: &Factors| {
        if model == "SMPI" {
            vec![1.0]
        } else {
            f.first().map(|x| x.1.clone()).unwrap_or(vec![1.0])
        }
    };
    let (bw_first, lat_first) = (first(&bwf), first(&latf));
    let hdr = if model == "SMPI" { SMPI_HEADER_BYTES } else { 0 };
    let gamma: f64 = cfg
        .get("network/TCP-gamma")
        .unwrap_or("4194304")
        .parse()
        .map_err(|_| e(format!("{}: not a number", cfg.at("network/TCP-gamma"))))?;
    let os = fl("smpi/os", "0:0:0")?;
    let or = fl("smpi/or", "0:0:0")?;
    let thresh = |k: &str, d: &str| cfg.get(k).unwrap_or(d).parse::<u64>().map_err(|_| e(format!("{}: not a byte count", cfg.at(k))));
    let eager = thresh("smpi/send-is-detached-thresh", "65536")?;
    let async_small = thresh("smpi/async-small-thresh", "0")?;
    let overhead = |f: &Factors| {
        piecewise(&[f], &[vec![0.0, 0.0]], 0, |v| {
            let slope = v[0].get(1).copied().unwrap_or(0.0);
            (v[0][0], if slope > 0.0 { 1.0 / slope } else { f64::INFINITY })
        })
    };
    let link_model = |lat_s: f64, bw_bps: f64| P2pModel {
        eager_threshold_bytes: eager,
        transfer: piecewise(&[&latf, &bwf], &[lat_first.clone(), bw_first.clone()], hdr, |v| {
            let mut bound = bw_bps;
            if gamma > 0.0 && lat_s > 0.0 {
                bound = bound.min(gamma / (2.0 * lat_s));
            }
            let rate = bound * v[1][0];
            (lat_s * v[0][0] + hdr as f64 / rate, rate)
        }),
        send_overhead: overhead(&os),
        recv_overhead: overhead(&or),
        rma: None,
    };
    topology.validate(hosts.len()).map_err(|w| at(w.0))?;
    if topology != Topology::Crossbar && c.attribute("bb_bw").is_some() {
        return Err(at("a backbone (bb_bw) applies to FLAT clusters only".into()));
    }
    let crosstraffic = match cfg.get("network/crosstraffic").unwrap_or("yes") {
        "yes" | "1" | "on" | "true" => 0.05,
        _ => 0.0,
    };
    // A backbone route always crosses three links, and the model's
    // latency is already the route's (2 lat + bb_lat).
    let latency_per_link = backbone.is_none();
    let flows = Some(FlowSharing {
        link_bw_bytes_per_s: bw,
        nominal_rate_bytes_per_s: if gamma > 0.0 && route_lat > 0.0 { route_bw.min(gamma / (2.0 * route_lat)) } else { route_bw },
        crosstraffic,
        header_bytes: hdr,
        topology: backbone.unwrap_or_else(|| topology.clone()),
        latency_per_link,
    });
    // SimGrid's `ompi` selector is its own port of OpenMPI's tables.
    let selector = match cfg.get("smpi/coll-selector").unwrap_or("default") {
        "ompi" => "simgrid-ompi",
        s => s,
    };
    let mut coll = CollAlgs::preset(selector).map_err(|w| e(format!("smpi/coll-selector: {w}")))?;
    for (k, v) in &cfg.0 {
        if let Some(name) = k.strip_prefix("smpi/").filter(|n| Coll::from_name(n).is_some()) {
            coll.set(name, v).map_err(|w| e(format!("{}: {w}", cfg.at(k))))?;
        }
    }
    let props: Vec<(String, String, u32)> = props.into_iter().map(|(k, v, n)| (k, v, line(n))).collect();
    let (pstates, pstate) = host_pstates(&speeds, &props).map_err(|(l, w)| e(format!("line {l}: <prop> {w}")))?;
    for h in &mut hosts {
        (h.pstates, h.pstate) = (pstates.clone(), pstate);
        h.speed_flops = pstates.is_empty().then_some(speed);
    }
    let platform = Platform {
        name: c.attribute("id").unwrap_or("cluster").to_string(),
        hosts,
        mapping: Mapping::RoundRobin,
        network: Network {
            intra: link_model(lb_lat, lb_bw),
            inter: Some(link_model(route_lat, route_bw)),
            host_copy_bytes_per_s: None,
            serial_receives: false,
            serial_receives_min_bytes: 0,
        },
        waiting_ranks: WaitingRanks::Yield,
        smpi: Smpi { async_small_thresh_bytes: Some(async_small), ..Smpi::default() },
        links: flows,
        collectives: Collectives { algs: coll, reduce: Default::default(), shm: None },
        no_oversubscription: true,
        fs: super::disks::file_system(&storage, &line).map_err(e)?.into_iter().collect(),
        dvfs: Default::default(),
    };
    // The models built from the attributes and settings, checked by their
    // TOML names: the cluster's line says where they come from.
    platform.validate().map_err(|w| at(format!("the imported platform is invalid: {}", w.0)))?;
    Ok(platform)
}

/// Host names `prefix` + each number of `radical` (`0-15`, `0-3,8`) +
/// `suffix`, counted before any is made.
///
/// # Errors
/// A bad part, or more than `max_hosts` hosts in all.
fn host_names(radical: &str, prefix: &str, suffix: &str, max_hosts: u64) -> Result<Vec<String>, String> {
    let mut ranges = Vec::new();
    let mut count: u128 = 0;
    for part in radical.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        match (a.trim().parse::<u64>(), b.trim().parse::<u64>()) {
            (Ok(a), Ok(b)) if a <= b => {
                ranges.push((a, b));
                count += u128::from(b - a) + 1;
            }
            _ => return Err(format!("bad radical part `{part}`")),
        }
    }
    if count > u128::from(max_hosts) {
        return Err(format!("radical `{radical}` gives {count} hosts; at most {max_hosts} (--max-hosts)"));
    }
    Ok(ranges.into_iter().flat_map(|(a, b)| (a..=b).map(|i| format!("{prefix}{i}{suffix}"))).collect())
}

/// The pstates of the cluster's hosts: one per `speed` value, with the
/// power ranges of the `wattage_per_state` property (one `Idle:Epsilon:AllCores`
/// per pstate, comma-separated) and the running `pstate` property (which
/// must name one of them). No pstates when there is a single speed and no
/// `wattage_per_state`.
fn host_pstates(speeds: &[f64], props: &[(String, String, u32)]) -> Result<(Vec<Pstate>, usize), (u32, String)> {
    let prop = |k: &str| props.iter().rev().find(|p| p.0 == k);
    let watts: Vec<Option<PowerRange>> = match prop("wattage_per_state") {
        None => vec![None; speeds.len()],
        Some((_, v, line)) => {
            let w: Vec<PowerRange> = v
                .split(',')
                .map(|x| PowerRange::parse(x.trim()))
                .collect::<Result<_, _>>()
                .map_err(|w| (*line, format!("wattage_per_state: {w}")))?;
            if w.len() != speeds.len() {
                let what = format!("wattage_per_state has {} power ranges for {} pstates (speeds)", w.len(), speeds.len());
                return Err((*line, what));
            }
            w.into_iter().map(Some).collect()
        }
    };
    let pstate = match prop("pstate") {
        None => 0,
        Some((_, v, line)) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&p| p < speeds.len())
            .ok_or((*line, format!("pstate `{v}` is not one of the {} pstates", speeds.len())))?,
    };
    if speeds.len() == 1 && watts[0].is_none() {
        return Ok((Vec::new(), 0));
    }
    let pstates = speeds.iter().zip(watts).map(|(&speed_flops, watts)| Pstate { speed_flops, watts }).collect();
    Ok((pstates, pstate))
}

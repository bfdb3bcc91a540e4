//! Import of a SimGrid platform XML holding one `<cluster>` (SimGrid 3.32,
//! "Describing your Simulated Platform"), with the `smpi/*` and
//! `network/*` settings of its `<config>`/`<prop>` elements or of
//! `--cfg`-style options, into our [`Platform`].
//!
//! What is mapped, and how:
//! - **Hosts**: `prefix` + each number of `radical` (`0-15`, `0-3,8`) +
//!   `suffix`; `core` → cores; the first value of `speed` (flop/s; units
//!   `f`, `kf`, `Mf`, `Gf`, `Tf`, `Pf`) → [`Host::speed_flops`].
//! - **Pstates and energy** → [`Host::pstates`]: every value of `speed`
//!   is a pstate; the cluster's `<prop id="wattage_per_state">` (one
//!   `Idle:Epsilon:AllCores` per pstate) gives their power and
//!   `<prop id="pstate">` the running one, as for SimGrid's
//!   `host_energy` plugin ([`crate::energy`]).
//!   Ranks are placed round-robin over the hosts, as `smpirun -hostfile`
//!   does with a host file listing each host once; a trace with more
//!   ranks than cores in all is refused.
//! - **Routes**: `topology="TORUS"` and `"FAT_TREE"` with `topo_parameters`
//!   give the links shared ([`crate::network::topology`]; latency grows
//!   with the route's link count). `FLAT`: between two hosts, the source's
//!   private link, the backbone (`bb_bw`/`bb_lat`) if any, and the
//!   destination's link: latency = 2·`lat` (+ `bb_lat`), bandwidth =
//!   min(`bw`, `bb_bw`). Within a host, the loopback link (`loopback_bw`
//!   and `loopback_lat`, else SimGrid's `network/loopback-bw` 10 GBps and
//!   `network/loopback-lat` 0).
//! - **Network model** (`network/model`, default `SMPI` as under
//!   `smpirun`; `CM02` and `LV08` also): with L the route latency, B its
//!   bandwidth, γ = `network/TCP-gamma` (default 4 MiB) and e = s + 16
//!   bytes under SMPI ([`SMPI_HEADER_BYTES`], measured), transfer(s) =
//!   L · lat_factor(e) + e / (min(B, γ / 2L) · bw_factor(e)), with SMPI's
//!   default `smpi/bw-factor` and `smpi/lat-factor` tables and SimGrid's
//!   `FactorSet` lookup (a threshold applies to sizes strictly above it;
//!   sizes up to the smallest get 1.0), expressed exactly as [`Piecewise`]
//!   segments. Checked against `smpirun -replay` of single messages of
//!   0…10⁶ bytes on 1 s / 1 MBps and 1 s / 1 GBps links. `smpi/os` and `smpi/or`
//!   (`size:intercept:slope;…`, same lookup) → send and receive overheads.
//!   `smpi/send-is-detached-thresh` (default 65536) → eager threshold;
//!   `smpi/async-small-thresh` (default 0) → [`super::Smpi::async_small_thresh_bytes`].
//! - **Link sharing** → [`Platform::links`]: each host's link is
//!   `SPLITDUPLEX` (SimGrid's cluster default), flows share max-min
//!   fairly, with `network/crosstraffic` (default yes: 0.05 of each flow on
//!   the reverse links). Checked against `smpirun -replay` of two opposite
//!   1 MB transfers (1.05 × one).
//! - **Collectives** → [`Platform::collectives`]: SimGrid's `default` selector
//!   (linear barrier, linear reduce, reduce + binomial bcast all-reduce),
//!   `smpi/coll-selector:mpich`, or `smpi/coll-selector:ompi` read as
//!   SimGrid defines it (its port of OpenMPI 4.1's tables with SimGrid's
//!   algorithms: `simgrid-ompi`); `smpi/<collective>` (`barrier`, `bcast`,
//!   `reduce`, `allreduce`, `gather`, `scatter`, `allgather(v)`,
//!   `alltoall(v)`, `reduce_scatter`, `scan`, `exscan`) overrides one
//!   collective (e.g. `rdb`, `ompi_bruck`); an unknown name is an error
//!   listing the valid ones.
//! - **Not modelled** (accepted, then ignored): `sharing_policy` (always
//!   SPLITDUPLEX), `network/weight-S` (equal for all routes of a flat
//!   cluster), `smpi/ois`, `wattage_off` and other host properties;
//!   with a backbone (`bb_bw`), link sharing is off (the backbone only
//!   adds latency and bounds bandwidth). Other topologies, several
//!   clusters and host/link/route-based platforms are errors.

use std::path::Path;

use super::{Host, Mapping, Network, Platform, PlatformError, Smpi};
use crate::collectives::{Coll, CollAlgs, Collectives};
use crate::energy::{PowerRange, Pstate};
use crate::network::topology::Topology;
use crate::network::{FlowSharing, P2pModel, Piecewise, Segment};

/// SMPI's default `smpi/bw-factor` (SimGrid 3.32).
pub const SMPI_BW_FACTOR: &str =
    "65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;1426:0.608902;732:0.341987;257:0.338112;0:0.812084";
/// SMPI's default `smpi/lat-factor` (SimGrid 3.32).
pub const SMPI_LAT_FACTOR: &str =
    "65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;1426:1.61075;732:1.9503;257:1.95341;0:2.01467";

/// One XML element: name, attributes and 1-based line.
#[derive(Debug)]
struct Elem<'t> {
    name: &'t str,
    attrs: Vec<(&'t str, String)>,
    line: usize,
    closing: bool,
    /// `<x … />`.
    self_closing: bool,
}

impl Elem<'_> {
    fn get(&self, k: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str())
    }
}

/// Splits `text` into start/empty/end tags, skipping comments, `<?…?>`
/// and `<!…>`. Minimal: enough for SimGrid platform files.
fn elements(text: &str) -> Result<Vec<Elem<'_>>, (usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    let b = text.as_bytes();
    let line_at = |p: usize| text[..p].bytes().filter(|&c| c == b'\n').count() + 1;
    while let Some(off) = text[i..].find('<') {
        let s = i + off;
        if text[s..].starts_with("<!--") {
            let e = text[s..].find("-->").ok_or((line_at(s), "unterminated comment".to_string()))?;
            i = s + e + 3;
            continue;
        }
        let e = s + text[s..].find('>').ok_or((line_at(s), "unterminated tag".to_string()))?;
        i = e + 1;
        if b[s + 1] == b'?' || b[s + 1] == b'!' {
            continue;
        }
        let mut body = &text[s + 1..e];
        let closing = body.starts_with('/');
        let self_closing = body.ends_with('/');
        body = body.trim_start_matches('/').trim_end_matches('/');
        let name_end = body.find(|c: char| c.is_whitespace()).unwrap_or(body.len());
        let (name, mut rest) = (&body[..name_end], &body[name_end..]);
        let mut attrs = Vec::new();
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            let eq = rest.find('=').ok_or((line_at(s), format!("<{name}>: attribute without value")))?;
            let key = rest[..eq].trim();
            let after = rest[eq + 1..].trim_start();
            let q = after.chars().next().filter(|c| *c == '"' || *c == '\'');
            let q = q.ok_or((line_at(s), format!("<{name}>: unquoted value of {key}")))?;
            let end = after[1..].find(q).ok_or((line_at(s), format!("<{name}>: unterminated value of {key}")))?;
            let v = after[1..1 + end].replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
            attrs.push((key, v));
            rest = &after[end + 2..];
        }
        out.push(Elem { name, attrs, line: line_at(s), closing, self_closing });
    }
    Ok(out)
}

/// Parses a SimGrid value with a unit: `scale` maps each accepted suffix
/// to its multiplier; a bare number takes multiplier 1.
fn with_unit(v: &str, scale: &[(&str, f64)]) -> Option<f64> {
    let v = v.trim();
    let split = v.find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E').unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let x: f64 = num.parse().ok()?;
    if unit.is_empty() {
        return Some(x);
    }
    scale.iter().find(|(u, _)| *u == unit).map(|(_, m)| x * m)
}

const SPEED: &[(&str, f64)] = &[("f", 1.0), ("kf", 1e3), ("Mf", 1e6), ("Gf", 1e9), ("Tf", 1e12), ("Pf", 1e15), ("flops", 1.0)];
const BW: &[(&str, f64)] = &[
    ("Bps", 1.0),
    ("kBps", 1e3),
    ("KBps", 1e3),
    ("MBps", 1e6),
    ("GBps", 1e9),
    ("TBps", 1e12),
    ("KiBps", 1024.0),
    ("MiBps", 1048576.0),
    ("GiBps", 1073741824.0),
    ("bps", 0.125),
    ("kbps", 125.0),
    ("Mbps", 125e3),
    ("Gbps", 125e6),
    ("Tbps", 125e9),
];
const TIME: &[(&str, f64)] = &[("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("ps", 1e-12), ("m", 60.0), ("h", 3600.0)];

/// Parses a SimGrid factor list `t:v;t:v;…` into (threshold, values)
/// sorted by threshold.
fn factors(spec: &str) -> Result<Vec<(u64, Vec<f64>)>, String> {
    let mut out = Vec::new();
    for item in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let mut it = item.split(':');
        let t = it.next().and_then(|t| t.trim().parse::<u64>().ok()).ok_or(format!("bad threshold in `{item}`"))?;
        let vals: Result<Vec<f64>, _> = it.map(|x| x.trim().parse::<f64>()).collect();
        let vals = vals.map_err(|_| format!("bad value in `{item}`"))?;
        if vals.is_empty() {
            return Err(format!("no value in `{item}`"));
        }
        out.push((t, vals));
    }
    out.sort_by_key(|f| f.0);
    Ok(out)
}

/// The value of a factor list at `size` under SimGrid's rule: start from
/// `first`; each threshold strictly below `size` replaces it.
fn lookup(f: &[(u64, Vec<f64>)], size: u64, first: Vec<f64>) -> Vec<f64> {
    let mut cur = first;
    for (t, v) in f {
        if size <= *t {
            break;
        }
        cur = v.clone();
    }
    cur
}

/// Bytes SMPI adds to every message before timing it and looking up its
/// factors. Not documented; measured on SimGrid 3.32 (`smpirun -replay`
/// of one `send`): a payload of s bytes costs exactly as s + 16 bytes,
/// in both the latency and the bandwidth term.
pub const SMPI_HEADER_BYTES: u64 = 16;

/// Builds the piecewise function `g(values at s + hdr)` of the payload s
/// over every interval where one of `lists` changes value.
fn piecewise(lists: &[&[(u64, Vec<f64>)]], firsts: &[Vec<f64>], hdr: u64, g: impl Fn(&[Vec<f64>]) -> (f64, f64)) -> Piecewise {
    // A threshold t applies to effective sizes > t, i.e. payloads >= t + 1 − hdr.
    let mut b: Vec<u64> = lists.iter().flat_map(|l| l.iter().map(|(t, _)| (t + 1).saturating_sub(hdr))).filter(|&m| m > 0).collect();
    b.sort_unstable();
    b.dedup();
    let mut segments = Vec::new();
    let mut lo = 0u64;
    for max in b.iter().map(|&m| Some(m)).chain([None]) {
        let vals: Vec<Vec<f64>> = lists.iter().zip(firsts).map(|(l, f)| lookup(l, lo + hdr, f.clone())).collect();
        let (intercept_s, bandwidth_bytes_per_s) = g(&vals);
        segments.push(Segment { max_bytes: max, intercept_s, bandwidth_bytes_per_s });
        if let Some(m) = max {
            lo = m;
        }
    }
    Piecewise { segments }
}

/// Settings collected from `<config>`/`<prop>` and options.
struct Cfg(Vec<(String, String)>);

impl Cfg {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
}

/// Parses SimGrid platform XML `text` (read from `path`) with `options`
/// (`name:value`, as `--cfg=name:value`, applied last).
///
/// # Errors
/// [`PlatformError`] naming `path`, with the line of the offending element.
pub fn parse(text: &str, path: &Path, options: &[String]) -> Result<Platform, PlatformError> {
    let e = |what: String| PlatformError { path: path.to_path_buf(), what };
    let els = elements(text).map_err(|(l, w)| e(format!("line {l}: {w}")))?;
    let mut cfg = Cfg(Vec::new());
    let mut in_config = false;
    let mut in_cluster = false;
    let mut cluster: Option<&Elem> = None;
    // `<prop>`s of the cluster (host properties such as `wattage_per_state`).
    let mut props: Vec<(String, String, usize)> = Vec::new();
    for el in &els {
        match (el.name, el.closing) {
            ("config", c) => in_config = !c,
            ("prop", false) if in_config || in_cluster => {
                let (Some(k), Some(v)) = (el.get("id"), el.get("value")) else {
                    return Err(e(format!("line {}: <prop> needs id and value", el.line)));
                };
                if in_config {
                    cfg.0.push((k.to_string(), v.to_string()));
                } else {
                    props.push((k.to_string(), v.to_string(), el.line));
                }
            }
            ("cluster", true) => in_cluster = false,
            ("cluster", false) => {
                if let Some(c) = cluster {
                    return Err(e(format!("line {}: only one <cluster> is supported (first at line {})", el.line, c.line)));
                }
                cluster = Some(el);
                in_cluster = !el.self_closing;
            }
            ("host" | "link" | "route" | "peer" | "cabinet" | "backbone", false) => {
                return Err(e(format!("line {}: <{}> platforms are not supported, only one <cluster>", el.line, el.name)));
            }
            _ => {}
        }
    }
    for o in options {
        let (k, v) = o.split_once(':').ok_or_else(|| e(format!("option `{o}` is not name:value")))?;
        cfg.0.push((k.to_string(), v.to_string()));
    }
    let c = cluster.ok_or_else(|| e("no <cluster> element".into()))?;
    let at = |what: String| e(format!("line {}: <cluster>: {what}", c.line));
    let req = |k: &str| c.get(k).ok_or_else(|| at(format!("missing attribute {k}")));
    let unit = |k: &str, v: &str, s: &[(&str, f64)]| with_unit(v, s).filter(|x| *x >= 0.0).ok_or_else(|| at(format!("bad {k} `{v}`")));
    let topology =
        Topology::from_simgrid(c.get("topology").unwrap_or("FLAT"), c.get("topo_parameters").unwrap_or("")).map_err(|w| at(w.0))?;
    let speeds: Vec<f64> = req("speed")?.split(',').map(|v| unit("speed", v, SPEED)).collect::<Result<_, _>>()?;
    let speed = speeds[0];
    let cores: u32 = c.get("core").unwrap_or("1").parse().ok().filter(|&n| n > 0).ok_or_else(|| at("bad core".into()))?;
    let bw = unit("bw", req("bw")?, BW)?;
    let lat = unit("lat", req("lat")?, TIME)?;
    let (mut route_lat, mut route_bw) = (2.0 * lat, bw);
    if let Some(v) = c.get("bb_bw") {
        route_bw = route_bw.min(unit("bb_bw", v, BW)?);
        route_lat += unit("bb_lat", c.get("bb_lat").unwrap_or("0"), TIME)?;
    }
    let lb_bw = unit("loopback_bw", c.get("loopback_bw").or(cfg.get("network/loopback-bw")).unwrap_or("10GBps"), BW)?;
    let lb_lat = unit("loopback_lat", c.get("loopback_lat").or(cfg.get("network/loopback-lat")).unwrap_or("0"), TIME)?;
    let prefix = c.get("prefix").unwrap_or("");
    let suffix = c.get("suffix").unwrap_or("");
    let mut hosts = Vec::new();
    for part in req("radical")?.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u64, u64) = match (a.trim().parse(), b.trim().parse()) {
            (Ok(a), Ok(b)) if a <= b => (a, b),
            _ => return Err(at(format!("bad radical part `{part}`"))),
        };
        hosts.extend((a..=b).map(|i| Host::new(format!("{prefix}{i}{suffix}"), cores)));
    }
    let fl = |k: &str, default: &str| factors(cfg.get(k).unwrap_or(default)).map_err(|w| e(format!("{k}: {w}")));
    let model = cfg.get("network/model").unwrap_or("SMPI");
    let (bwf, latf) = match model {
        "SMPI" => (fl("smpi/bw-factor", SMPI_BW_FACTOR)?, fl("smpi/lat-factor", SMPI_LAT_FACTOR)?),
        "CM02" => (fl("network/bandwidth-factor", "0:1")?, fl("network/latency-factor", "0:1")?),
        "LV08" => (fl("network/bandwidth-factor", "0:0.97")?, fl("network/latency-factor", "0:13.01")?),
        m => return Err(e(format!("network/model {m} is not supported (SMPI, CM02, LV08)"))),
    };
    // CM02/LV08 factors apply to every size, including 0.
    let first = |f: &[(u64, Vec<f64>)]| {
        if model == "SMPI" {
            vec![1.0]
        } else {
            f.first().map(|x| x.1.clone()).unwrap_or(vec![1.0])
        }
    };
    let (bw_first, lat_first) = (first(&bwf), first(&latf));
    let hdr = if model == "SMPI" { SMPI_HEADER_BYTES } else { 0 };
    let gamma: f64 = cfg.get("network/TCP-gamma").unwrap_or("4194304").parse().map_err(|_| e("bad network/TCP-gamma".into()))?;
    let os = fl("smpi/os", "0:0:0")?;
    let or = fl("smpi/or", "0:0:0")?;
    let thresh = |k: &str, d: &str| cfg.get(k).unwrap_or(d).parse::<u64>().map_err(|_| e(format!("bad {k}")));
    let eager = thresh("smpi/send-is-detached-thresh", "65536")?;
    let async_small = thresh("smpi/async-small-thresh", "0")?;
    let overhead = |f: &[(u64, Vec<f64>)]| {
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
    };
    topology.validate(hosts.len()).map_err(|w| at(w.0))?;
    if topology != Topology::Crossbar && c.get("bb_bw").is_some() {
        return Err(at("a backbone (bb_bw) applies to FLAT clusters only".into()));
    }
    let crosstraffic = match cfg.get("network/crosstraffic").unwrap_or("yes") {
        "yes" | "1" | "on" | "true" => 0.05,
        _ => 0.0,
    };
    let flows = (c.get("bb_bw").is_none()).then(|| FlowSharing {
        link_bw_bytes_per_s: bw,
        nominal_rate_bytes_per_s: if gamma > 0.0 && route_lat > 0.0 { bw.min(gamma / (2.0 * route_lat)) } else { bw },
        crosstraffic,
        header_bytes: hdr,
        topology: topology.clone(),
        latency_per_link: true,
    });
    // SimGrid's `ompi` selector is its own port of OpenMPI's tables.
    let selector = match cfg.get("smpi/coll-selector").unwrap_or("default") {
        "ompi" => "simgrid-ompi",
        s => s,
    };
    let mut coll = CollAlgs::preset(selector).map_err(|w| e(format!("smpi/coll-selector: {w}")))?;
    for (k, v) in &cfg.0 {
        if let Some(name) = k.strip_prefix("smpi/").filter(|n| Coll::from_name(n).is_some()) {
            coll.set(name, v).map_err(|w| e(format!("{k}: {w}")))?;
        }
    }
    let (pstates, pstate) = host_pstates(&speeds, &props).map_err(|(l, w)| e(format!("line {l}: <prop> {w}")))?;
    for h in &mut hosts {
        (h.pstates, h.pstate) = (pstates.clone(), pstate);
        h.speed_flops = pstates.is_empty().then_some(speed);
    }
    let platform = Platform {
        name: c.get("id").unwrap_or("cluster").to_string(),
        hosts,
        mapping: Mapping::RoundRobin,
        network: Network { intra: link_model(lb_lat, lb_bw), inter: Some(link_model(route_lat, route_bw)) },
        smpi: Smpi { async_small_thresh_bytes: Some(async_small) },
        links: flows,
        collectives: Collectives { algs: coll, reduce: Default::default() },
        no_oversubscription: true,
    };
    platform.validate().map_err(|w| e(w.0))?;
    Ok(platform)
}

/// The pstates of the cluster's hosts: one per `speed` value, with the
/// power ranges of the `wattage_per_state` property (one `Idle:Epsilon:AllCores`
/// per pstate, comma-separated) and the running `pstate` property. No
/// pstates when there is a single speed and no `wattage_per_state`.
fn host_pstates(speeds: &[f64], props: &[(String, String, usize)]) -> Result<(Vec<Pstate>, usize), (usize, String)> {
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
    if speeds.len() == 1 && watts[0].is_none() {
        return Ok((Vec::new(), 0));
    }
    let pstate = match prop("pstate") {
        None => 0,
        Some((_, v, line)) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&p| p < speeds.len())
            .ok_or((*line, format!("pstate `{v}` is not one of the {} pstates", speeds.len())))?,
    };
    let pstates = speeds.iter().zip(watts).map(|(&speed_flops, watts)| Pstate { speed_flops, watts }).collect();
    Ok((pstates, pstate))
}

#[cfg(test)]
mod tests;

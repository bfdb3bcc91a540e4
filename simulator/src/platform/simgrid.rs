//! SimGrid platforms (SimGrid 3.32, "Describing your Simulated Platform"
//! and "Configuring SimGrid"), both ways:
//! - [`parse`] imports a platform XML holding one `<cluster>`, with the
//!   `smpi/*` and `network/*` settings of its `<config>`/`<prop>` elements
//!   or of `--cfg`-style options, into our [`Platform`];
//! - [`SmpiProps`] is SMPI's point-to-point model as properties, printed as
//!   a `<config>` block or a whole platform ([`export`]), built from a
//!   [`Platform`] by [`SmpiProps::from_platform`]; [`to_xml`] writes a
//!   platform as a cluster that [`parse`] reads back.
//!
//! The XML is read by `roxmltree`; every error is one line naming the file
//! and the XML line: malformed XML, an unknown `<cluster>` attribute, a
//! value without a valid unit or a non-positive speed or bandwidth, an
//! out-of-range `pstate`, a `radical` of more than [`MAX_HOSTS`] hosts (or the bound
//! given to [`parse_limited`]), counted before any host is made.
//!
//! What is imported, and how:
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
//!   `SPLITDUPLEX` (SimGrid's cluster default), a backbone (`bb_bw`) one
//!   `SHARED` link that every route between two hosts crosses, flows share
//!   max-min fairly, with `network/crosstraffic` (default yes: 0.05 of each flow on
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
//!   SPLITDUPLEX) and `bb_sharing_policy` (always SHARED: both directions
//!   share the backbone, [`crate::network::topology::Topology::Backbone`]),
//!   `router_id` (a name), `network/weight-S` (equal for all routes of a flat
//!   cluster), `smpi/ois`, `wattage_off` and other host properties.
//!   Other topologies, several
//!   clusters, host/link/route-based platforms, `limiter_link` and any
//!   other `<cluster>` attribute are errors.

#[cfg(doc)]
use super::{Host, Platform};
use crate::network::{Piecewise, Segment};

mod disks;
pub mod export;
mod import;

pub use export::{to_xml, SmpiProps};
pub use import::{parse, parse_limited};

/// SMPI's default `smpi/bw-factor` (SimGrid 3.32).
pub const SMPI_BW_FACTOR: &str =
    "65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;1426:0.608902;732:0.341987;257:0.338112;0:0.812084";
/// SMPI's default `smpi/lat-factor` (SimGrid 3.32).
pub const SMPI_LAT_FACTOR: &str =
    "65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;1426:1.61075;732:1.9503;257:1.95341;0:2.01467";

/// Bytes SMPI adds to every message before timing it and looking up its
/// factors. Not documented; measured on SimGrid 3.32 (`smpirun -replay`
/// of one `send`): a payload of s bytes costs exactly as s + 16 bytes,
/// in both the latency and the bandwidth term.
pub const SMPI_HEADER_BYTES: u64 = 16;

/// Most hosts a `<cluster>`'s `radical` may give unless the caller sets
/// another bound ([`parse_limited`], `--max-hosts`): [`crate::limits::MAX_HOSTS`].
pub const MAX_HOSTS: u64 = crate::limits::MAX_HOSTS as u64;

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

/// A SimGrid time (`1.5us`, `2ms`; a bare number is seconds), seconds.
pub fn parse_time(v: &str) -> Option<f64> {
    with_unit(v, TIME)
}

/// A SimGrid bandwidth (`10GBps`, `100Gbps`; a bare number is bytes/s), bytes/s.
pub fn parse_bandwidth(v: &str) -> Option<f64> {
    with_unit(v, BW)
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

/// A factor list: (threshold bytes, values) sorted by threshold.
type Factors = Vec<(u64, Vec<f64>)>;

/// Parses a SimGrid factor list `t:v;t:v;…` into (threshold, values)
/// sorted by threshold: thresholds at most 2^53 bytes, values finite and
/// `>= 0`.
fn factors(spec: &str) -> Result<Factors, String> {
    let mut out = Vec::new();
    for item in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let mut it = item.split(':');
        let t = it.next().and_then(|t| t.trim().parse::<u64>().ok()).ok_or(format!("bad threshold in `{item}`"))?;
        let vals: Result<Vec<f64>, _> = it.map(|x| x.trim().parse::<f64>()).collect();
        let vals = vals.map_err(|_| format!("bad value in `{item}`"))?;
        if t > crate::limits::MAX_BYTES {
            return Err(format!("threshold {t} in `{item}` exceeds the limit of 2^53 bytes"));
        }
        if vals.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err(format!("a value in `{item}` is not finite and >= 0"));
        }
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

#[cfg(test)]
mod tests;

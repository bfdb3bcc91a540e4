//! The fitted network model in SimGrid's terms: [`from_fit`] maps our
//! fits to SMPI's `smpi/*` properties ([`SmpiProps`], whose format and
//! printing live in the simulator's SimGrid module), ready to paste into a
//! platform's `<config>`.
//!
//! Mapping from our fits ([`NetworkFit`]):
//! - `os`: the blocking-send fit over the eager sizes (above the eager
//!   limit the send waits for the receiver, which is not overhead; the
//!   last eager piece is extended); `ois` likewise from the `MPI_Isend`
//!   fit (the `os` intervals when it was not measured).
//! - `or`: the receive fit over the eager sizes, likewise extended.
//! - network: the half round trip minus `os` and `or` (floored at
//!   [`MIN_NETWORK_SHARE`] of the half round trip), linear over each piece
//!   of the transfer fit; `L` is its value at 0 B, `B` its fastest
//!   bandwidth, and the factors are relative to those.
//! - `async-small-thresh` and `send-is-detached-thresh`: the eager limit.
//! - `smpi/wtime`, `smpi/iprobe`: the measured cost of one call, when
//!   measured.

pub use simulator::platform::simgrid::SmpiProps;

use crate::network::NetworkFit;
use crate::segmented::SegmentedFit;

/// Smallest share of the half round trip kept as network time when the
/// overheads nearly cover it (dimensionless).
pub const MIN_NETWORK_SHARE: f64 = 0.05;

/// Pieces of `f` that start below `limit` as SMPI overhead intervals; the
/// first starts at 0.
fn overhead(f: &SegmentedFit, limit: u64) -> Vec<(u64, f64, f64)> {
    let mut out: Vec<(u64, f64, f64)> = f
        .pieces
        .iter()
        .enumerate()
        .filter(|(i, p)| *i == 0 || p.first_bytes < limit)
        .map(|(i, p)| (if i == 0 { 0 } else { p.first_bytes }, p.intercept_s, p.slope_s_per_byte))
        .collect();
    out.dedup_by_key(|x| x.0);
    out
}

/// Value of SMPI intervals at `bytes`: the last interval starting at or
/// below `bytes`.
fn eval_intervals(v: &[(u64, f64, f64)], bytes: u64) -> f64 {
    v.iter().rev().find(|x| x.0 <= bytes).or(v.first()).map_or(0.0, |&(_, a, b)| a + b * bytes as f64)
}

/// SMPI properties from our fits (see the module doc for the mapping).
pub fn from_fit(fit: &NetworkFit) -> SmpiProps {
    let limit = fit.eager_threshold_bytes;
    let os = overhead(&fit.send, limit);
    let or = overhead(&fit.recv, limit);
    let net = |s: u64| {
        let t = fit.transfer.eval(s);
        (t - eval_intervals(&os, s) - eval_intervals(&or, s)).max(MIN_NETWORK_SHARE * t)
    };
    // (from_bytes, intercept_s, slope_s_per_byte) of the network time.
    let pieces: Vec<(u64, f64, f64)> = fit
        .transfer
        .pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (a, b) = (p.first_bytes, p.last_bytes.max(p.first_bytes + 1));
            let slope = ((net(b) - net(a)) / (b - a) as f64).max(0.0);
            let intercept = (net(a) - slope * a as f64).max(0.0);
            // A piece starting past the refined eager threshold starts at it
            // (as in the platform TOML, NetworkFit::p2p_model).
            let from = match i {
                0 => 0,
                _ if fit.transfer.pieces[i - 1].last_bytes < limit && limit <= p.first_bytes => limit,
                _ => p.first_bytes,
            };
            (from, intercept, slope)
        })
        .collect();
    let latency = pieces[0].1.max(1e-9);
    let min_slope = pieces.iter().map(|p| p.2).filter(|&s| s > 0.0).fold(f64::INFINITY, f64::min);
    let bandwidth = if min_slope.is_finite() { 1.0 / min_slope } else { 1e12 };
    let lat_factor = pieces.iter().map(|&(s, a, _)| (s, (a / latency).max(1e-6))).collect();
    let bw_factor = pieces.iter().map(|&(s, _, b)| (s, if b > 0.0 { (1.0 / (b * bandwidth)).min(1.0) } else { 1.0 })).collect();
    SmpiProps {
        ois: fit.isend.as_ref().map_or_else(|| os.clone(), |f| overhead(f, limit)),
        os,
        or,
        bw_factor,
        lat_factor,
        async_small_thresh: limit,
        send_is_detached_thresh: limit,
        wtime_s: fit.wtime_s,
        iprobe_s: fit.iprobe_s,
        link_latency_s: latency,
        link_bandwidth_bytes_per_s: bandwidth,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segmented::LinearPiece;

    fn piece(first: u64, last: u64, a: f64, b: f64) -> LinearPiece {
        LinearPiece { first_bytes: first, last_bytes: last, points: 10, intercept_s: a, slope_s_per_byte: b, rms_rel_residual: 0.0 }
    }

    fn fit(pieces: Vec<LinearPiece>) -> SegmentedFit {
        SegmentedFit { points: 10 * pieces.len(), pieces, bic: 0.0 }
    }

    fn example() -> NetworkFit {
        NetworkFit {
            transfer: fit(vec![piece(1, 3000, 1e-6, 1e-10), piece(5000, 4 << 20, 4e-6, 5e-11)]),
            send: fit(vec![piece(1, 200, 1e-7, 0.0), piece(300, 3000, 2e-7, 1e-11), piece(5000, 4 << 20, 5e-6, 5e-11)]),
            recv: fit(vec![piece(1, 3000, 1e-7, 1e-11), piece(5000, 4 << 20, 3e-6, 5e-11)]),
            isend: None,
            wtime_s: Some(2e-8),
            iprobe_s: None,
            irecv_s: None,
            wait_s: None,
            rma_call_s: None,
            rma_calls: Default::default(),
            rma: None,
            host_copy_bytes_per_s: None,
            pairs: None,
            eager_threshold_bytes: 5000,
            threshold_note: String::new(),
        }
    }

    #[test]
    fn overheads_stop_at_the_eager_limit_and_factors_rebuild_the_network_time() {
        let p = from_fit(&example());
        assert_eq!(p.os, vec![(0, 1e-7, 0.0), (300, 2e-7, 1e-11)]);
        assert_eq!(p.or, vec![(0, 1e-7, 1e-11)]);
        assert_eq!(p.ois, p.os);
        assert_eq!((p.async_small_thresh, p.send_is_detached_thresh), (5000, 5000));
        // os + network + or rebuilds the half round trip where it is not floored.
        for s in [1u64, 3000, 5000, 4 << 20] {
            let f = |v: &[(u64, f64)]| v.iter().rev().find(|x| x.0 <= s).unwrap().1;
            let net = f(&p.lat_factor) * p.link_latency_s + s as f64 / (f(&p.bw_factor) * p.link_bandwidth_bytes_per_s);
            let total = eval_intervals(&p.os, s) + net + eval_intervals(&p.or, s);
            let want = example().transfer.eval(s);
            assert!((total / want - 1.0).abs() < 1e-9, "{s} B: {total} vs {want}");
        }
        assert!(p.bw_factor.iter().all(|&(_, f)| f > 0.0 && f <= 1.0));
    }

    #[test]
    fn the_snippet_uses_simgrids_syntax() {
        let s = from_fit(&example()).snippet();
        assert!(s.contains("<prop id=\"smpi/os\" value=\"0:1e-7:0e0;300:2e-7:1e-11\"/>"), "{s}");
        assert!(s.contains("<prop id=\"smpi/async-small-thresh\" value=\"5000\"/>"), "{s}");
        assert!(s.contains("<prop id=\"smpi/wtime\" value=\"2e-8\"/>") && !s.contains("smpi/iprobe"), "{s}");
        assert!(s.contains("<prop id=\"smpi/bw-factor\" value=\"0:"), "{s}");
        for id in ["smpi/or", "smpi/ois", "smpi/lat-factor", "smpi/send-is-detached-thresh"] {
            assert!(s.contains(&format!("<prop id=\"{id}\" value=\"")), "{id} missing:\n{s}");
        }
        let x = from_fit(&example()).platform_xml(2, 4);
        assert!(x.contains("<host id=\"node1\" speed=\"1Gf\" core=\"4\"/>") && x.contains("<route src=\"node0\" dst=\"node1\">"), "{x}");
    }
}

//! The host's copy rate shared by concurrent transfers
//! ([`simulator::platform::Network::host_copy_bytes_per_s`]), from the
//! `exchange` samples: both ranks send and receive `s` bytes at once.
//!
//! Two transfers that start together, each of latency a and bound B (the
//! one-way `transfer` segment of `s`: a + s / B alone), sharing a copy
//! rate C max-min fairly, each take a + s / min(B, C / 2). So an exchange
//! of t_x seconds gives C = 2 s / (t_x − a) where that is below 2 B, and
//! says nothing where the exchange is as fast as a one-way transfer.
//! Only sizes sent by rendezvous whose bandwidth part s / B is at least
//! [`MIN_BANDWIDTH_SHARE`] times the latency a count: below, the
//! difference is the latency's noise.

use simulator::network::P2pModel;
use statrs::statistics::{Data, Median};

use crate::bench::{Op, Sample};

/// Smallest ratio of a size's bandwidth part to its latency for its
/// exchange samples to count.
pub const MIN_BANDWIDTH_SHARE: f64 = 3.0;

/// An exchange this much slower than a one-way transfer, or less, shows
/// no sharing (the samples' noise).
pub const NO_SHARING: f64 = 1.05;

/// The host's copy rate, bytes/s: the median over the counted sizes of
/// each size's estimate from its median exchange time (∞ where the
/// exchange takes at most [`NO_SHARING`] times the one-way transfer).
/// `None` when no size counts, or when that median leaves each of two
/// concurrent transfers its own bound at every counted size (no sharing
/// seen).
pub fn fit_host_copy(samples: &[Sample], model: &P2pModel) -> Option<f64> {
    let mut sizes: Vec<u64> = samples.iter().filter(|s| s.op == Op::Exchange).map(|s| s.size_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut estimates = Vec::new();
    let mut bounds = Vec::new();
    for s in sizes.into_iter().filter(|&s| !model.is_eager(s)) {
        let Some(seg) = model.transfer.segment(s) else { continue };
        let (a, b) = (seg.intercept_s, seg.bandwidth_bytes_per_s);
        if !(b.is_finite() && b > 0.0) || (s as f64 / b) < MIN_BANDWIDTH_SHARE * a {
            continue;
        }
        let times: Vec<f64> = samples.iter().filter(|x| x.op == Op::Exchange && x.size_bytes == s).map(|x| x.duration_s).collect();
        let t_x = Data::new(times).median();
        let one_way = a + s as f64 / b;
        estimates.push(if t_x <= NO_SHARING * one_way { f64::INFINITY } else { 2.0 * s as f64 / (t_x - a) });
        bounds.push(b);
    }
    if estimates.is_empty() {
        return None;
    }
    let c = Data::new(estimates).median();
    let shared = bounds.iter().any(|&b| c < 2.0 * b);
    (c.is_finite() && shared).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator::network::{Piecewise, Segment};

    fn model() -> P2pModel {
        let seg = |max, a, b| Segment { max_bytes: max, intercept_s: a, bandwidth_bytes_per_s: b };
        P2pModel {
            eager_threshold_bytes: 4096,
            transfer: Piecewise { segments: vec![seg(Some(4096), 5e-7, 4e9), seg(None, 2e-6, 1e10)] },
            send_overhead: Piecewise::default(),
            recv_overhead: Piecewise::default(),
            rma: None,
        }
    }

    fn exchanges(c: f64, noise: &[f64]) -> Vec<Sample> {
        let m = model();
        let mut out = Vec::new();
        for s in [1024u64, 8192, 65536, 262_144, 1 << 20, 4 << 20] {
            let seg = m.transfer.segment(s).unwrap();
            let rate = if m.is_eager(s) { seg.bandwidth_bytes_per_s } else { seg.bandwidth_bytes_per_s.min(c / 2.0) };
            for &k in noise {
                let duration_s = (seg.intercept_s + s as f64 / rate) * k;
                out.push(Sample { op: Op::Exchange, size_bytes: s, start_s: 0.0, duration_s });
            }
        }
        out
    }

    #[test]
    fn a_shared_copy_rate_is_recovered_from_noisy_exchanges() {
        let c = fit_host_copy(&exchanges(1.25e10, &[0.97, 1.0, 1.01, 1.04, 0.99]), &model()).expect("sharing seen");
        assert!((c / 1.25e10 - 1.0).abs() < 0.03, "{c}");
    }

    #[test]
    fn exchanges_as_fast_as_one_way_transfers_give_no_rate() {
        assert_eq!(fit_host_copy(&exchanges(f64::INFINITY, &[0.98, 1.0, 1.02]), &model()), None);
        // A copy rate above twice every bound never limits two transfers.
        assert_eq!(fit_host_copy(&exchanges(2.2e10, &[1.0]), &model()), None);
    }

    #[test]
    fn no_exchange_samples_or_only_latency_bound_sizes_give_no_rate() {
        assert_eq!(fit_host_copy(&[], &model()), None);
        let small: Vec<Sample> = exchanges(1e10, &[1.0]).into_iter().filter(|s| s.size_bytes <= 8192).collect();
        assert_eq!(fit_host_copy(&small, &model()), None);
    }
}

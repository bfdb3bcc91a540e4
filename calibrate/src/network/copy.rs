//! The host's copy rate shared by concurrent transfers
//! ([`simulator::platform::Network::host_copy_bytes_per_s`]), from the
//! `exchange` samples: both ranks send and receive `s` bytes at once; and
//! whether a rank copies the transfers it receives one at a time
//! ([`simulator::platform::Network::serial_receives`]), from the `pair`
//! samples: two transfers into one rank at once.
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
    let counted = counted_sizes(samples, Op::Exchange, model);
    let estimates: Vec<f64> = counted
        .iter()
        .map(|c| if c.median_s <= NO_SHARING * (c.a + c.s / c.b) { f64::INFINITY } else { 2.0 * c.s / (c.median_s - c.a) })
        .collect();
    if estimates.is_empty() {
        return None;
    }
    let c = Data::new(estimates).median();
    let shared = counted.iter().any(|x| c < 2.0 * x.b);
    (c.is_finite() && shared).then_some(c)
}

/// A pair this many times slower than one transfer, or more, shows a
/// receiver that copies the two one at a time (in parallel they take
/// about one transfer's time, one after the other twice).
pub const SERIAL_RATIO: f64 = 1.5;

/// What the `pair` samples say of a rank that receives two transfers at
/// once ([`fit_pairs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PairFit {
    /// Per counted size (as for [`fit_host_copy`]), in increasing order:
    /// the bytes and the median pair time over the median one-way
    /// transfer (half a `pingpong` round trip; the fitted model where the
    /// size has no ping-pong).
    pub ratios: Vec<(u64, f64)>,
    /// The smallest counted size from which every larger one's ratio is
    /// at least [`SERIAL_RATIO`], bytes (the platform's
    /// `serial_receives_min_bytes`); `None` when the largest two sizes'
    /// (the largest's, with one) are not: the transfers move in parallel.
    pub serial_from_bytes: Option<u64>,
}

/// Two transfers into one rank at once against one ([`PairFit`]); `None`
/// when no size counts.
pub fn fit_pairs(samples: &[Sample], model: &P2pModel) -> Option<PairFit> {
    let ratios: Vec<(u64, f64)> = counted_sizes(samples, Op::Pair, model)
        .iter()
        .map(|c| {
            let one: Vec<f64> =
                samples.iter().filter(|x| x.op == Op::Pingpong && x.size_bytes == c.s as u64).map(|x| x.duration_s).collect();
            let one = if one.is_empty() { c.a + c.s / c.b } else { Data::new(one).median() };
            (c.s as u64, c.median_s / one)
        })
        .collect();
    let serial = ratios.iter().rev().take_while(|r| r.1 >= SERIAL_RATIO).count();
    let serial_from_bytes = (serial >= ratios.len().min(2) && serial > 0).then(|| ratios[ratios.len() - serial].0);
    (!ratios.is_empty()).then_some(PairFit { ratios, serial_from_bytes })
}

/// A size whose samples count: its bytes, its one-way `transfer` segment
/// (latency `a` seconds, bandwidth `b` bytes/s) and its median time.
struct Counted {
    s: f64,
    a: f64,
    b: f64,
    median_s: f64,
}

/// The sizes of `op`'s samples sent by rendezvous whose bandwidth part is
/// at least [`MIN_BANDWIDTH_SHARE`] times the latency, in increasing order.
fn counted_sizes(samples: &[Sample], op: Op, model: &P2pModel) -> Vec<Counted> {
    let mut sizes: Vec<u64> = samples.iter().filter(|s| s.op == op).map(|s| s.size_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut out = Vec::new();
    for s in sizes.into_iter().filter(|&s| !model.is_eager(s)) {
        let Some(seg) = model.transfer.segment(s) else { continue };
        let (a, b) = (seg.intercept_s, seg.bandwidth_bytes_per_s);
        if !(b.is_finite() && b > 0.0) || (s as f64 / b) < MIN_BANDWIDTH_SHARE * a {
            continue;
        }
        let times: Vec<f64> = samples.iter().filter(|x| x.op == op && x.size_bytes == s).map(|x| x.duration_s).collect();
        out.push(Counted { s: s as f64, a, b, median_s: Data::new(times).median() });
    }
    out
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

    /// Pairs of transfers whose data moves `k` times one transfer's time.
    fn pairs(k: f64) -> Vec<Sample> {
        let m = model();
        let sizes = [1024u64, 65536, 1 << 20, 4 << 20];
        let time = |s: u64| m.transfer.segment(s).map(|g| g.intercept_s + k * s as f64 / g.bandwidth_bytes_per_s).unwrap();
        sizes.iter().map(|&s| Sample { op: Op::Pair, size_bytes: s, start_s: 0.0, duration_s: time(s) }).collect()
    }

    #[test]
    fn pairs_tell_from_which_size_receives_take_turns() {
        let sizes = |f: &PairFit| f.ratios.iter().map(|r| r.0).collect::<Vec<_>>();
        for k in [1.0, 1.3] {
            let f = fit_pairs(&pairs(k), &model()).unwrap();
            assert_eq!(sizes(&f), [65536, 1 << 20, 4 << 20]);
            assert!(f.ratios.iter().all(|r| r.1 < k + 1e-9), "{f:?}");
            assert_eq!(f.serial_from_bytes, None);
        }
        assert_eq!(fit_pairs(&pairs(2.0), &model()).unwrap().serial_from_bytes, Some(65536));
        // In parallel up to 64 KiB, one at a time above; against ping-pongs.
        let mut samples = pairs(1.0);
        for x in samples.iter_mut().filter(|x| x.size_bytes > 65536) {
            x.duration_s *= 1.9;
        }
        for x in pairs(1.0) {
            samples.push(Sample { op: Op::Pingpong, ..x });
        }
        let f = fit_pairs(&samples, &model()).unwrap();
        assert_eq!(f.serial_from_bytes, Some(1 << 20));
        assert!((f.ratios[2].1 - 1.9).abs() < 1e-9 && (f.ratios[0].1 - 1.0).abs() < 1e-9, "{f:?}");
        // Only the largest size slow: noise, not a protocol.
        samples.iter_mut().filter(|x| x.op == Op::Pair && x.size_bytes == 1 << 20).for_each(|x| x.duration_s /= 1.9);
        assert_eq!(fit_pairs(&samples, &model()).unwrap().serial_from_bytes, None);
        // Only eager or latency-bound pairs: nothing to tell.
        let small: Vec<Sample> = pairs(2.0).into_iter().filter(|s| s.size_bytes <= 4096).collect();
        assert_eq!(fit_pairs(&small, &model()), None);
    }

    #[test]
    fn no_exchange_samples_or_only_latency_bound_sizes_give_no_rate() {
        assert_eq!(fit_host_copy(&[], &model()), None);
        let small: Vec<Sample> = exchanges(1e10, &[1.0]).into_iter().filter(|s| s.size_bytes <= 8192).collect();
        assert_eq!(fit_host_copy(&small, &model()), None);
    }
}

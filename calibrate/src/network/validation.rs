//! Held-back validation of the ping-pong model, and the stability of the
//! per-size medians that decides whether to measure more.

use std::collections::BTreeMap;

use statrs::distribution::{ContinuousCDF, Normal};
use statrs::statistics::{Data, Median, OrderStatistics};

use crate::bench::{Op, Sample};
use crate::segmented;

use super::NetworkFit;

/// How well a fit predicts ping-pong samples it was not fitted on.
///
/// Two views: per size, the model against the median of the held-back
/// samples of that size (the quantity the fit models), and per sample.
/// The model is of the machine's fast state ([`crate::modes::SlowState`])
/// and, at sizes still bimodal, of the fast mode, so the held-back samples
/// of slow states and modes are left out (counted in `slow_mode_samples`);
/// `all_modes_median_rel_error` keeps them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Validation {
    /// Held-back ping-pong samples compared.
    pub samples: usize,
    /// Held-back samples left out: taken in the slow state, or in the slow mode of a bimodal size.
    pub slow_mode_samples: usize,
    /// The per-size median error with the slow-mode samples kept (dimensionless).
    pub all_modes_median_rel_error: f64,
    /// Distinct sizes among them.
    pub sizes: usize,
    /// Median over sizes of `|model − median measured| ÷ median measured`
    /// (dimensionless).
    pub median_rel_error: f64,
    /// Median over samples of `|model − measured| ÷ measured` (dimensionless).
    pub sample_median_rel_error: f64,
    /// 90th percentile over samples of the same (dimensionless).
    pub sample_p90_rel_error: f64,
}

/// Splits `samples` into `(fit, held_back)`: each ping-pong sample is held
/// back with probability `fraction`, decided by a hash of its index and
/// `seed` (deterministic, independent of size and order); `send` and
/// `recv` samples are all kept for the fit (only the ping-pong model is
/// validated).
pub fn hold_out(samples: &[Sample], fraction: f64, seed: u64) -> (Vec<Sample>, Vec<Sample>) {
    let mut fit = Vec::with_capacity(samples.len());
    let mut held = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        let mut z = (i as u64 ^ seed.rotate_left(32)).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
        if s.op == Op::Pingpong && u < fraction {
            held.push(*s)
        } else {
            fit.push(*s)
        }
    }
    (fit, held)
}

/// Relative errors of `fit.transfer` on the ping-pong samples of `fast`,
/// the held-back samples `held` of the fast state or mode (see
/// [`Validation`]); `None` when there are none.
pub fn validate(fit: &NetworkFit, held: &[Sample], fast: &[Sample]) -> Option<Validation> {
    let all = validate_all(fit, held)?;
    let mut v = validate_all(fit, fast)?;
    v.slow_mode_samples = all.samples - v.samples;
    v.all_modes_median_rel_error = all.median_rel_error;
    Some(v)
}

fn validate_all(fit: &NetworkFit, held: &[Sample]) -> Option<Validation> {
    let pts: Vec<(u64, f64)> =
        held.iter().filter(|s| s.op == Op::Pingpong && s.duration_s > 0.0).map(|s| (s.size_bytes, s.duration_s)).collect();
    let rel = |(size, y): (u64, f64)| (fit.transfer.eval(size) - y).abs() / y;
    // Quantiles interpolated between order statistics (statrs's R-8 rule;
    // the median of an even count is the mean of the two middle values).
    let quantile = |v: Vec<f64>, p: f64| Data::new(v).quantile(p);
    if pts.is_empty() {
        return None;
    }
    let per_size: Vec<f64> = segmented::median_by_size(&pts).into_iter().map(rel).collect();
    let per_sample: Vec<f64> = pts.iter().copied().map(rel).collect();
    let median = quantile(per_size.clone(), 0.5);
    Some(Validation {
        samples: pts.len(),
        slow_mode_samples: 0,
        all_modes_median_rel_error: median,
        sizes: per_size.len(),
        median_rel_error: median,
        sample_median_rel_error: quantile(per_sample.clone(), 0.5),
        sample_p90_rel_error: quantile(per_sample, 0.9),
    })
}

/// How stable the per-size ping-pong medians of `samples` are: the median
/// over sizes of the relative half-width of the 95 % confidence interval
/// of each size's median, from order statistics (the sorted samples
/// `n/2 ± z √n / 2`, z the normal 97.5 % quantile, 1.96); infinite with no
/// size of 4 samples or more. Medians of even counts are the mean of the
/// two middle values. Dimensionless.
pub fn median_ci(samples: &[Sample]) -> f64 {
    let half_z = Normal::standard().inverse_cdf(0.975) / 2.0;
    let mut by: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.op == Op::Pingpong) {
        by.entry(s.size_bytes).or_default().push(s.duration_s);
    }
    let widths: Vec<f64> = by
        .into_values()
        .filter(|v| v.len() >= 4)
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            let n = v.len() as f64;
            let (lo, hi) =
                ((n / 2.0 - half_z * n.sqrt()).floor().max(0.0) as usize, ((n / 2.0 + half_z * n.sqrt()).ceil() as usize).min(v.len() - 1));
            (v[hi] - v[lo]) / (2.0 * Median::median(&Data::new(v)))
        })
        .collect();
    if widths.is_empty() {
        return f64::INFINITY;
    }
    Median::median(&Data::new(widths))
}

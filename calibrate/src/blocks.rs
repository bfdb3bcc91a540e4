//! dPerf's threshold-iteration rule over the compute blocks of a trace
//! (Cornea & Bourgeois, dPerf, §III "Prefetching effect and the Threshold
//! iteration rule"): per region, the iteration count `th` after which the
//! running mean time per block stays within ε of its value at `th`, and
//! `t_avg = t_th / th`, the mean of the first `th` blocks.

use std::collections::BTreeMap;
use std::path::Path;

use simulator::trace::ComputeTime;
use statrs::statistics::Statistics;

use crate::error::{Error, ErrorKind};
use crate::speed::for_each_block;

/// Default tolerance ε of the rule (dimensionless): 2 %.
pub const DEFAULT_EPSILON: f64 = 0.02;

/// The threshold of one sequence of block times: the smallest `th ≥ 1`
/// such that the running mean `m_x = (t_1 + … + t_x) / x` stays within
/// `epsilon × m_th` of `m_th` for every `x ≥ th`; returns `(th, m_th)`
/// (`m_th = t_th / th`, seconds), or `None` for an empty sequence.
///
/// `times`: block durations in execution order, seconds.
pub fn threshold_iteration(times: &[f64], epsilon: f64) -> Option<(usize, f64)> {
    let th = joint_threshold(&[times], epsilon, 0.0)?;
    Some((th, times[..th].mean()))
}

/// The threshold of several sequences of the same blocks (e.g. their CPU
/// and wall times): the smallest `th ≥ 1` at which the rule of
/// [`threshold_iteration`] holds for every sequence, with the tolerance
/// `max(epsilon × m_th, floor)` (`floor` in the sequences' unit; 0 gives
/// dPerf's rule); `None` when they are empty.
///
/// # Panics
/// If the sequences differ in length.
pub fn joint_threshold(seqs: &[&[f64]], epsilon: f64, floor: f64) -> Option<usize> {
    let n = seqs.first()?.len();
    if n == 0 {
        return None;
    }
    let mut stable = vec![true; n];
    for times in seqs {
        assert_eq!(times.len(), n, "sequences of the same blocks");
        let mut sum = 0.0;
        let means: Vec<f64> = times
            .iter()
            .enumerate()
            .map(|(i, t)| {
                sum += t;
                sum / (i + 1) as f64
            })
            .collect();
        // Suffix minimum and maximum of the running means.
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for x in (0..n).rev() {
            lo = lo.min(means[x]);
            hi = hi.max(means[x]);
            let m = means[x];
            let tol = (epsilon * m.abs()).max(floor);
            stable[x] &= hi - m <= tol && m - lo <= tol;
        }
    }
    // The last block is always stable: its suffix is itself.
    Some(stable.iter().position(|&s| s).expect("the last block is stable") + 1)
}

/// The rule's result for one region, over all ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionThreshold {
    /// Region key (`prev call site:next call site`).
    pub key: String,
    /// Blocks, summed over ranks.
    pub blocks: u64,
    /// Total time, seconds, summed over ranks.
    pub total_s: f64,
    /// Largest `th` over the ranks.
    pub th: usize,
    /// `t_avg = t_th / th`, seconds, averaged over ranks weighted by blocks.
    pub t_avg_s: f64,
    /// `|t_avg × blocks − total| ÷ total` (dimensionless): the error of
    /// predicting the region from its first `th` blocks per rank.
    pub rel_error: f64,
}

/// Applies [`threshold_iteration`] per rank and region of the trace in
/// `dir`, blocks timed by `compute`; regions by decreasing total time.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] unless `0 < epsilon < 1`; trace errors as
/// [`for_each_block`].
pub fn block_thresholds(dir: &Path, compute: ComputeTime, epsilon: f64) -> Result<Vec<RegionThreshold>, Error> {
    if !(epsilon > 0.0 && epsilon < 1.0) {
        return Err(Error::new(ErrorKind::InvalidArgument, format!("epsilon: {epsilon} is not in (0, 1)")));
    }
    let mut seqs: BTreeMap<(String, u32), Vec<f64>> = BTreeMap::new();
    for_each_block(dir, compute, |rank, key, s| seqs.entry((key.to_string(), rank)).or_default().push(s))?;
    let mut by_region: BTreeMap<String, RegionThreshold> = BTreeMap::new();
    for ((key, _), times) in &seqs {
        let Some((th, m)) = threshold_iteration(times, epsilon) else { continue };
        let r = by_region.entry(key.clone()).or_insert(RegionThreshold {
            key: key.clone(),
            blocks: 0,
            total_s: 0.0,
            th: 0,
            t_avg_s: 0.0,
            rel_error: 0.0,
        });
        r.blocks += times.len() as u64;
        r.total_s += times.iter().sum::<f64>();
        r.th = r.th.max(th);
        r.t_avg_s += m * times.len() as f64; // weighted; divided below
    }
    let mut out: Vec<RegionThreshold> = by_region.into_values().collect();
    for r in &mut out {
        let predicted = r.t_avg_s; // Σ m_th × blocks
        r.t_avg_s /= r.blocks as f64;
        r.rel_error = if r.total_s > 0.0 { (predicted - r.total_s).abs() / r.total_s } else { 0.0 };
    }
    out.sort_by(|a, b| b.total_s.total_cmp(&a.total_s).then(a.key.cmp(&b.key)));
    Ok(out)
}

/// A table of [`block_thresholds`] results.
pub fn summary(rows: &[RegionThreshold]) -> String {
    let mut out = format!("{:>8} {:>6} {:>12} {:>12} {:>8}  region\n", "blocks", "th", "t_avg (us)", "total (s)", "err");
    for r in rows {
        out.push_str(&format!(
            "{:>8} {:>6} {:>12.3} {:>12.6} {:>7.2}%  {}\n",
            r.blocks,
            r.th,
            r.t_avg_s * 1e6,
            r.total_s,
            r.rel_error * 100.0,
            r.key
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_up_blocks_set_the_threshold() {
        // Cold first blocks (cache, prefetch), then steady at 1.0.
        let mut t = vec![5.0, 3.0, 2.0];
        t.extend(std::iter::repeat_n(1.0, 200));
        let (th, m) = threshold_iteration(&t, 0.02).unwrap();
        // The running mean reaches within 2 % of its final value only late.
        let final_mean = t.iter().sum::<f64>() / t.len() as f64;
        assert!((m - final_mean).abs() <= 0.02 * m + 1e-12, "th {th}, m {m}");
        assert!(th > 3 && th < 200, "th {th}");
        // A steady sequence needs one block.
        assert_eq!(threshold_iteration(&[2.0; 50], 0.02), Some((1, 2.0)));
        assert_eq!(threshold_iteration(&[], 0.02), None);
        // Looser epsilon, earlier threshold.
        assert!(threshold_iteration(&t, 0.2).unwrap().0 < th);
        // Jointly: the later of the two thresholds here.
        let steady = [1.0; 203];
        assert_eq!(joint_threshold(&[&steady, &t], 0.02, 0.0), Some(th));
        assert_eq!(joint_threshold(&[&steady, &steady], 0.02, 0.0), Some(1));
        // An absolute floor as large as the warm-up's pull: stable at once.
        assert_eq!(joint_threshold(&[&t], 0.02, 4.0), Some(1));
    }
}

//! Two-state timings of a noisy machine: per message size, detect a fast
//! and a slow mode among the repetitions, and keep the fast one.
//!
//! On a shared VM, core-to-core messages switch between a fast and a slow
//! state for tens of seconds at a time (here 1-byte ping-pong 0.14–0.20 µs
//! against 0.35–0.45 µs), so the repetitions of one size split into two
//! clusters and their median jumps between them from run to run. A
//! size's samples are bimodal when, sorted, the widest gap between
//! neighbours (in log time) splits them into two clusters of at least
//! [`MIN_MODE_SHARE`] each, that gap is at least [`MIN_GAP_SHARE`] of the
//! log ratio of the clusters' medians, and each cluster's interquartile
//! range is at most half the gap — two tight modes and a clean valley,
//! which a unimodal heavy tail (preempted samples spread over decades)
//! does not leave.
//! The model is then fitted on the fast cluster: the machine undisturbed.

use std::collections::BTreeMap;

use statrs::statistics::{Data, Median, OrderStatistics, Statistics};

use crate::bench::{Op, Sample};

/// Least share of a size's samples in each mode (dimensionless).
pub const MIN_MODE_SHARE: f64 = 0.15;
/// Least ratio of the slow mode's median to the fast one's.
pub const MIN_MODE_RATIO: f64 = 1.5;
/// Least share of the log ratio of the modes' medians that the gap
/// between them must span (dimensionless).
pub const MIN_GAP_SHARE: f64 = 0.3;

/// The two modes of one size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// Durations at or below this are the fast mode, seconds (the
    /// geometric middle of the gap between the modes).
    pub cut_s: f64,
    /// Median of the fast mode, seconds.
    pub fast_median_s: f64,
    /// Median of the slow mode, seconds.
    pub slow_median_s: f64,
    /// Share of the samples in the slow mode (dimensionless).
    pub slow_share: f64,
}

/// Median of `v` (non-empty), the mean of the two middle values for an
/// even count.
fn median(v: &[f64]) -> f64 {
    Median::median(&Data::new(v.to_vec()))
}

/// Log of the interquartile ratio `Q3 / Q1` of `v` (non-empty, positive),
/// quartiles interpolated between order statistics (statrs's R-8 rule).
fn log_iqr(v: &[f64]) -> f64 {
    let mut d = Data::new(v.to_vec());
    (d.upper_quartile() / d.lower_quartile()).ln()
}

/// The fast and slow modes of `durations` (seconds, any order), or `None`
/// when they are not bimodal (see the module doc).
pub fn split_modes(durations: &[f64]) -> Option<Split> {
    let mut v: Vec<f64> = durations.iter().copied().filter(|d| *d > 0.0 && d.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let least = ((n as f64 * MIN_MODE_SHARE).ceil() as usize).max(2);
    if n < 2 * least {
        return None;
    }
    // Widest log gap with at least `least` samples on each side: v[k-1] | v[k].
    let k = (least..=n - least).max_by(|&a, &b| (v[a] / v[a - 1]).total_cmp(&(v[b] / v[b - 1])))?;
    let (fast, slow) = (&v[..k], &v[k..]);
    let (mf, ms) = (median(fast), median(slow));
    let gap = (v[k] / v[k - 1]).ln();
    // Each cluster a mode: its interquartile range (log) well inside the gap.
    let tight = log_iqr(fast) <= 0.5 * gap && log_iqr(slow) <= 0.5 * gap;
    (tight && ms / mf >= MIN_MODE_RATIO && gap >= MIN_GAP_SHARE * (ms / mf).ln()).then(|| Split {
        cut_s: (v[k - 1] * v[k]).sqrt(),
        fast_median_s: mf,
        slow_median_s: ms,
        slow_share: slow.len() as f64 / n as f64,
    })
}

/// The bimodal sizes of one operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Bimodal {
    /// The operation.
    pub op: Op,
    /// Per bimodal size, bytes, its split.
    pub sizes: BTreeMap<u64, Split>,
    /// Distinct sizes of `op` measured.
    pub of_sizes: usize,
}

impl Bimodal {
    /// One warning line naming the op, the size range and the modes.
    pub fn warning(&self) -> String {
        let (lo, hi) = (self.sizes.keys().next().copied().unwrap_or(0), self.sizes.keys().last().copied().unwrap_or(0));
        let ratios: Vec<f64> = self.sizes.values().map(|s| s.slow_median_s / s.fast_median_s).collect();
        let share = self.sizes.values().map(|s| s.slow_share).mean();
        format!(
            "warning: {} is bimodal at {} of {} sizes in {lo}..{hi} B (slow mode {:.1}-{:.1}x the fast one, {:.0}% of their samples); fitted on the fast mode",
            self.op,
            self.sizes.len(),
            self.of_sizes,
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(0.0, f64::max),
            share * 100.0
        )
    }
}

/// The samples of `samples` in the fast mode of their size, per the
/// splits of `bimodal` (sizes not found there are kept whole).
pub fn keep_fast(samples: &[Sample], bimodal: &[Bimodal]) -> Vec<Sample> {
    let cut = |s: &Sample| bimodal.iter().find(|b| b.op == s.op).and_then(|b| b.sizes.get(&s.size_bytes)).map(|x| x.cut_s);
    samples.iter().filter(|s| cut(s).is_none_or(|c| s.duration_s <= c)).copied().collect()
}

/// Least number of bimodal ping-pong sizes from which the machine's slow
/// periods are located in time.
pub const MIN_STATE_SIZES: usize = 3;
/// Largest ping-pong size that labels the state, bytes: latency-bound
/// messages, where the two states differ by a small factor; larger ones
/// also split into preempted and not.
pub const MAX_STATE_SIZE: u64 = 4096;
/// Largest slow ÷ fast ratio of a state (dimensionless); wider splits are
/// preemptions (milliseconds), not the machine's slow state.
pub const MAX_STATE_RATIO: f64 = 5.0;

/// Periods in which the machine was in its slow state, located in time
/// from the ping-pong sizes whose samples split into two modes: their
/// samples label the time they were taken (a majority of 5 neighbours in
/// time, against a misplaced sample), and every other sample takes the
/// label of the nearest labelled one. The state switches every several
/// seconds here, far slower than the samples come.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowState {
    /// `(start_s, slow)` labels, sorted by time.
    labels: Vec<(f64, bool)>,
    /// Share of the labelled samples in the slow state (dimensionless).
    pub slow_share: f64,
    /// Median over the labelling sizes of slow ÷ fast median (dimensionless).
    pub ratio: f64,
    /// Smallest and largest labelling size, bytes.
    pub sizes: (u64, u64),
    /// Number of labelling sizes.
    pub of_sizes: usize,
}

impl SlowState {
    /// Locates the slow periods from the ping-pong samples of `samples`;
    /// `None` when fewer than [`MIN_STATE_SIZES`] sizes are bimodal.
    pub fn locate(samples: &[Sample]) -> Option<SlowState> {
        let mut by: BTreeMap<u64, Vec<&Sample>> = BTreeMap::new();
        for s in samples.iter().filter(|s| s.op == Op::Pingpong && s.size_bytes <= MAX_STATE_SIZE) {
            by.entry(s.size_bytes).or_default().push(s);
        }
        let mut labels = Vec::new();
        let mut ratios = Vec::new();
        let mut sizes = Vec::new();
        for (&size, v) in &by {
            let Some(split) = split_modes(&v.iter().map(|s| s.duration_s).collect::<Vec<_>>()) else { continue };
            if split.slow_median_s > MAX_STATE_RATIO * split.fast_median_s {
                continue;
            }
            labels.extend(v.iter().map(|s| (s.start_s, s.duration_s > split.cut_s)));
            ratios.push(split.slow_median_s / split.fast_median_s);
            sizes.push(size);
        }
        if sizes.len() < MIN_STATE_SIZES {
            return None;
        }
        labels.sort_by(|a, b| a.0.total_cmp(&b.0));
        let raw: Vec<bool> = labels.iter().map(|l| l.1).collect();
        for (i, l) in labels.iter_mut().enumerate() {
            let w = &raw[i.saturating_sub(2)..(i + 3).min(raw.len())];
            l.1 = 2 * w.iter().filter(|&&x| x).count() > w.len();
        }
        let slow_share = labels.iter().filter(|l| l.1).count() as f64 / labels.len() as f64;
        Some(SlowState { slow_share, ratio: median(&ratios), sizes: (sizes[0], sizes[sizes.len() - 1]), of_sizes: sizes.len(), labels })
    }

    /// Whether the machine was in its slow state at `t_s` (the benchmark's clock).
    pub fn slow_at(&self, t_s: f64) -> bool {
        let i = self.labels.partition_point(|l| l.0 < t_s);
        let before = i.checked_sub(1).map(|j| self.labels[j]);
        let after = self.labels.get(i).copied();
        match (before, after) {
            (Some(b), Some(a)) => {
                if t_s - b.0 <= a.0 - t_s {
                    b.1
                } else {
                    a.1
                }
            }
            (Some(x), None) | (None, Some(x)) => x.1,
            (None, None) => false,
        }
    }

    /// The samples of `samples` taken in the fast state.
    pub fn keep_fast(&self, samples: &[Sample]) -> Vec<Sample> {
        samples.iter().filter(|s| !self.slow_at(s.start_s)).copied().collect()
    }

    /// One warning line: the state, its share and the sizes that show it.
    pub fn warning(&self) -> String {
        format!(
            "warning: the machine switched between a fast and a slow state ({:.1}x slower ping-pong at {} sizes in {}..{} B; {:.0}% of the time slow); every operation is fitted on the samples of the fast state",
            self.ratio,
            self.of_sizes,
            self.sizes.0,
            self.sizes.1,
            self.slow_share * 100.0
        )
    }
}

/// Splits every size of every operation in `samples`; returns the samples
/// without the slow mode of bimodal sizes, and the bimodal operations.
pub fn fast_mode(samples: &[Sample]) -> (Vec<Sample>, Vec<Bimodal>) {
    let mut by: BTreeMap<(Op, u64), Vec<f64>> = BTreeMap::new();
    for s in samples {
        by.entry((s.op, s.size_bytes)).or_default().push(s.duration_s);
    }
    let mut found: BTreeMap<Op, Bimodal> = BTreeMap::new();
    let mut sizes_of: BTreeMap<Op, usize> = BTreeMap::new();
    for (&(op, size), d) in &by {
        *sizes_of.entry(op).or_default() += 1;
        if let Some(split) = split_modes(d) {
            found.entry(op).or_insert_with(|| Bimodal { op, sizes: BTreeMap::new(), of_sizes: 0 }).sizes.insert(size, split);
        }
    }
    for b in found.values_mut() {
        b.of_sizes = sizes_of[&b.op];
    }
    let found: Vec<Bimodal> = found.into_values().collect();
    (keep_fast(samples, &found), found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::SplitMix64;

    #[test]
    fn two_states_split_and_a_heavy_tail_does_not() {
        let mut rng = SplitMix64(3);
        // 60 % fast around 0.17 us, 40 % slow around 0.40 us, ±10 %.
        let two: Vec<f64> = (0..30).map(|i| if i % 5 < 3 { 0.17e-6 } else { 0.40e-6 } * (0.9 + 0.2 * rng.next_f64())).collect();
        let s = split_modes(&two).expect("bimodal");
        assert!((s.slow_share - 0.4).abs() < 1e-9, "{s:?}");
        assert!((s.fast_median_s / 0.17e-6 - 1.0).abs() < 0.1 && (s.slow_median_s / 0.40e-6 - 1.0).abs() < 0.1, "{s:?}");
        // One mode with noise, or a log-uniform spread over two decades: no split.
        let one: Vec<f64> = (0..30).map(|_| 0.17e-6 * (0.9 + 0.2 * rng.next_f64())).collect();
        assert_eq!(split_modes(&one), None);
        let spread: Vec<f64> = (0..30).map(|_| 40e-6 * 100f64.powf(rng.next_f64())).collect();
        assert_eq!(split_modes(&spread), None);
        // A few slow outliers are not a mode.
        let mut few = one.clone();
        few[..3].iter_mut().for_each(|d| *d *= 2.5);
        assert_eq!(split_modes(&few), None);
    }

    #[test]
    fn slow_periods_are_located_in_time_and_apply_to_every_op() {
        // The machine is slow (2.4x) in [10, 20) s; the ping-pong sizes
        // label the time, and the sends follow the labels.
        let mut v = Vec::new();
        let mut rng = SplitMix64(5);
        for i in 0..600 {
            let t = i as f64 * 0.05;
            let k = if (10.0..20.0).contains(&t) { 2.4 } else { 1.0 };
            let size = [1, 2, 4, 8, 16, 1000][i % 6];
            let base = if size == 1000 { 0.3e-6 } else { 0.17e-6 };
            let op = if i % 7 == 0 { Op::Send } else { Op::Pingpong };
            v.push(Sample { op, size_bytes: size, start_s: t, duration_s: base * k * (0.95 + 0.1 * rng.next_f64()) });
        }
        // One misplaced slow sample in a fast period is outvoted.
        v[30].duration_s *= 2.4;
        let state = SlowState::locate(&v).expect("slow periods");
        assert!((state.ratio - 2.4).abs() < 0.2 && (state.slow_share - 1.0 / 3.0).abs() < 0.02, "{state:?}");
        assert!(!state.slow_at(1.5) && state.slow_at(15.0) && !state.slow_at(25.0));
        let kept = state.keep_fast(&v);
        assert!(kept.iter().all(|s| !(10.05..19.95).contains(&s.start_s)), "slow samples kept");
        assert!(kept.len() > 380 && kept.iter().any(|s| s.op == Op::Send), "{} kept", kept.len());
        assert!(state.warning().contains("2.4x slower ping-pong at 6 sizes in 1..1000 B"), "{}", state.warning());
        // Without two modes, no state.
        let calm: Vec<Sample> = v.iter().filter(|s| !(10.0..20.0).contains(&s.start_s)).copied().collect();
        assert_eq!(SlowState::locate(&calm.into_iter().filter(|s| s.duration_s < 0.35e-6).collect::<Vec<_>>()), None);
    }

    #[test]
    fn fast_mode_drops_only_the_slow_samples_of_bimodal_sizes() {
        let sample = |size_bytes, duration_s| Sample { op: Op::Pingpong, size_bytes, start_s: 0.0, duration_s };
        let mut v: Vec<Sample> = (0..20).map(|i| sample(1, if i < 12 { 1.0 + 0.01 * i as f64 } else { 2.5 + 0.01 * i as f64 })).collect();
        v.extend((0..20).map(|i| sample(100, 5.0 + 0.01 * i as f64)));
        let (kept, found) = fast_mode(&v);
        assert_eq!(kept.len(), 32);
        assert!(kept.iter().all(|s| s.size_bytes == 100 || s.duration_s < 2.0));
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].sizes.len(), found[0].of_sizes), (1, 2));
        let w = found[0].warning();
        assert!(w.contains("pingpong is bimodal at 1 of 2 sizes in 1..1 B") && !w.contains('\n'), "{w}");
    }
}

//! How much tracing perturbs a program's compute blocks, region by
//! region: the mean block time of each call-site region in traced runs
//! (`INTERPOSER_MODE=trace`) against the same region in runs that only sum
//! block times per region (`INTERPOSER_MODE=regions`, which costs a call a
//! table update instead of a record), matched by region key and rank.
//!
//! **Systematic.** A region's difference is systematic when it is larger
//! than the run-to-run spread and has the same sign on every rank:
//! with at least [`Rule::min_runs`] runs of each kind holding the region
//! on a rank, that rank's traced per-run means all lie above all its
//! untraced per-run means (or all below); every rank holding the region
//! in both kinds agrees in direction; and the region's ratio (total
//! traced over total untraced block time) differs from 1 by at least
//! [`Rule::min_effect`]; and no block of the region borders a polling
//! call ([`RunRegions::polls`]). With fewer runs than that nothing is systematic:
//! one run of each kind says nothing about the spread. With three runs of
//! each kind and two ranks, a region whose blocks do not change sides
//! only by chance one time in 200.
//!
//! A systematic region's replayed blocks can be scaled by `untraced ÷
//! traced` ([`Perturbation::corrections`]): a [`SpeedRatios`] table, the
//! same per-region scaling `simulator replay --speed-ratios` applies.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use simulator::speed::SpeedRatios;
pub use simulator::trace::run_regions::RunRegions;
use simulator::trace::ComputeTime;

mod report;

pub use report::format_table;

/// When a region's difference counts as systematic (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Runs of each kind a rank needs for its spread to count; default 2.
    pub min_runs: usize,
    /// Smallest `|ratio − 1|` corrected (dimensionless); default 0.02.
    pub min_effect: f64,
}

impl Default for Rule {
    fn default() -> Self {
        Rule { min_runs: 2, min_effect: 0.02 }
    }
}

/// One region's traced against untraced blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionPerturbation {
    /// Region key (`prev:next`).
    pub region: String,
    /// Ranks holding the region in runs of both kinds.
    pub ranks: u32,
    /// Blocks per traced run, summed over those ranks (median of runs).
    pub traced_blocks: u64,
    /// Blocks per untraced run, summed over those ranks (median of runs).
    pub untraced_blocks: u64,
    /// Mean traced block, seconds.
    pub traced_mean_s: f64,
    /// Mean untraced block, seconds.
    pub untraced_mean_s: f64,
    /// `traced_mean_s ÷ untraced_mean_s`, each rank's median of per-run
    /// means weighted by its untraced block count.
    pub ratio: f64,
    /// Untraced block time per run on those ranks, seconds: the region's
    /// weight.
    pub untraced_s: f64,
    /// What tracing adds to the region per run, seconds (negative: takes).
    pub delta_s: f64,
    /// Whether the difference is systematic ([`Rule`]).
    pub systematic: bool,
    /// Why it is not, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// A program's perturbation: every region matched, largest `|delta_s|` first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Perturbation {
    /// Traced runs compared.
    pub traced_runs: usize,
    /// Untraced (regions-mode) runs compared.
    pub untraced_runs: usize,
    /// Median of the regions' ratios weighted by `untraced_s` (1 without regions).
    pub weighted_median_ratio: f64,
    /// Total traced over total untraced block time of the matched regions.
    pub total_ratio: f64,
    /// Share of the untraced block time in regions the traced runs also have.
    pub matched_share: f64,
    /// Per region.
    pub regions: Vec<RegionPerturbation>,
}

/// Median of `v` (the lower middle value for an even count; 0 when empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n => v[(n - 1) / 2],
    }
}

/// The median of `(value, weight)` pairs: the smallest value whose
/// cumulative weight reaches half the total (1 when empty or weightless).
pub fn weighted_median(pairs: &[(f64, f64)]) -> f64 {
    let mut v: Vec<(f64, f64)> = pairs.iter().copied().filter(|(x, w)| x.is_finite() && *w > 0.0).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|p| p.1).sum();
    let mut acc = 0.0;
    for (x, w) in &v {
        acc += w;
        if acc >= total / 2.0 {
            return *x;
        }
    }
    1.0
}

/// One rank's per-run means and counts of a region, in each kind.
struct RankRuns {
    traced: Vec<(f64, u64)>,
    untraced: Vec<(f64, u64)>,
}

/// Compares `traced` runs with `untraced` ones of the same program,
/// blocks timed by `compute` (thread CPU or wall time, as the replay
/// takes them).
pub fn compare(traced: &[RunRegions], untraced: &[RunRegions], compute: ComputeTime, rule: &Rule) -> Perturbation {
    let cpu = compute == ComputeTime::Cpu;
    // region → rank → runs.
    let mut by: BTreeMap<&str, BTreeMap<usize, RankRuns>> = BTreeMap::new();
    let mut untraced_total = 0.0;
    for (kind, runs) in [(true, traced), (false, untraced)] {
        for run in runs {
            for (rank, map) in run.ranks.iter().enumerate() {
                for (key, s) in map.iter().filter(|(_, s)| s.count > 0) {
                    let r = by.entry(key).or_default().entry(rank).or_insert_with(|| RankRuns { traced: vec![], untraced: vec![] });
                    let point = (s.mean_s(cpu), s.count);
                    if kind {
                        r.traced.push(point);
                    } else {
                        r.untraced.push(point);
                        untraced_total += if cpu { s.cpu_s } else { s.wall_s } / runs.len() as f64;
                    }
                }
            }
        }
    }
    let poll_keys: BTreeSet<&str> = traced.iter().chain(untraced).flat_map(|r| r.polls.iter().map(String::as_str)).collect();
    let mut regions = Vec::new();
    for (key, ranks) in by {
        let both: Vec<&RankRuns> = ranks.values().filter(|r| !r.traced.is_empty() && !r.untraced.is_empty()).collect();
        if both.is_empty() {
            continue;
        }
        let (mut t_sum, mut u_sum, mut n_sum, mut tb, mut ub) = (0.0, 0.0, 0.0, 0, 0);
        // Direction of each rank's separation: Some(true) above, Some(false) below, None overlapping.
        let mut sides = Vec::new();
        let mut few_runs = false;
        for r in &both {
            let t = median(r.traced.iter().map(|p| p.0).collect());
            let u = median(r.untraced.iter().map(|p| p.0).collect());
            let n = median(r.untraced.iter().map(|p| p.1 as f64).collect());
            (t_sum, u_sum, n_sum) = (t_sum + t * n, u_sum + u * n, n_sum + n);
            tb += median(r.traced.iter().map(|p| p.1 as f64).collect()) as u64;
            ub += n as u64;
            few_runs |= r.traced.len() < rule.min_runs || r.untraced.len() < rule.min_runs;
            let (t_lo, t_hi) = r.traced.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
            let (u_lo, u_hi) = r.untraced.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
            sides.push(if t_lo > u_hi {
                Some(true)
            } else if t_hi < u_lo {
                Some(false)
            } else {
                None
            });
        }
        let ratio = if u_sum > 0.0 { t_sum / u_sum } else { f64::NAN };
        let why_not = if poll_keys.contains(key) {
            Some("next to a polling call (stored as runs of mean blocks)".into())
        } else if few_runs {
            Some(format!("fewer than {} runs of each kind", rule.min_runs))
        } else if sides.iter().any(Option::is_none) {
            Some("within the run-to-run spread on some rank".into())
        } else if sides.iter().any(|s| *s != sides[0]) {
            Some("ranks differ in direction".into())
        } else if !ratio.is_finite() || (ratio - 1.0).abs() < rule.min_effect {
            Some(format!("smaller than {:.0} %", rule.min_effect * 100.0))
        } else {
            None
        };
        let mean = |sum: f64| if n_sum > 0.0 { sum / n_sum } else { 0.0 };
        regions.push(RegionPerturbation {
            region: key.to_string(),
            ranks: both.len() as u32,
            traced_blocks: tb,
            untraced_blocks: ub,
            traced_mean_s: mean(t_sum),
            untraced_mean_s: mean(u_sum),
            ratio,
            untraced_s: u_sum,
            delta_s: t_sum - u_sum,
            systematic: why_not.is_none(),
            why_not,
        });
    }
    regions.sort_by(|a, b| b.delta_s.abs().total_cmp(&a.delta_s.abs()).then_with(|| a.region.cmp(&b.region)));
    let matched_u: f64 = regions.iter().map(|r| r.untraced_s).sum();
    let matched_t: f64 = regions.iter().map(|r| r.untraced_s + r.delta_s).sum();
    Perturbation {
        traced_runs: traced.len(),
        untraced_runs: untraced.len(),
        weighted_median_ratio: weighted_median(&regions.iter().map(|r| (r.ratio, r.untraced_s)).collect::<Vec<_>>()),
        total_ratio: if matched_u > 0.0 { matched_t / matched_u } else { 1.0 },
        matched_share: if untraced_total > 0.0 { (matched_u / untraced_total).min(1.0) } else { 0.0 },
        regions,
    }
}

impl Perturbation {
    /// The systematic regions' corrections, `untraced ÷ traced` per region
    /// key, as per-region speed ratios for the replay
    /// ([`simulator::replay::apply_speed_ratios`]).
    pub fn corrections(&self) -> SpeedRatios {
        let mut out = SpeedRatios::new();
        for r in self.regions.iter().filter(|r| r.systematic) {
            // A systematic ratio is finite and positive: insert cannot fail.
            let _ = out.insert(&r.region, 1.0 / r.ratio);
        }
        out
    }

    /// The systematic regions.
    pub fn systematic(&self) -> impl Iterator<Item = &RegionPerturbation> {
        self.regions.iter().filter(|r| r.systematic)
    }
}

#[cfg(test)]
mod tests;

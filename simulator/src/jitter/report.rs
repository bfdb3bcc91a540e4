//! Outputs of the jitter simulation: Monte-Carlo summaries with an
//! uncertainty band and sweep tables (the slowdown-versus-tasks plot of
//! jitSim Figs. 7–10 is drawn by the tools).

use std::io::{self, Write};

use serde::Serialize;

use super::engine::{splitmix, PhaseStat, RunResult};

/// Slowdown of one phase, percent (jitSim §3.4: consumed vs. compute).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PhaseSlowdown {
    /// (consumed − work) ÷ work, percent.
    pub slowdown_pct: f64,
    /// Compute-phase part: (longest compute part − work) ÷ work, percent.
    pub compute_pct: f64,
    /// Communication part (the collective and the wait for it), percent.
    pub comm_pct: f64,
}

/// Per-phase slowdowns of a run.
pub fn per_phase(r: &RunResult) -> Vec<PhaseSlowdown> {
    let w = r.work_cycles as f64;
    r.phases
        .iter()
        .map(|p: &PhaseStat| {
            let s = 100.0 * (p.consumed_cycles as f64 - w) / w;
            let c = 100.0 * (p.compute_max_cycles as f64 - w) / w;
            PhaseSlowdown { slowdown_pct: s, compute_pct: c, comm_pct: s - c }
        })
        .collect()
}

/// Distribution of a quantity over Monte-Carlo repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Band {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 2.5th percentile (lower end of the 95 % band).
    pub p2_5: f64,
    /// 97.5th percentile (upper end of the 95 % band).
    pub p97_5: f64,
}

impl Band {
    /// Summarizes `xs` (non-empty); percentiles interpolate linearly between order statistics.
    ///
    /// # Panics
    /// If `xs` is empty.
    pub fn of(xs: &[f64]) -> Band {
        // Our own: statrs's quantiles use the R-8 rule, these the linear R-7 rule (as numpy's default).
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let x = p * (v.len() - 1) as f64;
            let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
        };
        Band { mean: v.iter().sum::<f64>() / v.len() as f64, median: q(0.5), p5: q(0.05), p95: q(0.95), p2_5: q(0.025), p97_5: q(0.975) }
    }
}

/// Seed of repetition `rep` derived from the user's `seed`; repetition 0 uses `seed` itself.
pub fn rep_seed(seed: u64, rep: u32) -> u64 {
    if rep == 0 {
        seed
    } else {
        splitmix(seed, 0xA5A5_0000_0000 + rep as u64)
    }
}

/// One point of a sweep: a task count and mode over all repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Number of tasks.
    pub tasks: u64,
    /// `unsync`, `sync` or `cosched`.
    pub mode: String,
    /// Mean total slowdown over repetitions, percent.
    pub slowdown_pct: f64,
    /// Mean compute-phase part, percent.
    pub compute_slowdown_pct: f64,
    /// Mean communication part, percent.
    pub comm_slowdown_pct: f64,
    /// Communication part without any jitter (the collective's own cost), percent of the work.
    pub comm_noise_free_pct: f64,
    /// Total slowdown over repetitions.
    pub band: Band,
    /// Simulated task-phases per wall-clock second (all repetitions).
    pub task_phases_per_s: f64,
    /// Wall-clock time of all repetitions, seconds.
    pub elapsed_s: f64,
}

impl Point {
    /// Summarizes the repetitions `runs` (non-empty) of `tasks` tasks in `mode`.
    ///
    /// # Panics
    /// If `runs` is empty.
    pub fn of(tasks: u64, mode: &str, runs: &[RunResult], comm_noise_free_pct: f64) -> Point {
        let mean = |f: fn(&RunResult) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
        let totals: Vec<f64> = runs.iter().map(RunResult::slowdown_pct).collect();
        let elapsed_s: f64 = runs.iter().map(|r| r.elapsed_s).sum();
        let task_phases: f64 = runs.iter().map(|r| r.phases.len() as f64 * tasks as f64).sum();
        Point {
            tasks,
            mode: mode.into(),
            slowdown_pct: mean(RunResult::slowdown_pct),
            compute_slowdown_pct: mean(RunResult::compute_slowdown_pct),
            comm_slowdown_pct: mean(RunResult::comm_slowdown_pct),
            comm_noise_free_pct,
            band: Band::of(&totals),
            task_phases_per_s: task_phases / elapsed_s.max(1e-9),
            elapsed_s,
        }
    }
}

/// Writes `points` as an aligned text table.
///
/// # Errors
/// The I/O error.
pub fn write_table<W: Write>(mut w: W, points: &[Point]) -> io::Result<()> {
    writeln!(
        w,
        "{:>9} {:>8} {:>11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>12}",
        "tasks", "mode", "slowdown%", "compute%", "comm%", "p5%", "median%", "p95%", "task-ph/s"
    )?;
    for p in points {
        writeln!(
            w,
            "{:>9} {:>8} {:>11.3} {:>10.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>12.3e}",
            p.tasks,
            p.mode,
            p.slowdown_pct,
            p.compute_slowdown_pct,
            p.comm_slowdown_pct,
            p.band.p5,
            p.band.median,
            p.band.p95,
            p.task_phases_per_s
        )?;
    }
    Ok(())
}

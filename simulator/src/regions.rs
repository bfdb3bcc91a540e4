//! Per-region compute-block statistics: mpiP's call-site report, for the
//! compute blocks between MPI calls.
//!
//! A region is the pair (previous call site, next call site), named
//! `file:line:file:line` when the binaries carry debug information (the
//! key SimGrid uses for per-region speed ratios, Heinrich et al. 2017,
//! Fig. 7), else by stable `module+0xoffset` sites.

use std::collections::HashMap;

use serde::Serialize;

use crate::trace::symbols::RegionNames;
use crate::trace::{RankTrace, TraceError};

/// Statistics of one region over all ranks. Times in seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionStats {
    /// `prev:next` region key.
    pub region: String,
    /// Number of blocks.
    pub count: u64,
    /// Number of ranks that ran the region.
    pub ranks: u32,
    /// Total thread CPU time, seconds.
    pub cpu_total_s: f64,
    /// Mean CPU time per block, seconds.
    pub cpu_mean_s: f64,
    /// Standard deviation of the CPU time per block, seconds.
    pub cpu_stdev_s: f64,
    /// Total wall time, seconds.
    pub wall_total_s: f64,
    /// Mean wall time per block, seconds.
    pub wall_mean_s: f64,
    /// Standard deviation of the wall time per block, seconds.
    pub wall_stdev_s: f64,
}

#[derive(Default)]
struct Acc {
    n: u64,
    ranks: u32,
    last_rank: Option<u32>,
    cpu: (f64, f64),
    wall: (f64, f64),
}

impl Acc {
    fn add(&mut self, rank: u32, cpu: f64, wall: f64) {
        self.n += 1;
        if self.last_rank != Some(rank) {
            self.ranks += 1;
            self.last_rank = Some(rank);
        }
        self.cpu = (self.cpu.0 + cpu, self.cpu.1 + cpu * cpu);
        self.wall = (self.wall.0 + wall, self.wall.1 + wall * wall);
    }
}

fn mean_stdev(n: u64, (sum, sq): (f64, f64)) -> (f64, f64) {
    let mean = sum / n as f64;
    (mean, (sq / n as f64 - mean * mean).max(0.0).sqrt())
}

/// Region statistics of a whole trace, largest total CPU time first.
///
/// # Errors
/// The first [`TraceError`] met while reading a rank file.
pub fn region_report(ranks: &[RankTrace]) -> Result<Vec<RegionStats>, TraceError> {
    let mut acc: HashMap<std::rc::Rc<str>, Acc> = HashMap::new();
    for t in ranks {
        let mut names = RegionNames::new(); // addresses differ between processes
        let mut prev = 0u64;
        for rec in t.records()? {
            let rec = rec?;
            let (key, _) = names.region(t, prev, rec.caller);
            prev = rec.caller;
            acc.entry(key).or_default().add(t.header.rank, rec.compute_cpu_ns as f64 * 1e-9, rec.compute_wall_ns as f64 * 1e-9);
        }
    }
    let mut out: Vec<RegionStats> = acc
        .into_iter()
        .map(|(region, a)| {
            let (cpu_mean_s, cpu_stdev_s) = mean_stdev(a.n, a.cpu);
            let (wall_mean_s, wall_stdev_s) = mean_stdev(a.n, a.wall);
            RegionStats {
                region: region.to_string(),
                count: a.n,
                ranks: a.ranks,
                cpu_total_s: a.cpu.0,
                cpu_mean_s,
                cpu_stdev_s,
                wall_total_s: a.wall.0,
                wall_mean_s,
                wall_stdev_s,
            }
        })
        .collect();
    out.sort_by(|a, b| b.cpu_total_s.total_cmp(&a.cpu_total_s).then_with(|| a.region.cmp(&b.region)));
    Ok(out)
}

/// The report as a text table (times in milliseconds / microseconds).
pub fn format_table(stats: &[RegionStats]) -> String {
    let mut s = format!(
        "{:<56} {:>9} {:>5} {:>12} {:>11} {:>11} {:>12}\n",
        "region (prev:next)", "count", "ranks", "cpu_total_ms", "cpu_mean_us", "cpu_sd_us", "wall_total_ms"
    );
    for r in stats {
        s += &format!(
            "{:<56} {:>9} {:>5} {:>12.3} {:>11.3} {:>11.3} {:>12.3}\n",
            r.region,
            r.count,
            r.ranks,
            r.cpu_total_s * 1e3,
            r.cpu_mean_s * 1e6,
            r.cpu_stdev_s * 1e6,
            r.wall_total_s * 1e3
        );
    }
    s
}

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
    /// CPU cycles of the blocks, when the trace has hardware counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles: Option<CountStats>,
    /// Retired instructions of the blocks, when the trace has hardware counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<CountStats>,
    /// Bytes read or written by the MPI-IO calls that end the region's
    /// blocks (its `next` call site), when it is one.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub io_bytes: u64,
    /// Time inside those MPI-IO calls (recorded durations), seconds.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub io_s: f64,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

/// Total, mean and standard deviation of a per-block count (cycles or
/// instructions) over the blocks that carry it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CountStats {
    /// Sum over the blocks.
    pub total: f64,
    /// Mean per block.
    pub mean: f64,
    /// Standard deviation per block.
    pub stdev: f64,
}

#[derive(Default)]
struct Acc {
    n: u64,
    ranks: u32,
    last_rank: Option<u32>,
    cpu: (f64, f64),
    wall: (f64, f64),
    /// Blocks with counters, and the sums and squares of their cycles and instructions.
    hw_n: u64,
    cycles: (f64, f64),
    instructions: (f64, f64),
    /// Bytes and seconds of the MPI-IO calls ending the blocks.
    io: (u64, f64),
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

    fn add_counters(&mut self, c: &crate::trace::BlockCounters) {
        let (y, i) = (c.cycles as f64, c.instructions as f64);
        self.hw_n += 1;
        self.cycles = (self.cycles.0 + y, self.cycles.1 + y * y);
        self.instructions = (self.instructions.0 + i, self.instructions.1 + i * i);
    }

    fn counts(&self, sums: (f64, f64)) -> Option<CountStats> {
        (self.hw_n > 0).then(|| {
            let (mean, stdev) = mean_stdev(self.hw_n, sums);
            CountStats { total: sums.0, mean, stdev }
        })
    }
}

// Our own: only running sums are kept, and statrs computes from the samples.
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
            let a = acc.entry(key).or_default();
            a.add(t.header.rank, rec.compute_cpu_ns as f64 * 1e-9, rec.compute_wall_ns as f64 * 1e-9);
            if let Some(c) = &rec.counters {
                a.add_counters(c);
            }
            if let crate::trace::Params::Io { bytes, .. } = rec.params {
                a.io = (a.io.0 + bytes, a.io.1 + rec.t_end_ns.saturating_sub(rec.t_start_ns) as f64 * 1e-9);
            }
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
                cycles: a.counts(a.cycles),
                instructions: a.counts(a.instructions),
                io_bytes: a.io.0,
                io_s: a.io.1,
            }
        })
        .collect();
    out.sort_by(|a, b| b.cpu_total_s.total_cmp(&a.cpu_total_s).then_with(|| a.region.cmp(&b.region)));
    Ok(out)
}

/// The report as a text table (times in milliseconds / microseconds);
/// with hardware counters, also the mean and stdev of cycles and
/// instructions per block, and instructions per cycle; with MPI-IO, the
/// bytes and time of the I/O calls ending each region.
pub fn format_table(stats: &[RegionStats]) -> String {
    let hw = stats.iter().any(|r| r.cycles.is_some());
    let io = stats.iter().any(|r| r.io_bytes > 0 || r.io_s > 0.0);
    let mut s = format!(
        "{:<56} {:>9} {:>5} {:>12} {:>11} {:>11} {:>12}",
        "region (prev:next)", "count", "ranks", "cpu_total_ms", "cpu_mean_us", "cpu_sd_us", "wall_total_ms"
    );
    if hw {
        s += &format!(" {:>12} {:>12} {:>12} {:>12} {:>5}", "cycles_mean", "cycles_sd", "instr_mean", "instr_sd", "IPC");
    }
    if io {
        s += &format!(" {:>14} {:>10}", "io_bytes", "io_ms");
    }
    s += "\n";
    for r in stats {
        s += &format!(
            "{:<56} {:>9} {:>5} {:>12.3} {:>11.3} {:>11.3} {:>12.3}",
            r.region,
            r.count,
            r.ranks,
            r.cpu_total_s * 1e3,
            r.cpu_mean_s * 1e6,
            r.cpu_stdev_s * 1e6,
            r.wall_total_s * 1e3
        );
        match (r.cycles, r.instructions) {
            (Some(c), Some(i)) => {
                let ipc = if c.total > 0.0 { i.total / c.total } else { 0.0 };
                s += &format!(" {:>12.0} {:>12.0} {:>12.0} {:>12.0} {:>5.2}", c.mean, c.stdev, i.mean, i.stdev, ipc);
            }
            _ if hw => s += &format!(" {:>12} {:>12} {:>12} {:>12} {:>5}", "-", "-", "-", "-", "-"),
            _ => {}
        }
        if io {
            s += &format!(" {:>14} {:>10.3}", r.io_bytes, r.io_s * 1e3);
        }
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::BlockCounters;

    #[test]
    fn counters_give_total_mean_stdev_and_ipc() {
        let mut a = Acc::default();
        for (cycles, instructions) in [(100, 200), (300, 400)] {
            a.add(0, 1e-6, 1e-6);
            a.add_counters(&BlockCounters { cycles, instructions });
        }
        a.add(1, 1e-6, 1e-6); // a block without counters: not in their statistics
        let c = a.counts(a.cycles).unwrap();
        assert_eq!((c.total, c.mean, c.stdev), (400.0, 200.0, 100.0));
        let i = a.counts(a.instructions).unwrap();
        assert_eq!((i.total, i.mean, i.stdev), (600.0, 300.0, 100.0));
        assert!(Acc::default().counts((0.0, 0.0)).is_none());
        let r = RegionStats {
            region: "a.c:1:a.c:2".into(),
            count: 3,
            ranks: 2,
            cpu_total_s: 3e-6,
            cpu_mean_s: 1e-6,
            cpu_stdev_s: 0.0,
            wall_total_s: 3e-6,
            wall_mean_s: 1e-6,
            wall_stdev_s: 0.0,
            cycles: Some(c),
            instructions: Some(i),
            io_bytes: 0,
            io_s: 0.0,
        };
        let table = format_table(std::slice::from_ref(&r));
        assert!(table.lines().next().unwrap().ends_with("IPC"), "{table}");
        assert!(table.lines().nth(1).unwrap().ends_with(" 1.50"), "{table}");
        let io = RegionStats { io_bytes: 4096, io_s: 2e-3, ..r };
        let table = format_table(&[io]);
        assert!(table.lines().next().unwrap().ends_with("io_ms"), "{table}");
        assert!(table.lines().nth(1).unwrap().ends_with(" 4096      2.000"), "{table}");
    }
}

//! Per-region speed ratios from two interposer traces of the same program
//! and workload: a reference run and a target (or emulated) run.
//!
//! Compute blocks are aligned by call-site region, the key
//! `"<previous call site>:<next call site>"` given by the simulator's
//! [`RegionNames`] (`file:line` per site when the binary has debug
//! information, else `module+0xoffset`; SimGrid's `file:line:file:line`),
//! whose hash is the region id replay uses. For each region the ratio is
//! the total block time in the target run ÷ the total in the reference
//! run, both summed over all ranks, as SimGrid's
//! `smpi/comp-adjustment-file` expects (Heinrich et al., IEEE Cluster
//! 2017, §5). Regions found in one run only, or with no reference time,
//! are reported, never silently dropped.

use std::collections::BTreeMap;
use std::path::Path;

use simulator::speed::SpeedRatios;
use simulator::trace::symbols::RegionNames;
use simulator::trace::ComputeTime;
use simulator::trace::{open_dir, TraceMeta};

use crate::error::{Error, ErrorKind};

/// Compute time of one region in one run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RegionTime {
    /// Compute blocks, summed over ranks.
    pub blocks: u64,
    /// Their total time, seconds, summed over ranks.
    pub seconds: f64,
}

/// Compute time per region key of a whole trace directory.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionProfile {
    /// The trace's metadata.
    pub meta: TraceMeta,
    /// Per region key, in key order.
    pub regions: BTreeMap<String, RegionTime>,
}

/// Calls `block(rank, region_key, seconds)` for every compute block of the
/// trace in `dir`, rank by rank in trace order, timed by `compute`; returns
/// the trace's metadata.
///
/// # Errors
/// [`ErrorKind::Trace`] with the trace reader's message (it names the file)
/// when `dir` is not a readable, complete trace.
pub fn for_each_block(dir: &Path, compute: ComputeTime, mut block: impl FnMut(u32, &str, f64)) -> Result<TraceMeta, Error> {
    let trace_err = |e: simulator::trace::TraceError| Error::new(ErrorKind::Trace, e.to_string());
    let (meta, ranks) = open_dir(dir).map_err(trace_err)?;
    for (r, rank) in ranks.iter().enumerate() {
        // The simulator's own naming, so keys match replay's region ids.
        let mut names = RegionNames::new();
        let mut prev = 0u64; // the trace start
        for rec in rank.records().map_err(trace_err)? {
            let rec = rec.map_err(trace_err)?;
            let (key, _) = names.region(rank, prev, rec.caller);
            let ns = match compute {
                ComputeTime::Cpu => rec.compute_cpu_ns,
                ComputeTime::Wall => rec.compute_wall_ns,
            };
            block(r as u32, &key, ns as f64 * 1e-9);
            prev = rec.caller;
        }
    }
    Ok(meta)
}

/// Sums compute blocks per region over every rank of the trace in `dir`,
/// timing them by `compute` (thread CPU time or wall time).
///
/// # Errors
/// As [`for_each_block`].
pub fn region_profile(dir: &Path, compute: ComputeTime) -> Result<RegionProfile, Error> {
    let mut regions: BTreeMap<String, RegionTime> = BTreeMap::new();
    let meta = for_each_block(dir, compute, |_, key, seconds| {
        let r = regions.entry(key.to_string()).or_default();
        r.blocks += 1;
        r.seconds += seconds;
    })?;
    Ok(RegionProfile { meta, regions })
}

/// One region present in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionRatio {
    /// Region key.
    pub key: String,
    /// Reference run.
    pub reference: RegionTime,
    /// Target run.
    pub target: RegionTime,
    /// `target.seconds ÷ reference.seconds`, dimensionless.
    pub ratio: f64,
}

/// Result of [`speed_ratios`].
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedReport {
    /// The ratio file: regions of both runs with reference time > 0.
    pub ratios: SpeedRatios,
    /// Details of those regions, by decreasing reference time.
    pub matched: Vec<RegionRatio>,
    /// Regions of both runs without a ratio (no reference time).
    pub no_reference_time: Vec<String>,
    /// Regions only in the reference run.
    pub only_reference: Vec<(String, RegionTime)>,
    /// Regions only in the target run.
    pub only_target: Vec<(String, RegionTime)>,
}

impl SpeedReport {
    /// A human-readable table: ratios, then every unmatched region.
    pub fn summary(&self) -> String {
        let mut out = format!("{:>8} {:>12} {:>12} {:>8}  region\n", "ratio", "ref (s)", "target (s)", "blocks");
        for m in &self.matched {
            out.push_str(&format!(
                "{:>8.3} {:>12.6} {:>12.6} {:>8}  {}\n",
                m.ratio, m.reference.seconds, m.target.seconds, m.reference.blocks, m.key
            ));
        }
        for k in &self.no_reference_time {
            out.push_str(&format!("no ratio (0 s in the reference run): {k}\n"));
        }
        for (k, t) in &self.only_reference {
            out.push_str(&format!("only in the reference run ({} blocks, {:.6} s): {k}\n", t.blocks, t.seconds));
        }
        for (k, t) in &self.only_target {
            out.push_str(&format!("only in the target run ({} blocks, {:.6} s): {k}\n", t.blocks, t.seconds));
        }
        out
    }
}

/// Base name of a traced program, from its command line.
fn program(meta: &TraceMeta) -> String {
    meta.command.first().map_or_else(String::new, |c| Path::new(c).file_name().map_or(c.clone(), |n| n.to_string_lossy().into_owned()))
}

/// Per-region ratios `target ÷ reference` (see the module doc).
///
/// `reference`, `target`: the two profiles; `names`: the two trace
/// directories, for messages.
///
/// # Errors
/// [`ErrorKind::Mismatch`] when the two runs traced different programs
/// (base name of the command), different rank counts, or share no region.
pub fn speed_ratios(reference: &RegionProfile, target: &RegionProfile, names: (&Path, &Path)) -> Result<SpeedReport, Error> {
    let (pr, pt) = (program(&reference.meta), program(&target.meta));
    if pr != pt {
        return Err(Error::new(
            ErrorKind::Mismatch,
            format!(
                "{} traced `{pr}` but {} traced `{pt}`: speed ratios need two runs of the same program",
                names.0.display(),
                names.1.display()
            ),
        ));
    }
    if reference.meta.ranks != target.meta.ranks {
        return Err(Error::new(
            ErrorKind::Mismatch,
            format!(
                "{} has {} ranks but {} has {}: speed ratios need the same workload",
                names.0.display(),
                reference.meta.ranks,
                names.1.display(),
                target.meta.ranks
            ),
        ));
    }
    let mut report = SpeedReport {
        ratios: SpeedRatios::new(),
        matched: Vec::new(),
        no_reference_time: Vec::new(),
        only_reference: Vec::new(),
        only_target: Vec::new(),
    };
    for (key, r) in &reference.regions {
        match target.regions.get(key) {
            Some(t) if r.seconds > 0.0 => {
                report.matched.push(RegionRatio { key: key.clone(), reference: *r, target: *t, ratio: t.seconds / r.seconds });
            }
            Some(_) => report.no_reference_time.push(key.clone()),
            None => report.only_reference.push((key.clone(), *r)),
        }
    }
    report.only_target = target.regions.iter().filter(|(k, _)| !reference.regions.contains_key(*k)).map(|(k, t)| (k.clone(), *t)).collect();
    if report.matched.is_empty() && report.no_reference_time.is_empty() {
        return Err(Error::new(
            ErrorKind::Mismatch,
            format!("{} and {} share no call-site region: not the same program build", names.0.display(), names.1.display()),
        ));
    }
    report.matched.sort_by(|a, b| b.reference.seconds.total_cmp(&a.reference.seconds).then(a.key.cmp(&b.key)));
    for m in &report.matched {
        // A positive ratio always: a zero target time is clamped to 1 ns.
        let ratio = m.ratio.max(1e-9 / m.reference.seconds);
        report.ratios.insert(&m.key, ratio).map_err(|e| Error::new(ErrorKind::Mismatch, e.0))?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(cmd: &str, regions: &[(&str, u64, f64)]) -> RegionProfile {
        RegionProfile {
            // From JSON, so that fields added later with serde defaults keep this compiling.
            meta: serde_json::from_value(serde_json::json!({
                "format_version": 1, "ranks": 2, "mpi_library": "", "timing_source": "clock_gettime",
                "command": [cmd, "64"], "mode": "trace"
            }))
            .unwrap(),
            regions: regions.iter().map(|&(k, blocks, seconds)| (k.to_string(), RegionTime { blocks, seconds })).collect(),
        }
    }

    const NAMES: (&str, &str) = ("ref", "target");

    fn names() -> (&'static Path, &'static Path) {
        (Path::new(NAMES.0), Path::new(NAMES.1))
    }

    #[test]
    fn ratios_sum_over_ranks_and_unmatched_regions_are_reported() {
        let r = profile("/a/app", &[("a:b", 20, 2.0), ("b:a", 20, 1.0), ("init+0x0:a", 2, 0.0), ("x:y", 1, 0.5)]);
        let t = profile("/b/app", &[("a:b", 20, 4.1), ("b:a", 20, 1.0), ("init+0x0:a", 2, 0.0), ("z:w", 3, 0.2)]);
        let rep = speed_ratios(&r, &t, names()).unwrap();
        assert_eq!(rep.ratios.entries(), &[("a:b".to_string(), 2.05), ("b:a".to_string(), 1.0)]);
        assert_eq!(rep.no_reference_time, vec!["init+0x0:a".to_string()]);
        assert_eq!(rep.only_reference, vec![("x:y".to_string(), RegionTime { blocks: 1, seconds: 0.5 })]);
        assert_eq!(rep.only_target, vec![("z:w".to_string(), RegionTime { blocks: 3, seconds: 0.2 })]);
        let s = rep.summary();
        assert!(s.contains("only in the reference run (1 blocks, 0.500000 s): x:y") && s.contains("only in the target run"), "{s}");
    }

    #[test]
    fn a_pair_from_different_programs_is_a_one_line_error() {
        let e = speed_ratios(&profile("/a/jacobi2d", &[("a:b", 1, 1.0)]), &profile("/a/ring", &[("a:b", 1, 1.0)]), names()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Mismatch);
        assert_eq!(e.to_string(), "ref traced `jacobi2d` but target traced `ring`: speed ratios need two runs of the same program");
        let e = speed_ratios(&profile("app", &[("a:b", 1, 1.0)]), &profile("app", &[("c:d", 1, 1.0)]), names()).unwrap_err();
        assert!(e.to_string().contains("share no call-site region") && !e.to_string().contains('\n'), "{e}");
    }
}

//! Per-region compute-block sums of one rank, as the interposer's
//! `INTERPOSER_MODE=regions` writes them at `MPI_Finalize`:
//! `<INTERPOSER_OUT>/rank-<r>.regions.json` (see `docs/trace-format.md`).
//!
//! A region is the pair of return addresses of the MPI calls around a
//! block, as in a trace (0 for `MPI_Init`); the file carries the process's
//! module table, so the keys come out exactly as a trace's
//! ([`region_key_in`]): `file:line:file:line` with debug information, else
//! `module+0xoffset:module+0xoffset`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::symbols::{region_key_in, Symbolizer};
use super::{Module, TimingSource};

/// Format version written in [`RegionTimes::format_version`].
pub const REGION_TIMES_VERSION: u32 = 1;

/// File name of rank `r`'s region sums inside an `INTERPOSER_OUT` directory.
pub fn region_times_file_name(rank: u32) -> String {
    format!("rank-{rank}.regions.json")
}

/// Sums over the compute blocks of one region of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct BlockSums {
    /// Number of blocks.
    pub count: u64,
    /// Total thread CPU time, seconds.
    pub cpu_s: f64,
    /// Sum of the squared CPU times, s².
    pub cpu_sq_s2: f64,
    /// Shortest CPU time of a block, seconds (0 when `count` is 0).
    pub cpu_min_s: f64,
    /// Longest CPU time of a block, seconds.
    pub cpu_max_s: f64,
    /// Total wall time, seconds.
    pub wall_s: f64,
    /// Sum of the squared wall times, s².
    pub wall_sq_s2: f64,
}

impl BlockSums {
    /// Adds one block of `cpu_s` thread CPU and `wall_s` wall seconds.
    #[inline]
    pub fn add(&mut self, cpu_s: f64, wall_s: f64) {
        self.cpu_min_s = if self.count == 0 { cpu_s } else { self.cpu_min_s.min(cpu_s) };
        self.cpu_max_s = self.cpu_max_s.max(cpu_s);
        self.count += 1;
        self.cpu_s += cpu_s;
        self.cpu_sq_s2 += cpu_s * cpu_s;
        self.wall_s += wall_s;
        self.wall_sq_s2 += wall_s * wall_s;
    }

    /// Adds every block of `other`.
    pub fn merge(&mut self, other: &BlockSums) {
        if other.count == 0 {
            return;
        }
        self.cpu_min_s = if self.count == 0 { other.cpu_min_s } else { self.cpu_min_s.min(other.cpu_min_s) };
        self.cpu_max_s = self.cpu_max_s.max(other.cpu_max_s);
        self.count += other.count;
        self.cpu_s += other.cpu_s;
        self.cpu_sq_s2 += other.cpu_sq_s2;
        self.wall_s += other.wall_s;
        self.wall_sq_s2 += other.wall_sq_s2;
    }

    /// Mean time per block, seconds: CPU time when `cpu`, else wall time
    /// (0 without blocks).
    pub fn mean_s(&self, cpu: bool) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        (if cpu { self.cpu_s } else { self.wall_s }) / self.count as f64
    }

    /// Standard deviation of the time per block, seconds (CPU or wall as
    /// in [`BlockSums::mean_s`]).
    pub fn stdev_s(&self, cpu: bool) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let mean = self.mean_s(cpu);
        let sq = if cpu { self.cpu_sq_s2 } else { self.wall_sq_s2 };
        (sq / self.count as f64 - mean * mean).max(0.0).sqrt()
    }
}

/// One region's sums, by the return addresses of its two calls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RegionBlocks {
    /// Return address of the call before the blocks (0: `MPI_Init`).
    pub prev: u64,
    /// Return address of the call after the blocks.
    pub next: u64,
    /// The blocks' sums.
    #[serde(flatten)]
    pub sums: BlockSums,
}

/// `rank-<r>.regions.json`: one rank's per-region block sums.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionTimes {
    /// [`REGION_TIMES_VERSION`].
    pub format_version: u32,
    /// This rank.
    pub rank: u32,
    /// Ranks of the world.
    pub ranks: u32,
    /// Host name.
    pub host: String,
    /// How the blocks' CPU time was measured.
    pub timing_source: TimingSource,
    /// Seconds of `MPI_Init` to `MPI_Finalize` on this rank.
    pub wall_s: f64,
    /// The process's executable mappings at `MPI_Finalize`.
    pub modules: Vec<Module>,
    /// Per region, in no particular order.
    pub regions: Vec<RegionBlocks>,
}

/// Error reading region sums: one line naming the file.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionTimesError {
    /// The file or directory at fault.
    pub path: PathBuf,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for RegionTimesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.what)
    }
}

impl std::error::Error for RegionTimesError {}

impl RegionTimes {
    /// Reads one rank's file.
    ///
    /// # Errors
    /// [`RegionTimesError`] naming `path` when it cannot be read, is not
    /// this format, or has another version.
    pub fn load(path: &Path) -> Result<RegionTimes, RegionTimesError> {
        let bad = |what: String| RegionTimesError { path: path.to_path_buf(), what };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let t: RegionTimes = serde_json::from_str(&text).map_err(|e| bad(format!("not a regions file: {e}")))?;
        if t.format_version != REGION_TIMES_VERSION {
            return Err(bad(format!("format version {}, expected {REGION_TIMES_VERSION}", t.format_version)));
        }
        Ok(t)
    }

    /// Every rank's file of an `INTERPOSER_MODE=regions` output directory,
    /// in rank order.
    ///
    /// # Errors
    /// [`RegionTimesError`] naming the directory when it holds no rank 0
    /// file or misses a rank, or naming a file that is unreadable or
    /// disagrees on the rank count.
    pub fn load_dir(dir: &Path) -> Result<Vec<RegionTimes>, RegionTimesError> {
        let first = dir.join(region_times_file_name(0));
        if !first.is_file() {
            let what = format!("no {} (not an INTERPOSER_MODE=regions directory)", region_times_file_name(0));
            return Err(RegionTimesError { path: dir.to_path_buf(), what });
        }
        let r0 = RegionTimes::load(&first)?;
        let mut out = vec![r0];
        for r in 1..out[0].ranks {
            let path = dir.join(region_times_file_name(r));
            let t = RegionTimes::load(&path)?;
            if t.rank != r || t.ranks != out[0].ranks {
                let what = format!("says rank {} of {}, expected rank {r} of {}", t.rank, t.ranks, out[0].ranks);
                return Err(RegionTimesError { path, what });
            }
            out.push(t);
        }
        Ok(out)
    }

    /// The sums by region key (as a trace names the region, see the module
    /// docs); address pairs that name the same key are added together.
    pub fn by_key(&self, sym: &mut Symbolizer) -> BTreeMap<String, BlockSums> {
        let mut out: BTreeMap<String, BlockSums> = BTreeMap::new();
        for r in &self.regions {
            out.entry(region_key_in(sym, &self.modules, r.prev, r.next)).or_default().merge(&r.sums);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_give_mean_stdev_min_and_max() {
        let mut s = BlockSums::default();
        for (cpu, wall) in [(1.0, 2.0), (3.0, 4.0)] {
            s.add(cpu, wall);
        }
        assert_eq!((s.count, s.cpu_min_s, s.cpu_max_s), (2, 1.0, 3.0));
        assert_eq!((s.mean_s(true), s.stdev_s(true), s.mean_s(false), s.stdev_s(false)), (2.0, 1.0, 3.0, 1.0));
        let mut t = BlockSums::default();
        t.merge(&s);
        t.merge(&BlockSums::default());
        let mut u = BlockSums::default();
        u.add(0.5, 0.5);
        t.merge(&u);
        assert_eq!((t.count, t.cpu_min_s, t.cpu_max_s, t.cpu_s), (3, 0.5, 3.0, 4.5));
        assert_eq!(BlockSums::default().mean_s(true), 0.0);
    }

    #[test]
    fn a_directory_round_trips_and_keys_match_a_trace_s() {
        let dir = tempfile::tempdir().unwrap();
        let module = Module { path: "/nonexistent/app".into(), start: 0x1000, end: 0x2000, file_offset: 0 };
        for rank in 0..2 {
            let mut sums = BlockSums::default();
            sums.add(1e-3 * (rank + 1) as f64, 2e-3);
            let t = RegionTimes {
                format_version: REGION_TIMES_VERSION,
                rank,
                ranks: 2,
                host: "h".into(),
                timing_source: TimingSource::ClockGettime,
                wall_s: 1.0,
                modules: vec![module.clone()],
                regions: vec![RegionBlocks { prev: 0, next: 0x1010, sums }, RegionBlocks { prev: 0x1010, next: 0x1020, sums }],
            };
            std::fs::write(dir.path().join(region_times_file_name(rank)), serde_json::to_vec(&t).unwrap()).unwrap();
        }
        let all = RegionTimes::load_dir(dir.path()).unwrap();
        assert_eq!(all.len(), 2);
        let keys = all[1].by_key(&mut Symbolizer::new());
        let names: Vec<&str> = keys.keys().map(String::as_str).collect();
        assert_eq!(names, ["app+0x10:app+0x20", "init:app+0x10"]);
        assert_eq!(keys["init:app+0x10"].cpu_s, 2e-3);
        std::fs::remove_file(dir.path().join(region_times_file_name(1))).unwrap();
        let e = RegionTimes::load_dir(dir.path()).unwrap_err().to_string();
        assert!(e.contains("rank-1.regions.json") && !e.contains('\n'), "{e}");
        let e = RegionTimes::load_dir(Path::new("/nonexistent")).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent: no rank-0.regions.json"), "{e}");
    }
}

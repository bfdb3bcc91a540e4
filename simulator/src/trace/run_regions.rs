//! One run's compute-block sums per rank and call-site region, from a
//! trace directory or from an `INTERPOSER_MODE=regions` directory, keyed
//! alike: what comparing traced and untraced runs region by region needs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::region_times::{BlockSums, RegionTimes, RegionTimesError};
use super::symbols::{RegionNames, Symbolizer};
use super::{open_dir, Op, TraceError};

/// One run's block sums: per rank (index), per region key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRegions {
    /// Per rank, the sums of each region's blocks.
    pub ranks: Vec<BTreeMap<String, BlockSums>>,
    /// Regions before or after a polling call (`MPI_Iprobe`, `MPI_Improbe`,
    /// `MPI_Test*`), as far as a trace tells: a trace stores a run of
    /// failed polls as one call with the run's mean block, and the replay
    /// of several runs merges a polling loop's blocks into the block
    /// before it, so these regions' traced blocks are not comparable.
    pub polls: BTreeSet<String>,
}

/// Whether `op` polls (its failures are stored as runs, see [`RunRegions::polls`]).
fn polls(op: Op) -> bool {
    matches!(op, Op::Iprobe | Op::Improbe | Op::Test | Op::Testall | Op::Testany | Op::Testsome)
}

impl RunRegions {
    /// The blocks of the trace directory `dir` (every record stream of
    /// every rank, from the call after `MPI_Init`), keyed as the replay
    /// keys them.
    ///
    /// # Errors
    /// The trace's error, naming the file.
    pub fn from_trace(dir: &Path) -> Result<RunRegions, TraceError> {
        let (_, traces) = open_dir(dir)?;
        let mut ranks = Vec::with_capacity(traces.len());
        let mut poll_keys = BTreeSet::new();
        for t in &traces {
            let mut names = RegionNames::new();
            let mut map: BTreeMap<String, BlockSums> = BTreeMap::new();
            for stream in t.streams() {
                let (mut prev, mut after_poll) = (0, false);
                for rec in t.records_of(stream)? {
                    let rec = rec?;
                    // `MPI_Init`'s record starts the trace: no block before it.
                    if matches!(rec.op, Op::Init | Op::InitThread) && prev == 0 {
                        continue;
                    }
                    let (key, _) = names.region(t, prev, rec.caller);
                    if after_poll || polls(rec.op) {
                        poll_keys.insert(key.to_string());
                    }
                    (prev, after_poll) = (rec.caller, polls(rec.op));
                    map.entry(key.to_string()).or_default().add(rec.compute_cpu_ns as f64 * 1e-9, rec.compute_wall_ns as f64 * 1e-9);
                }
            }
            ranks.push(map);
        }
        Ok(RunRegions { ranks, polls: poll_keys })
    }

    /// The sums of an `INTERPOSER_MODE=regions` directory.
    ///
    /// # Errors
    /// [`RegionTimesError`] naming the file or directory at fault.
    pub fn from_regions(dir: &Path) -> Result<RunRegions, RegionTimesError> {
        let mut sym = Symbolizer::new();
        let ranks = RegionTimes::load_dir(dir)?.iter().map(|t| t.by_key(&mut sym)).collect();
        Ok(RunRegions { ranks, polls: BTreeSet::new() })
    }
}

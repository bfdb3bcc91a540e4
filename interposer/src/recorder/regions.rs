//! Regions mode ([`Mode::Regions`](crate::config::Mode::Regions)): the
//! recorder times every compute block exactly as in trace mode (same
//! calls, same call sites, same clocks, same overhead subtraction) but,
//! instead of encoding a record, adds the block to its region's sums in a
//! small per-thread table. Nothing is written until `MPI_Finalize`, when
//! the rank writes `rank-<r>.regions.json`
//! ([`simulator::trace::region_times`]) with its module table.
//!
//! Threads other than the `MPI_Init` one add their sums to the rank's
//! when they end; a thread still running at `MPI_Finalize` is not counted.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use simulator::trace::region_times::{region_times_file_name, BlockSums, RegionBlocks, RegionTimes, REGION_TIMES_VERSION};
use simulator::trace::TimingSource;

/// Regions mode is on in this process (set at `MPI_Init`).
static ON: AtomicBool = AtomicBool::new(false);

/// Where and how the rank's file is written (set at `MPI_Init`).
static SETUP: OnceLock<Setup> = OnceLock::new();

/// Sums of the threads that ended before `MPI_Finalize`.
static ENDED_THREADS: Mutex<Option<RegionSums>> = Mutex::new(None);

struct Setup {
    out: PathBuf,
    ranks: u32,
    host: String,
    timing_source: TimingSource,
}

/// Turns regions mode on for this process; the rank's file goes to `out`.
pub(super) fn enable(out: PathBuf, ranks: u32, host: String, timing_source: TimingSource) {
    let _ = SETUP.set(Setup { out, ranks, host, timing_source });
    ON.store(true, Ordering::SeqCst);
}

/// Whether regions mode is on.
pub(super) fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// A multiplicative hash of a (previous, next) return-address pair: the
/// table is keyed by a few dozen addresses that differ in their low bits.
#[derive(Default)]
pub(super) struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(29) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Per-region sums of compute blocks, keyed by the return addresses of
/// the calls before and after them (0: `MPI_Init`).
#[derive(Debug, Default)]
pub(super) struct RegionSums {
    /// Each region's index in `sums`.
    index: HashMap<(u64, u64), usize, BuildHasherDefault<PairHasher>>,
    sums: Vec<((u64, u64), BlockSums)>,
    /// The region added to last and its index: a loop of one call (a
    /// polling loop) adds to the same region again and again.
    last: Option<((u64, u64), usize)>,
}

impl RegionSums {
    /// An empty table with room for a typical program's regions.
    pub(super) fn new() -> RegionSums {
        RegionSums { index: HashMap::with_capacity_and_hasher(64, Default::default()), sums: Vec::with_capacity(64), last: None }
    }

    /// The sums of region `key`, created empty if new.
    #[inline]
    fn slot(&mut self, key: (u64, u64)) -> &mut BlockSums {
        let i = match self.last {
            Some((k, i)) if k == key => i,
            _ => {
                let next = self.sums.len();
                let i = *self.index.entry(key).or_insert(next);
                if i == next {
                    self.sums.push((key, BlockSums::default()));
                }
                self.last = Some((key, i));
                i
            }
        };
        &mut self.sums[i].1
    }

    /// Adds a block of `cpu_ns` thread CPU and `wall_ns` wall nanoseconds
    /// between the calls returning to `prev` and `next`.
    #[inline]
    pub(super) fn add(&mut self, prev: u64, next: u64, cpu_ns: u64, wall_ns: u64) {
        self.slot((prev, next)).add(cpu_ns as f64 * 1e-9, wall_ns as f64 * 1e-9);
    }

    /// Adds every region of `other`.
    pub(super) fn merge(&mut self, other: &RegionSums) {
        for (k, o) in &other.sums {
            self.slot(*k).merge(o);
        }
    }

    /// The table, ordered by address pair.
    pub(super) fn blocks(&self) -> Vec<RegionBlocks> {
        let mut out: Vec<RegionBlocks> = self.sums.iter().map(|&((prev, next), sums)| RegionBlocks { prev, next, sums }).collect();
        out.sort_by_key(|r| (r.prev, r.next));
        out
    }
}

/// A thread other than the `MPI_Init` one ends: its sums join the rank's.
pub(super) fn thread_ended(sums: RegionSums) {
    if let Ok(mut all) = ENDED_THREADS.lock() {
        all.get_or_insert_with(RegionSums::new).merge(&sums);
    }
}

/// Writes the rank's file at `MPI_Finalize`: `sums` of the `MPI_Init`
/// thread and of the threads that ended, `wall_s` seconds since
/// `MPI_Init`.
///
/// # Errors
/// A one-line message naming the file that could not be written.
pub(super) fn write(rank: u32, mut sums: RegionSums, wall_s: f64) -> Result<(), String> {
    let Some(setup) = SETUP.get() else { return Ok(()) };
    if let Some(ended) = ENDED_THREADS.lock().ok().and_then(|mut t| t.take()) {
        sums.merge(&ended);
    }
    let file = RegionTimes {
        format_version: REGION_TIMES_VERSION,
        rank,
        ranks: setup.ranks,
        host: setup.host.clone(),
        timing_source: setup.timing_source,
        wall_s,
        modules: crate::modules::current(),
        regions: sums.blocks(),
    };
    let path = setup.out.join(region_times_file_name(rank));
    let tmp = path.with_extension("json.tmp");
    serde_json::to_vec(&file)
        .map_err(std::io::Error::other)
        .and_then(|j| std::fs::write(&tmp, j))
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_summed_per_address_pair() {
        let mut a = RegionSums::new();
        a.add(0, 0x10, 1_000, 1_500);
        a.add(0x10, 0x20, 3_000, 3_000);
        a.add(0x10, 0x20, 1_000, 2_000);
        let mut b = RegionSums::new();
        b.add(0x10, 0x20, 500, 500);
        b.add(0x20, 0x10, 7, 7);
        a.merge(&b);
        let blocks = a.blocks();
        let pairs: Vec<(u64, u64)> = blocks.iter().map(|r| (r.prev, r.next)).collect();
        assert_eq!(pairs, [(0, 0x10), (0x10, 0x20), (0x20, 0x10)]);
        let s = blocks[1].sums;
        assert_eq!(s.count, 3);
        assert!((s.cpu_s - 4.5e-6).abs() < 1e-18 && (s.wall_s - 5.5e-6).abs() < 1e-18, "{s:?}");
        assert!((s.cpu_min_s - 5e-7).abs() < 1e-18 && (s.cpu_max_s - 3e-6).abs() < 1e-18, "{s:?}");
        assert!((s.cpu_sq_s2 - (9e-12 + 1e-12 + 0.25e-12)).abs() < 1e-24, "{s:?}");
        assert!((blocks[0].sums.mean_s(false) - 1.5e-6).abs() < 1e-18);
    }

    #[test]
    fn the_pair_hash_tells_neighbouring_sites_apart() {
        let hash = |a: u64, b: u64| {
            let mut h = PairHasher::default();
            h.write_u64(a);
            h.write_u64(b);
            h.finish()
        };
        assert_ne!(hash(0x401000, 0x401010), hash(0x401010, 0x401000));
        assert_ne!(hash(0x401000, 0x401010), hash(0x401000, 0x401018));
    }
}

//! MPICH's intra-node shared-memory collectives: the ch4 POSIX
//! "release_gather" algorithms (MPICH 4.0,
//! `src/mpid/ch4/shm/posix/posix_coll_release_gather.h` and
//! `release_gather/release_gather.h`), which are not point-to-point
//! schedules.
//!
//! Every rank of a communicator has a gather flag and a release flag in
//! shared memory, and a reduce buffer of cells. In the **gather** step a
//! rank waits for each child's gather flag (in a k-ary tree rooted at rank
//! 0) and then stores its own; in the **release** step rank 0 stores its
//! release flag and every other rank waits for its parent's, then stores
//! its own. An `MPI_Allreduce`
//! (`MPIDI_POSIX_mpi_allreduce_release_gather`) runs, per cell-sized
//! chunk, a gather in which each rank copies its data into its cell and
//! combines each child's cell into it (reduce tree, radix
//! `MPIR_CVAR_REDUCE_INTRANODE_TREE_KVAL` = 4), then a release after which
//! every rank copies the result out of rank 0's cell (bcast tree, radix
//! `MPIR_CVAR_BCAST_INTRANODE_TREE_KVAL` = 64). An `MPI_Barrier` on a
//! communicator of one node (`MPIDI_Barrier_intra_composition_alpha`) is
//! a flag-only gather and release (`MPIDI_POSIX_mpi_barrier_release_gather`)
//! followed by a 1-byte release-gather broadcast from rank 0.
//!
//! The cost model ([`ShmCost`]): each release-gather call first costs its
//! rank `call_s` (the call's own work: algorithm selection, datatype and
//! buffer checks); a rank sees a flag `flag_s` after both the flag's store
//! and the start of its poll (the poll's load of a line another core
//! wrote); a copy into or out of a cell, and the combination of a child's
//! cell into the rank's, cost `s_per_byte` per byte.
//!
//! MPICH uses these algorithms only from the
//! `MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD`-th (5th) `MPI_Bcast`,
//! `MPI_Reduce`, `MPI_Barrier` or `MPI_Allreduce` on a communicator
//! ([`ShmCounter`]); before, it runs its point-to-point algorithms.
//!
//! Approximations: the trees are MPICH's k-ary trees without its
//! topology-aware variant (used only when the user binds processes);
//! a rank never waits for a free cell (MPICH's 4 cells let a broadcast
//! root or a reduce leaf run at most 3 calls ahead); the shared memory
//! limit per node (`MPIR_CVAR_COLL_SHM_LIMIT_PER_NODE`, 64 MiB) is never
//! reached; the operation is commutative and the program single-threaded.

use serde::{Deserialize, Serialize};

/// `MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD`: the release-gather algorithms
/// run from this call on (counted per communicator, [`ShmCounter`]).
pub const NUM_COLLS_THRESHOLD: u32 = 5;

/// Payload bytes of one reduce cell:
/// `MPIR_CVAR_REDUCE_INTRANODE_BUFFER_TOTAL_SIZE` (32768) /
/// `MPIR_CVAR_REDUCE_INTRANODE_NUM_CELLS` (4). An all-reduce is cut in
/// chunks of at most this many bytes.
pub const REDUCE_CELL_BYTES: u64 = 32768 / 4;

/// Radix of the reduce tree (`MPIR_CVAR_REDUCE_INTRANODE_TREE_KVAL`).
pub const REDUCE_TREE_K: u32 = 4;

/// Radix of the bcast tree (`MPIR_CVAR_BCAST_INTRANODE_TREE_KVAL`), which
/// the release step and the barrier's gather use.
pub const BCAST_TREE_K: u32 = 64;

/// Costs of the release-gather collectives on one node, fitted by
/// `calibrate network` under MPICH on its `MPI_Allreduce` samples
/// (platform TOML: `[collectives] shm_call_s`, `shm_flag_s`,
/// `shm_s_per_byte`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ShmCost {
    /// Time a rank spends in each release-gather call before its first
    /// copy or flag, seconds (`shm_call_s`).
    pub call_s: f64,
    /// Time from a flag's store (or the start of the poll, if later) to
    /// the poller seeing it, seconds (`shm_flag_s`).
    pub flag_s: f64,
    /// Time per byte of a copy into or out of a shared cell, and of
    /// combining a child's cell into the rank's, seconds per byte
    /// (`shm_s_per_byte`).
    pub s_per_byte: f64,
}

impl ShmCost {
    /// Checks that both terms are finite and `>= 0`.
    ///
    /// # Errors
    /// The name of the first bad field (`shm_call_s`, `shm_flag_s`, `shm_s_per_byte`).
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        for (name, v) in [("shm_call_s", self.call_s), ("shm_flag_s", self.flag_s), ("shm_s_per_byte", self.s_per_byte)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be finite and >= 0, got {v}").into());
            }
        }
        Ok(())
    }
}

/// A release-gather collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShmColl {
    /// `MPIDI_POSIX_mpi_allreduce_release_gather`.
    Allreduce,
    /// `MPIDI_POSIX_mpi_barrier_release_gather` then a 1-byte
    /// `MPIDI_POSIX_mpi_bcast_release_gather` from rank 0.
    Barrier,
}

/// MPICH's count of release-gather eligible calls on one communicator
/// that lies on one node (`num_collective_calls` of the communicator's
/// `release_gather` state). An `MPI_Allreduce` on such a communicator
/// runs on the communicator itself (`MPIDI_Allreduce_intra_composition_gamma`);
/// `MPI_Barrier`, `MPI_Bcast` and `MPI_Reduce` run on its node
/// communicator (compositions alpha and beta), whose count is separate,
/// and a barrier is two calls there (the barrier and its 1-byte bcast).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShmCounter {
    comm: u32,
    node: u32,
}

impl ShmCounter {
    /// A communicator past MPICH's threshold: every eligible call runs
    /// in shared memory (what a benchmark's warm-up calls leave).
    pub fn past_threshold() -> ShmCounter {
        ShmCounter { comm: NUM_COLLS_THRESHOLD, node: NUM_COLLS_THRESHOLD }
    }

    /// Counts one blocking call of `coll` (of `bytes` payload) on the
    /// communicator and returns the release-gather algorithm MPICH runs
    /// for it, or `None` when it runs a point-to-point one (before the
    /// threshold, or for other collectives).
    pub fn note(&mut self, coll: super::Coll, bytes: u64) -> Option<ShmColl> {
        use super::Coll as C;
        let reached = |k: u32| k >= NUM_COLLS_THRESHOLD;
        match coll {
            C::Allreduce => {
                self.comm = self.comm.saturating_add(1);
                reached(self.comm).then_some(ShmColl::Allreduce)
            }
            C::Barrier => {
                self.node = self.node.saturating_add(2);
                reached(self.node - 1).then_some(ShmColl::Barrier)
            }
            C::Bcast | C::Reduce if bytes > 0 => {
                self.node = self.node.saturating_add(1);
                None
            }
            _ => None,
        }
    }
}

/// Children of `r` in MPICH's k-ary tree rooted at 0 on `n` ranks
/// (`MPII_Treeutil_tree_kary_init`), in the order they are waited for.
fn children(r: u32, n: u32, k: u32) -> std::ops::Range<u32> {
    let first = (r as u64 * k as u64 + 1).min(n as u64) as u32;
    let end = (r as u64 * k as u64 + k as u64 + 1).min(n as u64) as u32;
    first..end
}

/// Parent of rank `r > 0` in the k-ary tree rooted at 0.
fn parent(r: u32, k: u32) -> u32 {
    (r - 1) / k
}

/// Chunk sizes of an all-reduce of `bytes` in elements of `elem` bytes
/// (`MPIR_Algo_calculate_pipeline_chunk_info` on [`REDUCE_CELL_BYTES`]):
/// one chunk when it fits a cell, else the remainder first, then full
/// cells. Empty for 0 bytes.
pub fn chunks(bytes: u64, elem: u64) -> impl Iterator<Item = u64> {
    let elem = elem.max(1);
    let count = bytes / elem;
    let max = (REDUCE_CELL_BYTES / elem).max(1);
    let (n, first) = match count {
        0 => (0, 0),
        c if c <= max => (1, c),
        c => (c.div_ceil(max), if c % max == 0 { max } else { c % max }),
    };
    (0..n).map(move |i| if i == 0 { first * elem } else { max * elem })
}

/// Each member's exit time from `coll` with `bytes` of payload (elements
/// of `elem` bytes) on `entries.len()` ranks of one node that entered at
/// `entries` (seconds, communicator rank order), written to `exits`.
pub fn exits(coll: ShmColl, bytes: u64, elem: u64, entries: &[f64], cost: &ShmCost, exits: &mut Vec<f64>) {
    let n = entries.len() as u32;
    exits.clear();
    exits.extend_from_slice(entries);
    if n < 2 {
        return;
    }
    let mut flag = vec![0.0; n as usize];
    let seen = |store: f64, poll: f64| store.max(poll) + cost.flag_s;
    exits.iter_mut().for_each(|t| *t += cost.call_s);
    match coll {
        ShmColl::Allreduce => {
            for chunk in chunks(bytes, elem) {
                let b = chunk as f64 * cost.s_per_byte;
                // Gather: copy in, combine each child's cell once its flag is seen.
                for r in (0..n).rev() {
                    let mut t = exits[r as usize] + b;
                    for c in children(r, n, REDUCE_TREE_K) {
                        t = seen(flag[c as usize], t) + b;
                    }
                    flag[r as usize] = t;
                }
                release(n, &mut flag, cost.flag_s);
                // Every rank copies the result out of rank 0's cell.
                for r in 0..n as usize {
                    exits[r] = flag[r] + b;
                }
            }
        }
        ShmColl::Barrier => {
            for r in (0..n).rev() {
                let mut t = exits[r as usize];
                for c in children(r, n, BCAST_TREE_K) {
                    t = seen(flag[c as usize], t);
                }
                flag[r as usize] = t;
            }
            release(n, &mut flag, cost.flag_s);
            // The 1-byte bcast, a second call: a release from rank 0.
            flag.iter_mut().for_each(|t| *t += cost.call_s);
            let polls = flag.clone();
            for r in 1..n {
                let p = parent(r, BCAST_TREE_K) as usize;
                flag[r as usize] = seen(flag[p], polls[r as usize]);
            }
            exits.copy_from_slice(&flag);
        }
    }
}

/// The release step on the bcast tree: `flag[r]` holds when rank `r`
/// starts polling (the end of its gather); afterwards, when it stores its
/// release flag (rank 0 at once).
fn release(n: u32, flag: &mut [f64], flag_s: f64) {
    for r in 1..n {
        let p = parent(r, BCAST_TREE_K) as usize;
        flag[r as usize] = flag[p].max(flag[r as usize]) + flag_s;
    }
}

#[cfg(test)]
mod tests {
    use super::super::Coll;
    use super::*;

    const COST: ShmCost = ShmCost { call_s: 0.0, flag_s: 1e-7, s_per_byte: 1e-10 };

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-15, "{a:?} != {b:?}");
        }
    }

    /// Two ranks, 8 KiB (one cell), both entering at 0: rank 1 copies in
    /// (0.8192 µs) and stores its flag; rank 0, copied in too, sees it
    /// 0.1 µs later (0.9192), combines (1.7384) and releases; rank 1 sees
    /// the release at 1.8384; each copies out: 2.5576 and 2.6576 µs.
    #[test]
    fn two_rank_allreduce_worked_example() {
        let mut out = Vec::new();
        exits(ShmColl::Allreduce, 8192, 8, &[0.0, 0.0], &COST, &mut out);
        close(&out, &[2.5576e-6, 2.6576e-6]);
        // Rank 0 late by 5 µs: rank 1's flag is long stored; the poll's load still costs 0.1 µs.
        exits(ShmColl::Allreduce, 8192, 8, &[5e-6, 0.0], &COST, &mut out);
        close(&out, &[5e-6 + 0.8192e-6 + 0.1e-6 + 0.8192e-6 + 0.8192e-6, 5e-6 + 2.6576e-6]);
    }

    /// Two chunks: 12 KiB is 4 KiB then 8 KiB, run one after the other.
    #[test]
    fn large_payloads_run_cell_by_cell() {
        assert_eq!(chunks(12288, 8).collect::<Vec<_>>(), vec![4096, 8192]);
        assert_eq!(chunks(16384, 8).collect::<Vec<_>>(), vec![8192, 8192]);
        assert_eq!(chunks(24, 8).collect::<Vec<_>>(), vec![24]);
        assert_eq!(chunks(0, 8).count(), 0);
        let mut out = Vec::new();
        exits(ShmColl::Allreduce, 12288, 8, &[0.0, 0.0], &COST, &mut out);
        let first: f64 = 3.0 * 4096e-10 + 2e-7; // rank 1's end of the 4 KiB chunk
        let r0_first = first - 1e-7;
        // Second chunk starts at each rank's exit of the first.
        let g1 = first + 8192e-10;
        let g0 = (r0_first + 8192e-10).max(g1) + 1e-7 + 8192e-10;
        close(&out, &[g0 + 8192e-10, g0 + 1e-7 + 8192e-10]);
    }

    /// Five ranks: rank 0's reduce children are 1-4, waited in order.
    #[test]
    fn allreduce_waits_for_the_children_in_order() {
        let mut out = Vec::new();
        let c = ShmCost { call_s: 0.0, flag_s: 1.0, s_per_byte: 0.0 };
        exits(ShmColl::Allreduce, 8, 8, &[0.0, 0.0, 0.0, 10.0, 0.0], &c, &mut out);
        // Rank 0 sees rank 1's flag at 1, 2's at 2 (each poll costs a
        // flag time), 3's at 11, 4's at 12; it releases at 12; the others see it at 13.
        close(&out, &[12.0, 13.0, 13.0, 13.0, 13.0]);
    }

    /// A barrier of two ranks (call 0.5, flag 1): rank 1's flag, stored
    /// at 0.5, seen by rank 0 at 1.5; rank 1 sees the release at 2.5;
    /// the bcast call: rank 0 stores its flag at 2, out; rank 1 polls
    /// from 3 and sees it at 4.
    #[test]
    fn two_rank_barrier() {
        let mut out = Vec::new();
        let c = ShmCost { call_s: 0.5, flag_s: 1.0, s_per_byte: 5.0 };
        exits(ShmColl::Barrier, 0, 1, &[0.0, 0.0], &c, &mut out);
        close(&out, &[2.0, 4.0]);
    }

    /// The call's own time delays everything after it: 8 KiB on two
    /// ranks with 0.3 µs per call is the example above 0.3 µs later.
    #[test]
    fn the_call_time_comes_first() {
        let mut out = Vec::new();
        exits(ShmColl::Allreduce, 8192, 8, &[0.0, 0.0], &ShmCost { call_s: 3e-7, ..COST }, &mut out);
        close(&out, &[2.8576e-6, 2.9576e-6]);
    }

    #[test]
    fn the_threshold_counts_per_communicator_and_node_communicator() {
        let mut k = ShmCounter::default();
        let ar: Vec<_> = (0..6).map(|_| k.note(Coll::Allreduce, 8)).collect();
        assert_eq!(ar, [None, None, None, None, Some(ShmColl::Allreduce), Some(ShmColl::Allreduce)]);
        // Barriers count twice on the node communicator: the third is the first release-gather one.
        let mut k = ShmCounter::default();
        let b: Vec<_> = (0..3).map(|_| k.note(Coll::Barrier, 0)).collect();
        assert_eq!(b, [None, None, Some(ShmColl::Barrier)]);
        // Bcasts count there too (the barrier after two is the node
        // communicator's calls 3 and 4, the next its 5 and 6); all-reduces do not.
        let mut k = ShmCounter::default();
        k.note(Coll::Bcast, 8);
        k.note(Coll::Bcast, 8);
        k.note(Coll::Allreduce, 8);
        assert_eq!(k.note(Coll::Barrier, 0), None);
        assert_eq!(k.note(Coll::Barrier, 0), Some(ShmColl::Barrier));
        assert_eq!(k.note(Coll::Alltoall, 8), None);
        let mut k = ShmCounter::past_threshold();
        assert_eq!((k.note(Coll::Barrier, 0), k.note(Coll::Allreduce, 8)), (Some(ShmColl::Barrier), Some(ShmColl::Allreduce)));
    }
}

//! Collectives as point-to-point schedules.
//!
//! Each schedule function appends one rank's part of a collective to a
//! reusable buffer of [`Step`]s. A rank executes its steps round by round:
//! it posts every step of a round (sends first, as nonblocking sends; then
//! receives), then waits for all of them, like `MPI_Waitall`, before the
//! next round. Ranks and roots in schedules are communicator ranks `0..n`;
//! the engine maps them to world ranks through the communicator's members.
//! Receives whose data the rank combines into its own (a reduction
//! step) carry the bytes combined ([`Step::reduce_bytes`]); the engine
//! charges [`ReduceCost`] for them as local compute once their round
//! completes, before the next round (the γ term of Thakur et al. 2005).
//!
//! Algorithms (Thakur, Rabenseifner & Gropp, "Optimization of Collective
//! Communication Operations in MPICH", IJHPCA 2005; OpenMPI's
//! `coll/base`; SimGrid's `src/smpi/colls`), by collective:
//!
//! | collective | algorithms ([`Alg`]) |
//! |---|---|
//! | barrier | linear, dissemination (= Bruck), recursive doubling, tree |
//! | bcast | binomial, linear, chain/pipeline (segmented), binary tree (segmented), k-nomial, scatter + recursive-doubling or ring all-gather (van de Geijn) |
//! | reduce | binomial, linear, chain/pipeline (segmented), binary tree (segmented), Rabenseifner (reduce-scatter + gather) |
//! | allreduce | recursive doubling, ring, segmented ring, Rabenseifner, reduce + bcast (several), SimGrid's `lr` |
//! | gather(v), scatter(v) | linear, binomial |
//! | allgather(v) | ring, recursive doubling, Bruck, neighbor exchange, linear |
//! | alltoall(v) | pairwise, linear, Bruck |
//! | reduce_scatter(_block) | recursive halving, ring, pairwise, reduce + scatterv |
//! | scan, exscan | linear chain, recursive doubling |
//!
//! Which algorithm runs is decided per call by [`CollAlgs`]: a selector
//! (`smpi`, `mpich`, `ompi`, or SimGrid's reading of the OpenMPI tables)
//! and per-collective overrides. MPICH's intra-node shared-memory
//! all-reduce and barrier are not point-to-point schedules: [`shm`]
//! models them, when the platform gives their costs ([`Collectives::shm`]).

mod alg;
mod config;
mod exchange;
mod gamma;
mod lazy;
mod ompi;
mod schedule;
mod select;
pub mod shm;
mod trees;

pub use alg::{alg_names, parse_alg, Alg, Coll};
pub use config::Collectives;
pub use exchange::{
    allreduce, bruck_allgather, bruck_alltoall, chain_scan, linear_allgather, linear_alltoall, neighbor_allgather, pairwise,
    rabenseifner_allreduce, rabenseifner_reduce, rdb_allgather, rdb_scan, recursive_halving_reduce_scatter, ring_allgather, ring_allreduce,
    ring_reduce_scatter, split_blocks,
};
pub use gamma::ReduceCost;
pub use lazy::{Aligned, Lazy};
pub use schedule::{elem_size, schedule, CollCall};
pub use select::{CollAlgs, Selector, SELECTORS};
pub use shm::{ShmColl, ShmCost, ShmCounter};
pub use trees::{
    barrier, bcast, binary_bcast, binary_reduce, binomial_gather, binomial_scatter, chain_bcast, chain_reduce, knomial_bcast,
    linear_barrier, linear_gather, linear_scatter, recursive_doubling_barrier, reduce, scatter_allgather_bcast,
};

/// One point-to-point operation of a rank's part in a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The other rank (a communicator rank in schedules; the engine maps
    /// it to a world rank).
    pub peer: u32,
    /// Message size, bytes (0 on receives: the sender's size costs).
    pub bytes: u64,
    /// True for a send to `peer`, false for a receive from it.
    pub send: bool,
    /// True on the last step of a round: the rank waits for the round here.
    pub end_round: bool,
    /// On a receive whose data is combined into the rank's buffer (a
    /// reduction step): the bytes combined; 0 otherwise.
    pub reduce_bytes: u64,
}

fn push_round(out: &mut Vec<Step>, ops: &[(u32, bool)], bytes: u64) {
    for (i, &(peer, send)) in ops.iter().enumerate() {
        out.push(Step { peer, bytes: if send { bytes } else { 0 }, send, end_round: i + 1 == ops.len(), reduce_bytes: 0 });
    }
}

fn push_ops(out: &mut Vec<Step>, ops: &[(u32, bool, u64)]) {
    for (i, &(peer, send, bytes)) in ops.iter().enumerate() {
        out.push(Step { peer, bytes, send, end_round: i + 1 == ops.len(), reduce_bytes: 0 });
    }
}

/// Marks the receives among `out[from..]` as reduction steps combining
/// `bytes` bytes each.
fn reducing(out: &mut [Step], from: usize, bytes: u64) {
    for s in out[from..].iter_mut().filter(|s| !s.send) {
        s.reduce_bytes = bytes;
    }
}

/// Marks the last step of `out`, a receive, as a reduction step of `bytes`.
fn reduce_last(out: &mut [Step], bytes: u64) {
    let n = out.len();
    reducing(out, n - 1, bytes);
}

/// Segment sizes of a `bytes`-byte message cut in `seg_bytes` pieces (one
/// segment when `seg_bytes` is 0 or not smaller than the message; one
/// empty segment for an empty message).
fn segments(bytes: u64, seg_bytes: u64) -> Vec<u64> {
    if seg_bytes == 0 || seg_bytes >= bytes {
        return vec![bytes];
    }
    let n = bytes.div_ceil(seg_bytes);
    (0..n).map(|i| seg_bytes.min(bytes - i * seg_bytes)).collect()
}

#[cfg(test)]
mod tests;

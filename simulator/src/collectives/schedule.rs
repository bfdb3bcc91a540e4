//! One rank's schedule of one collective call: the algorithm picked by
//! [`CollAlgs`], expanded into [`Step`]s.

use super::alg::{Alg, Coll};
use super::select::CollAlgs;
use super::*;

/// One collective call as a rank sees it. Sizes are bytes; `root` is a
/// communicator rank.
#[derive(Debug, Clone, Copy)]
pub struct CollCall<'a> {
    /// Which collective.
    pub coll: Coll,
    /// Root (communicator rank); 0 for rootless collectives.
    pub root: u32,
    /// Payload: the message (bcast, reduce, allreduce, scan), or the block
    /// per rank (gather, scatter, allgather, alltoall); unused by the
    /// v-collectives.
    pub bytes: u64,
    /// Per-rank sizes of the v-collectives: allgatherv and reduce_scatter
    /// the block of each rank, alltoallv this rank's send to each peer,
    /// scatterv the root's send to each rank (empty on other ranks).
    pub sizes: &'a [u64],
    /// A v-collective (scatterv, alltoallv, …): every rank then takes an
    /// algorithm that needs no other rank's sizes where one differs
    /// (linear scatterv, pairwise or linear alltoallv).
    pub vector: bool,
}

impl CollCall<'_> {
    /// The size OpenMPI's decision compares (`total_dsize`): the message,
    /// the per-rank block, the average block of an allgatherv
    /// (`per_rank_dsize`), or the whole vector of a reduce_scatter.
    pub fn size_measure(&self, n: u32) -> u64 {
        let sum: u64 = self.sizes.iter().sum();
        match self.coll {
            Coll::ReduceScatter => sum,
            Coll::Allgatherv => sum / n.max(1) as u64,
            Coll::Alltoallv => sum / n.max(1) as u64,
            _ => self.bytes,
        }
    }

    fn size(&self, p: u32) -> u64 {
        self.sizes.get(p as usize).copied().unwrap_or(self.bytes)
    }
}

/// The element size assumed for a payload of `bytes` (actions carry bytes,
/// not counts): 8 when it divides, else 4, 2 or 1. Algorithms that split
/// a buffer by elements, and the `count < ranks` fallbacks, use it.
pub fn elem_size(bytes: u64) -> u64 {
    [8, 4, 2].into_iter().find(|e| bytes.is_multiple_of(*e)).unwrap_or(1)
}

/// Appends rank `me`'s steps of `call` on `n` ranks, with the algorithm
/// `algs` picks.
///
/// # Panics
/// If `me` or `call.root` is `>= n`, or a v-collective's `sizes` is
/// shorter than `n` where the algorithm needs one size per rank.
pub fn schedule(algs: &CollAlgs, call: &CollCall, me: u32, n: u32, out: &mut Vec<Step>) {
    let elem = elem_size(call.bytes);
    let count = call.bytes / elem;
    let alg = algs.pick(call.coll, n, call.size_measure(n), count);
    let (root, bytes) = (call.root, call.bytes);
    let pof2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 } as u64;
    match call.coll {
        Coll::Barrier => match alg {
            Alg::Linear => linear_barrier(me, n, out),
            Alg::RecursiveDoubling => recursive_doubling_barrier(me, n, out),
            Alg::Tree => {
                reduce(me, n, 0, 0, out);
                bcast(me, n, 0, 0, out);
            }
            _ => barrier(me, n, out),
        },
        Coll::Bcast => match alg {
            Alg::Linear => linear_scatter(me, n, root, |_| bytes, out),
            Alg::Pipeline { seg } => chain_bcast(me, n, root, bytes, seg, out),
            Alg::BinaryTree { seg } => binary_bcast(me, n, root, bytes, seg, out),
            Alg::Knomial => knomial_bcast(me, n, root, 4, bytes, out),
            Alg::ScatterAllgather => scatter_allgather_bcast(me, n, root, bytes, false, out),
            Alg::ScatterRingAllgather => scatter_allgather_bcast(me, n, root, bytes, true, out),
            _ => bcast(me, n, root, bytes, out),
        },
        Coll::Reduce => match alg {
            Alg::Linear => {
                let at = out.len();
                linear_gather(me, n, root, bytes, out);
                reducing(out, at, bytes);
            }
            Alg::Pipeline { seg } => chain_reduce(me, n, root, bytes, seg, out),
            Alg::BinaryTree { seg } => binary_reduce(me, n, root, bytes, seg, out),
            Alg::Rabenseifner if count >= pof2 => rabenseifner_reduce(me, n, root, bytes, elem, out),
            _ => reduce(me, n, root, bytes, out),
        },
        Coll::Allreduce => allreduce_alg(algs, alg, me, n, bytes, out),
        Coll::Gather => match alg {
            Alg::Binomial => binomial_gather(me, n, root, bytes, out),
            _ => linear_gather(me, n, root, bytes, out),
        },
        Coll::Scatter => match alg {
            Alg::Binomial if !call.vector => binomial_scatter(me, n, root, bytes, out),
            _ => linear_scatter(me, n, root, |p| call.size(p), out),
        },
        Coll::Allgather | Coll::Allgatherv => {
            let block = |b: u32| call.size(b);
            match alg {
                Alg::RecursiveDoubling => rdb_allgather(me, n, block, out),
                Alg::Bruck => bruck_allgather(me, n, block, out),
                Alg::Neighbor => neighbor_allgather(me, n, call.size_measure(n), out),
                Alg::Linear => linear_allgather(me, n, block, out),
                _ => ring_allgather(me, n, block, out),
            }
        }
        Coll::Alltoall | Coll::Alltoallv => match alg {
            Alg::Linear => linear_alltoall(me, n, |p| call.size(p), out),
            Alg::Bruck if !call.vector => bruck_alltoall(me, n, bytes, out),
            _ => pairwise(me, n, |p| call.size(p), out),
        },
        Coll::ReduceScatter => match alg {
            Alg::RecursiveHalving => recursive_halving_reduce_scatter(me, n, call.sizes, out),
            Alg::Ring => ring_reduce_scatter(me, n, |b| call.size(b), out),
            Alg::Pairwise => {
                let at = out.len();
                pairwise(me, n, |p| call.size(p), out);
                reducing(out, at, call.size(me));
            }
            Alg::LinearReduceScatterv => {
                let (at, total) = (out.len(), call.sizes.iter().sum());
                linear_gather(me, n, 0, total, out);
                reducing(out, at, total);
                linear_scatter(me, n, 0, |p| call.size(p), out);
            }
            _ => {
                reduce(me, n, 0, call.sizes.iter().sum(), out);
                linear_scatter(me, n, 0, |p| call.size(p), out);
            }
        },
        Coll::Scan | Coll::Exscan => match alg {
            Alg::RecursiveDoubling => rdb_scan(me, n, bytes, out),
            _ => chain_scan(me, n, bytes, out),
        },
    }
}

/// The all-reduce algorithms, with their fallbacks: OpenMPI's ring and
/// Rabenseifner use recursive doubling when count < ranks (resp. the
/// power of two below); SimGrid's `lr` uses its default reduce + bcast.
fn allreduce_alg(algs: &CollAlgs, alg: Alg, me: u32, n: u32, bytes: u64, out: &mut Vec<Step>) {
    let elem = elem_size(bytes);
    let count = bytes / elem;
    let pof2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 } as u64;
    let gather = |out: &mut Vec<Step>| {
        let at = out.len();
        linear_gather(me, n, 0, bytes, out);
        reducing(out, at, bytes);
    };
    let red_bcast = |out: &mut Vec<Step>| {
        gather(out);
        bcast(me, n, 0, bytes, out);
    };
    match alg {
        Alg::RedBcast => red_bcast(out),
        Alg::BasicLinear => {
            gather(out);
            linear_scatter(me, n, 0, |_| bytes, out);
        }
        Alg::Nonoverlapping => {
            let call = |coll| CollCall { coll, root: 0, bytes, sizes: &[], vector: false };
            schedule(algs, &call(Coll::Reduce), me, n, out);
            schedule(algs, &call(Coll::Bcast), me, n, out);
        }
        Alg::Ring if count >= n as u64 => ring_allreduce(me, n, bytes, elem, out),
        Alg::Lr if count >= n as u64 => ring_allreduce(me, n, bytes, elem, out),
        Alg::Lr => red_bcast(out),
        Alg::SegmentedRing { seg, simgrid } => {
            // OpenMPI's COLL_BASE_COMPUTED_SEGCOUNT: segments of whole elements.
            let segcount = if seg >= elem && seg < bytes { (seg + elem / 2) / elem } else { count };
            if count < n as u64 * segcount {
                let plain = if simgrid { Alg::Lr } else { Alg::Ring };
                return allreduce_alg(algs, plain, me, n, bytes, out);
            }
            let mut phases = count / (n as u64 * segcount);
            let rest = count % (n as u64 * segcount);
            if rest >= n as u64 && rest > n as u64 * segcount / 2 {
                phases += 1;
            }
            let blocks = split_blocks(bytes, n, elem);
            for ph in 0..phases {
                ring_reduce_scatter(me, n, |b| phase_part(blocks[b as usize] / elem, phases, ph) * elem, out);
            }
            ring_allgather(me, n, |b| blocks[b as usize], out);
        }
        Alg::Rabenseifner if count >= pof2 => rabenseifner_allreduce(me, n, bytes, elem, out),
        _ => allreduce(me, n, bytes, out),
    }
}

/// Elements of phase `ph` when `count` elements are cut in `phases`
/// (OpenMPI's COLL_BASE_COMPUTE_BLOCKCOUNT: early phases one larger).
fn phase_part(count: u64, phases: u64, ph: u64) -> u64 {
    count / phases + u64::from(ph < count % phases)
}

//! OpenMPI 4.1's fixed decisions (`ompi/mca/coll/tuned/coll_tuned_decision_fixed.c`,
//! commutative operations) as tables, and the algorithms OpenMPI and
//! SimGrid 3.32 (`src/smpi/colls/smpi_openmpi_selector.cpp`, which carries
//! the same tables) run for each algorithm id.

use super::alg::{Alg, Coll};

/// A decision table: rows `(ranks below, [(bytes below, algorithm id)])`,
/// the last bound of each list `u64::MAX`, the last row `u32::MAX`.
type Table = &'static [(u32, &'static [(u64, u8)])];
const M: u64 = u64::MAX;

/// The OpenMPI 4.1 algorithm id for `n` ranks and `bytes`.
fn lookup(table: Table, n: u32, bytes: u64) -> u8 {
    let row = table.iter().find(|(below, _)| n < *below).expect("last row is u32::MAX").1;
    row.iter().find(|(below, _)| bytes < *below).expect("last bound is u64::MAX").1
}

// OpenMPI 4.1 coll_tuned_decision_fixed.c, commutative operations; the
// same tables are in SimGrid 3.32's smpi_openmpi_selector.cpp.
const ALLREDUCE: Table = &[
    (4, &[(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5), (M, 6)]),
    (8, &[(16, 4), (8192, 3), (M, 6)]),
    (16, &[(8192, 3), (M, 6)]),
    (32, &[(64, 5), (4096, 3), (M, 6)]),
    (64, &[(128, 5), (M, 6)]),
    (128, &[(262144, 3), (M, 6)]),
    (256, &[(131072, 2), (262144, 3), (M, 6)]),
    (512, &[(4096, 2), (M, 6)]),
    (2048, &[(2048, 2), (16384, 3), (M, 6)]),
    (4096, &[(2048, 2), (4096, 5), (16384, 3), (M, 6)]),
    (u32::MAX, &[(2048, 2), (16384, 5), (32768, 3), (M, 6)]),
];
const ALLTOALL: Table = &[
    (3, &[(2, 2), (4, 5), (16, 2), (64, 5), (256, 2), (4096, 5), (32768, 2), (262144, 4), (1048576, 5), (M, 2)]),
    (8, &[(8192, 4), (16384, 1), (65536, 4), (524288, 1), (1048576, 2), (M, 1)]),
    (16, &[(262144, 4), (M, 1)]),
    (32, &[(4, 4), (512, 3), (8192, 4), (32768, 1), (262144, 4), (524288, 1), (M, 4)]),
    (64, &[(512, 3), (524288, 1), (M, 4)]),
    (128, &[(1024, 3), (2048, 1), (4096, 4), (262144, 1), (M, 2)]),
    (256, &[(1024, 3), (2048, 4), (262144, 1), (M, 2)]),
    (512, &[(1024, 3), (8192, 4), (32768, 1), (M, 2)]),
    (1024, &[(512, 3), (8192, 4), (16384, 1), (131072, 4), (262144, 1), (M, 2)]),
    (2048, &[(512, 3), (1024, 4), (2048, 1), (16384, 4), (262144, 1), (M, 4)]),
    (4096, &[(1024, 3), (4096, 4), (8192, 1), (131072, 4), (M, 1)]),
    (u32::MAX, &[(2048, 3), (8192, 4), (16384, 1), (32768, 4), (65536, 1), (M, 4)]),
];
const ALLTOALLV: Table = &[(4, &[(M, 2)]), (64, &[(M, 1)]), (128, &[(M, 2)]), (256, &[(M, 1)]), (1024, &[(M, 2)]), (u32::MAX, &[(M, 1)])];
const BARRIER: Table = &[
    (4, &[(M, 3)]),
    (8, &[(M, 1)]),
    (64, &[(M, 3)]),
    (256, &[(M, 4)]),
    (512, &[(M, 6)]),
    (1024, &[(M, 4)]),
    (4096, &[(M, 6)]),
    (u32::MAX, &[(M, 4)]),
];
const BCAST: Table = &[
    (4, &[(32, 3), (256, 5), (512, 3), (1024, 7), (32768, 1), (131072, 5), (262144, 2), (524288, 1), (1048576, 6), (M, 5)]),
    (8, &[(64, 5), (128, 6), (2048, 5), (8192, 6), (1048576, 1), (M, 2)]),
    (16, &[(8, 7), (64, 5), (4096, 7), (16384, 5), (32768, 6), (M, 1)]),
    (32, &[(4096, 7), (1048576, 6), (M, 8)]),
    (64, &[(2048, 6), (M, 7)]),
    (128, &[(M, 7)]),
    (256, &[(2, 6), (16384, 5), (32768, 1), (65536, 5), (M, 7)]),
    (1024, &[(16384, 7), (32768, 4), (M, 7)]),
    (2048, &[(524288, 7), (M, 8)]),
    (4096, &[(262144, 7), (M, 8)]),
    (u32::MAX, &[(8192, 7), (16384, 5), (262144, 7), (M, 8)]),
];
const REDUCE: Table = &[
    (4, &[(8, 7), (16, 4), (32, 3), (262144, 1), (524288, 3), (1048576, 2), (M, 3)]),
    (8, &[(4096, 4), (65536, 2), (262144, 5), (524288, 1), (1048576, 5), (M, 1)]),
    (16, &[(8192, 4), (M, 5)]),
    (32, &[(4096, 4), (M, 5)]),
    (256, &[(M, 5)]),
    (512, &[(8192, 5), (16384, 6), (M, 5)]),
    (2048, &[(M, 5)]),
    (4096, &[(512, 5), (1024, 6), (8192, 5), (16384, 6), (M, 5)]),
    (u32::MAX, &[(16, 5), (32, 6), (1024, 5), (2048, 6), (8192, 5), (16384, 6), (M, 5)]),
];
const REDUCE_SCATTER: Table = &[
    (4, &[(65536, 3), (131072, 4), (M, 3)]),
    (8, &[(8, 1), (262144, 2), (M, 3)]),
    (32, &[(262144, 2), (M, 3)]),
    (64, &[(64, 1), (2048, 2), (524288, 4), (M, 3)]),
    (128, &[(256, 1), (512, 2), (2048, 4), (4096, 2), (M, 4)]),
    (256, &[(256, 1), (512, 2), (M, 4)]),
    (512, &[(256, 1), (1024, 2), (M, 4)]),
    (1024, &[(512, 1), (2048, 2), (8192, 4), (16384, 2), (M, 4)]),
    (2048, &[(512, 1), (4096, 2), (16384, 4), (32768, 2), (M, 4)]),
    (4096, &[(512, 1), (4096, 2), (M, 4)]),
    (u32::MAX, &[(1024, 1), (8192, 2), (M, 4)]),
];
const ALLGATHER: Table = &[
    (3, &[(M, 6)]),
    (32, &[(M, 3)]),
    (64, &[(1024, 3), (65536, 5), (M, 4)]),
    (128, &[(512, 3), (65536, 5), (M, 4)]),
    (256, &[(512, 3), (131072, 5), (524288, 4), (1048576, 5), (M, 4)]),
    (512, &[(32, 3), (128, 2), (1024, 3), (131072, 5), (524288, 4), (1048576, 5), (M, 4)]),
    (1024, &[(64, 3), (256, 2), (2048, 3), (M, 5)]),
    (2048, &[(4, 3), (8, 2), (16, 3), (32, 2), (256, 3), (512, 2), (4096, 3), (M, 5)]),
    (4096, &[(32, 2), (128, 3), (512, 2), (4096, 3), (M, 5)]),
    (u32::MAX, &[(2, 3), (8, 2), (16, 3), (512, 2), (4096, 3), (M, 5)]),
];
const ALLGATHERV: Table = &[
    (3, &[(2048, 3), (4096, 5), (8192, 3), (M, 5)]),
    (8, &[(256, 1), (4096, 4), (8192, 3), (16384, 4), (262144, 2), (M, 4)]),
    (16, &[(1024, 1), (M, 2)]),
    (32, &[(128, 1), (262144, 2), (M, 3)]),
    (64, &[(256, 1), (8192, 2), (M, 3)]),
    (128, &[(256, 1), (4096, 2), (M, 3)]),
    (256, &[(1024, 2), (65536, 4), (M, 3)]),
    (512, &[(1024, 2), (M, 3)]),
    (1024, &[(512, 2), (1024, 1), (4096, 2), (1048576, 4), (M, 3)]),
    (u32::MAX, &[(4096, 2), (M, 4)]),
];
const GATHER: Table = &[
    (4, &[(2, 3), (4, 1), (32768, 2), (65536, 1), (131072, 2), (M, 3)]),
    (8, &[(1024, 2), (8192, 1), (32768, 2), (262144, 1), (M, 3)]),
    (256, &[(M, 2)]),
    (512, &[(2048, 2), (8192, 1), (M, 2)]),
    (u32::MAX, &[(M, 2)]),
];
const SCATTER: Table = &[
    (4, &[(2, 3), (131072, 1), (262144, 3), (M, 1)]),
    (8, &[(2048, 2), (4096, 1), (8192, 2), (32768, 1), (1048576, 3), (M, 1)]),
    (16, &[(16384, 2), (1048576, 3), (M, 1)]),
    (32, &[(16384, 2), (32768, 1), (M, 3)]),
    (64, &[(512, 2), (8192, 3), (16384, 2), (M, 3)]),
    (u32::MAX, &[(512, 2), (M, 3)]),
];

/// OpenMPI 4.1's fixed decision for `coll` (commutative operations), its
/// algorithm ids mapped to ours: OpenMPI's own algorithms (segment size 0,
/// as the fixed decision passes), or with `simgrid` the ones SimGrid 3.32
/// runs for each id.
pub(super) fn decide(coll: Coll, n: u32, bytes: u64, simgrid: bool) -> Alg {
    use Alg::*;
    let id = |t: Table| lookup(t, n, bytes);
    match coll {
        Coll::Allreduce => match (id(ALLREDUCE), simgrid) {
            (1, false) => BasicLinear,
            (1, true) | (2, _) => Nonoverlapping,
            (3, _) => RecursiveDoubling,
            (4, false) => Ring,
            (4, true) => Lr,
            (5, false) => SegmentedRing { seg: 0, simgrid: false },
            (5, true) => SegmentedRing { seg: 1 << 20, simgrid: true },
            _ => Rabenseifner,
        },
        Coll::Alltoall => match id(ALLTOALL) {
            2 => Pairwise,
            3 => Bruck,
            5 if !simgrid => Pairwise,
            _ => Linear,
        },
        Coll::Alltoallv => match id(ALLTOALLV) {
            2 => Pairwise,
            _ => Linear,
        },
        Coll::Barrier => match id(BARRIER) {
            3 | 5 => RecursiveDoubling,
            4 => Dissemination,
            6 => Tree,
            _ => Linear,
        },
        Coll::Bcast => match (id(BCAST), simgrid) {
            (1, _) => Linear,
            (2 | 3, false) => Pipeline { seg: 0 },
            (2 | 3, true) => Pipeline { seg: 128 * 1024 },
            (4 | 5, false) => BinaryTree { seg: 0 },
            (4, true) => BinaryTree { seg: 1024 },
            (5, true) => BinaryTree { seg: 8192 },
            (6, _) => Binomial,
            (7, _) => Knomial,
            (8, _) => ScatterAllgather,
            _ => ScatterRingAllgather,
        },
        Coll::Reduce => match (id(REDUCE), simgrid) {
            (2 | 3, _) => Pipeline { seg: 0 },
            (4 | 6, _) => BinaryTree { seg: 0 },
            (5, _) => Binomial,
            (7, false) => Rabenseifner,
            _ => Linear,
        },
        Coll::ReduceScatter => match (id(REDUCE_SCATTER), simgrid) {
            (1, true) => LinearReduceScatterv,
            (1, false) => ReduceScatterv,
            (2, _) | (4, false) => RecursiveHalving,
            _ => Ring,
        },
        Coll::Allgather => match id(ALLGATHER) {
            1 => Linear,
            2 => Bruck,
            4 => Ring,
            5 => Neighbor,
            _ => RecursiveDoubling,
        },
        Coll::Allgatherv => match id(ALLGATHERV) {
            1 => Linear,
            2 => Bruck,
            3 => Ring,
            4 => Neighbor,
            _ => RecursiveDoubling,
        },
        Coll::Gather => match id(GATHER) {
            2 => Binomial,
            _ => Linear,
        },
        Coll::Scatter => match id(SCATTER) {
            2 => Binomial,
            _ => Linear,
        },
        // OpenMPI's tuned component has no scan decision: coll/basic's linear one.
        Coll::Scan | Coll::Exscan => Linear,
    }
}

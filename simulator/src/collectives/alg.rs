//! The collectives with an algorithm choice and their algorithms, named
//! as SimGrid's `smpi/<coll>` options.

use serde::{Deserialize, Serialize};

/// A collective with an algorithm choice, named as SimGrid's `smpi/<coll>` options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Coll {
    /// `MPI_Barrier`.
    Barrier,
    /// `MPI_Bcast`.
    Bcast,
    /// `MPI_Reduce`.
    Reduce,
    /// `MPI_Allreduce`.
    Allreduce,
    /// `MPI_Gather(v)`.
    Gather,
    /// `MPI_Scatter(v)`.
    Scatter,
    /// `MPI_Allgather`.
    Allgather,
    /// `MPI_Allgatherv`.
    Allgatherv,
    /// `MPI_Alltoall`.
    Alltoall,
    /// `MPI_Alltoallv`.
    Alltoallv,
    /// `MPI_Reduce_scatter(_block)`.
    ReduceScatter,
    /// `MPI_Scan`.
    Scan,
    /// `MPI_Exscan`.
    Exscan,
}

impl Coll {
    /// Every collective, in [`Coll::name`] order of the docs.
    pub const ALL: [Coll; 13] = [
        Coll::Barrier,
        Coll::Bcast,
        Coll::Reduce,
        Coll::Allreduce,
        Coll::Gather,
        Coll::Scatter,
        Coll::Allgather,
        Coll::Allgatherv,
        Coll::Alltoall,
        Coll::Alltoallv,
        Coll::ReduceScatter,
        Coll::Scan,
        Coll::Exscan,
    ];

    /// SimGrid's option name (`smpi/<name>`), e.g. `"reduce_scatter"`.
    pub fn name(self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Bcast => "bcast",
            Coll::Reduce => "reduce",
            Coll::Allreduce => "allreduce",
            Coll::Gather => "gather",
            Coll::Scatter => "scatter",
            Coll::Allgather => "allgather",
            Coll::Allgatherv => "allgatherv",
            Coll::Alltoall => "alltoall",
            Coll::Alltoallv => "alltoallv",
            Coll::ReduceScatter => "reduce_scatter",
            Coll::Scan => "scan",
            Coll::Exscan => "exscan",
        }
    }

    /// The collective named `name` (see [`Coll::name`]).
    pub fn from_name(name: &str) -> Option<Coll> {
        Coll::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// A collective algorithm. Which collectives accept which algorithm, and
/// under which names, is [`alg_names`]'s table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Alg {
    /// Linear: everyone to/from the root (or everyone, in one round).
    Linear,
    /// Dissemination barrier (Bruck's barrier).
    Dissemination,
    /// Recursive doubling (barrier, allreduce, allgather, scan).
    RecursiveDoubling,
    /// Binomial fan-in then fan-out, 0 bytes (OpenMPI's tree barrier).
    Tree,
    /// Binomial tree.
    Binomial,
    /// Chain/pipeline with segments of `seg` bytes (0: unsegmented).
    Pipeline {
        /// Segment size, bytes.
        seg: u64,
    },
    /// Binary tree with segments of `seg` bytes (0: unsegmented).
    BinaryTree {
        /// Segment size, bytes.
        seg: u64,
    },
    /// k-nomial tree of radix 4.
    Knomial,
    /// Binomial scatter + recursive-doubling all-gather (van de Geijn).
    ScatterAllgather,
    /// Binomial scatter + ring all-gather (van de Geijn).
    ScatterRingAllgather,
    /// Rabenseifner: reduce-scatter by recursive halving + all-gather or gather.
    Rabenseifner,
    /// Ring; an all-reduce falls back to recursive doubling when
    /// count < ranks (OpenMPI).
    Ring,
    /// SimGrid's `lr` all-reduce: a ring, falling back to [`Alg::RedBcast`]
    /// when count < ranks.
    Lr,
    /// OpenMPI's segmented ring all-reduce, `seg` bytes (0: the plain
    /// ring); below `ranks × seg` it is the plain [`Alg::Ring`], or
    /// SimGrid's [`Alg::Lr`] when `simgrid` (SimGrid's `ompi_ring_segmented`).
    SegmentedRing {
        /// Segment size, bytes.
        seg: u64,
        /// Falls back as SimGrid's port does.
        simgrid: bool,
    },
    /// All-reduce as linear reduce to rank 0 + binomial bcast (SMPI's `default`).
    RedBcast,
    /// All-reduce as linear reduce + linear bcast (OpenMPI's `basic_linear`).
    BasicLinear,
    /// All-reduce as reduce + bcast, each chosen by the selector (OpenMPI's
    /// `nonoverlapping`, SimGrid's `redbcast`).
    Nonoverlapping,
    /// Bruck (allgather(v), alltoall).
    Bruck,
    /// Neighbor exchange all-gather.
    Neighbor,
    /// Pairwise exchange (alltoall(v), reduce_scatter).
    Pairwise,
    /// Reduce-scatter by recursive halving.
    RecursiveHalving,
    /// Reduce-scatter as binomial reduce to rank 0 + linear scatterv
    /// (Open MPI's `non-overlapping`, its reduce taken for binomial).
    ReduceScatterv,
    /// Reduce-scatter as linear reduce to rank 0 + linear scatterv
    /// (SimGrid's `reduce_scatter__default`: its default reduce is linear).
    LinearReduceScatterv,
}

/// Names accepted for each collective's algorithms (SimGrid's names first
/// where it has them); `pipeline`/`chain`/`binary_tree`/`segmented_ring`
/// also take `:<segment bytes>`.
pub fn alg_names(coll: Coll) -> &'static [(&'static str, Alg)] {
    use Alg::*;
    const SEG0P: Alg = Pipeline { seg: 0 };
    const SEG0B: Alg = BinaryTree { seg: 0 };
    match coll {
        Coll::Barrier => &[
            ("ompi_basic_linear", Linear),
            ("linear", Linear),
            ("default", Linear),
            ("ompi_bruck", Dissemination),
            ("bruck", Dissemination),
            ("dissemination", Dissemination),
            ("mpich", Dissemination),
            ("ompi_recursivedoubling", RecursiveDoubling),
            ("recursive_doubling", RecursiveDoubling),
            ("ompi_two_procs", RecursiveDoubling),
            ("ompi_tree", Tree),
            ("tree", Tree),
        ],
        Coll::Bcast => &[
            ("binomial_tree", Binomial),
            ("binomial", Binomial),
            ("default", Binomial),
            ("linear", Linear),
            ("basic_linear", Linear),
            ("NTSL", Linear),
            ("ompi_pipeline", Pipeline { seg: 128 * 1024 }),
            ("pipeline", SEG0P),
            ("chain", SEG0P),
            ("ompi_split_bintree", BinaryTree { seg: 1024 }),
            ("NTSB", BinaryTree { seg: 8192 }),
            ("binary_tree", SEG0B),
            ("split_binary_tree", SEG0B),
            ("mvapich2_knomial_intra_node", Knomial),
            ("knomial", Knomial),
            ("scatter_rdb_allgather", ScatterAllgather),
            ("scatter_allgather", ScatterAllgather),
            ("scatter_LR_allgather", ScatterRingAllgather),
            ("scatter_allgather_ring", ScatterRingAllgather),
        ],
        Coll::Reduce => &[
            ("ompi_binomial", Binomial),
            ("binomial", Binomial),
            ("mpich", Binomial),
            ("ompi_basic_linear", Linear),
            ("linear", Linear),
            ("default", Linear),
            ("ompi_chain", SEG0P),
            ("ompi_pipeline", SEG0P),
            ("chain", SEG0P),
            ("pipeline", SEG0P),
            ("ompi_binary", SEG0B),
            ("ompi_in_order_binary", SEG0B),
            ("binary", SEG0B),
            ("in-order_binary", SEG0B),
            ("rab", Rabenseifner),
            ("rabenseifner", Rabenseifner),
        ],
        Coll::Allreduce => &[
            ("rdb", RecursiveDoubling),
            ("recursive_doubling", RecursiveDoubling),
            ("default", RedBcast),
            ("redbcast", Nonoverlapping),
            ("basic_linear", BasicLinear),
            ("nonoverlapping", Nonoverlapping),
            ("lr", Lr),
            ("ring", Ring),
            ("ompi_ring_segmented", SegmentedRing { seg: 1 << 20, simgrid: true }),
            ("segmented_ring", SegmentedRing { seg: 0, simgrid: false }),
            ("rab_rdb", Rabenseifner),
            ("rabenseifner", Rabenseifner),
        ],
        Coll::Gather | Coll::Scatter => &[
            ("ompi_basic_linear", Linear),
            ("basic_linear", Linear),
            ("linear", Linear),
            ("default", Linear),
            ("ompi_linear_sync", Linear),
            ("linear_sync", Linear),
            ("ompi_binomial", Binomial),
            ("binomial", Binomial),
        ],
        Coll::Allgather | Coll::Allgatherv => &[
            ("ring", Ring),
            ("mpich_ring", Ring),
            ("default", Ring),
            ("rdb", RecursiveDoubling),
            ("recursive_doubling", RecursiveDoubling),
            ("pair", RecursiveDoubling),
            ("two_proc", RecursiveDoubling),
            ("bruck", Bruck),
            ("ompi_bruck", Bruck),
            ("ompi_neighborexchange", Neighbor),
            ("neighbor", Neighbor),
            ("NTSLR_NB", Linear),
            ("GB", Linear),
            ("linear", Linear),
        ],
        Coll::Alltoall | Coll::Alltoallv => &[
            ("pair", Pairwise),
            ("pairwise", Pairwise),
            ("ring", Pairwise),
            ("default", Pairwise),
            ("basic_linear", Linear),
            ("ompi_basic_linear", Linear),
            ("linear", Linear),
            ("linear_sync", Linear),
            ("bruck", Bruck),
            ("modified_bruck", Bruck),
        ],
        Coll::ReduceScatter => &[
            ("default", LinearReduceScatterv),
            ("non-overlapping", ReduceScatterv),
            ("ompi_basic_recursivehalving", RecursiveHalving),
            ("recursive_halving", RecursiveHalving),
            ("butterfly", RecursiveHalving),
            ("ompi_ring", Ring),
            ("ring", Ring),
            ("mpich_pair", Pairwise),
            ("pairwise", Pairwise),
        ],
        Coll::Scan | Coll::Exscan => &[
            ("default", Linear),
            ("linear", Linear),
            ("ompi_basic_linear", Linear),
            ("rdb", RecursiveDoubling),
            ("recursive_doubling", RecursiveDoubling),
            ("mpich", RecursiveDoubling),
        ],
    }
}

/// Parses an algorithm name for `coll`, with an optional `:<segment
/// bytes>` on segmented algorithms.
///
/// # Errors
/// A one-line message naming the collective and listing the valid names.
pub fn parse_alg(coll: Coll, name: &str) -> Result<Alg, crate::error::Invalid> {
    let (base, seg) = match name.split_once(':') {
        Some((b, s)) => (b, Some(s)),
        None => (name, None),
    };
    let table = alg_names(coll);
    let bad = || {
        let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        format!("unknown algorithm `{name}` for {} (valid: {})", coll.name(), names.join(", "))
    };
    let alg = table.iter().find(|(n, _)| *n == base).map(|(_, a)| *a).ok_or_else(bad)?;
    let Some(seg) = seg else { return Ok(alg) };
    let seg: u64 = seg.parse().map_err(|_| format!("segment size `{seg}` of `{name}` is not a byte count"))?;
    match alg {
        Alg::Pipeline { .. } => Ok(Alg::Pipeline { seg }),
        Alg::BinaryTree { .. } => Ok(Alg::BinaryTree { seg }),
        Alg::SegmentedRing { simgrid, .. } => Ok(Alg::SegmentedRing { seg, simgrid }),
        _ => Err(format!("algorithm `{base}` of {} takes no segment size", coll.name()).into()),
    }
}

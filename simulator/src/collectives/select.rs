//! Algorithm selection: SimGrid's `default` selector, MPICH 4.0's default
//! thresholds, OpenMPI 4.1's `coll_tuned_decision_fixed.c` tables
//! ([`super::ompi`]), and per-collective overrides by SimGrid's option
//! names.

use serde::{Deserialize, Serialize};

use super::alg::{parse_alg, Alg, Coll};

/// Which table picks an algorithm when no override is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selector {
    /// SimGrid 3.32's `default` selector (`smpi_default_selector.cpp`).
    Smpi,
    /// MPICH 4.0's `auto` choices with its default `MPIR_CVAR_*` thresholds.
    Mpich,
    /// OpenMPI 4.1's `coll_tuned_decision_fixed.c` (commutative operations),
    /// with OpenMPI's own algorithms.
    Ompi,
    /// SimGrid 3.32's `smpi/coll-selector:ompi`: the same tables as
    /// [`Selector::Ompi`], with the algorithms SimGrid substitutes for
    /// OpenMPI's (`smpi_openmpi_selector.cpp`).
    SimgridOmpi,
}

impl Selector {
    /// The name [`CollAlgs::preset`] takes for this selector (`smpi`,
    /// `mpich`, `ompi`, `simgrid-ompi`).
    pub fn name(self) -> &'static str {
        match self {
            Selector::Smpi => "smpi",
            Selector::Mpich => "mpich",
            Selector::Ompi => "ompi",
            Selector::SimgridOmpi => "simgrid-ompi",
        }
    }
}

/// Names of the selectors, for messages.
pub const SELECTORS: &str = "smpi (or default), mpich, ompi, simgrid-ompi";

/// The algorithm of each collective: a [`Selector`] plus per-collective
/// overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollAlgs {
    /// The table used for collectives without an override.
    pub selector: Selector,
    overrides: [Option<Alg>; 13],
}

impl Default for CollAlgs {
    fn default() -> Self {
        CollAlgs::mpich()
    }
}

impl CollAlgs {
    /// MPICH 4.0's choices (the default).
    pub fn mpich() -> CollAlgs {
        CollAlgs { selector: Selector::Mpich, overrides: [None; 13] }
    }

    /// SimGrid 3.32 SMPI's `default` selector.
    pub fn smpi() -> CollAlgs {
        CollAlgs { selector: Selector::Smpi, overrides: [None; 13] }
    }

    /// A selector by name: `mpich`, `ompi` (OpenMPI 4.1), `simgrid-ompi`
    /// (SimGrid's reading of it), or `smpi`/`default` (SimGrid's default).
    ///
    /// # Errors
    /// A one-line message listing the valid names.
    pub fn preset(name: &str) -> Result<CollAlgs, crate::error::Invalid> {
        let selector = match name {
            "mpich" => Selector::Mpich,
            "smpi" | "default" => Selector::Smpi,
            "ompi" => Selector::Ompi,
            "simgrid-ompi" => Selector::SimgridOmpi,
            _ => return Err(format!("unknown collective selector `{name}` (valid: {SELECTORS})").into()),
        };
        Ok(CollAlgs { selector, overrides: [None; 13] })
    }

    /// Overrides one collective by SimGrid's option name (`barrier`,
    /// `bcast`, `reduce`, `allreduce`, `gather`, `scatter`, `allgather`,
    /// `allgatherv`, `alltoall`, `alltoallv`, `reduce_scatter`, `scan`,
    /// `exscan`) and algorithm name ([`alg_names`](super::alg_names), as `smpi/<coll>:<alg>`).
    ///
    /// # Errors
    /// A one-line message for an unknown collective or algorithm, listing
    /// the valid names.
    pub fn set(&mut self, coll: &str, alg: &str) -> Result<(), crate::error::Invalid> {
        let Some(c) = Coll::from_name(coll) else {
            let names: Vec<&str> = Coll::ALL.iter().map(|c| c.name()).collect();
            return Err(format!("unknown collective `{coll}` (valid: {})", names.join(", ")).into());
        };
        self.overrides[c as usize] = Some(parse_alg(c, alg)?);
        Ok(())
    }

    /// The override of `coll`, if any.
    pub fn get(&self, coll: Coll) -> Option<Alg> {
        self.overrides[coll as usize]
    }

    /// The algorithm for `coll` on `n` ranks with the selector's size
    /// measure `bytes` (see [`super::CollCall::size_measure`]) and
    /// `count` elements of payload.
    pub fn pick(&self, coll: Coll, n: u32, bytes: u64, count: u64) -> Alg {
        if let Some(a) = self.get(coll) {
            return a;
        }
        match self.selector {
            Selector::Smpi => smpi(coll, n, bytes),
            Selector::Mpich => mpich(coll, n, bytes, count),
            Selector::Ompi => super::ompi::decide(coll, n, bytes, false),
            Selector::SimgridOmpi => super::ompi::decide(coll, n, bytes, true),
        }
    }
}

/// SimGrid 3.32's `default` selector (`smpi_default_selector.cpp`): its
/// all-gathers and `alltoallv` post every send and receive at once (the
/// nonblocking collectives' linear schedules), its `alltoall` is the
/// `ompi` selector's as SimGrid runs it.
fn smpi(coll: Coll, n: u32, bytes: u64) -> Alg {
    match coll {
        Coll::Barrier => Alg::Linear,
        Coll::Bcast => Alg::Binomial,
        Coll::Reduce => Alg::Linear,
        Coll::Allreduce => Alg::RedBcast,
        Coll::Gather | Coll::Scatter | Coll::Scan | Coll::Exscan => Alg::Linear,
        Coll::Allgather | Coll::Allgatherv | Coll::Alltoallv => Alg::Linear,
        Coll::Alltoall => super::ompi::decide(coll, n, bytes, true),
        Coll::ReduceScatter => Alg::LinearReduceScatterv,
    }
}

/// MPICH 4.0's `MPIR_*_intra_auto` with default CVARs:
/// `BCAST_SHORT_MSG_SIZE` 12288, `BCAST_LONG_MSG_SIZE` 524288,
/// `BCAST_MIN_PROCS` 8, `ALLREDUCE_SHORT_MSG_SIZE` 2048,
/// `REDUCE_SHORT_MSG_SIZE` 2048, `ALLGATHER_SHORT_MSG_SIZE` 81920,
/// `ALLGATHER_LONG_MSG_SIZE` 524288, `ALLTOALL_SHORT_MSG_SIZE` 256,
/// `ALLTOALL_MEDIUM_MSG_SIZE` 32768,
/// `REDUCE_SCATTER_COMMUTATIVE_LONG_MSG_SIZE` 524288. `bytes` is the
/// selector's size measure; MPICH compares all-gathers by their total,
/// `bytes × n`.
fn mpich(coll: Coll, n: u32, bytes: u64, count: u64) -> Alg {
    let pof2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 } as u64;
    match coll {
        Coll::Barrier => Alg::Dissemination,
        Coll::Bcast if bytes < 12288 || n < 8 => Alg::Binomial,
        Coll::Bcast if bytes < 524288 && n.is_power_of_two() => Alg::ScatterAllgather,
        Coll::Bcast => Alg::ScatterRingAllgather,
        Coll::Reduce if bytes > 2048 && count >= pof2 => Alg::Rabenseifner,
        Coll::Reduce => Alg::Binomial,
        Coll::Allreduce if bytes <= 2048 || count < pof2 => Alg::RecursiveDoubling,
        Coll::Allreduce => Alg::Rabenseifner,
        Coll::Gather | Coll::Scatter => Alg::Binomial,
        Coll::Allgather | Coll::Allgatherv if bytes * (n as u64) < 524288 && n.is_power_of_two() => Alg::RecursiveDoubling,
        Coll::Allgather | Coll::Allgatherv if bytes * (n as u64) < 81920 => Alg::Bruck,
        Coll::Allgather | Coll::Allgatherv => Alg::Ring,
        Coll::Alltoall if bytes <= 256 && n >= 8 => Alg::Bruck,
        Coll::Alltoall if bytes <= 32768 => Alg::Linear,
        Coll::Alltoall => Alg::Pairwise,
        Coll::Alltoallv => Alg::Linear,
        Coll::ReduceScatter if bytes < 524288 => Alg::RecursiveHalving,
        Coll::ReduceScatter => Alg::Pairwise,
        Coll::Scan | Coll::Exscan => Alg::RecursiveDoubling,
    }
}

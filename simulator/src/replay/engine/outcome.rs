//! What a replay hands back: per-rank totals and the run's outcome.

use super::{cpu, Timeline};

/// Per-rank totals.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RankStats {
    pub(crate) end_s: f64,
    pub(crate) compute_s: f64,
    pub(crate) comm_s: f64,
    pub(crate) wait_s: f64,
    pub(crate) actions: u64,
    pub(crate) messages: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) io_s: f64,
}

/// What a finished replay hands back.
pub(crate) struct Outcome {
    /// Host index and totals of each rank.
    pub(crate) ranks: Vec<(usize, RankStats)>,
    /// Actions replayed.
    pub(crate) actions: u64,
    /// Events popped from the queue.
    pub(crate) events: u64,
    /// The timeline, to be finished by the caller.
    pub(crate) timeline: Option<Timeline>,
    /// Joules per host over `[0, makespan]` (`None` for hosts without a
    /// power range); `None` when no host has one.
    pub(crate) energy_j: Option<Vec<Option<f64>>>,
    /// MPI-IO calls replayed as their recorded duration (no file system).
    pub(crate) io_recorded: u64,
    /// Each file-system server's bytes and busy times (empty without a file system).
    pub(crate) io_servers: Vec<crate::io::ServerStats>,
    /// In salvage mode, the ranks left waiting at the end and on what.
    pub(crate) stuck: Option<String>,
    /// The hosts given more ranks than cores.
    pub(crate) oversubscribed: Vec<cpu::Oversubscribed>,
}

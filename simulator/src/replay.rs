//! Discrete-event replay of per-rank action streams on a platform, in the
//! manner of SMPI's offline replay of time-independent traces (Desprez et
//! al., "Assessing the performance of MPI applications through
//! time-independent trace replay", PSTI 2011; Casanova et al., "Versatile,
//! scalable, and accurate simulation of distributed applications and
//! platforms", JPDC 2014).
//!
//! # Semantics
//! - **Time.** All ranks start at t = 0 (`Init` is a marker; the
//!   interposer records no compute before it). Actions of all ranks run in
//!   global simulated-time order, events ordered by `(time, seq)` with
//!   `f64::total_cmp`; scheduling into the past is an error.
//! - **Compute** `{seconds}` advances the rank by `seconds / speed_ratio`
//!   of its host.
//! - **Matching** follows MPI: per receiver and communicator, a receive
//!   matches the earliest-posted unmatched send from its source (any for
//!   `ANY_SOURCE`) with its tag (any for `ANY_TAG`); a send matches the
//!   earliest-posted matching receive. Messages between a pair on one
//!   communicator never overtake. "Earliest" is in simulated time.
//! - **Costs** are [`crate::network::P2pModel`]'s for `platform.p2p(src, dst)`,
//!   using the sender's size. Eager (`bytes < eager_threshold_bytes`): the
//!   sender is busy `send_overhead(bytes)` (`Send` and `Isend` alike);
//!   the message arrives at `send_start + transfer(bytes)`; the receive
//!   completes at `max(arrival, recv_post + recv_overhead(bytes))`.
//!   Rendezvous: both sides complete at
//!   `max(send_post, recv_post) + transfer(bytes)`; a blocking `Send`
//!   blocks until then, an `Isend` returns at once and its request
//!   completes then.
//! - **Requests** are per rank. `Wait`/`Waitall` block until the
//!   completion times of all their requests are known, then continue at
//!   `max(now, completions)`. Unknown or 0 handles (`MPI_REQUEST_NULL`)
//!   complete at once; a handle may be reused once completed.
//!   `Sendrecv` is `Isend` + `Irecv` + `Waitall` (either side may be
//!   `MPI_PROC_NULL`).
//! - **Collectives** (`Barrier`, `Bcast`, `Reduce`, `Allreduce`) run as
//!   point-to-point rounds ([`collectives`]) on a matching context of
//!   their own, so they never match user messages. Only `MPI_COMM_WORLD`
//!   (comm 0) is supported so far; another comm is an error naming the rank
//!   and the action.
//! - **Finalize** ends the rank; its end time is its clock there (or
//!   after its last action when there is no `Finalize`).
//! - **Deadlock**: when no event is left but some rank has not finished,
//!   the replay fails, listing up to four blocked ranks and what they wait for.
//!
//! # Accounting
//! Each rank's time splits into `compute_s + comm_s + wait_s = end_s`.
//! An eager send overhead is `comm_s`. A blocking wait (`Recv`, a
//! rendezvous `Send`, `Wait`, `Waitall`, `Sendrecv`, one collective round)
//! that lasts `w` seconds adds `min(w, d)` to `comm_s` and `w − min(w, d)`
//! to `wait_s`, where `d` is the longest model duration among the awaited
//! operations: `max(transfer, recv_overhead)` for an eager receive,
//! `transfer` for either side of a rendezvous, 0 for an eager send (its
//! overhead was already counted). So transfer time hidden behind compute
//! counts nowhere, a wait no longer than the transfer itself is all
//! communication, and anything longer is waiting for a late partner.

pub mod collectives;
mod engine;
mod matching;
mod queue;
pub mod report;

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use report::{RankReport, ReplayReport};

use crate::action::{Action, ComputeTime, TraceActions};
use crate::platform::{Mapping, Platform};
use crate::trace::{self, TraceError, TraceErrorKind};

/// A rank's actions, streamed: rank r of a replay is the r-th stream.
pub type ActionStream<'a, E> = Box<dyn Iterator<Item = Result<Action, E>> + 'a>;

/// Replays `streams` (one per world rank, in rank order) on `platform`.
///
/// Memory is bounded by the number of ranks and of in-flight messages and
/// requests, not by the length of the streams. Deterministic: the same
/// inputs give the same report (except `wall_clock_s`).
///
/// # Errors
/// [`ReplayError`]: a stream's own error ([`ReplayErrorKind::Stream`]), an
/// invalid or unsupported action, a platform whose explicit mapping does
/// not cover every rank, or a deadlock.
pub fn replay<'a, E>(platform: &Platform, streams: Vec<ActionStream<'a, E>>) -> Result<ReplayReport, ReplayError>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let started = Instant::now();
    if let Mapping::Explicit { hosts } = &platform.mapping {
        if hosts.len() < streams.len() {
            let what = format!("mapping.hosts places {} ranks but the trace has {}", hosts.len(), streams.len());
            return Err(ReplayError { rank: None, kind: ReplayErrorKind::Platform(what) });
        }
    }
    let out = engine::Engine::new(platform, streams).run()?;
    let ranks: Vec<RankReport> = out
        .ranks
        .into_iter()
        .enumerate()
        .map(|(r, (host, s))| RankReport {
            rank: r as u32,
            host: platform.hosts[host].name.clone(),
            end_s: s.end_s,
            compute_s: s.compute_s,
            comm_s: s.comm_s,
            wait_s: s.wait_s,
            actions: s.actions,
            messages: s.messages,
            bytes_sent: s.bytes_sent,
        })
        .collect();
    let makespan_s = ranks.iter().map(|r| r.end_s).fold(0.0, f64::max);
    Ok(ReplayReport {
        makespan_s,
        ranks,
        actions: out.actions,
        events: out.events,
        wall_clock_s: started.elapsed().as_secs_f64(),
    })
}

/// What the `<trace>` argument of `simulator replay` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceInput {
    /// A trace directory written by the interposer (`meta.json` + `rank-<r>.trace`).
    InterposerDir(PathBuf),
    /// A SimGrid time-independent trace list: a file naming one action
    /// file per rank (not supported yet).
    TiList(PathBuf),
}

impl TraceInput {
    /// Classifies `path`: a directory is an interposer trace, a regular
    /// file a SimGrid TI trace list.
    ///
    /// # Errors
    /// [`TraceError`] naming `path` when it does not exist or cannot be read.
    pub fn detect(path: &Path) -> Result<TraceInput, TraceError> {
        let meta = std::fs::metadata(path).map_err(|e| TraceError { path: path.into(), kind: e.into() })?;
        Ok(if meta.is_dir() { TraceInput::InterposerDir(path.into()) } else { TraceInput::TiList(path.into()) })
    }

    /// Opens and validates every rank's trace, then returns their action
    /// streams in rank order.
    ///
    /// # Errors
    /// [`ReplayError`] naming the first missing, truncated or corrupt file
    /// ([`ReplayErrorKind::Trace`]), or [`ReplayErrorKind::UnsupportedInput`]
    /// for a TI trace list.
    pub fn open(&self, compute: ComputeTime) -> Result<Vec<ActionStream<'static, TraceError>>, ReplayError> {
        match self {
            TraceInput::InterposerDir(dir) => {
                open_trace_dir(dir, compute).map_err(|e| ReplayError { rank: None, kind: ReplayErrorKind::Trace(e) })
            }
            TraceInput::TiList(path) => {
                Err(ReplayError { rank: None, kind: ReplayErrorKind::UnsupportedInput { path: path.clone() } })
            }
        }
    }
}

/// Opens an interposer trace directory: reads `meta.json`, checks every
/// rank file's whole structure and header before any replay starts, and
/// returns each rank's action stream.
///
/// # Errors
/// [`TraceError`] naming the first missing, truncated or corrupt file, or
/// a rank file whose header does not match its name and `meta.json`.
pub fn open_trace_dir(dir: &Path, compute: ComputeTime) -> Result<Vec<ActionStream<'static, TraceError>>, TraceError> {
    let (meta, ranks) = trace::open_dir(dir)?;
    let mut streams: Vec<ActionStream<'static, TraceError>> = Vec::with_capacity(ranks.len());
    for (r, t) in ranks.into_iter().enumerate() {
        if t.header.rank != r as u32 || t.header.ranks != meta.ranks {
            let what = format!(
                "header says rank {} of {}, expected rank {r} of {} (meta.json)",
                t.header.rank, t.header.ranks, meta.ranks
            );
            return Err(TraceError { path: t.path.clone(), kind: TraceErrorKind::Corrupt { at: 8, what } });
        }
        streams.push(Box::new(TraceActions::new(t, compute)?));
    }
    Ok(streams)
}

/// Why a replay failed; one line, starting with the rank when one is at fault.
#[derive(Debug)]
pub struct ReplayError {
    /// The rank at fault, if one is.
    pub rank: Option<u32>,
    /// What went wrong.
    pub kind: ReplayErrorKind,
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.rank {
            Some(r) => write!(f, "rank {r}: {}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

impl std::error::Error for ReplayError {}

/// What went wrong in a replay.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayErrorKind {
    /// A trace could not be opened (its message names the file).
    #[error("{0}")]
    Trace(TraceError),
    /// The `<trace>` is a kind of input not supported yet.
    #[error("SimGrid TI trace lists are not supported yet: {}", path.display())]
    UnsupportedInput {
        /// The input file.
        path: PathBuf,
    },
    /// A rank's action stream failed mid-replay (for a trace, the message
    /// names the file).
    #[error("{0}")]
    Stream(Box<dyn std::error::Error + Send + Sync>),
    /// A valid action this version cannot replay.
    #[error("{action}: {why}")]
    Unsupported {
        /// The action, as `Debug`.
        action: String,
        /// What is not supported.
        why: String,
    },
    /// An action that cannot be valid (peer or root out of range, negative time).
    #[error("{action}: {why}")]
    Invalid {
        /// The action, as `Debug`.
        action: String,
        /// What is wrong.
        why: String,
    },
    /// The platform does not fit the trace.
    #[error("platform: {0}")]
    Platform(String),
    /// No event is left but some ranks have not finished.
    #[error("deadlock: {blocked} of {ranks} ranks blocked with no event left: {detail}")]
    Deadlock {
        /// Ranks not finished.
        blocked: usize,
        /// All ranks.
        ranks: usize,
        /// Up to four blocked ranks: time, MPI call and unmatched operations.
        detail: String,
    },
    /// An event was scheduled before the current time (an engine bug).
    #[error("event at {at_s} s scheduled before the current time {now_s} s")]
    PastEvent {
        /// Current simulated time, seconds.
        now_s: f64,
        /// Requested time, seconds.
        at_s: f64,
    },
}

#[cfg(test)]
mod tests;

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
//!   of its host, times speed(recorded pstate) / speed(running pstate)
//!   when the host has pstates; `Flops {flops}` (SimGrid TI `compute`) by
//!   `flops / speed_flops` of its host (its running pstate's speed when it
//!   has pstates, [`crate::platform::Host::running_speed_flops`]).
//! - **Energy** ([`crate::energy`]): with power ranges for the running
//!   pstates, each host's power (SimGrid's `host_energy` rule, a core busy
//!   while one of its ranks computes) is integrated from 0 to the makespan.
//! - **DVFS** ([`crate::dvfs`], [`Platform::dvfs`]): pstates that change
//!   during the run (a host lowered while its ranks wait, regions at
//!   pstates of their own) change compute times, switch costs included,
//!   and the power integrated.
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
//!   completes then. With [`crate::platform::Smpi::async_small_thresh_bytes`] = `Some(k)`
//!   (SMPI's `smpi/async-small-thresh`), an eager message of at least k
//!   bytes also starts only at `max(send_post, recv_post)`.
//! - **Link sharing** ([`Platform::links`], from SimGrid cluster XML):
//!   transfers between different hosts that start at their match time
//!   share the hosts' up and down links max-min fairly, as in SimGrid's
//!   CM02/SMPI model ([`crate::network::FlowSharing`]), along the routes of
//!   its topology ([`crate::network::topology`]); they end when their
//!   bytes are through, and the matched requests complete then.
//! - **Requests** are per rank. `Wait`/`Waitall` block until the
//!   completion times of all their requests are known, then continue at
//!   `max(now, completions)`. Unknown or 0 handles (`MPI_REQUEST_NULL`)
//!   complete at once; a handle may be reused once completed.
//!   `Sendrecv` is `Isend` + `Irecv` + `Waitall` (either side may be
//!   `MPI_PROC_NULL`).
//! - **Collectives** (`Barrier`, `Bcast`, `Reduce`, `Allreduce`,
//!   `Alltoall(v)`, `Allgather(v)`, `Gather`, `Scatter(v)`,
//!   `ReduceScatter`, `Scan`) run as point-to-point rounds of the algorithm
//!   [`Platform::collectives`] picks ([`crate::collectives`]: selectors `mpich`, `ompi`,
//!   `simgrid-ompi`, `smpi`, and per-collective overrides), on a matching
//!   context of their own, so they never match user messages.
//! - **Communicators.** `CommCreate` actions (interposer traces of
//!   `MPI_Comm_dup`/`split`/`create`) define a rank's communicator ids; a
//!   collective on one runs among its members only, with communicator
//!   ranks mapped to world ranks and the root translated; point-to-point
//!   traffic on it matches in its own context. Ranks that number one
//!   communicator differently still meet (a communicator is known by its
//!   members and creation order). A collective on an id never created is
//!   an error naming the rank and the action. SimGrid's TI traces record
//!   no communicator: SimGrid replays every collective on
//!   `MPI_COMM_WORLD`, and so do we for them.
//! - **Persistent requests** (interposer traces): `MPI_Start`/`Startall`
//!   post the `Isend`/`Irecv` the `*_init` call described, under the same
//!   request, which a wait completes and the next start reuses
//!   ([`crate::action::RequestBook`]); `Ssend`/`Bsend`/`Rsend_init`
//!   map onto standard sends as their blocking forms do. `MPI_Mrecv`/
//!   `Imrecv` receive from the source and tag their `Mprobe` matched;
//!   `Waitsome`/`Testsome` wait for the requests that completed.
//!   `Cancel` withdraws a receive that no send matched yet (its request
//!   completes at once) and otherwise does nothing, as a failed cancel;
//!   sends are never cancelled. `Request_free` forgets the handle; the
//!   operation still completes.
//! - **Nonblocking collectives** (`Icoll`) run the blocking collective's
//!   schedule, on its context and in the same per-rank order of
//!   collectives, with asynchronous progress: round k + 1 is posted when
//!   round k completes, whether the rank computes or waits, and the
//!   request completes with the last round (a wait on it is
//!   communication up to the collective's span, waiting beyond). Posting
//!   costs the rank nothing. This is the overlap a progress thread or
//!   offloading NIC gives; an MPI library that progresses only inside MPI
//!   calls overlaps less (see `engine/nbc.rs`). SimGrid 3.32 aborts on
//!   these calls.
//! - **MPI-IO** is recorded, not simulated: each call replays as a compute
//!   block of its measured duration in region `MPI-IO`
//!   ([`crate::trace::IO_REGION`]), so it keeps its traced time
//!   (scaled by the host's speed ratio like any compute); the requests of
//!   `File_i*` complete at once.
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

pub(crate) mod cores;
mod engine;
mod flows;
mod input;
mod matching;
mod queue;
pub mod report;
pub mod runs;
pub mod timeline;

use std::path::PathBuf;
use std::time::Instant;

pub use input::{apply_speed_ratios, merged_runs, open_trace_dir, open_trace_dir_salvage, InputError, RatioTally, TraceInput};
pub use report::{HostReport, Oversubscribed, RankReport, RatioStats, ReplayReport};
pub use timeline::{Marks, Timeline};

use crate::action::Action;
use crate::collectives::ShmCounter;
use crate::limits;
use crate::platform::{Mapping, Platform};
use crate::ti::TiError;
use crate::trace::TraceError;

pub use crate::action::ActionStream;

/// Replays `streams` (one per world rank, in rank order) on `platform`:
/// `Replay::new(platform).run(streams)` ([`Replay`] adds a timeline and
/// OS-jitter injection).
///
/// # Errors
/// As [`Replay::run`].
pub fn replay<'a, E>(platform: &Platform, streams: Vec<ActionStream<'a, E>>) -> Result<ReplayReport, ReplayError>
where
    E: std::error::Error + Send + Sync + 'static,
{
    Replay::new(platform).run(streams)
}

/// OS-jitter injection into a replay: `(rank, start_s, duration_s)` →
/// the duration of a compute block, or of a send or receive overhead, once
/// stretched by the jitter it meets (see [`crate::jitter::compute_stretch`]).
/// Start times per rank are not always increasing (receive overheads).
pub type Stretch<'a> = Box<dyn FnMut(usize, f64, f64) -> f64 + 'a>;

/// Receives every replayed action with its simulated span:
/// `(rank, action, start_s, end_s)`, seconds of simulated time; the span
/// ends where the rank's next action starts (a blocking call's wait
/// included). Per rank in stream order; ranks interleave in simulated
/// time. A rank left waiting at the end of a salvage replay reports its
/// last action ending at its clock.
pub type ActionLog<'a> = Box<dyn FnMut(usize, &Action, f64, f64) + 'a>;

/// A replay of one platform, with its options; [`Replay::run`] runs it.
///
/// ```no_run
/// # use simulator::{platform::Platform, replay::{Replay, Timeline}};
/// # fn f(p: &Platform, streams: Vec<simulator::replay::ActionStream<'_, std::io::Error>>, t: Timeline) {
/// let report = Replay::new(p).timeline(t).run(streams);
/// # }
/// ```
pub struct Replay<'p, 'a> {
    platform: &'p Platform,
    timeline: Option<Timeline>,
    jitter: Option<Stretch<'a>>,
    salvage: bool,
    log: Option<ActionLog<'a>>,
    shm_counter: ShmCounter,
    bulk: bool,
    order_free: bool,
}

impl<'p, 'a> Replay<'p, 'a> {
    /// A replay on `platform` without timeline or jitter.
    pub fn new(platform: &'p Platform) -> Self {
        Replay {
            platform,
            timeline: None,
            jitter: None,
            salvage: false,
            log: None,
            shm_counter: ShmCounter::default(),
            bulk: true,
            order_free: false,
        }
    }

    /// With `free`, declares that the streams make no call whose outcome
    /// depends on the order in which the replay takes ranks at equal or
    /// nearby times ([`Action::order_sensitive`]: no `MPI_ANY_SOURCE`
    /// receive, `MPI_Cancel`, one-sided communication, MPI-IO or
    /// nonblocking collective; tests, probes and waits on a set replay
    /// their recorded outcome, as polls and waits on one request). Every
    /// other outcome is a function of the ranks' own times (a message is
    /// matched by source and tag in program order and ends from both post
    /// times), so a rank may then go on past the queue's next event, as
    /// long as it does not block, instead of waiting for its turn: one
    /// rank's consecutive actions run together, with its state in cache.
    /// The report is the same as without; only the events counted differ.
    /// The replay applies it only when nothing watches single transfers
    /// or times (no shared links or copy rate, jitter, timeline, action
    /// log, energy meter, salvage, oversubscribed host, file system or
    /// MPICH shared-memory collectives); a stream that then breaks the
    /// promise ends the replay with an error naming its rank and call.
    pub fn order_free(mut self, free: bool) -> Self {
        self.order_free = free;
        self
    }

    /// Runs every collective as events, round by round, never in bulk
    /// (the reference the bulk evaluation is tested against).
    #[cfg(test)]
    pub(crate) fn events_only(mut self) -> Self {
        self.bulk = false;
        self
    }

    /// Starts every world rank's count of MPICH's shared-memory eligible
    /// collectives at `counter` (default: none made yet;
    /// [`crate::collectives::shm`]): online mode replays one collective
    /// of a communicator that has had earlier ones.
    pub fn shm_counter(mut self, counter: ShmCounter) -> Self {
        self.shm_counter = counter;
        self
    }

    /// Hands every action and its simulated span to `log` ([`ActionLog`]),
    /// e.g. to write the simulated run as a trace.
    pub fn action_log(mut self, log: ActionLog<'a>) -> Self {
        self.log = Some(log);
        self
    }

    /// Replays streams that may stop early (salvaged rank files): ranks
    /// left waiting at the end, for a partner whose stream stopped, end
    /// where they wait instead of making the replay a deadlock, and
    /// [`ReplayReport::salvaged`] says which and on what.
    pub fn salvage(mut self) -> Self {
        self.salvage = true;
        self
    }

    /// Also writes every rank's compute blocks and blocking MPI calls to
    /// `timeline` ([`Timeline`]), which is finished at the end of the run.
    pub fn timeline(mut self, timeline: Timeline) -> Self {
        self.timeline = Some(timeline);
        self
    }

    /// Exposes every rank's compute blocks, eager-send overheads and
    /// eager-receive overheads to OS jitter through `jitter` (jitSim's
    /// work-conserving rule, Gioiosa et al., §3.4, from each rank's own
    /// trace offset). A receive overhead starts when the receive is
    /// posted, which can be earlier than the receiver's clock when the
    /// message arrives later (`Irecv`): `jitter` must accept start times
    /// out of order per rank ([`crate::jitter::compute_stretch`] does).
    pub fn jitter(mut self, jitter: Stretch<'a>) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// Runs the replay of `streams` (one per world rank, in rank order).
    ///
    /// Memory is bounded by the number of ranks and of in-flight messages
    /// and requests, not by the length of the streams. Deterministic: the
    /// same inputs give the same report (except `wall_clock_s`).
    ///
    /// # Errors
    /// [`ReplayError`]: a stream's own error ([`ReplayErrorKind::Stream`]),
    /// an invalid or unsupported action, a TI `compute` on a host without
    /// a speed, a platform whose explicit mapping does not cover every
    /// rank or that refuses oversubscription, a deadlock, or the
    /// timeline's I/O error ([`ReplayErrorKind::Timeline`]).
    pub fn run<E>(self, streams: Vec<ActionStream<'a, E>>) -> Result<ReplayReport, ReplayError>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let extras = Extras {
            timeline: self.timeline,
            jitter: self.jitter,
            salvage: self.salvage,
            log: self.log,
            shm_counter: self.shm_counter,
            bulk: self.bulk,
            order_free: self.order_free,
        };
        run(self.platform, streams, extras)
    }
}

/// What a [`Replay`] adds to the platform and streams.
struct Extras<'a> {
    timeline: Option<Timeline>,
    jitter: Option<Stretch<'a>>,
    salvage: bool,
    log: Option<ActionLog<'a>>,
    shm_counter: ShmCounter,
    bulk: bool,
    order_free: bool,
}

fn run<'a, E>(platform: &Platform, streams: Vec<ActionStream<'a, E>>, extras: Extras<'a>) -> Result<ReplayReport, ReplayError>
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
    let cores: u64 = platform.hosts.iter().map(|h| h.cores as u64).sum();
    if platform.no_oversubscription && streams.len() as u64 > cores {
        let what = format!("{} ranks but only {cores} cores on {} hosts", streams.len(), platform.hosts.len());
        return Err(ReplayError { rank: None, kind: ReplayErrorKind::Platform(what) });
    }
    let trimmed = platform.used_by(streams.len());
    let platform = trimmed.as_ref().unwrap_or(platform);
    let mut engine = engine::Engine::new(platform, streams);
    engine.timeline = extras.timeline;
    engine.jitter = extras.jitter;
    engine.salvage = extras.salvage;
    engine.log = extras.log;
    engine.shm.seed = extras.shm_counter;
    engine.allow_bulk = extras.bulk;
    engine.order_free = extras.order_free;
    let mut out = engine.run()?;
    if let Some(t) = out.timeline.take() {
        t.finish().map_err(|e| ReplayError { rank: None, kind: ReplayErrorKind::Timeline(e.to_string()) })?;
    }
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
            io_s: s.io_s,
        })
        .collect();
    let not_finite = |rank: Option<u32>, e| ReplayError { rank, kind: ReplayErrorKind::NotFinite(e) };
    for r in &ranks {
        for (what, x) in [
            ("end time", r.end_s),
            ("compute time", r.compute_s),
            ("communication time", r.comm_s),
            ("wait time", r.wait_s),
            ("I/O time", r.io_s),
        ] {
            limits::finite(what, x).map_err(|e| not_finite(Some(r.rank), e))?;
        }
    }
    let makespan_s = ranks.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let hosts = report::host_reports(platform, out.energy_j.as_deref());
    let energy_j = out.energy_j.map(|e| e.iter().flatten().sum());
    if let Some(e) = energy_j {
        limits::finite("energy", e).map_err(|e| not_finite(None, e))?;
    }
    let io_s = ranks.iter().map(|r| r.io_s).sum();
    Ok(ReplayReport {
        makespan_s,
        energy_j,
        hosts,
        ranks,
        actions: out.actions,
        events: out.events,
        wall_clock_s: started.elapsed().as_secs_f64(),
        speed_ratios: None,
        runs_makespan_s: None,
        median_run: None,
        io_s,
        io_servers: out.io_servers,
        io_recorded_calls: out.io_recorded,
        salvaged: out.stuck,
        oversubscribed: out
            .oversubscribed
            .iter()
            .map(|o| report::Oversubscribed {
                host: platform.hosts[o.host].name.clone(),
                ranks: o.ranks,
                cores: platform.hosts[o.host].cores,
                waiting_ranks: platform.waiting_ranks,
            })
            .collect(),
    })
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
    /// A SimGrid TI trace list or action file could not be opened.
    #[error("{0}")]
    Ti(TiError),
    /// The `<trace>` is a kind of input not supported.
    #[error("unsupported trace input: {}", path.display())]
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
    /// The timeline could not be written (the message names the file).
    #[error("timeline: {0}")]
    Timeline(String),
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
    /// Every rank finished but some sends were never received.
    #[error("unmatched: {count} sends never received: {detail}")]
    Unmatched {
        /// Sends left unmatched.
        count: usize,
        /// Up to three of them: mode, size, source, destination, tag, time.
        detail: String,
    },
    /// A result is not finite (a time, size or rate of the input too
    /// large for the model); the message names the result and the rank.
    #[error("{0}")]
    NotFinite(crate::error::Invalid),
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

//! Online mode (`INTERPOSER_MODE=online`): each rank keeps a virtual
//! clock ([`simulator::online::VirtualRank`]) on the platform of
//! `INTERPOSER_PLATFORM`, advanced by its measured compute blocks (thread
//! CPU time, never wall time, so oversubscribed runs predict the target's
//! time) and by the replay's communication model, while the trace is
//! recorded as in trace mode.
//!
//! The MPI side is C (`csrc/online.c`): shadow duplicates of each
//! communicator carry a companion message with the sender's virtual send
//! time right after each payload, an acknowledgement with the receiver's
//! post time back for rendezvous messages, and an allgather of entry times
//! for collectives (for a nonblocking collective, a nonblocking allgather
//! of post times posted with it and completed when its request is). It
//! calls the `ipr_online_*` hooks here, which keep the clock; only the
//! thread that called `MPI_Init` takes part. A wait that needs
//! acknowledgements or a nonblocking collective's post times is completed
//! only when the clock is next needed (`Deferred`), so the protocol
//! blocks only where the program does.
//!
//! At `MPI_Finalize`, rank 0 prints the predicted makespan on stderr and
//! writes `<INTERPOSER_OUT>/online.json` ([`OnlineReport`]).
//!
//! Failure: a missing or invalid platform gives one warning and the run
//! is traced only; calls the model does not cover cost no virtual time
//! (one warning at finalize, and listed in the report).
//!
//! Limits:
//! - Every call that moves a payload must send or take its companion
//!   (`csrc/online.h` has a macro per wrapped call; `MPI_Mrecv`/`Imrecv`
//!   take theirs with the source and tag their probe matched). A payload
//!   call without one would leave its receiver waiting for a companion.
//! - Completing a collective online needs every member's entry (post)
//!   time: a blocking collective, and the wait on a nonblocking one, wait
//!   for the last member to enter, as an MPI library may (the standard
//!   lets collective completion synchronize; a program that relies on a
//!   rooted collective completing early, e.g. the root's `MPI_Bcast`
//!   before a send its peers must receive before they join, can hang).
//! - Companions of messages with the same source, tag and communicator
//!   are taken in completion order: receives completed out of their
//!   matching order swap their send times (no hang). `MPI_Mrecv`s of two
//!   such messages probed in one order and received in the other swap
//!   them too, as the offline replay does (it matches each `Mrecv` as a
//!   receive from the probed source and tag, in receive order).
//! - Link sharing (SimGrid XML `flows`) is not modelled; one thread per
//!   rank (`MPI_THREAD_MULTIPLE` falls back to tracing).
//! - A program the model would deadlock on (a rendezvous cycle that only
//!   real eager buffering resolves) hangs, where offline replay reports
//!   the deadlock.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use simulator::action::Action;
use simulator::online::{Pending, VirtualRank, VirtualStats};

use crate::config::Config;
use crate::hooks::guard;
use crate::recorder::{self, warn};

/// Handles of `MPI_Sendrecv`'s two halves (never real request handles).
const SENDRECV_SEND: u64 = u64::MAX - 1;
const SENDRECV_RECV: u64 = u64::MAX - 2;
/// Handle of a blocking send (never a real request handle).
const BLOCKING_SEND: u64 = u64::MAX - 3;
/// Per-rank figures gathered at finalize: see [`ipr_online_stats`].
const STATS_LEN: usize = 6;

/// Where a request's companion or acknowledgement travels.
#[derive(Debug, Clone, Copy)]
struct Route {
    comm: u32,
    local: i32,
    tag: i32,
}

/// The online state of the rank (on the `MPI_Init` thread).
pub struct Online {
    clock: VirtualRank<'static>,
    rank: u32,
    out: PathBuf,
    platform: PathBuf,
    jitter: Option<PathBuf>,
    /// Per-region speed ratios (`INTERPOSER_SPEED_RATIOS`) and their file.
    ratios: Option<(ratios::RegionRatios, PathBuf)>,
    /// Call start (wall ticks) of the last compute block charged.
    charged: u64,
    routes: HashMap<u64, Route>,
    /// Members (world ranks in communicator rank order) per communicator id.
    members: HashMap<u32, Vec<u32>>,
    unmodelled: BTreeSet<&'static str>,
    deferred: Option<Deferred>,
    /// Nonblocking collectives posted, by request: the blocking action
    /// they stand for, their members (world ranks) and their MPI name.
    nbcs: HashMap<u64, Nbc>,
}

/// A nonblocking collective posted and not yet matched with its members' post times.
#[derive(Debug)]
struct Nbc {
    /// The blocking collective it stands for (root a world rank).
    action: Action,
    /// World ranks, in communicator rank order.
    members: Vec<u32>,
    /// Its MPI name, for the list of unmodelled calls.
    name: &'static str,
}

/// A wait that needs receivers' acknowledgements (rendezvous sends), kept
/// until the clock's value is next needed: waiting for them at once could
/// deadlock where the application does not (the receiver may be blocked
/// in a real MPI call that needs this rank to go on first).
#[derive(Debug, Default)]
struct Deferred {
    /// The requests of the wait.
    reqs: Vec<u64>,
    /// Rendezvous sends among them and where their acknowledgements come from.
    acks: std::collections::VecDeque<(u64, Route)>,
    /// Nonblocking collectives among them (their members' post times are
    /// taken from the shadow allgather posted with them).
    colls: std::collections::VecDeque<u64>,
    /// Compute blocks (seconds) charged after the wait, in order.
    computes: Vec<f64>,
}

thread_local! {
    static ONLINE: RefCell<Option<Online>> = const { RefCell::new(None) };
    /// Set while [`resolve`] waits for acknowledgements.
    static RESOLVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set while a receive's deferred work runs at a later call's entry
    /// (`csrc/online.c`, `ipr_online_run_later`): the block running then
    /// is not charged yet.
    static HOLD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

extern "C" {
    /// `csrc/online.c`: waits (progressing this rank's receives) for the
    /// acknowledgement from rank `local` of communicator `comm` with `tag`.
    fn ipr_online_await_ack(comm: u32, local: c_int, tag: c_int, recv_post: *mut f64) -> c_int;
    /// `csrc/online.c`: waits (progressing this rank's receives) for the
    /// post times of nonblocking collective `req`'s members, `n` of them,
    /// into `entries`; 0 when none were exchanged.
    fn ipr_online_await_coll(req: u64, entries: *mut f64, n: c_int) -> c_int;
}
static VIRTUAL_WTIME: AtomicBool = AtomicBool::new(false);
/// Set once a rank's online state is installed: spares trace mode's hot
/// path the thread-local lookup of [`charge`].
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The JSON report rank 0 writes at `MPI_Finalize` (`online.json`).
#[derive(Debug, Serialize)]
pub struct OnlineReport {
    /// Predicted run time on the platform: the latest rank's virtual
    /// `MPI_Finalize`, seconds.
    pub makespan_s: f64,
    /// Platform file the prediction is for.
    pub platform: String,
    /// Jitter trace injected, if any.
    pub jitter: Option<String>,
    /// Per-region speed ratio file applied, if any.
    pub speed_ratios: Option<String>,
    /// Per-rank virtual time, in rank order.
    pub ranks: Vec<RankOnline>,
    /// MPI calls that cost no virtual time on rank 0: collectives the
    /// replay cannot build from a trace record, or on a communicator
    /// without a shadow (an intercommunicator).
    pub unmodelled_calls: Vec<String>,
}

/// One rank's virtual time in [`OnlineReport`].
#[derive(Debug, Serialize)]
pub struct RankOnline {
    /// World rank.
    pub rank: u32,
    /// Virtual times, seconds, and point-to-point traffic.
    #[serde(flatten)]
    pub stats: VirtualStats,
}

/// Reads the platform (and jitter trace) of online mode for world rank
/// `rank` of `size`; `None` after one warning (rank 0) when the platform
/// cannot be used, so that the run is traced only.
pub fn prepare(cfg: &Config, rank: u32, size: u32) -> Option<Online> {
    let path = cfg.platform.clone()?;
    let fallback = |why: String| {
        if rank == 0 {
            warn(None, &format!("INTERPOSER_PLATFORM={}: {why}; online mode off, recording a trace only", path.display()));
        }
    };
    let (platform, extras) = match simulator::platform::load_any(&path, &[]) {
        Ok(p) => p,
        Err(e) => {
            fallback(e.what);
            return None;
        }
    };
    if let simulator::platform::Mapping::Explicit { hosts } = &platform.mapping {
        if hosts.len() < size as usize {
            fallback(format!("mapping.hosts places {} ranks but the run has {size}", hosts.len()));
            return None;
        }
    }
    if rank == 0 && extras.flows.is_some() {
        warn(None, "online mode does not model link sharing (the platform's flows); each transfer gets full bandwidth");
    }
    let mut clock = VirtualRank::new(platform, extras, rank);
    let mut jitter = None;
    if let Some(j) = &cfg.jitter {
        match simulator::jitter::load_tracks(j, None) {
            Ok((tracks, hz)) if !tracks.is_empty() => {
                // Lives as long as the process, as the clock that reads it.
                let tracks: &'static [_] = Box::leak(tracks.into_boxed_slice());
                let stretch = simulator::jitter::compute_stretch(tracks, hz, simulator::jitter::Mode::Unsync, size as usize, 1);
                clock = clock.with_jitter(stretch);
                jitter = Some(j.clone());
            }
            Ok(_) => fallback_jitter(rank, j, "no per-CPU trace"),
            Err(e) => fallback_jitter(rank, j, &e.to_string()),
        }
    }
    let ratios = cfg.speed_ratios.as_ref().and_then(|p| match ratios::RegionRatios::load(p) {
        Ok(r) => Some((r, p.clone())),
        Err(e) => {
            if rank == 0 {
                warn(None, &format!("INTERPOSER_SPEED_RATIOS: {e}; every region keeps ratio 1"));
            }
            None
        }
    });
    VIRTUAL_WTIME.store(cfg.virtual_wtime, Ordering::Relaxed);
    Some(Online {
        ratios,
        clock,
        rank,
        out: cfg.out.clone(),
        platform: path,
        jitter,
        charged: u64::MAX,
        routes: HashMap::new(),
        members: HashMap::new(),
        unmodelled: BTreeSet::new(),
        deferred: None,
        nbcs: HashMap::new(),
    })
}

fn fallback_jitter(rank: u32, path: &std::path::Path, why: &str) {
    if rank == 0 {
        warn(None, &format!("INTERPOSER_JITTER={}: {why}; no jitter injected", path.display()));
    }
}

/// Makes `online` this thread's state (the `MPI_Init` thread).
pub fn install(online: Online) {
    ONLINE.with(|o| *o.borrow_mut() = Some(online));
    INSTALLED.store(true, Ordering::Relaxed);
}

/// True once online mode runs on this process ([`install`]).
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Charges the compute block `cpu_ns` of region `region` (return
/// addresses of the calls before and after it) to the call that started at
/// `call_start` (wall ticks), once per call.
pub fn charge(cpu_ns: u64, call_start: u64, region: (u64, u64)) {
    if !INSTALLED.load(Ordering::Relaxed) {
        return;
    }
    let _ = ONLINE.try_with(|o| {
        if let Ok(mut slot) = o.try_borrow_mut() {
            if let Some(on) = slot.as_mut() {
                on.charge(cpu_ns, call_start, region);
            }
        }
    });
}

impl Online {
    fn charge(&mut self, cpu_ns: u64, call_start: u64, (prev, next): (u64, u64)) {
        if call_start != self.charged {
            self.charged = call_start;
            let ratio = self.ratios.as_mut().map_or(1.0, |(r, _)| r.ratio(prev, next));
            let s = cpu_ns as f64 * 1e-9 * ratio;
            match self.deferred.as_mut() {
                Some(d) => d.computes.push(s),
                None => self.clock.compute(s),
            }
        }
    }

    /// Waits for `reqs` now, or when some are rendezvous sends, as soon
    /// as the clock is next needed ([`Deferred`]).
    fn wait(&mut self, reqs: &[u64]) {
        let mut d = Deferred { reqs: reqs.to_vec(), ..Default::default() };
        for r in reqs {
            let route = self.routes.remove(r);
            match (self.clock.pending(*r), route) {
                (Pending::RendezvousSend, Some(route)) => d.acks.push_back((*r, route)),
                (Pending::Collective, _) => d.colls.push_back(*r),
                _ => {}
            }
        }
        if d.acks.is_empty() && d.colls.is_empty() {
            self.clock.wait(reqs);
        } else {
            self.deferred = Some(d);
        }
    }
}

impl Online {
    /// Fixes nonblocking collective `req`'s completion from its members'
    /// post times; a model error lists the call as unmodelled (the
    /// request then completes when waited, at no virtual cost).
    fn icoll_matched(&mut self, req: u64, nbc: &Nbc, entries: &[f64]) {
        if let Err(e) = self.clock.icoll_matched(req, &nbc.action, &nbc.members, entries) {
            if self.unmodelled.insert(nbc.name) {
                warn(Some(self.rank), &format!("online mode: {e}; it costs no virtual time"));
            }
        }
    }
}

fn with_state<T>(f: impl FnOnce(&mut Online) -> T) -> Option<T> {
    ONLINE.with(|o| {
        let mut slot = o.try_borrow_mut().ok()?;
        slot.as_mut().map(f)
    })
}

/// Completes a deferred wait: fetches each acknowledgement (the C side
/// progresses this rank's receives meanwhile, which re-enters here
/// without resolving), then waits and charges the compute since.
fn resolve() {
    RESOLVING.with(|r| r.set(true));
    while let Some((req, route)) = with_state(|on| on.deferred.as_mut().and_then(|d| d.acks.pop_front())).flatten() {
        let mut recv_post = 0.0;
        // SAFETY: a plain call into csrc/online.c with a live out-pointer.
        if unsafe { ipr_online_await_ack(route.comm, route.local, route.tag, &mut recv_post) } == 1 {
            with_state(|on| on.clock.send_matched(req, recv_post));
        }
    }
    while let Some(req) = with_state(|on| on.deferred.as_mut().and_then(|d| d.colls.pop_front())).flatten() {
        let Some(n) = with_state(|on| on.nbcs.get(&req).map(|c| c.members.len())).flatten() else { continue };
        let mut entries = vec![0.0; n];
        // SAFETY: a plain call into csrc/online.c with room for n doubles.
        let got = unsafe { ipr_online_await_coll(req, entries.as_mut_ptr(), n as c_int) } == 1;
        with_state(|on| {
            let Some(nbc) = on.nbcs.remove(&req) else { return };
            if got {
                on.icoll_matched(req, &nbc, &entries);
            }
        });
    }
    with_state(|on| {
        if let Some(d) = on.deferred.take() {
            on.clock.wait(&d.reqs);
            for c in d.computes {
                on.clock.compute(c);
            }
        }
    });
    RESOLVING.with(|r| r.set(false));
}

/// Runs `f` on this thread's online state as it is (no deferred wait
/// completed, no compute charged): for what does not read the clock.
fn peek<T>(default: T, f: impl FnOnce(&mut Online) -> T) -> T {
    guard(None, || with_state(f)).unwrap_or(default)
}

/// Runs `f` on this thread's online state after completing a deferred
/// wait and charging the current call's compute block; `default` on other
/// threads, when online mode is off, or after a panic (which disables
/// recording).
fn with<T>(default: T, f: impl FnOnce(&mut Online) -> T) -> T {
    let block = if HOLD.with(|h| h.get()) { None } else { recorder::current_block() };
    guard(None, || {
        if !RESOLVING.with(|r| r.get()) {
            resolve();
            if let Some((cpu, start, region)) = block {
                with_state(|on| on.charge(cpu, start, region));
            }
        }
        with_state(f)
    })
    .unwrap_or(default)
}

mod ffi;
mod ratios;

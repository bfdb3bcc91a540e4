//! Online mode (`INTERPOSER_MODE=online`): each rank keeps a virtual
//! clock ([`simulator::online::VirtualRank`]) on the platform of
//! `INTERPOSER_PLATFORM`, advanced by its measured compute blocks (thread
//! CPU time, never wall time, so oversubscribed runs predict the target's
//! time) and by the replay's communication model, while the trace is
//! recorded as in trace mode.
//!
//! The MPI side is C (`csrc/online.c`): it keeps two shadow duplicates
//! of each application communicator, on which a companion message with
//! the sender's virtual send time follows each payload, an
//! acknowledgement with the receiver's post time goes back for messages
//! the model sends by rendezvous, and the members' entry (post) times of
//! collectives are gathered. The hooks here only queue what the
//! application did (`pump::Ev`); the pump applies the queue to the
//! clock with nonblocking shadow operations at the entry of the rank's
//! next MPI call, so the application never waits for online mode's
//! traffic. Only the thread that called `MPI_Init` takes part.
//!
//! At `MPI_Finalize` every rank drains its queue. If it makes no progress
//! for `INTERPOSER_ONLINE_STALL_S` seconds (default 5), online mode says
//! once what it waits for, stops predicting, and the run goes on traced.
//! A virtual `MPI_Wtime` lets the pump run a moment and answers with what
//! the clock knows then (never stopping the prediction). Rank 0
//! then prints the predicted makespan on stderr and writes
//! `<INTERPOSER_OUT>/online.json` ([`OnlineReport`]), which says whether
//! the prediction is complete. `docs/online-protocol.md` gives the
//! argument that the protocol cannot deadlock.
//!
//! Failure: a missing or invalid platform gives one warning and the run
//! is traced only; calls the model does not cover cost no virtual time
//! (one warning at finalize, and listed in the report).
//!
//! Limits:
//! - Every call that moves a payload must queue its send or its
//!   receive's completion (`csrc/online.h` has a macro per wrapped call;
//!   `MPI_Mrecv`/`Imrecv` take their companion with the source and tag
//!   their probe matched). A payload call without one leaves its
//!   receiver's clock waiting, and the drain at finalize stalls.
//! - Completing a collective online needs every member's entry (post)
//!   time, as an MPI library may: the clock's collective waits for the
//!   last member (the application itself does not wait for it).
//! - Companions of messages with the same source, tag and communicator
//!   are taken in the order their receives' completions are reported:
//!   receives completed out of their matching order swap their send
//!   times. `MPI_Mrecv`s of two such messages probed in one order and
//!   received in the other swap them too, as the offline replay does.
//! - One-sided communication moves only the origin's clock (transfers
//!   and their completion at the next synchronization, as the replay
//!   charges them; fences and window creation as barriers): lock waits
//!   and PSCW notices are not modelled, and those calls are listed as
//!   unmodelled.
//! - Link sharing (SimGrid XML `flows`) is not modelled; one thread per
//!   rank (`MPI_THREAD_MULTIPLE` falls back to tracing).
//! - A program the model would deadlock on (a rendezvous cycle that only
//!   real eager buffering resolves) runs to its end; the drain at
//!   finalize stalls and the report says the prediction is incomplete,
//!   where offline replay reports the deadlock.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use simulator::action::Action;
use simulator::online::{FinalBlock, VirtualRank, VirtualStats};
use simulator::trace::Op as Call;

use crate::config::Config;
use crate::ffi::{guard, warn};
use crate::recorder;

/// Per-rank figures gathered at finalize: see [`ffi::ipr_online_stats`]
/// (`IPR_STATS` of `csrc/online.c`).
const STATS_LEN: usize = 14;
/// How long a virtual `MPI_Wtime` lets the pump go without progress: a
/// peer that can answer does so within a scheduler time slice or two.
const WTIME_WAIT: Duration = Duration::from_millis(20);
/// The clock's request ids start here, above any MPI request handle
/// (OpenMPI's are user-space addresses, MPICH's 32-bit integers), so a
/// stray handle never names one.
const FIRST_ID: u64 = 1 << 62;

/// The online state of the rank (on the `MPI_Init` thread).
pub struct Online {
    clock: VirtualRank<'static>,
    rank: u32,
    out: PathBuf,
    platform: PathBuf,
    jitter: Option<PathBuf>,
    /// Per-region speed ratios (`INTERPOSER_SPEED_RATIOS`) and their file.
    ratios: Option<(ratios::RegionRatios, PathBuf)>,
    /// Region names without ratios, when the DVFS policy has per-region
    /// pstates and no ratio file names the regions already.
    region_names: Option<ratios::RegionRatios>,
    /// The DVFS policy applied (`INTERPOSER_DVFS`), as given.
    dvfs: Option<String>,
    /// Call start (wall ticks) of the last compute block charged.
    charged: u64,
    /// Members (world ranks in communicator rank order) per shadow slot.
    members: HashMap<u32, Vec<u32>>,
    unmodelled: BTreeSet<&'static str>,
    /// Nonblocking collectives posted, by clock id: the blocking action
    /// they stand for, their members (world ranks) and their call.
    nbcs: HashMap<u64, Nbc>,
    /// Open files: the shadow slot of each file's communicator, by file id.
    files: HashMap<u32, u32>,
    /// What the pump has still to apply.
    work: pump::Work,
    /// The application's pending requests, by MPI handle: the clock id
    /// each stands for (a handle is reused once its request completed, an
    /// id never), and for a receive its shadow slot.
    posted: HashMap<u64, Posted>,
    next_id: u64,
    /// `INTERPOSER_ONLINE_STALL_S`: how long a drain may go without progress.
    stall_s: f64,
    /// Why online mode stopped predicting, once it did.
    stalled: Option<String>,
    /// [`pump::Work::progress`] when a virtual `MPI_Wtime` last waited
    /// [`WTIME_WAIT`] in vain: until the pump applies anything more, later
    /// calls do not wait again.
    wtime_stuck: Option<u64>,
    /// Virtual `MPI_Wtime` reads that waited [`WTIME_WAIT`] in vain.
    wtime_waits: u64,
}

/// A request of the application's as the clock knows it.
#[derive(Debug, Clone, Copy)]
struct Posted {
    id: u64,
    /// The shadow slot of a receive (its companion comes there).
    recv_slot: Option<u32>,
}

/// A nonblocking collective posted and not yet matched with its members' post times.
#[derive(Debug)]
struct Nbc {
    /// The blocking collective it stands for (root a world rank).
    action: Action,
    /// World ranks, in communicator rank order.
    members: Vec<u32>,
    /// The MPI call, for the list of unmodelled calls.
    call: Call,
}

thread_local! {
    static ONLINE: RefCell<Option<Online>> = const { RefCell::new(None) };
}

/// Nonzero while the pump has work: the C side then runs
/// `ipr_online_pump` at the entry of the next recorded call.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static ipr_online_work: AtomicI32 = AtomicI32::new(0);

static VIRTUAL_WTIME: AtomicBool = AtomicBool::new(false);
/// Set once a rank's online state is installed: spares trace mode's hot
/// path the thread-local lookup of [`charge`].
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The JSON report rank 0 writes at `MPI_Finalize` (`online.json`).
#[derive(Debug, Serialize)]
pub struct OnlineReport {
    /// Predicted run time on the platform: the latest rank's virtual
    /// `MPI_Finalize`, seconds (up to where the prediction stopped, when
    /// it is not complete).
    pub makespan_s: f64,
    /// False when a rank's online mode stalled and stopped predicting.
    pub complete: bool,
    /// Why the prediction is incomplete: each stalled rank's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete_reason: Option<String>,
    /// Platform file the prediction is for.
    pub platform: String,
    /// Jitter trace injected, if any.
    pub jitter: Option<String>,
    /// Per-region speed ratio file applied, if any.
    pub speed_ratios: Option<String>,
    /// DVFS policy applied (`INTERPOSER_DVFS`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dvfs: Option<String>,
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
    /// Reads of a virtual `MPI_Wtime` (`INTERPOSER_VIRTUAL_WTIME=1`) that
    /// let the pump wait its bound and found the clock still behind.
    pub wtime_waits: u64,
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
    let mut platform = match simulator::platform::Platform::load(&path) {
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
    if rank == 0 && platform.links.is_some() {
        warn(None, "online mode does not model link sharing (the platform's [links]); each transfer gets full bandwidth");
    }
    let dvfs = cfg.dvfs.as_ref().and_then(|spec| match simulator::dvfs::Dvfs::parse(spec).and_then(|d| d.check(&platform).map(|()| d)) {
        Ok(d) => {
            platform.dvfs = d;
            Some(spec.clone())
        }
        Err(e) => {
            if rank == 0 {
                warn(None, &format!("INTERPOSER_DVFS={spec}: {e}; online mode runs without it"));
            }
            None
        }
    });
    let region_names = (!platform.dvfs.regions.is_empty() && cfg.speed_ratios.is_none()).then(ratios::RegionRatios::names);
    let mut clock = VirtualRank::new(platform, rank).with_world(size);
    if rank == 0 && clock.core_share() < 1.0 {
        warn(
            None,
            &format!(
                "online mode: rank 0's host has more ranks than cores; its compute blocks get {:.3} of a core (waiting_ranks)",
                clock.core_share()
            ),
        );
    }
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
    ghost::arm(cfg, rank, size);
    Some(Online {
        ratios,
        region_names,
        dvfs,
        clock,
        rank,
        out: cfg.out.clone(),
        platform: path,
        jitter,
        charged: u64::MAX,
        members: HashMap::new(),
        unmodelled: BTreeSet::new(),
        nbcs: HashMap::new(),
        files: HashMap::new(),
        work: pump::Work::default(),
        posted: HashMap::new(),
        next_id: FIRST_ID,
        stall_s: cfg.stall_s,
        stalled: None,
        wtime_stuck: None,
        wtime_waits: 0,
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
            if let Some(on) = slot.as_mut().filter(|on| on.stalled.is_none()) {
                on.charge(cpu_ns, call_start, region);
                on.publish();
            }
        }
    });
}

impl Online {
    fn charge(&mut self, cpu_ns: u64, call_start: u64, (prev, next): (u64, u64)) {
        if call_start != self.charged {
            self.charged = call_start;
            let named = match self.ratios.as_mut() {
                Some((r, _)) => Some(r),
                None => self.region_names.as_mut(),
            };
            let (ratio, region) = named.map_or((1.0, None), |r| {
                let (x, id) = r.lookup(prev, next);
                (x, Some(id))
            });
            self.queue(pump::Ev::Compute(cpu_ns as f64 * 1e-9 * ratio, region));
        }
    }

    /// Appends `ev` to the pump's queue; stops online mode when the queue
    /// outgrows [`pump::MAX_QUEUE`].
    fn queue(&mut self, ev: pump::Ev) {
        if self.work.queue.len() >= pump::MAX_QUEUE {
            let why = format!("{} events wait behind this: {}", self.work.queue.len(), self.stuck_on());
            self.stall(why);
            return;
        }
        self.work.queue.push_back(ev);
    }

    /// A fresh clock id.
    fn fresh(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Application request `req` was posted: a fresh clock id for it.
    fn post(&mut self, req: u64, recv_slot: Option<u32>) -> u64 {
        let id = self.fresh();
        self.posted.insert(req, Posted { id, recv_slot });
        id
    }

    /// Tells the C side whether the pump has work.
    fn publish(&self) {
        ipr_online_work.store((!self.work.idle() && self.stalled.is_none()) as i32, Ordering::Relaxed);
    }

    /// Fixes nonblocking collective `id`'s completion from its members'
    /// post times; a model error lists the call as unmodelled (the
    /// request then completes when waited, at no virtual cost).
    fn icoll_matched(&mut self, id: u64, nbc: &Nbc, entries: &[f64], sizes: &[Vec<u64>]) {
        if let Err(e) = self.clock.icoll_matched_sized(id, &nbc.action, &nbc.members, entries, sizes) {
            if self.unmodelled.insert(nbc.call.mpi_name()) {
                warn(Some(self.rank), &format!("online mode: {e}; it costs no virtual time"));
            }
        }
    }

    /// Runs the pump until its queue is applied and its messages are in,
    /// during `call`. Returns false, after stopping online mode, when it
    /// goes [`Online::stall_s`] seconds without progress.
    fn drain(&mut self, call: &str) -> bool {
        if !self.pump_until(Duration::from_secs_f64(self.stall_s), pump::Work::idle) {
            let why = format!("in {call} for {} s, {}", self.stall_s, self.stuck_on());
            self.stall(why);
        }
        self.stalled.is_none()
    }

    /// Runs the pump until `done` holds of its work (true) or it goes
    /// `bound` without progress (false).
    fn pump_until(&mut self, bound: Duration, done: fn(&pump::Work) -> bool) -> bool {
        let mut last = Instant::now();
        while self.stalled.is_none() && !done(&self.work) {
            if self.pump() {
                last = Instant::now();
            } else if last.elapsed() >= bound {
                return false;
            } else {
                std::thread::yield_now();
            }
        }
        true
    }

    /// The virtual time now, for a virtual `MPI_Wtime`, seconds: the clock
    /// once the queue is applied (sends still in flight do not move it),
    /// the pump given at most [`WTIME_WAIT`] without progress; what is
    /// still queued then counts its compute blocks only. A peer blocked in
    /// MPI may answer only once this rank makes its next MPI call (a
    /// timing loop of one rank while the others wait in a collective), so
    /// after a wait in vain the next calls only try the pump once, until
    /// it applies anything again.
    fn virtual_now(&mut self) -> f64 {
        let stuck = self.wtime_stuck == Some(self.work.progress);
        let wait = if stuck { Duration::ZERO } else { WTIME_WAIT.min(Duration::from_secs_f64(self.stall_s)) };
        if !self.pump_until(wait, pump::Work::applied) {
            self.wtime_waits += u64::from(!stuck);
            self.wtime_stuck = Some(self.work.progress);
        }
        let queued: f64 = self.work.queue.iter().map(|e| if let pump::Ev::Compute(s, _) = e { *s } else { 0.0 }).sum();
        self.clock.now() + queued / self.clock.speed_ratio()
    }

    /// Stops predicting: says why once, drops the queue and cancels the
    /// shadow receives in flight. The trace goes on.
    fn stall(&mut self, why: String) {
        warn(
            Some(self.rank),
            &format!("online mode stalled: {why}; it stops predicting here (online.json says the prediction is incomplete), the application and its trace go on"),
        );
        self.stalled = Some(why);
        self.work = pump::Work::default();
        self.publish();
    }
}

impl Online {
    /// Rank 0's report from every rank's stats (`STATS_LEN` doubles each)
    /// and stall reasons (NUL-padded, equal lengths), rank order: prints
    /// the makespan and writes `online.json`.
    fn report(&self, all: &[f64], reasons: &[u8]) {
        let n = all.len() / STATS_LEN;
        // The final blocks of oversubscribed hosts' ranks, shared as the
        // replay shares them once ranks finalize.
        let finals: Vec<Option<FinalBlock>> = all
            .chunks(STATS_LEN)
            .map(|v| (v[9] != 0.0).then_some(FinalBlock { start_s: v[10], work_s: v[11], end_s: v[12], before_s: v[13] }))
            .collect();
        let clocks: Vec<f64> = all.chunks(STATS_LEN).map(|v| v[0]).collect();
        let ends = simulator::online::final_ends(self.clock.platform(), &finals, &clocks);
        let ranks: Vec<RankOnline> = all
            .chunks(STATS_LEN)
            .enumerate()
            .map(|(r, v)| RankOnline {
                rank: r as u32,
                stats: VirtualStats {
                    end_s: ends[r],
                    compute_s: v[1] + (ends[r] - v[0]),
                    comm_s: v[2],
                    wait_s: v[3],
                    messages: v[4] as u64,
                    bytes_sent: v[5] as u64,
                    io_s: v[7],
                },
                wtime_waits: v[8] as u64,
            })
            .collect();
        let stalled: Vec<String> = all
            .chunks(STATS_LEN)
            .zip(reasons.chunks(reasons.len() / n.max(1)))
            .enumerate()
            .filter(|(_, (v, _))| v[6] == 0.0)
            .map(|(r, (_, why))| {
                let why = String::from_utf8_lossy(why.split(|&b| b == 0).next().unwrap_or_default()).into_owned();
                format!("rank {r}: {}", if why.is_empty() { "no online state" } else { &why })
            })
            .collect();
        let report = OnlineReport {
            makespan_s: ranks.iter().map(|r| r.stats.end_s).fold(0.0, f64::max),
            complete: stalled.is_empty(),
            incomplete_reason: (!stalled.is_empty()).then(|| match stalled.len() {
                k if k > 4 => format!("{}; and {} more ranks", stalled[..4].join("; "), k - 4),
                _ => stalled.join("; "),
            }),
            platform: self.platform.display().to_string(),
            jitter: self.jitter.as_ref().map(|j| j.display().to_string()),
            speed_ratios: self.ratios.as_ref().map(|(_, p)| p.display().to_string()),
            dvfs: self.dvfs.clone(),
            ranks,
            unmodelled_calls: self.unmodelled.iter().map(|s| s.to_string()).collect(),
        };
        let partial = if report.complete { "" } else { " (incomplete: online mode stalled, see online.json)" };
        eprintln!("interposer: online prediction on {}: makespan {:.6} s{partial}", report.platform, report.makespan_s);
        if !report.unmodelled_calls.is_empty() {
            let calls = report.unmodelled_calls.join(", ");
            warn(None, &format!("online mode did not model {calls} (no virtual time charged; see online.json)"));
        }
        let path = self.out.join("online.json");
        let written =
            serde_json::to_vec_pretty(&report).map_err(|e| e.to_string()).and_then(|j| std::fs::write(&path, j).map_err(|e| e.to_string()));
        if let Err(e) = written {
            warn(Some(self.rank), &format!("cannot write {}: {e}", path.display()));
        }
    }
}

fn with_state<T>(f: impl FnOnce(&mut Online) -> T) -> Option<T> {
    ONLINE.with(|o| {
        let mut slot = o.try_borrow_mut().ok()?;
        slot.as_mut().map(f)
    })
}

/// Runs `f` on this thread's online state, unless online mode is off or
/// stopped on this thread, or `f` panicked (which disables recording);
/// first charges the current call's compute block, so that it enters the
/// queue before what the call does.
fn with<T>(default: T, f: impl FnOnce(&mut Online) -> T) -> T {
    let block = recorder::current_block();
    guard(None, || {
        with_state(|on| {
            if on.stalled.is_some() {
                return None;
            }
            if let Some((cpu, start, region)) = block {
                on.charge(cpu, start, region);
            }
            let out = f(on);
            on.publish();
            Some(out)
        })
        .flatten()
    })
    .unwrap_or(default)
}

mod ffi;
mod ghost;
mod pump;
mod ratios;
mod shadow;

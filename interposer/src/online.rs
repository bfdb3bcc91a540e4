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
//! for collectives. It calls the `ipr_online_*` hooks here, which keep the
//! clock; only the thread that called `MPI_Init` takes part. A wait that
//! needs acknowledgements is completed only when the clock is next needed
//! ([`Deferred`]), so the protocol blocks only where the program does.
//!
//! At `MPI_Finalize`, rank 0 prints the predicted makespan on stderr and
//! writes `<INTERPOSER_OUT>/online.json` ([`OnlineReport`]).
//!
//! Failure: a missing or invalid platform gives one warning and the run
//! is traced only; calls the model does not cover cost no virtual time
//! (one warning at finalize, and listed in the report).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use simulator::online::{Pending, SendPost, VirtualRank, VirtualStats};
use simulator::trace::{CallRecord, Op};

use crate::config::Config;
use crate::hooks::{guard, record_params, Params};
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
    /// Call start (wall ns) of the last compute block charged.
    charged: u64,
    routes: HashMap<u64, Route>,
    /// Members (world ranks in communicator rank order) per communicator id.
    members: HashMap<u32, Vec<u32>>,
    unmodelled: BTreeSet<&'static str>,
    deferred: Option<Deferred>,
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
    /// Compute blocks (seconds) charged after the wait, in order.
    computes: Vec<f64>,
}

thread_local! {
    static ONLINE: RefCell<Option<Online>> = const { RefCell::new(None) };
    /// Set while [`resolve`] waits for acknowledgements.
    static RESOLVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

extern "C" {
    /// `csrc/online.c`: waits (progressing this rank's receives) for the
    /// acknowledgement from rank `local` of communicator `comm` with `tag`.
    fn ipr_online_await_ack(comm: u32, local: c_int, tag: c_int, recv_post: *mut f64) -> c_int;
}
static VIRTUAL_WTIME: AtomicBool = AtomicBool::new(false);

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
    VIRTUAL_WTIME.store(cfg.virtual_wtime, Ordering::Relaxed);
    Some(Online {
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
}

/// Charges the compute block `cpu_ns` of the call that started at
/// `call_start` (wall ns), once per call.
pub fn charge(cpu_ns: u64, call_start: u64) {
    let _ = ONLINE.try_with(|o| {
        if let Ok(mut slot) = o.try_borrow_mut() {
            if let Some(on) = slot.as_mut() {
                on.charge(cpu_ns, call_start);
            }
        }
    });
}

impl Online {
    fn charge(&mut self, cpu_ns: u64, call_start: u64) {
        if call_start != self.charged {
            self.charged = call_start;
            let s = cpu_ns as f64 * 1e-9;
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
            if let (Pending::RendezvousSend, Some(route)) = (self.clock.pending(*r), route) {
                d.acks.push_back((*r, route));
            }
        }
        if d.acks.is_empty() {
            self.clock.wait(reqs);
        } else {
            self.deferred = Some(d);
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
    let block = recorder::current_block();
    guard(None, || {
        if !RESOLVING.with(|r| r.get()) {
            resolve();
            if let Some((cpu, start)) = block {
                with_state(|on| on.charge(cpu, start));
            }
        }
        with_state(f)
    })
    .unwrap_or(default)
}

/// 1 when this thread runs online mode (the C side then creates the shadow communicators).
#[no_mangle]
pub extern "C" fn ipr_online_enabled() -> c_int {
    with(0, |_| 1)
}

/// Registers the members of communicator `id` (world ranks, `n` of them).
///
/// # Safety
/// `members` points to `n` readable ints.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_comm(id: u32, members: *const c_int, n: c_int) {
    if members.is_null() || n <= 0 {
        return;
    }
    // SAFETY: the caller passes `n` ints.
    let m: Vec<u32> = unsafe { std::slice::from_raw_parts(members, n as usize) }.iter().map(|&r| r as u32).collect();
    with((), |on| {
        on.members.insert(id, m);
    })
}

/// The virtual clock now, seconds (charging the current call's compute block).
#[no_mangle]
pub extern "C" fn ipr_online_now() -> f64 {
    with(0.0, |on| on.clock.now())
}

/// Writes `v` to `out` unless null.
///
/// # Safety
/// `out` is null or points to a writable double.
unsafe fn put(out: *mut f64, v: f64) {
    // SAFETY: per the contract.
    if let Some(o) = unsafe { out.as_mut() } {
        *o = v;
    }
}

/// A blocking send of `bytes` to world rank `peer` (rank `local` of
/// communicator `comm`, tag `tag`) posted: writes its virtual post time
/// to `post`; returns 1 when the model sends it eagerly (a rendezvous one
/// completes when the receiver's acknowledgement is in, see [`Deferred`]).
///
/// # Safety
/// Out-pointers are null or point to writable locals.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_send(peer: i32, bytes: u64, comm: u32, local: i32, tag: i32, post: *mut f64) -> c_int {
    let s = with(SendPost { post_s: 0.0, eager: true }, |on| {
        on.routes.insert(BLOCKING_SEND, Route { comm, local, tag });
        let s = on.clock.isend(BLOCKING_SEND, peer as u32, bytes);
        on.wait(&[BLOCKING_SEND]);
        s
    });
    // SAFETY: per the contract.
    unsafe { put(post, s.post_s) };
    s.eager as c_int
}

/// A blocking receive matched a message of `bytes` from world rank `src`
/// sent at `send_post`: writes the receive's post time to `recv_post`;
/// returns 1 when eager (else the C side acknowledges with the post time).
///
/// # Safety
/// Out-pointers are null or point to writable locals.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_recv(src: i32, bytes: u64, send_post: f64, recv_post: *mut f64) -> c_int {
    let (p, eager) = with((0.0, true), |on| on.clock.recv(src as u32, bytes, send_post));
    // SAFETY: per the contract.
    unsafe { put(recv_post, p) };
    eager as c_int
}

/// A nonblocking send `req` of `bytes` to world rank `peer` (rank `local`
/// of communicator `comm`, tag `tag`) posted: as [`ipr_online_send`].
///
/// # Safety
/// Out-pointers are null or point to writable locals.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_isend(req: u64, peer: i32, bytes: u64, comm: u32, local: i32, tag: i32, post: *mut f64) -> c_int {
    let s = with(SendPost { post_s: 0.0, eager: true }, |on| {
        on.routes.insert(req, Route { comm, local, tag });
        on.clock.isend(req, peer as u32, bytes)
    });
    // SAFETY: per the contract.
    unsafe { put(post, s.post_s) };
    s.eager as c_int
}

/// A nonblocking receive `req` on communicator `comm` posted.
#[no_mangle]
pub extern "C" fn ipr_online_irecv(req: u64, comm: u32) {
    with((), |on| {
        on.routes.insert(req, Route { comm, local: -1, tag: -1 });
        on.clock.irecv(req);
    })
}

/// What completed request `req` needs: 0 nothing, 1 the sender's
/// companion, 2 the receiver's acknowledgement (a rendezvous send). Writes
/// its communicator id, and for a send the peer's rank in it and the tag.
///
/// # Safety
/// Out-pointers are null or point to writable locals.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_pending(req: u64, comm: *mut u32, local: *mut c_int, tag: *mut c_int) -> c_int {
    peek(0, |on| {
        let kind = match on.clock.pending(req) {
            Pending::None => 0,
            Pending::Recv => 1,
            Pending::RendezvousSend => 2,
        };
        let r = on.routes.get(&req).copied().unwrap_or(Route { comm: 0, local: -1, tag: -1 });
        // SAFETY: per the contract.
        unsafe {
            if let Some(c) = comm.as_mut() {
                *c = r.comm;
            }
            if let Some(l) = local.as_mut() {
                *l = r.local;
            }
            if let Some(t) = tag.as_mut() {
                *t = r.tag;
            }
        }
        kind
    })
}

/// Receive `req` matched a message of `bytes` from world rank `src` sent
/// at `send_post`: as [`ipr_online_recv`], without waiting yet.
///
/// # Safety
/// Out-pointers are null or point to writable locals.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_recv_matched(req: u64, src: i32, bytes: u64, send_post: f64, recv_post: *mut f64) -> c_int {
    let (p, eager) = peek(None, |on| on.clock.recv_matched(req, src as u32, bytes, send_post)).unwrap_or((0.0, true));
    // SAFETY: per the contract.
    unsafe { put(recv_post, p) };
    eager as c_int
}

/// Writes up to `cap` pending nonblocking receives of the application
/// (handles and communicator ids); returns how many.
///
/// # Safety
/// `handles` and `comms` point to `cap` writable values.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_recvs(handles: *mut u64, comms: *mut u32, cap: u64) -> u64 {
    if handles.is_null() || comms.is_null() {
        return 0;
    }
    peek(0, |on| {
        let mut n = 0;
        for (&req, r) in &on.routes {
            if n == cap {
                break;
            }
            if req < BLOCKING_SEND && on.clock.pending(req) == Pending::Recv {
                // SAFETY: n < cap, per the contract.
                unsafe {
                    *handles.add(n as usize) = req;
                    *comms.add(n as usize) = r.comm;
                }
                n += 1;
            }
        }
        n
    })
}

/// Requests `reqs[0..n]` completed (a wait, or a test that succeeded).
///
/// # Safety
/// `reqs` points to `n` readable values.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_wait(reqs: *const u64, n: u64) {
    let list: &[u64] = if reqs.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: the caller passes `n` values.
        unsafe { std::slice::from_raw_parts(reqs, n as usize) }
    };
    with((), |on| on.wait(list))
}

/// `MPI_Sendrecv`'s two halves posted: a send of `bytes` to world rank
/// `dst` (rank `local` of communicator `comm`, tag `tag`; none when `dst`
/// is negative), then a receive (none when `src` < 0). Writes the send's
/// post time; returns 1 when eager (or no send).
///
/// # Safety
/// Out-pointers are null or point to writable locals.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_sendrecv(dst: i32, bytes: u64, src: i32, comm: u32, local: i32, tag: i32, post: *mut f64) -> c_int {
    let s = with(SendPost { post_s: 0.0, eager: true }, |on| {
        let mut s = SendPost { post_s: 0.0, eager: true };
        if dst >= 0 {
            on.routes.insert(SENDRECV_SEND, Route { comm, local, tag });
            s = on.clock.isend(SENDRECV_SEND, dst as u32, bytes);
        }
        if src >= 0 {
            on.clock.irecv(SENDRECV_RECV);
        }
        s
    });
    // SAFETY: per the contract.
    unsafe { put(post, s.post_s) };
    s.eager as c_int
}

/// `MPI_Sendrecv`'s receive matched (see [`ipr_online_recv_matched`]).
///
/// # Safety
/// Out-pointers are null or point to writable locals.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_sendrecv_recv(src: i32, bytes: u64, send_post: f64, recv_post: *mut f64) -> c_int {
    // SAFETY: per the contract.
    unsafe { ipr_online_recv_matched(SENDRECV_RECV, src, bytes, send_post, recv_post) }
}

/// `MPI_Sendrecv` waits for both halves.
#[no_mangle]
pub extern "C" fn ipr_online_sendrecv_end() {
    with((), |on| on.wait(&[SENDRECV_SEND, SENDRECV_RECV]))
}

/// A collective `op` with parameters `p` (as the trace records them) whose
/// members entered at the virtual times `entries[0..n]` (communicator rank
/// order) exits at the model's time.
///
/// # Safety
/// `p` points to a valid `struct ipr_params`; `entries` to `n` doubles.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_coll(op: c_int, p: *const Params, entries: *const f64, n: c_int) {
    // SAFETY: the C wrapper passes its live parameter struct and array.
    let (Some(p), false) = (unsafe { p.as_ref() }.copied(), entries.is_null() || n <= 0) else { return };
    // SAFETY: as above.
    let entries = unsafe { std::slice::from_raw_parts(entries, n as usize) }.to_vec();
    with((), |on| {
        let Some(code) = Op::from_code(op as u8) else { return };
        let params = record_params(code, &p, &mut Vec::new());
        let rec = CallRecord { op: code, failed: false, caller: 0, compute_cpu_ns: 0, compute_wall_ns: 0, t_start_ns: 0, t_end_ns: 0, params };
        let Ok(Some(action)) = simulator::action::op_action(&rec) else {
            on.unmodelled.insert(code.mpi_name());
            return;
        };
        let members = match on.members.get(&p.comm) {
            Some(m) if m.len() == entries.len() => m.clone(),
            _ => {
                on.unmodelled.insert(code.mpi_name());
                return;
            }
        };
        if let Err(e) = on.clock.collective(&action, &members, &entries) {
            if on.unmodelled.insert(code.mpi_name()) {
                warn(Some(on.rank), &format!("online mode: {e}; it costs no virtual time"));
            }
        }
    })
}

/// Writes this rank's figures, `STATS_LEN` doubles: end, compute, comm,
/// wait (seconds), messages, bytes sent.
///
/// # Safety
/// `out` points to 6 writable doubles.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_stats(out: *mut f64) {
    if out.is_null() {
        return;
    }
    let s = with(VirtualStats::default(), |on| on.clock.stats());
    let v = [s.end_s, s.compute_s, s.comm_s, s.wait_s, s.messages as f64, s.bytes_sent as f64];
    // SAFETY: the caller passes room for STATS_LEN doubles.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out, STATS_LEN) };
}

/// Rank 0 at `MPI_Finalize`: from every rank's [`ipr_online_stats`]
/// (`n` ranks, rank order), prints the predicted makespan and writes
/// `online.json`.
///
/// # Safety
/// `all` points to `n × 6` doubles.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_report(all: *const f64, n: c_int) {
    if all.is_null() || n <= 0 {
        return;
    }
    // SAFETY: the caller passes n × STATS_LEN doubles.
    let all = unsafe { std::slice::from_raw_parts(all, n as usize * STATS_LEN) };
    with((), |on| {
        let ranks: Vec<RankOnline> = all
            .chunks(STATS_LEN)
            .enumerate()
            .map(|(r, v)| RankOnline {
                rank: r as u32,
                stats: VirtualStats { end_s: v[0], compute_s: v[1], comm_s: v[2], wait_s: v[3], messages: v[4] as u64, bytes_sent: v[5] as u64 },
            })
            .collect();
        let report = OnlineReport {
            makespan_s: ranks.iter().map(|r| r.stats.end_s).fold(0.0, f64::max),
            platform: on.platform.display().to_string(),
            jitter: on.jitter.as_ref().map(|j| j.display().to_string()),
            ranks,
            unmodelled_calls: on.unmodelled.iter().map(|s| s.to_string()).collect(),
        };
        eprintln!("interposer: online prediction on {}: makespan {:.6} s", report.platform, report.makespan_s);
        if !report.unmodelled_calls.is_empty() {
            let calls = report.unmodelled_calls.join(", ");
            warn(None, &format!("online mode did not model {calls} (no virtual time charged; see online.json)"));
        }
        let path = on.out.join("online.json");
        let written = serde_json::to_vec_pretty(&report)
            .map_err(|e| e.to_string())
            .and_then(|j| std::fs::write(&path, j).map_err(|e| e.to_string()));
        if let Err(e) = written {
            warn(Some(on.rank), &format!("cannot write {}: {e}", path.display()));
        }
    })
}

/// `MPI_Wtime`: virtual time when `INTERPOSER_VIRTUAL_WTIME=1` in online
/// mode (the clock plus the compute block running now), else `real`.
#[no_mangle]
pub extern "C" fn ipr_online_wtime(real: f64) -> f64 {
    if !VIRTUAL_WTIME.load(Ordering::Relaxed) {
        return real;
    }
    let running = recorder::cpu_since_last_call_ns() as f64 * 1e-9;
    guard(None, || ONLINE.with(|o| o.try_borrow().ok()?.as_ref().map(|on| on.clock.now() + running / on.clock.speed_ratio())))
        .unwrap_or(real)
}

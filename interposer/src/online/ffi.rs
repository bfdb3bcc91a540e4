//! The `extern "C"` hooks `csrc/online.c` calls: thin shells over the
//! rank's [`super::Online`] state, never panicking across FFI.

use std::ffi::c_int;
use std::sync::atomic::Ordering;

use simulator::online::{Pending, SendPost, VirtualStats};
use simulator::action::Action;
use simulator::trace::{CallRecord, Op};

use super::{peek, with, Nbc, OnlineReport, RankOnline, Route, BLOCKING_SEND, ONLINE, SENDRECV_RECV, SENDRECV_SEND, STATS_LEN, VIRTUAL_WTIME};
use crate::hooks::{guard, record_params, Params};
use crate::recorder::{self, warn};

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
/// companion, 2 the receiver's acknowledgement (a rendezvous send), 3 its
/// members' post times (a nonblocking collective). Writes
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
            Pending::Collective => 3,
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

/// The replay action of collective `op` with parameters `p` (as the
/// trace records them) and scratch list `list` (the v-collectives' byte
/// counts) on a communicator of `n` members: the blocking collective a
/// nonblocking one stands for; `MPI_(I)reduce_scatter_block` as a
/// reduce-scatter of `n` equal blocks (as [`simulator::trace::actions`]
/// replays it). `None` when the online clock cannot run it (a
/// neighbourhood collective, or a call the replay does not represent).
fn coll_action(op: Op, p: &Params, list: &mut Vec<u64>, n: usize) -> Option<Action> {
    let action = match op {
        Op::ReduceScatterBlock | Op::IreduceScatterBlock => Action::ReduceScatter { recv_bytes: vec![p.bytes; n], comm: p.comm },
        _ => {
            let params = record_params(op, p, list);
            let rec = CallRecord { op, failed: false, caller: 0, compute_cpu_ns: 0, compute_wall_ns: 0, counters: None, t_start_ns: 0, t_end_ns: 0, params };
            match simulator::action::op_action(&rec) {
                Ok(Some(Action::Icoll { coll, .. })) => *coll,
                Ok(Some(a)) => a,
                _ => return None,
            }
        }
    };
    (!matches!(action, Action::Neighbor { .. })).then_some(action)
}

/// Copies the C side's `list[0..nlist]` (empty when null).
///
/// # Safety
/// `list` is null or points to `nlist` readable values.
unsafe fn scratch_list(list: *const u64, nlist: u64) -> Vec<u64> {
    match list.is_null() {
        true => Vec::new(),
        // SAFETY: per the contract.
        false => unsafe { std::slice::from_raw_parts(list, nlist as usize) }.to_vec(),
    }
}

/// A collective `op` with parameters `p` (as the trace records them) whose
/// members entered at the virtual times `entries[0..n]` (communicator rank
/// order) exits at the model's time. `list[0..nlist]` is the call's
/// scratch list (the v-collectives' byte counts; null and 0 for others).
///
/// # Safety
/// `p` points to a valid `struct ipr_params`; `entries` to `n` doubles;
/// `list` to `nlist` values unless null.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_coll(op: c_int, p: *const Params, entries: *const f64, n: c_int, list: *const u64, nlist: u64) {
    // SAFETY: the C wrapper passes its live parameter struct and array.
    let (Some(p), false) = (unsafe { p.as_ref() }.copied(), entries.is_null() || n <= 0) else { return };
    // SAFETY: as above.
    let entries = unsafe { std::slice::from_raw_parts(entries, n as usize) }.to_vec();
    // SAFETY: per the contract.
    let mut list = unsafe { scratch_list(list, nlist) };
    with((), |on| {
        let Some(code) = Op::from_code(op as u8) else { return };
        let members = match on.members.get(&p.comm) {
            Some(m) if m.len() == entries.len() => m.clone(),
            _ => {
                on.unmodelled.insert(code.mpi_name());
                return;
            }
        };
        let Some(action) = coll_action(code, &p, &mut list, members.len()) else {
            on.unmodelled.insert(code.mpi_name());
            return;
        };
        if let Err(e) = on.clock.collective(&action, &members, &entries) {
            if on.unmodelled.insert(code.mpi_name()) {
                warn(Some(on.rank), &format!("online mode: {e}; it costs no virtual time"));
            }
        }
    })
}

/// A nonblocking collective `op` with parameters `p` (its request in
/// `p.request`) and scratch list `list[0..nlist]` was posted: when the
/// clock can model it, registers it, writes its virtual post time to
/// `post` and returns its number of members, whose post times the C side
/// then gathers (without blocking) for [`super::resolve`]; else lists it
/// as unmodelled and returns 0.
///
/// # Safety
/// `p` points to a valid `struct ipr_params`; `list` to `nlist` values
/// unless null; `post` is null or points to a writable double.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_icoll(op: c_int, p: *const Params, list: *const u64, nlist: u64, post: *mut f64) -> c_int {
    // SAFETY: the C wrapper passes its live parameter struct.
    let Some(p) = unsafe { p.as_ref() }.copied() else { return 0 };
    // SAFETY: per the contract.
    let mut list = unsafe { scratch_list(list, nlist) };
    let (n, t) = with((0, 0.0), |on| {
        let Some(code) = Op::from_code(op as u8) else { return (0, 0.0) };
        let members = on.members.get(&p.comm).cloned();
        let action = members.as_ref().and_then(|m| coll_action(code, &p, &mut list, m.len()));
        let (Some(members), Some(action), true) = (members, action, p.request != 0) else {
            on.unmodelled.insert(code.mpi_name());
            return (0, 0.0);
        };
        let n = members.len() as c_int;
        on.nbcs.insert(p.request, Nbc { action, members, name: code.mpi_name() });
        (n, on.clock.icoll(p.request))
    });
    // SAFETY: per the contract.
    unsafe { put(post, t) };
    n
}

/// Call `op` costs no virtual time (a collective on a communicator
/// without a shadow): lists it in the report.
#[no_mangle]
pub extern "C" fn ipr_online_unmodelled(op: c_int) {
    peek((), |on| {
        if let Some(code) = Op::from_code(op as u8) {
            on.unmodelled.insert(code.mpi_name());
        }
    })
}

/// `MPI_Request_free(req)`: a receive or nonblocking collective still
/// pending is forgotten (it completes unseen, as in the replay); returns
/// 1 for a nonblocking collective, whose shadow exchange the C side then
/// completes at finalize.
#[no_mangle]
pub extern "C" fn ipr_online_request_free(req: u64) -> c_int {
    peek(0, |on| match on.clock.pending(req) {
        Pending::Recv | Pending::Collective => {
            on.routes.remove(&req);
            let coll = on.nbcs.remove(&req).is_some();
            // Not complete: forgetting it moves no clock.
            on.clock.wait(&[req]);
            coll as c_int
        }
        _ => 0,
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
            speed_ratios: on.ratios.as_ref().map(|(_, p)| p.display().to_string()),
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

/// Holds back (`on` nonzero) or releases the charging of the running
/// compute block while a blocking receive's deferred online work runs at
/// a later call's entry (`csrc/online.c`, `ipr_online_run_later`).
#[no_mangle]
pub extern "C" fn ipr_online_hold(on: c_int) {
    super::HOLD.with(|h| h.set(on != 0));
}

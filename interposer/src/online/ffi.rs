//! The `extern "C"` hooks `csrc/online.c` calls: thin shells that queue
//! what the application did on the rank's [`super::Online`] state, never
//! blocking and never panicking across FFI.

use std::ffi::{c_char, c_int};
use std::sync::atomic::Ordering;

use simulator::action::{Action, IoCall, RmaCall};
use simulator::online::VirtualStats;
use simulator::trace::{CallRecord, Op};

use super::pump::{Ev, Input};
use super::shadow::{free_shadow, Channel, Op as Shadow};
use super::{with, with_state, Nbc, ONLINE, STATS_LEN, VIRTUAL_WTIME};
use crate::ffi::{guard, record_params, Params};
use crate::recorder;

/// 1 when this thread runs online mode (the C side then creates the shadow communicators).
#[no_mangle]
pub extern "C" fn ipr_online_enabled() -> c_int {
    with(0, |_| 1)
}

/// Registers the members of shadow `slot` (world ranks, `n` of them, in
/// communicator rank order).
///
/// # Safety
/// `members` points to `n` readable ints.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_comm(slot: u32, members: *const c_int, n: c_int) {
    if members.is_null() || n <= 0 {
        return;
    }
    // SAFETY: the caller passes `n` ints.
    let m: Vec<u32> = unsafe { std::slice::from_raw_parts(members, n as usize) }.iter().map(|&r| r as u32).collect();
    with((), |on| {
        on.members.insert(slot, m);
    })
}

/// The application freed the communicator of shadow `slot`: its shadows
/// go once the pump has applied what came before.
#[no_mangle]
pub extern "C" fn ipr_online_comm_free(slot: u32) {
    let queued = with(false, |on| {
        on.queue(Ev::CommFree { slot });
        true
    });
    if !queued {
        free_shadow(slot);
    }
}

/// The send half of `p` (world rank `p.peer`, `p.bytes`): to rank `local`
/// of shadow `slot` with `tag`, as clock request `id`.
fn send(on: &mut super::Online, id: u64, p: &Params, slot: u32, local: c_int, tag: c_int, call: Op) {
    on.queue(Ev::Send { id, peer: p.peer as u32, bytes: p.bytes, slot, local, tag, call });
}

/// A receive `id` of shadow `slot` matched the message from its rank
/// `src` with `tag`: its companion is awaited on the shadow from now.
fn matched(on: &mut super::Online, id: u64, slot: u32, src: c_int, tag: c_int, call: Op) {
    let Some(&src_world) = on.members.get(&slot).and_then(|m| m.get(src as usize)) else { return };
    if let Some(op) = Shadow::irecv(slot, Channel::Fwd, src, tag, 3) {
        on.work.inputs.push(Input::Companion { id, slot, src, src_world, tag, call, op });
    }
}

/// A blocking send (`MPI_Send`, `Ssend`, `Bsend`, `Rsend`) of parameters
/// `p` to rank `local` of shadow `slot` with `tag` returned.
///
/// # Safety
/// `p` points to a valid `struct ipr_params`.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_send(op: c_int, p: *const Params, slot: u32, local: c_int, tag: c_int) {
    // SAFETY: the C wrapper passes its live parameter struct.
    let (Some(p), Some(call)) = (unsafe { p.as_ref() }.copied(), Op::from_code(op as u8)) else { return };
    with((), |on| {
        let id = on.fresh();
        send(on, id, &p, slot, local, tag, call);
        on.queue(Ev::Wait { ids: vec![id], call, user_wait: false });
    })
}

/// A nonblocking send (request `p.request`) of parameters `p` to rank
/// `local` of shadow `slot` with `tag` was posted (or a persistent one started).
///
/// # Safety
/// `p` points to a valid `struct ipr_params`.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_isend(op: c_int, p: *const Params, slot: u32, local: c_int, tag: c_int) {
    // SAFETY: the C wrapper passes its live parameter struct.
    let (Some(p), Some(call)) = (unsafe { p.as_ref() }.copied(), Op::from_code(op as u8)) else { return };
    with((), |on| {
        let id = on.post(p.request, None);
        send(on, id, &p, slot, local, tag, call);
    })
}

/// A nonblocking receive `req` on shadow `slot` was posted (or a persistent one started).
#[no_mangle]
pub extern "C" fn ipr_online_irecv(req: u64, slot: u32) {
    with((), |on| {
        let id = on.post(req, Some(slot));
        on.queue(Ev::Recv { id, nonblocking: true });
    })
}

/// A blocking receive (`MPI_Recv`, `MPI_Mrecv`) on shadow `slot` returned
/// a message from its rank `src` with `tag`.
#[no_mangle]
pub extern "C" fn ipr_online_recv(op: c_int, slot: u32, src: c_int, tag: c_int) {
    let Some(call) = Op::from_code(op as u8) else { return };
    with((), |on| {
        let id = on.fresh();
        on.queue(Ev::Recv { id, nonblocking: false });
        matched(on, id, slot, src, tag, call);
        on.queue(Ev::Wait { ids: vec![id], call, user_wait: false });
    })
}

/// `MPI_Sendrecv(_replace)` of parameters `p` returned: its send half to
/// rank `dest` of shadow `slot` with `sendtag` (none when `p.peer` < 0),
/// its receive half from rank `src` with `recvtag`, as the status gives
/// them (none when `p.peer2` < 0).
///
/// # Safety
/// `p` points to a valid `struct ipr_params`.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_sendrecv(
    op: c_int,
    p: *const Params,
    slot: u32,
    dest: c_int,
    sendtag: c_int,
    src: c_int,
    recvtag: c_int,
) {
    // SAFETY: the C wrapper passes its live parameter struct.
    let (Some(p), Some(call)) = (unsafe { p.as_ref() }.copied(), Op::from_code(op as u8)) else { return };
    with((), |on| {
        let mut ids = Vec::with_capacity(2);
        if p.peer >= 0 {
            let id = on.fresh();
            send(on, id, &p, slot, dest, sendtag, call);
            ids.push(id);
        }
        if p.peer2 >= 0 && src >= 0 {
            let id = on.fresh();
            on.queue(Ev::Recv { id, nonblocking: false });
            matched(on, id, slot, src, recvtag, call);
            ids.push(id);
        }
        on.queue(Ev::Wait { ids, call, user_wait: false });
    })
}

/// Request `req` completed with a status naming rank `src` of its
/// communicator and `tag` (`cancelled` nonzero for a cancelled one):
/// when it is a receive, its companion is awaited. Called for each
/// request of a completion before [`ipr_online_wait`].
#[no_mangle]
pub extern "C" fn ipr_online_completed(op: c_int, req: u64, src: c_int, tag: c_int, cancelled: c_int) {
    let Some(call) = Op::from_code(op as u8) else { return };
    with((), |on| match on.posted.get(&req).copied() {
        Some(super::Posted { id, .. }) if cancelled != 0 => on.queue(Ev::Forget { id, cancelled: true }),
        Some(super::Posted { id, recv_slot: Some(slot) }) if src >= 0 => matched(on, id, slot, src, tag, call),
        _ => {}
    })
}

/// Requests `reqs[0..n]` completed (a wait, or a test that succeeded), in call `op`.
///
/// # Safety
/// `reqs` points to `n` readable values.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_wait(op: c_int, reqs: *const u64, n: u64) {
    let list: &[u64] = if reqs.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: the caller passes `n` values.
        unsafe { std::slice::from_raw_parts(reqs, n as usize) }
    };
    let call = Op::from_code(op as u8).unwrap_or(Op::Wait);
    with((), |on| {
        let ids: Vec<u64> = list.iter().filter_map(|r| on.posted.remove(r)).map(|p| p.id).collect();
        if !ids.is_empty() {
            on.queue(Ev::Wait { ids, call, user_wait: true });
        }
    })
}

/// A poll ([`Action::Poll`]): a test that completed no request, or an
/// `MPI_Iprobe`; the clock charges `[smpi] poll_s` as the replay does.
#[no_mangle]
pub extern "C" fn ipr_online_poll() {
    with((), |on| on.queue(Ev::Poll))
}

/// `MPI_Request_free(req)`: a request still pending completes unseen (as
/// in the replay).
#[no_mangle]
pub extern "C" fn ipr_online_request_free(req: u64) {
    with((), |on| {
        if let Some(p) = on.posted.remove(&req) {
            on.queue(Ev::Forget { id: p.id, cancelled: false });
        }
    })
}

/// The replay action of collective `op` with parameters `p` (as the
/// trace records them) and scratch list `list` (the v-collectives' byte
/// counts) on a communicator of `n` members: the blocking collective a
/// nonblocking one stands for; `MPI_(I)reduce_scatter_block` as a
/// reduce-scatter of `n` equal blocks (as [`simulator::action::op_action`]
/// replays it). `None` when the online clock cannot run it (a
/// neighbourhood collective, or a call the replay does not represent).
fn coll_action(op: Op, p: &Params, list: &mut Vec<u64>, n: usize) -> Option<Action> {
    let action = match op {
        Op::ReduceScatterBlock | Op::IreduceScatterBlock => Action::ReduceScatter { recv_bytes: vec![p.bytes; n], comm: p.comm },
        _ => match simulator::action::op_action(&CallRecord::bare(op, record_params(op, p, list))) {
            Ok(Some(Action::Icoll { coll, .. })) => *coll,
            Ok(Some(a)) => a,
            _ => return None,
        },
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

/// A collective `op` with parameters `p` (as the trace records them) on
/// shadow `slot` returned (posted, for a nonblocking one: `nonblocking`
/// nonzero, its request `p.request`). `list[0..nlist]` is the call's
/// scratch list (the v-collectives' byte counts; null and 0 for others).
/// The clock runs it on its members' entry (post) times, which the pump
/// gathers on the shadow; what the replay cannot build costs no virtual
/// time and is listed as unmodelled.
///
/// # Safety
/// `p` points to a valid `struct ipr_params`; `list` to `nlist` values
/// unless null.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_coll(op: c_int, p: *const Params, slot: u32, list: *const u64, nlist: u64, nonblocking: c_int) {
    // SAFETY: the C wrapper passes its live parameter struct.
    let (Some(p), Some(call)) = (unsafe { p.as_ref() }.copied(), Op::from_code(op as u8)) else { return };
    // SAFETY: per the contract.
    let mut list = unsafe { scratch_list(list, nlist) };
    with((), |on| {
        let members = on.members.get(&slot).cloned();
        let action = members.as_ref().and_then(|m| coll_action(call, &p, &mut list, m.len()));
        let (Some(members), Some(action)) = (members, action) else {
            on.unmodelled.insert(call.mpi_name());
            return;
        };
        if nonblocking == 0 {
            on.queue(Ev::Coll { call, action, members, slot, gather: None });
        } else if p.request != 0 {
            let id = on.post(p.request, None);
            on.nbcs.insert(id, Nbc { action, members, call });
            on.queue(Ev::Icoll { id, slot });
        }
    })
}

/// An MPI-IO call `op` with parameters `p` (as the trace records them:
/// the file id in `peer2`, the byte offset in `bytes2`) returned; `slot`
/// is the shadow of the file's communicator for `MPI_File_open` (else
/// `u32::MAX`); `list[0..nlist]` is the call's scratch list (the view and
/// hints of an open, set_view or set_info; null and 0 for the others).
/// Independent calls go to the clock in order; a collective
/// access gathers its members' entry times and parts on the file's
/// shadow first. A file opened on a communicator without a shadow makes
/// its collective accesses unmodelled (no virtual time).
///
/// # Safety
/// `p` points to a valid `struct ipr_params`; `list` to `nlist` values
/// unless null.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_io(op: c_int, p: *const Params, slot: u32, list: *const u64, nlist: u64) {
    // SAFETY: the C wrapper passes its live parameter struct.
    let (Some(p), Some(call)) = (unsafe { p.as_ref() }.copied(), Op::from_code(op as u8)) else { return };
    // SAFETY: per the contract.
    let mut list = unsafe { scratch_list(list, nlist) };
    with((), |on| {
        let mut p = p;
        if matches!(call, Op::FileIread | Op::FileIreadAt | Op::FileIwrite | Op::FileIwriteAt) {
            p.request = on.post(p.request, None);
        }
        let file = p.peer2 as u32;
        if call == Op::FileOpen && slot != u32::MAX {
            on.files.insert(file, slot);
        }
        if call == Op::FileClose {
            on.files.remove(&file);
        }
        let Some(action) = io_action(call, &p, &mut list) else { return };
        // MPI_File_sync is collective too: its members' cached bytes are gathered.
        let collective = matches!(action, Action::Io { call: IoCall::ReadAll | IoCall::WriteAll | IoCall::Sync, .. });
        if !collective {
            on.queue(Ev::Io { call, action });
            return;
        }
        let slot = on.files.get(&file).copied();
        match slot.and_then(|s| on.members.get(&s).cloned().map(|m| (s, m))) {
            Some((slot, members)) => on.queue(Ev::CollIo { call, action, members, slot, gather: None }),
            None => {
                on.unmodelled.insert(call.mpi_name());
            }
        }
    })
}

/// The replay action of MPI-IO call `op` with parameters `p` and
/// scratch list `list`.
fn io_action(op: Op, p: &Params, list: &mut Vec<u64>) -> Option<Action> {
    simulator::action::op_action(&CallRecord::bare(op, record_params(op, p, list))).ok().flatten()
}

/// One-sided call `op` with parameters `p` (as the trace records them)
/// returned: each call costs the rank its CPU time as in the replay
/// ([`simulator::platform::Smpi::rma_call_cost`]); a data movement
/// charges the origin as the replay does and completes at a later
/// synchronization, which `MPI_Win_unlock`, the flushes,
/// `MPI_Win_unlock_all`, `MPI_Win_complete`, `MPI_Win_fence` and
/// `MPI_Win_free` are (`MPI_Win_lock_all` waits for nothing, as in the
/// replay). The lock waits and PSCW notices need messages the protocol
/// does not carry: `MPI_Win_lock`, `post`, `start` and `wait` cost only
/// their call and are listed as unmodelled, as is a movement to an
/// unknown target. A window's creation costs its call; the C wrapper
/// then adds its barrier.
///
/// # Safety
/// `p` points to a valid `struct ipr_params`.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_rma(op: c_int, p: *const Params) {
    // SAFETY: the C wrapper passes its live parameter struct.
    let (Some(p), Some(call)) = (unsafe { p.as_ref() }.copied(), Op::from_code(op as u8)) else { return };
    // The replay's own action of the call: an unknown window or an access
    // to MPI_PROC_NULL is none there either.
    let rma = match simulator::action::op_action(&CallRecord::bare(call, record_params(call, &p, &mut Vec::new()))) {
        Ok(Some(Action::Rma { call: rma, .. })) => rma,
        Ok(_) => return,
        Err(_) => {
            return with((), |on| {
                on.unmodelled.insert(call.mpi_name());
            })
        }
    };
    // The call's own CPU time, as the replay charges it.
    let cost = rma.cost_kind();
    with((), |on| {
        let ev = match (rma.movement(), &rma) {
            // A target the trace could not name as a world rank.
            (Some(_), _) if p.peer < 0 => {
                on.unmodelled.insert(call.mpi_name());
                return;
            }
            (Some((kind, target, bytes, _)), _) => Ev::RmaMove { target, kind, bytes },
            // A window's creation costs its call, then the barrier the C
            // wrapper adds; the replay's lock_all takes no lock: only the call.
            (None, RmaCall::Create { .. } | RmaCall::LockAll) => Ev::RmaCall { kind: cost },
            // Lock waits and PSCW notices are not modelled online: the call's cost only.
            (None, RmaCall::Lock { .. } | RmaCall::Post { .. } | RmaCall::Start { .. } | RmaCall::Wait) => {
                on.unmodelled.insert(call.mpi_name());
                Ev::RmaCall { kind: cost }
            }
            (None, &RmaCall::Unlock { target }) => Ev::RmaSettle { target: Some(target), kind: cost },
            (None, &RmaCall::Flush { target }) => Ev::RmaSettle { target, kind: cost },
            // The rest: UnlockAll, Complete, Fence, Free (the data
            // movements always have a movement).
            (None, _) => Ev::RmaSettle { target: None, kind: cost },
        };
        on.queue(ev);
    })
}

/// Call `op` costs no virtual time (a collective on a communicator
/// without a shadow): lists it in the report.
#[no_mangle]
pub extern "C" fn ipr_online_unmodelled(op: c_int) {
    with((), |on| {
        if let Some(code) = Op::from_code(op as u8) {
            on.unmodelled.insert(code.mpi_name());
        }
    })
}

/// Runs the pump (at the entry of a recorded call, when
/// [`super::ipr_online_work`] says it has work).
#[no_mangle]
pub extern "C" fn ipr_online_pump() {
    guard(None, || {
        with_state(|on| {
            if on.stalled.is_none() {
                on.pump();
            }
            on.publish();
        })
    });
}

/// Charges the current call's compute block, then runs the pump until the
/// clock has applied everything and its messages are in, inside call `op`
/// (`MPI_Finalize`), or until the watchdog stops online mode
/// ([`super::Online::drain`]).
#[no_mangle]
pub extern "C" fn ipr_online_drain(op: c_int) {
    let call = Op::from_code(op as u8).unwrap_or(Op::Finalize);
    // The block before this call first, as every call's.
    if with(false, |_| true) {
        guard(None, || {
            with_state(|on| {
                on.drain(call.mpi_name());
                on.publish();
            })
        });
    }
}

/// Writes this rank's figures, `STATS_LEN` doubles: end, compute, comm,
/// wait (seconds), messages, bytes sent, 1 when its prediction is
/// complete (else 0), I/O (seconds), its virtual `MPI_Wtime` reads that
/// waited in vain, then its final compute block: 1 when it has one
/// ([`simulator::online::VirtualRank::final_block`], else 0), its start,
/// work and end, and the end of the block before it (seconds).
///
/// # Safety
/// `out` points to `STATS_LEN` writable doubles.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_stats(out: *mut f64) {
    if out.is_null() {
        return;
    }
    let (s, complete, waits) = guard(None, || with_state(|on| (on.clock.stats(), on.stalled.is_none(), on.wtime_waits))).unwrap_or((
        VirtualStats::default(),
        false,
        0,
    ));
    let fin = guard(None, || with_state(|on| on.clock.final_block())).flatten();
    let b = fin.unwrap_or_default();
    let v = [
        s.end_s,
        s.compute_s,
        s.comm_s,
        s.wait_s,
        s.messages as f64,
        s.bytes_sent as f64,
        complete as u8 as f64,
        s.io_s,
        waits as f64,
        fin.is_some() as u8 as f64,
        b.start_s,
        b.work_s,
        b.end_s,
        b.before_s,
    ];
    // SAFETY: the caller passes room for STATS_LEN doubles.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out, STATS_LEN) };
}

/// Writes why this rank's online mode stopped (empty when it did not) to
/// `buf` as a NUL-terminated string of at most `cap` bytes.
///
/// # Safety
/// `buf` points to `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_reason(buf: *mut c_char, cap: c_int) {
    if buf.is_null() || cap <= 0 {
        return;
    }
    let why = guard(None, || with_state(|on| on.stalled.clone().unwrap_or_default())).unwrap_or_default();
    let mut n = why.len().min(cap as usize - 1);
    while !why.is_char_boundary(n) {
        n -= 1;
    }
    // SAFETY: n + 1 <= cap bytes, per the contract.
    unsafe {
        std::ptr::copy_nonoverlapping(why.as_ptr().cast::<c_char>(), buf, n);
        *buf.add(n) = 0;
    }
}

/// Drops what the pump still holds (cancelling shadow receives in
/// flight), after the report at finalize.
#[no_mangle]
pub extern "C" fn ipr_online_stop() {
    guard(None, || {
        with_state(|on| {
            on.work = Default::default();
            on.publish();
        })
    });
}

/// Rank 0 at `MPI_Finalize`: from every rank's [`ipr_online_stats`]
/// (`n` ranks, rank order) and [`ipr_online_reason`] (`n` strings of
/// `reason_len` bytes), prints the predicted makespan and writes
/// `online.json`.
///
/// # Safety
/// `all` points to `n × STATS_LEN` doubles, `reasons` to
/// `n × reason_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn ipr_online_report(all: *const f64, reasons: *const c_char, reason_len: c_int, n: c_int) {
    if all.is_null() || reasons.is_null() || n <= 0 || reason_len <= 0 {
        return;
    }
    // SAFETY: the caller passes n × STATS_LEN doubles and n reasons.
    let all = unsafe { std::slice::from_raw_parts(all, n as usize * STATS_LEN) };
    // SAFETY: as above.
    let reasons = unsafe { std::slice::from_raw_parts(reasons.cast::<u8>(), n as usize * reason_len as usize) };
    guard(None, || with_state(|on| on.report(all, reasons)));
}

/// `MPI_Wtime`: virtual time when `INTERPOSER_VIRTUAL_WTIME=1` in online
/// mode (the clock as the pump has it, [`super::Online::virtual_now`], plus
/// the compute block running now), else `real`.
#[no_mangle]
pub extern "C" fn ipr_online_wtime(real: f64) -> f64 {
    if !VIRTUAL_WTIME.load(Ordering::Relaxed) {
        return real;
    }
    let (wall, cpu) = (crate::clock::now(), crate::timing::thread_cpu_ns());
    let running = recorder::cpu_since_last_call_ns(cpu) as f64 * 1e-9;
    let now = guard(None, || {
        ONLINE.with(|o| {
            let mut slot = o.try_borrow_mut().ok()?;
            let on = slot.as_mut()?;
            Some(on.virtual_now() + running / on.clock.speed_ratio())
        })
    });
    // The pump's time is online mode's, not the block's.
    let pump_cpu = cpu.map(|c| crate::timing::thread_cpu_ns().unwrap_or(c).saturating_sub(c));
    recorder::exclude_from_block(crate::clock::now().saturating_sub(wall), pump_cpu);
    now.unwrap_or(real)
}

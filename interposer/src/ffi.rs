//! What every `extern "C"` hook shares, below all other modules: the
//! process-wide state switch, the panic guard, one-line warnings, and the
//! call parameters the C wrappers pass (`struct ipr_params`) with their
//! conversion to trace records.
//!
//! The state: `UNINIT` → (`MPI_Init`) → `TRACING` → (`MPI_Finalize`) →
//! `FINISHED`, or `DISABLED` for good after a configuration or I/O failure,
//! a panic, or in a forked child ([`crate::lifecycle`] makes the moves).

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};

use simulator::trace::record::{shape, Shape, ANY_SOURCE, COMM_UNKNOWN};
use simulator::trace::{Op, Params as RecParams};

/// Before `MPI_Init`.
pub(crate) const UNINIT: u8 = 0;
/// Between `MPI_Init` and `MPI_Finalize`, recording.
pub(crate) const TRACING: u8 = 1;
/// After `MPI_Finalize`.
pub(crate) const FINISHED: u8 = 2;
/// Off for good: every hook passes through.
pub(crate) const DISABLED: u8 = 3;

/// The process-wide state (the constants above).
pub(crate) static STATE: AtomicU8 = AtomicU8::new(UNINIT);

/// Prints one warning line on stderr, prefixed with the interposer's name.
pub fn warn(rank: Option<u32>, msg: &str) {
    let who = rank.map_or(String::from("interposer"), |r| format!("interposer[rank {r}]"));
    // One write, so that lines of ranks sharing a terminal do not interleave.
    let line = format!("{who}: warning: {msg}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Disables the interposer for good and says why, once per process.
pub fn disable(rank: Option<u32>, msg: &str) {
    if STATE.swap(DISABLED, Ordering::SeqCst) != DISABLED {
        warn(rank, msg);
    }
}

/// A call's plain parameters from C (`struct ipr_params` of
/// `csrc/types.h`, through bindgen).
pub type Params = crate::ctypes::ipr_params;

/// Runs `f`, the body of an `extern "C"` hook: a panic never crosses the
/// FFI boundary; it disables the interposer ([`disable`]) and the hook
/// returns `default`, so the application goes on unchanged.
pub(crate) fn guard<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        disable(None, "internal error (panic); recording disabled, the application runs unchanged");
        default
    })
}

/// The record parameters of `op` from the C side's plain values and, for
/// calls that end with [`ipr_end_list_slow`](crate::hooks::ipr_end_list_slow), the scratch list. Inlined: a
/// record returned through the stack is loaded wide right after its
/// narrow stores, a store-forwarding stall per record.
#[inline(always)]
pub(crate) fn record_params(op: Op, p: &Params, list: &mut Vec<u64>) -> RecParams {
    let list_u32 = |l: &[u64]| l.iter().map(|&v| v as u32).collect();
    let new_comm = |id: i32| if id < 0 { COMM_UNKNOWN } else { id as u32 };
    match shape(op) {
        Shape::P2p => RecParams::P2p { peer: p.peer, tag: p.tag, bytes: p.bytes, comm: p.comm, request: p.request },
        Shape::Wait => RecParams::Wait { request: p.request, source: if p.peer < 0 { ANY_SOURCE } else { p.peer } },
        Shape::Test => RecParams::Test { request: p.request, completed: p.root == 1 },
        Shape::Waitall => RecParams::Waitall { requests: std::mem::take(list) },
        Shape::RequestSet => RecParams::RequestSet { requests: std::mem::take(list), result: p.root },
        Shape::Request => RecParams::Request { request: p.request },
        // The list: the handles, then the indices of the `p.root` completed.
        Shape::RequestSome => {
            let done = (p.root.max(0) as usize).min(list.len() / 2);
            let completed = list[list.len() - done..].iter().map(|&i| i as u32).collect();
            list.truncate(list.len() - done);
            RecParams::RequestSome { requests: std::mem::take(list), completed }
        }
        Shape::Mrecv => RecParams::Mrecv { message: p.bytes2, bytes: p.bytes, request: p.request },
        // The list: the `p.root` local members, then the remote ones.
        Shape::Intercomm => {
            let local = (p.root.max(0) as usize).min(list.len());
            RecParams::Intercomm {
                parent: p.comm,
                comm: new_comm(p.peer2),
                local: list_u32(&list[..local]),
                remote: list_u32(&list[local..]),
            }
        }
        Shape::Icoll => RecParams::Icoll { root: p.root, bytes: p.bytes, comm: p.comm, request: p.request },
        // The list: the send side's p.tag values, then the receive side's.
        Shape::Vcoll => {
            let recv = list.split_off((p.tag.max(0) as usize).min(list.len()));
            RecParams::Vcoll { root: p.root, comm: p.comm, request: p.request, send: std::mem::take(list), recv }
        }
        // The list: p.tag destinations, their bytes, then as many sources
        // as remain, their bytes.
        Shape::Neighbor => {
            let k = (p.tag.max(0) as usize).min(list.len() / 2);
            let m = (list.len() - 2 * k) / 2;
            let peers = |l: &[u64]| l.iter().map(|&v| v as u32 as i32).collect();
            RecParams::Neighbor {
                comm: p.comm,
                request: p.request,
                dsts: peers(&list[..k]),
                send: list[k..2 * k].to_vec(),
                srcs: peers(&list[2 * k..2 * k + m]),
                recv: list[2 * k + m..2 * k + 2 * m].to_vec(),
            }
        }
        // The list: amode, view (disp, etype, size, extent, block), then (key, value) hints.
        Shape::IoInfo => {
            let at = |i: usize| list.get(i).copied().unwrap_or(0);
            RecParams::IoInfo {
                file: new_comm(p.peer2),
                comm: p.comm,
                amode: at(0) as u32,
                disp: at(1),
                etype_bytes: at(2),
                view_bytes: at(3),
                view_extent: at(4),
                block_bytes: at(5),
                hints: list.get(6..).unwrap_or_default().chunks_exact(2).map(|kv| (kv[0] as u32, kv[1])).collect(),
            }
        }
        Shape::Io => RecParams::Io { file: new_comm(p.peer2), offset: p.bytes2, bytes: p.bytes, comm: p.comm, request: p.request },
        Shape::Probe => RecParams::Probe { peer: p.peer, tag: p.tag, bytes: p.bytes, comm: p.comm, found: p.root == 1 },
        Shape::Sendrecv => RecParams::Sendrecv {
            dst: p.peer,
            send_tag: p.tag,
            send_bytes: p.bytes,
            src: p.peer2,
            recv_tag: p.tag2,
            recv_bytes: p.bytes2,
            comm: p.comm,
        },
        Shape::CommCreate => RecParams::CommCreate { parent: p.comm, comm: new_comm(p.peer2), members: list_u32(list) },
        Shape::Coll => RecParams::Coll { root: p.root, bytes: p.bytes, comm: p.comm },
        // The list (Win_post/Win_start only, the calls that end with a
        // list): the group as world ranks.
        Shape::Rma => RecParams::Rma {
            win: new_comm(p.peer2),
            comm: p.comm,
            target: p.peer,
            disp: p.bytes2,
            bytes: p.bytes,
            op: p.tag as u32,
            assert: p.root as u32,
            request: p.request,
            group: match op {
                Op::WinPost | Op::WinStart => list.iter().map(|&v| v as u32 as i32).collect(),
                _ => Vec::new(),
            },
        },
        Shape::None => RecParams::None,
    }
}

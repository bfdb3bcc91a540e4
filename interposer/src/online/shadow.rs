//! Nonblocking operations on the shadow communicators (`csrc/online.c`
//! keeps the communicators; these are thin owners of its requests).
//!
//! Every operation here is nonblocking: the pump ([`super::pump`]) posts
//! them and tests them on later calls, so online mode never makes the
//! application wait for its traffic.

use std::ffi::c_int;

/// Which duplicate of an application communicator a message travels on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub enum Channel {
    /// Sender to receiver: companions `[virtual send post s, bytes, 1 when
    /// buffered]`, and
    /// the members' entry times of collectives.
    Fwd = 0,
    /// Receiver to sender: the receive's virtual post time, for a message
    /// the model sends by rendezvous.
    Ack = 1,
}

extern "C" {
    fn ipr_sh_isend(slot: u32, chan: c_int, dest: c_int, tag: c_int, buf: *const f64, n: c_int, req: *mut u64) -> c_int;
    fn ipr_sh_irecv(slot: u32, chan: c_int, src: c_int, tag: c_int, buf: *mut f64, n: c_int, req: *mut u64) -> c_int;
    fn ipr_sh_iallgather(slot: u32, send: *const f64, recv: *mut f64, n: c_int, k: c_int, req: *mut u64) -> c_int;
    fn ipr_sh_test(req: *mut u64) -> c_int;
    fn ipr_sh_cancel(req: *mut u64, kind: c_int);
    fn ipr_sh_free(slot: u32);
}

/// Frees shadow `slot`'s communicators (the pump reached the
/// application's `MPI_Comm_free` of its communicator).
pub(super) fn free_shadow(slot: u32) {
    // SAFETY: a plain call into csrc/online.c.
    unsafe { ipr_sh_free(slot) }
}

/// A shadow operation in flight with the buffer it reads or writes: the
/// buffer is boxed so that it stays put while MPI owns it.
#[derive(Debug)]
pub struct Op {
    req: u64,
    buf: Box<[f64]>,
    done: bool,
    kind: Kind,
}

/// What an [`Op`] is, which decides how one still in flight is dropped.
/// Its value is what `ipr_sh_cancel` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Send = 0,
    Recv = 1,
    Collective = 2,
}

impl Op {
    fn post(kind: Kind, buf: Box<[f64]>, post: impl FnOnce(*mut f64, *mut u64) -> c_int) -> Option<Op> {
        let mut op = Op { req: 0, buf, done: false, kind };
        let ptr = op.buf.as_mut_ptr();
        (post(ptr, &mut op.req) != 0).then_some(op)
    }

    /// Sends `data` to rank `dest` of shadow `slot`'s `chan` with `tag`;
    /// `None` when the shadow is gone or MPI refused.
    pub fn isend(slot: u32, chan: Channel, dest: i32, tag: i32, data: &[f64]) -> Option<Op> {
        let n = data.len() as c_int;
        // SAFETY: the buffer lives in the returned Op until the request completes or is cancelled.
        Op::post(Kind::Send, data.into(), |b, r| unsafe { ipr_sh_isend(slot, chan as c_int, dest, tag, b, n, r) })
    }

    /// Receives `n` doubles from rank `src` of shadow `slot`'s `chan` with `tag`.
    pub fn irecv(slot: u32, chan: Channel, src: i32, tag: i32, n: usize) -> Option<Op> {
        // SAFETY: as in `isend`.
        Op::post(Kind::Recv, vec![0.0; n].into(), |b, r| unsafe { ipr_sh_irecv(slot, chan as c_int, src, tag, b, n as c_int, r) })
    }

    /// Gathers `values` (k of them) from each of the `n` members of shadow
    /// `slot` (on [`Channel::Fwd`]); [`Op::data`] then holds each member's
    /// k values in rank order.
    pub fn iallgather(slot: u32, values: &[f64], n: usize) -> Option<Op> {
        let k = values.len();
        let mut buf = vec![0.0; (n + 1) * k];
        buf[n * k..].copy_from_slice(values);
        // SAFETY: as in `isend`; the values sent are the buffer's last k elements, the result its first n × k.
        Op::post(Kind::Collective, buf.into(), |b, r| unsafe { ipr_sh_iallgather(slot, b.add(n * k), b, n as c_int, k as c_int, r) })
    }

    /// True once the operation completed (tests it when not yet known).
    /// An error of MPI's counts as complete, with the buffer as it is.
    pub fn test(&mut self) -> bool {
        if !self.done {
            // SAFETY: `req` is this operation's live request.
            self.done = unsafe { ipr_sh_test(&mut self.req) } != 0;
        }
        self.done
    }

    /// The buffer: what a receive or gather received, once [`Op::test`] is true.
    pub fn data(&self) -> &[f64] {
        &self.buf
    }
}

impl Drop for Op {
    /// An operation dropped before it completed (online mode stopped): a
    /// receive is cancelled (and completed, so its buffer can go); a send
    /// is released to finish on its own and a collective, which MPI lets
    /// no one cancel or free, is left to finish: their buffers are leaked
    /// to MPI, a few doubles each.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // SAFETY: `req` is this operation's live request.
        unsafe { ipr_sh_cancel(&mut self.req, self.kind as c_int) };
        if self.kind != Kind::Recv {
            std::mem::forget(std::mem::take(&mut self.buf));
        }
    }
}

//! The recorder's fast path, shared with the C wrappers (`csrc/fast.h`).
//!
//! A call whose timing needs only the TSC is not recorded live: the
//! wrapper keeps it as a [`Raw`] record (op, return address, entry and exit
//! ticks, plain parameters) in its thread's ring, and the recorder encodes
//! the ring later, in call order, through the same steps as a live call
//! (`recorder::Recorder::drain`). The ring is encoded when it fills and
//! before anything the recorder does itself (a slow call, the overhead
//! measurement, a signal-time flush, the end of the thread), so records
//! keep their order and a crash loses at most the call in progress.
//!
//! The C side keeps a call only when the recorder would not have read a
//! clock other than the TSC for it: with thread CPU time measured, its
//! compute block and the call itself must be shorter than
//! [`crate::timing::CPU_READ_MIN_BLOCK_NS`] ([`Fast::min_ticks`]), which is
//! exactly when [`crate::timing::Timer`] estimates CPU time from wall
//! time. Replaying the ticks through the timer then gives the record a
//! live call would have had.

use std::sync::atomic::{AtomicU32, Ordering};

use simulator::trace::Op;

use crate::ffi::Params;

/// Op codes of the polls whose runs [`poll_run`] finds.
const IPROBE: i32 = Op::Iprobe as i32;
const TEST: i32 = Op::Test as i32;

/// Raw records per thread (80 bytes each): the ring is encoded every this
/// many fast calls, unless calls that wait ([`DRAIN_SLICE`]) kept it empty.
pub const RING_RECORDS: usize = 256;

/// Records encoded on entry to a call that usually waits for another rank
/// (`ipr_waits` in csrc/fast.h): few enough that their encoding fits in
/// the wait of a shared-memory ping-pong's round trip, and a loop of two
/// calls per wait keeps the ring empty.
pub const DRAIN_SLICE: usize = 4;

/// A call the C side kept (`struct ipr_raw` of `csrc/types.h`, through bindgen).
pub type Raw = crate::ctypes::ipr_raw;

/// A thread's fast-path state, shared with its C wrappers (`struct
/// ipr_fast` of `csrc/types.h`, through bindgen). Only its own thread
/// writes it, except `skip` (a signal-time flush, under the recorder's
/// busy flag).
pub type Fast = crate::ctypes::ipr_fast;

extern "C" {
    /// Sets the calling thread's `ipr_fast_tls` (csrc/lifecycle.c).
    fn ipr_fast_set(f: *mut Fast);
}

/// A thread's fast-path state and its ring, at a fixed address.
#[derive(Debug)]
pub struct Ring {
    fast: Box<Fast>,
    _records: Box<[Raw]>,
}

impl Ring {
    /// An empty ring, off until [`Ring::enable`].
    pub fn new() -> Ring {
        let zero = Raw { op: 0, failed: 0, caller: 0, start: 0, end: 0, params: Params::default() };
        let mut records = vec![zero; RING_RECORDS].into_boxed_slice();
        let fast = Box::new(Fast {
            in_call: 0,
            on: 0,
            len: 0,
            skip: 0,
            last_end: 0,
            min_ticks: 0,
            cap: RING_RECORDS as u32,
            tsc: 0,
            lean: 0,
            slow_end: 0,
            ring: records.as_mut_ptr(),
        });
        Ring { fast, _records: records }
    }

    /// The shared state.
    pub fn state(&mut self) -> &mut Fast {
        &mut self.fast
    }

    /// Lets the C side keep calls whose blocks are shorter than
    /// `min_ticks` (`u64::MAX`: any), or stops it (`None`).
    pub fn enable(&mut self, min_ticks: Option<u64>) {
        self.fast.on = min_ticks.is_some() as u32;
        self.fast.min_ticks = min_ticks.unwrap_or(0);
    }

    /// Tells the C side whether the recorder's ticks are the TSC's.
    pub fn set_tsc(&mut self, tsc: bool) {
        self.fast.tsc = tsc as u32;
    }

    /// The start of the running block as the C side saw it after the last
    /// slow end, when that is later than `block_start` (the recorder's own
    /// view, from before its code returned).
    pub fn adopt(&self, block_start: u64) -> Option<u64> {
        (self.fast.slow_end > block_start).then_some(self.fast.slow_end)
    }

    /// Makes this the calling thread's ring for its C wrappers; it must
    /// stay in place until [`Ring::detach`] on the same thread.
    pub fn attach(&mut self) {
        // SAFETY: the pointer stays valid until detach (see above).
        unsafe { ipr_fast_set(&mut *self.fast) };
    }

    /// The calling thread's C wrappers stop using any ring.
    pub fn detach() {
        // SAFETY: clearing a thread-local pointer.
        unsafe { ipr_fast_set(std::ptr::null_mut()) };
    }

    /// The call the C side began and has not ended (`in_call` 1), as it
    /// wrote it at `ring[len]`: op, return address and entry tick.
    pub fn begun(&self) -> Raw {
        let len = (self.fast.len as usize).min(RING_RECORDS - 1);
        // SAFETY: `ring` points at RING_RECORDS records owned by `_records`.
        unsafe { *self.fast.ring.add(len) }
    }

    /// The records not yet encoded (from `skip` to `len`), in call order.
    pub fn pending(&self) -> &[Raw] {
        // Stored with release by the C side after the record it counts
        // (a signal handler may read it from another thread).
        // SAFETY: `len` is a live, aligned u32.
        let len = unsafe { AtomicU32::from_ptr(&self.fast.len as *const u32 as *mut u32) }.load(Ordering::Acquire);
        let len = (len as usize).min(RING_RECORDS);
        // SAFETY: `ring` points at RING_RECORDS records owned by `_records`.
        unsafe { std::slice::from_raw_parts(self.fast.ring, len) }.get(self.fast.skip as usize..).unwrap_or(&[])
    }

    /// Empties the ring.
    pub fn clear(&mut self) {
        self.fast.len = 0;
        self.fast.skip = 0;
    }
}

/// The length of the run of identical failed polls that `raws` starts
/// with: `MPI_Iprobe` finding nothing or `MPI_Test` finding its request
/// pending, from one call site with the same arguments; 1 when `raws`
/// does not start with one (0 when empty).
///
/// Such a run is recorded as one call read `run` times (a repeat marker,
/// see `simulator::trace::codec`) with the run's mean compute block and
/// call duration: a polling loop costs the tracer a comparison per poll,
/// and its replay the same number of polls in the same total time. This
/// is what Extrae's setting for failed probes and tests does with a
/// counter instead of the run's times.
#[inline]
pub fn poll_run(raws: &[Raw]) -> usize {
    let Some(first) = raws.first() else { return 0 };
    let poll = (first.op == IPROBE || first.op == TEST) && first.params.root == 0 && first.failed == 0;
    if !poll {
        return 1;
    }
    let same = |r: &Raw| r.op == first.op && r.caller == first.caller && r.failed == 0 && r.params == first.params;
    1 + raws[1..].iter().take_while(|r| same(r)).count()
}

/// The entry and exit ticks of a call standing for all of `run`, whose
/// first block started at tick `prev`: the run's mean block and mean call
/// duration, so that `run.len()` such calls end where the run ended (to a
/// tick per call).
pub fn mean_call(prev: u64, run: &[Raw]) -> (u64, u64) {
    let (Some(last), m) = (run.last(), run.len() as u64) else { return (prev, prev) };
    let calls: u64 = run.iter().map(|r| r.end.wrapping_sub(r.start)).sum();
    let blocks = last.end.wrapping_sub(prev).wrapping_sub(calls);
    let start = prev.wrapping_add(blocks / m);
    (start, start.wrapping_add(calls / m))
}

impl Default for Ring {
    fn default() -> Self {
        Ring::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(op: i32, found: i32, start: u64, end: u64) -> Raw {
        let params = Params { peer: -1, tag: 7, root: found, ..Params::default() };
        Raw { op, failed: 0, caller: 0x40_1000, start, end, params }
    }

    #[test]
    fn runs_of_failed_polls_end_at_the_first_difference() {
        let polls: Vec<Raw> = (0..5).map(|k| raw(IPROBE, 0, 100 * k, 100 * k + 40)).collect();
        assert_eq!(poll_run(&polls), 5);
        let mut mixed = polls.clone();
        mixed[3].params.tag = 8;
        assert_eq!(poll_run(&mixed), 3, "another tag ends the run");
        mixed[1].params.root = 1;
        assert_eq!(poll_run(&mixed), 1, "a poll that found a message ends it");
        assert_eq!(poll_run(&[raw(Op::Send as i32, 0, 0, 1)]), 1, "a send is not a poll");
        assert_eq!(poll_run(&[raw(IPROBE, 1, 0, 1), raw(IPROBE, 1, 2, 3)]), 1, "successful probes are kept one by one");
        assert_eq!(poll_run(&[]), 0);
    }

    #[test]
    fn the_mean_call_keeps_the_run_s_span() {
        // Blocks 10, 30, 20 ticks; calls 40, 50, 60 ticks; from tick 1000.
        let run = [raw(TEST, 0, 1010, 1050), raw(TEST, 0, 1080, 1130), raw(TEST, 0, 1150, 1210)];
        let (start, end) = mean_call(1000, &run);
        assert_eq!((start, end), (1020, 1070), "mean block 20, mean call 50");
        assert_eq!(1000 + 3 * (end - 1000), 1210, "three such calls end where the run ended");
    }
}

//! The recorder's per-thread state at work: a call begun and ended live
//! ([`Recorder::begin_at`], [`Recorder::record`]), the fast path's ring
//! encoded in call order ([`Recorder::drain`]), and the file kept whole
//! when the thread ends.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};

use simulator::trace::{CallRecord, Op, Params, RankWriter};

use super::{Overhead, Recorder, IO_WARNED};
use crate::clock::{self, ticks_to_ns};
use crate::fast::{self, Ring};
use crate::ffi::record_params;
use crate::ffi::{warn, DISABLED, STATE};
use crate::signals;
use crate::timing::{self, Timer};

impl Recorder {
    /// A recorder for the calling thread whose first compute block starts
    /// now; times are taken relative to `epoch_wall` (ticks of [`clock::now`]).
    pub(super) fn new(rank: u32, writer: RankWriter<File>, epoch_wall: u64, overhead: Overhead) -> Self {
        let mut timer = Timer::new();
        let now = clock::now();
        let start = timer.start(now, Some(now));
        Recorder {
            busy: AtomicBool::new(false),
            rank,
            writer,
            epoch_wall,
            overhead,
            calibration: None,
            timer,
            last_end: start,
            in_call: false,
            call_start: start,
            cpu_read: false,
            call_op: 0,
            caller: 0,
            prev_caller: 0,
            requests: Vec::with_capacity(64),
            charged_ns: 0,
            main: false,
            isolated: false,
            ring: Ring::new(),
            regions: super::regions::enabled().then(|| Box::new(super::regions::RegionSums::new())),
            sink: None,
        }
    }

    /// Attaches this thread's ring to its C wrappers and, when `allowed`
    /// and the block timing needs nothing but the TSC between CPU clock
    /// readings, lets them keep calls there ([`crate::fast`]). Online mode
    /// runs its model in every call and hardware counters are read per
    /// block: both keep the fast path off.
    pub(super) fn start_fast_path(&mut self, allowed: bool) {
        let on = allowed && clock::is_tsc() && !self.timer.has_counters();
        self.ring.enable(on.then(timing::min_ticks));
        // Counters are read by the recorder, at its own block ends.
        self.ring.set_tsc(clock::is_tsc() && !self.timer.has_counters());
        self.ring.state().lean = self.regions.is_some() as u32;
        self.ring.attach();
        self.publish();
    }

    /// Tells the C side where the running block started.
    pub(super) fn publish(&mut self) {
        self.ring.state().last_end = self.last_end.wall;
    }

    /// A call starts at wall tick `wall`, ending the running block; `cpu`:
    /// the CPU clock if already read for it ([`Timer::end`]).
    pub(super) fn begin_at(&mut self, op: u8, caller: u64, wall: u64, cpu: Option<u64>) {
        let last = self.last_end;
        (self.call_start, self.cpu_read) = self.timer.end(&last, wall, cpu);
        self.call_op = op;
        self.caller = caller;
    }

    /// Builds the record of the current call, which returned at wall tick
    /// `exit`, and appends it (to the overhead measurement while that
    /// runs). The caller holds the busy flag ([`Recorder::locked`]).
    pub(super) fn record(&mut self, op: Op, failed: bool, exit: u64, params: impl FnOnce(&mut Vec<u64>) -> Params) {
        // Built first: the record copies it only after the work below, by
        // when its narrow stores can forward to the copy's wide loads.
        let params = params(&mut self.requests);
        let (start, last, over) = (self.call_start, self.last_end, self.overhead);
        let record = CallRecord {
            op,
            failed,
            caller: self.caller,
            compute_cpu_ns: self.block_cpu_ns(),
            compute_wall_ns: self.block_wall_ns(),
            counters: self.timer.counters(&last, &start, over.hw),
            t_start_ns: ticks_to_ns(start.wall.saturating_sub(self.epoch_wall)),
            t_end_ns: ticks_to_ns(exit.saturating_sub(self.epoch_wall)),
            params,
        };
        let hw = (start.hw.0.wrapping_sub(last.hw.0), start.hw.1.wrapping_sub(last.hw.1));
        self.emit(&record, start.wall.saturating_sub(last.wall), hw);
        self.charged_ns = 0;
        if let Params::Waitall { requests } | Params::RequestSet { requests, .. } | Params::RequestSome { requests, .. } = record.params {
            self.requests = requests; // keep the buffer's capacity for the next list
        } else if let Params::Vcoll { send, .. } = record.params {
            if send.capacity() > self.requests.capacity() {
                self.requests = send;
            }
        }
    }

    /// Appends `record`, or gives it to the overhead measurement while that
    /// runs, with its block's raw length (ticks) and counter deltas.
    #[inline(always)]
    pub(super) fn emit(&mut self, record: &CallRecord, block_ticks: u64, hw: (u64, u64)) {
        match self.calibration.as_mut() {
            Some(cal) => {
                cal.wall.push(block_ticks);
                cal.hw.push(hw);
                match self.regions {
                    Some(_) => cal.regions.add(self.prev_caller, record.caller, record.compute_cpu_ns, record.compute_wall_ns),
                    None => drop(cal.sink.push(record)),
                }
            }
            None => {
                self.write(record);
                self.prev_caller = record.caller;
            }
        }
    }

    /// Encodes the calls kept on the fast path, in call order, exactly as
    /// they would have been recorded live: each one's entry ends the
    /// running block, its exit starts the next (the C side kept only calls
    /// for which the timer reads no clock). Dropped once recording is
    /// disabled, or while a signal handler flushes.
    pub(super) fn drain(&mut self) {
        self.drain_slice(usize::MAX);
    }

    /// [`Recorder::drain`] of the oldest `max` calls at most; the ring
    /// empties when none is left.
    pub(super) fn drain_slice(&mut self, max: usize) {
        self.adopt_slow_end();
        if STATE.load(Ordering::Relaxed) == DISABLED {
            // Stop the C side from keeping calls no one will encode.
            self.ring.enable(None);
            self.ring.clear();
            return;
        }
        if !self.ring.pending().is_empty() {
            // Also after MPI_Finalize: a thread that outlives it keeps the
            // calls it made before.
            let _ = self.locked(|rec| rec.encode_pending(max));
        }
        if self.ring.pending().is_empty() {
            self.ring.clear();
        }
    }

    /// [`Recorder::drain`]'s work, leaving the ring to the caller: the
    /// encoded records are marked as such (a signal-time flush, after
    /// which the thread may go on).
    pub(super) fn encode_pending(&mut self, max: usize) {
        self.adopt_slow_end();
        // What [`Recorder::record`] does for a call begun and ended live,
        // given that the fast path keeps only calls whose timing reads no
        // clock but the TSC and counts no hardware events: each block's
        // CPU time is its wall time. A run of identical failed polls is one
        // call read as many times ([`fast::poll_run`]).
        let n = self.ring.pending().len().min(max);
        let (epoch, over) = (self.epoch_wall, self.overhead.wall);
        let mut prev = self.last_end.wall;
        let mut no_list = Vec::new();
        let mut i = 0;
        if let Some(sums) = self.regions.as_deref_mut() {
            // Regions mode: each block straight into its region's sums (or,
            // while the overhead is measured, into the measurement's), as
            // the loop below would pass it through `emit`.
            for raw in &self.ring.pending()[..n] {
                if Op::from_code(raw.op as u8).is_some() {
                    let block = raw.start.wrapping_sub(prev);
                    let wall_ns = ticks_to_ns(block.saturating_sub(over)) + std::mem::take(&mut self.charged_ns);
                    match self.calibration.as_mut() {
                        Some(cal) => {
                            cal.wall.push(block);
                            cal.hw.push((0, 0));
                            cal.regions.add(self.prev_caller, raw.caller, wall_ns, wall_ns);
                        }
                        None => {
                            sums.add(self.prev_caller, raw.caller, wall_ns, wall_ns);
                            self.prev_caller = raw.caller;
                        }
                    }
                }
                prev = raw.end;
            }
            i = n;
        }
        while i < n {
            let pending = self.ring.pending();
            let raw = pending[i];
            // Not from the first: its gap holds the recorder's own work
            // since the call before (a drain, a slow call), which every
            // copy of a run would repeat.
            let run = if self.calibration.is_none() && i > 0 { fast::poll_run(&pending[i..n]) } else { 1 };
            let (start, end) = if run > 1 { fast::mean_call(prev, &pending[i..i + run]) } else { (raw.start, raw.end) };
            let run_end = pending[i + run - 1].end;
            i += run;
            let Some(op) = Op::from_code(raw.op as u8) else {
                prev = run_end;
                continue;
            };
            let block = start.wrapping_sub(prev);
            let wall_ns = ticks_to_ns(block.saturating_sub(over)) + std::mem::take(&mut self.charged_ns);
            let record = CallRecord {
                op,
                failed: raw.failed != 0,
                caller: raw.caller,
                compute_cpu_ns: wall_ns,
                compute_wall_ns: wall_ns,
                counters: None,
                t_start_ns: ticks_to_ns(start.saturating_sub(epoch)),
                t_end_ns: ticks_to_ns(end.saturating_sub(epoch)),
                params: record_params(op, &raw.params, &mut no_list),
            };
            if run > 1 {
                self.write_repeated(&record, run as u64 - 1);
            } else {
                self.emit(&record, block, (0, 0));
            }
            // No list, so nothing to free (kept calls end with ipr_end,
            // never ipr_end_list): skip the drop glue's call.
            debug_assert_eq!(simulator::trace::codec::list_len(&record), 0);
            std::mem::forget(record);
            prev = run_end;
        }
        if let Some(last) = self.ring.pending().get(n.wrapping_sub(1)) {
            // A short call, as the C side kept it: no clock reading.
            self.last_end = self.timer.start(prev, Some(last.start));
        }
        self.ring.state().skip += n as u32;
    }

    /// Starts the running block where the C side saw the last slow end
    /// return ([`Ring::adopt`]), after the recorder's own code: with CPU
    /// time estimated from there, as for any block start without a reading.
    fn adopt_slow_end(&mut self) {
        if let Some(t) = self.ring.adopt(self.last_end.wall) {
            self.last_end = self.timer.start(t, Some(t));
        }
    }

    /// Runs `f` holding the busy flag; `None` when a fatal-signal handler
    /// holds it (the process is ending).
    pub(super) fn locked<R>(&mut self, f: impl FnOnce(&mut Recorder) -> R) -> Option<R> {
        if self.busy.swap(true, Ordering::Acquire) {
            return None;
        }
        let r = f(self);
        self.busy.store(false, Ordering::Release);
        Some(r)
    }

    /// Wall time of the compute block that ends at the current call's
    /// start, less the recorder's own share, ns.
    pub(super) fn block_wall_ns(&self) -> u64 {
        let ticks = self.call_start.wall.saturating_sub(self.last_end.wall).saturating_sub(self.overhead.wall);
        ticks_to_ns(ticks) + self.charged_ns
    }

    /// Thread CPU time of the same block, ns: its wall time unless the
    /// CPU clock was read at its end ([`Timer::end`]).
    pub(super) fn block_cpu_ns(&self) -> u64 {
        if !self.cpu_read {
            return self.block_wall_ns();
        }
        self.call_start.cpu.saturating_sub(self.last_end.cpu).saturating_sub(self.overhead.cpu_ns) + self.charged_ns
    }

    /// Disarms the signal flush if it targets this recorder, waiting out a
    /// handler that may be flushing it.
    pub(super) fn disarm(&mut self) {
        signals::disarm(self as *mut Recorder as *mut ());
    }

    /// Appends a record read `1 + copies` times; the caller holds the
    /// busy flag.
    pub(super) fn write_repeated(&mut self, record: &CallRecord, copies: u64) {
        if let Some(sums) = self.regions.as_deref_mut() {
            let (cpu, wall) = (record.compute_cpu_ns, record.compute_wall_ns);
            sums.add(self.prev_caller, record.caller, cpu, wall);
            (0..copies).for_each(|_| sums.add(record.caller, record.caller, cpu, wall));
            self.prev_caller = record.caller;
            return;
        }
        let result = self.writer.push_repeated(std::slice::from_ref(record), copies);
        self.prev_caller = record.caller;
        self.io_result(result);
    }

    /// Appends a record; the caller holds the busy flag.
    pub(super) fn write(&mut self, record: &CallRecord) {
        if let Some(sums) = self.regions.as_deref_mut() {
            sums.add(self.prev_caller, record.caller, record.compute_cpu_ns, record.compute_wall_ns);
            return;
        }
        let result = self.writer.push(record);
        self.io_result(result);
    }

    /// Warns once about the first failed write.
    #[inline]
    pub(super) fn io_result(&self, result: std::io::Result<()>) {
        if let Err(e) = result {
            if !IO_WARNED.swap(true, Ordering::Relaxed) {
                warn(Some(self.rank), &format!("cannot write the trace: {e}; records are being dropped"));
            }
        }
    }
}

impl Drop for Recorder {
    /// Exit without `MPI_Finalize`: keep the whole chunks written so far.
    /// The file has no end marker, so readers report it as truncated.
    fn drop(&mut self) {
        self.drain();
        Ring::detach();
        self.disarm();
        if let Some(sums) = self.regions.take() {
            super::regions::thread_ended(*sums);
        }
        let _ = self.writer.flush();
    }
}

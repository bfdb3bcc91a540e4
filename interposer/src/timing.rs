//! Timing of compute blocks: wall time in ticks of [`crate::clock`], thread
//! CPU time, and hardware counters ([`PerfGroup`]).
//!
//! Thread CPU time (`CLOCK_THREAD_CPUTIME_ID`, the task clock) is a system
//! call, far dearer than the wall clock, so it is read only around what may have
//! lost the CPU: at the end of a compute block, and at the end of a call,
//! of at least [`CPU_READ_MIN_BLOCK_NS`] of wall time (and after the
//! recorder's own slow steps). In between, CPU time is taken to advance
//! with wall time from the last reading. A preemption or a sleep shorter
//! than that window can be missed; a scheduler time slice (milliseconds)
//! makes its block or call long, so it ends with a real reading. Reading
//! it once per window of wall time instead would put a system call into
//! every few calls of a tight ping-pong.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use simulator::trace::BlockCounters;

use crate::clock::{self, clock_ns, ticks_to_ns};
use crate::counters::PerfGroup;

/// Wall time (ns) under which CPU time is estimated rather than read.
pub const CPU_READ_MIN_BLOCK_NS: u64 = 10_000;

/// False with `INTERPOSER_COUNTERS=off`: CPU time is wall time.
static CPU_TIME: AtomicBool = AtomicBool::new(true);
/// True when each thread opens a hardware counter group.
static HW: AtomicBool = AtomicBool::new(false);
/// [`CPU_READ_MIN_BLOCK_NS`] in ticks.
static MIN_TICKS: AtomicU64 = AtomicU64::new(CPU_READ_MIN_BLOCK_NS);

/// Sets what every thread's [`Timer`] measures; call after
/// [`clock::calibrate`].
pub fn configure(cpu_time: bool, hw: bool) {
    CPU_TIME.store(cpu_time, Ordering::Relaxed);
    HW.store(hw, Ordering::Relaxed);
    MIN_TICKS.store(clock::ns_to_ticks(CPU_READ_MIN_BLOCK_NS), Ordering::Relaxed);
}

/// Blocks shorter than this many ticks have their CPU time estimated
/// ([`CPU_READ_MIN_BLOCK_NS`]); `u64::MAX` when CPU time is wall time.
pub fn min_ticks() -> u64 {
    if cpu_time() {
        MIN_TICKS.load(Ordering::Relaxed)
    } else {
        u64::MAX
    }
}

/// True unless CPU time is wall time (`INTERPOSER_COUNTERS=off`).
pub fn cpu_time() -> bool {
    CPU_TIME.load(Ordering::Relaxed)
}

/// This thread's CPU time now, ns (`CLOCK_THREAD_CPUTIME_ID`); `None`
/// when blocks are timed without CPU time ([`cpu_time`]).
pub fn thread_cpu_ns() -> Option<u64> {
    cpu_time().then(|| clock_ns(libc::CLOCK_THREAD_CPUTIME_ID))
}

/// One end of a compute block.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stamp {
    /// Wall time, ticks of [`clock::now`].
    pub wall: u64,
    /// Thread CPU time, ns (wall time in ns without CPU timing).
    pub cpu: u64,
    /// Cycles and instructions of this thread's counter group (0, 0 without).
    pub hw: (u64, u64),
}

/// Per-thread block timer.
#[derive(Debug, Default)]
pub struct Timer {
    /// The last real CPU clock reading (ns) and the wall ticks it belongs to.
    cpu_ref: (u64, u64),
    hw: Option<PerfGroup>,
}

impl Timer {
    /// A timer for the calling thread, with its own counter group when
    /// hardware counters are configured (none if the group cannot open).
    pub fn new() -> Timer {
        let hw = if HW.load(Ordering::Relaxed) { PerfGroup::open().ok() } else { None };
        let wall = clock::now();
        Timer { cpu_ref: (clock_ns(libc::CLOCK_THREAD_CPUTIME_ID), wall), hw }
    }

    /// True when this thread counts cycles and instructions.
    pub fn has_counters(&self) -> bool {
        self.hw.is_some()
    }

    #[inline]
    fn read_hw(&self) -> (u64, u64) {
        self.hw.as_ref().map_or((0, 0), PerfGroup::read)
    }

    /// The stamp of a block starting at wall tick `wall`, the exit of a
    /// call that began at wall tick `call` (`None`: after something that
    /// may have slept, such as the recorder's own slow steps). The CPU
    /// clock is read when that call was long.
    ///
    /// When this reads the CPU clock (a system call), the block starts
    /// after the reading, at a fresh wall tick: the reading is the
    /// tracer's cost, not the application's. Were the block to start at
    /// `wall`, a short block, whose CPU time is its wall time, would carry
    /// the whole system call, which in a ring of small messages is a large
    /// share of every block; the overhead calibration, a median, never
    /// sees these occasional readings.
    #[inline]
    pub fn start(&mut self, wall: u64, call: Option<u64>) -> Stamp {
        let short = call.is_some_and(|c| wall.wrapping_sub(c) < MIN_TICKS.load(Ordering::Relaxed));
        let (wall, cpu) = if !cpu_time() {
            (wall, ticks_to_ns(wall))
        } else if short {
            (wall, self.cpu_ref.0 + ticks_to_ns(wall.wrapping_sub(self.cpu_ref.1)))
        } else {
            let cpu = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
            let after = clock::now();
            self.cpu_ref = (cpu, after);
            (after, cpu)
        };
        Stamp { wall, cpu, hw: self.read_hw() }
    }

    /// The stamp of the block from `start` ending at wall tick `wall` (a
    /// call's entry), and whether its CPU time was read (else it is the
    /// block's wall time). `cpu`: the CPU clock as already read at `wall`
    /// ([`Timer::cpu_for_end`]), else it is read here when needed.
    #[inline]
    pub fn end(&mut self, start: &Stamp, wall: u64, cpu: Option<u64>) -> (Stamp, bool) {
        let hw = self.read_hw();
        let elapsed = wall.wrapping_sub(start.wall);
        if !cpu_time() || elapsed < MIN_TICKS.load(Ordering::Relaxed) {
            (Stamp { wall, cpu: start.cpu + ticks_to_ns(elapsed), hw }, false)
        } else {
            let cpu = cpu.unwrap_or_else(|| clock_ns(libc::CLOCK_THREAD_CPUTIME_ID));
            self.cpu_ref = (cpu, wall);
            (Stamp { wall, cpu, hw }, true)
        }
    }

    /// The CPU clock now, when a block from wall tick `start` to `wall`
    /// is long enough for [`Timer::end`] to need it: read before work
    /// that is not the block's (the recorder encoding its fast-path ring).
    pub fn cpu_for_end(&self, start: u64, wall: u64) -> Option<u64> {
        (cpu_time() && wall.wrapping_sub(start) >= MIN_TICKS.load(Ordering::Relaxed)).then(|| clock_ns(libc::CLOCK_THREAD_CPUTIME_ID))
    }

    /// The counters between two stamps less `overhead`; `None` without a
    /// counter group.
    #[inline]
    pub fn counters(&self, from: &Stamp, to: &Stamp, overhead: (u64, u64)) -> Option<BlockCounters> {
        self.hw.as_ref()?;
        Some(BlockCounters {
            cycles: to.hw.0.wrapping_sub(from.hw.0).saturating_sub(overhead.0),
            instructions: to.hw.1.wrapping_sub(from.hw.1).saturating_sub(overhead.1),
        })
    }
}

/// The CPU clock's own cost as the CPU clock sees it: the median span
/// between two consecutive readings, ns.
pub fn cpu_read_cost_ns() -> u64 {
    const N: usize = 201;
    let mut d = [0u64; N];
    for x in d.iter_mut() {
        let a = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        *x = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(a);
    }
    d.sort_unstable();
    d[N / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_for_long_blocks_and_estimated_for_short_ones() {
        let _one = clock::TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        clock::calibrate(true);
        configure(true, false);
        let mut t = Timer::new();
        let now = clock::now();
        let s = t.start(now, Some(now));
        let (e, read) = t.end(&s, clock::now(), None);
        assert!(!read, "a block of a few ns is not worth a system call");
        assert_eq!(e.cpu - s.cpu, ticks_to_ns(e.wall - s.wall));
        // A 2 ms sleep: wall time passes, CPU time does not.
        let now = clock::now();
        let s = t.start(now, Some(now));
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (e, read) = t.end(&s, clock::now(), None);
        assert!(read);
        let (cpu, wall) = (e.cpu.saturating_sub(s.cpu), ticks_to_ns(e.wall - s.wall));
        assert!(wall >= 2_000_000 && cpu < wall / 2, "slept block: {cpu} ns CPU in {wall} ns wall");
        assert!(t.counters(&s, &e, (0, 0)).is_none() || t.has_counters());
        // After a long call (a 1 ms sleep in it) the CPU clock is read,
        // and the block begins after the reading.
        let before = e.cpu;
        let call = clock::now();
        std::thread::sleep(std::time::Duration::from_millis(1));
        let exit = clock::now();
        let s = t.start(exit, Some(call));
        assert!(s.wall > exit, "the block starts after the reading");
        assert!(s.cpu - before < 500_000, "the sleep is not CPU time: {} ns", s.cpu - before);
        // After a short call the block starts at the exit, CPU estimated,
        // however long ago the clock was last read.
        std::thread::sleep(std::time::Duration::from_millis(1));
        let call = clock::now();
        let s2 = t.start(call, Some(call));
        assert_eq!(s2.wall, call, "no reading after a short call: the block starts at its exit");
        let s3 = t.start(clock::now(), None);
        assert!(s3.wall > call, "after a slow step the clock is read");
    }
}

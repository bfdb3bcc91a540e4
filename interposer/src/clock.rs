//! The hot path's wall clock: the time-stamp counter (`rdtsc`) where it is
//! invariant, else `CLOCK_MONOTONIC` (vDSO, slower than `rdtsc`).
//!
//! Timestamps are raw *ticks* (TSC cycles, or nanoseconds on the fallback)
//! and become nanoseconds only when a record is built, with one 64×64-bit
//! multiply ([`ticks_to_ns`]). The TSC frequency is measured against
//! `CLOCK_MONOTONIC` between the library's load ([`mark`], from a C
//! constructor) and `MPI_Init` ([`calibrate`]), at least 20 ms apart.
//!
//! The TSC is used when CPUID says it is invariant (leaf `0x8000_0007`,
//! EDX bit 8: constant rate in every P-, C- and T-state) and the kernel
//! still trusts it (`/sys/devices/system/clocksource/clocksource0/
//! current_clocksource` is `tsc`, or cannot be read). jitSim §3.1 reads
//! the same counter for its jitter traces.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Nanoseconds per tick in 32.32 fixed point (`1 << 32` while ticks are ns).
static MULT: AtomicU64 = AtomicU64::new(1 << 32);
static USE_TSC: AtomicBool = AtomicBool::new(false);
/// `(tsc, CLOCK_MONOTONIC ns)` at the library's load.
static MARK: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Shortest span the TSC frequency is measured over, ns.
const MIN_SPAN_NS: u64 = 20_000_000;

/// Which clock [`now`] reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WallClock {
    /// The invariant TSC, at [`calibrate`]'s measured frequency.
    Tsc {
        /// Measured TSC frequency, Hz.
        hz: f64,
    },
    /// `CLOCK_MONOTONIC` (no invariant TSC, or not wanted).
    Monotonic,
}

/// `clock_gettime(clock)`, nanoseconds.
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; both clocks used exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 CPU and has no side effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdtsc() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The current wall time in ticks (see the module docs).
#[inline(always)]
pub fn now() -> u64 {
    if USE_TSC.load(Ordering::Relaxed) {
        rdtsc()
    } else {
        clock_ns(libc::CLOCK_MONOTONIC)
    }
}

/// True when [`now`] reads the TSC (the wall clock the C wrappers' fast
/// path reads with `rdtsc`).
pub fn is_tsc() -> bool {
    cfg!(target_arch = "x86_64") && USE_TSC.load(Ordering::Relaxed)
}

/// Ticks to nanoseconds.
#[inline(always)]
pub fn ticks_to_ns(ticks: u64) -> u64 {
    ((ticks as u128 * MULT.load(Ordering::Relaxed) as u128) >> 32) as u64
}

/// Nanoseconds to ticks (the inverse of [`ticks_to_ns`], rounded down).
pub fn ns_to_ticks(ns: u64) -> u64 {
    (((ns as u128) << 32) / MULT.load(Ordering::Relaxed).max(1) as u128) as u64
}

/// One `(tsc, CLOCK_MONOTONIC ns)` pair read close together: the TSC
/// between two monotonic readings, the tightest of up to 50 tries (a
/// preemption between the two clocks would skew the frequency measured
/// from the pair by its length), stopping at a bracket of 2 µs or less.
fn pair() -> (u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..50 {
        let a = clock_ns(libc::CLOCK_MONOTONIC);
        let t = rdtsc();
        let b = clock_ns(libc::CLOCK_MONOTONIC);
        if b - a < best.2 {
            best = (t, a + (b - a) / 2, b - a);
        }
        if best.2 <= 2_000 {
            break;
        }
    }
    (best.0, best.1)
}

/// Records the first `(tsc, CLOCK_MONOTONIC)` pair; called once when the
/// library is loaded.
pub fn mark() {
    let (t, m) = pair();
    MARK[0].store(t, Ordering::Relaxed);
    MARK[1].store(m, Ordering::Relaxed);
}

/// True when CPUID reports an invariant TSC.
#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)] // `__cpuid` is safe from Rust 1.87 on, unsafe before
fn tsc_invariant() -> bool {
    // SAFETY: CPUID is always available on x86_64; leaf 0x8000_0000 gives
    // the highest extended leaf, checked before 0x8000_0007 is asked.
    let max = unsafe { core::arch::x86_64::__cpuid(0x8000_0000) }.eax;
    max >= 0x8000_0007 && unsafe { core::arch::x86_64::__cpuid(0x8000_0007) }.edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_invariant() -> bool {
    false
}

fn kernel_trusts_tsc() -> bool {
    match std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource") {
        Ok(s) => s.trim() == "tsc",
        Err(_) => true,
    }
}

/// Chooses the wall clock for the rest of the run (called at `MPI_Init`,
/// before any call is timed): the TSC when `want_tsc` and it is invariant
/// and trusted by the kernel, with its frequency measured since [`mark`]
/// (waiting until at least 20 ms have passed); else `CLOCK_MONOTONIC`.
/// Returns the choice and, when the TSC was wanted but not taken, why.
pub fn calibrate(want_tsc: bool) -> (WallClock, Option<&'static str>) {
    let why = if !want_tsc {
        None
    } else if !tsc_invariant() {
        Some("the CPU reports no invariant TSC")
    } else if !kernel_trusts_tsc() {
        Some("the kernel's clocksource is not the TSC")
    } else {
        let (mut t0, mut m0) = (MARK[0].load(Ordering::Relaxed), MARK[1].load(Ordering::Relaxed));
        if m0 == 0 {
            mark(); // not loaded through the constructor: measure from now
            (t0, m0) = (MARK[0].load(Ordering::Relaxed), MARK[1].load(Ordering::Relaxed));
        }
        while clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(m0) < MIN_SPAN_NS {
            std::hint::spin_loop();
        }
        let (t1, m1) = pair();
        if t1 > t0 {
            let mult = ((((m1 - m0) as u128) << 32) / (t1 - t0) as u128) as u64;
            MULT.store(mult, Ordering::Relaxed);
            USE_TSC.store(true, Ordering::Relaxed);
            return (WallClock::Tsc { hz: (t1 - t0) as f64 * 1e9 / (m1 - m0) as f64 }, None);
        }
        Some("the TSC did not advance")
    };
    MULT.store(1 << 32, Ordering::Relaxed);
    USE_TSC.store(false, Ordering::Relaxed);
    (WallClock::Monotonic, why)
}

/// Serializes the tests that change the process-wide clock.
#[cfg(test)]
pub(crate) static TEST_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_ticks_convert_to_monotonic_nanoseconds() {
        let _one = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        mark();
        let (clock, why) = calibrate(true);
        match clock {
            WallClock::Monotonic => println!("SKIPPED TSC check: {}", why.unwrap_or("not requested")),
            WallClock::Tsc { hz } => {
                assert!((1e8..1e11).contains(&hz), "TSC at {hz} Hz");
                // Tight pairs, as the measurement itself takes them.
                let (t0, m0) = pair();
                std::thread::sleep(std::time::Duration::from_millis(30));
                let (t1, m1) = pair();
                let (tsc_ns, mono_ns) = (ticks_to_ns(t1 - t0) as f64, (m1 - m0) as f64);
                assert!((tsc_ns - mono_ns).abs() < 1e-3 * mono_ns + 2_000.0, "{tsc_ns} ns by TSC vs {mono_ns} ns");
                assert!(ns_to_ticks(ticks_to_ns(1 << 40)).abs_diff(1 << 40) <= (1 << 40) / 1_000_000);
            }
        }
        let (clock, why) = calibrate(false);
        assert_eq!((clock, why), (WallClock::Monotonic, None));
        assert_eq!(ticks_to_ns(12345), 12345);
    }
}

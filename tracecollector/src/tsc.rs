//! Reading the timestamp counter, calibrating t_min, and measuring the TSC
//! frequency.
//!
//! # Which read
//! The default is plain `rdtsc`. It is not serializing: the CPU may execute
//! it a few tens of cycles early or late relative to neighbouring
//! instructions. That does not matter here, because the loop does nothing
//! but read the counter, and what we look for (interrupts, preemption, SMIs,
//! hypervisor exits) stops the whole pipeline: the full length of a detour
//! always lands in the delta of the two reads around it. Ordering only blurs
//! *where* a detour starts by less than the out-of-order window, far below
//! the threshold. In exchange plain `rdtsc` runs at twice the rate of
//! `lfence; rdtsc` (26 vs 52 cycles on the machine in the issue), which
//! halves t_min and the smallest detectable detour. `lfence; rdtsc` and
//! `rdtscp` are available (`--timer-read`) for comparison and for CPUs where
//! someone wants every read ordered. A delta is `now.saturating_sub(prev)`, so
//! a read that retires out of order can never produce a huge false event.

use std::time::Duration;

/// The instruction sequence that reads the counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimerRead {
    /// Plain `rdtsc` (the default; see the module doc).
    Rdtsc,
    /// `lfence; rdtsc`: waits for earlier instructions before reading.
    LfenceRdtsc,
    /// `rdtscp`: waits for earlier instructions; also returns the CPU id.
    Rdtscp,
}

impl TimerRead {
    /// The name written to the trace header (`rdtsc`, `lfence;rdtsc`, `rdtscp`).
    pub fn header_name(self) -> &'static str {
        match self {
            TimerRead::Rdtsc => "rdtsc",
            TimerRead::LfenceRdtsc => "lfence;rdtsc",
            TimerRead::Rdtscp => "rdtscp",
        }
    }

    /// Parses the CLI spelling: `rdtsc`, `lfence-rdtsc` (or `lfence;rdtsc`), `rdtscp`.
    pub fn parse(s: &str) -> Option<TimerRead> {
        match s {
            "rdtsc" => Some(TimerRead::Rdtsc),
            "lfence-rdtsc" | "lfence;rdtsc" => Some(TimerRead::LfenceRdtsc),
            "rdtscp" => Some(TimerRead::Rdtscp),
            _ => None,
        }
    }
}

/// One way of reading the counter, monomorphized into the sampling loop so
/// the loop body is the read and nothing else.
pub trait Counter {
    /// Reads the counter, in TSC cycles.
    fn read() -> u64;
}

/// Plain `rdtsc`.
pub struct Rdtsc;
/// `lfence; rdtsc`.
pub struct LfenceRdtsc;
/// `rdtscp`.
pub struct Rdtscp;

#[cfg(target_arch = "x86_64")]
mod imp {
    use core::arch::x86_64::{__rdtscp, _mm_lfence, _rdtsc};

    impl super::Counter for super::Rdtsc {
        #[inline(always)]
        fn read() -> u64 {
            // SAFETY: rdtsc exists on every x86_64 CPU.
            unsafe { _rdtsc() }
        }
    }
    impl super::Counter for super::LfenceRdtsc {
        #[inline(always)]
        fn read() -> u64 {
            // SAFETY: lfence (SSE2) and rdtsc exist on every x86_64 CPU.
            unsafe {
                _mm_lfence();
                _rdtsc()
            }
        }
    }
    impl super::Counter for super::Rdtscp {
        #[inline(always)]
        fn read() -> u64 {
            let mut aux = 0u32;
            // SAFETY: rdtscp is checked by `supported` before use.
            unsafe { __rdtscp(&mut aux) }
        }
    }

    /// Whether this CPU can run `read` (rdtscp needs CPUID 0x80000001 EDX bit 27).
    pub fn supported(read: super::TimerRead) -> bool {
        match read {
            super::TimerRead::Rdtscp => {
                // SAFETY: cpuid is always available on x86_64 (safe to call since Rust 1.87).
                #[allow(unused_unsafe)]
                let r = unsafe { core::arch::x86_64::__cpuid(0x8000_0001) };
                r.edx & (1 << 27) != 0
            }
            _ => true,
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    //! Without a TSC the "counter" is CLOCK_MONOTONIC_RAW in ns via the vDSO:
    //! usable, but coarser and slower than a real counter.
    fn now_ns() -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: valid out pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
    impl super::Counter for super::Rdtsc {
        fn read() -> u64 {
            now_ns()
        }
    }
    impl super::Counter for super::LfenceRdtsc {
        fn read() -> u64 {
            now_ns()
        }
    }
    impl super::Counter for super::Rdtscp {
        fn read() -> u64 {
            now_ns()
        }
    }
    pub fn supported(_: super::TimerRead) -> bool {
        true
    }
}

pub use imp::supported;

/// Waits until every earlier instruction has completed locally (`lfence` on
/// x86_64), so the cost of the sampler's bookkeeping (a store that misses the
/// TLB, say) is paid before the next counter read instead of leaking into
/// the next delta.
#[inline(always)]
pub fn settle() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence exists on every x86_64 CPU.
    unsafe {
        core::arch::x86_64::_mm_lfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Reads the counter with `read` (dispatches to the monomorphic reader).
pub fn read(read: TimerRead) -> u64 {
    match read {
        TimerRead::Rdtsc => Rdtsc::read(),
        TimerRead::LfenceRdtsc => LfenceRdtsc::read(),
        TimerRead::Rdtscp => Rdtscp::read(),
    }
}

/// Deltas at or above this many cycles share the last histogram bucket.
pub const DELTA_BUCKETS: usize = 1024;

/// Fraction of the slowest calibration deltas left out of t_min (detours
/// that hit the calibration).
pub const T_MIN_TRIM: f64 = 0.001;

/// t_min from a histogram of successive-read deltas (`hist[d]` = number of
/// deltas of `d` cycles): the mean delta of the loop, leaving out the slowest
/// 0.1 % (detours), rounded up to a whole cycle; at least 1.
///
/// jitSim §3.1 and netgauge take the plain minimum. On a counter that ticks
/// every cycle (most Intel CPUs) the two agree, since the loop's deltas are
/// all within a cycle or two of each other. On a counter that ticks
/// coarsely the minimum is an artifact: on an AMD EPYC VM the
/// TSC advances in steps of 26 cycles, and two reads within one step return
/// values 1 apart (the CPU keeps them strictly increasing), so the plain
/// minimum is 1 cycle and a 9 × t_min threshold would flag every read. The
/// mean delta is the loop's true period whatever the counter's granularity
/// (26 cycles for `rdtsc`, 52 for `lfence; rdtsc` there).
pub fn t_min_from_hist(hist: &[u64]) -> u64 {
    let total: u64 = hist.iter().sum();
    let keep = total - (total as f64 * T_MIN_TRIM).floor() as u64;
    let (mut n, mut sum) = (0u64, 0u128);
    for (d, &c) in hist.iter().enumerate() {
        let take = c.min(keep - n);
        n += take;
        sum += take as u128 * d as u128;
        if n == keep {
            break;
        }
    }
    if n == 0 {
        return 1;
    }
    (sum.div_ceil(n as u128) as u64).max(1)
}

/// Result of a calibration run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// t_min, cycles ([`t_min_from_hist`]).
    pub t_min: u64,
    /// Smallest delta seen, cycles (the literal minimum, for reference).
    pub min: u64,
    /// Mean delta, cycles (includes any detour during calibration).
    pub mean: f64,
}

/// Calibrates t_min over `reads` successive reads with counter `C`
/// (jitSim §3.1).
///
/// The timed loop only reads and stores each delta into a preallocated
/// block (a store has no dependency chain, so the loop runs at the speed of
/// the sampling loop); the histogram is built between blocks, outside the
/// timed part.
#[inline(never)]
pub fn calibrate<C: Counter>(reads: u64) -> Calibration {
    const BLOCK: usize = 1 << 16;
    let mut hist = [0u64; DELTA_BUCKETS];
    let mut block = vec![0u32; BLOCK];
    let (mut total, mut done) = (0u64, 0u64);
    while done < reads {
        let n = (reads - done).min(BLOCK as u64) as usize;
        let first = C::read();
        let mut prev = first;
        for slot in &mut block[..n] {
            let now = C::read();
            *slot = now.saturating_sub(prev).min(u32::MAX as u64) as u32;
            prev = now;
        }
        total += prev - first;
        done += n as u64;
        for &d in &block[..n] {
            hist[(d as usize).min(DELTA_BUCKETS - 1)] += 1;
        }
    }
    Calibration {
        t_min: t_min_from_hist(&hist),
        min: hist.iter().position(|&n| n > 0).unwrap_or(0) as u64,
        mean: total as f64 / reads.max(1) as f64,
    }
}

/// [`calibrate`] for a runtime choice of read.
pub fn calibrate_read(read: TimerRead, reads: u64) -> Calibration {
    match read {
        TimerRead::Rdtsc => calibrate::<Rdtsc>(reads),
        TimerRead::LfenceRdtsc => calibrate::<LfenceRdtsc>(reads),
        TimerRead::Rdtscp => calibrate::<Rdtscp>(reads),
    }
}

/// t_min for a runtime choice of read, cycles.
pub fn t_min(read: TimerRead, reads: u64) -> u64 {
    calibrate_read(read, reads).t_min
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid out pointer; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A simultaneous reading of the counter and a clock, bracketed tightly.
#[derive(Debug, Clone, Copy)]
pub struct ClockPair {
    /// Counter value at the clock read (midpoint of the bracket), cycles.
    pub tsc: u64,
    /// Clock value, ns.
    pub ns: u64,
}

/// Reads `clock` between two counter reads, 32 times, and keeps the tightest bracket.
pub fn clock_pair(clock: libc::clockid_t) -> ClockPair {
    let mut best = (u64::MAX, ClockPair { tsc: 0, ns: 0 });
    for _ in 0..32 {
        let a = Rdtsc::read();
        let ns = clock_ns(clock);
        let b = Rdtsc::read();
        if b.saturating_sub(a) < best.0 {
            best = (b - a, ClockPair { tsc: a + (b - a) / 2, ns });
        }
    }
    best.1
}

/// Measures the TSC frequency in Hz against `CLOCK_MONOTONIC_RAW` (not
/// slewed by NTP) over `span`. With tight brackets (≲100 ns) over 100 ms
/// the error is about 1e-6.
pub fn measure_tsc_hz(span: Duration) -> f64 {
    let a = clock_pair(libc::CLOCK_MONOTONIC_RAW);
    std::thread::sleep(span);
    let b = clock_pair(libc::CLOCK_MONOTONIC_RAW);
    (b.tsc - a.tsc) as f64 * 1e9 / (b.ns - a.ns).max(1) as f64
}

/// The kernel's idea of the TSC frequency, in Hz, and where it came from.
///
/// Tried in order, first hit wins:
/// 1. `/sys/devices/system/cpu/cpu0/tsc_freq_khz` (exported by some kernels);
/// 2. the kernel log (`klogctl`, needs `CAP_SYSLOG` or `dmesg_restrict=0`):
///    the last `tsc: Refined TSC clocksource calibration: X MHz`, else
///    `tsc: Detected X MHz processor`, the value the `tsc` clocksource uses;
/// 3. `/proc/cpuinfo`'s `cpu MHz`, only when the CPU has `constant_tsc` and no
///    cpufreq driver is loaded; then the field is the kernel's `cpu_khz`,
///    otherwise it is the current core clock and says nothing about the TSC.
pub fn kernel_tsc_hz() -> Option<(f64, &'static str)> {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/tsc_freq_khz") {
        if let Ok(khz) = s.trim().parse::<f64>() {
            return Some((khz * 1e3, "sysfs tsc_freq_khz"));
        }
    }
    if let Some(mhz) = kernel_log().as_deref().and_then(tsc_mhz_from_log) {
        return Some((mhz * 1e6, "kernel log"));
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let constant = cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "constant_tsc"));
    let cpufreq = std::path::Path::new("/sys/devices/system/cpu/cpu0/cpufreq").exists();
    if !constant || cpufreq {
        return None;
    }
    let mhz = cpuinfo.lines().find(|l| l.starts_with("cpu MHz"))?.split(':').nth(1)?.trim().parse::<f64>().ok()?;
    Some((mhz * 1e6, "cpuinfo (no cpufreq driver)"))
}

fn kernel_log() -> Option<String> {
    const SYSLOG_ACTION_READ_ALL: libc::c_int = 3;
    const SYSLOG_ACTION_SIZE_BUFFER: libc::c_int = 10;
    // SAFETY: size query takes no buffer; the read writes at most `len` bytes into `buf`.
    unsafe {
        let len = libc::klogctl(SYSLOG_ACTION_SIZE_BUFFER, std::ptr::null_mut(), 0);
        if len <= 0 {
            return None;
        }
        let mut buf = vec![0u8; len as usize];
        let n = libc::klogctl(SYSLOG_ACTION_READ_ALL, buf.as_mut_ptr().cast(), len);
        if n <= 0 {
            return None;
        }
        buf.truncate(n as usize);
        Some(String::from_utf8_lossy(&buf).into_owned())
    }
}

/// The TSC frequency in MHz from kernel log text (see [`kernel_tsc_hz`]).
pub fn tsc_mhz_from_log(log: &str) -> Option<f64> {
    let value = |line: &str, key: &str| -> Option<f64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    let refined = log.lines().rev().find_map(|l| value(l, "tsc: Refined TSC clocksource calibration: "));
    refined.or_else(|| log.lines().rev().find_map(|l| value(l, "tsc: Detected ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_monotonic_and_t_min_is_small() {
        for r in [TimerRead::Rdtsc, TimerRead::LfenceRdtsc, TimerRead::Rdtscp] {
            if !supported(r) {
                continue;
            }
            let a = read(r);
            let b = read(r);
            assert!(b >= a);
            let t = t_min(r, 10_000);
            assert!(t > 0 && t < 10_000, "{r:?}: t_min {t}");
        }
    }

    #[test]
    fn t_min_is_the_trimmed_mean_period() {
        // A loop of period 25.6 cycles on a counter that ticks every 26
        // cycles: 1-cycle deltas within a tick, 26 or 27 across one; one detour.
        let mut h = [0u64; DELTA_BUCKETS];
        (h[1], h[26], h[27]) = (20_000, 900_000, 80_000);
        h[DELTA_BUCKETS - 1] = 1;
        // (20000 + 26·900000 + 27·80000) / 1e6 = 25.58 → 26; the detour is trimmed.
        assert_eq!(t_min_from_hist(&h), 26);
        // A fine-grained counter: the mean equals the minimum.
        assert_eq!(t_min_from_hist(&[0, 0, 0, 5000]), 3);
        assert_eq!(t_min_from_hist(&[0; 4]), 1);
    }

    #[test]
    fn kernel_log_parsing() {
        let log = "[0.0] tsc: Detected 2596.146 MHz processor\n[1.2] tsc: Refined TSC clocksource calibration: 2596.001 MHz\n";
        assert_eq!(tsc_mhz_from_log(log), Some(2596.001));
        assert_eq!(tsc_mhz_from_log("[0.0] tsc: Detected 2596.146 MHz processor"), Some(2596.146));
        assert_eq!(tsc_mhz_from_log("nothing"), None);
    }

    #[test]
    fn measured_frequency_is_plausible() {
        let hz = measure_tsc_hz(Duration::from_millis(20));
        assert!((1e8..1e10).contains(&hz), "{hz}");
        if let Some((k, src)) = kernel_tsc_hz() {
            assert!((hz / k - 1.0).abs() < 0.01, "measured {hz} vs {src} {k}");
        }
    }
}

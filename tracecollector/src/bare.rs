//! The resolution benchmark's reference: bare C loops (`csrc/bare_loop.c`,
//! compiled with `-O2`) that read the counter with the same instructions as
//! the sampler. One stores every delta, to which we apply t_min's rule
//! ([`crate::tsc::t_min_from_hist`]); the textbook one keeps only the
//! minimum, and gives the literal minimum and the loop's mean period.
//!
//! The acceptance criterion: tracecollector's t_min ≤ 1.2 × the
//! bare loop's, for the same read. Run
//! `cargo test -p tracecollector --release -- --ignored --nocapture resolution`.

use crate::tsc::{t_min_from_hist, Calibration, TimerRead, DELTA_BUCKETS};

extern "C" {
    fn tc_bare_rdtsc(reads: u64, deltas: *mut u32) -> u64;
    fn tc_bare_lfence_rdtsc(reads: u64, deltas: *mut u32) -> u64;
    fn tc_bare_rdtscp(reads: u64, deltas: *mut u32) -> u64;
    fn tc_bare_min_rdtsc(reads: u64, min: *mut u64) -> u64;
    fn tc_bare_min_lfence_rdtsc(reads: u64, min: *mut u64) -> u64;
    fn tc_bare_min_rdtscp(reads: u64, min: *mut u64) -> u64;
}

/// Calibrates with the bare C loop for `read` over `reads` reads, applying
/// tracecollector's t_min rule to its deltas.
pub fn bare_calibrate(read: TimerRead, reads: u64) -> Calibration {
    let mut deltas = vec![0u32; reads as usize];
    let f = match read {
        TimerRead::Rdtsc => tc_bare_rdtsc,
        TimerRead::LfenceRdtsc => tc_bare_lfence_rdtsc,
        TimerRead::Rdtscp => tc_bare_rdtscp,
    };
    // SAFETY: `deltas` holds `reads` slots.
    let total = unsafe { f(reads, deltas.as_mut_ptr()) };
    let mut hist = vec![0u64; DELTA_BUCKETS];
    for d in deltas {
        hist[(d as usize).min(DELTA_BUCKETS - 1)] += 1;
    }
    Calibration {
        t_min: t_min_from_hist(&hist),
        min: hist.iter().position(|&n| n > 0).unwrap_or(0) as u64,
        mean: total as f64 / reads.max(1) as f64,
    }
}

/// The textbook bare loop, which keeps only the minimum delta: returns
/// `(min_cycles, mean_delta_cycles)` over `reads` reads.
pub fn bare_min(read: TimerRead, reads: u64) -> (u64, f64) {
    let f = match read {
        TimerRead::Rdtsc => tc_bare_min_rdtsc,
        TimerRead::LfenceRdtsc => tc_bare_min_lfence_rdtsc,
        TimerRead::Rdtscp => tc_bare_min_rdtscp,
    };
    let mut min = 0;
    // SAFETY: `min` is a valid out pointer.
    let total = unsafe { f(reads, &mut min) };
    (min, total as f64 / reads.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cpus, sampler, tsc};
    use std::sync::atomic::AtomicBool;

    /// Resolution benchmark: ours vs the bare C loop for each read,
    /// on one pinned CPU. "Ours" is the calibration loop (t_min) and the
    /// sampling loop itself (mean undisturbed delta over 0.5 s, with the
    /// threshold test, end check and event bookkeeping).
    #[test]
    #[ignore = "benchmark; run with --release --ignored --nocapture"]
    fn resolution_benchmark() {
        let cpu = *cpus::online_cpus().last().unwrap();
        cpus::pin_current_thread(cpu).unwrap();
        const READS: u64 = 20_000_000;
        println!("CPU {cpu}, {READS} reads per calibration; cycles are TSC cycles");
        for read in [TimerRead::Rdtsc, TimerRead::LfenceRdtsc, TimerRead::Rdtscp] {
            if !tsc::supported(read) {
                println!("{}: not supported here", read.header_name());
                continue;
            }
            let bare = bare_calibrate(read, READS);
            let (bare_min_cycles, bare_mean) = bare_min(read, READS);
            let bare_t_min = bare.t_min;
            let ours = tsc::calibrate_read(read, READS);
            let ring = sampler::Ring::new(16, 4096);
            let stop = AtomicBool::new(false);
            let start = tsc::read(read);
            let (end, threshold) = (start + 1_000_000_000, 9 * ours.t_min);
            sampler::sample_with(read, &ring, start, end, threshold, &stop);
            let (mut events, mut jitter) = (0u64, 0u64);
            ring.drain(&mut 0, |e| {
                events += e.len() as u64;
                jitter += e.iter().map(|e| e.duration).sum::<u64>();
            });
            let loop_mean = (ring.end_tsc() - start - jitter) as f64 / (ring.reads() - events) as f64;
            println!(
                "{:<13} t_min: bare C loop {bare_t_min:>3}, tracecollector {:>3} ({:.2}x) | literal minimum: bare {bare_min_cycles}, ours {} | mean delta: textbook bare loop {bare_mean:.1}, bare store loop {:.1}, our calibration {:.1}, our sampling loop {loop_mean:.1} ({:.2}x textbook)",
                read.header_name(),
                ours.t_min,
                ours.t_min as f64 / bare_t_min as f64,
                ours.min,
                bare.mean,
                ours.mean,
                loop_mean / bare_mean
            );
            assert!(ours.t_min as f64 <= 1.2 * bare_t_min as f64, "t_min");
            assert!(loop_mean <= 1.2 * bare_mean, "sampling loop mean delta");
        }
    }

    #[test]
    fn bare_loop_runs() {
        let (min, mean) = bare_min(TimerRead::Rdtsc, 10_000);
        assert!(min < 10_000 && mean >= min as f64 && mean < 10_000.0, "{min} {mean}");
    }
}

//! Seeded synthetic jitter traces, for benchmarks and tests.
//!
//! The model is a Poisson stream of detours with log-uniform lengths, the
//! shape `tracecollector` sees on an idle Linux node (many short timer and
//! softirq detours, few long ones; jitSim §3.1 traces are of this kind):
//!
//! - detour lengths are log-uniform on `[lo, 22·lo]` cycles (the ratio of
//!   90 ns to 2 µs), with `lo` chosen so that the mean length times the rate
//!   gives the requested noise share: mean = `noise / rate` seconds and the
//!   log-uniform mean is `21·lo / ln 22`. Lengths are at least 1 cycle;
//! - the compute gap after each detour is exponential with mean
//!   `1/rate − mean length` seconds (so detours arrive at `rate` per
//!   second on average), rounded to whole cycles;
//! - the trace starts with a lead gap drawn like the others and its
//!   duration is the lead plus all detours and gaps.
//!
//! Every draw is SplitMix64 of `(seed, counter)`, so a trace depends only on
//! its parameters and seed.

use super::engine::splitmix;
use crate::jitter_trace::{JitterHeader, JitterRecord, JitterTrace};

/// Parameters of [`synthetic_trace`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynthSpec {
    /// Mean detours per second (> 0).
    pub rate_per_s: f64,
    /// Share of the time lost to detours, in (0, 1); 0.02 for 2 %.
    pub noise: f64,
    /// Trace length, seconds (> 0); the trace holds about `rate_per_s × duration_s` detours.
    pub duration_s: f64,
    /// Cycles per second of the trace's time stamps (its TSC frequency), Hz.
    pub hz: f64,
    /// Co-scheduler window length to mark in the header, cycles (jitSim §3.5); the
    /// detours are not moved into low-priority windows.
    pub cosched_window_cycles: Option<u64>,
    /// RNG seed.
    pub seed: u64,
}

/// Uniform in (0, 1) from 53 bits of `r`.
fn unit(r: u64) -> f64 {
    ((r >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A synthetic trace following the module's model: detours at `spec.rate_per_s`
/// per second on average, log-uniform lengths on `[lo, 22·lo]` cycles with
/// `spec.noise` of the time lost, exponential gaps; all times in cycles at `spec.hz`.
///
/// # Panics
/// If a parameter is out of range (rate, duration or frequency not positive,
/// noise outside (0, 1)).
pub fn synthetic_trace(spec: &SynthSpec) -> JitterTrace {
    assert!(spec.rate_per_s > 0.0 && spec.duration_s > 0.0 && spec.hz > 0.0, "rate, duration and frequency must be positive");
    assert!(spec.noise > 0.0 && spec.noise < 1.0, "noise must be in (0, 1)");
    const RATIO: f64 = 22.0;
    let mean_len_s = spec.noise / spec.rate_per_s;
    let lo_s = mean_len_s * RATIO.ln() / (RATIO - 1.0);
    let mean_gap_s = 1.0 / spec.rate_per_s - mean_len_s;
    let total = (spec.duration_s * spec.hz).round() as u64;
    let seed = spec.seed;
    let gap = |i: u64| (-unit(splitmix(seed, 2 * i)).ln() * mean_gap_s * spec.hz).round() as u64;
    let len = |i: u64| ((lo_s * RATIO.powf(unit(splitmix(seed, 2 * i + 1)))) * spec.hz).round().max(1.0) as u64;
    let mut lead = gap(0).min(total);
    let mut at = lead;
    let mut records = Vec::with_capacity((spec.rate_per_s * spec.duration_s * 1.1) as usize + 16);
    let mut i = 1u64;
    while at < total {
        let (j, g) = (len(i), gap(i));
        if at + j >= total {
            break;
        }
        let g = g.min(total - at - j);
        records.push(JitterRecord { jitter_cycles: j, cycles_to_next: g });
        at += j + g;
        i += 1;
    }
    // The last gap (or, without detours, the lead) reaches the end of the trace.
    match records.last_mut() {
        Some(r) => r.cycles_to_next += total - at,
        None => lead = total.max(1),
    }
    let duration_cycles = total.max(lead);
    let header = JitterHeader {
        host: "synthetic".into(),
        cpu: 0,
        tsc_hz: spec.hz,
        tsc_hz_kernel: None,
        tsc_hz_kernel_source: None,
        t_min_cycles: 1,
        threshold_cycles: 1,
        timer_read: "synthetic".into(),
        start_unix_ns: 0,
        requested_duration_s: spec.duration_s,
        kernel: format!("synthetic rate={} noise={} seed={}", spec.rate_per_s, spec.noise, spec.seed),
        cosched_window_cycles: spec.cosched_window_cycles,
        cosched_origin_cycles: spec.cosched_window_cycles.map(|_| 0),
    };
    JitterTrace { header, lead_cycles: lead, records, duration_cycles, dropped_events: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_noise_and_seed() {
        let spec = SynthSpec { rate_per_s: 10_000.0, noise: 0.02, duration_s: 2.0, hz: 1e9, cosched_window_cycles: None, seed: 5 };
        let t = synthetic_trace(&spec);
        assert_eq!(t.duration_cycles, 2_000_000_000);
        assert_eq!(t.lead_cycles + t.records.iter().map(|r| r.jitter_cycles + r.cycles_to_next).sum::<u64>(), t.duration_cycles);
        let rate = t.records.len() as f64 / spec.duration_s;
        assert!((rate / spec.rate_per_s - 1.0).abs() < 0.03, "{rate}");
        assert!((t.noise_fraction() / spec.noise - 1.0).abs() < 0.05, "{}", t.noise_fraction());
        let (lo, hi) = t.records.iter().fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r.jitter_cycles), hi.max(r.jitter_cycles)));
        assert!(hi <= 23 * lo, "{lo}..{hi}");
        assert_eq!(synthetic_trace(&spec), t);
        assert_ne!(synthetic_trace(&SynthSpec { seed: 6, ..spec }).records, t.records);
    }
}

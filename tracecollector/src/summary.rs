//! Jitter statistics in bounded memory: count, rate, noise fraction,
//! percentiles from a log-linear histogram, and a power-of-two table.
//!
//! Percentiles come from a log-linear histogram (128 linear sub-buckets per
//! power of two, as HdrHistogram does), so any run length costs 58 KiB per
//! CPU and a reported percentile is within 0.8 % of the exact one; min, max,
//! count and sums are exact.

use std::fmt::Write as _;

use serde::Serialize;

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = ((64 - SUB_BITS + 1) as usize) * SUB as usize;

/// Log-linear histogram of durations in cycles.
#[derive(Clone)]
pub struct LogHistogram {
    counts: Box<[u64]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram { counts: vec![0; BUCKETS].into_boxed_slice(), count: 0, sum: 0, min: u64::MAX, max: 0 }
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // ≥ SUB_BITS
    let shift = e - SUB_BITS;
    ((shift + 1) as u64 * SUB + ((v >> shift) - SUB)) as usize
}

/// Lowest and highest value of bucket `i`.
fn bucket_range(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i);
    }
    let shift = i / SUB - 1;
    let lo = (SUB + i % SUB) << shift;
    (lo, lo + ((1u64 << shift) - 1))
}

impl LogHistogram {
    /// Adds one value (cycles).
    pub fn add(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds all of `other`'s values.
    pub fn merge(&mut self, other: &LogHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the values, cycles.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// The `q`-quantile (0 ≤ q ≤ 1; nearest rank), cycles, within 0.8 %; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        // Our own: statrs computes quantiles from the samples, not from histogram buckets.
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bucket_range(i);
                return Some((lo + (hi - lo) / 2).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// Duration statistics, nanoseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Percentiles {
    /// Shortest event.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Longest event.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

/// One row of the power-of-two histogram table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HistBin {
    /// Lower bound (inclusive), ns.
    pub lo_ns: u64,
    /// Upper bound (exclusive), ns.
    pub hi_ns: u64,
    /// Events in the bin.
    pub events: u64,
    /// Time lost to the bin's events, ns.
    pub noise_ns: f64,
}

/// Bounded-memory statistics of one CPU's (or the node's) events.
#[derive(Clone)]
pub struct Stats {
    /// Durations in cycles.
    pub hist: LogHistogram,
    /// Events per power-of-two ns bin `[2^k, 2^(k+1))`.
    pub pow2_events: [u64; 64],
    /// Cycles of jitter per power-of-two ns bin.
    pub pow2_cycles: [u128; 64],
    /// Measured time, cycles (summed over CPUs for the node).
    pub measured_cycles: u128,
    ns_per_cycle: f64,
}

/// Summary of a set of events, as printed and written to JSON.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DurationSummary {
    /// Number of events.
    pub events: u64,
    /// Events per second of measured time (per CPU; for the node, summed over CPUs).
    pub rate_per_s: f64,
    /// Share of measured time lost to jitter, percent.
    pub noise_pct: f64,
    /// Event durations, ns; `None` with no events.
    pub jitter_ns: Option<Percentiles>,
    /// Power-of-two histogram from the shortest to the longest event.
    pub histogram: Vec<HistBin>,
}

impl Stats {
    /// Empty statistics for a counter running at `tsc_hz`.
    pub fn new(tsc_hz: f64) -> Stats {
        Stats { hist: LogHistogram::default(), pow2_events: [0; 64], pow2_cycles: [0; 64], measured_cycles: 0, ns_per_cycle: 1e9 / tsc_hz }
    }

    /// Adds one event of `cycles`.
    pub fn add(&mut self, cycles: u64) {
        self.hist.add(cycles);
        let ns = (cycles as f64 * self.ns_per_cycle) as u64;
        let k = 63 - ns.max(1).leading_zeros() as usize;
        self.pow2_events[k] += 1;
        self.pow2_cycles[k] += cycles as u128;
    }

    /// Adds `other` (another CPU) into these node-wide statistics.
    pub fn merge(&mut self, other: &Stats) {
        self.hist.merge(&other.hist);
        for k in 0..64 {
            self.pow2_events[k] += other.pow2_events[k];
            self.pow2_cycles[k] += other.pow2_cycles[k];
        }
        self.measured_cycles += other.measured_cycles;
    }

    /// The summary, with `seconds` of wall time for the rate (the node's rate
    /// is events per wall second, summed over CPUs).
    pub fn summary(&self, seconds: f64) -> DurationSummary {
        let ns = |c: u64| c as f64 * self.ns_per_cycle;
        let h = &self.hist;
        let jitter_ns = (h.count() > 0).then(|| Percentiles {
            min: ns(h.min),
            median: ns(h.quantile(0.5).unwrap_or(0)),
            p90: ns(h.quantile(0.9).unwrap_or(0)),
            p99: ns(h.quantile(0.99).unwrap_or(0)),
            p99_9: ns(h.quantile(0.999).unwrap_or(0)),
            max: ns(h.max),
            mean: h.sum() as f64 / h.count() as f64 * self.ns_per_cycle,
        });
        let used: Vec<usize> = (0..64).filter(|&k| self.pow2_events[k] > 0).collect();
        let histogram = match (used.first(), used.last()) {
            (Some(&a), Some(&b)) => (a..=b)
                .map(|k| HistBin {
                    lo_ns: 1 << k,
                    hi_ns: 1u64.checked_shl(k as u32 + 1).unwrap_or(u64::MAX),
                    events: self.pow2_events[k],
                    noise_ns: self.pow2_cycles[k] as f64 * self.ns_per_cycle,
                })
                .collect(),
            _ => Vec::new(),
        };
        let noise_pct = if self.measured_cycles == 0 { 0.0 } else { 100.0 * h.sum() as f64 / self.measured_cycles as f64 };
        DurationSummary {
            events: h.count(),
            rate_per_s: if seconds > 0.0 { h.count() as f64 / seconds } else { 0.0 },
            noise_pct,
            jitter_ns,
            histogram,
        }
    }
}

/// Formats a duration in ns with a unit that keeps 3–4 significant digits.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Renders the histogram table: one count column per summary (`columns`
/// gives their titles), plus the last summary's share of noise time.
pub fn histogram_table(columns: &[(&str, &DurationSummary)]) -> String {
    let mut lo = u64::MAX;
    let mut hi = 0;
    for (_, s) in columns {
        for b in &s.histogram {
            lo = lo.min(b.lo_ns);
            hi = hi.max(b.lo_ns);
        }
    }
    let mut out = String::new();
    if lo > hi {
        out.push_str("(no events)\n");
        return out;
    }
    let _ = write!(out, "{:<24}", "duration");
    for (name, _) in columns {
        let _ = write!(out, "{name:>10}");
    }
    let _ = writeln!(out, "{:>14}", "noise share");
    let node = columns.last().map(|c| c.1);
    let node_noise: f64 = node.map_or(0.0, |n| n.histogram.iter().map(|b| b.noise_ns).sum());
    let mut k = lo;
    while k <= hi && k != 0 {
        let range = format!("[{}, {})", fmt_ns(k as f64), fmt_ns(2.0 * k as f64));
        let _ = write!(out, "{range:<24}");
        for (_, s) in columns {
            let n = s.histogram.iter().find(|b| b.lo_ns == k).map_or(0, |b| b.events);
            let _ = write!(out, "{n:>10}");
        }
        let share = node.and_then(|n| n.histogram.iter().find(|b| b.lo_ns == k)).map_or(0.0, |b| b.noise_ns);
        let pct = if node_noise > 0.0 { 100.0 * share / node_noise } else { 0.0 };
        let _ = writeln!(out, "{pct:>13.1}%");
        k = k.wrapping_shl(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_in_order() {
        let mut last = 0;
        for v in [0u64, 1, 127, 128, 129, 255, 256, 1000, 123_456, u64::MAX / 3, u64::MAX] {
            let (lo, hi) = bucket_range(bucket(v));
            assert!(lo <= v && v <= hi, "{v} not in [{lo}, {hi}]");
            assert!((hi - lo) as f64 <= lo as f64 / 127.0 + 1.0);
            assert!(bucket(v) >= last);
            last = bucket(v);
        }
        assert!(bucket(u64::MAX) < BUCKETS);
    }

    /// Synthetic events: 1000 of 1..=1000 µs at 1 GHz (1 cycle = 1 ns) over 10 s on 2 CPUs.
    #[test]
    fn summary_statistics_on_synthetic_records() {
        let mut cpu0 = Stats::new(1e9);
        let mut cpu1 = Stats::new(1e9);
        for i in 1..=1000u64 {
            cpu0.add(i * 1000);
        }
        cpu1.add(5_000);
        cpu0.measured_cycles = 10_000_000_000;
        cpu1.measured_cycles = 10_000_000_000;
        let s = cpu0.summary(10.0);
        assert_eq!(s.events, 1000);
        assert!((s.rate_per_s - 100.0).abs() < 1e-9);
        // Σ i µs for i ≤ 1000 = 500.5 ms of 10 s.
        assert!((s.noise_pct - 5.005).abs() < 1e-9, "{}", s.noise_pct);
        let p = s.jitter_ns.clone().unwrap();
        let close = |got: f64, want: f64| (got / want - 1.0).abs() < 0.008;
        assert_eq!((p.min, p.max), (1000.0, 1_000_000.0));
        assert!(close(p.median, 500_000.0) && close(p.p90, 900_000.0), "{p:?}");
        assert!(close(p.p99, 990_000.0) && close(p.p99_9, 999_000.0), "{p:?}");
        assert!((p.mean - 500_500.0).abs() < 1e-6);
        // Bins [512 ns, 1 µs) … [512 µs, 1.024 ms): 1 µs lands in [512, 1024).
        assert_eq!(s.histogram.first().unwrap().lo_ns, 512);
        assert_eq!(s.histogram.last().unwrap().lo_ns, 524_288);
        assert_eq!(s.histogram.iter().map(|b| b.events).sum::<u64>(), 1000);

        let mut node = Stats::new(1e9);
        node.merge(&cpu0);
        node.merge(&cpu1);
        let n = node.summary(10.0);
        assert_eq!(n.events, 1001);
        assert!((n.noise_pct - (500_500_000.0 + 5000.0) / 2e10 * 100.0).abs() < 1e-9);
        let table = histogram_table(&[("cpu0", &s), ("cpu1", &cpu1.summary(10.0)), ("node", &n)]);
        assert!(table.lines().count() == 12, "{table}");
        assert!(table.contains("[4.10 µs, 8.19 µs)"), "{table}");
        let empty = Stats::new(1e9).summary(1.0);
        assert_eq!((empty.events, empty.jitter_ns.is_none(), empty.noise_pct), (0, true, 0.0));
    }
}

//! The results of a run: per-CPU and node summaries, as JSON (`--json`,
//! `<host>.summary.json`) and as text (`<host>.summary.txt`).

use std::path::PathBuf;

use serde::Serialize;

use crate::summary::{fmt_ns, histogram_table, DurationSummary};

/// One CPU's results.
#[derive(Debug, Clone, Serialize)]
pub struct CpuReport {
    /// Logical CPU.
    pub cpu: u32,
    /// Calibrated t_min, cycles.
    pub t_min_cycles: u64,
    /// Literal smallest delta seen during calibration, cycles (t_min is the trimmed mean period instead; see [`crate::tsc::t_min_from_hist`]).
    pub min_delta_cycles: u64,
    /// Mean undisturbed delta of the sampling loop itself, cycles: (measured − jitter) ÷ (reads − events).
    pub loop_mean_delta_cycles: f64,
    /// Threshold used, cycles.
    pub threshold_cycles: u64,
    /// t_min, ns.
    pub t_min_ns: f64,
    /// Threshold, ns.
    pub threshold_ns: f64,
    /// Measured time, seconds.
    pub measured_s: f64,
    /// Events lost to full buffers (0 in a good run).
    pub dropped_events: u64,
    /// Whether the sample buffers were locked in memory.
    pub mlocked: bool,
    /// The trace file.
    pub trace: PathBuf,
    /// The netgauge export, if written.
    pub netgauge: Option<PathBuf>,
    /// Count, rate, noise %, percentiles, histogram.
    #[serde(flatten)]
    pub summary: DurationSummary,
}

/// The whole node's results; printed by `--json` and written as `<host>.summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Counter read used.
    pub timer_read: &'static str,
    /// Measured TSC frequency, Hz.
    pub tsc_hz: f64,
    /// The kernel's TSC frequency, Hz, when found.
    pub tsc_hz_kernel: Option<f64>,
    /// Where the kernel's value came from.
    pub tsc_hz_kernel_source: Option<&'static str>,
    /// (measured − kernel) ÷ kernel, percent.
    pub tsc_hz_diff_pct: Option<f64>,
    /// The threshold rule, e.g. `9 x t_min`.
    pub threshold_rule: String,
    /// Start of the measurement, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// Requested duration, seconds.
    pub requested_duration_s: f64,
    /// Co-scheduler window, cycles, if marked.
    pub cosched_window_cycles: Option<u64>,
    /// Text summary file.
    pub summary_text: PathBuf,
    /// JSON summary file.
    pub summary_json: PathBuf,
    /// Histogram plot.
    pub histogram_svg: PathBuf,
    /// Warnings printed during the run.
    pub warnings: Vec<String>,
    /// Per-CPU results.
    pub cpus: Vec<CpuReport>,
    /// Node-wide results (rate summed over CPUs, noise % over all CPU time).
    pub node: DurationSummary,
}

/// The human-readable summary: setup, one line per CPU and the node, and the histogram table.
pub fn render_text(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "tracecollector on {} (kernel {}), {} CPU(s), read {}", r.host, r.kernel, r.cpus.len(), r.timer_read);
    let kernel = match (r.tsc_hz_kernel, r.tsc_hz_kernel_source, r.tsc_hz_diff_pct) {
        (Some(k), Some(src), Some(d)) => {
            format!("kernel {:.3} MHz from {src}, diff {d:+.4}%", k / 1e6)
        }
        _ => "kernel value not available".into(),
    };
    let _ = writeln!(s, "TSC {:.3} MHz measured against CLOCK_MONOTONIC_RAW ({kernel})", r.tsc_hz / 1e6);
    let _ = writeln!(s, "threshold {}; durations below are per event\n", r.threshold_rule);
    let _ = writeln!(
        s,
        "{:<6}{:>7}{:>8}{:>9}{:>10}{:>9}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "cpu", "t_min", "thresh", "events", "rate/s", "noise%", "min", "median", "p90", "p99", "p99.9", "max"
    );
    let row = |s: &mut String, name: String, tmin: String, th: String, d: &DurationSummary| {
        let p = |f: fn(&crate::summary::Percentiles) -> f64| d.jitter_ns.as_ref().map_or("-".into(), |x| fmt_ns(f(x)));
        let _ = writeln!(
            s,
            "{name:<6}{tmin:>7}{th:>8}{:>9}{:>10.1}{:>9.4}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
            d.events,
            d.rate_per_s,
            d.noise_pct,
            p(|x| x.min),
            p(|x| x.median),
            p(|x| x.p90),
            p(|x| x.p99),
            p(|x| x.p99_9),
            p(|x| x.max)
        );
    };
    for c in &r.cpus {
        row(&mut s, c.cpu.to_string(), c.t_min_cycles.to_string(), c.threshold_cycles.to_string(), &c.summary);
    }
    row(&mut s, "node".into(), String::new(), String::new(), &r.node);
    let _ = writeln!(s, "\n(t_min and thresh in TSC cycles; node rate is summed over CPUs, node noise is over all CPU time)\n");
    let mut cols: Vec<(String, &DurationSummary)> = Vec::new();
    if r.cpus.len() <= 8 {
        cols.extend(r.cpus.iter().map(|c| (format!("cpu{}", c.cpu), &c.summary)));
    }
    cols.push(("node".into(), &r.node));
    let cols: Vec<(&str, &DurationSummary)> = cols.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let _ = writeln!(s, "histogram (events per power-of-two duration bin; noise share = node time lost in the bin)");
    s.push_str(&histogram_table(&cols));
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

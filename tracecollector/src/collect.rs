//! One collection run: validate, calibrate, sample every CPU, write traces,
//! summary and plot.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use simulator::jitter_trace::{trace_file_name, JitterHeader, JitterWriter, NetgaugeWriter};

use crate::report::{render_text, CpuReport, Report};
use crate::summary::{DurationSummary, Stats};
use crate::tsc::{self, TimerRead};
use crate::{cpus, sampler, CollectError, CollectErrorKind};

/// How the jitter threshold is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A multiple of t_min (default 9, netgauge's rule).
    TMinFactor(u64),
    /// A fixed number of TSC cycles.
    Cycles(u64),
    /// A fixed time in nanoseconds, converted with the measured TSC frequency.
    Ns(f64),
}

/// What to collect and where. Build with [`Config::new`], then set fields.
#[derive(Debug, Clone)]
pub struct Config {
    /// Measurement length, seconds (> 0).
    pub duration_s: f64,
    /// Output directory, created if missing.
    pub out_dir: PathBuf,
    /// CPUs to sample; default `None`, every online CPU this process may use.
    pub cpus: Option<Vec<u32>>,
    /// Jitter threshold; default `TMinFactor(9)`.
    pub threshold: Threshold,
    /// Counter read; default [`TimerRead::Rdtsc`].
    pub timer_read: TimerRead,
    /// Mark co-scheduler windows of this many cycles (jitSim §3.5); default none.
    pub cosched_window_cycles: Option<u64>,
    /// Also write the netgauge/LogGOPSim export; default false.
    pub netgauge: bool,
    /// Show a progress bar on stderr for runs over 1 s (only on a terminal); default true.
    pub progress: bool,
    /// Pin the writer (this thread) to this CPU; default none.
    pub writer_cpu: Option<u32>,
    /// Reads used to calibrate t_min; default 2,000,000 (~20–50 ms).
    pub calibration_reads: u64,
    /// Events per buffer chunk; default 4096 (64 KiB).
    pub chunk_events: usize,
    /// Chunks per CPU; default 16 (1 MiB per CPU, ~650k events/s of headroom at a 100 ms drain).
    pub chunks: usize,
}

impl Config {
    /// A run of `duration_s` seconds writing to `out_dir`, all other settings at their defaults.
    pub fn new(duration_s: f64, out_dir: impl Into<PathBuf>) -> Config {
        Config {
            duration_s,
            out_dir: out_dir.into(),
            cpus: None,
            threshold: Threshold::TMinFactor(9),
            timer_read: TimerRead::Rdtsc,
            cosched_window_cycles: None,
            netgauge: false,
            progress: true,
            writer_cpu: None,
            calibration_reads: 2_000_000,
            chunk_events: 4096,
            chunks: 16,
        }
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn warn(warnings: &mut Vec<String>, w: String) {
    eprintln!("tracecollector: warning: {w}");
    warnings.push(w);
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CollectError + '_ {
    move |error| CollectErrorKind::Io { path: path.to_path_buf(), error }.into()
}

/// Host name (`uname` nodename, `localhost` when empty), with `/` and
/// whitespace made file-name safe.
pub fn host_name() -> String {
    let name = gethostname::gethostname().to_string_lossy().into_owned();
    let name = if name.is_empty() { "localhost".into() } else { name };
    name.chars().map(|c| if c == '/' || c.is_whitespace() { '_' } else { c }).collect()
}

/// Kernel release (`uname -r`).
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_else(|_| "unknown".into())
}

/// Checks the inputs that need no measurement; returns the CPUs to sample
/// and any warnings. Called first by [`run`], so bad input fails fast.
///
/// # Errors
/// A usage error ([`CollectError::is_usage`]) for a bad duration, threshold,
/// window, CPU or output directory.
pub fn validate(cfg: &Config) -> Result<(Vec<u32>, Vec<String>), CollectError> {
    if !(cfg.duration_s.is_finite() && cfg.duration_s > 0.0) {
        return Err(CollectErrorKind::BadDuration(cfg.duration_s.to_string()).into());
    }
    match cfg.threshold {
        Threshold::TMinFactor(0) | Threshold::Cycles(0) => {
            return Err(CollectErrorKind::BadThreshold("the threshold must be positive".into()).into())
        }
        Threshold::Ns(ns) if !(ns.is_finite() && ns > 0.0) => {
            return Err(CollectErrorKind::BadThreshold(format!("--threshold-ns must be positive, got {ns}")).into())
        }
        _ => {}
    }
    if cfg.cosched_window_cycles == Some(0) {
        return Err(CollectErrorKind::BadThreshold("--cosched-window must be positive".into()).into());
    }
    if !tsc::supported(cfg.timer_read) {
        let what = format!("{} is not supported by this CPU", cfg.timer_read.header_name());
        return Err(CollectErrorKind::Unsupported(what).into());
    }
    let out_err = |error| CollectError::from(CollectErrorKind::OutDir { path: cfg.out_dir.clone(), error });
    std::fs::create_dir_all(&cfg.out_dir).map_err(out_err)?;
    let probe = cfg.out_dir.join(format!(".tracecollector-probe-{}", std::process::id()));
    File::create(&probe).map_err(out_err)?;
    let _ = std::fs::remove_file(&probe);
    if let Some(w) = cfg.writer_cpu {
        cpus::resolve_cpus(Some(&[w]))?;
    }
    cpus::resolve_cpus(cfg.cpus.as_deref())
}

/// What a sampling thread reports after calibrating.
struct Ready {
    ring: Arc<sampler::Ring>,
    t_min: u64,
    min_delta: u64,
    threshold: u64,
}

struct Output {
    trace_path: PathBuf,
    trace: JitterWriter<BufWriter<File>>,
    netgauge: Option<(PathBuf, NetgaugeWriter<BufWriter<File>>)>,
}

/// Runs one collection (see the crate doc) and writes all files.
///
/// # Errors
/// Usage errors from [`validate`]; [`CollectErrorKind::Pin`] or
/// [`CollectErrorKind::Sampler`] if a sampling thread fails;
/// [`CollectErrorKind::Io`] naming the file if writing fails.
pub fn run(cfg: &Config) -> Result<Report, CollectError> {
    let (cpu_list, mut warnings) = validate(cfg)?;
    for w in std::mem::take(&mut warnings) {
        warn(&mut warnings, w);
    }
    let host = host_name();
    let kernel = kernel_release();
    if let Some(w) = cfg.writer_cpu {
        cpus::pin_current_thread(w)?;
        if cpu_list.contains(&w) {
            warn(&mut warnings, format!("the writer shares CPU {w} with a sampler; its wake-ups will show in that trace"));
        }
    }
    let tsc_hz = tsc::measure_tsc_hz(Duration::from_millis(100));
    let kernel_hz = tsc::kernel_tsc_hz();
    let diff_pct = kernel_hz.map(|(k, _)| 100.0 * (tsc_hz / k - 1.0));
    if let (Some(d), Some((k, src))) = (diff_pct, kernel_hz) {
        if d.abs() > 0.1 {
            warn(&mut warnings, format!("measured TSC {tsc_hz:.0} Hz differs by {d:.3}% from the kernel's {k:.0} Hz ({src})"));
        }
    }
    let reference = tsc::clock_pair(libc::CLOCK_REALTIME);
    let duration_cycles = (cfg.duration_s * tsc_hz) as u64;
    // SAFETY: the handler only stores to an atomic.
    let old: Vec<_> = [libc::SIGINT, libc::SIGTERM]
        .iter()
        .map(|&s| (s, unsafe { libc::signal(s, on_signal as *const () as libc::sighandler_t) }))
        .collect();
    STOP.store(false, Ordering::Relaxed);

    // Start the samplers; each pins, allocates, calibrates, then waits.
    let barrier = Arc::new(Barrier::new(cpu_list.len() + 1));
    let starts: Arc<Vec<AtomicU64>> = Arc::new(cpu_list.iter().map(|_| AtomicU64::new(0)).collect());
    let (tx, rx) = mpsc::channel::<(usize, Result<Ready, CollectError>)>();
    let mut handles = Vec::new();
    for (i, &cpu) in cpu_list.iter().enumerate() {
        let (tx, barrier, starts, cfg) = (tx.clone(), barrier.clone(), starts.clone(), cfg.clone());
        let h = std::thread::Builder::new()
            .name(format!("sampler-cpu{cpu}"))
            .spawn(move || sampler_thread(i, cpu, &cfg, tsc_hz, duration_cycles, tx, &barrier, &starts))
            .map_err(|e| CollectErrorKind::Sampler { cpu, what: e.to_string() })?;
        handles.push(h);
    }
    drop(tx);
    let mut ready: Vec<Option<Ready>> = cpu_list.iter().map(|_| None).collect();
    let mut first_err = None;
    for (i, r) in rx.iter().take(cpu_list.len()) {
        match r {
            Ok(r) => ready[i] = Some(r),
            Err(e) => first_err = first_err.or(Some(e)),
        }
    }
    if first_err.is_some() || ready.iter().any(Option::is_none) {
        STOP.store(true, Ordering::Relaxed);
        barrier.wait();
        handles.into_iter().for_each(|h| drop(h.join()));
        restore(&old);
        return Err(first_err.unwrap_or_else(|| CollectErrorKind::Sampler { cpu: 0, what: "exited early".into() }.into()));
    }
    let ready: Vec<Ready> = ready.into_iter().map(Option::unwrap).collect();
    let unlocked: Vec<u32> = cpu_list.iter().zip(&ready).filter(|(_, r)| !r.ring.locked()).map(|(c, _)| *c).collect();
    if !unlocked.is_empty() {
        let what = format!("mlock failed for CPUs {} (RLIMIT_MEMLOCK); buffers are prefaulted instead", cpus::format_cpu_list(&unlocked));
        warn(&mut warnings, what);
    }
    barrier.wait(); // go
    while starts.iter().any(|s| s.load(Ordering::Acquire) == 0) {
        std::thread::sleep(Duration::from_millis(1)); // not a spin: this CPU may be sampled
    }

    // Open the outputs now that each start time is known.
    let ns_per_cycle = 1e9 / tsc_hz;
    let mut outputs = Vec::new();
    let mut stats = Vec::new();
    let mut start_unix_first = u64::MAX;
    for (i, &cpu) in cpu_list.iter().enumerate() {
        let start = starts[i].load(Ordering::Acquire);
        let start_unix_ns = (reference.ns as f64 + (start as f64 - reference.tsc as f64) * ns_per_cycle) as u64;
        start_unix_first = start_unix_first.min(start_unix_ns);
        let cosched_origin_cycles = cfg.cosched_window_cycles.map(|w| {
            // First window boundary at or after the start, aligned to wall-clock multiples of the window.
            let w_ns = w as f64 * ns_per_cycle;
            let next = (start_unix_ns as f64 / w_ns).ceil() * w_ns;
            ((next - start_unix_ns as f64) / ns_per_cycle).round() as u64 % w
        });
        let header = JitterHeader {
            host: host.clone(),
            cpu,
            tsc_hz,
            tsc_hz_kernel: kernel_hz.map(|k| k.0),
            tsc_hz_kernel_source: kernel_hz.map(|k| k.1.to_string()),
            t_min_cycles: ready[i].t_min,
            threshold_cycles: ready[i].threshold,
            timer_read: cfg.timer_read.header_name().into(),
            start_unix_ns,
            requested_duration_s: cfg.duration_s,
            kernel: kernel.clone(),
            cosched_window_cycles: cfg.cosched_window_cycles,
            cosched_origin_cycles,
        };
        let trace_path = cfg.out_dir.join(trace_file_name(&host, cpu));
        let f = File::create(&trace_path).map_err(io_err(&trace_path))?;
        let trace = JitterWriter::new(BufWriter::new(f), &header).map_err(io_err(&trace_path))?;
        let netgauge = if cfg.netgauge {
            let p = cfg.out_dir.join(format!("{host}.cpu{cpu}.netgauge"));
            let f = File::create(&p).map_err(io_err(&p))?;
            let w = NetgaugeWriter::new(BufWriter::new(f), &header).map_err(io_err(&p))?;
            Some((p, w))
        } else {
            None
        };
        outputs.push(Output { trace_path, trace, netgauge });
        stats.push(Stats::new(tsc_hz));
    }

    // The writer loop.
    let show = cfg.progress && cfg.duration_s > 1.0;
    let bar = progress_bar(show, cfg.duration_s, cpu_list.len());
    let mut next = vec![0usize; cpu_list.len()];
    let mut write_err: Option<CollectError> = None;
    let mut events_total = 0u64;
    let t0 = std::time::Instant::now();
    loop {
        let done = ready.iter().all(|r| r.ring.finished());
        for (i, r) in ready.iter().enumerate() {
            let start = starts[i].load(Ordering::Relaxed);
            let (out, st) = (&mut outputs[i], &mut stats[i]);
            events_total += r.ring.drain(&mut next[i], |events| {
                for e in events {
                    st.add(e.duration);
                    if write_err.is_some() {
                        continue;
                    }
                    let at = e.start - start;
                    let mut res = out.trace.event(at, e.duration).map_err(io_err(&out.trace_path));
                    if let (Ok(()), Some((p, ng))) = (&res, out.netgauge.as_mut()) {
                        res = ng.event(at, e.duration).map_err(io_err(p));
                    }
                    if let Err(e) = res {
                        STOP.store(true, Ordering::Relaxed);
                        write_err = Some(e);
                    }
                }
            }) as u64;
        }
        if done {
            break;
        }
        if let Some(b) = &bar {
            b.set_position((t0.elapsed().as_secs_f64() * 10.0).min(cfg.duration_s * 10.0) as u64);
            b.set_message(format!("{events_total} events"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    handles.into_iter().for_each(|h| drop(h.join()));
    restore(&old);
    if let Some(e) = write_err {
        return Err(e);
    }
    if STOP.load(Ordering::Relaxed) {
        warn(&mut warnings, "interrupted; traces cover the time up to the signal".into());
    }

    // Close the traces and summarize.
    let mut cpu_reports = Vec::new();
    let mut node = Stats::new(tsc_hz);
    let mut max_seconds: f64 = 0.0;
    for (i, (out, r)) in outputs.into_iter().zip(&ready).enumerate() {
        let measured = r.ring.end_tsc().saturating_sub(starts[i].load(Ordering::Relaxed));
        let dropped = r.ring.dropped();
        if dropped > 0 {
            warn(&mut warnings, format!("CPU {}: {dropped} events dropped (the writer fell behind)", cpu_list[i]));
        }
        let mut f = out.trace.finish(measured, dropped).map_err(io_err(&out.trace_path))?;
        f.flush().map_err(io_err(&out.trace_path))?;
        let netgauge = match out.netgauge {
            Some((p, ng)) => {
                ng.finish(measured).and_then(|mut f| f.flush()).map_err(io_err(&p))?;
                Some(p)
            }
            None => None,
        };
        stats[i].measured_cycles = measured as u128;
        node.merge(&stats[i]);
        let seconds = measured as f64 * ns_per_cycle / 1e9;
        max_seconds = max_seconds.max(seconds);
        cpu_reports.push(CpuReport {
            cpu: cpu_list[i],
            t_min_cycles: r.t_min,
            min_delta_cycles: r.min_delta,
            loop_mean_delta_cycles: {
                let undisturbed = r.ring.reads().saturating_sub(stats[i].hist.count()).max(1);
                (measured as f64 - stats[i].hist.sum() as f64) / undisturbed as f64
            },
            threshold_cycles: r.threshold,
            t_min_ns: r.t_min as f64 * ns_per_cycle,
            threshold_ns: r.threshold as f64 * ns_per_cycle,
            measured_s: seconds,
            dropped_events: dropped,
            mlocked: r.ring.locked(),
            trace: out.trace_path,
            netgauge,
            summary: stats[i].summary(seconds),
        });
    }
    let summary_text = cfg.out_dir.join(format!("{host}.summary.txt"));
    let summary_json = cfg.out_dir.join(format!("{host}.summary.json"));
    let histogram_svg = cfg.out_dir.join(format!("{host}.histogram.svg"));
    let threshold_rule = match cfg.threshold {
        Threshold::TMinFactor(k) => format!("{k} x t_min"),
        Threshold::Cycles(c) => format!("{c} cycles"),
        Threshold::Ns(ns) => format!("{ns} ns"),
    };
    let report = Report {
        host,
        kernel,
        timer_read: cfg.timer_read.header_name(),
        tsc_hz,
        tsc_hz_kernel: kernel_hz.map(|k| k.0),
        tsc_hz_kernel_source: kernel_hz.map(|k| k.1),
        tsc_hz_diff_pct: diff_pct,
        threshold_rule,
        start_unix_ns: start_unix_first,
        requested_duration_s: cfg.duration_s,
        cosched_window_cycles: cfg.cosched_window_cycles,
        summary_text: summary_text.clone(),
        summary_json: summary_json.clone(),
        histogram_svg: histogram_svg.clone(),
        warnings,
        cpus: cpu_reports,
        node: node.summary(max_seconds),
    };
    std::fs::write(&summary_text, render_text(&report)).map_err(io_err(&summary_text))?;
    let json = serde_json::to_string_pretty(&report).expect("report serializes");
    std::fs::write(&summary_json, json + "\n").map_err(io_err(&summary_json))?;
    let mut series: Vec<(String, &DurationSummary)> = report.cpus.iter().map(|c| (format!("cpu{}", c.cpu), &c.summary)).collect();
    series.push(("node".into(), &report.node));
    let title = format!("OS jitter on {} ({} CPUs, {:.1} s)", report.host, report.cpus.len(), max_seconds);
    crate::plot::histogram_svg(&histogram_svg, &title, &series)
        .map_err(|x| CollectErrorKind::Io { path: histogram_svg.clone(), error: std::io::Error::other(x.what) })?;
    Ok(report)
}

fn restore(old: &[(libc::c_int, libc::sighandler_t)]) {
    for &(s, h) in old {
        // SAFETY: reinstalls the handler that was there before.
        unsafe { libc::signal(s, h) };
    }
}

fn progress_bar(show: bool, duration_s: f64, ncpus: usize) -> Option<indicatif::ProgressBar> {
    if !show {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some((duration_s * 10.0) as u64), indicatif::ProgressDrawTarget::stderr_with_hz(2));
    let style = indicatif::ProgressStyle::with_template(&format!(
        "sampling {ncpus} CPU(s) [{{elapsed_precise}}] {{bar:40}} {{percent:>3}}% {{msg}}"
    ))
    .expect("valid template");
    bar.set_style(style);
    Some(bar)
}

#[allow(clippy::too_many_arguments)]
fn sampler_thread(
    i: usize,
    cpu: u32,
    cfg: &Config,
    tsc_hz: f64,
    duration_cycles: u64,
    tx: mpsc::Sender<(usize, Result<Ready, CollectError>)>,
    barrier: &Barrier,
    starts: &[AtomicU64],
) {
    let setup = || -> Result<Ready, CollectError> {
        cpus::pin_current_thread(cpu)?;
        if cpus::current_cpu().is_some_and(|c| c != cpu) {
            return Err(CollectErrorKind::Sampler { cpu, what: "pinned but running elsewhere".into() }.into());
        }
        let ring = Arc::new(sampler::Ring::new(cfg.chunks, cfg.chunk_events));
        let cal = tsc::calibrate_read(cfg.timer_read, cfg.calibration_reads);
        let t_min = cal.t_min.max(1);
        let threshold = match cfg.threshold {
            Threshold::TMinFactor(k) => k * t_min,
            Threshold::Cycles(c) => c,
            Threshold::Ns(ns) => ((ns * tsc_hz / 1e9).round() as u64).max(1),
        };
        Ok(Ready { ring, t_min, min_delta: cal.min, threshold })
    };
    let r = setup();
    let go = r.as_ref().ok().map(|r| (r.ring.clone(), r.threshold));
    let scratch = sampler::Ring::new(1, 256);
    let _ = tx.send((i, r));
    drop(tx);
    barrier.wait();
    let Some((ring, threshold)) = go else { return };
    if STOP.load(Ordering::Relaxed) {
        return;
    }
    // Warm up: 2 ms of the same loop into a scratch ring, so the first real
    // deltas do not include cold instruction caches and branch predictors.
    let warm = tsc::read(cfg.timer_read);
    let warm_cycles = (tsc_hz * 0.002) as u64;
    sampler::sample_with(cfg.timer_read, &scratch, warm, warm + warm_cycles, threshold, &STOP);
    let start = tsc::read(cfg.timer_read);
    starts[i].store(start.max(1), Ordering::Release);
    let end = start.saturating_add(duration_cycles);
    sampler::sample_with(cfg.timer_read, &ring, start, end, threshold, &STOP);
}

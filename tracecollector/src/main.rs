//! `tracecollector`: per-CPU OS-jitter traces (jitSim §3.1). A thin CLI over
//! [`tracecollector::collect::run`].
//!
//! Exit status: 0 on success, 2 for bad input (one line on stderr), 1 when
//! the run itself fails.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tracecollector::collect::{self, Config, Threshold};
use tracecollector::cpus::parse_cpu_list;
use tracecollector::tsc::TimerRead;

/// Record per-CPU OS-jitter traces with a timestamp-counter loop (jitSim §3.1).
///
/// One pinned thread per CPU reads the TSC in a tight loop and records every
/// delta above the threshold. Writes `<host>.cpu<N>.jitter` per CPU,
/// `<host>.summary.{txt,json}` and `<host>.histogram.svg` into --out. For a
/// cluster, run one instance per node, e.g.
/// `mpirun --map-by ppr:1:node --bind-to none tracecollector --duration 60 --out shared/dir`
/// or `srun --ntasks-per-node=1 --exclusive tracecollector ...`; no MPI is needed.
#[derive(Parser, Debug)]
#[command(name = "tracecollector", version)]
struct Cli {
    /// Measurement length in seconds (> 0).
    #[arg(long, allow_hyphen_values = true)]
    duration: String,
    /// Output directory (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// CPUs to sample, kernel cpulist syntax (`0,1`, `0-3`, `0-15:2`). Default: all online CPUs.
    #[arg(long, allow_hyphen_values = true)]
    cpus: Option<String>,
    /// Jitter threshold in TSC cycles. Default: 9 × t_min (netgauge's rule).
    #[arg(long, conflicts_with_all = ["threshold_ns", "threshold_factor"])]
    threshold_cycles: Option<u64>,
    /// Jitter threshold in nanoseconds.
    #[arg(long, conflicts_with = "threshold_factor")]
    threshold_ns: Option<f64>,
    /// Jitter threshold as a multiple of t_min [default: 9].
    #[arg(long)]
    threshold_factor: Option<u64>,
    /// Counter read: rdtsc, lfence-rdtsc or rdtscp [default: rdtsc].
    #[arg(long, default_value = "rdtsc")]
    timer_read: String,
    /// Mark co-scheduler high-priority windows of this many cycles (jitSim §3.5).
    #[arg(long, value_name = "CYCLES")]
    cosched_window: Option<u64>,
    /// Also write the netgauge/LogGOPSim export (`<host>.cpu<N>.netgauge`).
    #[arg(long)]
    netgauge: bool,
    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Pin the writer thread to this CPU (leave it out of --cpus to keep its wake-ups out of the traces).
    #[arg(long)]
    writer_cpu: Option<u32>,
    /// Never show the progress bar.
    #[arg(long)]
    no_progress: bool,
}

/// A failure and the exit status it maps to.
struct Failure(u8, String);

fn usage(msg: impl Into<String>) -> Failure {
    Failure(2, msg.into())
}

fn config(cli: &Cli) -> Result<Config, Failure> {
    let duration: f64 = cli
        .duration
        .trim()
        .parse()
        .map_err(|_| usage(format!("--duration must be a positive number of seconds, got `{}`", cli.duration)))?;
    let mut cfg = Config::new(duration, &cli.out);
    if let Some(list) = &cli.cpus {
        cfg.cpus = Some(parse_cpu_list(list).map_err(|e| usage(e.to_string()))?);
    }
    cfg.threshold = match (cli.threshold_cycles, cli.threshold_ns, cli.threshold_factor) {
        (Some(c), _, _) => Threshold::Cycles(c),
        (_, Some(ns), _) => Threshold::Ns(ns),
        (_, _, Some(k)) => Threshold::TMinFactor(k),
        _ => Threshold::TMinFactor(9),
    };
    cfg.timer_read = TimerRead::parse(&cli.timer_read)
        .ok_or_else(|| usage(format!("--timer-read must be rdtsc, lfence-rdtsc or rdtscp, got `{}`", cli.timer_read)))?;
    cfg.cosched_window_cycles = cli.cosched_window;
    cfg.netgauge = cli.netgauge;
    cfg.writer_cpu = cli.writer_cpu;
    cfg.progress = !cli.no_progress;
    Ok(cfg)
}

fn real_main() -> Result<(), Failure> {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            let _ = e.print(); // --help, --version
            return Ok(());
        }
        Err(e) => {
            // clap's message spans several lines; keep the part before the usage, on one line.
            let text = e.render().to_string();
            let parts: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect();
            return Err(usage(parts.join(" ").trim_start_matches("error: ").to_string()));
        }
    };
    let cfg = config(&cli)?;
    let report = collect::run(&cfg).map_err(|e| Failure(if e.is_usage() { 2 } else { 1 }, e.to_string()))?;
    if cli.json {
        println!("{}", serde_json::to_string(&report).map_err(|e| Failure(1, e.to_string()))?);
    } else {
        print!("{}", tracecollector::report::render_text(&report));
        println!("\nwrote {} trace(s), {} and {}", report.cpus.len(), report.summary_text.display(), report.histogram_svg.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(code, msg)) => {
            eprintln!("tracecollector: error: {}", msg.replace('\n', " "));
            ExitCode::from(code)
        }
    }
}

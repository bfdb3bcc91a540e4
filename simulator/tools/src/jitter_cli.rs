//! The `simulator jitter` subcommand:
//!
//! ```text
//! simulator jitter --trace <file|dir> --tasks <N[,N…]> --phases <K> --work <seconds>
//!                  --mode unsync|sync|cosched[,…] [--collective barrier|allreduce|reduce-bcast|bcast|gather|none]
//!                  [--arity 2] [--platform <toml>] [--cores-per-node C] [--coverage 100]
//!                  [--reps R] [--seed S] [--plot out.svg] [--per-phase] [--json]
//! ```
//! `--tasks 1,2,4,...,1048576` sweeps (a `...` continues the ratio of the
//! two numbers before it). Errors are one line naming the file or flag.
//!
//! `--json` prints one object: `slowdown_pct` (mean over repetitions of
//! (consumed − compute) ÷ compute, percent), `compute_slowdown_pct`,
//! `comm_slowdown_pct` (the two parts), `comm_noise_free_pct` (the
//! collective's own cost without jitter), `band` (mean, median, p5, p95,
//! p2_5, p97_5 over `--reps`), `task_phases_per_s` and the inputs. For a
//! sweep these top-level fields describe the last point and `points` lists
//! every (mode, tasks) point.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use serde_json::json;

use crate::jitter_plot::plot_svg;
use crate::progress::StepBar;
use simulator::jitter::collective::{latency_model, Collective, Net};
use simulator::jitter::engine::{simulate, simulate_observed, Config, Mode};
use simulator::jitter::report::{per_phase, rep_seed, write_table, Point};
use simulator::jitter::{load_tracks, Track};
use simulator::jitter_trace::{JitterHeader, JitterTrace};
use simulator::platform::Platform;

/// Arguments of `simulator jitter` (DESIGN "Interfaces others rely on" item 4).
#[derive(clap::Args, Debug)]
pub struct JitterArgs {
    /// A jitter trace file, or a tracecollector output directory (per-CPU traces go to tasks round-robin).
    #[arg(long, value_name = "FILE|DIR")]
    pub trace: PathBuf,
    /// Task count, or a comma list to sweep (`1,2,4,...,1048576`).
    #[arg(long, value_name = "N[,N...]")]
    pub tasks: String,
    /// Compute phases per run.
    #[arg(long)]
    pub phases: u32,
    /// Compute per phase, seconds.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub work: f64,
    /// Start offsets: unsync, sync, cosched, or a comma list of them.
    #[arg(long, default_value = "unsync", value_name = "MODE[,MODE...]")]
    pub mode: String,
    /// Synchronization at each phase end: barrier, allreduce (recursive doubling),
    /// reduce-bcast (allreduce over the tree), bcast, gather or none.
    #[arg(long, default_value = "barrier")]
    pub collective: String,
    /// Tree arity of barrier, bcast and gather.
    #[arg(long, default_value_t = 2)]
    pub arity: u32,
    /// Message payload of allreduce and bcast, and per member of gather, bytes.
    #[arg(long, default_value_t = 8)]
    pub bytes: u64,
    /// Platform TOML from `calibrate network`: message latencies within and across nodes.
    #[arg(long, value_name = "TOML")]
    pub platform: Option<PathBuf>,
    /// Most hosts the platform may have.
    #[arg(long, value_name = "N", default_value_t = simulator::limits::MAX_HOSTS)]
    pub max_hosts: usize,
    /// Tasks per node (default: the platform's first host's cores, else 1).
    #[arg(long)]
    pub cores_per_node: Option<u64>,
    /// One-way latency within a node without --platform, seconds.
    #[arg(long, default_value_t = 1e-6)]
    pub intra_latency: f64,
    /// One-way latency across nodes without --platform, seconds.
    #[arg(long, default_value_t = 4e-6)]
    pub inter_latency: f64,
    /// Share of its trace each task reads, percent (jitSim §4.2).
    #[arg(long, default_value_t = 100.0)]
    pub coverage: f64,
    /// Co-scheduler window length, TSC cycles; overrides the traces' window marks.
    #[arg(long, value_name = "CYCLES")]
    pub cosched_window: Option<u64>,
    /// Monte-Carlo repetitions with different seeds.
    #[arg(long, visible_alias = "repeats", default_value_t = 1)]
    pub reps: u32,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the slowdown-versus-tasks plot here (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Include per-phase slowdowns (first repetition) in the JSON output.
    #[arg(long)]
    pub per_phase: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Parses `1,2,4,...,64`: a `...` continues the ratio of the two previous numbers up to the next.
///
/// # Errors
/// A message naming `--tasks`.
pub fn parse_tasks(s: &str) -> anyhow::Result<Vec<u64>> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let mut out: Vec<u64> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if *p == "..." {
            let (a, b) = match out.as_slice() {
                [.., a, b] if *a > 0 && b > a => (*a, *b),
                _ => bail!("--tasks: `...` needs two increasing numbers before it"),
            };
            let end: u64 = parts.get(i + 1).and_then(|x| x.parse().ok()).context("--tasks: `...` needs a number after it")?;
            let mut x = b;
            loop {
                let next = if b % a == 0 { x * (b / a) } else { x + (b - a) };
                if next >= end {
                    break;
                }
                out.push(next);
                x = next;
            }
            continue;
        }
        let n: u64 = p.parse().map_err(|_| anyhow::anyhow!("--tasks: `{p}` is not a task count"))?;
        if n == 0 {
            bail!("--tasks: must be >= 1");
        }
        out.push(n);
    }
    Ok(out)
}

/// Parses a jitter mode name: `unsync`, `sync` or `cosched`.
///
/// # Errors
/// A one-line message for any other name.
pub fn parse_mode(s: &str) -> anyhow::Result<Mode> {
    Ok(match s {
        "unsync" => Mode::Unsync,
        "sync" => Mode::Sync,
        "cosched" => Mode::Cosched,
        _ => bail!("--mode: `{s}` is not unsync, sync or cosched"),
    })
}

fn parse_collective(s: &str) -> anyhow::Result<Collective> {
    Ok(match s {
        "barrier" => Collective::Barrier,
        "allreduce" => Collective::Allreduce,
        "reduce-bcast" => Collective::ReduceBcast,
        "bcast" => Collective::Bcast,
        "gather" => Collective::Gather,
        "none" => Collective::None,
        _ => bail!("--collective: `{s}` is not barrier, allreduce, reduce-bcast, bcast, gather or none"),
    })
}

/// A trace with no jitter, for the noise-free cost of the collective.
fn quiet_track(hz: f64) -> Track {
    let header = JitterHeader {
        host: "noise-free".into(),
        cpu: 0,
        tsc_hz: hz,
        tsc_hz_kernel: None,
        tsc_hz_kernel_source: None,
        t_min_cycles: 1,
        threshold_cycles: 1,
        timer_read: "none".into(),
        start_unix_ns: 0,
        requested_duration_s: 0.0,
        kernel: String::new(),
        cosched_window_cycles: Some(1 << 40),
        cosched_origin_cycles: Some(0),
    };
    let trace = JitterTrace { header, lead_cycles: 1 << 50, records: vec![], duration_cycles: 1 << 50, dropped_events: 0 };
    Track::new("noise-free", &trace, hz, None).expect("a noise-free trace is valid")
}

/// Runs `simulator jitter`, printing the table or JSON object on stdout.
///
/// # Errors
/// One-line errors naming the trace file (and line), the platform file or the flag.
pub fn run(args: &JitterArgs) -> anyhow::Result<()> {
    let tasks = parse_tasks(&args.tasks)?;
    let modes: Vec<(String, Mode)> =
        args.mode.split(',').map(|m| parse_mode(m.trim()).map(|x| (m.trim().to_string(), x))).collect::<anyhow::Result<_>>()?;
    let collective = parse_collective(&args.collective)?;
    if args.phases == 0 {
        bail!("--phases: must be >= 1");
    }
    if !(args.work.is_finite() && args.work > 0.0) {
        bail!("--work: must be a positive number of seconds, got {}", args.work);
    }
    if args.reps == 0 {
        bail!("--reps: must be >= 1");
    }
    let (tracks, hz) = load_tracks(&args.trace, args.cosched_window).context("cannot load jitter trace")?;
    let (intra, inter, platform_cores) = match &args.platform {
        Some(p) => {
            let pf = Platform::load_limited(p, &[], args.max_hosts).context("cannot load platform")?;
            let inter = pf.network.inter.clone().unwrap_or_else(|| pf.network.intra.clone());
            (pf.network.intra, inter, Some(pf.hosts[0].cores as u64))
        }
        None => (latency_model(args.intra_latency), latency_model(args.inter_latency), None),
    };
    let cores_per_node = args.cores_per_node.or(platform_cores).unwrap_or(1);
    let net = Net { intra, inter, cores_per_node, hz };
    let mut points = Vec::new();
    let mut first_run = None;
    let steps = (modes.len() * tasks.len()) as u64 * args.reps as u64 * args.phases as u64;
    let bar = StepBar::new(steps, "jitter");
    for (name, mode) in &modes {
        for &n in &tasks {
            let cfg = Config {
                tasks: n,
                phases: args.phases,
                work_s: args.work,
                mode: *mode,
                coverage_pct: args.coverage,
                collective,
                arity: args.arity,
                bytes: args.bytes,
                net: net.clone(),
                seed: args.seed,
            };
            let runs = (0..args.reps)
                .map(|r| simulate_observed(&tracks, hz, &Config { seed: rep_seed(args.seed, r), ..cfg.clone() }, &|_| bar.inc()))
                .collect::<Result<Vec<_>, _>>()?;
            let quiet = simulate(&[quiet_track(hz)], hz, &Config { phases: 1, mode: Mode::Sync, coverage_pct: 100.0, ..cfg.clone() })?;
            let point = Point::of(n, name, &runs, quiet.comm_slowdown_pct());
            if first_run.is_none() {
                first_run = Some(runs.into_iter().next().expect("reps >= 1"));
            }
            points.push(point);
        }
    }
    bar.finish();
    if let Some(plot) = &args.plot {
        let title = format!("OS-jitter slowdown, {} phases of {} s, {}", args.phases, args.work, args.collective);
        plot_svg(plot, &title, &points).map_err(anyhow::Error::msg)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let head = &points[points.len() - 1];
        let mut obj = json!({
            "slowdown_pct": head.slowdown_pct,
            "compute_slowdown_pct": head.compute_slowdown_pct,
            "comm_slowdown_pct": head.comm_slowdown_pct,
            "comm_noise_free_pct": head.comm_noise_free_pct,
            "band": head.band,
            "tasks": head.tasks,
            "mode": head.mode,
            "phases": args.phases,
            "work_s": args.work,
            "work_cycles": (args.work * hz).round() as u64,
            "tsc_hz": hz,
            "collective": args.collective,
            "arity": args.arity,
            "cores_per_node": cores_per_node,
            "coverage_pct": args.coverage,
            "reps": args.reps,
            "seed": args.seed,
            "traces": tracks.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
            "elapsed_s": points.iter().map(|p| p.elapsed_s).sum::<f64>(),
            "task_phases_per_s": head.task_phases_per_s,
        });
        if points.len() > 1 {
            obj["points"] = serde_json::to_value(&points)?;
        }
        if args.per_phase {
            obj["per_phase"] = serde_json::to_value(per_phase(first_run.as_ref().expect("one run")))?;
        }
        serde_json::to_writer(&mut out, &obj)?;
        writeln!(out)?;
    } else {
        write_table(&mut out, &points)?;
    }
    Ok(())
}

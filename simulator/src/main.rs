//! `simulator`: replays MPI traces on a modelled platform.
//!
//! ```text
//! simulator replay --platform <file> <trace> [--json] [--compute-time cpu|wall]
//!                  [--cfg name:value]… [--speed-ratios <csv>] [--coll-selector mpich|smpi]
//!                  [--timeline <file.json>]
//! simulator validate [--suite c-tests/suite.toml] [--platform <file>] [-r R] [--sweep]
//! ```
//! Every error is one line on stderr, naming the file at fault; the exit
//! code is then 1.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

use simulator::action::ComputeTime;
use simulator::platform;
use simulator::replay::collectives::CollAlgs;
use simulator::replay::{self, TraceInput};

#[derive(Parser)]
#[command(
    name = "simulator",
    version,
    about = "Predicts MPI application run time by replaying traces on a modelled platform"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a trace on a platform and report the makespan and a per-rank breakdown.
    Replay(ReplayArgs),
    /// Simulate OS-jitter slowdown of a bulk-synchronous application (jitSim) from jitter traces.
    Jitter(simulator::jitter::cli::JitterArgs),
    /// Tools over an interposer trace: regions, export-ti, timeline, dump.
    Trace(simulator::trace::cli::TraceArgs),
    /// Measure a suite of MPI programs, predict them (offline replay and
    /// online mode) and set measured against predicted.
    Validate(simulator::validate::cli::ValidateArgs),
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// Platform file: our TOML, or a SimGrid platform XML with one <cluster>.
    #[arg(long, value_name = "FILE")]
    platform: PathBuf,
    /// Trace directory written by the interposer (INTERPOSER_OUT), or a
    /// SimGrid TI trace-list file (smpirun -trace-ti).
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// SimGrid setting for an XML platform, as smpirun's --cfg=name:value
    /// (e.g. smpi/async-small-thresh:65536); repeatable, applied last.
    #[arg(long = "cfg", value_name = "NAME:VALUE")]
    cfg: Vec<String>,
    /// Per-region speed ratios (CSV from `calibrate speed`, SimGrid's
    /// comp-adjustment format): compute blocks take seconds × ratio;
    /// regions not in the file keep ratio 1 and are counted in the report.
    #[arg(long, value_name = "CSV")]
    speed_ratios: Option<PathBuf>,
    /// Collective algorithms: mpich, or smpi (SimGrid's default selector).
    /// Default: smpi on a SimGrid XML platform (as smpirun), else mpich.
    #[arg(long, value_name = "NAME")]
    coll_selector: Option<String>,
    /// Write a Chrome/Perfetto timeline (Trace Event JSON) of the simulated run.
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Expose every rank's compute blocks and eager-send overheads to OS
    /// jitter from a tracecollector trace (one per-CPU file, or a whole
    /// output directory whose traces go to ranks round-robin), each rank
    /// from its own offset (jitSim §3.4).
    #[arg(long, value_name = "FILE|DIR")]
    jitter: Option<PathBuf>,
    /// Offsets of the ranks in the jitter trace: unsync (each its own),
    /// sync (one shared), cosched (window starts marked in the trace).
    #[arg(long, value_name = "MODE", default_value = "unsync")]
    jitter_mode: String,
    /// Seed of the jitter offsets (the same seed gives the same answer).
    #[arg(long, value_name = "N", default_value_t = 1)]
    jitter_seed: u64,
    /// Print one JSON object (the report) on stdout instead of a table.
    #[arg(long)]
    json: bool,
    /// Which recorded duration a compute block takes.
    #[arg(long, value_enum, default_value_t = ComputeArg::Cpu)]
    compute_time: ComputeArg,
}

#[derive(Clone, Copy, ValueEnum)]
enum ComputeArg {
    /// Thread CPU time (honest when ranks were oversubscribed).
    Cpu,
    /// Wall time between the calls.
    Wall,
}

fn run_replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let (platform, mut extras) = platform::load_any(&args.platform, &args.cfg).context("cannot load platform")?;
    if let Some(name) = &args.coll_selector {
        extras.coll = CollAlgs::preset(name).map_err(anyhow::Error::msg).context("--coll-selector")?;
    }
    let compute = match args.compute_time {
        ComputeArg::Cpu => ComputeTime::Cpu,
        ComputeArg::Wall => ComputeTime::Wall,
    };
    let streams = TraceInput::detect(&args.trace)
        .map_err(anyhow::Error::from)
        .and_then(|input| Ok(input.open(compute)?))
        .context("cannot open trace")?;
    let (streams, tally) = match &args.speed_ratios {
        Some(path) => {
            let ratios = simulator::speed::SpeedRatios::load(path).context("cannot load speed ratios")?;
            let (s, t) = replay::apply_speed_ratios(streams, ratios);
            (s, Some(t))
        }
        None => (streams, None),
    };
    let timeline = match &args.timeline {
        Some(p) => Some(replay::Timeline::create(p).context("cannot create the timeline")?),
        None => None,
    };
    let tracks = match &args.jitter {
        Some(path) => {
            let mode = simulator::jitter::cli::parse_mode(&args.jitter_mode).context("--jitter-mode")?;
            let (tracks, hz) = simulator::jitter::load_tracks(path, None).context("cannot load the jitter trace")?;
            if mode == simulator::jitter::Mode::Cosched && tracks.iter().any(|t| t.windows().is_empty()) {
                anyhow::bail!("--jitter-mode cosched: {} has no co-scheduling window marks (tracecollector --cosched-window)", path.display());
            }
            Some((tracks, hz, mode))
        }
        None => None,
    };
    let stretch = tracks.as_ref().map(|(t, hz, mode)| simulator::jitter::compute_stretch(t, *hz, *mode, streams.len(), args.jitter_seed));
    let mut report = replay::replay_jitter(&platform, &extras, streams, timeline, stretch)
        .with_context(|| format!("replay of {} on {} failed", args.trace.display(), args.platform.display()))?;
    report.speed_ratios = tally.map(|t| t.stats());
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report).context("cannot write the report")?;
        writeln!(out).context("cannot write the report")?;
    } else {
        report.write_table(&mut out).context("cannot write the report")?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Replay(args) => run_replay(args),
        Command::Jitter(args) => simulator::jitter::cli::run(args),
        Command::Trace(args) => simulator::trace::cli::run(args),
        Command::Validate(args) => simulator::validate::cli::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("simulator: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

//! `simulator`: replays MPI traces on a modelled platform.
//!
//! ```text
//! simulator replay --platform <file> <trace> [--json] [--compute-time cpu|wall]
//! ```
//! Every error is one line on stderr, naming the file at fault; the exit
//! code is then 1.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

use simulator::action::ComputeTime;
use simulator::platform::Platform;
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
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// Platform file (our TOML format).
    #[arg(long, value_name = "FILE")]
    platform: PathBuf,
    /// Trace directory written by the interposer (INTERPOSER_OUT).
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
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
    let platform = Platform::load(&args.platform).context("cannot load platform")?;
    let compute = match args.compute_time {
        ComputeArg::Cpu => ComputeTime::Cpu,
        ComputeArg::Wall => ComputeTime::Wall,
    };
    let streams = TraceInput::detect(&args.trace)
        .map_err(anyhow::Error::from)
        .and_then(|input| Ok(input.open(compute)?))
        .context("cannot open trace")?;
    let report = replay::replay(&platform, streams)
        .with_context(|| format!("replay of {} on {} failed", args.trace.display(), args.platform.display()))?;
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
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("simulator: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

//! `calibrate`: measures this machine and writes the models the simulator reads.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use calibrate::bench::{self, Launcher};
use calibrate::network::{self, NetworkOptions};
use calibrate::segmented::FitOptions;
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(version, about = "Calibrates the simulator's models on this machine")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measures point-to-point MPI costs between 2 ranks on this host and
    /// writes a one-host platform whose intra-node network is the fitted
    /// model. The MPI compiler is $MPICC (else mpicc), the launcher $MPIRUN
    /// (else mpirun).
    Network(NetworkArgs),
}

#[derive(Args)]
struct NetworkArgs {
    /// Platform TOML to write.
    #[arg(long)]
    out: PathBuf,
    /// Repetitions of every message size.
    #[arg(long, default_value_t = 30)]
    reps: usize,
    /// Distinct message sizes, log-uniform from 1 B to --max-bytes.
    #[arg(long, default_value_t = 60)]
    sizes: usize,
    /// Largest message size, bytes.
    #[arg(long, default_value_t = 4 << 20)]
    max_bytes: u64,
    /// Seed of the size grid and the measurement order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the raw samples (op,size_bytes,start_s,duration_s) here; the
    /// eager-threshold refinement samples go to <stem>.refine.csv beside it.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Most pieces per piecewise-linear model.
    #[arg(long, default_value_t = 4)]
    max_segments: usize,
    /// Rounds narrowing the eager threshold (0: grid resolution only).
    #[arg(long, default_value_t = 3)]
    refine_rounds: usize,
    /// Extra launcher argument, before the program (repeatable), e.g.
    /// --mpirun-arg=--bind-to --mpirun-arg=core.
    #[arg(long = "mpirun-arg", allow_hyphen_values = true, value_name = "ARG")]
    mpirun_args: Vec<String>,
    /// Kill a benchmark run after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout_s: u64,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Network(args) => network_cmd(args),
    }
}

fn network_cmd(a: NetworkArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let launcher = Launcher { mpirun_args: a.mpirun_args, timeout: Duration::from_secs(a.timeout_s), ..Launcher::from_env() };
    let options = NetworkOptions {
        reps: a.reps,
        sizes: a.sizes,
        max_bytes: a.max_bytes,
        seed: a.seed,
        refine_rounds: a.refine_rounds,
        fit: FitOptions { max_segments: a.max_segments, ..FitOptions::default() },
        ..NetworkOptions::default()
    };
    let cal = network::calibrate(&launcher, &options).context("calibrate network")?;
    if let Some(csv) = &a.csv {
        bench::write_csv(csv, &cal.samples)?;
        if !cal.refine_samples.is_empty() {
            bench::write_csv(&refine_path(csv), &cal.refine_samples)?;
        }
    }
    let platform = network::host_platform(&host_name(), cores(), cal.fit.p2p_model());
    platform.save(&a.out)?;
    print!("{}", cal.fit.summary());
    eprintln!(
        "wrote {} ({} samples, {} refinement samples) in {:.1} s",
        a.out.display(),
        cal.samples.len(),
        cal.refine_samples.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `dir/stem.csv` → `dir/stem.refine.csv`.
fn refine_path(csv: &Path) -> PathBuf {
    let stem = csv.file_stem().map_or_else(|| "samples".into(), |s| s.to_string_lossy().into_owned());
    csv.with_file_name(format!("{stem}.refine.csv"))
}

/// This host's name (Linux), else `localhost`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Cores available to this process.
fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

//! `simulator`: replays MPI traces on a modelled platform.
//!
//! ```text
//! simulator compare <trace-dir> <report.json | platform> [--json]
//! simulator replay --platform <file> <trace>... [--ranks N] [--json] [--compute-time cpu|wall]
//!                  [--cfg name:value]… [--speed-ratios <csv>] [--coll-selector mpich|ompi|simgrid-ompi|smpi]
//!                  [--coll <coll>=<alg>]…
//!                  [--timeline <file.json>] [--otf2 <dir>] [--pstate N|HOST=N]… [--waiting-ranks poll|yield]
//!                  [--dvfs wait=K|regions=<csv>]…
//! simulator energy --platform <file> <trace> [--dvfs <policy>]… [--json] [--plot f.svg]
//! simulator extrapolate --ranks N --out <dir> <trace-dir> <trace-dir>...
//! simulator scaling --platform <file> --ranks N,N,... [--plot f.svg] [--json] <trace-dir> <trace-dir>...
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
use simulator::collectives::CollAlgs;
use simulator::extrapolate::Variant;
use simulator::platform::Platform;
use simulator::replay::{self, ActionStream, InputError, TraceInput};

use simulator_tools::energy_cmd::{self, WaitingArg};
use simulator_tools::extrapolate_cmd::{self, Input};
use simulator_tools::{jitter_cli, otf2_export, otf2_import, otf2_sim, platform_cli, progress, trace_cli, validate};

#[derive(Parser)]
#[command(name = "simulator", version, about = "Predicts MPI application run time by replaying traces on a modelled platform")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a trace on a platform and report the makespan and a per-rank breakdown.
    Replay(ReplayArgs),
    /// Simulate OS-jitter slowdown of a bulk-synchronous application (jitSim) from jitter traces.
    Jitter(jitter_cli::JitterArgs),
    /// Tools over an interposer trace: regions, export-ti, timeline, dump.
    Trace(trace_cli::TraceArgs),
    /// Measure a suite of MPI programs, predict them (offline replay and
    /// online mode) and set measured against predicted.
    Validate(validate::cli::ValidateArgs),
    /// Measured against predicted time, per rank and phase (compute, MPI, end).
    Compare(CompareArgs),
    /// Make the trace of a run at N ranks from traces of the same program
    /// at smaller rank counts (rank classes, peers and sizes as functions
    /// of rank and N, compute fitted against N).
    Extrapolate(extrapolate_cmd::ExtrapolateArgs),
    /// Predicted time, compute/communication split and parallel
    /// efficiency against ranks, extrapolated from traces at a few rank
    /// counts, with a band from several draws of the program's
    /// variability and the compute laws' intervals.
    Scaling(extrapolate_cmd::ScalingArgs),
    /// Makespan, energy and energy-delay product at every static pstate
    /// and under DVFS policies, with the time/energy Pareto front.
    Energy(energy_cmd::EnergyArgs),
    /// Platform files made from others: a cluster of nodes like a calibrated one.
    Platform(platform_cli::PlatformArgs),
}

#[derive(clap::Args)]
struct CompareArgs {
    /// The recorded trace directory (INTERPOSER_OUT).
    #[arg(value_name = "TRACE")]
    trace: PathBuf,
    /// The prediction: a saved `simulator replay --json` report, or a
    /// platform file (our TOML or SimGrid XML) to replay TRACE on now.
    #[arg(value_name = "SIMULATED")]
    simulated: PathBuf,
    /// Which recorded duration a compute block takes (measured and, when
    /// SIMULATED is a platform, replayed).
    #[arg(long, value_enum, default_value_t = ComputeArg::Cpu)]
    compute_time: ComputeArg,
    /// Print one JSON object (`rows`: rank, measured, predicted) instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// Platform file: our TOML, or a SimGrid platform XML with one <cluster>.
    #[arg(long, value_name = "FILE")]
    platform: PathBuf,
    /// Trace directory written by the interposer (INTERPOSER_OUT), a
    /// SimGrid TI trace-list file (smpirun -trace-ti), or an OTF2 archive
    /// (its .otf2 anchor file, or a directory holding one). Several trace
    /// directories of one program on the same ranks: made into one
    /// prediction as --merge says, each run's own makespan reported as the
    /// band. With --ranks N, trace directories of the same program at two
    /// or more other rank counts, extrapolated to N in memory.
    #[arg(value_name = "TRACE", required = true, num_args = 1..)]
    trace: Vec<PathBuf>,
    /// How several trace directories of one program make one prediction:
    /// `blocks`, replayed as one, each compute block at the median of its
    /// durations; or `runs`, the run whose replay alone is the median (the
    /// lower middle one of an even count). `blocks` predicts a quieter
    /// machine than the runs met (noise on one rank in one run and on
    /// another in the next cancels out); `simulator validate` uses `runs`.
    #[arg(long, value_enum, default_value_t = validate::cli::Merge::Blocks)]
    merge: validate::cli::Merge,
    /// Predict this many ranks (see TRACE).
    #[arg(long, value_name = "N")]
    ranks: Option<u32>,
    /// With --ranks N from traces at other counts: copy each traced rank's
    /// compute blocks to the target ranks of its class (the traced rank of
    /// that number, else rank r mod M of the M) instead of drawing each
    /// block's transient part from its region's distribution.
    #[arg(long, requires = "ranks")]
    clone_template: bool,
    /// SimGrid setting for an XML platform, as smpirun's --cfg=name:value
    /// (e.g. smpi/async-small-thresh:65536); repeatable, applied last.
    #[arg(long = "cfg", value_name = "NAME:VALUE")]
    cfg: Vec<String>,
    /// Most hosts the platform may have (an XML cluster's radical is
    /// counted before any host is made); the replay keeps only the hosts
    /// the ranks use when the others cannot change the prediction.
    #[arg(long, value_name = "N", default_value_t = simulator::limits::MAX_HOSTS)]
    max_hosts: usize,
    /// Per-region speed ratios (CSV from `calibrate speed`, SimGrid's
    /// comp-adjustment format): compute blocks take seconds × ratio;
    /// regions not in the file keep ratio 1 and are counted in the report.
    #[arg(long, value_name = "CSV")]
    speed_ratios: Option<PathBuf>,
    /// Collective algorithm selector: mpich (MPICH 4.0's defaults), ompi
    /// (OpenMPI 4.1's tuned fixed decisions), simgrid-ompi (SimGrid's port
    /// of them, what smpi/coll-selector:ompi means), or smpi (SimGrid's
    /// default). Default: smpi on a SimGrid XML platform (as smpirun), else
    /// mpich. Overrides (--coll, smpi/<coll>) are kept.
    #[arg(long, value_name = "NAME")]
    coll_selector: Option<String>,
    /// One collective's algorithm, whatever the selector says, e.g.
    /// allreduce=rabenseifner, bcast=pipeline:65536 (segment bytes);
    /// SimGrid's smpi/<coll> names are accepted. Repeatable.
    #[arg(long = "coll", value_name = "COLL=ALG")]
    coll: Vec<String>,
    /// Write a Chrome/Perfetto timeline (Trace Event JSON) of the simulated
    /// run: per rank, its compute blocks and one span per MPI call, from
    /// the call's start to its end (overheads, rounds and waiting).
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Write the simulated run as an OTF2 archive (DIR/traces.otf2), as
    /// `simulator trace export-otf2` writes the recorded one.
    #[arg(long, value_name = "DIR")]
    otf2: Option<PathBuf>,
    /// Expose every rank's compute blocks and eager send and receive overheads to OS
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
    /// Replay a trace directory whose rank files are incomplete (a run
    /// killed, or whose disk filled up): each file up to its last whole
    /// chunk; ranks left waiting for a partner whose records stop end
    /// there. Says what is missing.
    #[arg(long)]
    salvage: bool,
    /// Multiply every disk, cache and server-link bandwidth of the
    /// platform's file systems by F (a what-if, like the network sweep).
    #[arg(long, value_name = "F")]
    io_scale: Option<f64>,
    /// Running pstate: N for every host with pstates, or HOST=N for one
    /// host (by name or index); repeatable, later ones win. Recorded
    /// compute seconds scale by speed(recorded_pstate)/speed(N), TI flops
    /// take flops/speed(N), and energy uses pstate N's power.
    #[arg(long, value_name = "N|HOST=N")]
    pstate: Vec<String>,
    /// On a host given more ranks than cores, what a rank waiting in MPI
    /// does: poll (keeps its core busy, as Open MPI and MPICH by default)
    /// or yield (leaves it to the computing ranks); overrides the
    /// platform's `waiting_ranks`.
    #[arg(long, value_enum, value_name = "POLICY")]
    waiting_ranks: Option<WaitingArg>,
    /// Change pstates during the run: wait=K (a host at pstate K while
    /// every rank on it waits in MPI), regions=FILE.csv (`region,pstate`:
    /// a listed region's blocks at its pstate), or both comma-separated;
    /// repeatable. A switch takes the host's pstate_switch_s.
    #[arg(long, value_name = "POLICY")]
    dvfs: Vec<String>,
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
    let input = extrapolate_cmd::wanted(&args.trace, args.ranks)?;
    let mut platform = Platform::load_limited(&args.platform, &args.cfg, args.max_hosts).context("cannot load platform")?;
    if let Some(name) = &args.coll_selector {
        platform.collectives.algs.selector = CollAlgs::preset(name).map_err(anyhow::Error::msg).context("--coll-selector")?.selector;
    }
    for spec in &args.coll {
        let (coll, alg) = spec.split_once('=').ok_or_else(|| anyhow::anyhow!("--coll {spec}: expected <collective>=<algorithm>"))?;
        platform.collectives.algs.set(coll, alg).map_err(anyhow::Error::msg).with_context(|| format!("--coll {spec}"))?;
    }
    for spec in &args.pstate {
        platform.set_pstate(spec).map_err(anyhow::Error::msg).context("--pstate")?;
    }
    WaitingArg::apply(args.waiting_ranks, &mut platform);
    for spec in &args.dvfs {
        platform.dvfs.add(spec).map_err(anyhow::Error::msg).with_context(|| format!("--dvfs {spec}"))?;
    }
    platform.dvfs.check(&platform).map_err(anyhow::Error::msg).context("--dvfs")?;
    if let Some(f) = args.io_scale {
        if !(f.is_finite() && f > 0.0) {
            anyhow::bail!("--io-scale {f}: must be a finite number > 0");
        }
        if platform.fs.is_empty() {
            anyhow::bail!("--io-scale: {} has no file system ([[fs]])", args.platform.display());
        }
        platform.fs.iter_mut().for_each(|fs| fs.scale_bandwidth(f));
    }
    let compute = match args.compute_time {
        ComputeArg::Cpu => ComputeTime::Cpu,
        ComputeArg::Wall => ComputeTime::Wall,
    };
    let model = match input {
        Input::Extrapolate => Some(extrapolate_cmd::model(&args.trace)?),
        _ => None,
    };
    let mut runs_makespan_s = None;
    let mut median_run = None;
    let mut region_names = None;
    let streams = match (&model, args.ranks, input) {
        (Some(m), Some(n), _) => {
            if let Some(w) = m.far_from_data(n) {
                eprintln!("warning: {w}");
            }
            let variant = if args.clone_template { Variant::CLONE_TEMPLATE } else { Variant::PREDICTION };
            extrapolate_cmd::streams(m, n, variant)
        }
        (_, _, Input::Runs) => {
            let open = |dir: &PathBuf| replay::open_trace_dir(dir, compute).with_context(|| format!("cannot open trace {}", dir.display()));
            let mut alone = Vec::new();
            for dir in &args.trace {
                let r = replay::replay(&platform, open(dir)?).with_context(|| format!("replay of {} alone failed", dir.display()))?;
                alone.push(r.makespan_s);
            }
            let median = validate::report::lower_median_index(&alone).expect("several trace directories");
            runs_makespan_s = Some(alone);
            match args.merge {
                validate::cli::Merge::Runs => {
                    median_run = Some(median);
                    open(&args.trace[median])?
                        .into_iter()
                        .map(|s| Box::new(s.map(|a| a.map_err(InputError::Trace))) as ActionStream<'static, InputError>)
                        .collect()
                }
                validate::cli::Merge::Blocks => replay::merged_runs(args.trace.iter().map(open).collect::<anyhow::Result<Vec<_>>>()?),
            }
        }
        _ if otf2_import::is_archive(&args.trace[0]) => {
            let imported = otf2_import::load(&args.trace[0]).context("cannot open trace")?;
            if !imported.skipped.is_empty() {
                let what: Vec<String> = imported.skipped.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
                eprintln!("simulator: {}: skipped records the replay does not model: {}", args.trace[0].display(), what.join(", "));
            }
            region_names = Some(imported.region_names);
            imported.streams.into_iter().map(|s| Box::new(s.into_iter().map(Ok)) as ActionStream<'static, InputError>).collect()
        }
        _ if args.salvage => {
            let (streams, lost) = replay::open_trace_dir_salvage(&args.trace[0], compute).context("cannot open trace")?;
            for l in &lost {
                eprintln!("simulator: --salvage: {l}");
            }
            streams.into_iter().map(|s| Box::new(s.map(|a| a.map_err(InputError::Trace))) as ActionStream<'static, InputError>).collect()
        }
        _ => TraceInput::detect(&args.trace[0])
            .map_err(anyhow::Error::from)
            .and_then(|input| Ok(input.open(compute)?))
            .context("cannot open trace")?,
    };
    let trace_name = args.trace.iter().map(|t| t.display().to_string()).collect::<Vec<_>>().join(" ");
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
            let mode = jitter_cli::parse_mode(&args.jitter_mode).context("--jitter-mode")?;
            let (tracks, hz) = simulator::jitter::load_tracks(path, None).context("cannot load the jitter trace")?;
            if mode == simulator::jitter::Mode::Cosched && tracks.iter().any(|t| t.windows().is_empty()) {
                anyhow::bail!(
                    "--jitter-mode cosched: {} has no co-scheduling window marks (tracecollector --cosched-window)",
                    path.display()
                );
            }
            Some((tracks, hz, mode))
        }
        None => None,
    };
    let sim_archive = match &args.otf2 {
        Some(dir) => {
            let names = match region_names {
                Some(n) => n,
                None if args.trace.len() == 1 && args.trace[0].join("meta.json").exists() => otf2_export::region_names(&args.trace[0])?,
                None => Default::default(),
            };
            let a = otf2_sim::SimArchive::create(dir, streams.len() as u32, names).context("cannot create the OTF2 archive")?;
            Some(std::rc::Rc::new(std::cell::RefCell::new(a)))
        }
        None => None,
    };
    let (streams, progress) = progress::with_progress(streams);
    let stretch = tracks.as_ref().map(|(t, hz, mode)| simulator::jitter::compute_stretch(t, *hz, *mode, streams.len(), args.jitter_seed));
    let mut run = replay::Replay::new(&platform).order_free(model.as_ref().is_some_and(|m| args.ranks.is_some() && m.order_free()));
    if args.salvage {
        run = run.salvage();
    }
    if let Some(t) = timeline {
        run = run.timeline(t);
    }
    if let Some(s) = stretch {
        run = run.jitter(s);
    }
    if let Some(a) = &sim_archive {
        let a = a.clone();
        run = run.action_log(Box::new(move |r, action, t0, t1| a.borrow_mut().log(r, action, t0, t1)));
    }
    let report = run.run(streams);
    progress.finish();
    if let Some(a) = sim_archive {
        let a = std::rc::Rc::try_unwrap(a).map_err(|_| anyhow::anyhow!("the OTF2 archive is still in use"))?.into_inner();
        a.finish().context("cannot write the OTF2 archive")?;
    }
    let mut report = report.with_context(|| format!("replay of {trace_name} on {} failed", args.platform.display()))?;
    report.speed_ratios = tally.map(|t| t.stats());
    report.runs_makespan_s = runs_makespan_s;
    report.median_run = median_run;
    for o in &report.oversubscribed {
        eprintln!("simulator: {}", o.warning());
    }
    if report.io_recorded_calls > 0 {
        eprintln!(
            "simulator: {} MPI-IO calls replayed as their recorded durations: {} has no file system ([[fs]])",
            report.io_recorded_calls,
            args.platform.display()
        );
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report).context("cannot write the report")?;
        writeln!(out).context("cannot write the report")?;
    } else {
        report.write_table(&mut out).context("cannot write the report")?;
    }
    Ok(())
}

fn run_compare(args: &CompareArgs) -> anyhow::Result<()> {
    let compute = match args.compute_time {
        ComputeArg::Cpu => ComputeTime::Cpu,
        ComputeArg::Wall => ComputeTime::Wall,
    };
    let measured = simulator_tools::compare::measure(&args.trace, compute).context("cannot read the recorded trace")?;
    let sim = &args.simulated;
    let text = std::fs::read_to_string(sim).with_context(|| format!("cannot read {}", sim.display()))?;
    let report = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) if v.is_object() => v,
        _ => {
            let platform = Platform::load(sim).context("cannot load platform")?;
            let streams = TraceInput::InterposerDir(args.trace.clone()).open(compute).context("cannot open trace")?;
            let r = replay::replay(&platform, streams)
                .with_context(|| format!("replay of {} on {} failed", args.trace.display(), sim.display()))?;
            serde_json::to_value(&r)?
        }
    };
    let predicted =
        simulator_tools::compare::predicted(&report).map_err(anyhow::Error::msg).with_context(|| format!("{}", sim.display()))?;
    let rows = simulator_tools::compare::rows(&measured, &predicted).map_err(anyhow::Error::msg)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &serde_json::json!({ "rows": rows }))?;
        writeln!(out)?;
    } else {
        simulator_tools::compare::write_table(&rows, &mut out)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Replay(args) => run_replay(args),
        Command::Jitter(args) => jitter_cli::run(args),
        Command::Trace(args) => trace_cli::run(args),
        Command::Compare(args) => run_compare(args),
        Command::Validate(args) => validate::cli::run(args),
        Command::Extrapolate(args) => extrapolate_cmd::run(args),
        Command::Scaling(args) => extrapolate_cmd::scaling(args),
        Command::Energy(args) => energy_cmd::run(args),
        Command::Platform(args) => platform_cli::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("simulator: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

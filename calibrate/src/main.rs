//! `calibrate`: measures this machine and writes the models the simulator reads.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use calibrate::bench::{self, Launcher, Op};
use calibrate::network::{self, JitsimLatencies, NetworkCalibration, NetworkOptions};
use calibrate::segmented::FitOptions;
use calibrate::simgrid;
use calibrate::speed;
use calibrate::{plot, power};
use clap::{Args, Parser, Subcommand};

mod io_cmd;
use simulator::trace::ComputeTime;

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
    /// Per-region compute speed ratios (target ÷ reference, summed over
    /// ranks) from two interposer traces of the same program, written as
    /// SimGrid's CSV ("start-stop","ratio"). Regions seen in one run only
    /// are listed on stderr.
    Speed(SpeedArgs),
    /// Fits P = P_static + P_dyn × u per host and pstate (u = active cores
    /// ÷ cores) and a quadratic in frequency from wattmeter samples; writes
    /// our power model (TOML) and prints SimGrid's wattage_per_state.
    Power(PowerArgs),
    /// dPerf's threshold-iteration rule per region of a trace: th, the
    /// block count after which the running mean stays within epsilon, and
    /// t_avg = t_th / th.
    Blocks(BlocksArgs),
    /// Measures MPI-IO (independent and collective writes and reads, with
    /// and without sync, open/close) in a directory of the file system to
    /// model and writes the fitted `[[fs]]` table into an existing
    /// platform (run `calibrate network` first), replacing a file system
    /// of the same name and keeping the rest of the platform.
    Io(io_cmd::IoArgs),
}

#[derive(Args)]
struct BlocksArgs {
    /// Trace directory.
    trace: PathBuf,
    /// Tolerance of the running mean (fraction).
    #[arg(long, default_value_t = calibrate::blocks::DEFAULT_EPSILON)]
    epsilon: f64,
    /// Time compute blocks by wall time instead of thread CPU time (the
    /// table, and the replay of --platform).
    #[arg(long)]
    wall: bool,
    /// Write a compressed copy of the trace to this directory: blocks after
    /// each region's threshold at their mean, loop iterations stored once
    /// as repeat records (simulator replay reads it as any trace).
    #[arg(long, value_name = "DIR")]
    compress: Option<PathBuf>,
    /// Longest loop body looked for when compressing, records.
    #[arg(long, default_value_t = calibrate::compress::DEFAULT_MAX_BODY)]
    max_body: usize,
    /// With --compress: replay both traces on this platform and print
    /// their makespans.
    #[arg(long, requires = "compress")]
    platform: Option<PathBuf>,
}

#[derive(Args)]
struct PowerArgs {
    /// Samples CSV: timestamp_s,host,pstate_or_frequency_hz,active_cores,watts.
    #[arg(required_unless_present = "measure")]
    samples: Option<PathBuf>,
    /// Power model TOML to write.
    #[arg(long, required_unless_present = "measure")]
    out: Option<PathBuf>,
    /// Write an SVG plot per host (<DIR>/power-<host>.svg).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Measure with RAPL instead of reading a CSV.
    #[arg(long)]
    measure: bool,
}

#[derive(Args)]
struct SpeedArgs {
    /// Trace directory of the reference run.
    reference: PathBuf,
    /// Trace directory of the target (or emulated) run.
    target: PathBuf,
    /// Ratio CSV to write.
    #[arg(long)]
    out: PathBuf,
    /// Time compute blocks by wall time instead of thread CPU time.
    #[arg(long)]
    wall: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ModelArg {
    Piecewise,
    Loggp,
}

#[derive(Args)]
struct NetworkArgs {
    /// Platform TOML to write.
    #[arg(long)]
    out: PathBuf,
    /// Repetitions of every message size.
    #[arg(long, default_value_t = 60)]
    reps: usize,
    /// Distinct message sizes, log-uniform from 1 B to --max-bytes.
    #[arg(long, default_value_t = 30)]
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
    #[arg(long, default_value_t = 6)]
    max_segments: usize,
    /// Rounds narrowing the eager threshold (0: grid resolution only).
    #[arg(long, default_value_t = 3)]
    refine_rounds: usize,
    /// Extra launcher argument, before the program (repeatable), e.g.
    /// --mpirun-arg=--bind-to --mpirun-arg=core.
    #[arg(long = "mpirun-arg", allow_hyphen_values = true, value_name = "ARG")]
    mpirun_args: Vec<String>,
    /// Messages per PRTT burst of the LogGP assessment (0 skips it).
    #[arg(long, default_value_t = 8)]
    loggp_n: u32,
    /// Network model written to --out: piecewise (the segmented fit) or
    /// loggp (the LogGP assessment with S = the fitted eager threshold,
    /// written as its equivalent piecewise model; see simulator::network::loggp).
    #[arg(long, value_enum, default_value_t = ModelArg::Piecewise)]
    model: ModelArg,
    /// Share of the samples held back from the fit to validate it.
    #[arg(long, default_value_t = 0.2)]
    holdout: f64,
    /// Also write a SimGrid platform (2 hosts, one calibrated link) whose
    /// <config> block holds the smpi/os, or, ois, bw-factor, lat-factor,
    /// async-small-thresh and send-is-detached-thresh properties.
    #[arg(long, value_name = "XML")]
    simgrid: Option<PathBuf>,
    /// Write SVG plots of the samples and fitted pieces per operation
    /// (<DIR>/intra-pingpong.svg, … and inter-*.svg with --hostfile).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Also measure two ranks on two nodes: run the benchmark again with
    /// `--hostfile <FILE> --map-by node` (Open MPI syntax; for another
    /// launcher pass its options with --mpirun-arg instead) and write a
    /// cluster platform of the file's hosts with an inter-node model.
    #[arg(long, value_name = "FILE")]
    hostfile: Option<PathBuf>,
    /// Kill a benchmark run after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout_s: u64,
    /// Add grid passes (each --reps more per size) while the per-size
    /// ping-pong medians of the fast state are less stable than this
    /// (relative half-width of their 95 % confidence interval).
    #[arg(long, default_value_t = 0.025)]
    stable: f64,
    /// Most extra grid passes.
    #[arg(long, default_value_t = 3)]
    max_extra_passes: usize,
    /// Start no extra grid pass that would end the main grid's passes
    /// after this many seconds.
    #[arg(long, default_value_t = 120)]
    budget_s: u64,
    /// Repetitions of every MPI_Allreduce size the reduction cost is
    /// fitted on (0: no reduction cost).
    #[arg(long, default_value_t = 10)]
    allreduce_reps: usize,
    /// Collective selector written to the platform (as simulator
    /// --coll-selector takes it); default: the MPI library's, from
    /// `mpirun --version` (Open MPI: ompi; MPICH: mpich).
    #[arg(long, value_name = "NAME")]
    coll_selector: Option<String>,
    /// Write the host's copy rate that concurrent transfers share (fitted
    /// on the exchange samples, always printed) to the platform as
    /// `[network] host_copy_bytes_per_s`, for the offline replay. Off by
    /// default: how fast a host copies depends on where the sent data
    /// is cached (see --clean-buffers), and the rate fits only programs
    /// whose buffers are like the benchmark's
    #[arg(long)]
    host_copy: bool,
    /// Leave `[network] serial_receives` out of the platform: rendezvous
    /// transfers between ranks of one host that arrive at one rank at
    /// once then each run at their own bandwidth, as if the receiving
    /// rank copied them in parallel. By default the `pair` samples decide
    /// from which size they take turns (two transfers into one rank at
    /// once taking at least 1.5 times one transfer's time), as Open MPI's
    /// and MPICH's single-copy shared-memory transports copy each large
    /// message on the receiving process
    #[arg(long)]
    parallel_receives: bool,
    /// Ping-pongs and exchanges send from a buffer no rank writes and
    /// receive into another, as OSU's and most bandwidth benchmarks do
    /// (by default each rank sends back what it received: data its own
    /// core just wrote, as a program sends what it computed; large
    /// messages then copy about half as fast on shared memory)
    #[arg(long)]
    clean_buffers: bool,
    /// Measure nothing: refit the samples of an earlier --csv file (no
    /// refinement of the eager threshold, no LogGP; the reduction cost
    /// from its <stem>.allreduce.csv, if any) and print the fit and its
    /// held-back validation.
    #[arg(long, value_name = "CSV", conflicts_with = "hostfile")]
    from_csv: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Network(args) => network_cmd(args),
        Command::Speed(args) => speed_cmd(args),
        Command::Power(args) => power_cmd(args),
        Command::Blocks(a) => blocks_cmd(a),
        Command::Io(a) => io_cmd::run(a),
    }
}

fn blocks_cmd(a: BlocksArgs) -> anyhow::Result<()> {
    let compute = if a.wall { ComputeTime::Wall } else { ComputeTime::Cpu };
    print!("{}", calibrate::blocks::summary(&calibrate::blocks::block_thresholds(&a.trace, compute, a.epsilon)?));
    let Some(out) = &a.compress else { return Ok(()) };
    let report = calibrate::compress::compress_trace(&a.trace, out, a.epsilon, a.max_body)?;
    print!("{}", report.summary());
    if let Some(platform) = &a.platform {
        let before = calibrate::compress::replay_makespan(platform, &a.trace, compute)?;
        let after = calibrate::compress::replay_makespan(platform, out, compute)?;
        println!("makespan_s: {before:.6} before, {after:.6} after ({:+.3}%)", (after / before - 1.0) * 100.0);
    }
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn power_cmd(a: PowerArgs) -> anyhow::Result<()> {
    if a.measure {
        match power::rapl_source() {
            None => anyhow::bail!("calibrate power --measure: no RAPL on this machine (no /sys/class/powercap/intel-rapl:* nor perf power/energy-pkg); give a wattmeter CSV instead"),
            Some(src) => anyhow::bail!("calibrate power --measure: RAPL found at {src}, but measuring with it is not implemented yet; give a wattmeter CSV instead"),
        }
    }
    let (Some(samples), Some(out)) = (a.samples, a.out) else { anyhow::bail!("calibrate power: give a samples CSV and --out") };
    let hosts = power::fit_power(&power::read_csv(&samples)?, &samples)?;
    std::fs::write(&out, power::to_toml(&hosts)).with_context(|| format!("write {}", out.display()))?;
    if let Some(dir) = &a.plot {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        for h in &hosts {
            let svg = dir.join(format!("power-{}.svg", h.host));
            plot::power_svg(&svg, h)?;
            eprintln!("wrote {}", svg.display());
        }
    }
    for h in &hosts {
        println!("{}: {} cores, {} pstates", h.host, h.cores, h.pstates.len());
        for p in &h.pstates {
            println!("  pstate {:e}: P_static {:.3} W, P_dyn {:.3} W ({} segments)", p.pstate, p.static_w, p.dynamic_w, p.segments);
        }
        println!("  <prop id=\"wattage_per_state\" value=\"{}\"/>", h.wattage_per_state());
    }
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn speed_cmd(a: SpeedArgs) -> anyhow::Result<()> {
    let compute = if a.wall { ComputeTime::Wall } else { ComputeTime::Cpu };
    let reference = speed::region_profile(&a.reference, compute)?;
    let target = speed::region_profile(&a.target, compute)?;
    let report = speed::speed_ratios(&reference, &target, (&a.reference, &a.target))?;
    report.ratios.save(&a.out)?;
    print!("{}", report.summary());
    eprintln!(
        "wrote {} ({} regions; {} only in the reference run, {} only in the target run, {} without reference time)",
        a.out.display(),
        report.ratios.len(),
        report.only_reference.len(),
        report.only_target.len(),
        report.no_reference_time.len()
    );
    Ok(())
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
        holdout_fraction: a.holdout,
        loggp_n: a.loggp_n,
        allreduce_reps: a.allreduce_reps,
        clean_buffers: a.clean_buffers,
        stable_rel: a.stable,
        max_extra_passes: a.max_extra_passes,
        budget: Duration::from_secs(a.budget_s),
        ..NetworkOptions::default()
    };
    let cal = match &a.from_csv {
        Some(csv) => {
            let samples = bench::read_csv(csv)?;
            let f = network::fit_validated(&samples, &options).with_context(|| format!("{}", csv.display()))?;
            let (fit, validation, bimodal, slow_state) = (f.fit, f.validation, f.bimodal, f.slow_state);
            let ar = sibling(csv, "allreduce");
            let allreduce_samples = if ar.exists() { bench::read_csv(&ar)? } else { Vec::new() };
            NetworkCalibration {
                bimodal,
                slow_state,
                validation,
                samples,
                refine_samples: Vec::new(),
                fit,
                prtt_samples: Vec::new(),
                loggp: None,
                allreduce_samples,
            }
        }
        None => network::calibrate(&launcher, &options).context("calibrate network (one node)")?,
    };
    let inter = match &a.hostfile {
        Some(hostfile) => {
            let hosts = network::hostfile_hosts(hostfile)?;
            let mut two_nodes = launcher.clone();
            two_nodes.mpirun_args.extend(["--hostfile".to_string(), hostfile.display().to_string(), "--map-by".into(), "node".into()]);
            let cal = network::calibrate(&two_nodes, &options).context("calibrate network (two nodes, --hostfile)")?;
            Some((hosts, cal))
        }
        None => None,
    };
    if let Some(csv) = &a.csv {
        bench::write_csv(csv, &cal.samples)?;
        if !cal.refine_samples.is_empty() {
            bench::write_csv(&sibling(csv, "refine"), &cal.refine_samples)?;
        }
        if !cal.prtt_samples.is_empty() {
            bench::write_csv(&sibling(csv, "prtt"), &cal.prtt_samples)?;
        }
        if let Some((_, inter)) = &inter {
            bench::write_csv(&sibling(csv, "inter"), &inter.samples)?;
        }
        if !cal.allreduce_samples.is_empty() {
            bench::write_csv(&sibling(csv, "allreduce"), &cal.allreduce_samples)?;
        }
    }
    if let Some(dir) = &a.plot {
        let mut runs = vec![("intra-", &cal)];
        runs.extend(inter.as_ref().map(|(_, c)| ("inter-", c)));
        for (prefix, c) in runs {
            let mut fits = vec![(Op::Pingpong, &c.fit.transfer), (Op::Send, &c.fit.send), (Op::Recv, &c.fit.recv)];
            fits.extend(c.fit.isend.as_ref().map(|f| (Op::Isend, f)));
            for p in plot::plot_all(dir, prefix, &c.samples, &fits)? {
                eprintln!("wrote {}", p.display());
            }
        }
    }
    let model = |c: &network::NetworkCalibration| -> anyhow::Result<simulator::network::P2pModel> {
        let pw = c.fit.p2p_model();
        if a.model == ModelArg::Piecewise {
            return Ok(pw);
        }
        let l = c.loggp.ok_or_else(|| anyhow::anyhow!("--model loggp needs the LogGP assessment (--loggp-n >= 2)"))?;
        #[allow(non_snake_case)]
        let S = pw.eager_threshold_bytes;
        Ok(simulator::network::P2pModel { rma: pw.rma, ..simulator::network::loggp::LogGps { S, ..l }.to_p2p() })
    };
    let mut platform = match &inter {
        Some((hosts, inter)) => network::cluster_platform(hosts, cores(), model(&cal)?, model(inter)?),
        None => network::host_platform(&host_name(), cores(), model(&cal)?),
    };
    let coll_note = collectives(&mut platform, &cal, &launcher, a.coll_selector.as_deref())?;
    platform.smpi.irecv_s = cal.fit.irecv_s.unwrap_or(0.0);
    platform.smpi.wait_s = cal.fit.wait_s.unwrap_or(0.0);
    platform.smpi.rma_call_s = cal.fit.rma_call_s.unwrap_or(0.0);
    platform.smpi.rma_calls = cal.fit.rma_calls;
    platform.smpi.poll_s = cal.fit.iprobe_s.unwrap_or(0.0);
    if a.host_copy {
        platform.network.host_copy_bytes_per_s = cal.fit.host_copy_bytes_per_s;
    }
    let (serial, from) = cal.fit.serial_receives();
    platform.network.serial_receives = serial && !a.parallel_receives;
    platform.network.serial_receives_min_bytes = if platform.network.serial_receives { from } else { 0 };
    platform.save(&a.out)?;
    println!("one node (shared memory):");
    report(&cal);
    if a.parallel_receives && serial {
        println!("--parallel-receives: the platform leaves serial_receives out");
    }
    println!("{coll_note}");
    if let Some((_, inter)) = &inter {
        println!("two nodes (--hostfile):");
        report(inter);
    }
    println!("{}", JitsimLatencies::new(&cal.fit, inter.as_ref().map(|(_, c)| &c.fit)).summary());
    // SMPI's factors describe the network between hosts when it was measured.
    let smpi = simgrid::from_fit(&inter.as_ref().map_or(&cal, |(_, c)| c).fit);
    print!("SimGrid snippet:\n{}", smpi.snippet());
    if let Some(xml) = &a.simgrid {
        std::fs::write(xml, smpi.platform_xml(2, cores())).with_context(|| format!("write {}", xml.display()))?;
        eprintln!("wrote {}", xml.display());
    }
    eprintln!(
        "wrote {} ({} samples, {} refinement samples; ping-pong medians stable to {:.1}%) in {:.1} s",
        a.out.display(),
        cal.samples.len(),
        cal.refine_samples.len(),
        network::median_ci(&cal.slow_state.as_ref().map_or_else(|| cal.samples.clone(), |st| st.keep_fast(&cal.samples))) * 100.0,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The `[collectives]` table: the selector (`--coll-selector`, else the
/// MPI library's from `mpirun --version`, else MPICH's with a warning),
/// the reduction cost fitted on the one-node allreduce samples and, with
/// the `mpich` selector, the costs of MPICH's shared-memory collectives
/// fitted on the same samples; with the log lines saying them; set in
/// `platform`.
fn collectives(
    platform: &mut simulator::platform::Platform,
    cal: &NetworkCalibration,
    launcher: &Launcher,
    given: Option<&str>,
) -> anyhow::Result<String> {
    use simulator::collectives::CollAlgs;
    let version = launcher.version();
    let (name, why) = match (given, version.as_deref().and_then(network::gamma::selector_of)) {
        (Some(g), _) => (g.to_string(), "--coll-selector".to_string()),
        (None, Some(s)) => (s.to_string(), format!("`{} --version`: {}", launcher.mpirun, version.as_deref().unwrap_or(""))),
        (None, None) => {
            let v = version.as_deref().unwrap_or("does not run");
            eprintln!("calibrate network: unknown MPI library (`{} --version`: {v}); collective selector mpich", launcher.mpirun);
            ("mpich".to_string(), "default, library unknown".to_string())
        }
    };
    platform.collectives.algs = CollAlgs::preset(&name).map_err(anyhow::Error::msg).context("--coll-selector")?;
    let fit = network::gamma::fit_reduce_cost(&cal.allreduce_samples, platform)?;
    platform.collectives.reduce = fit.cost;
    let table = if fit.points.is_empty() { String::new() } else { format!("\n{}", fit.table()) };
    // Under MPICH the samples are its shared-memory all-reduces.
    let shm = match platform.collectives.algs.selector {
        simulator::collectives::Selector::Mpich => network::shm::fit_shm_cost(&cal.allreduce_samples, platform)?,
        _ => None,
    };
    platform.collectives.shm = shm.as_ref().map(|f| f.cost);
    let shm = shm.map_or_else(String::new, |f| format!("\n{}", f.summary()));
    Ok(format!("collective selector: {name} ({why})\n{}{table}{shm}", fit.summary()))
}

/// `dir/stem.csv` → `dir/stem.<tag>.txt`.
pub(crate) fn sibling_txt(csv: &Path, tag: &str) -> PathBuf {
    sibling(csv, tag).with_extension("txt")
}

/// `dir/stem.csv` → `dir/stem.<tag>.csv`.
fn sibling(csv: &Path, tag: &str) -> PathBuf {
    let stem = csv.file_stem().map_or_else(|| "samples".into(), |s| s.to_string_lossy().into_owned());
    csv.with_file_name(format!("{stem}.{tag}.csv"))
}

/// Prints the fits, their held-back validation and LogGP; bimodal
/// operations as warnings on stderr.
fn report(cal: &NetworkCalibration) {
    if let Some(st) = &cal.slow_state {
        eprintln!("calibrate network: {}", st.warning());
    }
    for b in &cal.bimodal {
        eprintln!("calibrate network: {}", b.warning());
    }
    print!("{}", cal.fit.summary());
    match &cal.validation {
        Some(v) => println!(
            "held-back validation: {} ping-pong samples at {} sizes ({} more in slow states or modes left out); median error {:.2}% per size (model vs held-back median), {:.2}% per sample (p90 {:.2}%); {:.2}% per size with them",
            v.samples,
            v.sizes,
            v.slow_mode_samples,
            v.median_rel_error * 100.0,
            v.sample_median_rel_error * 100.0,
            v.sample_p90_rel_error * 100.0,
            v.all_modes_median_rel_error * 100.0
        ),
        None => println!("held-back validation: skipped (no samples held back)"),
    }
    match &cal.loggp {
        Some(l) => println!("{} (fitted on PRTT)", l.summary()),
        None => println!("LogGP: skipped (--loggp-n 0)"),
    }
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

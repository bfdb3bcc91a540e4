//! The `simulator validate` command: options and the run over the suite.

use std::path::{Path, PathBuf};

use std::time::Duration;

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};

mod calibration;
mod online;
mod perturb_runs;
mod schedule;
mod sweep_runs;
mod timing;
mod traced;

use online::online_case;
use schedule::Run;

use calibration::{calibrate_quietly, check_state, more_calibrations, quiet_probe, Calibration};
use sweep_runs::{run_sweep, MEASURED_BW};
use timing::{plain_mode, predicted_s, resolve_timing};
pub use traced::Merge;
use traced::{finish_traced, match_states, trace_case, traced_run, traced_slots, Traced, TracedRuns};

use super::launch::{Launcher, Mode};
use super::modes::{self, FastRuns};
use super::quiet::{self, Contention, Quiet};
use super::report::{self, Row};
use super::state::{self, State};
use super::suite::{self, Case, Timing};
use super::sweep;
use simulator::action::ComputeTime;
use simulator::platform::Platform;

/// Options of `simulator validate`.
#[derive(clap::Args, Debug)]
pub struct ValidateArgs {
    /// The suite (TOML, see `c-tests/suite.toml`); paths in it are relative to it.
    #[arg(long, value_name = "TOML", default_value = "c-tests/suite.toml")]
    pub suite: PathBuf,
    /// Platform to predict on (our TOML or a SimGrid XML); default: run
    /// `calibrate network` first and use its `<OUT>/platform.toml`.
    #[arg(long, value_name = "FILE")]
    pub platform: Option<PathBuf>,
    /// Plain runs per case (R); the measured time is their median.
    #[arg(short = 'r', long, value_name = "R", default_value_t = 5)]
    pub reps: usize,
    /// Run every case on this many ranks instead of the suite's; with
    /// --reference, the rank counts to predict (comma-separated).
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',')]
    pub ranks: Vec<u32>,
    /// Set each case's prediction extrapolated to every --ranks count
    /// against a reference instead of real runs: `smpi` emulates the
    /// case's program (its source built with smpicc/smpif90) at each count
    /// on --platform, a SimGrid XML (Heinrich et al. 2017; SMPI's compute
    /// bias calibrated at the largest --traced-ranks count).
    #[arg(long, value_enum, requires = "platform")]
    pub reference: Option<ReferenceArg>,
    /// With --reference: the rank counts traced under mpirun for the
    /// extrapolation.
    #[arg(long, value_name = "N,N[,...]", value_delimiter = ',', default_value = "2,4,8", requires = "reference")]
    pub traced_ranks: Vec<u32>,
    /// With --reference smpi: a SimGrid setting for every smpirun, as its
    /// --cfg=name:value (repeatable), e.g. smpi/simulate-computation:no.
    #[arg(long = "smpi-cfg", value_name = "NAME:VALUE", requires = "reference")]
    pub smpi_cfg: Vec<String>,
    /// With --reference: how the extrapolation treats the program's
    /// variability.
    #[command(flatten)]
    pub variability: crate::extrapolate_cmd::VariabilityArgs,
    /// Run only these cases of the suite (by name, as the table's rows;
    /// repeatable or a comma list); default: every case.
    #[arg(long = "case", value_name = "NAME[,NAME...]")]
    pub cases: Vec<String>,
    /// The MPI launcher; default $MPIRUN, else mpirun.
    #[arg(long, value_name = "PATH")]
    pub mpirun: Option<String>,
    /// Launcher argument for every run and for the calibration (repeatable),
    /// e.g. --mpirun-arg=--mca --mpirun-arg=btl --mpirun-arg=tcp,self.
    #[arg(long = "mpirun-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub mpirun_args: Vec<String>,
    /// Hostfile for every case without its own, and for the calibration
    /// (which then also fits the inter-node model).
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Output directory: validate.{md,csv,json,svg}, sweep.{md,csv}, and per
    /// case the traces and every run's log.
    #[arg(long, value_name = "DIR", default_value = "target/validate")]
    pub out: PathBuf,
    /// The interposer library; default: libinterposer.so beside this binary.
    #[arg(long, value_name = "SO")]
    pub interposer: Option<PathBuf>,
    /// The calibrate binary; default: calibrate beside this binary.
    #[arg(long, value_name = "PATH")]
    pub calibrate: Option<PathBuf>,
    /// Extra argument of `calibrate network` (repeatable), e.g. --calibrate-arg=--reps=10.
    #[arg(long = "calibrate-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub calibrate_args: Vec<String>,
    /// Also re-predict with the network's latency and bandwidth scaled by 0.5 and 2.
    #[arg(long)]
    pub sweep: bool,
    /// With --sweep: a shell command that sets the real network's
    /// bandwidth to a factor of its base, called as `<CMD> <factor>`
    /// (1, 0.5, 2 before every run, in turn; 1 again at the end): every
    /// case is re-measured R times at each factor, interleaved.
    #[arg(long, value_name = "CMD", requires = "sweep")]
    pub sweep_hook: Option<String>,
    /// Which recorded duration a compute block takes in the offline
    /// replay: thread CPU time (what the block costs on an idle core), or
    /// wall time (what it took in the traced run, other load included).
    #[arg(long, value_enum, default_value_t = ComputeArg::Cpu)]
    pub compute_time: ComputeArg,
    /// Traced runs per case (default 1): with K > 1 the offline
    /// prediction is made of the K runs as --merge says, and the K runs
    /// replayed alone give its band (`offline_lo_s`, `offline_hi_s`).
    /// With --reference, runs per traced count (default 3): the
    /// extrapolation takes each compute block at the median of its runs,
    /// so noise of the machine that hits one run and not the others is
    /// left out while the program's own, repeatable variability stays.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub traced_runs: Option<u32>,
    /// How K > 1 traced runs make the offline prediction: `runs`, the run
    /// whose replay alone is the median; or `blocks`, one replay of all
    /// runs, each compute block at the median of its K durations (noise
    /// that met one rank in one run and another in the next cancels out,
    /// so it predicts a quieter machine than the plain runs met).
    #[arg(long, value_enum, default_value_t = Merge::Runs)]
    pub merge: Merge,
    /// Online-mode runs per case: with K > 1 the online prediction is the
    /// median of the K runs' predictions (of those in the machine's fast
    /// state, when some are not), and their spread is reported
    /// (`online_spread_pct`, `online_runs_s`).
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub online_runs: u32,
    /// Runs per case in INTERPOSER_MODE=regions (per-region block sums
    /// only), interleaved with the traced runs: tracing's perturbation of
    /// the compute blocks, region by region (perturbation.{txt,json} per
    /// case, and a table). A difference is systematic only with at least 2
    /// runs of each kind (--traced-runs >= 2).
    #[arg(long, value_name = "M", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=20))]
    pub regions_runs: u32,
    /// Also predict with each systematically perturbed region's replayed
    /// blocks scaled by untraced ÷ traced (needs --regions-runs).
    #[arg(long, requires = "regions_runs")]
    pub correct_perturbation: bool,
    /// Calibrations of the network (K): with K > 1, K − 1 more
    /// `calibrate network` runs follow the first (`calibration-<k>/`), each
    /// case is replayed on each and predicted on the one whose prediction
    /// is the median, and the predictions' spread (`calibration_spread_pct`)
    /// shows how far the calibration's own run-to-run variation moves the
    /// prediction.
    #[arg(long, value_name = "K", default_value_t = 1, conflicts_with = "platform", value_parser = clap::value_parser!(u32).range(1..=10))]
    pub calibrations: u32,
    /// Read the time of every case without its own `time_regex` from the
    /// first capture group of REGEX on the last output line it matches,
    /// seconds (default: the program's `wall_s=` line, else the
    /// interposer's MPI_Init-to-MPI_Finalize span).
    #[arg(long, value_name = "REGEX")]
    pub time_regex: Option<String>,
    /// Kill a run after this many seconds.
    #[arg(long, value_name = "S", default_value_t = 600)]
    pub timeout_s: u64,
    /// A run during which other tasks waited for a CPU longer than this
    /// share of its time (Linux CPU pressure, /proc/pressure/cpu) was
    /// disturbed by other work and is repeated; 100 keeps every run.
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    pub max_stall_pct: f64,
    /// Repeats of a disturbed run before its last attempt is kept (and noted).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub retries: usize,
    /// Before each run, wait up to this long for a quiet 0.3 s (CPU
    /// pressure at most half of --max-stall-pct), then run anyway.
    #[arg(long, value_name = "S", default_value_t = 20.0)]
    pub quiet_wait_s: f64,
}

/// `--reference`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReferenceArg {
    /// SimGrid's SMPI emulating the program (`smpirun`).
    Smpi,
}

/// `--compute-time`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ComputeArg {
    /// Thread CPU time.
    Cpu,
    /// Wall time between the calls.
    Wall,
}

/// A file beside the running binary (`target/release/<name>`).
fn beside_exe(name: &str) -> Option<PathBuf> {
    std::env::current_exe().ok().map(|e| e.with_file_name(name))
}

fn load_avg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or_else(|_| "unknown".into(), |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// Times `validate` makes the traced runs again at most when they all
/// replay in a slow state of the machine ([`FastRuns::fast_replays`]).
const MAX_RETRACES: usize = 2;

/// Times `validate` makes a case again at most when the machine changed
/// latency state during it (state.rs).
const MAX_CASE_REPEATS: usize = 1;

/// Runs one case: plain runs interleaved with the traced runs, then with
/// the online runs ([`schedule::schedule`]), then more plain runs while
/// the machine's slow state left too few in the fast one.
fn run_case(case: &Case, ctx: &Ctx, bar: &ProgressBar) -> (Row, Option<Traced>) {
    let mut row = Row { name: case.name.clone(), ranks: case.ranks, ..Row::default() };
    let dir = ctx.out.join("cases").join(format!("{}-np{}", case.name, case.ranks));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        row.note(format!("{}: {e}", dir.display()));
        return (row, None);
    }
    // Plain runs still disturbed after their retries: out of the median
    // while some undisturbed run exists.
    let mut disturbed = Vec::new();
    let mut i = 0;
    let mut plain_run = |row: &mut Row, i: &mut usize| {
        if *i >= ctx.reps {
            bar.inc_length(1);
        }
        bar.set_message(format!("{} plain {}/{}", case.name, *i + 1, ctx.reps.max(*i + 1)));
        let mode = plain_mode(case, ctx, &dir, *i);
        match checked_run_flag(case, &mode, &dir.join(format!("plain-{i}.log")), ctx, row) {
            (Ok(w), true) => disturbed.push(w),
            (Ok(w), false) => row.measured.push(w),
            (Err(e), _) => row.note(e),
        }
        bar.inc(1);
        *i += 1;
    };
    let (mut acc, mut traced, mut online_platform) = (Some(TracedRuns::default()), None, None);
    for run in schedule::schedule(ctx.reps, traced_slots(ctx), ctx.online_runs) {
        match run {
            Run::Plain => plain_run(&mut row, &mut i),
            Run::Traced(k) => traced_run(case, ctx, &dir, k, &mut row, bar, acc.as_mut().expect("traced runs come first")),
            Run::Online(k) => {
                if let Some(done) = acc.take() {
                    traced = finish_traced(case, ctx, &dir, &mut row, bar, done);
                }
                let platform = online_platform.get_or_insert_with(|| online::online_platform(ctx, &dir, traced.as_ref()));
                online::online_run(case, ctx, &dir, k, &mut row, bar, platform);
            }
        }
    }
    if let Some(done) = acc.take() {
        traced = finish_traced(case, ctx, &dir, &mut row, bar, done);
    }
    // More plain runs while runs in the machine's slow state leave fewer
    // than the suite's count in the fast one (modes.rs).
    while FastRuns::split(&row.measured).wanted(ctx.reps) {
        plain_run(&mut row, &mut i);
    }
    if !disturbed.is_empty() {
        let list = disturbed.iter().map(|w| format!("{w:.4}")).collect::<Vec<_>>().join(", ");
        if row.measured.is_empty() {
            row.note(format!("no undisturbed plain run: the median is over the disturbed ones ({list} s)"));
            row.measured = disturbed;
        } else {
            row.note(format!("median over the {} undisturbed plain runs; left out, still disturbed: {list} s", row.measured.len()));
        }
    }
    let runs = FastRuns::split(&row.measured);
    if let Some(note) = runs.note() {
        row.note(note);
        row.measured = runs.fast.clone();
    }
    // Traced runs in a slow state give slow compute blocks to a replay
    // set against the fast state's measurement: traced again. Their state
    // shows in their replays, which leave out tracing's own cost (in a
    // call-bound program, more than the untraced run's whole time).
    for _ in 0..MAX_RETRACES {
        let replays = traced.as_ref().map_or_else(Vec::new, Traced::replays);
        if !runs.fast_replays(&replays).is_some_and(|f| !f.is_empty() && !f.contains(&true)) {
            break;
        }
        row.note(format!(
            "every traced run replays >= {}x the fastest plain run, in a slow state of the machine: traced again",
            modes::SLOW_RATIO
        ));
        (row.traced_s, row.offline_s) = (None, None);
        row.traced.clear();
        let _ = std::fs::remove_dir_all(dir.join("trace"));
        bar.inc_length(1);
        traced = trace_case(case, ctx, &dir, &mut row, bar);
    }
    // The online runs are judged by their predictions as the traced
    // runs are by their replays: made again (at most twice) when they all
    // met a slow state that the offline prediction did not.
    for _ in 0..MAX_RETRACES {
        let replays = traced.as_ref().map_or_else(Vec::new, Traced::replays);
        let offline_fast = runs.fast_replays(&replays).is_some_and(|f| f.contains(&true));
        let all_slow = runs.fast_replays(&row.online).is_some_and(|f| !f.is_empty() && !f.contains(&true));
        if !(offline_fast && all_slow) {
            break;
        }
        let list = row.online.iter().map(|o| format!("{o:.4}")).collect::<Vec<_>>().join(", ");
        row.note(format!(
            "online runs predicted {list} s, >= {}x the fastest plain run, in a slow state of the machine: run again",
            modes::SLOW_RATIO
        ));
        row.online.clear();
        bar.inc_length(u64::from(ctx.online_runs));
        online_case(case, ctx, &dir, &mut row, bar, traced.as_ref());
    }
    online::online_prediction(&mut row, &runs);
    if let Some(t) = traced.as_mut() {
        match_states(ctx, &mut row, t, &runs);
    }
    (row, traced)
}

/// One run of `case` in `mode` on a quiet machine ([`Quiet::run`]): a
/// disturbed attempt keeps its log as `<log stem>.disturbed-<k>.log` and
/// is named in the row's note with its `wall_s` (never in the median);
/// every attempt's contention goes to `contention.txt` beside the log.
fn checked_run(case: &Case, mode: &Mode, log: &Path, ctx: &Ctx, row: &mut Row) -> Result<f64, String> {
    checked_run_flag(case, mode, log, ctx, row).0
}

/// [`checked_run`], also saying whether the kept attempt was still
/// disturbed (its retries spent).
fn checked_run_flag(case: &Case, mode: &Mode, log: &Path, ctx: &Ctx, row: &mut Row) -> (Result<f64, String>, bool) {
    let name = log.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let mut lines = Vec::new();
    let mut line = |what: &str, out: &Result<f64, String>, c: &Contention| {
        let wall = out.as_ref().map_or_else(|_| "failed".into(), |w| format!("wall_s {w:.6}"));
        lines.push(format!("{name} {what}: {wall}, CPU stall {:.3} s of {:.3} s ({:.1} %)", c.stall_s, c.elapsed_s, 100.0 * c.share()));
    };
    let mut discarded = Vec::new();
    let (out, last) = ctx.quiet.run(
        || ctx.launcher.run(case, mode, log),
        |k, out, c| {
            line(&format!("attempt {} disturbed, repeated", k + 1), out, c);
            let _ = std::fs::rename(log, log.with_extension(format!("disturbed-{k}.log")));
            discarded.push(format!("{}{:.0} % stall", out.as_ref().map_or(String::new(), |w| format!("{w:.4} s at ")), 100.0 * c.share()));
        },
    );
    let mut kept_disturbed = false;
    if let Some(c) = &last {
        kept_disturbed = ctx.quiet.disturbed(c);
        line(if kept_disturbed { "kept although disturbed (retries spent)" } else { "kept" }, &out, c);
        if kept_disturbed {
            row.note(format!("{name} kept although disturbed ({:.0} % CPU stall after {} retries)", 100.0 * c.share(), ctx.quiet.retries));
        }
    }
    ctx.repeated.set(ctx.repeated.get() + discarded.len());
    if !discarded.is_empty() {
        row.note(format!("{name} repeated for CPU contention (discarded: {})", discarded.join(", ")));
    }
    if let Some(dir) = log.parent() {
        use std::io::Write as _;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("contention.txt")) {
            for l in &lines {
                let _ = writeln!(f, "{l}");
            }
        }
    }
    (out, kept_disturbed)
}

/// What every case needs.
struct Ctx {
    out: PathBuf,
    reps: usize,
    launcher: Launcher,
    interposer: PathBuf,
    platform_path: PathBuf,
    platform_is_xml: bool,
    platform: Platform,
    compute: ComputeTime,
    quiet: Quiet,
    /// `--traced-runs`.
    traced_runs: u32,
    /// `--merge`.
    merge: Merge,
    /// `--online-runs`.
    online_runs: u32,
    /// `--regions-runs`.
    regions_runs: u32,
    /// `--correct-perturbation`.
    correct_perturbation: bool,
    /// `--calibrations`: the platforms of the calibrations after the
    /// first, all of the machine's first latency state (state.rs).
    more_platforms: Vec<Platform>,
    /// The case is predicted on the first calibration's latency state.
    first_state: bool,
    /// Attempts discarded for CPU contention so far.
    repeated: std::cell::Cell<usize>,
}

/// Runs `simulator validate`.
///
/// # Errors
/// A one-line message naming the file or option at fault; also when some
/// case has no measurement or no offline prediction (after every output
/// is written).
pub fn run(args: &ValidateArgs) -> anyhow::Result<()> {
    if args.reps == 0 {
        bail!("--reps: must be >= 1");
    }
    let mut cases =
        suite::select(suite::load(&args.suite)?, &args.cases).map_err(|e| anyhow::anyhow!("--case: {}: {e}", args.suite.display()))?;
    match (args.ranks.as_slice(), args.reference) {
        (_, Some(_)) => {}
        ([], None) => {}
        ([0], None) => bail!("--ranks: must be >= 1"),
        (&[n], None) => cases.iter_mut().for_each(|c| c.ranks = n),
        (_, None) => bail!("--ranks: a list of rank counts needs --reference"),
    }
    if let Some(re) = &args.time_regex {
        suite::check_regex(re).map_err(anyhow::Error::msg).context("--time-regex")?;
        cases.iter_mut().filter(|c| c.timing == Timing::Auto).for_each(|c| c.timing = Timing::Regex(re.clone()));
    }
    if let Some(c) = cases.iter().find(|c| !c.program.is_file()) {
        bail!(
            "{}: case {}: program {} not found (build the c-tests: make -C c-tests; install third-party programs: bash .ci/setup)",
            args.suite.display(),
            c.name,
            c.program.display()
        );
    }
    let mut launcher = Launcher::detect(args.mpirun.as_deref()).map_err(anyhow::Error::msg)?;
    launcher.extra_args = args.mpirun_args.clone();
    launcher.hostfile = args.hostfile.clone();
    launcher.timeout = Duration::from_secs(args.timeout_s);
    let interposer =
        args.interposer.clone().or_else(|| beside_exe("libinterposer.so")).context("cannot locate libinterposer.so; give --interposer")?;
    if !interposer.is_file() {
        bail!("{}: interposer library not found (cargo build --release, or give --interposer)", interposer.display());
    }
    let interposer = interposer.canonicalize().with_context(|| interposer.display().to_string())?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("create {}", args.out.display()))?;
    let out = args.out.canonicalize().with_context(|| args.out.display().to_string())?;
    if args.reference == Some(ReferenceArg::Smpi) {
        let r = super::reference::Reference {
            platform: args.platform.clone().context("--reference smpi needs --platform")?,
            ranks: args.ranks.clone(),
            traced_ranks: args.traced_ranks.clone(),
            traced_runs: args.traced_runs.unwrap_or(3),
            smpi_cfg: args.smpi_cfg.clone(),
            variability: args.variability.clone(),
            out,
            interposer,
            timeout: launcher.timeout,
        };
        return super::reference::run(&r, &cases, &launcher);
    }
    let traced_runs = args.traced_runs.unwrap_or(1);
    let load_start = load_avg();
    if args.max_stall_pct.is_nan() || args.max_stall_pct <= 0.0 || !args.quiet_wait_s.is_finite() || args.quiet_wait_s < 0.0 {
        bail!("--max-stall-pct must be > 0 and --quiet-wait-s >= 0");
    }
    let quiet = Quiet {
        max_stall_share: args.max_stall_pct / 100.0,
        retries: args.retries,
        max_wait: Duration::from_secs_f64(args.quiet_wait_s),
        ..Quiet::default()
    };
    let psi = quiet::cpu_stall_us().is_some();
    let mut calibration_note = String::new();

    let sweep_runs = if args.sweep_hook.is_some() { MEASURED_BW.len() * args.reps } else { 0 };
    let bar =
        ProgressBar::new((cases.len() * (args.reps + (traced_runs + args.online_runs + args.regions_runs) as usize + sweep_runs)) as u64);
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}").expect("template").progress_chars("=> "));
    bar.enable_steady_tick(Duration::from_millis(250));
    let platform_path = match &args.platform {
        Some(p) => p.clone(),
        None => {
            let (platform, note) = calibrate_quietly(args, &launcher, &quiet, &out, &bar);
            if !note.is_empty() {
                calibration_note = format!("calibration: {note}");
            }
            platform?
        }
    };
    let platform = Platform::load(&platform_path).context("cannot load platform")?;
    let platform_is_xml = std::fs::read_to_string(&platform_path).is_ok_and(|t| t.trim_start().starts_with('<'));
    let platform_path = platform_path.canonicalize().with_context(|| platform_path.display().to_string())?;
    let (more_platforms, more_notes) = more_calibrations(args, &launcher, &quiet, &out, &bar)?;
    calibration_note = std::iter::once(calibration_note).filter(|n| !n.is_empty()).chain(more_notes).collect::<Vec<_>>().join("; ");
    let compute = args.compute_time.into();
    let mut ctx = Ctx {
        out: out.clone(),
        reps: args.reps,
        launcher,
        interposer,
        platform_path,
        platform_is_xml,
        platform,
        compute,
        quiet,
        traced_runs,
        online_runs: args.online_runs,
        merge: args.merge,
        regions_runs: args.regions_runs,
        correct_perturbation: args.correct_perturbation,
        more_platforms,
        first_state: true,
        repeated: Default::default(),
    };
    // The latency-state probe (state.rs): our TOML platform, one host.
    let mut probe = match (&args.calibrate, args.hostfile.is_none() && !ctx.platform_is_xml) {
        (_, false) => None,
        (Some(exe), true) => Some(exe.clone()),
        (None, true) => beside_exe("calibrate").filter(|e| e.is_file()),
    };
    let mut cals = vec![Calibration {
        latency_s: state::platform_latency_s(&ctx.platform),
        path: ctx.platform_path.clone(),
        platform: ctx.platform.clone(),
    }];
    let mut results: Vec<(Row, Option<Traced>)> = Vec::new();
    for case in cases.iter_mut() {
        bar.set_message(format!("{} timing", case.name));
        let timing_note = resolve_timing(case, &ctx.launcher, &ctx.out);
        let case = &*case;
        let mut notes: Vec<String> = timing_note.into_iter().collect();
        let mut attempt = 0;
        let (mut row, traced) = loop {
            if let Some(exe) = &probe {
                match check_state(args, &mut ctx, exe, &mut cals, &bar) {
                    Ok(n) => notes.extend(n),
                    Err(e) => {
                        bar.println(format!("warning: {e}; the machine's latency state is not checked from here on"));
                        notes.push(e);
                        probe = None;
                    }
                }
            }
            let done = run_case(case, &ctx, &bar);
            // The state again after the case: a case during which the
            // machine changed state was measured in another one than its
            // model's, and is made once more.
            let Some(exe) = probe.as_ref().filter(|_| attempt < MAX_CASE_REPEATS) else { break done };
            let platform_s = state::platform_latency_s(&ctx.platform);
            match quiet_probe(&ctx, exe, &bar) {
                Ok(after) if state::classify(after, platform_s) != State::Same => {
                    notes.push(format!(
                        "the machine changed latency state during the case (8 B: {:.3} us after it, {:.3} us on its platform): the case was made again",
                        after * 1e6,
                        platform_s * 1e6
                    ));
                    attempt += 1;
                    bar.inc_length(ctx.reps as u64 + 2);
                }
                _ => break done,
            }
        };
        notes.iter().for_each(|n| row.note(n));
        results.push((row, traced));
    }
    let sweep_rows = if args.sweep { Some(run_sweep(args, &ctx, &cases, &results, &bar)?) } else { None };
    bar.finish_and_clear();

    let rows: Vec<Row> = results.iter().map(|(r, _)| r.clone()).collect();
    let preamble = format!(
        "Suite `{}`, platform `{}`, {} plain runs per case (median), compute blocks by {:?} time, launcher `{}`; load average {} at the start, {} at the end; {}.",
        args.suite.display(),
        cals.iter().map(|c| c.path.display().to_string()).collect::<Vec<_>>().join("` (and for another latency state `"),
        args.reps,
        match args.compute_time {
            ComputeArg::Cpu => "thread CPU",
            ComputeArg::Wall => "wall",
        },
        ctx.launcher.mpirun,
        load_start,
        load_avg(),
        if psi {
            format!("{} runs repeated for CPU contention (other tasks waiting for a CPU > {} % of the run){}", ctx.repeated.get(), args.max_stall_pct, if calibration_note.is_empty() { String::new() } else { format!("; {calibration_note}") })
        } else {
            "no /proc/pressure/cpu: runs not checked for CPU contention".into()
        }
    );
    let write =
        |name: &str, text: String| std::fs::write(out.join(name), text).with_context(|| format!("write {}", out.join(name).display()));
    write("validate.md", report::markdown(&rows, &preamble))?;
    write("validate.csv", report::csv(&rows))?;
    write("validate.json", report::json(&rows))?;
    report::plot_svg(&out.join("validate.svg"), "predicted vs measured run time", &rows).map_err(anyhow::Error::msg)?;
    print!("{}", report::table(&rows));
    if rows.iter().any(|r| r.perturbation.is_some()) {
        let t = super::perturb::table(&rows);
        write("perturbation.md", format!("# Tracing's perturbation of compute blocks\n\n{preamble}\n\n```\n{t}```\n"))?;
        print!("\n{t}");
    }
    for r in rows.iter().filter(|r| !r.note.is_empty()) {
        eprintln!("{}: {}", r.name, r.note);
    }
    if let Some(s) = &sweep_rows {
        write("sweep.md", sweep::markdown(s, &preamble))?;
        write("sweep.csv", sweep::csv(s))?;
        print!("\n{}", sweep::table(s));
    }
    eprintln!("wrote {}/validate.{{md,csv,json,svg}}{}", out.display(), if sweep_rows.is_some() { " and sweep.{md,csv}" } else { "" });
    let failed: Vec<&str> = rows.iter().filter(|r| r.measured_s().is_none() || r.offline_s.is_none()).map(|r| r.name.as_str()).collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} cases have no measurement or no offline prediction: {} (see the notes above)",
            failed.len(),
            rows.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

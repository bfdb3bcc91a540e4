//! `simulator trace <command>`: tools over an interposer trace directory
//! (per-region report, MPI-IO summary, SimGrid TI export, OTF2 export,
//! Chrome/Perfetto timeline, dump).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use simulator::regions::region_report as regions_report;
use simulator::trace::{open_dir, ti_export, timeline};

/// Arguments of `simulator trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Debug, clap::Subcommand)]
enum TraceCommand {
    /// Per call-site region: count, total, mean and stdev of compute time
    /// (mpiP's call-site report for compute blocks; file:line with -g).
    Regions {
        /// Trace directory (INTERPOSER_OUT).
        trace: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// MPI-IO summary after Darshan: calls, bytes and time per kind,
    /// access sizes, consecutive/strided/backward accesses, per file and
    /// per call site.
    Io {
        /// Trace directory (INTERPOSER_OUT).
        trace: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write a SimGrid time-independent trace (for `smpirun -replay`).
    ExportTi {
        /// Trace directory (INTERPOSER_OUT).
        trace: PathBuf,
        /// Output directory: ti_traces.txt and rank-<r>.ti.
        #[arg(long)]
        out: PathBuf,
        /// Host speed of the replay platform, flop/s: compute seconds × it.
        #[arg(long, default_value_t = 1e9)]
        host_speed: f64,
    },
    /// Write an OTF2 archive (Vampir, Score-P tools) of the recorded run:
    /// one location per rank, MPI calls and compute blocks as regions,
    /// MPI point-to-point, collective and I/O events.
    ExportOtf2 {
        /// Trace directory (INTERPOSER_OUT).
        trace: PathBuf,
        /// Output directory: traces.otf2, traces.def and traces/.
        #[arg(long)]
        out: PathBuf,
    },
    /// Write a Chrome/Perfetto timeline (Trace Event JSON) of the recorded run.
    Timeline {
        /// Trace directory (INTERPOSER_OUT).
        trace: PathBuf,
        /// Output JSON file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Per rank file: complete or cut short (what a crash dropped), records,
    /// bytes per record; exits 1 when a file is incomplete.
    Check {
        /// Trace directory (INTERPOSER_OUT).
        trace: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print every record of every rank as text, one per line.
    Dump {
        /// Trace directory (INTERPOSER_OUT).
        trace: PathBuf,
    },
    /// Tracing's perturbation of compute blocks: per call-site region, the
    /// mean block of traced runs against that of INTERPOSER_MODE=regions
    /// runs of the same program (matched by region and rank), and which
    /// differences are systematic (beyond the run-to-run spread, the same
    /// way on every rank).
    Perturbation {
        /// Run directories, in any order: trace directories
        /// (INTERPOSER_MODE=trace) and regions directories (INTERPOSER_MODE=regions).
        #[arg(required = true, num_args = 2..)]
        runs: Vec<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Write the systematic regions' corrections (untraced ÷ traced) as
        /// a speed-ratio CSV for `simulator replay --speed-ratios`.
        #[arg(long, value_name = "CSV")]
        ratios_out: Option<PathBuf>,
        /// Which block time to compare: thread CPU time (the replay's
        /// default) or wall time.
        #[arg(long, value_enum, default_value_t = crate::validate::cli::ComputeArg::Cpu)]
        compute_time: crate::validate::cli::ComputeArg,
        /// Runs of each kind a rank needs for a difference to count as systematic.
        #[arg(long, value_name = "N", default_value_t = 2)]
        min_runs: usize,
        /// Smallest |traced/untraced − 1| counted as systematic.
        #[arg(long, value_name = "F", default_value_t = 0.02)]
        min_effect: f64,
    },
}

/// Runs `simulator trace …`.
///
/// # Errors
/// One-line errors naming the file at fault.
pub fn run(args: &TraceArgs) -> anyhow::Result<()> {
    let dir = match &args.command {
        TraceCommand::Regions { trace, .. }
        | TraceCommand::Io { trace, .. }
        | TraceCommand::ExportTi { trace, .. }
        | TraceCommand::Timeline { trace, .. }
        | TraceCommand::Dump { trace } => trace,
        // Reads cut files too, which open_dir refuses.
        TraceCommand::Check { trace, json } => return check(trace, *json),
        TraceCommand::Perturbation { runs, json, ratios_out, compute_time, min_runs, min_effect } => {
            let rule = crate::perturbation::Rule { min_runs: *min_runs, min_effect: *min_effect };
            return perturbation(runs, *json, ratios_out.as_deref(), (*compute_time).into(), &rule);
        }
        TraceCommand::ExportOtf2 { trace, out } => {
            let e = crate::otf2_export::export(trace, out)?;
            let anchor = out.join("traces.otf2");
            println!("wrote {} ({} ranks, {} MPI calls, {} compute blocks)", anchor.display(), e.ranks, e.calls, e.blocks);
            return Ok(());
        }
    };
    let (_, ranks) = open_dir(dir).context("cannot open trace")?;
    let mut out = std::io::stdout().lock();
    match &args.command {
        TraceCommand::Regions { json, .. } => {
            let stats = regions_report(&ranks)?;
            if *json {
                serde_json::to_writer(&mut out, &stats)?;
                writeln!(out)?;
            } else {
                write!(out, "{}", simulator::regions::format_table(&stats))?;
            }
        }
        TraceCommand::Io { json, .. } => {
            let summary = simulator::io::io_summary(&ranks)?;
            if *json {
                serde_json::to_writer(&mut out, &summary)?;
                writeln!(out)?;
            } else if summary.total == simulator::io::summary::IoCounters::default() {
                writeln!(out, "{}: no MPI-IO calls", dir.display())?;
            } else {
                write!(out, "{}", simulator::io::summary::format_summary(&summary))?;
            }
        }
        TraceCommand::ExportTi { out: dir, host_speed, .. } => {
            let e = ti_export::export_ti(&ranks, dir, *host_speed)?;
            writeln!(out, "wrote {} ({} lines, {} records without a TI verb)", e.list.display(), e.lines, e.skipped)?;
            if let Some(w) = e.dropped_warning() {
                eprintln!("warning: {w}");
            }
        }
        TraceCommand::Timeline { out: file, .. } => {
            let n = timeline::write_chrome(&ranks, file)?;
            writeln!(out, "wrote {} ({n} events)", file.display())?;
        }
        TraceCommand::Check { .. } | TraceCommand::ExportOtf2 { .. } | TraceCommand::Perturbation { .. } => unreachable!("handled above"),
        TraceCommand::Dump { .. } => {
            let written = dump(&ranks, &mut out);
            // `simulator trace dump … | head` closes the pipe early: not an error.
            if let Err(e) = written {
                if !e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)) {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// `simulator trace perturbation`: each directory read as a trace
/// (`meta.json`) or a regions run (`rank-0.regions.json`).
fn perturbation(
    runs: &[PathBuf],
    json: bool,
    ratios_out: Option<&std::path::Path>,
    compute: simulator::action::ComputeTime,
    rule: &crate::perturbation::Rule,
) -> anyhow::Result<()> {
    use crate::perturbation::{compare, format_table, RunRegions};
    if rule.min_runs == 0 || rule.min_effect.is_nan() || rule.min_effect < 0.0 {
        anyhow::bail!("--min-runs must be >= 1 and --min-effect >= 0");
    }
    let (mut traced, mut untraced) = (Vec::new(), Vec::new());
    for dir in runs {
        if dir.join(simulator::trace::META_FILE).is_file() {
            traced.push(RunRegions::from_trace(dir)?);
        } else {
            untraced.push(RunRegions::from_regions(dir)?);
        }
    }
    if traced.is_empty() || untraced.is_empty() {
        anyhow::bail!(
            "need at least one trace directory and one INTERPOSER_MODE=regions directory ({} and {} given)",
            traced.len(),
            untraced.len()
        );
    }
    let p = compare(&traced, &untraced, compute, rule);
    if let Some(path) = ratios_out {
        p.corrections().save(path)?;
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &p)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", format_table(&p))?;
    }
    Ok(())
}

fn check(trace: &std::path::Path, json: bool) -> anyhow::Result<()> {
    let checks = simulator::trace::check::check_dir(trace).context("cannot check trace")?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &checks)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", simulator::trace::check::format(&checks))?;
    }
    let bad = checks.iter().filter(|c| c.incomplete.is_some() || c.error.is_some()).count();
    if bad > 0 {
        anyhow::bail!("{}: {bad} of {} rank files are incomplete or unreadable", trace.display(), checks.len());
    }
    Ok(())
}

fn dump(ranks: &[simulator::trace::RankTrace], out: &mut impl Write) -> anyhow::Result<()> {
    for t in ranks {
        for stream in t.streams() {
            for rec in t.records_of(stream)? {
                let r = rec?;
                writeln!(
                    out,
                    "rank {} stream {stream} {} {} start_ns={} dur_ns={} block_cpu_ns={} block_wall_ns={} {:?}",
                    t.header.rank,
                    r.op.mpi_name(),
                    t.call_site(r.caller),
                    r.t_start_ns,
                    r.t_end_ns - r.t_start_ns,
                    r.compute_cpu_ns,
                    r.compute_wall_ns,
                    r.params
                )?;
            }
        }
    }
    Ok(())
}

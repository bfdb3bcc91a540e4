//! `simulator validate --reference smpi`: SimGrid's SMPI, emulating each
//! case's real program at every rank count asked for, as the reference
//! of the prediction extrapolated from traces of a few small counts.
//!
//! Per case:
//!
//! 1. the case's source is built with `smpicc` (`smpicxx` for C++,
//!    `smpif90` for Fortran);
//! 2. the real program is traced under `mpirun` at each traced count
//!    (`--traced-ranks`, default 2, 4 and 8), `--traced-runs` times:
//!    the extrapolation takes each block at the median of its runs, which
//!    leaves out the machine's noise that hits one run and keeps the
//!    program's repeatable variability;
//! 3. **compute bias**: SMPI times a program's compute bursts its own
//!    way (Heinrich et al. 2017, §3), so SMPI runs at the largest traced
//!    count with SimGrid's time-independent tracing, and each rank's
//!    compute there (its `compute` flops over the host speed) is set
//!    against the same rank's compute in our prediction at that count
//!    (the traced blocks less the traced machine's detours); the median
//!    of the per-rank ratios, with their spread, multiplies every
//!    predicted compute block (one ratio, as §6.2 does per region);
//! 4. at each count N: SMPI's simulated time and per-rank compute, its
//!    point-to-point messages (from its time-independent trace), and the
//!    wall time of `smpirun`; ours: `replay --ranks N` of the traces on the
//!    same platform (the prediction and its band: other draws of the
//!    program's variability, and the compute laws at their intervals'
//!    edges), the same per-rank figures and the replays' own wall time.
//!
//! Each case is also drawn to `reference-<case>.svg` (prediction, band,
//! ideal scaling, SMPI's points).
//!
//! The table says the error, whether SMPI's time falls inside the band
//! (the coverage over all rows closes it), the per-rank decomposition
//! side by side (SMPI's communication and waiting together: its
//! simulated time less its compute), and whether the message counts are
//! equal. A case SMPI cannot build or run is refused with the compiler's
//! or the run's last line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::launch::{Launcher, Mode};
use super::suite::Case;
use crate::extrapolate_cmd::{self, Predicted, VariabilityArgs};
use simulator::action::Action;
use simulator::platform::Platform;
use simulator::replay::{self, ActionStream};

/// What `--reference smpi` needs besides the suite's cases.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The SimGrid platform XML both tools run on.
    pub platform: PathBuf,
    /// Rank counts to predict and emulate.
    pub ranks: Vec<u32>,
    /// Rank counts traced for the extrapolation (two or more).
    pub traced_ranks: Vec<u32>,
    /// Traced runs per count (one or more), merged block by block at
    /// their median.
    pub traced_runs: u32,
    /// SimGrid settings (`name:value`) for every `smpirun`.
    pub smpi_cfg: Vec<String>,
    /// Output directory (`reference.{md,json}`, per case its files).
    pub out: PathBuf,
    /// The interposer library for the traced runs.
    pub interposer: PathBuf,
    /// How the prediction treats the program's variability.
    pub variability: VariabilityArgs,
    /// A run still going after this long is killed.
    pub timeout: Duration,
}

/// One case at one rank count.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    /// The case's name.
    pub case: String,
    /// Ranks emulated and predicted.
    pub ranks: u32,
    /// SMPI's simulated time, seconds.
    pub smpi_s: f64,
    /// Our prediction, seconds.
    pub predicted_s: f64,
    /// The prediction's band, seconds.
    pub low_s: f64,
    /// The prediction's band, seconds.
    pub high_s: f64,
    /// `100 · (predicted − smpi) / smpi`.
    pub error_pct: f64,
    /// SMPI's time lies inside the band.
    pub in_band: bool,
    /// Mean per rank, seconds: SMPI's compute.
    pub smpi_compute_s: f64,
    /// Mean per rank, seconds: SMPI's simulated time less its compute.
    pub smpi_other_s: f64,
    /// Mean per rank, seconds: our compute, communication and waiting.
    pub compute_s: f64,
    /// See `compute_s`.
    pub comm_s: f64,
    /// See `compute_s`.
    pub wait_s: f64,
    /// Point-to-point messages over all ranks, SMPI's and ours.
    pub smpi_messages: u64,
    /// See `smpi_messages`.
    pub messages: u64,
    /// Our replay of SMPI's own time-independent trace at this count on
    /// the same platform, seconds: the network and collective models
    /// alone set against SMPI's, with SMPI's measured compute; `None`
    /// when it cannot be replayed (the error is in `smpi_ti_error`).
    pub smpi_ti_replay_s: Option<f64>,
    /// Why SMPI's trace could not be replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smpi_ti_error: Option<String>,
    /// Wall time of `smpirun`, seconds.
    pub smpi_wall_s: f64,
    /// Wall time of our replays (prediction and band), seconds.
    pub wall_s: f64,
}

/// The compute bias applied to one case: SMPI's compute ÷ our
/// prediction's, per rank at the largest traced count.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Bias {
    /// Rank count it was measured at.
    pub ranks: u32,
    /// Median of the per-rank ratios (applied).
    pub ratio: f64,
    /// Smallest and largest per-rank ratio.
    pub min: f64,
    /// See `min`.
    pub max: f64,
}

/// Runs every case against SMPI and writes `reference.md` and
/// `reference.json` in `r.out`; prints the table.
///
/// # Errors
/// A platform that is not a SimGrid XML or has no host speed, a case with
/// no source SMPI can build, a build, traced run or SMPI run that fails
/// (its last line), a replay that fails.
pub fn run(r: &Reference, cases: &[Case], launcher: &Launcher) -> anyhow::Result<()> {
    if r.platform.extension().is_none_or(|e| e != "xml") {
        bail!("--reference smpi: --platform {} must be a SimGrid platform XML (SMPI runs on it)", r.platform.display());
    }
    if r.ranks.is_empty() || r.ranks.contains(&0) {
        bail!("--reference smpi: --ranks needs rank counts >= 1 (e.g. --ranks 64,256,1024)");
    }
    let counts = |given: &[u32]| -> anyhow::Result<Vec<u32>> {
        let mut traced = given.to_vec();
        traced.sort_unstable();
        traced.dedup();
        if traced.len() < 2 || traced[0] == 0 {
            bail!("--traced-ranks: two or more rank counts >= 1 are needed to extrapolate (got {given:?})");
        }
        Ok(traced)
    };
    counts(&r.traced_ranks)?;
    let platform = Platform::load(&r.platform).with_context(|| format!("cannot load {}", r.platform.display()))?;
    let speed = platform.hosts.first().and_then(|h| h.running_speed_flops()).with_context(|| {
        format!("{}: its first host has no speed; SMPI's host speed (smpi/host-speed) is taken from it", r.platform.display())
    })?;
    let mut rows = Vec::new();
    let mut biases = Vec::new();
    for case in cases {
        let dir = r.out.join("reference").join(&case.name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
        let smpi_prog = build(case, &dir)?;
        let traced = counts(case.traced_ranks.as_deref().unwrap_or(&r.traced_ranks)).with_context(|| format!("case {}", case.name))?;
        let mut dirs = Vec::new();
        for &k in &traced {
            for run in 1..=r.traced_runs.max(1) {
                let out = dir.join(format!("trace-np{k}-run{run}"));
                let c = Case { ranks: k, ..case.clone() };
                let mode = Mode::Trace { lib: r.interposer.clone(), out: out.clone() };
                launcher.run(&c, &mode, &dir.join(format!("trace-np{k}-run{run}.log"))).map_err(anyhow::Error::msg)?;
                dirs.push(out);
            }
        }
        let cfg: Vec<String> = r.smpi_cfg.iter().chain(&case.smpi_cfg).cloned().collect();
        let smpi = Smpi { prog: &smpi_prog, args: &case.args, platform: &r.platform, speed, cfg: &cfg, timeout: r.timeout };
        let k = *traced.last().expect("two or more");
        let at_k = smpi.run(k, &dir)?;
        let model = extrapolate_cmd::model(&dirs)?;
        // The bias is set against the prediction at the traced count, so
        // that what the model leaves out of the traced blocks (detours of
        // the traced machine) is not counted as SMPI's.
        let own = extrapolate_cmd::replay(&model, &platform, k, r.variability.prediction())?;
        let bias = bias(k, &at_k.compute_s, &own.ranks.iter().map(|x| x.compute_s).collect::<Vec<_>>())
            .with_context(|| format!("case {}: no compute to set SMPI's against at {k} ranks", case.name))?;
        biases.push((case.name.clone(), bias));
        let mut biased = platform.clone();
        biased.hosts.iter_mut().for_each(|h| h.speed_ratio /= bias.ratio);
        for &n in &r.ranks {
            let emulated = if n == k { at_k.clone() } else { smpi.run(n, &dir)? };
            let Predicted { report: mid, low_s: lo, high_s: hi, wall_s } =
                extrapolate_cmd::predict(&model, &biased, n, &r.variability).with_context(|| format!("case {}", case.name))?;
            let messages = p2p_messages(extrapolate_cmd::streams(&model, n, r.variability.prediction()));
            let mean = |f: fn(&replay::RankReport) -> f64| mid.ranks.iter().map(f).sum::<f64>() / mid.ranks.len().max(1) as f64;
            let smpi_compute_s = emulated.compute_s.iter().sum::<f64>() / emulated.compute_s.len().max(1) as f64;
            let on_ti = replay::TraceInput::TiList(dir.join(format!("smpi-np{n}.ti")))
                .open(simulator::action::ComputeTime::Cpu)
                .and_then(|streams| replay::replay(&platform, streams))
                .map(|rep| rep.makespan_s)
                .map_err(|e| e.to_string());
            rows.push(Row {
                case: case.name.clone(),
                ranks: n,
                smpi_s: emulated.simulated_s,
                predicted_s: mid.makespan_s,
                low_s: lo,
                high_s: hi,
                error_pct: 100.0 * (mid.makespan_s - emulated.simulated_s) / emulated.simulated_s,
                in_band: (lo..=hi).contains(&emulated.simulated_s),
                smpi_compute_s,
                smpi_other_s: emulated.simulated_s - smpi_compute_s,
                compute_s: mean(|x| x.compute_s),
                comm_s: mean(|x| x.comm_s),
                wait_s: mean(|x| x.wait_s),
                smpi_messages: emulated.messages,
                messages,
                smpi_ti_replay_s: on_ti.as_ref().ok().copied(),
                smpi_ti_error: on_ti.err(),
                smpi_wall_s: emulated.wall_s,
                wall_s,
            });
        }
        plot_case(&rows, &case.name, &r.out)?;
    }
    let mut out = std::io::stdout().lock();
    let md_path = r.out.join("reference.md");
    let mut md = Vec::new();
    table(&rows, &biases, &mut md)?;
    out.write_all(&md)?;
    std::fs::write(&md_path, &md).with_context(|| md_path.display().to_string())?;
    let coverage = rows.iter().filter(|x| x.in_band).count() as f64 / rows.len().max(1) as f64;
    let json = serde_json::json!({
        "rows": rows,
        "bias": biases.iter().map(|(c, b)| serde_json::json!({ "case": c, "bias": b })).collect::<Vec<_>>(),
        "coverage": coverage,
    });
    let json_path = r.out.join("reference.json");
    std::fs::write(&json_path, serde_json::to_vec_pretty(&json)?).with_context(|| json_path.display().to_string())?;
    Ok(())
}

/// Draws `case`'s rows to `reference-<case>.svg` in `out`: our
/// prediction with its band, ideal scaling from the first count, and
/// SMPI's times as points.
fn plot_case(rows: &[Row], case: &str, out: &Path) -> anyhow::Result<()> {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.case == case).collect();
    let Some(first) = mine.first() else { return Ok(()) };
    let points: Vec<extrapolate_cmd::Point> = mine
        .iter()
        .map(|r| extrapolate_cmd::Point {
            ranks: r.ranks,
            makespan_s: r.predicted_s,
            low_s: r.low_s,
            high_s: r.high_s,
            compute_s: r.compute_s,
            comm_s: r.comm_s,
            wait_s: r.wait_s,
            efficiency: first.predicted_s * first.ranks as f64 / (r.predicted_s * r.ranks as f64),
        })
        .collect();
    let smpi: Vec<(u32, f64)> = mine.iter().map(|r| (r.ranks, r.smpi_s)).collect();
    let path = out.join(format!("reference-{case}.svg"));
    extrapolate_cmd::plot(&path, &points, &smpi, "SMPI").map_err(anyhow::Error::msg)
}

/// The bias at `ranks`: the median of SMPI's per-rank compute over the
/// prediction's (`ours`), ranks with compute in both; `None` when none has.
pub fn bias(ranks: u32, smpi: &[f64], ours: &[f64]) -> Option<Bias> {
    let mut ratios: Vec<f64> = smpi.iter().zip(ours).filter(|(s, t)| **s > 0.0 && **t > 0.0).map(|(s, t)| s / t).collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let ratio = if n % 2 == 1 { ratios[n / 2] } else { 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]) };
    Some(Bias { ranks, ratio, min: ratios[0], max: ratios[n - 1] })
}

/// Point-to-point sends of `streams` to a rank (not `MPI_PROC_NULL`):
/// `MPI_Send`, `MPI_Isend` and the send half of `MPI_Sendrecv`.
fn p2p_messages<E>(streams: Vec<ActionStream<'_, E>>) -> u64 {
    let null = simulator::trace::record::PROC_NULL as u32;
    let to_rank = |a: &Action| match a {
        Action::Send { dst, .. } | Action::Isend { dst, .. } | Action::Sendrecv { dst, .. } => *dst != null,
        _ => false,
    };
    streams.into_iter().map(|s| s.filter(|a| a.as_ref().is_ok_and(to_rank)).count() as u64).sum()
}

/// Builds `case`'s source files with SMPI's compiler wrapper into `dir`:
/// `smpif90` for `.f90`/`.f`, `smpicxx` for `.cc`/`.cpp`/`.cxx`/`.C`,
/// else `smpicc`, by the first file's extension.
fn build(case: &Case, dir: &Path) -> anyhow::Result<PathBuf> {
    let sources = if case.source.is_empty() {
        let stem = case.program.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let base = case.program.parent().and_then(Path::parent).unwrap_or(Path::new("."));
        vec![["c", "f90", "f"].iter().map(|e| base.join(format!("{stem}.{e}"))).find(|p| p.is_file()).with_context(|| {
            format!("case {}: no source for SMPI to build ({stem}.c or .f90 beside the suite); give `source = ...`", case.name)
        })?]
    } else {
        case.source.clone()
    };
    let ext = sources[0].extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
    let cc = match ext.as_str() {
        "f90" | "f" => "smpif90",
        "cc" | "cpp" | "cxx" | "C" => "smpicxx",
        _ => "smpicc",
    };
    let prog = dir.join(format!("{}-smpi", case.name));
    let include = sources[0].parent().unwrap_or(Path::new("."));
    let out = Command::new(cc)
        .args(["-O2", "-I"])
        .arg(include)
        .args(&case.smpi_cflags)
        .arg("-o")
        .arg(&prog)
        .args(&sources)
        .arg("-lm")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("case {}: cannot run {cc} (install libsimgrid-dev: bash .ci/setup)", case.name))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
        bail!("case {}: {cc} {} failed: {last}", case.name, sources[0].display());
    }
    Ok(prog)
}

/// How SMPI runs one case.
struct Smpi<'a> {
    prog: &'a Path,
    args: &'a [String],
    platform: &'a Path,
    /// The hosts' speed, flop/s: SMPI's `smpi/host-speed`, so that
    /// `smpi_execute` and measured bursts take their seconds.
    speed: f64,
    cfg: &'a [String],
    timeout: Duration,
}

/// What one SMPI run gave.
#[derive(Debug, Clone)]
struct Emulated {
    /// SimGrid's simulated time at the end, seconds.
    simulated_s: f64,
    /// Per rank: its `compute` flops over the host speed, seconds.
    compute_s: Vec<f64>,
    /// Point-to-point sends to a rank, over all ranks.
    messages: u64,
    /// `smpirun`'s wall time, seconds.
    wall_s: f64,
}

impl Smpi<'_> {
    /// Runs `n` ranks with time-independent tracing into `dir`.
    fn run(&self, n: u32, dir: &Path) -> anyhow::Result<Emulated> {
        let ti = dir.join(format!("smpi-np{n}.ti"));
        let log = dir.join(format!("smpi-np{n}.log"));
        let file = std::fs::File::create(&log).with_context(|| log.display().to_string())?;
        let mut cmd = Command::new("smpirun");
        cmd.arg("-np").arg(n.to_string()).arg("-platform").arg(self.platform);
        cmd.arg(format!("--cfg=smpi/host-speed:{}f", self.speed)).arg("--cfg=smpi/display-timing:yes");
        cmd.arg("-trace-ti").arg(format!("--cfg=tracing/filename:{}", ti.display()));
        cmd.args(self.cfg.iter().map(|c| format!("--cfg={c}")));
        cmd.arg(self.prog).args(self.args);
        cmd.stdin(Stdio::null()).stdout(file.try_clone()?).stderr(file);
        let started = Instant::now();
        let mut child = cmd.spawn().context("cannot run smpirun (install libsimgrid-dev: bash .ci/setup)")?;
        let status = mpi_launch::wait_bounded(&mut child, self.timeout)?;
        let wall_s = started.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let last = || text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output").to_string();
        match status {
            None => bail!("smpirun -np {n} {}: timed out after {:?}; log in {}", self.prog.display(), self.timeout, log.display()),
            Some(s) if !s.success() => bail!("smpirun -np {n} {}: {s}: {}; log in {}", self.prog.display(), last(), log.display()),
            _ => {}
        }
        let simulated_s = simulated_time(&text)
            .with_context(|| format!("smpirun -np {n}: no 'Simulated time' line (smpi/display-timing); log in {}", log.display()))?;
        let (compute_s, messages) = read_ti(&ti, n, self.speed)?;
        Ok(Emulated { simulated_s, compute_s, messages, wall_s })
    }
}

/// SimGrid's `Simulated time: <s> seconds.` line.
fn simulated_time(text: &str) -> Option<f64> {
    text.lines().rev().find_map(|l| l.split("Simulated time: ").nth(1)?.split_whitespace().next()?.parse().ok())
}

/// Per-rank compute seconds (flops over `speed`) and the sends to a rank
/// of a SimGrid time-independent trace list `list` of `n` ranks.
fn read_ti(list: &Path, n: u32, speed: f64) -> anyhow::Result<(Vec<f64>, u64)> {
    let text = std::fs::read_to_string(list).with_context(|| format!("{}: SMPI wrote no time-independent trace", list.display()))?;
    let mut compute = vec![0.0; n as usize];
    let mut messages = 0;
    for file in text.lines().filter(|l| !l.trim().is_empty()) {
        let body = std::fs::read_to_string(file.trim()).with_context(|| format!("{}: listed in {}", file.trim(), list.display()))?;
        for (i, line) in body.lines().enumerate() {
            let mut w = line.split_whitespace();
            let (Some(rank), Some(verb)) = (w.next(), w.next()) else { continue };
            let bad = || format!("{}:{}: malformed line {line:?}", file.trim(), i + 1);
            let rank: usize = rank.parse().with_context(bad)?;
            match verb {
                "compute" => {
                    let flops: f64 = w.next().and_then(|f| f.parse().ok()).with_context(bad)?;
                    *compute.get_mut(rank).with_context(bad)? += flops / speed;
                }
                // SMPI writes MPI_Sendrecv as `sendRecv`.
                v if ["send", "isend", "sendrecv"].iter().any(|k| v.eq_ignore_ascii_case(k)) => {
                    messages += u64::from(w.next() != Some("-333"))
                }
                _ => {}
            }
        }
    }
    Ok((compute, messages))
}

/// The table: one line per case and count, the biases, the coverage,
/// and why SMPI's own traces could not be replayed.
fn table(rows: &[Row], biases: &[(String, Bias)], out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "| case | ranks | smpi_s | predicted_s | band_s | error_% | in band | ours on SMPI's TI s | compute_s smpi / ours | other_s smpi / comm+wait ours | messages smpi / ours | wall_s smpi / ours |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---|---:|---|---:|---|---|---|---|")?;
    for r in rows {
        writeln!(
            out,
            "| {} | {} | {:.6} | {:.6} | {:.6}-{:.6} | {:+.2} | {} | {} | {:.6} / {:.6} | {:.6} / {:.6} + {:.6} | {} / {}{} | {:.2} / {:.2} |",
            r.case,
            r.ranks,
            r.smpi_s,
            r.predicted_s,
            r.low_s,
            r.high_s,
            r.error_pct,
            if r.in_band { "yes" } else { "no" },
            r.smpi_ti_replay_s.map_or("-".to_string(), |t| format!("{t:.6}")),
            r.smpi_compute_s,
            r.compute_s,
            r.smpi_other_s,
            r.comm_s,
            r.wait_s,
            r.smpi_messages,
            r.messages,
            if r.smpi_messages == r.messages { "" } else { " (differ)" },
            r.smpi_wall_s,
            r.wall_s
        )?;
    }
    for (case, b) in biases {
        writeln!(
            out,
            "\n{case}: SMPI's compute / our prediction's at {} ranks: {:.4} (ranks {:.4}-{:.4}), applied to every predicted block",
            b.ranks, b.ratio, b.min, b.max
        )?;
    }
    for r in rows.iter().filter(|r| r.smpi_ti_error.is_some()) {
        writeln!(out, "\n{} at {}: SMPI's trace not replayed: {}", r.case, r.ranks, r.smpi_ti_error.as_deref().unwrap_or_default())?;
    }
    let inside = rows.iter().filter(|r| r.in_band).count();
    writeln!(out, "\nSMPI inside the band: {inside} of {} ({:.0} %)", rows.len(), 100.0 * inside as f64 / rows.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bias_is_the_median_ratio_of_ranks_with_compute() {
        let b = bias(4, &[2.0, 3.0, 0.0, 4.0], &[1.0, 2.0, 1.0, 2.0]).unwrap();
        assert_eq!((b.ratio, b.min, b.max), (2.0, 1.5, 2.0));
        assert!(bias(2, &[0.0, 0.0], &[1.0, 1.0]).is_none());
    }

    #[test]
    fn smpi_output_and_ti_traces_are_read() {
        assert_eq!(simulated_time("x\n[0.1] [smpi_utils/INFO] Simulated time: 0.00551533 seconds. \nmore"), Some(0.00551533));
        assert_eq!(simulated_time("no such line"), None);
        let dir = tempfile::tempdir().unwrap();
        let r0 = dir.path().join("rank-0.txt");
        std::fs::write(&r0, "0 init\n0 compute 2e9\n0 isend -333 0 8 6\n0 isend 1 1 8 6\n0 compute 1e9\n").unwrap();
        let r1 = dir.path().join("rank-1.txt");
        std::fs::write(&r1, "1 irecv 0 1 8 6\n1 send 0 0 8 6\n").unwrap();
        let list = dir.path().join("list.ti");
        std::fs::write(&list, format!("{}\n{}\n", r0.display(), r1.display())).unwrap();
        assert_eq!(read_ti(&list, 2, 1e9).unwrap(), (vec![3.0, 0.0], 2));
        std::fs::write(&r1, "1 compute many\n").unwrap();
        let e = read_ti(&list, 2, 1e9).unwrap_err().to_string();
        assert!(e.contains("rank-1.txt:1") && e.contains("malformed"), "{e}");
    }
}

//! The calibrations of `validate`: `calibrate network` on a quiet
//! machine, and one per latency state the machine is found in before a
//! case (state.rs).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};
use indicatif::ProgressBar;

use super::timing::predicted_s;
use super::{beside_exe, Ctx, ValidateArgs};
use crate::validate::launch::Launcher;
use crate::validate::predict;
use crate::validate::quiet::Quiet;
use crate::validate::report::{self, Row};
use crate::validate::state::{self, State};
use crate::validate::suite::Case;
use simulator::platform::Platform;

/// Runs `calibrate network` into `out`; returns the platform path.
pub(super) fn calibrate(args: &ValidateArgs, launcher: &Launcher, out: &Path, bar: &ProgressBar) -> anyhow::Result<PathBuf> {
    let exe = args.calibrate.clone().or_else(|| beside_exe("calibrate")).context("cannot locate the calibrate binary; give --calibrate")?;
    let platform = out.join("platform.toml");
    let log = out.join("calibrate.log");
    bar.set_message("calibrate network");
    let file = std::fs::File::create(&log).with_context(|| format!("create {}", log.display()))?;
    let mut cmd = Command::new(&exe);
    cmd.args(["network", "--out"])
        .arg(&platform)
        .arg("--csv")
        .arg(out.join("network-samples.csv"))
        .arg("--plot")
        .arg(out.join("network-plots"));
    if let Some(h) = &args.hostfile {
        cmd.arg("--hostfile").arg(h);
    }
    for a in &launcher.extra_args {
        cmd.arg(format!("--mpirun-arg={a}"));
    }
    cmd.args(&args.calibrate_args).env("MPIRUN", &launcher.mpirun).stdin(Stdio::null()).stdout(file.try_clone()?).stderr(file);
    let status = cmd.status().with_context(|| format!("cannot run {}; give --calibrate", exe.display()))?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        bail!(
            "calibrate network failed ({status}): {}; log in {}",
            text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(""),
            log.display()
        );
    }
    bar.println(format!("calibrated the network: {} (log {})", platform.display(), log.display()));
    Ok(platform)
}

/// [`calibrate`] on a quiet machine: the calibration meets the same rule
/// as the runs, since a ping-pong that shared the cores with other work
/// fits that work (its rates come out low and its fit's error high). Returns the platform and a note on its contention
/// (`CPU stall ...`; empty when it was not measured).
pub(super) fn calibrate_quietly(
    args: &ValidateArgs,
    launcher: &Launcher,
    quiet: &Quiet,
    out: &Path,
    bar: &ProgressBar,
) -> (anyhow::Result<PathBuf>, String) {
    bar.set_message("calibrate network (on a quiet machine)");
    let log = out.join("calibrate.log");
    let (platform, c) = quiet.run(
        || calibrate(args, launcher, out, bar),
        |k, _, c| {
            bar.println(format!("calibrate network disturbed ({:.0} % CPU stall over {:.1} s), repeated", 100.0 * c.share(), c.elapsed_s));
            let _ = std::fs::rename(&log, log.with_extension(format!("disturbed-{k}.log")));
        },
    );
    let note = c.map_or_else(String::new, |c| {
        let kept = if quiet.disturbed(&c) { ", kept although disturbed (retries spent)" } else { "" };
        format!("CPU stall {:.1} % of {:.1} s{kept}", 100.0 * c.share(), c.elapsed_s)
    });
    (platform, note)
}

/// With `--calibrations K > 1`: K − 1 more calibrations after the first,
/// each on a quiet machine, into `<out>/calibration-<k>/`; returns their
/// platforms and their contention notes (`calibration-<k>: ...`, none for
/// a calibration that met no contention).
///
/// # Errors
/// A calibration's failure or a platform that does not load.
pub(super) fn more_calibrations(
    args: &ValidateArgs,
    launcher: &Launcher,
    quiet: &Quiet,
    out: &Path,
    bar: &ProgressBar,
) -> anyhow::Result<(Vec<Platform>, Vec<String>)> {
    let mut notes = Vec::new();
    let platforms = (1..args.calibrations)
        .map(|k| {
            let dir = out.join(format!("calibration-{k}"));
            std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
            let (path, note) = calibrate_quietly(args, launcher, quiet, &dir, bar);
            if !note.is_empty() {
                notes.push(format!("calibration-{k}: {note}"));
            }
            let path = path?;
            Platform::load(&path).with_context(|| format!("cannot load platform {}", path.display()))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok((platforms, notes))
}

/// With several calibrations (`--calibrations`): the offline prediction
/// `own` of the case on its platform, and that of the runs `replayed`
/// of `trace` on each of `ctx.more_platforms` (placed as the case's own),
/// go to `row.calibrated`, and the case is predicted on the calibration
/// whose prediction is their median (the lower middle one of an even
/// count): that platform, placed, and its prediction, when it is not the
/// case's own (`None` then, and without more calibrations, or when the
/// case is predicted on another latency state's calibration than theirs).
/// A replay that fails is noted and left out.
pub(super) fn median_calibration(
    case: &Case,
    ctx: &Ctx,
    row: &mut Row,
    (trace, replayed): (&Path, &[PathBuf]),
    own: Option<&predict::Predicted>,
) -> Option<(Platform, predict::Predicted)> {
    let own = own.filter(|_| !ctx.more_platforms.is_empty())?;
    if !ctx.first_state {
        row.note("the other calibrations are of another latency state of the machine: not used");
        return None;
    }
    row.calibrated = vec![predicted_s(case, own)];
    let mut others = Vec::new();
    for (k, p) in ctx.more_platforms.iter().enumerate() {
        let predicted = predict::placed(p, trace).and_then(|(placed, _)| {
            let pred = predict::replay_predicted_runs(&placed, replayed, ctx.compute)?;
            Ok((placed, pred))
        });
        match predicted {
            Ok((placed, pred)) => {
                row.calibrated.push(predicted_s(case, &pred));
                others.push((k + 1, placed, pred));
            }
            Err(e) => row.note(format!("calibration {}: {e}", k + 1)),
        }
    }
    let median = report::lower_median_index(&row.calibrated)?;
    if median == 0 {
        return None;
    }
    let (k, placed, pred) = others.swap_remove(median - 1);
    row.note(format!("predicted on calibration {k} (calibration-{k}/), the median of {} calibrations' predictions", row.calibrated.len()));
    Some((placed, pred))
}

/// A calibration of the machine in one latency state.
pub(super) struct Calibration {
    /// Its 8-byte intra-node transfer time, seconds ([`state::platform_latency_s`]).
    pub(super) latency_s: f64,
    pub(super) path: PathBuf,
    pub(super) platform: Platform,
}

/// Before a case: probes the machine's latency state (state.rs) and
/// predicts the case on the calibration of that state. It waits first
/// (up to the quiet wait) while the machine is slower than its fastest
/// calibration; then it takes the calibration within
/// [`state::STATE_RATIO`] of the probe, or, when `validate` calibrated
/// itself, calibrates the machine in its present state (at most
/// [`MAX_STATE_CALIBRATIONS`] in all, into `state-<k>/`). Returns the
/// notes for the row.
///
/// # Errors
/// The probe's failure, as one line.
pub(super) fn check_state(
    args: &ValidateArgs,
    ctx: &mut Ctx,
    exe: &Path,
    cals: &mut Vec<Calibration>,
    bar: &ProgressBar,
) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    let fastest_s = cals.iter().map(|c| c.latency_s).fold(f64::INFINITY, f64::min);
    let run_probe = || quiet_probe(ctx, exe, bar);
    let wait = ctx.quiet.max_wait.max(state::PROBE_PERIOD);
    let probed = state::await_fast(run_probe, fastest_s, wait, state::PROBE_PERIOD)?;
    let probe_s = probed.last_s();
    let us = |s: f64| format!("{:.3} us", s * 1e6);
    if probed.probes_s.len() > 1 {
        notes.push(format!(
            "waited {:.0} s for the machine to leave a slow state (8 B: {} at first, {} at last, fastest calibration {})",
            probed.waited.as_secs_f64(),
            us(probed.probes_s[0]),
            us(probe_s),
            us(fastest_s)
        ));
    }
    let matching = cals.iter().position(|c| state::classify(probe_s, c.latency_s) == State::Same);
    let k = match matching {
        Some(k) => k,
        None if args.platform.is_none() && cals.len() < MAX_STATE_CALIBRATIONS => {
            let sub = ctx.out.join(format!("state-{}", cals.len()));
            std::fs::create_dir_all(&sub).map_err(|e| format!("{}: {e}", sub.display()))?;
            bar.println(format!(
                "the machine is in another latency state (8 B: {} now; calibrated: {}): calibrating it in {}",
                us(probe_s),
                cals.iter().map(|c| us(c.latency_s)).collect::<Vec<_>>().join(", "),
                sub.display()
            ));
            let (platform, note) = calibrate_quietly(args, &ctx.launcher, &ctx.quiet, &sub, bar);
            let path = platform.map_err(|e| format!("calibrating the machine's present state: {e:#}"))?;
            let p = Platform::load(&path).map_err(|e| format!("calibrating the machine's present state: {e}"))?;
            notes.push(format!("the machine's latency state had no calibration yet: calibrated in {} ({note})", sub.display()));
            cals.push(Calibration { latency_s: state::platform_latency_s(&p), path, platform: p });
            cals.len() - 1
        }
        None => {
            notes.push(format!(
                "predicted on a platform of another latency state (8 B: {} now, platform {})",
                us(probe_s),
                us(state::platform_latency_s(&ctx.platform))
            ));
            return Ok(notes);
        }
    };
    let c = &cals[k];
    if k > 0 {
        notes.push(format!(
            "predicted on the calibration of the machine's present latency state, {} (8 B: {} there, {} now)",
            c.path.display(),
            us(c.latency_s),
            us(probe_s)
        ));
    }
    (ctx.platform, ctx.platform_path) = (c.platform.clone(), c.path.clone());
    ctx.first_state = k == 0;
    Ok(notes)
}

/// One latency-state probe ([`state::probe`]) into `<out>/state-probe/`,
/// on a quiet machine as the runs: a probe sharing the cores with other
/// work measures that work, not the machine's state. Returns the 8-byte
/// transfer time, seconds.
///
/// # Errors
/// The probe's failure, as one line.
pub(super) fn quiet_probe(ctx: &Ctx, exe: &Path, bar: &ProgressBar) -> Result<f64, String> {
    let dir = ctx.out.join("state-probe");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    bar.set_message("latency-state probe");
    ctx.quiet.run(|| state::probe(exe, &ctx.launcher.mpirun, &ctx.launcher.extra_args, &dir), |_, _, _| {}).0
}

/// Calibrations of distinct latency states `validate` makes at most
/// (state.rs), the first one included.
const MAX_STATE_CALIBRATIONS: usize = 3;

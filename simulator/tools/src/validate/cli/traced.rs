//! A case's traced runs and their offline replay: one or several runs
//! (`--traced-runs`), turned into one prediction as `--merge` says.

use std::path::{Path, PathBuf};

use indicatif::ProgressBar;

use super::calibration::median_calibration;
use super::online::online_case;
use super::timing::{own_line, predicted_s};
use super::{checked_run, perturb_runs, Ctx};
use crate::validate::launch::Mode;
use crate::validate::predict::{self, Predicted};
use crate::validate::report::{self, Row};
use crate::validate::suite::Case;
use simulator::platform::Platform;
use simulator::speed::SpeedRatios;

/// `--merge`: how several traced runs of a case make one offline prediction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Merge {
    /// Each run replayed alone; the prediction is the run whose replay is
    /// the median (the lower middle one of an even count). Each run keeps
    /// the noise the machine gave it, as each plain run does.
    Runs,
    /// One replay of all runs, each compute block at the median of its
    /// durations ([`simulator::replay::runs`]). Noise that delays one rank
    /// in one run and the other rank in another cancels out, so this
    /// predicts a quieter machine than the plain runs met.
    Blocks,
}

/// What one case's traced run gave: the trace and its placed platform.
pub(super) struct Traced {
    /// The traced runs the offline prediction replays (the median one, or
    /// several merged, or the first alone when their calls differ).
    pub(super) replayed: Vec<PathBuf>,
    pub(super) platform: Platform,
    /// With `--correct-perturbation`: the corrections it applies.
    pub(super) ratios: Option<SpeedRatios>,
}

/// The traced run, its replay, and the online run.
pub(super) fn trace_and_predict(case: &Case, ctx: &Ctx, dir: &Path, row: &mut Row, bar: &ProgressBar) -> Option<Traced> {
    let traced = trace_case(case, ctx, dir, row, bar);
    online_case(case, ctx, dir, row, bar, traced.as_ref());
    traced
}

/// `runs` (several traced runs of `case`) replayed alone on `platform`:
/// the run whose prediction is the median (the lower middle one of an
/// even count), and that prediction.
///
/// # Errors
/// The first run's replay error when no run replays.
fn median_run(case: &Case, platform: &Platform, runs: &[PathBuf], ctx: &Ctx) -> Result<(PathBuf, Predicted), String> {
    let mut alone = Vec::new();
    let mut first_err = None;
    for t in runs {
        match predict::replay_predicted(platform, t, ctx.compute) {
            Ok(p) => alone.push((predicted_s(case, &p), t, p)),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    alone.sort_by(|a, b| a.0.total_cmp(&b.0));
    match alone.get(alone.len().saturating_sub(1) / 2) {
        Some((_, t, p)) => Ok(((*t).clone(), *p)),
        None => Err(first_err.unwrap_or_else(|| "no traced run".into())),
    }
}

/// The offline prediction of `runs` (the case's traced runs, the first
/// `trace`) on `platform` as `ctx.merge` says, and the runs it replays.
fn predict_runs(
    case: &Case,
    ctx: &Ctx,
    row: &mut Row,
    platform: &Platform,
    trace: &Path,
    runs: &[PathBuf],
) -> (Result<Predicted, String>, Vec<PathBuf>) {
    if runs.len() < 2 {
        return (predict::replay_predicted(platform, trace, ctx.compute), vec![trace.to_path_buf()]);
    }
    match ctx.merge {
        Merge::Runs => match median_run(case, platform, runs, ctx) {
            Ok((t, p)) => {
                let name = t.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                row.note(format!("offline: traced run {name}/, the median of {} runs' replays", runs.len()));
                (Ok(p), vec![t])
            }
            Err(e) => (Err(e), vec![trace.to_path_buf()]),
        },
        Merge::Blocks => match predict::replay_predicted_runs(platform, runs, ctx.compute) {
            // Runs whose calls differ (timing-dependent tests, polling
            // loops) cannot be merged: the first alone.
            Err(e) => {
                row.note(format!("{e}: the first traced run is replayed alone"));
                (predict::replay_predicted(platform, trace, ctx.compute), vec![trace.to_path_buf()])
            }
            p => (p, runs.to_vec()),
        },
    }
}

/// The traced run and its replay (`row.traced_s`, `row.offline_s`).
pub(super) fn trace_case(case: &Case, ctx: &Ctx, dir: &Path, row: &mut Row, bar: &ProgressBar) -> Option<Traced> {
    let trace = dir.join("trace");
    bar.set_message(format!("{} traced", case.name));
    let mode = Mode::Trace { lib: ctx.interposer.clone(), out: trace.clone() };
    let result = checked_run(case, &mode, &dir.join("trace.log"), ctx, row);
    bar.inc(1);
    let w = match result {
        Ok(w) => w,
        Err(e) => {
            row.note(e);
            return None;
        }
    };
    let (mut walls, mut runs, mut regions) = (vec![w], vec![trace.clone()], Vec::new());
    // Traced and regions-mode runs alternate: both meet the machine
    // in the same states.
    for k in 1..=ctx.traced_runs.max(ctx.regions_runs) {
        if k <= ctx.regions_runs {
            perturb_runs::regions_run(case, ctx, dir, k, row, bar, &mut regions);
        }
        if k < 2 || k > ctx.traced_runs {
            continue;
        }
        let more = dir.join(format!("trace-{k}"));
        let mode = Mode::Trace { lib: ctx.interposer.clone(), out: more.clone() };
        bar.set_message(format!("{} traced {k}/{}", case.name, ctx.traced_runs));
        match checked_run(case, &mode, &dir.join(format!("trace-{k}.log")), ctx, row) {
            Ok(w) => (walls.push(w), runs.push(more)),
            Err(e) => (row.note(e), ()),
        };
    }
    row.traced_s = report::median(&walls);
    row.traced = walls;
    let (platform, how) = match predict::placed(&ctx.platform, &trace) {
        Ok(p) => p,
        Err(e) => {
            row.note(e);
            return None;
        }
    };
    bar.set_message(format!("{} replay", case.name));
    let (predicted, replayed) = predict_runs(case, ctx, row, &platform, &trace, &runs);
    let (platform, predicted) = match median_calibration(case, ctx, row, (&trace, &replayed), predicted.as_ref().ok()) {
        Some((p, pred)) => (p, Ok(pred)),
        None => (platform, predicted),
    };
    match predicted {
        Ok(p) => {
            if own_line(case) && p.region_s.is_none() {
                row.note("offline: fewer than two MPI_Barrier calls on rank 0, the makespan is the prediction");
            }
            row.offline_s = Some(predicted_s(case, &p));
        }
        Err(e) => row.note(e),
    }
    if runs.len() > 1 {
        let alone: Vec<f64> =
            runs.iter().filter_map(|t| predict::replay_predicted(&platform, t, ctx.compute).ok().map(|p| predicted_s(case, &p))).collect();
        let lo = alone.iter().copied().fold(f64::INFINITY, f64::min);
        row.offline_band = (!alone.is_empty()).then(|| (lo, alone.iter().copied().fold(0.0, f64::max)));
    }
    let ratios =
        if regions.is_empty() { None } else { perturb_runs::perturbation(case, ctx, dir, row, (&runs, &replayed, &regions), &platform) };
    let _ = std::fs::write(dir.join("placement.txt"), how + "\n");
    Some(Traced { replayed, platform, ratios })
}

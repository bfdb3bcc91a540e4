//! A case's traced runs and their offline replay: one or several runs
//! (`--traced-runs`), turned into one prediction as `--merge` says.

use std::path::{Path, PathBuf};

use indicatif::ProgressBar;

use super::calibration::median_calibration;
use super::timing::{own_line, predicted_s};
use super::{checked_run, perturb_runs, Ctx};
use crate::validate::launch::Mode;
use crate::validate::modes::{self, FastRuns};
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
    /// Each traced run replayed alone on `platform`, in run order (those
    /// that replay): the run and its prediction, seconds.
    pub(super) alone: Vec<(PathBuf, f64)>,
    pub(super) platform: Platform,
    /// With `--correct-perturbation`: the corrections it applies.
    pub(super) ratios: Option<SpeedRatios>,
}

impl Traced {
    /// The traced runs' own predictions, seconds ([`Traced::alone`]).
    pub(super) fn replays(&self) -> Vec<f64> {
        self.alone.iter().map(|a| a.1).collect()
    }
}

/// Each of `runs` (several traced runs of `case`) replayed alone on
/// `platform`, in run order: those that replay, with their predictions;
/// and the first error, if any run did not.
fn replay_alone(case: &Case, ctx: &Ctx, platform: &Platform, runs: &[PathBuf]) -> (Vec<(PathBuf, f64, Predicted)>, Option<String>) {
    let mut first_err = None;
    let alone = runs
        .iter()
        .filter_map(|t| match predict::replay_predicted(platform, t, ctx.compute) {
            Ok(p) => Some((t.clone(), predicted_s(case, &p), p)),
            Err(e) => {
                first_err.get_or_insert(e);
                None
            }
        })
        .collect();
    (alone, first_err)
}

/// How a note names the traced run the offline prediction replays.
const OFFLINE_RUN: &str = "offline: traced run";

/// The name of a traced run's directory (`trace`, `trace-2`, ...).
fn run_name(run: &Path) -> String {
    run.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The offline prediction of `runs` (the case's traced runs, the first
/// `trace`; `alone`, with its first error, what [`replay_alone`] gives of
/// them on `platform`) on `platform` as `ctx.merge` says, and the runs it
/// replays.
fn predict_runs(
    ctx: &Ctx,
    row: &mut Row,
    platform: &Platform,
    (trace, runs): (&Path, &[PathBuf]),
    (alone, err): (&[(PathBuf, f64, Predicted)], Option<String>),
) -> (Result<Predicted, String>, Vec<PathBuf>) {
    if runs.len() < 2 {
        return (predict::replay_predicted(platform, trace, ctx.compute), vec![trace.to_path_buf()]);
    }
    match ctx.merge {
        Merge::Runs => {
            let seconds: Vec<f64> = alone.iter().map(|a| a.1).collect();
            match report::lower_median_index(&seconds).map(|k| &alone[k]) {
                Some((t, _, p)) => {
                    row.note(format!("{OFFLINE_RUN} {}/, the median of {} runs' replays", run_name(t), runs.len()));
                    (Ok(*p), vec![t.clone()])
                }
                None => (Err(err.unwrap_or_else(|| "no traced run".into())), vec![trace.to_path_buf()]),
            }
        }
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

/// A case's traced (and regions-mode) runs so far, in run order.
#[derive(Default)]
pub(super) struct TracedRuns {
    /// `wall_s` of each traced run that succeeded.
    walls: Vec<f64>,
    /// Its trace directory (`trace`, `trace-2`, ...).
    runs: Vec<PathBuf>,
    /// Each regions-mode run's directory and `wall_s`.
    regions: Vec<(PathBuf, f64)>,
}

/// Slots of traced runs a case makes: slot k makes traced run k (up to
/// `--traced-runs`) and regions-mode run k (up to `--regions-runs`), so
/// that both meet the machine in the same states.
pub(super) fn traced_slots(ctx: &Ctx) -> u32 {
    ctx.traced_runs.max(ctx.regions_runs)
}

/// Slot `k` of the traced runs (from 1; [`traced_slots`]): traced run k
/// (`trace/`, then `trace-<k>/`) and regions-mode run k, each when due.
pub(super) fn traced_run(case: &Case, ctx: &Ctx, dir: &Path, k: u32, row: &mut Row, bar: &ProgressBar, acc: &mut TracedRuns) {
    if k <= ctx.traced_runs {
        let name = if k == 1 { "trace".to_string() } else { format!("trace-{k}") };
        let out = dir.join(&name);
        bar.set_message(format!("{} traced {k}/{}", case.name, ctx.traced_runs));
        let mode = Mode::Trace { lib: ctx.interposer.clone(), out: out.clone() };
        match checked_run(case, &mode, &dir.join(format!("{name}.log")), ctx, row) {
            Ok(w) => (acc.walls.push(w), acc.runs.push(out)),
            Err(e) => (row.note(e), ()),
        };
        bar.inc(1);
    }
    if k <= ctx.regions_runs {
        perturb_runs::regions_run(case, ctx, dir, k, row, bar, &mut acc.regions);
    }
}

/// Every traced run of the case, one after another, and their replay.
pub(super) fn trace_case(case: &Case, ctx: &Ctx, dir: &Path, row: &mut Row, bar: &ProgressBar) -> Option<Traced> {
    let mut acc = TracedRuns::default();
    for k in 1..=traced_slots(ctx) {
        traced_run(case, ctx, dir, k, row, bar, &mut acc);
    }
    finish_traced(case, ctx, dir, row, bar, acc)
}

/// The replay of the traced runs `acc` (`row.traced_s`, `row.offline_s`,
/// the band); `None` when no traced run succeeded or none replays.
pub(super) fn finish_traced(case: &Case, ctx: &Ctx, dir: &Path, row: &mut Row, bar: &ProgressBar, acc: TracedRuns) -> Option<Traced> {
    let TracedRuns { walls, runs, regions } = acc;
    let trace = runs.first()?.clone();
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
    // Each run alone, once per platform it is predicted on.
    let (mut alone, err) = if runs.len() > 1 { replay_alone(case, ctx, &platform, &runs) } else { (Vec::new(), None) };
    let (predicted, replayed) = predict_runs(ctx, row, &platform, (&trace, &runs), (&alone, err));
    let (platform, predicted) = match median_calibration(case, ctx, row, (&trace, &replayed), predicted.as_ref().ok()) {
        Some((p, pred)) => {
            if runs.len() > 1 {
                alone = replay_alone(case, ctx, &p, &runs).0;
            }
            (p, Ok(pred))
        }
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
    let alone: Vec<(PathBuf, f64)> = if runs.len() > 1 {
        let lo = alone.iter().map(|a| a.1).fold(f64::INFINITY, f64::min);
        row.offline_band = (!alone.is_empty()).then(|| (lo, alone.iter().map(|a| a.1).fold(0.0, f64::max)));
        alone.into_iter().map(|(t, s, _)| (t, s)).collect()
    } else {
        row.offline_s.map(|p| vec![(trace.clone(), p)]).unwrap_or_default()
    };
    let ratios =
        if regions.is_empty() { None } else { perturb_runs::perturbation(case, ctx, dir, row, (&runs, &replayed, &regions), &platform) };
    let _ = std::fs::write(dir.join("placement.txt"), how + "\n");
    Some(Traced { replayed, alone, platform, ratios })
}

/// Once the plain runs are split by the machine's state (`runs`, the
/// measurement being the fast ones): the prediction of the same state.
/// With `--merge runs`, the case is predicted on the median of the traced
/// runs whose own replay is in the fast state ([`FastRuns::fast_replays`]),
/// when some are not (not with `--correct-perturbation`, whose
/// correction was made for the run chosen first). When no traced run
/// is, and most plain runs were slow too, the machine was in its slow
/// state for the case: the slow plain runs become the measurement (a
/// model that over-predicts every run is not hidden this way while most
/// plain runs are fast).
pub(super) fn match_states(ctx: &Ctx, row: &mut Row, t: &mut Traced, runs: &FastRuns) {
    let Some(fast) = runs.fast_replays(&t.replays()).filter(|f| !f.is_empty()) else { return };
    let kept: Vec<&(PathBuf, f64)> = t.alone.iter().zip(&fast).filter(|(_, f)| **f).map(|(a, _)| a).collect();
    if kept.is_empty() {
        if runs.slow.len() > runs.fast.len() {
            row.note(format!(
                "every traced run replays in the slow state (>= {}x the fastest plain run): measured against the {} slow plain runs, not the {} fast ones",
                modes::SLOW_RATIO,
                runs.slow.len(),
                runs.fast.len()
            ));
            row.measured = runs.slow.clone();
        }
        return;
    }
    if ctx.merge != Merge::Runs || kept.len() == t.alone.len() || t.ratios.is_some() {
        return;
    }
    let seconds: Vec<f64> = kept.iter().map(|a| a.1).collect();
    let Some((run, p)) = report::lower_median_index(&seconds).map(|k| kept[k].clone()) else { return };
    let note = format!(
        "{OFFLINE_RUN} {}/, the median of the {} whose replays are in the fast state (the other {} replay >= {}x the fastest plain run)",
        run_name(&run),
        kept.len(),
        t.alone.len() - kept.len(),
        modes::SLOW_RATIO
    );
    row.renote(OFFLINE_RUN, note);
    row.offline_s = Some(p);
    t.replayed = vec![run];
}

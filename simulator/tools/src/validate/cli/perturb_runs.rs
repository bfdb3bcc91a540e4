//! `validate`'s regions-mode runs and its perturbation-corrected
//! prediction (see [`crate::validate::perturb`]).

use std::path::{Path, PathBuf};

use indicatif::ProgressBar;

use simulator::platform::Platform;
use simulator::speed::SpeedRatios;

use super::timing::predicted_s;
use super::{checked_run, Ctx};
use crate::validate::launch::Mode;
use crate::validate::perturb;
use crate::validate::predict;
use crate::validate::report::PerturbSummary;
use crate::validate::report::Row;
use crate::validate::suite::Case;

/// The `k`-th regions-mode run of `case` (directory `regions-<k>`, log
/// `regions-<k>.log`); its directory and `wall_s` go to `regions` when it
/// succeeds, else its error to the row's note.
pub(super) fn regions_run(case: &Case, ctx: &Ctx, dir: &Path, k: u32, row: &mut Row, bar: &ProgressBar, regions: &mut Vec<(PathBuf, f64)>) {
    let out = dir.join(format!("regions-{k}"));
    bar.set_message(format!("{} regions {k}/{}", case.name, ctx.regions_runs));
    let mode = Mode::Regions { lib: ctx.interposer.clone(), out: out.clone() };
    match checked_run(case, &mode, &dir.join(format!("regions-{k}.log")), ctx, row) {
        Ok(w) => regions.push((out, w)),
        Err(e) => row.note(e),
    }
    bar.inc(1);
}

/// The case's perturbation (`row.perturbation`) from its traced runs
/// `traces` and regions-mode runs `regions`, and with
/// `--correct-perturbation` the offline prediction of the runs `replayed`
/// (what the uncorrected one replays) with its systematic regions
/// corrected (`row.corrected_s`: the uncorrected prediction when no
/// region is systematic). Returns the corrections applied.
pub(super) fn perturbation(
    case: &Case,
    ctx: &Ctx,
    dir: &Path,
    row: &mut Row,
    (traces, replayed, regions): (&[PathBuf], &[PathBuf], &[(PathBuf, f64)]),
    platform: &Platform,
) -> Option<SpeedRatios> {
    let dirs: Vec<PathBuf> = regions.iter().map(|r| r.0.clone()).collect();
    let p = match perturb::measure(traces, &dirs, ctx.compute, dir) {
        Ok(p) => p,
        Err(e) => {
            row.note(format!("perturbation n/a: {e}"));
            return None;
        }
    };
    row.perturbation = Some(PerturbSummary::of(&p, regions.iter().map(|r| r.1).collect()));
    if !ctx.correct_perturbation {
        return None;
    }
    let ratios = p.corrections();
    if ratios.is_empty() {
        row.corrected_s = row.offline_s;
        return Some(ratios);
    }
    let _ = ratios.save(&dir.join("perturbation-ratios.csv"));
    match predict::replay_scaled(platform, replayed, ctx.compute, ratios.clone()) {
        Ok(pred) => {
            row.corrected_s = Some(predicted_s(case, &pred));
            Some(ratios)
        }
        Err(e) => {
            row.note(format!("corrected replay: {e}"));
            None
        }
    }
}

//! `validate`'s online-mode runs of a case.

use std::path::{Path, PathBuf};

use indicatif::ProgressBar;

use super::timing::read_online;
use super::{checked_run, Ctx, Traced};
use crate::validate::launch::Mode;
use crate::validate::modes::{self, FastRuns};
use crate::validate::report::{self, Row};
use crate::validate::suite::Case;

/// The platform the online runs model: the traced run's placed platform
/// (of the median calibration), written beside the case's runs; ours
/// only: an XML platform goes as it is.
pub(super) fn online_platform(ctx: &Ctx, dir: &Path, traced: Option<&Traced>) -> PathBuf {
    match traced {
        Some(t) if !ctx.platform_is_xml => {
            let p = dir.join("platform.toml");
            t.platform.save(&p).map(|_| p).unwrap_or_else(|_| ctx.platform_path.clone())
        }
        _ => ctx.platform_path.clone(),
    }
}

/// Online run `k` of `case` (from 1: `online/`, then `online-<k>/`) on
/// `platform`: its prediction goes to `row.online`.
pub(super) fn online_run(case: &Case, ctx: &Ctx, dir: &Path, k: u32, row: &mut Row, bar: &ProgressBar, platform: &Path) {
    let name = if k == 1 { "online".to_string() } else { format!("online-{k}") };
    let online = dir.join(&name);
    bar.set_message(format!("{} {name}", case.name));
    let mode = Mode::Online { lib: ctx.interposer.clone(), out: online.clone(), platform: platform.to_path_buf() };
    // With INTERPOSER_VIRTUAL_WTIME=1 the program's wall_s is its own
    // timed region in virtual time: the online prediction of what it
    // measures.
    match checked_run(case, &mode, &dir.join(format!("{name}.log")), ctx, row) {
        Ok(virtual_wall_s) => match read_online(&online.join("online.json")) {
            Ok(_) => row.online.push(virtual_wall_s),
            Err(e) => row.note(format!("{name} n/a: {e}")),
        },
        Err(e) => row.note(e),
    }
    bar.inc(1);
}

/// Every online run of `case` (`--online-runs`), one after another, on
/// the traced run's placed platform ([`online_platform`]).
pub(super) fn online_case(case: &Case, ctx: &Ctx, dir: &Path, row: &mut Row, bar: &ProgressBar, traced: Option<&Traced>) {
    let platform = online_platform(ctx, dir, traced);
    for k in 1..=ctx.online_runs {
        online_run(case, ctx, dir, k, row, bar, &platform);
    }
}

/// The online prediction (`row.online_s`) of the online runs'
/// (`row.online`): their median (of the middle two for an even count:
/// unlike a traced run, no run is replayed again, so none has to be
/// chosen). When some met the machine's slow state (their predictions
/// at least [`modes::SLOW_RATIO`] times the fastest plain run,
/// [`FastRuns::fast_replays`]) and some did not, the median of the
/// others, said in the row's note.
pub(super) fn online_prediction(row: &mut Row, runs: &FastRuns) {
    let fast = runs.fast_replays(&row.online).unwrap_or_default();
    let kept: Vec<f64> = row.online.iter().zip(&fast).filter(|(_, f)| **f).map(|(o, _)| *o).collect();
    if kept.is_empty() || kept.len() == row.online.len() {
        row.online_s = report::median(&row.online);
        return;
    }
    row.online_s = report::median(&kept);
    row.note(format!(
        "online: the median of the {} runs whose predictions are in the fast state (the other {} predict >= {}x the fastest plain run)",
        kept.len(),
        row.online.len() - kept.len(),
        modes::SLOW_RATIO
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn online_runs_in_the_slow_state_leave_the_median() {
        let runs = FastRuns { fast: vec![0.10, 0.12], slow: vec![] };
        let mut row = Row { online: vec![0.16, 0.10, 0.11, 0.15], ..Row::default() };
        online_prediction(&mut row, &runs);
        assert!((row.online_s.unwrap() - 0.105).abs() < 1e-12, "{:?}", row.online_s);
        assert!(row.note.contains("the 2 runs") && row.note.contains("the other 2"), "{}", row.note);
        // All fast, all slow, or no plain run to judge by: the median of all.
        for (online, runs, median) in
            [(vec![0.10, 0.11], &runs, 0.105), (vec![0.14, 0.16], &runs, 0.15), (vec![0.2, 0.1, 0.4], &FastRuns::default(), 0.2)]
        {
            let mut row = Row { online, ..Row::default() };
            online_prediction(&mut row, runs);
            assert!((row.online_s.unwrap() - median).abs() < 1e-12 && row.note.is_empty(), "{:?} {}", row.online_s, row.note);
        }
    }
}

//! How a case is timed ([`Timing`]) and what the replay predicts of it.

use std::path::Path;

use super::super::launch::{Launcher, Mode};
use super::super::predict;
use super::super::suite::{Case, Timing};
use super::{ComputeArg, Ctx};
use simulator::action::ComputeTime;

/// True when `case` is timed by the program's `wall_s=` line, whose span
/// the replay's barrier-to-barrier region matches.
pub(super) fn own_line(case: &Case) -> bool {
    matches!(case.timing, Timing::Auto | Timing::WallLine)
}

/// What a replay predicts of `case`'s measured time: the barrier-to-barrier
/// region for a `wall_s=` line, else the makespan.
pub(super) fn predicted_s(case: &Case, p: &predict::Predicted) -> f64 {
    if own_line(case) {
        p.seconds()
    } else {
        p.makespan_s
    }
}

/// The mode of plain run `i` of `case`: without the interposer, or in its
/// timing-only mode when the interposer times the case.
pub(super) fn plain_mode(case: &Case, ctx: &Ctx, dir: &Path, i: usize) -> Mode {
    match case.timing {
        Timing::Span => Mode::Time { lib: ctx.interposer.clone(), out: dir.join(format!("timed-{i}")) },
        _ => Mode::Plain,
    }
}

/// Decides how `case` is timed when the suite leaves it to the program
/// (`Timing::Auto`): one uncounted plain run (`<out>/probe-<case>.log`)
/// tells whether it prints `wall_s=`; if not, the interposer times it.
pub(super) fn resolve_timing(case: &mut Case, launcher: &Launcher, out: &Path) -> Option<String> {
    if case.timing != Timing::Auto {
        return None;
    }
    let log = out.join(format!("probe-{}-np{}.log", case.name, case.ranks));
    match launcher.run(case, &Mode::Plain, &log) {
        Err(e) if e.contains(super::super::launch::NO_WALL_S) => {
            case.timing = Timing::Span;
            Some("timed by the interposer (INTERPOSER_MODE=time: MPI_Init to MPI_Finalize, after barriers); predicted: the makespan".into())
        }
        _ => {
            case.timing = Timing::WallLine;
            None
        }
    }
}

impl From<ComputeArg> for ComputeTime {
    fn from(c: ComputeArg) -> ComputeTime {
        match c {
            ComputeArg::Cpu => ComputeTime::Cpu,
            ComputeArg::Wall => ComputeTime::Wall,
        }
    }
}

/// `makespan_s` of an `online.json`.
pub(super) fn read_online(path: &Path) -> Result<f64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    v.get("makespan_s")
        .and_then(serde_json::Value::as_f64)
        .filter(|m| m.is_finite() && *m >= 0.0)
        .ok_or_else(|| format!("{}: no valid makespan_s", path.display()))
}

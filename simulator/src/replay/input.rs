//! What the replay reads: trace directories of the interposer and
//! SimGrid TI trace lists as action streams, and speed ratios applied to
//! their compute blocks.

use std::path::{Path, PathBuf};

use super::{runs, ActionStream, RatioStats, ReplayError, ReplayErrorKind};
use crate::action::{Action, ComputeTime, TraceActions};
use crate::ti::{self, TiError};
use crate::trace::{self, TraceError, TraceErrorKind};

/// What the `<trace>` argument of `simulator replay` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceInput {
    /// A trace directory written by the interposer (`meta.json` + `rank-<r>.trace`).
    InterposerDir(PathBuf),
    /// A SimGrid time-independent trace list: a file naming one action
    /// file per rank ([`crate::ti`]).
    TiList(PathBuf),
}

impl TraceInput {
    /// Classifies `path`: a directory is an interposer trace, a regular
    /// file a SimGrid TI trace list.
    ///
    /// # Errors
    /// [`TraceError`] naming `path` when it does not exist or cannot be read.
    pub fn detect(path: &Path) -> Result<TraceInput, TraceError> {
        let meta = std::fs::metadata(path).map_err(|e| TraceError { path: path.into(), kind: e.into() })?;
        Ok(if meta.is_dir() { TraceInput::InterposerDir(path.into()) } else { TraceInput::TiList(path.into()) })
    }

    /// Opens and validates every rank's trace, then returns their action
    /// streams in rank order. `compute` applies to interposer traces only.
    ///
    /// # Errors
    /// [`ReplayError`] naming the first missing, truncated or corrupt file
    /// ([`ReplayErrorKind::Trace`]), or a TI trace list that cannot be read
    /// or names a missing file ([`ReplayErrorKind::Ti`]).
    pub fn open(&self, compute: ComputeTime) -> Result<Vec<ActionStream<'static, InputError>>, ReplayError> {
        match self {
            TraceInput::InterposerDir(dir) => {
                let streams = open_trace_dir(dir, compute).map_err(|e| ReplayError { rank: None, kind: ReplayErrorKind::Trace(e) })?;
                Ok(streams
                    .into_iter()
                    .map(|s| Box::new(s.map(|a| a.map_err(InputError::Trace))) as ActionStream<'static, InputError>)
                    .collect())
            }
            TraceInput::TiList(path) => {
                let ranks = ti::open_list(path).map_err(|e| ReplayError { rank: None, kind: ReplayErrorKind::Ti(e) })?;
                Ok(ranks.into_iter().map(|s| Box::new(s.map(|a| a.map_err(InputError::Ti))) as ActionStream<'static, InputError>).collect())
            }
        }
    }
}

/// An error of a trace stream of either input kind; its message names the
/// file (and, for TI, the line).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// From an interposer trace.
    #[error("{0}")]
    Trace(TraceError),
    /// From a SimGrid TI trace.
    #[error("{0}")]
    Ti(TiError),
    /// From an extrapolated run ([`crate::extrapolate`]).
    #[error("{0}")]
    Extrapolate(crate::extrapolate::ExtrapolateError),
    /// From several traced runs replayed as one ([`runs`]).
    #[error("{0}")]
    Runs(Box<runs::RunsError<TraceError>>),
}

/// Opens an interposer trace directory: reads `meta.json`, checks every
/// rank file's whole structure and header before any replay starts, and
/// returns each rank's action stream.
///
/// # Errors
/// [`TraceError`] naming the first missing, truncated or corrupt file, or
/// a rank file whose header does not match its name and `meta.json`.
pub fn open_trace_dir(dir: &Path, compute: ComputeTime) -> Result<Vec<ActionStream<'static, TraceError>>, TraceError> {
    let (meta, ranks) = trace::open_dir(dir)?;
    streams_of(meta, ranks, compute)
}

/// Several opened traced runs of one program on the same ranks (each as
/// [`open_trace_dir`] gives it), replayed as one: each compute block at
/// the median of its durations ([`runs::median_of_runs`]), errors as
/// [`InputError::Runs`].
///
/// # Panics
/// As [`runs::median_of_runs`]: when `runs` is empty or their rank counts differ.
pub fn merged_runs(runs: Vec<Vec<ActionStream<'static, TraceError>>>) -> Vec<ActionStream<'static, InputError>> {
    runs::median_of_runs(runs)
        .into_iter()
        .map(|s| Box::new(s.map(|a| a.map_err(|e| InputError::Runs(Box::new(e))))) as ActionStream<'static, InputError>)
        .collect()
}

/// [`open_trace_dir`] that also takes incomplete rank files, each up to
/// its last whole chunk; returns one line per incomplete rank file saying
/// what was lost (for [`super::Replay::salvage`]).
///
/// # Errors
/// As [`open_trace_dir`], but for incomplete files.
pub fn open_trace_dir_salvage(
    dir: &Path,
    compute: ComputeTime,
) -> Result<(Vec<ActionStream<'static, TraceError>>, Vec<String>), TraceError> {
    let (meta, ranks, lost) = trace::open_dir_salvage(dir)?;
    let lines =
        lost.iter().map(|(r, s)| format!("rank {r}: {} ({} bytes kept, {} dropped)", s.reason, s.kept_bytes, s.dropped_bytes)).collect();
    Ok((streams_of(meta, ranks, compute)?, lines))
}

fn streams_of(
    meta: trace::TraceMeta,
    ranks: Vec<trace::RankTrace>,
    compute: ComputeTime,
) -> Result<Vec<ActionStream<'static, TraceError>>, TraceError> {
    let mut streams: Vec<ActionStream<'static, TraceError>> = Vec::with_capacity(ranks.len());
    for (r, t) in ranks.into_iter().enumerate() {
        if t.header.rank != r as u32 || t.header.ranks != meta.ranks {
            let what = format!("header says rank {} of {}, expected rank {r} of {} (meta.json)", t.header.rank, t.header.ranks, meta.ranks);
            return Err(TraceError { path: t.path.clone(), kind: TraceErrorKind::Corrupt { at: 8, what } });
        }
        streams.push(Box::new(TraceActions::new(t, compute)?));
    }
    Ok(streams)
}

/// Scales every `Compute { seconds, region }` of `streams` by the
/// region's ratio in `ratios` (1 when absent), as SimGrid's
/// `smpi/comp-adjustment-file` does. Returns the streams and a handle
/// whose [`RatioTally::stats`] counts blocks and misses once they ran.
pub fn apply_speed_ratios<'a, E: 'a>(
    streams: Vec<ActionStream<'a, E>>,
    ratios: crate::speed::SpeedRatios,
) -> (Vec<ActionStream<'a, E>>, RatioTally) {
    let tally = RatioTally(std::rc::Rc::new(std::cell::RefCell::new(Default::default())));
    let ratios = std::rc::Rc::new(ratios);
    let out = streams
        .into_iter()
        .map(|s| {
            let (t, r) = (tally.clone(), ratios.clone());
            Box::new(s.map(move |a| {
                a.map(|a| match a {
                    Action::Compute { seconds, region } => {
                        let mut t = t.0.borrow_mut();
                        t.0.blocks += 1;
                        let ratio = r.get(region).unwrap_or_else(|| {
                            t.0.missing_blocks += 1;
                            t.1.insert(region);
                            1.0
                        });
                        Action::Compute { seconds: seconds * ratio, region }
                    }
                    other => other,
                })
            })) as ActionStream<'a, E>
        })
        .collect();
    (out, tally)
}

/// Counts of [`apply_speed_ratios`], shared with its streams.
#[derive(Clone)]
pub struct RatioTally(std::rc::Rc<std::cell::RefCell<(RatioStats, std::collections::HashSet<u64>)>>);

impl RatioTally {
    /// Blocks seen so far, and misses.
    pub fn stats(&self) -> RatioStats {
        let t = self.0.borrow();
        RatioStats { missing_regions: t.1.len() as u64, ..t.0.clone() }
    }
}

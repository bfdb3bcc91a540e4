//! jitSim's trace-driven OS-jitter simulation (De & Mann, "jitSim: A
//! Simulator for Predicting Scalability of Parallel Applications in Presence
//! of OS Jitter", Euro-Par 2010, §§2.2, 3.3–3.6, 4), and a cursor that
//! injects the same jitter into replays.
//!
//! A bulk-synchronous application is modelled as `phases` compute phases of
//! `work` seconds each, separated by a collective. Every task reads a jitter
//! trace (one per CPU, given to tasks round-robin) from its own offset:
//! compute runs in the gaps between jitter events and every event it meets
//! is added to its time (work-conserving, §3.4). A phase ends when the last
//! task leaves the collective, whose sends and receives are themselves
//! stretched by jitter (§3.6).
//!
//! - [`track`]: a trace prepared for stretching; [`TraceCursor`] and
//!   [`rank_cursors`] inject the same jitter into replays (`stretch(start_cycle, work_cycles)`).
//! - [`engine`]: the BSP engine, parallel over tasks (rayon, with the `parallel` feature);
//!   a barrier over whole traces runs in fused subtree blocks (`fused`).
//! - [`collective`]: barrier, allreduce, bcast and gather over k-ary trees and
//!   recursive doubling, with calibrated latencies.
//! - [`report`]: slowdowns, Monte-Carlo bands and sweeps (the tools plot them).
//! - [`synth`]: seeded synthetic traces (Poisson detours, log-uniform lengths) for benchmarks.

use std::path::{Path, PathBuf};

use crate::jitter_trace::{trace_files_in_dir, JitterTrace, JitterTraceError};

pub mod collective;
pub mod engine;
mod fused;
mod par;
pub mod report;
pub mod synth;
mod tasks;
pub mod track;

pub use engine::{simulate, simulate_observed, start_offsets, Config, Mode, RunResult};
pub use track::{Quiet, TraceCursor, Track};

/// Error of the jitter simulation; one line naming the file or flag at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JitterError {
    /// A trace file could not be read or is malformed (names file and line).
    #[error(transparent)]
    Trace(#[from] JitterTraceError),
    /// A trace reads fine but cannot drive a simulation.
    #[error("{path}: {why}")]
    BadTrace {
        /// The trace file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// A parameter is out of range.
    #[error("{flag}: {why}")]
    BadParam {
        /// The flag or field, e.g. `--tasks`.
        flag: &'static str,
        /// What is wrong.
        why: String,
    },
}

/// Loads the jitter traces at `path`: one file, or every `*.jitter` file of a
/// `tracecollector` output directory (ordered by host, then CPU), as
/// [`Track`]s on the time base of the first trace's TSC frequency.
/// `cosched_window_cycles` overrides the traces' co-scheduler window marks.
///
/// Returns the tracks and the reference frequency, Hz.
///
/// # Errors
/// [`JitterError::Trace`] naming the file (and line) when a file is missing,
/// empty, truncated or malformed, or the directory holds no trace;
/// [`JitterError::BadTrace`] for a trace covering no time or no compute.
pub fn load_tracks(path: &Path, cosched_window_cycles: Option<u64>) -> Result<(Vec<Track>, f64), JitterError> {
    let files: Vec<PathBuf> = if path.is_dir() { trace_files_in_dir(path)? } else { vec![path.to_path_buf()] };
    let mut tracks = Vec::with_capacity(files.len());
    let mut ref_hz = 0.0;
    for f in &files {
        let trace = JitterTrace::read(f)?;
        if tracks.is_empty() {
            ref_hz = trace.header.tsc_hz;
        }
        tracks.push(Track::new(&f.display().to_string(), &trace, ref_hz, cosched_window_cycles)?);
    }
    Ok((tracks, ref_hz))
}

/// One [`TraceCursor`] per rank for jitter injection into replays and online
/// runs (DESIGN "Jitter" (b)): rank `r` reads track `r mod tracks.len()` from
/// the offset [`start_offsets`] gives it in `mode`, so a replay sees the same
/// jitter as task `r` of [`simulate`] with the same seed.
///
/// # Panics
/// If `tracks` is empty, or in cosched mode a track has no window starts.
pub fn rank_cursors(tracks: &[Track], mode: Mode, ranks: usize, seed: u64) -> Vec<TraceCursor<'_>> {
    start_offsets(tracks, mode, ranks, seed).into_iter().enumerate().map(|(r, o)| TraceCursor::new(&tracks[r % tracks.len()], o)).collect()
}

/// A compute-block stretcher for [`crate::replay::Replay::jitter`]: rank
/// `r` reads track `r mod tracks.len()` from its own offset ([`rank_cursors`]
/// in `mode`), and a block of `d` seconds starting at simulated time `t`
/// takes the cycles jitSim's work-conserving rule gives for `d × tsc_hz`
/// work cycles starting at cycle `t × tsc_hz`. Ranks beyond `ranks` are
/// not stretched.
///
/// # Panics
/// If `tracks` is empty, or in cosched mode a track has no window starts.
pub fn compute_stretch(tracks: &[Track], tsc_hz: f64, mode: Mode, ranks: usize, seed: u64) -> crate::replay::Stretch<'_> {
    let mut cursors = rank_cursors(tracks, mode, ranks, seed);
    Box::new(move |r, start_s, duration_s| match cursors.get_mut(r) {
        Some(c) => {
            let work = (duration_s * tsc_hz).round() as u64;
            if work == 0 {
                return duration_s;
            }
            c.stretch((start_s * tsc_hz).round() as u64, work) as f64 / tsc_hz
        }
        None => duration_s,
    })
}

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

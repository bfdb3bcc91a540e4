//! What the engine and the collectives share: the tasks' read-only view of
//! their traces ([`Env`]), their mutable state during a collective
//! ([`Tasks`]) and a phase's outcome ([`PhaseStat`]). Below both, so that
//! the engine, the collectives and the fused barrier import one way.

use super::track::{Quiet, Track};

/// One phase's outcome, cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PhaseStat {
    /// From the end of the previous phase (last task out of the collective) to the end of this one.
    pub consumed_cycles: u64,
    /// Longest compute part over tasks (work plus the jitter met), the "maximum completion time" of §3.4.
    pub compute_max_cycles: u64,
}

/// Read-only view shared by all tasks.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    tracks: &'a [Track],
    offsets: &'a [u64],
    segments: &'a [u64],
}

impl<'a> Env<'a> {
    /// Tasks reading `tracks` round-robin from `offsets`, over `segments` cycles of each track.
    pub(crate) fn new(tracks: &'a [Track], offsets: &'a [u64], segments: &'a [u64]) -> Self {
        Env { tracks, offsets, segments }
    }

    /// Task `i`, with cursor `q`, starts `work` cycles at its time `t`; returns its finish time.
    #[inline]
    pub(crate) fn stretch(&self, i: u64, q: &mut Quiet, t: u64, work: u64) -> u64 {
        if t >= q.from() && t <= q.until() && work <= q.until() - t {
            return t + work;
        }
        let nt = self.tracks.len() as u64;
        let k = if nt.is_power_of_two() { i & (nt - 1) } else { i % nt } as usize;
        self.tracks[k].stretch_quiet(q, self.offsets[i as usize], self.segments[k], t, work)
    }

    /// Number of tasks.
    pub(crate) fn tasks(&self) -> u64 {
        self.offsets.len() as u64
    }

    /// The traces, task `i` reading track `i mod tracks.len()`.
    pub(crate) fn tracks(&self) -> &'a [Track] {
        self.tracks
    }

    /// Index of task `i`'s track.
    #[inline]
    pub(crate) fn track_index(&self, i: u64) -> usize {
        let nt = self.tracks.len() as u64;
        (if nt.is_power_of_two() { i & (nt - 1) } else { i % nt }) as usize
    }

    /// Task `i`'s track and its position in it (cycles, < period) at its
    /// time `t`, for a task reading its whole trace: `rm[g]` is `at mod
    /// period` of track `g`, and `t ≥ at` (no division when `t − at` is
    /// under a period).
    #[inline]
    pub(crate) fn position(&self, i: u64, at: u64, rm: &[u64], t: u64) -> (&'a Track, u64) {
        let g = self.track_index(i);
        let track = &self.tracks[g];
        let p = track.period();
        let mut x = self.offsets[i as usize] + rm[g] + (t - at);
        if x >= p {
            x -= p;
            if x >= p {
                x %= p;
            }
        }
        (track, x)
    }
}

/// Mutable per-task state for the collectives.
pub(crate) struct Tasks<'a> {
    /// Task clocks, cycles.
    pub t: &'a mut [u64],
    /// Task cursors.
    pub cursors: &'a mut [Quiet],
    /// Message arrival times, cycles (scratch).
    pub arr: &'a mut [u64],
    /// Whether the tasks have sent the first messages of the coming allreduce.
    pub sent: bool,
    pub env: Env<'a>,
}

impl Tasks<'_> {
    pub(crate) fn n(&self) -> u64 {
        self.t.len() as u64
    }
}

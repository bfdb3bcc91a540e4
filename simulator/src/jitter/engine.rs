//! The BSP jitter engine (jitSim §§3.3–3.6): `phases` compute phases of
//! `work` cycles each, every task stretched by its own slice of a jitter
//! trace, each phase closed by a collective. Parallel over tasks (rayon);
//! the traces are shared read-only. A barrier or reduce-bcast over whole
//! traces runs in fused subtree blocks (`fused`), where a task's state
//! between phases is its offset alone; otherwise a task's state is an
//! offset, a [`Quiet`] cursor and a clock, and each collective goes level
//! by level over every task.

use std::time::Instant;

use super::par::*;

use super::collective::{self, Collective, Net};
use super::fused::Tree;
pub use super::tasks::PhaseStat;
use super::tasks::{Env, Tasks};
use super::track::{Cur, Quiet, Track};
use super::JitterError;

/// Where in the trace each task starts (jitSim §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Unsynchronized jitter: every task starts at its own random offset.
    Unsync,
    /// Synchronized jitter: all tasks start at one shared random offset.
    Sync,
    /// Co-scheduled jitter: every task starts at a random high-priority window start (§3.5).
    Cosched,
}

/// Parameters of one simulation.
#[derive(Debug, Clone)]
pub struct Config {
    /// Number of tasks (≥ 1).
    pub tasks: u64,
    /// Number of compute phases (≥ 1).
    pub phases: u32,
    /// Compute per phase, seconds (> 0); converted to cycles with the traces' TSC frequency.
    pub work_s: f64,
    /// Start offsets.
    pub mode: Mode,
    /// Share of its trace each task reads, percent in (0, 100] (jitSim §4.2):
    /// a task reads `[offset, offset + coverage × duration)` cyclically.
    pub coverage_pct: f64,
    /// Synchronization at the end of each phase.
    pub collective: Collective,
    /// Tree arity for barrier, bcast and gather (≥ 2).
    pub arity: u32,
    /// Payload of allreduce/bcast messages and per-member payload of gather, bytes.
    pub bytes: u64,
    /// Message costs.
    pub net: Net,
    /// RNG seed; the same inputs and seed give the same result on any thread count.
    pub seed: u64,
}

/// Result of [`simulate`].
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Compute per phase, cycles.
    pub work_cycles: u64,
    /// Frequency of the cycle counts, Hz.
    pub hz: f64,
    /// Per-phase outcome.
    pub phases: Vec<PhaseStat>,
    /// Wall-clock time of the simulation, seconds.
    pub elapsed_s: f64,
}

impl RunResult {
    /// Total slowdown, percent: (consumed − compute) ÷ compute over all phases.
    pub fn slowdown_pct(&self) -> f64 {
        let total: u64 = self.phases.iter().map(|p| p.consumed_cycles).sum();
        let compute = self.work_cycles as f64 * self.phases.len() as f64;
        100.0 * (total as f64 - compute) / compute
    }

    /// Compute-phase part of the slowdown, percent: (max compute part − work) ÷ work, averaged over phases.
    pub fn compute_slowdown_pct(&self) -> f64 {
        let s: u64 = self.phases.iter().map(|p| p.compute_max_cycles).sum();
        let compute = self.work_cycles as f64 * self.phases.len() as f64;
        100.0 * (s as f64 - compute) / compute
    }

    /// Communication part, percent: the rest of [`slowdown_pct`](Self::slowdown_pct).
    pub fn comm_slowdown_pct(&self) -> f64 {
        self.slowdown_pct() - self.compute_slowdown_pct()
    }
}

/// SplitMix64 (Steele et al., OOPSLA 2014): a counter-based generator, so
/// each task's draw depends only on (seed, task), not on thread scheduling.
pub fn splitmix(seed: u64, i: u64) -> u64 {
    let mut z = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x632B_E59B_D9B3_E22E);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const MIN_LEN: usize = 4096;
/// Tasks per chunk when every task is stretched.
const SWEEP_CHUNK: usize = 16 * 1024;

/// Latest finish time of the tasks with sorted `offsets` starting `work` at `now`.
fn sweep(track: &Track, segment: u64, offsets: &[u64], now: u64, work: u64) -> u64 {
    if segment == track.period() {
        return track.latest_finish(offsets, now, work);
    }
    let all = |chunk: &[u64]| {
        let mut c = Cur::default();
        chunk.iter().map(|&o| track.stretch_cur(&mut c, o, segment, now, work)).max().unwrap_or(now)
    };
    offsets.par_chunks(SWEEP_CHUNK).map(all).max().unwrap_or(now)
}

/// Checks `cfg` against `tracks`.
///
/// # Errors
/// [`JitterError::BadParam`] naming the flag.
pub fn validate(tracks: &[Track], hz: f64, cfg: &Config) -> Result<(), JitterError> {
    let bad = |flag, why: &str| Err(JitterError::BadParam { flag, why: why.into() });
    if tracks.is_empty() {
        return bad("--trace", "no traces");
    }
    if cfg.tasks == 0 {
        return bad("--tasks", "must be >= 1");
    }
    if cfg.tasks > u32::MAX as u64 {
        return bad("--tasks", "must be < 2^32");
    }
    if cfg.phases == 0 {
        return bad("--phases", "must be >= 1");
    }
    if !(cfg.work_s.is_finite() && cfg.work_s > 0.0) {
        return bad("--work", "must be a positive number of seconds");
    }
    if (cfg.work_s * hz).round() < 1.0 {
        return bad("--work", "is shorter than one TSC cycle");
    }
    if !(cfg.coverage_pct > 0.0 && cfg.coverage_pct <= 100.0) {
        return bad("--coverage", "must be in (0, 100] percent");
    }
    if cfg.arity < 2 {
        return bad("--arity", "must be >= 2");
    }
    if cfg.net.cores_per_node == 0 {
        return bad("--cores-per-node", "must be >= 1");
    }
    for t in tracks {
        if cfg.mode == Mode::Cosched && t.windows().is_empty() {
            let why = format!("{}: cosched mode needs window marks (tracecollector --cosched-window) or --cosched-window", t.name);
            return Err(JitterError::BadParam { flag: "--mode", why });
        }
        let seg = segment(t, cfg.coverage_pct);
        if seg <= t.longest_jitter_run() {
            let why = format!("{}: the covered segment is not longer than the longest jitter burst", t.name);
            return Err(JitterError::BadParam { flag: "--coverage", why });
        }
        // A phase longer than the trace a task reads would wrap it again
        // and again: the answer is then the trace's mean noise, at a cost
        // in proportion to the work.
        if cfg.work_s * hz > seg as f64 {
            let why = format!(
                "{} s per phase is longer than the {:.6} s of trace each task reads ({}, coverage {} %): record a longer trace or shorten the phases",
                cfg.work_s,
                seg as f64 / hz,
                t.name,
                cfg.coverage_pct
            );
            return Err(JitterError::BadParam { flag: "--work", why });
        }
    }
    Ok(())
}

pub(crate) fn segment(t: &Track, coverage_pct: f64) -> u64 {
    ((t.period() as f64 * coverage_pct / 100.0).round() as u64).clamp(1, t.period())
}

/// Runs the BSP simulation: every task does `cfg.work_s` of compute per
/// phase, stretched by its trace slice (jitSim §3.4), then `cfg.collective`.
/// All times are cycles at `hz` (the first trace's TSC frequency; see
/// [`load_tracks`](super::load_tracks)).
///
/// # Errors
/// [`JitterError::BadParam`] from [`validate`].
pub fn simulate(tracks: &[Track], hz: f64, cfg: &Config) -> Result<RunResult, JitterError> {
    simulate_observed(tracks, hz, cfg, &|_| {})
}

/// [`simulate`] calling `on_phase(p)` after each phase `p` (0-based), on
/// the calling thread: for a progress bar.
///
/// # Errors
/// As [`simulate`].
pub fn simulate_observed(tracks: &[Track], hz: f64, cfg: &Config, on_phase: &dyn Fn(u32)) -> Result<RunResult, JitterError> {
    validate(tracks, hz, cfg)?;
    let started = Instant::now();
    let n = cfg.tasks as usize;
    let offsets = start_offsets(tracks, cfg.mode, n, cfg.seed);
    Ok(run(tracks, hz, cfg, &offsets, started, on_phase))
}

/// Start offset in its trace of each of `n` tasks (task `i` reads track
/// `i mod tracks.len()`), cycles, for `mode` (jitSim §3.3): the same draw
/// for the same `seed` whatever the thread count. Replays and online runs
/// use it to place each rank's [`TraceCursor`](super::TraceCursor).
///
/// # Panics
/// If `tracks` is empty, or in cosched mode a track has no window starts.
pub fn start_offsets(tracks: &[Track], mode: Mode, n: usize, seed: u64) -> Vec<u64> {
    let shared = splitmix(seed, u64::MAX);
    (0..n)
        .into_par_iter()
        .with_min_len(MIN_LEN)
        .map(|i| {
            let i = i as u64;
            let t = &tracks[(i % tracks.len() as u64) as usize];
            match mode {
                Mode::Unsync => splitmix(seed, i) % t.period(),
                Mode::Sync => shared % t.period(),
                Mode::Cosched => t.windows()[(splitmix(seed, i) % t.windows().len() as u64) as usize],
            }
        })
        .collect()
}

/// The engine proper, with given start offsets (cycles, one per task).
pub(crate) fn run(tracks: &[Track], hz: f64, cfg: &Config, offsets: &[u64], started: Instant, on_phase: &dyn Fn(u32)) -> RunResult {
    let work = (cfg.work_s * hz).round() as u64;
    let segments: Vec<u64> = tracks.iter().map(|t| segment(t, cfg.coverage_pct)).collect();
    let env = Env::new(tracks, offsets, &segments);
    let mut phases = Vec::with_capacity(cfg.phases as usize);
    if cfg.collective == Collective::None {
        // All tasks start each phase together, when the slowest has finished
        // (jitSim Fig. 3). Task identity does not matter here, so each trace's
        // tasks are sorted by offset: their positions all move by the same
        // amount, so each phase is one ordered pass over each trace
        // ([`Track::latest_finish`]).
        let nt = tracks.len();
        let groups: Vec<Vec<u64>> = (0..nt)
            .map(|g| {
                let mut v: Vec<u64> = offsets.iter().skip(g).step_by(nt).copied().collect();
                v.par_sort_unstable();
                v
            })
            .collect();
        let mut now = 0u64;
        for p in 0..cfg.phases {
            let end = groups.iter().enumerate().map(|(g, offs)| sweep(&tracks[g], segments[g], offs, now, work)).max().unwrap_or(now);
            phases.push(PhaseStat { consumed_cycles: end - now, compute_max_cycles: end - now });
            now = end;
            on_phase(p);
        }
    } else {
        // A barrier or reduce-bcast over tasks that read whole traces runs in fused subtree blocks.
        let links = match cfg.collective {
            Collective::Barrier => Some(cfg.net.fixed(0)),
            Collective::ReduceBcast => Some(cfg.net.fixed(cfg.bytes)),
            _ => None,
        };
        let whole = tracks.iter().zip(&segments).all(|(t, &s)| s == t.period());
        match links.filter(|_| whole) {
            Some(l) => phases = Tree::new(env, l, cfg.arity as u64, work).run(cfg.phases, on_phase),
            None => run_in_levels(cfg, env, work, &mut phases, on_phase),
        }
    }
    RunResult { work_cycles: work, hz, phases, elapsed_s: started.elapsed().as_secs_f64() }
}

/// Phases ended by `cfg.collective` (not a barrier over whole traces), each
/// collective level by level over every task ([`collective::run`]); appends
/// each phase's outcome to `phases`.
fn run_in_levels(cfg: &Config, env: Env<'_>, work: u64, phases: &mut Vec<PhaseStat>, on_phase: &dyn Fn(u32)) {
    let n = cfg.tasks as usize;
    let mut cursors = vec![Quiet::default(); n];
    let mut t = vec![0u64; n];
    let mut arr = vec![0u64; n];
    let compute = |t: &mut [u64], cursors: &mut [Quiet]| {
        t.par_iter_mut()
            .zip(cursors.par_iter_mut())
            .enumerate()
            .with_min_len(MIN_LEN)
            .map(|(i, (t, h))| {
                let s = *t;
                *t = env.stretch(i as u64, h, s, work);
                *t - s
            })
            .max()
            .unwrap_or(0)
    };
    let mut last_end = 0u64;
    let mut sent = false;
    let mut compute_max = compute(&mut t, &mut cursors);
    for p in 0..cfg.phases {
        // The collective may start the next phase's compute of each task
        // as soon as that task leaves it.
        let next_work = (p + 1 < cfg.phases).then_some(work);
        let mut ts = Tasks { t: &mut t, cursors: &mut cursors, arr: &mut arr, sent, env };
        let exit = collective::run(cfg.collective, &mut ts, &cfg.net, cfg.arity as u64, cfg.bytes, next_work);
        sent = ts.sent;
        phases.push(PhaseStat { consumed_cycles: exit.end - last_end, compute_max_cycles: compute_max });
        last_end = exit.end;
        on_phase(p);
        compute_max = match exit.next_compute_max {
            Some(m) => m,
            None if next_work.is_some() => compute(&mut t, &mut cursors),
            None => 0,
        };
    }
}

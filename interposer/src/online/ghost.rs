//! Ghost ranks (`INTERPOSER_GHOST_RANKS=N`): the run's ranks are the
//! samples of an N-rank prediction, after HPX-5's sampled and ghost nodes
//! (Kulkarni et al., "A Fast and Accurate Hardware-Software Co-design
//! Simulator", §III): each ghost rank behaves as the sampled ranks of its
//! class, and its traffic goes through the platform's network model.
//!
//! The classes, the peers as functions of rank and N, and the scaling laws
//! of message sizes and compute blocks come from the extrapolation model
//! ([`simulator::extrapolate::Model`], after Wu & Mueller, ScalaExtrap,
//! PPoPP 2011), built from this run's trace together with the traces of
//! the same program at other rank counts (`INTERPOSER_GHOST_TRACES`): a
//! rank count alone does not tell `rank + 1` from `N − 1`. At
//! `MPI_Finalize`, once every rank's trace file is complete, rank 0
//! builds the model, replays the N ranks on the online platform (with
//! its band of draws and law intervals) and adds a `ghost` object to
//! `online.json`.
//! A failure is reported there and warned once; the application's run
//! is never affected.

use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;
use simulator::extrapolate::{band_of, band_variants, Model, Sample, Variant, DEFAULT_DRAWS};
use simulator::platform::Platform;

use crate::config::Config;
use crate::ffi::{guard, warn};

/// What rank 0 predicts at `MPI_Finalize`.
#[derive(Debug, Clone)]
struct Job {
    out: PathBuf,
    platform: PathBuf,
    ranks: u32,
    traces: Vec<PathBuf>,
}

static JOB: Mutex<Option<Job>> = Mutex::new(None);

/// The `ghost` object of `online.json`.
#[derive(Debug, Serialize)]
pub struct GhostReport {
    /// Rank count predicted (`INTERPOSER_GHOST_RANKS`).
    pub ranks: u32,
    /// Rank counts of the samples the model was built from (this run's
    /// and `INTERPOSER_GHOST_TRACES`'), increasing.
    pub sample_ranks: Vec<u32>,
    /// Predicted run time at `ranks` ranks, seconds; `None` on failure.
    pub makespan_s: Option<f64>,
    /// The extrapolation's band, seconds: other draws of the program's
    /// variability, and the compute laws at their intervals' edges
    /// ([`simulator::extrapolate::band_of`]).
    pub band_s: Option<(f64, f64)>,
    /// Mean per-rank compute, communication and waiting time, seconds.
    pub mean_compute_s: Option<f64>,
    /// See `mean_compute_s`.
    pub mean_comm_s: Option<f64>,
    /// See `mean_compute_s`.
    pub mean_wait_s: Option<f64>,
    /// Why there is no prediction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time rank 0 spent on the prediction inside `MPI_Finalize`, seconds.
    pub wall_s: f64,
}

/// Arms the prediction when `cfg` asks for ghost ranks (every rank, so
/// that all take part in the barrier before it); rank 0 warns when the
/// rank count is below the run's.
pub(super) fn arm(cfg: &Config, rank: u32, size: u32) {
    let (Some(ranks), Some(platform)) = (cfg.ghost_ranks, cfg.platform.clone()) else { return };
    if ranks < size {
        if rank == 0 {
            warn(None, &format!("INTERPOSER_GHOST_RANKS={ranks} is below the run's {size} ranks; no ghost ranks"));
        }
        return;
    }
    let job = Job { out: cfg.out.clone(), platform, ranks, traces: cfg.ghost_traces.clone() };
    if let Ok(mut slot) = JOB.lock() {
        *slot = Some(job);
    }
}

/// 1 when this process predicts ghost ranks at `MPI_Finalize`.
#[no_mangle]
pub extern "C" fn ipr_ghost_wanted() -> c_int {
    guard(0, || JOB.lock().map_or(0, |j| j.is_some() as c_int))
}

/// Rank 0, after every rank's trace is complete: predicts the ghost
/// ranks and adds the result to `online.json`.
#[no_mangle]
pub extern "C" fn ipr_ghost_predict() {
    guard((), || {
        let Some(job) = JOB.lock().ok().and_then(|mut j| j.take()) else { return };
        let report = predict(&job);
        match (&report.makespan_s, &report.error) {
            (Some(m), _) => eprintln!(
                "interposer: ghost-rank prediction at {} ranks (samples at {:?} ranks): makespan {m:.6} s",
                report.ranks, report.sample_ranks
            ),
            (None, Some(e)) => warn(None, &format!("INTERPOSER_GHOST_RANKS={}: {e}; no ghost-rank prediction", job.ranks)),
            (None, None) => {}
        }
        if let Err(e) = merge(&job.out.join("online.json"), &report) {
            warn(None, &e);
        }
    })
}

/// The prediction of `job` (errors in [`GhostReport::error`]).
fn predict(job: &Job) -> GhostReport {
    let started = Instant::now();
    let mut report = GhostReport {
        ranks: job.ranks,
        sample_ranks: Vec::new(),
        makespan_s: None,
        band_s: None,
        mean_compute_s: None,
        mean_comm_s: None,
        mean_wait_s: None,
        error: None,
        wall_s: 0.0,
    };
    if let Err(e) = run(job, &mut report) {
        report.error = Some(e);
    }
    report.wall_s = started.elapsed().as_secs_f64();
    report
}

fn run(job: &Job, report: &mut GhostReport) -> Result<(), String> {
    if job.traces.is_empty() {
        return Err("INTERPOSER_GHOST_TRACES is unset: the model needs traces of the program at another rank count".into());
    }
    let dirs = std::iter::once(&job.out).chain(&job.traces);
    let samples: Vec<Sample> = dirs.map(|d| Sample::open(d).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
    let model = Model::build(samples).map_err(|e| e.to_string())?;
    report.sample_ranks = model.sample_ranks.clone();
    let platform = Platform::load(&job.platform).map_err(|e| e.to_string())?;
    let order_free = model.order_free();
    let replay = |v: Variant| {
        simulator::replay::Replay::new(&platform)
            .order_free(order_free)
            .run(model.streams_as(job.ranks, v, |e| e))
            .map_err(|e| e.to_string())
    };
    let variants = band_variants(DEFAULT_DRAWS, false);
    let mid = replay(variants[0])?;
    let mut makespans = vec![mid.makespan_s];
    for &v in &variants[1..] {
        makespans.push(replay(v)?.makespan_s);
    }
    let k = mid.ranks.len().max(1) as f64;
    let mean = |f: fn(&simulator::replay::RankReport) -> f64| Some(mid.ranks.iter().map(f).sum::<f64>() / k);
    report.makespan_s = Some(mid.makespan_s);
    report.band_s = Some(band_of(&makespans));
    report.mean_compute_s = mean(|r| r.compute_s);
    report.mean_comm_s = mean(|r| r.comm_s);
    report.mean_wait_s = mean(|r| r.wait_s);
    Ok(())
}

/// Adds `report` as the `ghost` member of the JSON object in `path`
/// (creating the file when online mode wrote none).
fn merge(path: &Path, report: &GhostReport) -> Result<(), String> {
    let mut doc = match std::fs::read(path) {
        Ok(b) => serde_json::from_slice::<serde_json::Value>(&b).map_err(|e| format!("{}: {e}", path.display()))?,
        Err(_) => serde_json::Value::Object(Default::default()),
    };
    let obj = doc.as_object_mut().ok_or_else(|| format!("{}: not a JSON object", path.display()))?;
    obj.insert("ghost".into(), serde_json::to_value(report).map_err(|e| e.to_string())?);
    let text = serde_json::to_vec_pretty(&doc).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

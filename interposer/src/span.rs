//! The run's wall time from the end of `MPI_Init` to the start of
//! `MPI_Finalize`, as rank 0 sees it, written to `<INTERPOSER_OUT>/time.json`
//! in every mode: what `simulator validate` sets a prediction against for
//! a program that prints no time of its own. In `INTERPOSER_MODE=time`
//! nothing else is recorded and both ends follow a `PMPI_Barrier` on
//! `MPI_COMM_WORLD`, so the span covers every rank's work; in the other
//! modes no barrier is added and the span is rank 0's.

use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::config::{Config, Mode};
use crate::ffi::{guard, warn};

#[derive(Debug)]
struct Span {
    out: PathBuf,
    mode: Mode,
    started: Option<Instant>,
}

static SPAN: Mutex<Option<Span>> = Mutex::new(None);

/// `time.json`.
#[derive(Debug, Serialize)]
pub struct TimeReport {
    /// Seconds from the end of `MPI_Init` to the start of `MPI_Finalize`.
    pub wall_s: f64,
    /// `time` (after barriers), `trace`, `online` or `regions` (rank 0's own span).
    pub mode: &'static str,
}

/// Rank 0 of a run with `INTERPOSER_OUT` measures the span (called at
/// `MPI_Init`, before [`ipr_span_start`]).
pub fn arm(cfg: &Config, rank: u32) {
    if rank != 0 && cfg.mode != Mode::Time {
        return;
    }
    if let Ok(mut s) = SPAN.lock() {
        *s = Some(Span { out: cfg.out.clone(), mode: cfg.mode, started: None });
    }
}

/// 1 when both ends of the span follow a barrier (`INTERPOSER_MODE=time`).
#[no_mangle]
pub extern "C" fn ipr_span_barrier() -> c_int {
    guard(0, || SPAN.lock().map_or(0, |s| s.as_ref().is_some_and(|s| s.mode == Mode::Time) as c_int))
}

/// The application's work starts: the end of `MPI_Init`.
#[no_mangle]
pub extern "C" fn ipr_span_start() {
    guard((), || {
        if let Ok(Some(s)) = SPAN.lock().as_deref_mut().map(Option::as_mut) {
            s.started = Some(Instant::now());
        }
    })
}

/// The start of `MPI_Finalize`: rank 0 writes `time.json`.
#[no_mangle]
pub extern "C" fn ipr_span_end(rank: c_int) {
    guard((), || {
        let Some(span) = SPAN.lock().ok().and_then(|mut s| s.take()) else { return };
        let Some(started) = span.started else { return };
        if rank != 0 {
            return;
        }
        let mode = match span.mode {
            Mode::Time => "time",
            Mode::Trace => "trace",
            Mode::Online => "online",
            Mode::Regions => "regions",
        };
        let report = TimeReport { wall_s: started.elapsed().as_secs_f64(), mode };
        let path = span.out.join("time.json");
        let written = std::fs::create_dir_all(&span.out)
            .and_then(|_| serde_json::to_vec_pretty(&report).map_err(std::io::Error::other))
            .and_then(|j| std::fs::write(&path, j));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&path);
            warn(Some(0), &format!("cannot write {}: {e}", path.display()));
        }
    })
}

//! The interposer's start and end, and the one place that dispatches on
//! the mode (`INTERPOSER_MODE`): after `MPI_Init` it reads the
//! environment and starts what the mode runs (the [`recorder`], online
//! mode's clock ([`online`]) fed the recorder's compute blocks, the
//! time-to-solution [`span`]); before `MPI_Finalize` it completes them.

use std::sync::atomic::Ordering;

use crate::config::{self, Mode};
use crate::ffi::{warn, DISABLED, STATE, TRACING, UNINIT};
use crate::{online, recorder, span};

/// Called after a successful `PMPI_Init`: reads the environment and starts
/// the mode's parts, once per process. A bad environment or an unwritable
/// output directory disables the interposer with one warning (from rank 0,
/// as every rank sees the same environment).
pub fn init(rank: u32, size: u32, library: &str) {
    if STATE.compare_exchange(UNINIT, TRACING, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return;
    }
    let (cfg, warnings) = config::from_env(|k| std::env::var(k).ok());
    if rank == 0 {
        for w in &warnings {
            warn(None, w);
        }
    }
    let Some(cfg) = cfg else {
        STATE.store(DISABLED, Ordering::SeqCst);
        return;
    };
    let online = match cfg.mode {
        Mode::Online => online::prepare(&cfg, rank, size),
        Mode::Trace | Mode::Regions => None,
        Mode::Time => {
            STATE.store(DISABLED, Ordering::SeqCst);
            span::arm(&cfg, rank);
            return;
        }
    };
    let sink = online.is_some().then_some(online::charge as recorder::BlockSink);
    match recorder::start(&cfg, rank, size, library, sink) {
        Ok(()) => {
            span::arm(&cfg, rank);
            if let Some(online) = online {
                online::install(online);
            }
        }
        Err(e) => {
            STATE.store(DISABLED, Ordering::SeqCst);
            if rank == 0 {
                warn(None, &format!("{e}; recording disabled, the application runs unchanged"));
            }
        }
    }
}

/// Before `PMPI_Finalize`, with `MPI_Finalize` begun: completes the trace.
pub fn finalize() {
    recorder::finalize()
}

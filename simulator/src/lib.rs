//! The simulator library: trace formats, platform and network models, and
//! the replay engine that predicts an MPI application's run time on a
//! target platform.
//!
//! The other crates depend on it so that each format and model exists once:
//! the interposer writes [`trace`] files, `calibrate` writes [`platform`]
//! files, and [`replay`] consumes both.
#![deny(missing_docs)]

pub mod action;
pub mod collectives;
pub mod csv_text;
pub mod dvfs;
pub mod energy;
pub mod error;
pub mod extrapolate;
pub mod io;
pub mod jitter;
pub mod jitter_trace;
pub mod limits;
pub mod network;
pub mod online;
pub mod platform;
pub mod rank;
pub mod regions;
pub mod replay;
pub mod rng;
pub mod speed;
pub mod ti;
pub mod trace;

//! Calibration of the simulator's models on the machine at hand.
//!
//! - [`bench`](mod@bench): our point-to-point MPI benchmark and its samples;
//! - [`io`](mod@io): the MPI-IO benchmark and the file-system model fitted to it;
//! - [`blocks`]: dPerf's threshold-iteration rule per region;
//! - [`compress`]: traces compressed by that rule (averaged blocks, repeat markers);
//! - [`csv_fuzz`]: the CSV readers as fuzz targets;
//! - [`segmented`]: segmented linear regression with BIC model choice;
//! - [`loggp`]: LogGP parameters from parametrized round trips;
//! - [`modes`]: fast and slow modes of a noisy machine's timings;
//! - [`network`]: the intra-node network model, fitted from the benchmark;
//! - [`plot`]: SVG plots of samples and fitted segments;
//! - [`power`]: power model from wattmeter samples;
//! - [`simgrid`]: the same model as SMPI `smpi/*` properties;
//! - [`speed`]: per-region speed ratios from two traces.
#![deny(missing_docs)]

pub mod bench;
pub mod blocks;
pub mod compress;
pub mod csv_fuzz;
pub mod error;
pub mod io;
pub mod loggp;
pub mod modes;
pub mod network;
pub mod plot;
pub mod power;
pub mod segmented;
pub mod simgrid;
pub mod speed;

pub use error::{Error, ErrorKind};

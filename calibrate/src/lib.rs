//! Calibration of the simulator's models on the machine at hand.
//!
//! - [`bench`](mod@bench): our point-to-point MPI benchmark and its samples;
//! - [`segmented`]: segmented linear regression with BIC model choice;
//! - [`network`]: the intra-node network model, fitted from the benchmark.
#![deny(missing_docs)]

pub mod bench;
pub mod error;
pub mod network;
pub mod segmented;

pub use error::{Error, ErrorKind};

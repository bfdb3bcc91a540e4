//! The simulator's command line and everything above the core library:
//! the subcommands' argument parsing, `validate` (which launches
//! `mpirun`, `calibrate` and the interposer), plots and progress bars.
//! The formats, models and engines are in the `simulator` crate, which the
//! preloaded interposer links alone.
#![deny(missing_docs)]

pub mod compare;
pub mod energy_cmd;
pub mod extrapolate_cmd;
pub mod jitter_cli;
pub mod jitter_plot;
pub mod otf2_export;
pub mod otf2_import;
pub mod otf2_out;
pub mod otf2_sim;
pub mod perturbation;
pub mod platform_cli;
pub mod progress;
pub mod trace_cli;
pub mod validate;

//! `simulator validate`: measured against predicted, in one command.
//!
//! For every case of a suite ([`suite`]) it runs the program plainly under
//! `mpirun` R times (median `wall_s`), once under the interposer in trace
//! mode and once in online mode ([`launch`]), in between the plain runs so
//! that all modes meet the machine in the same state, each run on a quiet
//! machine (repeated when other work competed for the CPUs, [`quiet`];
//! runs in the machine's slow state are out of the median, [`modes`]; a
//! probe before each case checks the machine's latency state against the
//! platform's, [`state`]); then it replays the
//! trace on the platform ([`predict`]) and sets measured against predicted
//! ([`report`]): a table, Markdown, CSV and an SVG plot. With `--sweep`
//! it also re-predicts with the network scaled and, through a hook that
//! changes the real network, re-measures ([`sweep`]).
//!
//! The validation follows the seed papers' (SimGrid's within 2 % on NAS
//! EP/LU; jitSim Fig. 7): the same programs, measured on the machine and
//! predicted from a trace of one run on a platform calibrated there.

pub mod cli;
pub mod launch;
pub mod modes;
pub mod perturb;
pub mod predict;
pub mod quiet;
pub mod reference;
pub mod report;
pub mod state;
pub mod suite;
pub mod sweep;

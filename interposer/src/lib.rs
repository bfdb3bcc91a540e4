//! The interposer: a `cdylib` preloaded into MPI runs (`LD_PRELOAD`) that
//! intercepts MPI calls through the PMPI profiling interface and records,
//! per rank, each call's parameters and the compute block before it.
//!
//! One library serves Open MPI and MPICH: the C wrappers are built once
//! per ABI and the first MPI call picks the one of the MPI in the process
//! (`csrc/abi.c`; under any other MPI, one warning and every call passes
//! through). The Rust side sees only ABI-neutral values (`csrc/types.h`:
//! handles as 64-bit integers, ranks, bytes). x86_64 Linux.
//!
//! Environment (DESIGN.md, "Interfaces others rely on"):
//! - `INTERPOSER_OUT=<dir>`: trace directory, created if missing;
//! - `INTERPOSER_MODE=trace|online|time|regions|off` (default `trace`;
//!   `regions`: per-region block sums only, see [`config::Mode::Regions`]);
//! - `INTERPOSER_PLATFORM=<file>`: platform for online mode;
//! - `INTERPOSER_COUNTERS=auto|hw|sw|off`: block timing (see [`counters`]);
//! - online mode ([`online`]): `INTERPOSER_VIRTUAL_WTIME=1`, `INTERPOSER_JITTER=<trace>`,
//!   `INTERPOSER_SPEED_RATIOS=<csv>`, `INTERPOSER_DVFS=<policy>`,
//!   `INTERPOSER_ISOLATE=auto|1|0` (see [`isolate`]), `INTERPOSER_ONLINE_STALL_S=<s>`.
//!
//! An unset or bad value prints one warning and the application runs
//! unchanged. Output: `<dir>/meta.json` and `<dir>/rank-<r>.trace`, in the
//! format of [`simulator::trace`], and in online mode `<dir>/online.json`;
//! in regions mode only `<dir>/rank-<r>.regions.json`
//! ([`simulator::trace::region_times`]).
#![deny(missing_docs)]

pub mod alloc;
pub mod clock;
pub mod config;
pub mod counters;
pub mod ctypes;
pub mod fast;
pub mod ffi;
pub mod hooks;
pub mod isolate;
pub mod lifecycle;
pub mod modules;
pub mod online;
pub mod recorder;
pub mod signals;
pub mod span;
pub mod timing;

#[global_allocator]
static HEAP: alloc::SignalSafe = alloc::SignalSafe;

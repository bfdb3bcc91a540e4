//! tracecollector: per-CPU OS-jitter traces from a timestamp-counter loop,
//! the TraceCollector of jitSim §3.1, built to be run on real nodes.
//!
//! One sampling thread per selected CPU, pinned with `sched_setaffinity`,
//! reads the TSC in a tight loop ([`tsc`] says which read and why). It first
//! calibrates t_min, the loop's period between two successive reads
//! ([`tsc::t_min_from_hist`] explains why that is the trimmed mean rather
//! than the literal minimum), then records every delta above the threshold
//! as a jitter event into preallocated, `mlock`ed buffers ([`sampler`]). The
//! main thread is the writer: every 100 ms it drains full buffers into the
//! per-CPU trace files ([`simulator::jitter_trace`]), the optional netgauge
//! export and the bounded-memory statistics ([`summary`]), and redraws the
//! progress bar. At the end it writes the summary (text and JSON) and an SVG
//! histogram ([`plot`]). See [`collect::run`]. The TSC frequency is measured
//! against `CLOCK_MONOTONIC_RAW` and cross-checked with the kernel's value
//! ([`tsc::kernel_tsc_hz`]).
//!
//! # Threshold
//! The default threshold is 9 × t_min, netgauge's rule, so our traces and
//! netgauge's are comparable. With plain `rdtsc` on a 2.6 GHz TSC, t_min is
//! ~25 cycles and the threshold ~90 ns, far below the shortest OS activity
//! (an interrupt entry and exit, ~0.5–2 µs). On the 2-vCPU VM this was
//! written on it also flags 10–30 thousand events per second of 90–300 ns
//! whose source we did not pin down (likely the hypervisor or the sibling
//! vCPU); they are a few percent of the noise time but most of the lines of
//! a trace, about 10 MB per CPU per minute. `--threshold-ns 1000` keeps only
//! microsecond-scale noise, as FTQ-style studies do, with much smaller files.
//!
//! # What the tool adds itself
//! The writer wakes every 100 ms for a few tens of µs, and the progress bar
//! redraws at most twice a second. When every CPU is sampled these wake-ups
//! land on some sampled CPU and appear in its trace like any other daemon;
//! `--writer-cpu N` with `--cpus` excluding N keeps them out.
#![deny(missing_docs)]

pub mod collect;
pub mod cpus;
pub mod plot;
pub mod report;
pub mod sampler;
pub mod summary;
pub mod tsc;

#[cfg(target_arch = "x86_64")]
pub mod bare;

use std::path::PathBuf;

/// Error from the collector; its message is one line naming the input,
/// file or CPU at fault.
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct CollectError {
    /// What went wrong.
    pub kind: CollectErrorKind,
}

impl From<CollectErrorKind> for CollectError {
    fn from(kind: CollectErrorKind) -> Self {
        CollectError { kind }
    }
}

impl CollectError {
    /// Whether the user's input is at fault (the CLI exits with status 2).
    pub fn is_usage(&self) -> bool {
        use CollectErrorKind::*;
        matches!(
            self.kind,
            BadCpuList { .. }
                | CpuNotOnline { .. }
                | Pin { .. }
                | NoCpu
                | BadDuration(_)
                | BadThreshold(_)
                | OutDir { .. }
                | Unsupported(_)
        )
    }
}

/// What went wrong while collecting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CollectErrorKind {
    /// `--cpus` does not parse.
    #[error("bad --cpus `{list}`: {why}")]
    BadCpuList {
        /// The text given.
        list: String,
        /// Why it was rejected.
        why: String,
    },
    /// A requested CPU is not online.
    #[error("CPU {cpu} is not online (online CPUs: {online})")]
    CpuNotOnline {
        /// The CPU.
        cpu: u32,
        /// The online CPUs, cpulist syntax.
        online: String,
    },
    /// `sched_setaffinity` to a CPU failed (`EINVAL`: outside this process's cpuset).
    #[error("cannot pin to CPU {cpu}: {error}")]
    Pin {
        /// The CPU.
        cpu: u32,
        /// The OS error.
        error: std::io::Error,
    },
    /// No CPU is left to sample.
    #[error("no CPU to sample")]
    NoCpu,
    /// The duration is not a positive number of seconds.
    #[error("--duration must be a positive number of seconds, got {0}")]
    BadDuration(String),
    /// The threshold or window is not usable.
    #[error("{0}")]
    BadThreshold(String),
    /// The output directory cannot be created or written.
    #[error("cannot write to --out {}: {error}", path.display())]
    OutDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The requested read is not available on this CPU.
    #[error("{0}")]
    Unsupported(String),
    /// Writing an output file failed.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A sampling thread failed.
    #[error("sampler for CPU {cpu}: {what}")]
    Sampler {
        /// The CPU.
        cpu: u32,
        /// What happened.
        what: String,
    },
}

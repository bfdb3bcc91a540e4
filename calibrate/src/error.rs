//! The library's error type: a message plus a kind to match on.

use std::fmt;

/// What went wrong, to match on; the [`Error`] message says where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An option is out of range (sizes, reps, segments, …).
    InvalidArgument,
    /// The MPI C compiler wrapper (`$MPICC`, else `mpicc`) could not be started.
    CompilerMissing,
    /// The benchmark did not compile; the message quotes the compiler.
    CompileFailed,
    /// The MPI launcher (`$MPIRUN`, else `mpirun`) could not be started.
    LauncherMissing,
    /// The benchmark run failed or timed out; the message quotes its stderr.
    BenchFailed,
    /// A samples CSV is malformed; the message names the file and line.
    Csv,
    /// Too few or non-finite samples for a fit.
    Fit,
    /// Reading or writing a file failed; the message names the file.
    Io,
    /// An interposer trace cannot be read; the message names the file.
    Trace,
    /// Two inputs that must describe the same program or workload do not
    /// (different programs, rank counts, no common region).
    Mismatch,
}

/// An error of the calibrate library: a one-line message naming the file,
/// option or operation at fault, and its [`ErrorKind`].
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// A new error of `kind` with a one-line `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The I/O error `e` on `path`, as an [`ErrorKind::Io`] error.
    pub(crate) fn io(path: &std::path::Path, e: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, format!("{}: {e}", path.display()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

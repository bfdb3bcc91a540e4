//! The point-to-point benchmark: our C program `bench/netbench.c`,
//! compiled at run time with the MPI compiler wrapper and launched on 2
//! ranks; its raw samples and their CSV form.
//!
//! Measurement design after SMPI's calibration procedure (Heinrich et al.,
//! IEEE Cluster 2017, §6.3): message sizes drawn log-uniformly, every size
//! repeated, all measurements in a random order so that slow drifts of the
//! machine do not alias with size.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::{Error, ErrorKind};

/// Source of the benchmark, embedded in the binary.
pub const NETBENCH_C: &str = include_str!("../bench/netbench.c");

/// Header line of the samples CSV.
pub const CSV_HEADER: &str = "op,size_bytes,start_s,duration_s";

/// A measured operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Half a ping-pong round trip: one-way transfer with a waiting receiver.
    Pingpong,
    /// A blocking `MPI_Send` whose receive is already posted.
    Send,
    /// An `MPI_Recv` of a message sent ~30 µs earlier (already arrived if eager).
    Recv,
    /// A nonblocking `MPI_Isend` whose receive is already posted (the
    /// `MPI_Wait` is not timed).
    Isend,
    /// One `MPI_Wtime` call (size 0).
    Wtime,
    /// One `MPI_Iprobe` finding no message (size 0).
    Iprobe,
    /// Posting one 8-byte `MPI_Irecv` whose message has not come (size 0).
    Irecv,
    /// One `MPI_Wait` on a receive whose message has arrived (size 0).
    Wait,
    /// One one-sided call: half an empty passive-target epoch,
    /// `MPI_Win_lock` then `MPI_Win_unlock`, on an `MPI_Win_create`
    /// window (size 0).
    Rma,
    /// A passive-target epoch of `MPI_Win_lock`, one `MPI_Put` of the
    /// size and `MPI_Win_unlock`.
    RmaPut,
    /// The same with one `MPI_Get`.
    RmaGet,
    /// The same with one `MPI_Accumulate` (`MPI_SUM` on doubles; the size
    /// is their bytes).
    RmaAccumulate,
    /// One `MPI_Win_lock` (shared) timed alone, in passive-target epochs of
    /// an 8-byte `MPI_Put` that both ranks run at once on each other's
    /// window (size 0; the duration holds one `MPI_Wtime`).
    RmaLock,
    /// The `MPI_Win_unlock` of the same epochs, timed alone (size 0).
    RmaUnlock,
    /// One `MPI_Win_post` timed alone, in PSCW epochs that both ranks run
    /// at once, each with an 8-byte `MPI_Put` (size 0).
    RmaPost,
    /// The `MPI_Win_complete` of the same epochs, timed alone (size 0).
    RmaComplete,
    /// One `MPI_Win_create` of a 64-byte window (size 0).
    RmaCreate,
    /// One `MPI_Win_free` of that window (size 0).
    RmaFree,
    /// netgauge's PRTT(1, 0, s): one message and its reply (LogGP mode).
    Prtt1,
    /// PRTT(n, 0, s): n messages back to back, then one reply.
    PrttN,
    /// PRTT(n, d, s): n messages, `d` seconds of spinning after each but the
    /// last, then one reply.
    PrttD,
    /// The mean of a burst of back-to-back `MPI_Allreduce` of size / 8
    /// doubles (`MPI_SUM`, 2 ranks; allreduce mode).
    Allreduce,
    /// One `MPI_Sendrecv` of the size on both ranks at once: two one-way
    /// transfers in opposite directions at the same time (rank 0's mean
    /// over a burst, as for `pingpong`).
    Exchange,
    /// Two transfers of the size from rank 0 into rank 1 at once (two
    /// `MPI_Isend`, two `MPI_Irecv`, `MPI_Waitall`; rank 0's mean per pair
    /// over a burst, as for `pingpong`).
    Pair,
}

impl Op {
    /// All operations, in CSV order.
    pub const ALL: [Op; 24] = [
        Op::Pingpong,
        Op::Send,
        Op::Recv,
        Op::Isend,
        Op::Wtime,
        Op::Iprobe,
        Op::Irecv,
        Op::Wait,
        Op::Rma,
        Op::RmaPut,
        Op::RmaGet,
        Op::RmaAccumulate,
        Op::RmaLock,
        Op::RmaUnlock,
        Op::RmaPost,
        Op::RmaComplete,
        Op::RmaCreate,
        Op::RmaFree,
        Op::Prtt1,
        Op::PrttN,
        Op::PrttD,
        Op::Allreduce,
        Op::Exchange,
        Op::Pair,
    ];

    /// The name used in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Op::Pingpong => "pingpong",
            Op::Send => "send",
            Op::Recv => "recv",
            Op::Isend => "isend",
            Op::Wtime => "wtime",
            Op::Iprobe => "iprobe",
            Op::Irecv => "irecv",
            Op::Wait => "wait",
            Op::Rma => "rma",
            Op::RmaPut => "rma_put",
            Op::RmaGet => "rma_get",
            Op::RmaAccumulate => "rma_acc",
            Op::RmaLock => "rma_lock",
            Op::RmaUnlock => "rma_unlock",
            Op::RmaPost => "rma_post",
            Op::RmaComplete => "rma_complete",
            Op::RmaCreate => "rma_create",
            Op::RmaFree => "rma_free",
            Op::Prtt1 => "prtt1",
            Op::PrttN => "prttn",
            Op::PrttD => "prttd",
            Op::Allreduce => "allreduce",
            Op::Exchange => "exchange",
            Op::Pair => "pair",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One raw measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// What was measured.
    pub op: Op,
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Start of the sample on the measuring rank's clock, seconds since
    /// the benchmark's initial barrier.
    pub start_s: f64,
    /// Duration, seconds.
    pub duration_s: f64,
}

/// How to build and launch the benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// MPI C compiler wrapper; default `$MPICC`, else `mpicc`.
    pub mpicc: String,
    /// MPI launcher; default `$MPIRUN`, else `mpirun`.
    pub mpirun: String,
    /// Extra launcher arguments, placed before the program; default none.
    pub mpirun_args: Vec<String>,
    /// Longest a benchmark run may take before it is killed; default 300 s.
    pub timeout: Duration,
}

impl Launcher {
    /// The defaults: the compiler wrapper and the launcher
    /// [`mpi_launch`] finds (`$MPICC`, else `mpicc`; `$MPIRUN`, else
    /// `mpirun`, else `mpiexec`), or, when none runs, `$MPICC`/`$MPIRUN` or
    /// the plain names, whose use then fails naming them.
    pub fn from_env() -> Launcher {
        let var = |name: &str, default: &str| std::env::var(name).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.into());
        Launcher {
            mpicc: mpi_launch::find_mpicc(None).unwrap_or_else(|_| var("MPICC", "mpicc")),
            mpirun: mpi_launch::Mpi::find(None).map_or_else(|_| var("MPIRUN", "mpirun"), |m| m.program().to_string()),
            mpirun_args: Vec::new(),
            timeout: Duration::from_secs(300),
        }
    }

    /// Compiles [`NETBENCH_C`] into `dir`; returns the executable's path.
    ///
    /// # Errors
    /// As [`Launcher::compile_source`].
    pub fn compile(&self, dir: &Path) -> Result<PathBuf, Error> {
        self.compile_source(dir, "netbench", NETBENCH_C)
    }

    /// Compiles the C `source` as `<dir>/<name>.c` into `<dir>/<name>`;
    /// returns the executable's path.
    ///
    /// # Errors
    /// [`ErrorKind::CompilerMissing`] when `mpicc` cannot be started,
    /// [`ErrorKind::CompileFailed`] with the compiler's first error line,
    /// [`ErrorKind::Io`] when `dir` is not writable.
    pub fn compile_source(&self, dir: &Path, name: &str, source: &str) -> Result<PathBuf, Error> {
        let src = dir.join(format!("{name}.c"));
        let exe = dir.join(name);
        std::fs::write(&src, source).map_err(|e| Error::io(&src, e))?;
        let out = Command::new(&self.mpicc).args(["-O2", "-o"]).arg(&exe).arg(&src).stdin(Stdio::null()).output().map_err(|e| {
            Error::new(
                ErrorKind::CompilerMissing,
                format!("cannot run MPI compiler `{}` ({e}); set $MPICC to an MPI C compiler wrapper", self.mpicc),
            )
        })?;
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stderr);
            let first = text.lines().find(|l| l.contains("error")).or(text.lines().next()).unwrap_or("no output");
            return Err(Error::new(ErrorKind::CompileFailed, format!("`{}` failed on {name}.c ({}): {first}", self.mpicc, out.status)));
        }
        Ok(exe)
    }

    /// Runs the compiled benchmark `exe` on 2 ranks over `plan` (sizes in
    /// measurement order; the first `warmup` entries are discarded), with
    /// files in `dir`; returns the samples of every kept plan entry
    /// (`pingpong`, `exchange`, `send`, `recv`, `isend`, the per-call
    /// costs and, where the MPI has a one-sided component, `rma*`).
    /// `clean`: netbench's `clean` mode (ping-pongs and exchanges send
    /// from a buffer no rank writes).
    ///
    /// Sets `OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1`, which only Open MPI reads,
    /// so that calibration also runs as root (containers).
    ///
    /// # Errors
    /// [`ErrorKind::LauncherMissing`] when `mpirun` cannot be started;
    /// [`ErrorKind::BenchFailed`] on a nonzero exit or timeout, quoting the
    /// benchmark's message; [`ErrorKind::Csv`] / [`ErrorKind::Io`] for its output.
    pub fn run(&self, exe: &Path, plan: &[u64], warmup: usize, clean: bool, dir: &Path) -> Result<Vec<Sample>, Error> {
        let mode = if clean { vec!["clean".to_string()] } else { Vec::new() };
        self.run_mode(exe, plan, warmup, &mode, dir)
    }

    /// Like [`Launcher::run`] in PRTT mode: 3 samples (`prtt1`, `prttn`,
    /// `prttd`) per kept plan entry, with `n` messages and `d_s` seconds of
    /// delay (netgauge's LogGP assessment).
    ///
    /// # Errors
    /// As [`Launcher::run`].
    pub fn run_prtt(&self, exe: &Path, plan: &[u64], warmup: usize, n: u32, d_s: f64, dir: &Path) -> Result<Vec<Sample>, Error> {
        self.run_mode(exe, plan, warmup, &[n.to_string(), format!("{d_s:e}")], dir)
    }

    /// Like [`Launcher::run`] in allreduce mode: one `allreduce` sample per
    /// kept plan entry (sizes rounded down to whole doubles).
    ///
    /// # Errors
    /// As [`Launcher::run`].
    pub fn run_allreduce(&self, exe: &Path, plan: &[u64], warmup: usize, dir: &Path) -> Result<Vec<Sample>, Error> {
        self.run_mode(exe, plan, warmup, &["allreduce".to_string()], dir)
    }

    /// The first line of `mpirun --version` (e.g. "mpirun (Open MPI)
    /// 4.1.4", or Hydra's with its version line), or `None` when the
    /// launcher does not run ([`mpi_launch::Mpi::version`]).
    pub fn version(&self) -> Option<String> {
        mpi_launch::Mpi::find(Some(&self.mpirun)).ok().map(|m| m.version().to_string())
    }

    fn run_mode(&self, exe: &Path, plan: &[u64], warmup: usize, mode: &[String], dir: &Path) -> Result<Vec<Sample>, Error> {
        let plan_path = dir.join("plan.txt");
        let csv_path = dir.join("samples.csv");
        let log_path = dir.join("mpirun.log");
        let text: String = plan.iter().map(|s| format!("{s}\n")).collect();
        std::fs::write(&plan_path, text).map_err(|e| Error::io(&plan_path, e))?;
        let mut args: Vec<std::ffi::OsString> = vec![plan_path.into(), csv_path.clone().into(), warmup.to_string().into()];
        args.extend(mode.iter().map(Into::into));
        self.launch(2, exe, &args, &log_path, "netbench")?;
        read_csv(&csv_path)
    }

    /// Runs `exe args…` on `ranks` ranks, its output to `log_path`;
    /// `name` is the program's name in messages, and the prefix
    /// (`<name>:`) of its own error lines, quoted first on failure.
    ///
    /// Sets `OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1`, which only Open MPI reads,
    /// so that calibration also runs as root (containers).
    ///
    /// # Errors
    /// [`ErrorKind::LauncherMissing`] when `mpirun` cannot be started;
    /// [`ErrorKind::BenchFailed`] on a nonzero exit or timeout, quoting the
    /// program's message; [`ErrorKind::Io`] when the log cannot be created.
    /// A run Open MPI reports as a rank with PID 0 exiting improperly
    /// (`mpi_launch::open_mpi_exit_race`) is made once more.
    pub fn launch(&self, ranks: u32, exe: &Path, args: &[std::ffi::OsString], log_path: &Path, name: &str) -> Result<(), Error> {
        match self.launch_once(ranks, exe, args, log_path, name) {
            Err(e) if std::fs::read_to_string(log_path).is_ok_and(|t| mpi_launch::open_mpi_exit_race(&t)) => self
                .launch_once(ranks, exe, args, log_path, name)
                .map_err(|again| Error::new(again.kind(), format!("{again} (made again after: {e})"))),
            done => done,
        }
    }

    /// One run of [`Launcher::launch`].
    fn launch_once(&self, ranks: u32, exe: &Path, args: &[std::ffi::OsString], log_path: &Path, name: &str) -> Result<(), Error> {
        let log = std::fs::File::create(log_path).map_err(|e| Error::io(log_path, e))?;
        let log2 = log.try_clone().map_err(|e| Error::io(log_path, e))?;
        let mut child = Command::new(&self.mpirun)
            .args(["-np", &ranks.to_string()])
            .args(&self.mpirun_args)
            .arg(exe)
            .args(args)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| Error::new(ErrorKind::LauncherMissing, format!("cannot run MPI launcher `{}` ({e}); set $MPIRUN", self.mpirun)))?;
        let status = match mpi_launch::wait_bounded(&mut child, self.timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                return Err(Error::new(
                    ErrorKind::BenchFailed,
                    format!("{name} timed out after {:?}; log in {}", self.timeout, log_path.display()),
                ))
            }
            Err(e) => return Err(Error::new(ErrorKind::BenchFailed, format!("waiting for `{}`: {e}", self.mpirun))),
        };
        if !status.success() {
            let log = std::fs::read_to_string(log_path).unwrap_or_default();
            // Our own message, else the launcher's error, else its last line.
            let own = format!("{name}:");
            let line = log
                .lines()
                .find(|l| l.starts_with(&own))
                .or(log.lines().find(|l| l.contains("rror")))
                .or(log.lines().rev().find(|l| !l.trim().is_empty() && !l.starts_with("---")));
            return Err(Error::new(
                ErrorKind::BenchFailed,
                format!("`{} -np {ranks} {name}` failed ({status}): {}", self.mpirun, line.unwrap_or("no output")),
            ));
        }
        Ok(())
    }
}

/// `count` distinct message sizes from 1 to `max_bytes`, log-uniform:
/// one size drawn uniformly in log-space in each of `count` equal strata
/// (the ends are exactly 1 and `max_bytes`), then spread so they are
/// distinct. Deterministic for a given `seed`. Sorted ascending.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] unless `2 <= count <= max_bytes`.
pub fn size_grid(count: usize, max_bytes: u64, seed: u64) -> Result<Vec<u64>, Error> {
    if count < 2 || count as u64 > max_bytes {
        return Err(Error::new(ErrorKind::InvalidArgument, format!("sizes: need 2 <= count <= max_bytes ({max_bytes}), got {count}")));
    }
    let mut rng = SplitMix64(seed);
    let top = (max_bytes as f64).ln();
    let last = count - 1;
    let mut sizes: Vec<u64> = (0..count)
        .map(|i| match i {
            0 => 1,
            i if i == last => max_bytes,
            i => ((i as f64 - 0.5 + rng.next_f64()) / last as f64 * top).exp().round() as u64,
        })
        .collect();
    sizes.sort_unstable();
    for i in 1..count {
        sizes[i] = sizes[i].max(sizes[i - 1] + 1);
    }
    sizes[last] = max_bytes;
    for i in (0..last).rev() {
        sizes[i] = sizes[i].min(sizes[i + 1] - 1);
    }
    Ok(sizes)
}

/// The measurement order: every size of `sizes` `reps` times, shuffled
/// (Fisher–Yates with a SplitMix64 seeded by `seed`).
pub fn shuffled_plan(sizes: &[u64], reps: usize, seed: u64) -> Vec<u64> {
    let mut plan: Vec<u64> = sizes.iter().flat_map(|&s| std::iter::repeat_n(s, reps)).collect();
    let mut rng = SplitMix64(seed ^ 0x0005_EED0_F91A);
    for i in (1..plan.len()).rev() {
        let j = (rng.next_f64() * (i + 1) as f64) as usize;
        plan.swap(i, j.min(i));
    }
    plan
}

/// Parses a samples CSV (header [`CSV_HEADER`]; fields may be quoted,
/// blank lines are skipped).
///
/// # Errors
/// [`ErrorKind::Io`] when `path` cannot be read; [`ErrorKind::Csv`] naming
/// `path` and the line of a bad header or row.
pub fn read_csv(path: &Path) -> Result<Vec<Sample>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    parse_csv(&text, path)
}

/// [`read_csv`] of the CSV `text` read from `path`: sizes at most 2^53
/// bytes, times finite and `>= 0`.
///
/// # Errors
/// As [`read_csv`], and an out-of-range value naming its column and line.
pub fn parse_csv(text: &str, path: &Path) -> Result<Vec<Sample>, Error> {
    parse_rows(text, path, CSV_HEADER, |f, bad| {
        let op = Op::ALL.into_iter().find(|o| o.name() == f[0]).ok_or_else(|| bad(&format!("unknown op `{}`", f[0])))?;
        let size_bytes = size_field(f[1], bad)?;
        let time = |k: usize, name: &str| {
            f[k].parse::<f64>()
                .ok()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| bad(&format!("bad {name} `{}` (a finite time >= 0 s)", f[k])))
        };
        let (start_s, duration_s) = (time(2, "start_s")?, time(3, "duration_s")?);
        Ok(Sample { op, size_bytes, start_s, duration_s })
    })
}

/// A `size_bytes` field: an integer of at most 2^53 bytes
/// ([`simulator::limits::MAX_BYTES`]); else `bad`'s error.
pub(crate) fn size_field(f: &str, bad: &dyn Fn(&str) -> Error) -> Result<u64, Error> {
    f.parse()
        .ok()
        .filter(|&b| b <= simulator::limits::MAX_BYTES)
        .ok_or_else(|| bad(&format!("bad size_bytes `{f}` (an integer up to 2^53)")))
}

/// The rows of the CSV `text` read from `path`, whose first row must be
/// `header` (comma-separated column names): each row, as many fields as
/// the header names, trimmed, becomes a `T` through `row`, which gets the
/// fields and a maker of errors naming the row's line.
///
/// # Errors
/// A missing or other header (line 1), a row of another width, malformed
/// CSV, or what `row` returns: each names `path` and the line.
pub(crate) fn parse_rows<T>(
    text: &str,
    path: &Path,
    header: &str,
    mut row: impl FnMut(&[&str], &dyn Fn(&str) -> Error) -> Result<T, Error>,
) -> Result<Vec<T>, Error> {
    let mut rows = csv_rows(text, path);
    match rows.next().transpose()? {
        Some((_, h)) if h.iter().map(str::trim).eq(header.split(',')) => {}
        _ => return Err(csv_error(path, Some(1), &format!("expected header `{header}`"))),
    }
    let width = header.split(',').count();
    let mut out = Vec::new();
    for r in rows {
        let (n, r) = r?;
        let bad = |what: &str| csv_error(path, Some(n), what);
        let f: Vec<&str> = r.iter().map(str::trim).collect();
        if f.len() != width {
            return Err(bad(&format!("expected {width} columns ({header}), found {}", f.len())));
        }
        out.push(row(&f, &bad)?);
    }
    Ok(out)
}

/// The records of the CSV `text` read from `path`, with their 1-based
/// lines (see [`simulator::csv_text::records`]).
pub(crate) fn csv_rows<'a>(text: &'a str, path: &'a Path) -> impl Iterator<Item = Result<simulator::csv_text::Line, Error>> + 'a {
    simulator::csv_text::records(text).map(move |r| r.map_err(|(line, what)| csv_error(path, line, &what)))
}

/// An [`ErrorKind::Csv`] error: `path:line: what`, or `path: what`.
pub(crate) fn csv_error(path: &Path, line: Option<u64>, what: &str) -> Error {
    match line {
        Some(l) => Error::new(ErrorKind::Csv, format!("{}:{l}: {what}", path.display())),
        None => Error::new(ErrorKind::Csv, format!("{}: {what}", path.display())),
    }
}

/// One row of a samples CSV; the field names are the header's columns.
#[derive(serde::Serialize)]
struct Row {
    op: &'static str,
    size_bytes: u64,
    start_s: f64,
    duration_s: f64,
}

/// Writes samples as CSV with header [`CSV_HEADER`], seconds with the
/// shortest digits that read back to the same value.
///
/// # Errors
/// [`ErrorKind::Io`] naming `path`.
pub fn write_csv(path: &Path, samples: &[Sample]) -> Result<(), Error> {
    let io = |e: csv::Error| {
        let what = e.to_string();
        match e.into_kind() {
            csv::ErrorKind::Io(e) => Error::io(path, e),
            _ => Error::new(ErrorKind::Csv, format!("{}: {what}", path.display())),
        }
    };
    let mut w = csv::Writer::from_path(path).map_err(io)?;
    for s in samples {
        w.serialize(Row { op: s.op.name(), size_bytes: s.size_bytes, start_s: s.start_s, duration_s: s.duration_s }).map_err(io)?;
    }
    if samples.is_empty() {
        w.write_record(CSV_HEADER.split(',')).map_err(io)?;
    }
    w.flush().map_err(|e| Error::io(path, e))
}

/// SplitMix64 (Steele, Lea & Flood, OOPSLA 2014): small, seeded, portable.
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_grid_is_distinct_log_uniform_and_spans_the_range() {
        let g = size_grid(60, 4 << 20, 1).unwrap();
        assert_eq!((g.len(), g[0], g[59]), (60, 1, 4 << 20));
        assert!(g.windows(2).all(|w| w[0] < w[1]));
        // Log-uniform: about a third of the sizes below 128 B (7 of 22 octaves).
        let small = g.iter().filter(|&&s| s < 128).count();
        assert!((15..=25).contains(&small), "{small} sizes below 128 B: {g:?}");
        assert_eq!(g, size_grid(60, 4 << 20, 1).unwrap());
        assert_ne!(g, size_grid(60, 4 << 20, 2).unwrap());
        // Dense grids stay distinct and in range.
        let g = size_grid(10, 10, 3).unwrap();
        assert_eq!(g, (1..=10).collect::<Vec<_>>());
        assert_eq!(size_grid(1, 10, 0).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(size_grid(11, 10, 0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn plan_repeats_every_size_and_shuffles() {
        let p = shuffled_plan(&[1, 2, 3], 4, 9);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
        assert_ne!(p, sorted);
    }

    #[test]
    fn csv_round_trip_and_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.csv");
        let samples = vec![
            Sample { op: Op::Pingpong, size_bytes: 8, start_s: 0.5, duration_s: 2.5e-7 },
            Sample { op: Op::Recv, size_bytes: 4096, start_s: 1.25, duration_s: 3e-6 },
        ];
        write_csv(&f, &samples).unwrap();
        assert_eq!(read_csv(&f).unwrap(), samples);
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.starts_with(&format!("{CSV_HEADER}\npingpong,8,0.5,2.5e-7\n")), "{text}");
        std::fs::write(&f, format!("{CSV_HEADER}\nsend,8,0.1,1e-7\nbcast,8,0.2,1e-7\n")).unwrap();
        let e = read_csv(&f).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Csv);
        assert!(e.to_string().ends_with("s.csv:3: unknown op `bcast`"), "{e}");
        write_csv(&f, &[]).unwrap();
        assert_eq!((std::fs::read_to_string(&f).unwrap(), read_csv(&f).unwrap()), (format!("{CSV_HEADER}\n"), vec![]));
        std::fs::write(&f, format!("{CSV_HEADER}\n\nsend,8,0.1\n")).unwrap();
        assert!(read_csv(&f).unwrap_err().to_string().contains("s.csv:3: expected 4 columns"));
        std::fs::write(&f, "size,time\n").unwrap();
        assert!(read_csv(&f).unwrap_err().to_string().contains(":1: expected header"));
    }

    #[test]
    fn a_missing_compiler_is_reported_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let l = Launcher { mpicc: "/nonexistent/mpicc".into(), ..Launcher::from_env() };
        let e = l.compile(dir.path()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CompilerMissing);
        assert!(e.to_string().contains("/nonexistent/mpicc") && !e.to_string().contains('\n'), "{e}");
    }
}

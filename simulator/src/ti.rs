//! SimGrid time-independent (TI) traces: the trace-list file and the
//! per-rank action files that `smpirun -trace-ti` writes (SimGrid 3.32,
//! `src/smpi/internals/smpi_replay.cpp` and `instr_smpi.cpp`), read as
//! streams of [`Action`]s.
//!
//! A trace list names one action file per rank, one path per line, in
//! rank order (relative paths are taken relative to the list's directory,
//! then to the working directory). Each action file has one action per
//! line, `<rank> <verb> <fields…>`:
//!
//! | verb | fields (`[x]` optional) | action |
//! |---|---|---|
//! | `init` | `[x]` | `Init`; with a field the default datatype is `MPI_DOUBLE`, else `MPI_BYTE` |
//! | `finalize` | | `Finalize` |
//! | `compute` | `<flops>` | `Flops` |
//! | `sleep` | `<seconds>` | `Compute` |
//! | `send`, `isend`, `recv`, `irecv` | `<peer> <tag> <count> [dt]` | p2p; `-333` is `MPI_PROC_NULL` |
//! | `sendRecv` | `<scount> <dst> <rcount> <src> [sdt] [rdt]` | `Sendrecv` |
//! | `wait`, `test` | `<src> <dst> <tag>` | `Wait` on the oldest request with that key; `test` is a no-op |
//! | `waitall`, `waitAny` | `[count]` | `Waitall` on every pending request; `waitAny` waits for the oldest |
//! | `barrier` | | `Barrier` |
//! | `bcast` | `<count> [root] [dt]` | `Bcast` |
//! | `reduce` | `<count> <flops> [root] [dt]` | `Reduce`, then `Flops` |
//! | `allreduce` | `<count> <flops> [dt]` | `Allreduce`, then `Flops` |
//! | `scan`, `exscan` | `<count> <flops> [dt]` | `Scan`, then `Flops` |
//! | `alltoall`, `allgather` | `<scount> <rcount> [sdt] [rdt]` | `Alltoall`, `Allgather` |
//! | `gather`, `scatter` | `<scount> <rcount> [root] [sdt] [rdt]` | `Gather`, `Scatter` |
//! | `gatherv` | `<scount> <rcounts×n> [root] [sdt] [rdt]` | `Gather` (the sender's size costs) |
//! | `allgatherv` | `<scount> <rcounts×n> [sdt] [rdt]` | `Allgatherv` |
//! | `scatterv` | `<scounts×n> <rcount> [root] [sdt] [rdt]` | `Scatterv` |
//! | `alltoallv` | `<sbuf> <scounts×n> <rbuf> <rcounts×n> [sdt] [rdt]` | `Alltoallv` |
//! | `reducescatter` | `<rcounts×n> <flops> [dt]` | `ReduceScatter`, then `Flops` |
//! | `ibcast`, `iallreduce`, … | as the blocking verb | replayed as the blocking collective (no overlap yet) |
//! | `location`, `comm_size`, `comm_split`, `comm_dup` | | ignored |
//!
//! Sizes are counts times the size of the datatype code `dt` (SMPI's ids:
//! 0 `MPI_DOUBLE`, 1 `MPI_INT`, 2 `MPI_CHAR`, …; see [`datatype_size`]).
//! Requests are keyed by (source, destination, tag) as SMPI's replay does;
//! unlike SMPI, two pending requests with the same key are both kept.
//! TI traces carry no communicator: collectives run on `MPI_COMM_WORLD`
//! (as in SMPI's replay).
//!
//! A single file holding every rank's lines (each line starts with its
//! rank, as SimGrid's replay accepts) replays too: it is mapped into
//! memory and indexed once by runs of consecutive lines of one rank, and
//! each rank's stream reads its own runs; the rank count is one more than
//! the largest rank in the file.
//!
//! Files are read in 64 KiB blocks and parsed as bytes: fields are runs of
//! non-blank ASCII (a `\r` before the newline and trailing blanks do not
//! count), empty lines are skipped, and numbers parse exactly as
//! `str::parse` would. A rank's actions come in batches of a few hundred
//! to a few thousand; with the `parallel` feature (and at most
//! [`REOPEN_ABOVE`] ranks) each rank file has a parser thread of its own
//! that stays at most two batches ahead of the replay.

#[cfg(feature = "parallel")]
mod feed;
mod parse;
mod read;
mod shared;

pub use parse::RankParser;

use std::path::{Path, PathBuf};

use crate::action::Action;

use read::RankSource;
use shared::Layout;

/// SimGrid's `MPI_PROC_NULL` in TI traces.
pub const TI_PROC_NULL: i32 = -333;

/// Tag used for TI `sendRecv`, which records none.
const SENDRECV_TAG: i32 = 0;

/// Error reading a TI trace: one line naming the file and, for a bad
/// action, its line number (1-based).
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {what}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct TiError {
    /// The trace list or action file.
    pub path: PathBuf,
    /// 1-based line, when one is at fault.
    pub line: Option<usize>,
    /// What is wrong.
    pub what: String,
}

/// Size in bytes of SMPI datatype code `code` as written in TI traces
/// (SimGrid 3.32 `smpi_datatype.cpp` ids; checked against traces of
/// `MPI_Send` with each type). `None` for an unknown code.
pub fn datatype_size(code: &str) -> Option<u64> {
    parse::dt_size(code.as_bytes())
}

/// Size in bytes of SMPI datatype id `id` ([`datatype_size`]).
fn datatype_size_of(id: u32) -> Option<u64> {
    Some(match id {
        0 => 8,                                    // MPI_DOUBLE
        1 => 4,                                    // MPI_INT
        2 | 6 | 8 | 9 | 16 | 17 | 21 | 45 => 1,    // CHAR, BYTE, SIGNED_CHAR, UNSIGNED_CHAR, C_BOOL, INT8_T, UINT8_T, INTEGER1
        3 | 10 | 18 | 22 | 46 => 2,                // SHORT, UNSIGNED_SHORT, INT16_T, UINT16_T, INTEGER2
        4 | 7 | 12 | 13 | 20 | 24 | 28 | 29 => 8,  // LONG, LONG_LONG, UNSIGNED_LONG(_LONG), INT64_T, UINT64_T, AINT, OFFSET
        5 | 11 | 15 | 19 | 23 | 38 | 39 | 47 => 4, // FLOAT, UNSIGNED, WCHAR, INT32_T, UINT32_T, REAL, REAL4, INTEGER4
        14 | 27 | 41 => 16,                        // LONG_DOUBLE, C_LONG_DOUBLE_COMPLEX (32 on x86-64, see below), REAL16
        25 | 30 | 34 | 35 | 42 => 8,               // C_FLOAT_COMPLEX, FLOAT_INT, 2INT, 2FLOAT, COMPLEX8
        26 | 31 | 32 | 36 | 37 | 43 => 16,         // C_DOUBLE_COMPLEX, LONG_INT, DOUBLE_INT, 2DOUBLE, 2LONG, COMPLEX16
        33 => 8,                                   // SHORT_INT (short + padding + int)
        40 | 48 => 8,                              // REAL8, INTEGER8
        57 => 1,                                   // MPI_PACKED (3.32)
        _ => return None,
    })
}

/// Reads a trace list: the per-rank action files, in rank order.
///
/// # Errors
/// [`TiError`] naming the list when it cannot be read or is empty, or
/// naming the list line whose file does not exist.
pub fn read_trace_list(list: &Path) -> Result<Vec<PathBuf>, TiError> {
    let err = |line, what: String| TiError { path: list.to_path_buf(), line, what };
    let text = std::fs::read_to_string(list).map_err(|e| err(None, e.to_string()))?;
    let base = list.parent().unwrap_or(Path::new("."));
    let mut files = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let p = Path::new(l);
        let found = if p.is_absolute() { Some(p.to_path_buf()) } else { [base.join(p), p.to_path_buf()].into_iter().find(|c| c.is_file()) };
        match found.filter(|f| f.is_file()) {
            Some(f) => files.push(f),
            None => {
                let dir = [base.join(p), p.to_path_buf()].iter().any(|c| c.is_dir());
                let why = if dir { "is a directory, not a trace file" } else { "does not exist" };
                return Err(err(Some(i + 1), format!("rank {} trace file {l} {why}", files.len())));
            }
        }
    }
    if files.is_empty() {
        return Err(err(None, "the trace list names no file".into()));
    }
    Ok(files)
}

/// Opens every rank of a TI trace as an action stream: a trace list, or a
/// single file of every rank's actions.
///
/// # Errors
/// [`TiError`] from [`read_trace_list`] or naming a file that cannot be opened.
pub fn open_list(list: &Path) -> Result<Vec<TiActions>, TiError> {
    if let Layout::Single(file) = shared::index(list)? {
        let n = file.ranks();
        return Ok((0..n).map(|r| TiActions::from_source(RankSource::shared(list, file.clone(), r), n)).collect());
    }
    let files = read_trace_list(list)?;
    let n = files.len() as u32;
    files.into_iter().enumerate().map(|(r, f)| TiActions::open(&f, r as u32, n)).collect()
}

/// Above this many ranks, a TI rank file is opened only while its buffer
/// refills, so that replays of many ranks stay under `ulimit -n`.
pub const REOPEN_ABOVE: usize = 512;

/// Actions parsed per batch (a parser thread hands them over this many
/// at a time): about `BATCHES_ACTIONS / ranks`, from 16 to 4096, so that
/// the batches of all ranks stay within a few MB.
fn batch_len(ranks: u32) -> usize {
    (BATCHES_ACTIONS / ranks.max(1) as usize).clamp(16, 4096)
}

/// Actions in one batch of every rank (about 40 bytes each).
const BATCHES_ACTIONS: usize = 1 << 14;

/// Where a stream's batches come from.
enum Feed {
    /// Parsed in the replay's thread, a batch at a time.
    Inline(Box<RankSource>),
    /// Parsed ahead by a thread of its own.
    #[cfg(feature = "parallel")]
    Thread(feed::Handoff),
    /// Nothing more (the end, or after an error).
    Done,
}

/// One rank's TI action file as a stream of [`Action`]s, parsed in batches
/// of a few thousand actions: memory does not grow with the file. With the
/// `parallel` feature and at most [`REOPEN_ABOVE`] ranks, each rank's file
/// is read and parsed by a thread of its own, a bounded number of batches
/// ahead of the replay, so that ranks parse in parallel on all cores.
pub struct TiActions {
    /// The current batch, in reverse order.
    batch: Vec<Action>,
    /// Actions per batch.
    batch_len: usize,
    /// The end of the file or a bad line, once the batch is replayed.
    end: Option<Result<(), TiError>>,
    feed: Feed,
}

impl TiActions {
    /// Opens `path` as rank `rank` of `ranks`.
    ///
    /// # Errors
    /// [`TiError`] naming `path` when it cannot be opened.
    pub fn open(path: &Path, rank: u32, ranks: u32) -> Result<TiActions, TiError> {
        // Beyond REOPEN_ABOVE ranks, files are closed between buffer refills
        // (bounded open files) and buffers are smaller (bounded memory).
        let reopen = ranks as usize > REOPEN_ABOVE;
        let buffer = if reopen { 1 << 13 } else { 1 << 16 };
        Ok(TiActions::from_source(RankSource::open(path, rank, ranks, (buffer, reopen))?, ranks))
    }

    /// The stream of `src`, one of `ranks`: beyond [`REOPEN_ABOVE`] ranks
    /// parsing stays in the replay's thread (bounded threads).
    fn from_source(src: RankSource, ranks: u32) -> TiActions {
        let src = Box::new(src);
        let batch = batch_len(ranks);
        let feed = if ranks as usize > REOPEN_ABOVE { Feed::Inline(src) } else { spawn(src, batch) };
        TiActions { batch: Vec::new(), batch_len: batch, end: None, feed }
    }
}

/// Starts a parser thread for `src` (with the `parallel` feature; when no
/// thread can be started, parsing stays inline).
#[cfg(feature = "parallel")]
fn spawn(src: Box<RankSource>, batch: usize) -> Feed {
    match feed::spawn(src, batch) {
        Ok(h) => Feed::Thread(h),
        Err(src) => Feed::Inline(src),
    }
}

/// Without the `parallel` feature, parsing stays in the replay's thread.
#[cfg(not(feature = "parallel"))]
fn spawn(src: Box<RankSource>, _batch: usize) -> Feed {
    Feed::Inline(src)
}

impl TiActions {
    /// Fetches the next batch into `self.batch` / `self.end`.
    fn refill(&mut self) {
        match &mut self.feed {
            Feed::Inline(src) => {
                let mut actions = std::mem::take(&mut self.batch);
                actions.clear();
                match src.fill(&mut actions, self.batch_len) {
                    Ok(false) => {}
                    Ok(true) => self.end = Some(Ok(())),
                    Err(e) => self.end = Some(Err(e)),
                }
                actions.reverse();
                self.batch = actions;
            }
            #[cfg(feature = "parallel")]
            Feed::Thread(h) => match h.next(std::mem::take(&mut self.batch)) {
                Some(b) => {
                    self.batch = b.actions;
                    self.end = b.end;
                }
                None => {
                    let what = "the parser thread stopped".to_string();
                    self.end = Some(Err(TiError { path: h.path.clone(), line: None, what }));
                }
            },
            Feed::Done => {}
        }
        if self.end.is_some() {
            self.feed = Feed::Done;
        }
    }
}

/// Actions ahead of the next one whose cache line is fetched early: a
/// parser thread wrote them on another core, and reading them one miss at
/// a time would stall the replay.
const PREFETCH_AHEAD: usize = 12;

/// Asks the CPU to bring `batch[batch.len() - ahead]` (the batch is
/// replayed from its end) into its caches; a no-op when there is none.
#[inline(always)]
fn prefetch(batch: &[Action], ahead: usize) {
    #[cfg(all(feature = "parallel", target_arch = "x86_64"))]
    if let Some(a) = batch.len().checked_sub(ahead).map(|i| &batch[i]) {
        // SAFETY: a prefetch is a hint that never faults and reads nothing
        // into the program; the address is of a live element anyway.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((a as *const Action).cast()) }
    }
    #[cfg(not(all(feature = "parallel", target_arch = "x86_64")))]
    let _ = (batch, ahead);
}

impl Iterator for TiActions {
    type Item = Result<Action, TiError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(a) = self.batch.pop() {
                prefetch(&self.batch, PREFETCH_AHEAD);
                return Some(Ok(a));
            }
            if let Some(end) = self.end.take() {
                // After the end (or the error), nothing more.
                self.end = Some(Ok(()));
                return end.err().map(Err);
            }
            if matches!(self.feed, Feed::Done) {
                return None;
            }
            self.refill();
        }
    }
}

#[cfg(test)]
mod tests;

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
//! rank, as SimGrid's replay accepts) replays too: each rank's stream
//! reads the file and keeps its own lines; the rank count is one more than
//! the largest rank in the file.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::action::Action;
use crate::trace::record::PROC_NULL;

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
    let id: u32 = code.parse().ok()?;
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
            None => return Err(err(Some(i + 1), format!("rank {} trace file {l} does not exist", files.len()))),
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
    if let Some(n) = single_file_ranks(list)? {
        return (0..n).map(|r| TiActions::open(list, r, n).map(TiActions::shared)).collect();
    }
    let files = read_trace_list(list)?;
    let n = files.len() as u32;
    files.into_iter().enumerate().map(|(r, f)| TiActions::open(&f, r as u32, n)).collect()
}

/// The rank count of `path` when it is a single-file TI trace (its first
/// action line is `<rank> <verb> …`, not a path): one more than the
/// largest rank on any line; `None` for a trace list.
///
/// # Errors
/// [`TiError`] naming `path` when it cannot be read.
fn single_file_ranks(path: &Path) -> Result<Option<u32>, TiError> {
    let err = |what: String| TiError { path: path.to_path_buf(), line: None, what };
    let file = File::open(path).map_err(|e| err(e.to_string()))?;
    let mut lines = BufReader::new(file).lines();
    let first = loop {
        match lines.next() {
            None => return Ok(None),
            Some(Err(e)) => return Err(err(e.to_string())),
            Some(Ok(l)) if l.trim().is_empty() || l.trim_start().starts_with('#') => continue,
            Some(Ok(l)) => break l,
        }
    };
    let mut w = first.split_ascii_whitespace();
    let rank = w.next().and_then(|r| r.parse::<u32>().ok());
    let verb = w.next().is_some_and(|v| v.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_'));
    let (Some(mut max), true) = (rank, verb) else { return Ok(None) };
    for l in lines {
        let l = l.map_err(|e| err(e.to_string()))?;
        if let Some(r) = l.split_ascii_whitespace().next().and_then(|r| r.parse::<u32>().ok()) {
            max = max.max(r);
        }
    }
    Ok(Some(max + 1))
}

/// A count of at most 15 decimal digits, parsed exactly without the
/// general float parser (most TI fields); `None` otherwise.
fn fast_count(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 15 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u64, |v, &d| v * 10 + (d - b'0') as u64) as f64)
}

/// Above this many ranks, a TI rank file is opened only while its buffer
/// refills, so that replays of many ranks stay under `ulimit -n`.
pub const REOPEN_ABOVE: usize = 512;

/// A rank file read sequentially: kept open, or (`file` = `None`)
/// reopened at `offset` for each read and closed again.
struct RankFile {
    path: PathBuf,
    file: Option<File>,
    offset: u64,
}

impl Read for RankFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match &mut self.file {
            Some(f) => f.read(buf)?,
            None => {
                let mut f = File::open(&self.path)?;
                f.seek(SeekFrom::Start(self.offset))?;
                f.read(buf)?
            }
        };
        self.offset += n as u64;
        Ok(n)
    }
}

/// One rank's TI action file as a stream of [`Action`]s, read line by
/// line (memory does not grow with the file).
pub struct TiActions {
    path: PathBuf,
    reader: BufReader<RankFile>,
    buf: String,
    line: usize,
    rank: u32,
    ranks: u32,
    default_dt: u64,
    /// Pending requests in posting order: (src, dst, tag) key and id.
    reqs: Vec<((i32, i32, i32), u64)>,
    next_req: u64,
    queued: VecDeque<Action>,
    done: bool,
    /// The file holds every rank's lines: others' lines are skipped.
    shared: bool,
}

impl TiActions {
    /// Opens `path` as rank `rank` of `ranks`.
    ///
    /// # Errors
    /// [`TiError`] naming `path` when it cannot be opened.
    pub fn open(path: &Path, rank: u32, ranks: u32) -> Result<TiActions, TiError> {
        let f = File::open(path).map_err(|e| TiError { path: path.into(), line: None, what: e.to_string() })?;
        // Beyond REOPEN_ABOVE ranks, files are closed between buffer refills
        // (bounded open files) and buffers are smaller (bounded memory).
        let reopen = ranks as usize > REOPEN_ABOVE;
        let file = RankFile { path: path.into(), file: (!reopen).then_some(f), offset: 0 };
        Ok(TiActions {
            path: path.into(),
            reader: BufReader::with_capacity(if reopen { 1 << 13 } else { 1 << 16 }, file),
            buf: String::new(),
            line: 0,
            rank,
            ranks,
            default_dt: 1,
            reqs: Vec::new(),
            next_req: 1,
            queued: VecDeque::new(),
            done: false,
            shared: false,
        })
    }

    /// This stream reads a single-file trace: it keeps its rank's lines
    /// and skips the others'.
    fn shared(mut self) -> TiActions {
        self.shared = true;
        self
    }

    fn err(&self, what: impl Into<String>) -> TiError {
        TiError { path: self.path.clone(), line: Some(self.line), what: what.into() }
    }

    fn post(&mut self, key: (i32, i32, i32)) -> u64 {
        let id = self.next_req;
        self.next_req += 1;
        self.reqs.push((key, id));
        id
    }

    /// Parses the current line into zero or more queued actions.
    fn parse_line(&mut self) -> Result<(), TiError> {
        let line = std::mem::take(&mut self.buf);
        let path = std::mem::take(&mut self.path);
        let r = self.parse_fields(&line, &path);
        self.buf = line;
        self.path = path;
        r
    }

    fn parse_fields(&mut self, line: &str, path: &Path) -> Result<(), TiError> {
        let ln = self.line;
        macro_rules! bad {
            ($($t:tt)*) => { TiError { path: path.to_path_buf(), line: Some(ln), what: format!($($t)*) } };
        }
        let (me_u, default_dt) = (self.rank, self.default_dt);
        let mut it = line.split_ascii_whitespace();
        let Some(rank) = it.next() else { return Ok(()) };
        if self.shared && rank.parse::<u32>().is_ok_and(|r| r != me_u) {
            return Ok(());
        }
        if rank.parse::<u32>().ok() != Some(me_u) {
            return Err(bad!("expected rank {} in the first column, found `{rank}`", me_u));
        }
        let verb = it.next().ok_or_else(|| bad!("missing action after the rank"))?;
        // Fields without a heap allocation for the common short lines.
        let mut short = [""; 16];
        let mut nf = 0;
        let mut long: Vec<&str> = Vec::new();
        for x in it {
            if nf < short.len() {
                short[nf] = x;
            } else {
                if long.is_empty() {
                    long.extend_from_slice(&short);
                }
                long.push(x);
            }
            nf += 1;
        }
        let f: &[&str] = if long.is_empty() { &short[..nf] } else { &long };
        let me = me_u as i32;
        let n = self.ranks as usize;
        let need = |k: usize| -> Result<(), TiError> {
            if f.len() < k {
                Err(bad!("`{verb}` needs at least {k} fields, found {}", f.len()))
            } else {
                Ok(())
            }
        };
        let num = |i: usize| -> Result<f64, TiError> {
            let s = f.get(i).ok_or_else(|| bad!("`{verb}`: missing field {}", i + 1))?;
            fast_count(s)
                .or_else(|| s.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| bad!("`{verb}`: field {} `{s}` is not a count >= 0", i + 1))
        };
        let int = |i: usize| -> Result<i32, TiError> {
            let s = f.get(i).ok_or_else(|| bad!("`{verb}`: missing field {}", i + 1))?;
            s.parse::<i32>().map_err(|_| bad!("`{verb}`: field {} `{s}` is not an integer", i + 1))
        };
        let dt = |i: usize| -> Result<u64, TiError> {
            match f.get(i) {
                None => Ok(default_dt),
                Some(s) => datatype_size(s).ok_or_else(|| bad!("`{verb}`: unknown datatype code `{s}`")),
            }
        };
        let bytes = |count: f64, size: u64| (count * size as f64).round() as u64;
        let root = |i: usize| -> Result<u32, TiError> {
            let r = if f.len() > i { int(i)? } else { 0 };
            u32::try_from(r).ok().filter(|&r| (r as usize) < n).ok_or_else(|| bad!("`{verb}`: root {r} is not among the {n} ranks"))
        };
        let counts = |from: usize, size: u64| -> Result<Vec<u64>, TiError> { (from..from + n).map(|i| Ok(bytes(num(i)?, size))).collect() };
        let peer = |p: i32| if p == TI_PROC_NULL { PROC_NULL } else { p };
        let comm = 0;
        let a = match verb {
            "init" => {
                self.default_dt = if f.is_empty() { 1 } else { 8 };
                Action::Init
            }
            "finalize" => Action::Finalize,
            "compute" => Action::Flops { flops: num(0)? },
            "sleep" => Action::Compute { seconds: num(0)?, region: 0 },
            "send" | "isend" | "recv" | "irecv" => {
                need(3)?;
                let (p, tag, b) = (peer(int(0)?), int(1)?, bytes(num(2)?, dt(3)?));
                if p != PROC_NULL && !(0..n as i64).contains(&(p as i64)) {
                    return Err(bad!("`{verb}`: peer {p} is not among the {n} ranks"));
                }
                match verb {
                    "send" => Action::Send { dst: p as u32, tag, bytes: b, comm },
                    "recv" => Action::Recv { src: p, tag, bytes: b, comm },
                    "isend" => Action::Isend { dst: p as u32, tag, bytes: b, comm, req: self.post((me, int(0)?, tag)) },
                    _ => Action::Irecv { src: p, tag, bytes: b, comm, req: self.post((int(0)?, me, tag)) },
                }
            }
            "sendRecv" => {
                need(4)?;
                let sdt = dt(4)?;
                let rdt = if f.len() > 5 { dt(5)? } else { sdt };
                let (dst, src) = (peer(int(1)?), peer(int(3)?));
                Action::Sendrecv {
                    dst: dst as u32,
                    send_tag: SENDRECV_TAG,
                    send_bytes: bytes(num(0)?, sdt),
                    src,
                    recv_tag: SENDRECV_TAG,
                    recv_bytes: bytes(num(2)?, rdt),
                    comm,
                }
            }
            "wait" => {
                let pos = if f.is_empty() {
                    self.reqs.len().checked_sub(1)
                } else {
                    need(3)?;
                    let key = (int(0)?, int(1)?, int(2)?);
                    self.reqs.iter().position(|(k, _)| *k == key)
                };
                Action::Wait { req: pos.map(|i| self.reqs.remove(i).1).unwrap_or(0) }
            }
            "waitAny" | "waitany" => Action::Wait { req: if self.reqs.is_empty() { 0 } else { self.reqs.remove(0).1 } },
            "waitall" | "waitAll" => Action::Waitall { reqs: self.reqs.drain(..).map(|(_, id)| id).collect() },
            "test" | "location" | "comm_size" | "comm_split" | "comm_dup" => return Ok(()),
            "barrier" | "ibarrier" => Action::Barrier { comm },
            "bcast" | "ibcast" => {
                need(1)?;
                Action::Bcast { root: root(1)?, bytes: bytes(num(0)?, dt(2)?), comm }
            }
            "reduce" | "ireduce" => {
                need(2)?;
                self.queued.push_back(Action::Flops { flops: num(1)? });
                Action::Reduce { root: root(2)?, bytes: bytes(num(0)?, dt(3)?), comm }
            }
            "allreduce" | "iallreduce" => {
                need(2)?;
                self.queued.push_back(Action::Flops { flops: num(1)? });
                Action::Allreduce { bytes: bytes(num(0)?, dt(2)?), comm }
            }
            "scan" | "exscan" | "iscan" | "iexscan" => {
                need(2)?;
                self.queued.push_back(Action::Flops { flops: num(1)? });
                Action::Scan { bytes: bytes(num(0)?, dt(2)?), exclusive: verb.ends_with("exscan"), comm }
            }
            "alltoall" | "ialltoall" => {
                need(2)?;
                Action::Alltoall { bytes: bytes(num(0)?, dt(2)?), comm }
            }
            "allgather" | "iallgather" => {
                need(2)?;
                Action::Allgather { bytes: bytes(num(0)?, dt(2)?), comm }
            }
            "gather" | "igather" => {
                need(2)?;
                Action::Gather { root: root(2)?, bytes: bytes(num(0)?, dt(3)?), comm }
            }
            "scatter" | "iscatter" => {
                need(2)?;
                Action::Scatter { root: root(2)?, bytes: bytes(num(0)?, dt(3)?), comm }
            }
            "gatherv" | "igatherv" => {
                need(1 + n)?;
                Action::Gather { root: root(1 + n)?, bytes: bytes(num(0)?, dt(2 + n)?), comm }
            }
            "allgatherv" | "iallgatherv" => {
                need(1 + n)?;
                let size = if f.len() > 2 + n { dt(2 + n)? } else { dt(1 + n)? };
                Action::Allgatherv { recv_bytes: counts(1, size)?, comm }
            }
            "scatterv" | "iscatterv" => {
                need(n + 1)?;
                let root = root(n + 1)?;
                let send_bytes = if root == me_u { counts(0, dt(n + 2)?)? } else { Vec::new() };
                Action::Scatterv { root, send_bytes, comm }
            }
            "alltoallv" | "ialltoallv" => {
                need(2 * n + 2)?;
                Action::Alltoallv { send_bytes: counts(1, dt(2 * n + 2)?)?, comm }
            }
            "reducescatter" | "ireducescatter" => {
                need(n + 1)?;
                self.queued.push_back(Action::Flops { flops: num(n)? });
                Action::ReduceScatter { recv_bytes: counts(0, dt(n + 1)?)?, comm }
            }
            other => return Err(bad!("unknown action `{other}`")),
        };
        self.queued.push_front(a);
        Ok(())
    }
}

impl Iterator for TiActions {
    type Item = Result<Action, TiError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(a) = self.queued.pop_front() {
                if matches!(a, Action::Flops { flops } if flops == 0.0) {
                    continue;
                }
                return Some(Ok(a));
            }
            if self.done {
                return None;
            }
            self.buf.clear();
            match self.reader.read_line(&mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {
                    self.line += 1;
                    if let Err(e) = self.parse_line() {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.err(e.to_string())));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;

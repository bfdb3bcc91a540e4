//! The interposer's trace: one chunked binary file per rank plus `meta.json`.
//!
//! A trace directory holds `meta.json` ([`TraceMeta`]) and `rank-<r>.trace`
//! for each rank. Each rank file is a [`chunk`] container: a
//! [`RankHeader`], [`record::CallRecord`] chunks, and an end chunk written
//! at `MPI_Finalize` with the [`RankFooter`] and the [`Module`] table.
//! Readers take formats 2 to 4 (`MPITRC02` … `MPITRC04`; see [`fields`]
//! and [`codec`] for what changed).
//!
//! [`RankTrace::open`] checks a file's whole chunk structure up front (a
//! seek per chunk), so a truncated or corrupt file is reported before any
//! replay starts; [`RankTrace::records`] then streams its records.

pub mod check;
pub mod chunk;
pub mod codec;
pub mod fields;
pub mod record;
pub mod region_times;
pub mod run_regions;
pub mod symbols;
pub mod ti_export;
pub mod timeline;
pub mod writer;

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use record::{is_any_source, BlockCounters, CallRecord, Op, Params};
pub use symbols::{region_id, region_key_id, IO_REGION};
pub use writer::RankWriter;

use chunk::{ChunkHead, ChunkKind, CHUNK_HEADER_BYTES, MAGIC};
use codec::Version;

/// Name of the per-directory metadata file.
pub const META_FILE: &str = "meta.json";

/// File name of rank `r`'s trace inside a trace directory.
pub fn rank_file_name(rank: u32) -> String {
    format!("rank-{rank}.trace")
}

/// Which recorded duration a compute block takes in replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ComputeTime {
    /// Thread CPU time (default): honest when ranks were oversubscribed.
    #[default]
    Cpu,
    /// Wall time between the two calls.
    Wall,
}

/// How compute blocks were timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimingSource {
    /// Thread CPU time from `CLOCK_THREAD_CPUTIME_ID` (the task clock).
    ClockGettime,
    /// Wall time only: CPU time equals wall time (`INTERPOSER_COUNTERS=off`).
    WallOnly,
    /// As `ClockGettime`, plus user-space cycles and instructions per
    /// compute block from a perf_event group ([`record::BlockCounters`]).
    PerfCounters,
}

/// Directory-level metadata, written by rank 0 at `MPI_Init`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// Trace format version (1).
    pub format_version: u32,
    /// Number of ranks in `MPI_COMM_WORLD`.
    pub ranks: u32,
    /// `MPI_Get_library_version` of the traced run.
    pub mpi_library: String,
    /// How compute blocks were timed.
    pub timing_source: TimingSource,
    /// Wall time came from the invariant TSC at this frequency, Hz;
    /// absent: from `CLOCK_MONOTONIC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsc_hz: Option<f64>,
    /// Command line of rank 0.
    pub command: Vec<String>,
    /// Interposer mode the trace was taken in (`trace` or `online`).
    pub mode: String,
}

/// Per-rank header, the first chunk of each rank file ([`fields`] in
/// format 4, JSON before).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankHeader {
    /// World rank.
    pub rank: u32,
    /// World size.
    pub ranks: u32,
    /// Host name of the node the rank ran on.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// How compute blocks were timed.
    pub timing_source: TimingSource,
    /// Wall time came from the invariant TSC at this frequency, Hz;
    /// absent: from `CLOCK_MONOTONIC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tsc_hz: Option<f64>,
    /// Wall-clock time of the trace epoch (`MPI_Init` exit), Unix seconds.
    pub epoch_unix_s: f64,
}

/// One loaded object, for turning return addresses into stable call sites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// Path of the mapped file.
    pub path: String,
    /// First mapped address (inclusive).
    pub start: u64,
    /// End of the mapping (exclusive).
    pub end: u64,
    /// File offset the mapping starts at, bytes.
    pub file_offset: u64,
}

impl Module {
    /// The name a [`CallSite`] gives the module: its file name (the whole
    /// path when it has none).
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        Path::new(&self.path).file_name().map_or(std::borrow::Cow::Borrowed(self.path.as_str()), |n| n.to_string_lossy())
    }
}

/// End marker, written at `MPI_Finalize`; a file without it is truncated
/// ([`fields`] in format 4, JSON before).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RankFooter {
    /// Number of call records written.
    pub records: u64,
    /// Calls whose PMPI result was an error.
    pub failed_calls: u64,
    /// Records dropped because the file could not be written.
    pub dropped_records: u64,
    /// The recorder's own share of a compute block whose CPU clock was
    /// read, nanoseconds of CPU time; already subtracted from those blocks.
    #[serde(default)]
    pub overhead_cpu_ns: u64,
    /// The recorder's own share of every compute block, nanoseconds of
    /// wall time (measured through the recording path at `MPI_Init`);
    /// already subtracted.
    #[serde(default)]
    pub overhead_wall_ns: u64,
    /// `INTERPOSER_COUNTERS` mode used (`sw`, `off`) and, when hardware
    /// counters were not used, why.
    #[serde(default)]
    pub counters: String,
}

/// A call site made stable across runs: module file name and file offset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallSite {
    /// Base name of the module, e.g. `jacobi2d`.
    pub module: String,
    /// Offset of the return address in that file, bytes.
    pub offset: u64,
}

impl std::fmt::Display for CallSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}+{:#x}", self.module, self.offset)
    }
}

/// Error reading a trace; its message names the file and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct TraceError {
    /// The file at fault.
    pub path: PathBuf,
    /// What is wrong with it.
    pub kind: TraceErrorKind,
}

/// What is wrong with a trace file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceErrorKind {
    /// The file could not be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The first bytes are not a trace file's magic.
    #[error("not an interposer trace (bad magic)")]
    BadMagic,
    /// A chunk header or payload extends past the end of the file.
    #[error(
        "truncated at byte {at} of {size} (last whole chunk ends at byte {last_whole}); the run was probably killed before MPI_Finalize"
    )]
    Truncated {
        /// Offset where the cut chunk starts.
        at: u64,
        /// File size, bytes.
        size: u64,
        /// End of the last whole chunk.
        last_whole: u64,
    },
    /// The interposer stopped writing after a failed write; the chunks
    /// before `at` are whole.
    #[error("writing stopped at byte {at}: {why}")]
    Stopped {
        /// Offset of the stop chunk.
        at: u64,
        /// The writer's reason (the I/O error and what was lost).
        why: String,
    },
    /// The file has whole chunks but no end marker.
    #[error("no end marker after {size} bytes: truncated, the run stopped before MPI_Finalize")]
    NoEnd {
        /// File size, bytes.
        size: u64,
    },
    /// A chunk is malformed (bad tag, checksum or content).
    #[error("corrupt chunk at byte {at}: {what}")]
    Corrupt {
        /// Chunk offset.
        at: u64,
        /// What is wrong.
        what: String,
    },
    /// The trace holds a call the replay cannot represent yet.
    #[error("{call} is recorded but cannot be replayed yet")]
    NotReplayable {
        /// The MPI function, e.g. `MPI_Gather`.
        call: &'static str,
    },
    /// A JSON file or chunk does not parse, or `meta.json` is of a
    /// format version this reader does not know.
    #[error("bad metadata: {0}")]
    Json(String),
    /// The path is a directory or another non-regular file.
    #[error("not a regular file (a directory?): a rank file is expected here")]
    NotAFile,
    /// A rank file of a rank beyond those `meta.json` lists.
    #[error("rank file beyond the {ranks} ranks of meta.json (a leftover of another run?)")]
    ExtraRank {
        /// Ranks `meta.json` lists.
        ranks: u32,
    },
    /// The records read disagree with the count of the end chunk.
    #[error("{read} records read but the end chunk counts {written}")]
    RecordCount {
        /// Records the reader decoded (repeat copies included).
        read: u64,
        /// Records the end chunk says were written and not dropped.
        written: u64,
    },
}

/// The newest `meta.json` `format_version` this reader knows.
pub const META_FORMAT_VERSION: u32 = 4;

fn err(path: &Path, kind: TraceErrorKind) -> TraceError {
    TraceError { path: path.to_path_buf(), kind }
}

/// Reads and validates `meta.json` of a trace directory.
///
/// # Errors
/// [`TraceError`] naming `dir/meta.json` when it is missing or malformed.
pub fn read_meta(dir: &Path) -> Result<TraceMeta, TraceError> {
    let path = dir.join(META_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| err(&path, e.into()))?;
    let meta: TraceMeta = serde_json::from_str(&text).map_err(|e| err(&path, TraceErrorKind::Json(e.to_string())))?;
    if !(1..=META_FORMAT_VERSION).contains(&meta.format_version) {
        let why = format!("format_version {} is not one this reader knows (1 to {META_FORMAT_VERSION})", meta.format_version);
        return Err(err(&path, TraceErrorKind::Json(why)));
    }
    Ok(meta)
}

/// Checks that `dir` holds no rank file beyond the `ranks` of its
/// `meta.json` (a leftover of a run at more ranks would be ignored).
///
/// # Errors
/// [`TraceError`] naming the first such file, or the directory when it
/// cannot be listed.
pub fn check_no_extra_ranks(dir: &Path, ranks: u32) -> Result<(), TraceError> {
    let list = std::fs::read_dir(dir).map_err(|e| err(dir, e.into()))?;
    for entry in list.flatten() {
        let name = entry.file_name();
        let rank = name.to_str().and_then(|n| n.strip_prefix("rank-")?.strip_suffix(".trace")?.parse::<u64>().ok());
        if rank.is_some_and(|r| r >= ranks as u64) {
            return Err(err(&entry.path(), TraceErrorKind::ExtraRank { ranks }));
        }
    }
    Ok(())
}

/// An opened, structurally validated per-rank trace file.
#[derive(Debug, Clone)]
pub struct RankTrace {
    /// Path of the file.
    pub path: PathBuf,
    /// Its header.
    pub header: RankHeader,
    /// Its module table (possibly empty).
    pub modules: Vec<Module>,
    /// Its footer.
    pub footer: RankFooter,
    record_chunks: Vec<(u64, ChunkHead)>,
    /// The format the file was written in.
    version: Version,
    /// The file has its end chunk (its footer is the writer's).
    complete: bool,
}

impl RankTrace {
    /// Opens `path`, walks every chunk header and reads header, modules and footer.
    ///
    /// # Errors
    /// [`TraceError`] naming `path`: I/O, bad magic, truncation (a cut chunk
    /// or a missing end marker), or a corrupt metadata chunk.
    pub fn open(path: &Path) -> Result<RankTrace, TraceError> {
        let (trace, salvage) = Self::scan(path)?;
        match salvage {
            None => Ok(trace),
            Some(s) => Err(err(path, s.reason)),
        }
    }

    /// Opens `path` like [`RankTrace::open`], but recovers a truncated file
    /// (a run killed before `MPI_Finalize`): every whole chunk is kept, and
    /// the [`Salvage`] says what was lost. The footer of a salvaged file
    /// counts the records of the recovered chunks only when they are read.
    ///
    /// # Errors
    /// [`TraceError`] naming `path` for I/O errors, a bad magic, a corrupt
    /// chunk or a missing header.
    pub fn open_salvage(path: &Path) -> Result<(RankTrace, Option<Salvage>), TraceError> {
        Self::scan(path)
    }

    fn scan(path: &Path) -> Result<(RankTrace, Option<Salvage>), TraceError> {
        let e = |k| err(path, k);
        let mut f = File::open(path).map_err(|x| e(x.into()))?;
        let meta = f.metadata().map_err(|x| e(x.into()))?;
        if !meta.is_file() {
            return Err(e(TraceErrorKind::NotAFile));
        }
        let size = meta.len();
        let mut magic = [0u8; 8];
        let version = f.read_exact(&mut magic).ok().and_then(|_| chunk::version_of(&magic));
        let version = version.ok_or_else(|| e(TraceErrorKind::BadMagic))?;
        let (mut header, mut modules, mut footer) = (None, Vec::new(), None);
        let mut record_chunks = Vec::new();
        let mut at = MAGIC.len() as u64;
        let mut cut = None;
        let mut stopped = None;
        while at < size {
            let truncated = TraceErrorKind::Truncated { at, size, last_whole: at };
            if size - at < CHUNK_HEADER_BYTES as u64 {
                cut = Some(truncated);
                break;
            }
            let mut h = [0u8; CHUNK_HEADER_BYTES];
            f.seek(SeekFrom::Start(at)).and_then(|_| f.read_exact(&mut h)).map_err(|x| e(x.into()))?;
            let head = chunk::parse_chunk_header(&h).map_err(|what| e(TraceErrorKind::Corrupt { at, what: what.0 }))?;
            let end = at + (CHUNK_HEADER_BYTES + head.len) as u64;
            if end > size {
                cut = Some(truncated);
                break;
            }
            if footer.is_some() || stopped.is_some() {
                let what = format!("{:?} chunk after the end of the file's trace (two traces in one file?)", head.kind);
                return Err(e(TraceErrorKind::Corrupt { at, what }));
            }
            if head.kind == ChunkKind::Header && header.is_some() {
                return Err(e(TraceErrorKind::Corrupt { at, what: "a second header chunk (two traces in one file?)".into() }));
            }
            if head.kind == ChunkKind::Records {
                record_chunks.push((at + CHUNK_HEADER_BYTES as u64, head));
            } else {
                let mut payload = vec![0u8; head.len];
                f.read_exact(&mut payload).map_err(|x| e(x.into()))?;
                if crc32fast::hash(&payload) != head.crc {
                    return Err(e(TraceErrorKind::Corrupt { at, what: "checksum mismatch".into() }));
                }
                let bad = |what: &str, x: String| e(TraceErrorKind::Corrupt { at, what: format!("{what}: {x}") });
                let json = |what: &str, x: serde_json::Error| bad(what, x.to_string());
                match (head.kind, version) {
                    (ChunkKind::Header, Version::V4) => header = Some(fields::parse_header(&payload).map_err(|x| bad("header", x.0))?),
                    (ChunkKind::Header, _) => header = Some(serde_json::from_slice(&payload).map_err(|x| json("header", x))?),
                    (ChunkKind::Modules, _) => modules = serde_json::from_slice(&payload).map_err(|x| json("modules", x))?,
                    (ChunkKind::End, Version::V4) => {
                        let (f, m) = fields::parse_end(&payload).map_err(|x| bad("end", x.0))?;
                        (footer, modules) = (Some(f), m);
                    }
                    (ChunkKind::End, _) => footer = Some(serde_json::from_slice(&payload).map_err(|x| json("end", x))?),
                    (ChunkKind::Stop, _) => {
                        stopped = Some(TraceErrorKind::Stopped { at, why: String::from_utf8_lossy(&payload).into_owned() })
                    }
                    (ChunkKind::Records, _) => unreachable!(),
                }
            }
            at = end;
        }
        let header = header.ok_or_else(|| e(TraceErrorKind::Corrupt { at: 8, what: "no header chunk".into() }))?;
        let salvage = match (cut, &footer) {
            (Some(reason), _) => Some(Salvage { kept_bytes: at, dropped_bytes: size - at, reason }),
            (None, None) => Some(Salvage { kept_bytes: size, dropped_bytes: 0, reason: stopped.unwrap_or(TraceErrorKind::NoEnd { size }) }),
            (None, Some(_)) => None,
        };
        let complete = footer.is_some();
        let footer = footer.unwrap_or_default();
        Ok((RankTrace { path: path.to_path_buf(), header, modules, footer, record_chunks, version, complete }, salvage))
    }

    /// Streams the call records of the thread that called `MPI_Init`
    /// (stream 0), one chunk in memory at a time.
    ///
    /// # Errors
    /// Each item is an error naming the file if a chunk fails its checksum
    /// or a record does not decode.
    pub fn records(&self) -> Result<Records, TraceError> {
        self.records_of(0)
    }

    /// The record streams present: 0 for the thread that called
    /// `MPI_Init`, then one per other thread that made MPI calls.
    pub fn streams(&self) -> Vec<u16> {
        let mut s: Vec<u16> = self.record_chunks.iter().map(|(_, h)| h.stream).collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// Streams the call records of one thread's `stream`.
    ///
    /// # Errors
    /// As [`RankTrace::records`].
    pub fn records_of(&self, stream: u16) -> Result<Records, TraceError> {
        let f = File::open(&self.path).map_err(|x| err(&self.path, x.into()))?;
        let chunks: Vec<(u64, ChunkHead)> = self.record_chunks.iter().filter(|(_, h)| h.stream == stream).copied().collect();
        // The end chunk counts every stream's records: checked when there is one.
        let single = self.record_chunks.iter().all(|(_, h)| h.stream == stream);
        let expect = (self.complete && single).then(|| self.footer.records.saturating_sub(self.footer.dropped_records));
        Ok(Records {
            expect,
            read: 0,
            path: self.path.clone(),
            file: BufReader::new(f),
            chunks: chunks.into_iter(),
            buf: Vec::new(),
            pos: 0,
            chunk_at: 0,
            decoder: codec::Decoder::new(self.version),
        })
    }

    /// Resolves a return address to a stable [`CallSite`] using the module table.
    /// Addresses outside every module keep their raw value under module `"?"`.
    pub fn call_site(&self, addr: u64) -> CallSite {
        call_site_in(&self.modules, addr)
    }
}

/// The stable [`CallSite`] of return address `addr` in the module table
/// `modules` (a trace's, or a live process's); addresses outside every
/// module keep their raw value under module `"?"`.
pub fn call_site_in(modules: &[Module], addr: u64) -> CallSite {
    match modules.iter().find(|m| m.start <= addr && addr < m.end) {
        Some(m) => CallSite { module: m.name().into_owned(), offset: addr - m.start + m.file_offset },
        None => CallSite { module: "?".into(), offset: addr },
    }
}

/// The address of `site` in the module table `modules`: the inverse of
/// [`call_site_in`] for another process of the same program, whose
/// modules were mapped elsewhere. `None` when no module of that file name
/// maps the site's file offset.
pub fn address_in(modules: &[Module], site: &CallSite) -> Option<u64> {
    modules.iter().find_map(|m| {
        let inside = site.offset >= m.file_offset && site.offset - m.file_offset < m.end - m.start;
        (inside && m.name() == site.module.as_str()).then(|| m.start + (site.offset - m.file_offset))
    })
}

/// What [`RankTrace::open_salvage`] recovered from a truncated file.
#[derive(Debug)]
pub struct Salvage {
    /// Bytes of whole chunks kept (from the start of the file).
    pub kept_bytes: u64,
    /// Bytes of the cut chunk dropped at the end.
    pub dropped_bytes: u64,
    /// Why the file is incomplete ([`TraceErrorKind::Truncated`],
    /// [`TraceErrorKind::Stopped`] or [`TraceErrorKind::NoEnd`]).
    pub reason: TraceErrorKind,
}

/// Streaming iterator over a rank file's call records.
#[derive(Debug)]
pub struct Records {
    path: PathBuf,
    file: BufReader<File>,
    chunks: std::vec::IntoIter<(u64, ChunkHead)>,
    buf: Vec<u8>,
    pos: usize,
    chunk_at: u64,
    decoder: codec::Decoder,
    /// Records the end chunk counts, checked when the last is read.
    expect: Option<u64>,
    read: u64,
}

impl Iterator for Records {
    type Item = Result<CallRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.next_item()? {
                Ok(None) => continue, // a repeat marker
                Ok(Some(rec)) => {
                    self.read += 1;
                    return Some(Ok(rec));
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl Records {
    /// The next record, repeat copy or repeat marker (`Ok(None)`).
    fn next_item(&mut self) -> Option<Result<Option<CallRecord>, TraceError>> {
        if let Some(rec) = self.decoder.next_copy() {
            return Some(Ok(Some(rec)));
        }
        while self.pos >= self.buf.len() {
            let Some((at, head)) = self.chunks.next() else {
                let written = self.expect.take()?;
                return (written != self.read).then(|| Err(err(&self.path, TraceErrorKind::RecordCount { read: self.read, written })));
            };
            self.chunk_at = at;
            self.buf.resize(head.len, 0);
            self.pos = 0;
            let read = self.file.seek(SeekFrom::Start(at)).and_then(|_| self.file.read_exact(&mut self.buf));
            if let Err(x) = read {
                self.buf.clear();
                return Some(Err(err(&self.path, x.into())));
            }
            if crc32fast::hash(&self.buf) != head.crc {
                self.buf.clear();
                let what = "checksum mismatch".to_string();
                return Some(Err(err(&self.path, TraceErrorKind::Corrupt { at, what })));
            }
        }
        match self.decoder.decode_item(&self.buf[self.pos..]) {
            Ok((rec, n)) => {
                self.pos += n;
                Some(Ok(rec))
            }
            Err(x) => {
                let at = self.chunk_at + self.pos as u64;
                self.pos = self.buf.len();
                let what = format!("record {} of the stream: {x}", self.read + 1);
                Some(Err(err(&self.path, TraceErrorKind::Corrupt { at, what })))
            }
        }
    }
}

/// Opens every rank file of a trace directory, in rank order.
///
/// # Errors
/// [`TraceError`] naming the first missing, truncated or corrupt file.
pub fn open_dir(dir: &Path) -> Result<(TraceMeta, Vec<RankTrace>), TraceError> {
    let meta = read_meta(dir)?;
    check_no_extra_ranks(dir, meta.ranks)?;
    let ranks = (0..meta.ranks).map(|r| RankTrace::open(&dir.join(rank_file_name(r)))).collect::<Result<_, _>>()?;
    Ok((meta, ranks))
}

/// A trace directory opened with [`open_dir_salvage`]: its metadata, every
/// rank's file, and what was lost from the incomplete ones, by rank.
pub type SalvagedDir = (TraceMeta, Vec<RankTrace>, Vec<(u32, Salvage)>);

/// [`open_dir`] that also takes incomplete rank files (a run killed, or
/// whose writes failed), each up to its last whole chunk
/// ([`RankTrace::open_salvage`]); returns what was lost, by rank.
///
/// # Errors
/// As [`open_dir`], but for incomplete files.
pub fn open_dir_salvage(dir: &Path) -> Result<SalvagedDir, TraceError> {
    let meta = read_meta(dir)?;
    check_no_extra_ranks(dir, meta.ranks)?;
    let (mut ranks, mut lost) = (Vec::new(), Vec::new());
    for r in 0..meta.ranks {
        let (t, s) = RankTrace::open_salvage(&dir.join(rank_file_name(r)))?;
        ranks.push(t);
        if let Some(s) = s {
            lost.push((r, s));
        }
    }
    Ok((meta, ranks, lost))
}

#[cfg(test)]
mod tests;

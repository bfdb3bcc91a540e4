//! The per-CPU OS-jitter trace written by `tracecollector` and read by
//! `simulator jitter`, plus its netgauge/LogGOPSim export.
//!
//! A trace is jitSim's tuple stream (jitSim §3.1): one record
//! ⟨`jitter_cycles`, `cycles_to_next_jitter`⟩ per detected jitter event, in
//! TSC cycles, preceded by a header that says where and how it was taken.
//! The timeline it describes is
//!
//! ```text
//! start ─ lead_cycles ─ jitter₀ ─ gap₀ ─ jitter₁ ─ gap₁ ─ … ─ jitterₙ₋₁ ─ gapₙ₋₁ ─ end
//! ```
//!
//! so `lead_cycles + Σ(jitterᵢ + gapᵢ) = duration_cycles` exactly; the reader
//! checks this. The last gap runs to the end of the measurement.
//!
//! # File format (version 1)
//! A line-oriented UTF-8 text file, chosen over a binary one because jitter
//! traces are small (an event per timer tick is ~1,000 lines per second, about
//! 15 bytes each), because users `head`, `grep` and `awk` them, and because a
//! truncated file is obvious. Lines starting with `#` and blank lines are
//! comments anywhere.
//!
//! ```text
//! jitter-trace 1                    (record lines below are tab-separated)
//! host node07
//! cpu 3
//! tsc_hz 2596146212.5
//! tsc_hz_kernel 2596146000          (optional)
//! tsc_hz_kernel_source kernel log   (optional)
//! t_min_cycles 26
//! threshold_cycles 234
//! timer_read rdtsc
//! start_unix_ns 1767225600000000000
//! requested_duration_s 60
//! kernel 6.8.0-45-generic
//! cosched_window_cycles 2596146     (optional, jitSim §3.5)
//! cosched_origin_cycles 1234567     (with the window)
//! records
//! 5210 2590377
//! 4377 2591012
//! end events=2 lead_cycles=1000 duration_cycles=5191976 dropped_events=0
//! ```
//!
//! Header keys may come in any order; unknown keys are ignored so later
//! versions can add some. Each record line is `<jitter_cycles>\t<cycles_to_next_jitter>`.
//! The `end` line is written when the measurement finishes, so a file without
//! one was cut short and is rejected.
//!
//! Co-scheduling (jitSim §3.5): when `cosched_window_cycles` is present,
//! high-priority windows start at `cosched_origin_cycles + k × cosched_window_cycles`
//! cycles after the trace start ([`JitterTrace::window_starts`]).
//!
//! # netgauge / LogGOPSim export
//! [`NetgaugeWriter`] writes one line `<start_ns>\t<duration_ns>` per event,
//! times from the trace start, with `#` comment lines, the noise-trace format
//! of netgauge's selfish-detour benchmark that LogGOPSim reads.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// First word of a jitter-trace file.
pub const MAGIC: &str = "jitter-trace";
/// Version written by [`JitterWriter`]; the reader accepts only this one.
pub const FORMAT_VERSION: u32 = 1;
/// File-name extension of a jitter trace, without the dot.
pub const EXTENSION: &str = "jitter";

/// File name of `cpu`'s trace on `host`: `<host>.cpu<cpu>.jitter`.
pub fn trace_file_name(host: &str, cpu: u32) -> String {
    format!("{host}.cpu{cpu}.{EXTENSION}")
}

/// Where and how a trace was taken; the header block of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JitterHeader {
    /// Host name of the node.
    pub host: String,
    /// Logical CPU number the sampling thread was pinned to.
    pub cpu: u32,
    /// TSC frequency in Hz, measured against `CLOCK_MONOTONIC_RAW`.
    pub tsc_hz: f64,
    /// The kernel's TSC frequency in Hz, when it could be found.
    pub tsc_hz_kernel: Option<f64>,
    /// Where [`tsc_hz_kernel`](Self::tsc_hz_kernel) came from (`sysfs tsc_freq_khz`, `kernel log`, `cpuinfo (no cpufreq driver)`).
    pub tsc_hz_kernel_source: Option<String>,
    /// Minimum delta between two successive counter reads, cycles.
    pub t_min_cycles: u64,
    /// Deltas strictly above this are jitter events, cycles.
    pub threshold_cycles: u64,
    /// Counter-read instruction sequence (`rdtsc`, `lfence;rdtsc`, `rdtscp`).
    pub timer_read: String,
    /// Wall-clock time of the trace start, nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// Duration the user asked for, seconds.
    pub requested_duration_s: f64,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Co-scheduler high-priority window length, cycles (jitSim §3.5).
    pub cosched_window_cycles: Option<u64>,
    /// Offset of the first window start from the trace start, cycles.
    pub cosched_origin_cycles: Option<u64>,
}

/// One jitSim tuple: a jitter event and the undisturbed cycles after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JitterRecord {
    /// Length of the jitter event, cycles.
    pub jitter_cycles: u64,
    /// Cycles from the end of this event to the start of the next (or to the
    /// end of the trace for the last record).
    pub cycles_to_next: u64,
}

/// A whole trace in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct JitterTrace {
    /// The header block.
    pub header: JitterHeader,
    /// Undisturbed cycles from the trace start to the first event.
    pub lead_cycles: u64,
    /// The tuples, in time order.
    pub records: Vec<JitterRecord>,
    /// Length of the measurement, cycles; equals `lead_cycles + Σ(jitter + gap)`.
    pub duration_cycles: u64,
    /// Events the collector could not store (its buffers were full); 0 in a good trace.
    pub dropped_events: u64,
}

/// Error reading a jitter trace; its message names the file and, for
/// content errors, the line.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {kind}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct JitterTraceError {
    /// The file or directory at fault.
    pub path: PathBuf,
    /// 1-based line number, for content errors.
    pub line: Option<usize>,
    /// What is wrong.
    pub kind: JitterTraceErrorKind,
}

/// What is wrong with a jitter trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JitterTraceErrorKind {
    /// The file could not be opened or read.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The first line is not `jitter-trace <version>`.
    #[error("not a jitter trace (first line should be `{MAGIC} {FORMAT_VERSION}`)")]
    BadMagic,
    /// The version is not one this reader knows.
    #[error("unsupported jitter-trace version {0} (this reader knows {FORMAT_VERSION})")]
    UnsupportedVersion(String),
    /// A required header key is missing.
    #[error("header has no `{0}`")]
    MissingKey(&'static str),
    /// A header key appears twice.
    #[error("header key `{0}` given twice")]
    DuplicateKey(String),
    /// A header or `end` value does not parse.
    #[error("bad `{key}` value `{value}`: {why}")]
    BadValue {
        /// The key.
        key: String,
        /// The text found.
        value: String,
        /// Why it was rejected.
        why: String,
    },
    /// A record line is not two unsigned integers.
    #[error("bad record `{0}`: expected `<jitter_cycles>\\t<cycles_to_next_jitter>`")]
    BadRecord(String),
    /// The file ends before its `end` line.
    #[error("truncated: no `end` line after {lines} lines (the collector was probably killed)")]
    Truncated {
        /// Lines read.
        lines: usize,
    },
    /// The `end` line disagrees with the records, or a line follows it.
    #[error("{0}")]
    Inconsistent(String),
    /// A directory holds no `*.jitter` file.
    #[error("no *.{EXTENSION} trace files in this directory")]
    NoTraces,
}

impl JitterTrace {
    /// Reads and checks a trace file.
    ///
    /// # Errors
    /// [`JitterTraceError`] naming `path` (and the line) on I/O failure, a
    /// bad magic or version, a missing or bad header value, a bad record, a
    /// missing `end` line (truncation), or records that do not sum to the
    /// recorded duration.
    pub fn read(path: &Path) -> Result<JitterTrace, JitterTraceError> {
        let file = File::open(path).map_err(|e| err(path, None, e.into()))?;
        parse(path, BufReader::new(file))
    }

    /// [`JitterTrace::read`] of the text `reader` yields, read from `path`
    /// (named in errors).
    ///
    /// # Errors
    /// As [`JitterTrace::read`].
    pub fn from_reader<R: BufRead>(path: &Path, reader: R) -> Result<JitterTrace, JitterTraceError> {
        parse(path, reader)
    }

    /// Writes the trace to `path`, creating or truncating it.
    ///
    /// # Errors
    /// The I/O error, or `InvalidInput` if the records do not sum to `duration_cycles`.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        let mut w = JitterWriter::new(io::BufWriter::new(File::create(path)?), &self.header)?;
        for (start, dur) in self.events() {
            w.event(start, dur)?;
        }
        w.finish(self.duration_cycles, self.dropped_events)?.flush()
    }

    /// Events as `(start, duration)` in cycles from the trace start, in order.
    pub fn events(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut at = self.lead_cycles;
        self.records.iter().map(move |r| {
            let start = at;
            at += r.jitter_cycles + r.cycles_to_next;
            (start, r.jitter_cycles)
        })
    }

    /// Sum of all jitter durations, cycles.
    pub fn total_jitter_cycles(&self) -> u64 {
        self.records.iter().map(|r| r.jitter_cycles).sum()
    }

    /// Fraction of the measured time lost to jitter, in \[0, 1\]; 0 for an empty trace.
    pub fn noise_fraction(&self) -> f64 {
        if self.duration_cycles == 0 {
            return 0.0;
        }
        self.total_jitter_cycles() as f64 / self.duration_cycles as f64
    }

    /// Start of each co-scheduler high-priority window, cycles from the trace
    /// start (jitSim §3.5); empty when the trace has no window marks.
    pub fn window_starts(&self) -> impl Iterator<Item = u64> + '_ {
        let (window, origin) = match (self.header.cosched_window_cycles, self.header.cosched_origin_cycles) {
            (Some(w), o) if w > 0 => (w, o.unwrap_or(0)),
            _ => (1, u64::MAX),
        };
        (0u64..).map(move |k| origin.saturating_add(k.saturating_mul(window))).take_while(|&t| t < self.duration_cycles)
    }

    /// Writes the netgauge/LogGOPSim export of this trace to `w`.
    ///
    /// # Errors
    /// The I/O error.
    pub fn write_netgauge<W: Write>(&self, w: W) -> io::Result<W> {
        let mut ng = NetgaugeWriter::new(w, &self.header)?;
        for (start, dur) in self.events() {
            ng.event(start, dur)?;
        }
        ng.finish(self.duration_cycles)
    }
}

/// Streams a trace from events as they arrive: the `records` tuples are
/// formed from consecutive events, and the `end` line is written by [`finish`](Self::finish).
pub struct JitterWriter<W: Write> {
    out: W,
    /// Event waiting for its successor to know its gap: (start, duration).
    pending: Option<(u64, u64)>,
    lead: Option<u64>,
    events: u64,
    line: String,
}

impl<W: Write> JitterWriter<W> {
    /// Writes the magic and `header` to `out`.
    ///
    /// # Errors
    /// The I/O error.
    pub fn new(mut out: W, header: &JitterHeader) -> io::Result<Self> {
        out.write_all(render_header(header).as_bytes())?;
        Ok(JitterWriter { out, pending: None, lead: None, events: 0, line: String::with_capacity(48) })
    }

    /// Adds an event starting `start` cycles after the trace start and lasting `duration` cycles.
    ///
    /// # Errors
    /// `InvalidInput` if it starts before the previous event ended; else the I/O error.
    pub fn event(&mut self, start: u64, duration: u64) -> io::Result<()> {
        match self.pending {
            None => self.lead = Some(start),
            Some((s, d)) => {
                let gap = start
                    .checked_sub(s + d)
                    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("event at {start} overlaps the one at {s}+{d}")))?;
                self.write_record(d, gap)?;
            }
        }
        self.pending = Some((start, duration));
        self.events += 1;
        Ok(())
    }

    fn write_record(&mut self, jitter: u64, gap: u64) -> io::Result<()> {
        self.line.clear();
        let _ = writeln!(self.line, "{jitter}\t{gap}");
        self.out.write_all(self.line.as_bytes())
    }

    /// Writes the last record and the `end` line; returns the sink (not flushed).
    ///
    /// # Errors
    /// `InvalidInput` if an event ends after `duration_cycles`; else the I/O error.
    pub fn finish(mut self, duration_cycles: u64, dropped_events: u64) -> io::Result<W> {
        let lead = match self.pending {
            Some((s, d)) => {
                let gap = duration_cycles.checked_sub(s + d).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, format!("event {s}+{d} ends after the trace ({duration_cycles})"))
                })?;
                self.write_record(d, gap)?;
                self.lead.unwrap_or(0)
            }
            None => duration_cycles,
        };
        writeln!(
            self.out,
            "end events={} lead_cycles={lead} duration_cycles={duration_cycles} dropped_events={dropped_events}",
            self.events
        )?;
        Ok(self.out)
    }
}

/// Streams the netgauge/LogGOPSim noise format: `<start_ns>\t<duration_ns>`
/// per event, times from the trace start, `#` comments. Each time is rounded
/// to the nearest ns on its own, so totals agree with the trace's to within
/// half a nanosecond per event.
pub struct NetgaugeWriter<W: Write> {
    out: W,
    ns_per_cycle: f64,
    total_ns: u64,
    events: u64,
}

impl<W: Write> NetgaugeWriter<W> {
    /// Writes the comment header describing `header` to `out`.
    ///
    /// # Errors
    /// The I/O error.
    pub fn new(mut out: W, header: &JitterHeader) -> io::Result<Self> {
        writeln!(out, "# netgauge/LogGOPSim noise trace written by tracecollector")?;
        writeln!(
            out,
            "# host {} cpu {} tsc_hz {} t_min_cycles {} threshold_cycles {}",
            header.host, header.cpu, header.tsc_hz, header.t_min_cycles, header.threshold_cycles
        )?;
        writeln!(out, "# start_unix_ns {} kernel {}", header.start_unix_ns, header.kernel)?;
        writeln!(out, "# <start_ns from trace start>\t<duration_ns>")?;
        Ok(NetgaugeWriter { out, ns_per_cycle: 1e9 / header.tsc_hz, total_ns: 0, events: 0 })
    }

    /// Adds an event; times in cycles from the trace start.
    ///
    /// # Errors
    /// The I/O error.
    pub fn event(&mut self, start_cycles: u64, duration_cycles: u64) -> io::Result<()> {
        let start = (start_cycles as f64 * self.ns_per_cycle).round() as u64;
        let dur = (duration_cycles as f64 * self.ns_per_cycle).round() as u64;
        self.total_ns += dur;
        self.events += 1;
        writeln!(self.out, "{start}\t{dur}")
    }

    /// Writes the closing comment (event count, total noise, duration) and returns the sink.
    ///
    /// # Errors
    /// The I/O error.
    pub fn finish(mut self, duration_cycles: u64) -> io::Result<W> {
        let duration_ns = (duration_cycles as f64 * self.ns_per_cycle).round() as u64;
        writeln!(self.out, "# events {} total_noise_ns {} duration_ns {duration_ns}", self.events, self.total_ns)?;
        Ok(self.out)
    }
}

/// The `*.jitter` files in a `tracecollector` output directory, ordered by
/// host name, then CPU number.
///
/// # Errors
/// [`JitterTraceError`] naming `dir` when it cannot be listed or holds no trace.
pub fn trace_files_in_dir(dir: &Path) -> Result<Vec<PathBuf>, JitterTraceError> {
    let entries = std::fs::read_dir(dir).map_err(|e| err(dir, None, e.into()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| err(dir, None, e.into()))?.path();
        if path.extension().is_some_and(|x| x == EXTENSION) && path.is_file() {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(err(dir, None, JitterTraceErrorKind::NoTraces));
    }
    let key = |p: &PathBuf| {
        let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        match stem.rsplit_once(".cpu").and_then(|(h, c)| Some((h.to_string(), c.parse::<u64>().ok()?))) {
            Some((host, cpu)) => (host, cpu, stem),
            None => (stem.clone(), u64::MAX, stem),
        }
    };
    files.sort_by_cached_key(key);
    Ok(files)
}

fn err(path: &Path, line: Option<usize>, kind: JitterTraceErrorKind) -> JitterTraceError {
    JitterTraceError { path: path.to_path_buf(), line, kind }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

fn render_header(h: &JitterHeader) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{MAGIC} {FORMAT_VERSION}");
    let _ = writeln!(s, "# OS-jitter trace (jitSim §3.1): records are <jitter_cycles>\\t<cycles_to_next_jitter>");
    let _ = writeln!(s, "host {}", one_line(&h.host));
    let _ = writeln!(s, "cpu {}", h.cpu);
    let _ = writeln!(s, "tsc_hz {}", h.tsc_hz);
    if let Some(k) = h.tsc_hz_kernel {
        let _ = writeln!(s, "tsc_hz_kernel {k}");
    }
    if let Some(src) = &h.tsc_hz_kernel_source {
        let _ = writeln!(s, "tsc_hz_kernel_source {}", one_line(src));
    }
    let _ = writeln!(s, "t_min_cycles {}", h.t_min_cycles);
    let _ = writeln!(s, "threshold_cycles {}", h.threshold_cycles);
    let _ = writeln!(s, "timer_read {}", one_line(&h.timer_read));
    let _ = writeln!(s, "start_unix_ns {}", h.start_unix_ns);
    let _ = writeln!(s, "requested_duration_s {}", h.requested_duration_s);
    let _ = writeln!(s, "kernel {}", one_line(&h.kernel));
    if let Some(w) = h.cosched_window_cycles {
        let _ = writeln!(s, "cosched_window_cycles {w}");
    }
    if let Some(o) = h.cosched_origin_cycles {
        let _ = writeln!(s, "cosched_origin_cycles {o}");
    }
    let _ = writeln!(s, "records");
    s
}

/// Header or `end` fields as parsed: key → (line, value).
struct Fields<'a> {
    path: &'a Path,
    /// Line blamed for a missing key.
    line: usize,
    map: std::collections::BTreeMap<String, (usize, String)>,
}

impl Fields<'_> {
    fn missing(&self, key: &'static str) -> JitterTraceError {
        err(self.path, Some(self.line), JitterTraceErrorKind::MissingKey(key))
    }
    fn text(&self, key: &'static str) -> Result<String, JitterTraceError> {
        self.map.get(key).map(|(_, v)| v.clone()).ok_or_else(|| self.missing(key))
    }
    fn opt<T: std::str::FromStr>(&self, key: &'static str) -> Result<Option<T>, JitterTraceError>
    where
        T::Err: std::fmt::Display,
    {
        let Some((n, v)) = self.map.get(key) else {
            return Ok(None);
        };
        let bad = |e: T::Err| JitterTraceErrorKind::BadValue { key: key.into(), value: v.clone(), why: e.to_string() };
        v.parse().map(Some).map_err(|e| err(self.path, Some(*n), bad(e)))
    }
    fn num<T: std::str::FromStr>(&self, key: &'static str) -> Result<T, JitterTraceError>
    where
        T::Err: std::fmt::Display,
    {
        self.opt(key)?.ok_or_else(|| self.missing(key))
    }
}

fn parse<R: BufRead>(path: &Path, reader: R) -> Result<JitterTrace, JitterTraceError> {
    use JitterTraceErrorKind as K;
    let mut lines = reader.lines().enumerate().map(|(i, l)| (i + 1, l));
    let mut last = 0;
    // The next line that is not blank or a comment, trimmed; `Truncated` at EOF.
    let mut next = |last: &mut usize| -> Result<Option<(usize, String)>, JitterTraceError> {
        for (n, l) in lines.by_ref() {
            let l = l.map_err(|e| err(path, Some(n), e.into()))?;
            *last = n;
            let t = l.trim();
            if !t.is_empty() && !t.starts_with('#') {
                return Ok(Some((n, t.to_string())));
            }
        }
        Ok(None)
    };
    let truncated = |last: usize| err(path, None, K::Truncated { lines: last });

    let (n, first) = next(&mut last)?.ok_or_else(|| err(path, Some(1), K::BadMagic))?;
    match first.split_once(' ') {
        Some((MAGIC, v)) if v.trim() == FORMAT_VERSION.to_string() => {}
        Some((MAGIC, v)) => return Err(err(path, Some(n), K::UnsupportedVersion(v.trim().into()))),
        _ => return Err(err(path, Some(n), K::BadMagic)),
    }

    let mut fields = Fields { path, line: 0, map: Default::default() };
    loop {
        let (n, l) = next(&mut last)?.ok_or_else(|| truncated(last))?;
        if l == "records" {
            fields.line = n;
            break;
        }
        let (k, v) = l.split_once(char::is_whitespace).unwrap_or((l.as_str(), ""));
        if fields.map.insert(k.to_string(), (n, v.trim().to_string())).is_some() {
            return Err(err(path, Some(n), K::DuplicateKey(k.into())));
        }
    }
    let header = JitterHeader {
        host: fields.text("host")?,
        cpu: fields.num("cpu")?,
        tsc_hz: fields.num("tsc_hz")?,
        tsc_hz_kernel: fields.opt("tsc_hz_kernel")?,
        tsc_hz_kernel_source: fields.opt("tsc_hz_kernel_source")?,
        t_min_cycles: fields.num("t_min_cycles")?,
        threshold_cycles: fields.num("threshold_cycles")?,
        timer_read: fields.text("timer_read")?,
        start_unix_ns: fields.num("start_unix_ns")?,
        requested_duration_s: fields.num("requested_duration_s")?,
        kernel: fields.text("kernel")?,
        cosched_window_cycles: fields.opt("cosched_window_cycles")?,
        cosched_origin_cycles: fields.opt("cosched_origin_cycles")?,
    };
    if !(header.tsc_hz.is_finite() && header.tsc_hz > 0.0) {
        let (n, v) = fields.map["tsc_hz"].clone();
        let why = "must be a positive frequency in Hz".to_string();
        return Err(err(path, Some(n), K::BadValue { key: "tsc_hz".into(), value: v, why }));
    }
    let checks = [
        ("tsc_hz_kernel", header.tsc_hz_kernel.is_none_or(|f| f.is_finite() && f > 0.0), "must be a positive frequency in Hz"),
        (
            "requested_duration_s",
            header.requested_duration_s.is_finite() && header.requested_duration_s >= 0.0,
            "must be a finite time >= 0 s",
        ),
    ];
    if let Some(&(key, _, why)) = checks.iter().find(|c| !c.1) {
        let (n, v) = fields.map[key].clone();
        return Err(err(path, Some(n), K::BadValue { key: key.into(), value: v, why: why.into() }));
    }

    let mut records = Vec::new();
    let (end_line, end) = loop {
        let (n, l) = next(&mut last)?.ok_or_else(|| truncated(last))?;
        if let Some(rest) = l.strip_prefix("end") {
            break (n, rest.to_string());
        }
        let mut it = l.split_whitespace().map(str::parse::<u64>);
        match (it.next(), it.next(), it.next()) {
            (Some(Ok(jitter_cycles)), Some(Ok(cycles_to_next)), None) => records.push(JitterRecord { jitter_cycles, cycles_to_next }),
            _ => return Err(err(path, Some(n), K::BadRecord(l))),
        }
    };
    let mut end_fields = Fields { path, line: end_line, map: Default::default() };
    for kv in end.split_whitespace() {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        end_fields.map.insert(k.to_string(), (end_line, v.to_string()));
    }
    let events: u64 = end_fields.num("events")?;
    let lead_cycles: u64 = end_fields.num("lead_cycles")?;
    let duration_cycles: u64 = end_fields.num("duration_cycles")?;
    let dropped_events: u64 = end_fields.opt("dropped_events")?.unwrap_or(0);
    let inconsistent = |what: String| err(path, Some(end_line), K::Inconsistent(what));
    if events != records.len() as u64 {
        let what = format!("`end` says {events} events but the file has {} records", records.len());
        return Err(inconsistent(what));
    }
    let sum = records.iter().try_fold(lead_cycles, |a, r| a.checked_add(r.jitter_cycles)?.checked_add(r.cycles_to_next));
    if sum != Some(duration_cycles) {
        let sum = sum.map_or("more than 2^64".to_string(), |s| s.to_string());
        return Err(inconsistent(format!("lead + records sum to {sum} cycles but `end` says duration_cycles={duration_cycles}")));
    }
    if let Some((n, l)) = next(&mut last)? {
        let what = format!("unexpected `{l}` after the `end` line");
        return Err(err(path, Some(n), K::Inconsistent(what)));
    }
    Ok(JitterTrace { header, lead_cycles, records, duration_cycles, dropped_events })
}

#[cfg(test)]
mod tests;

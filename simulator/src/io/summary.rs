//! A Darshan-like summary of a trace's MPI-IO (Carns et al., "24/7
//! characterization of petascale I/O workloads", Cluster 2009, §III: per
//! file counters, access-size histograms, sequential and consecutive
//! accesses): calls, bytes and time per kind, access sizes, access
//! pattern, per file and per call site.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::trace::record::{Op, Params};
use crate::trace::symbols::Symbolizer;
use crate::trace::{RankTrace, TraceError};

/// Upper bounds of the access-size buckets, bytes (Darshan's
/// `SIZE_READ_0_100` … `SIZE_READ_1G_PLUS`); the last bucket is open.
pub const SIZE_BUCKETS: [(u64, &str); 10] = [
    (100, "0-100"),
    (1 << 10, "100-1K"),
    (10 << 10, "1K-10K"),
    (100 << 10, "10K-100K"),
    (1 << 20, "100K-1M"),
    (4 << 20, "1M-4M"),
    (10 << 20, "4M-10M"),
    (100 << 20, "10M-100M"),
    (1 << 30, "100M-1G"),
    (u64::MAX, "1G+"),
];

/// Counters of a set of MPI-IO calls (a file, a call site, the whole run).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IoCounters {
    /// Read calls (independent, collective and nonblocking).
    pub reads: u64,
    /// Write calls (independent, collective and nonblocking).
    pub writes: u64,
    /// Of those, collective (`_all`) calls.
    pub collective: u64,
    /// Of those, nonblocking (`MPI_File_i*`) calls.
    pub nonblocking: u64,
    /// Open, close, seek, set_view, sync, set_size, preallocate, delete.
    pub metadata: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Time inside the calls (their recorded durations), seconds.
    pub time_s: f64,
    /// Reads per access-size bucket ([`SIZE_BUCKETS`]).
    pub read_sizes: [u64; 10],
    /// Writes per access-size bucket ([`SIZE_BUCKETS`]).
    pub write_sizes: [u64; 10],
    /// Accesses starting where the rank's previous access to the file ended.
    pub consecutive: u64,
    /// Accesses starting after that end (a forward stride).
    pub strided: u64,
    /// Accesses starting before that end (backwards or overlapping).
    pub backward: u64,
}

impl IoCounters {
    fn add(&mut self, op: Op, bytes: u64, time_s: f64) {
        self.time_s += time_s;
        let Some((write, collective, nonblocking)) = access_kind(op) else {
            self.metadata += 1;
            return;
        };
        let bucket = SIZE_BUCKETS.iter().position(|&(hi, _)| bytes < hi).unwrap_or(SIZE_BUCKETS.len() - 1);
        if write {
            self.writes += 1;
            self.bytes_written += bytes;
            self.write_sizes[bucket] += 1;
        } else {
            self.reads += 1;
            self.bytes_read += bytes;
            self.read_sizes[bucket] += 1;
        }
        self.collective += u64::from(collective);
        self.nonblocking += u64::from(nonblocking);
    }

    fn pattern(&mut self, offset: u64, previous_end: Option<u64>) {
        match previous_end {
            Some(end) if offset == end => self.consecutive += 1,
            Some(end) if offset > end => self.strided += 1,
            Some(_) => self.backward += 1,
            None => {}
        }
    }
}

/// (write, collective, nonblocking) of a data access; `None` for the
/// other MPI-IO calls.
fn access_kind(op: Op) -> Option<(bool, bool, bool)> {
    use Op::*;
    Some(match op {
        FileRead | FileReadAt => (false, false, false),
        FileReadAll | FileReadAtAll => (false, true, false),
        FileIread | FileIreadAt => (false, false, true),
        FileWrite | FileWriteAt => (true, false, false),
        FileWriteAll | FileWriteAtAll => (true, true, false),
        FileIwrite | FileIwriteAt => (true, false, true),
        _ => return None,
    })
}

/// One file's counters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileSummary {
    /// File id of the trace (ids are per open, shared by the ranks that
    /// opened the file together).
    pub file: u32,
    /// Ranks that accessed it.
    pub ranks: u32,
    /// Its calls.
    #[serde(flatten)]
    pub counters: IoCounters,
}

/// One call site's counters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SiteSummary {
    /// The call site (`file:line`, or `module+0xoffset`).
    pub site: String,
    /// The MPI function called there.
    pub call: &'static str,
    /// Its calls over all ranks.
    #[serde(flatten)]
    pub counters: IoCounters,
}

/// The MPI-IO summary of a trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IoSummary {
    /// Every MPI-IO call of every rank.
    pub total: IoCounters,
    /// Per file, by file id.
    pub files: Vec<FileSummary>,
    /// Per call site, most time first.
    pub sites: Vec<SiteSummary>,
}

/// Summarizes the MPI-IO calls of `ranks` (one trace directory's rank files).
///
/// # Errors
/// The first [`TraceError`] met while reading a rank file.
pub fn io_summary(ranks: &[RankTrace]) -> Result<IoSummary, TraceError> {
    let mut s = IoSummary::default();
    let mut files: BTreeMap<u32, (IoCounters, Vec<u32>)> = BTreeMap::new();
    let mut sites: HashMap<(String, Op), IoCounters> = HashMap::new();
    for t in ranks {
        let mut sym = Symbolizer::new();
        let mut names: HashMap<u64, String> = HashMap::new();
        let mut ends: HashMap<u32, u64> = HashMap::new();
        for rec in t.records()? {
            let rec = rec?;
            let (file, offset, bytes) = match rec.params {
                Params::Io { file, offset, bytes, .. } => (file, offset, bytes),
                Params::IoInfo { file, .. } => (file, 0, 0),
                _ => continue,
            };
            let time_s = rec.t_end_ns.saturating_sub(rec.t_start_ns) as f64 * 1e-9;
            let site = names.entry(rec.caller).or_insert_with(|| sym.name(t, rec.caller)).clone();
            let per_site = sites.entry((site, rec.op)).or_default();
            per_site.add(rec.op, bytes, time_s);
            s.total.add(rec.op, bytes, time_s);
            if rec.op == Op::FileDelete {
                continue;
            }
            let (per_file, members) = files.entry(file).or_default();
            per_file.add(rec.op, bytes, time_s);
            if members.last() != Some(&t.header.rank) {
                members.push(t.header.rank);
            }
            if access_kind(rec.op).is_some() {
                let end = ends.get(&file).copied();
                for c in [&mut s.total, per_file, per_site] {
                    c.pattern(offset, end);
                }
                ends.insert(file, offset.saturating_add(bytes));
            }
        }
    }
    s.files = files.into_iter().map(|(file, (counters, members))| FileSummary { file, ranks: members.len() as u32, counters }).collect();
    s.sites = sites.into_iter().map(|((site, op), counters)| SiteSummary { site, call: op.mpi_name(), counters }).collect();
    s.sites.sort_by(|a, b| b.counters.time_s.total_cmp(&a.counters.time_s).then_with(|| a.site.cmp(&b.site)));
    Ok(s)
}

fn row(name: &str, c: &IoCounters) -> String {
    format!(
        "{:<40} {:>7} {:>7} {:>6} {:>6} {:>6} {:>14} {:>14} {:>10.3} {:>7} {:>7} {:>7}\n",
        name,
        c.reads,
        c.writes,
        c.collective,
        c.nonblocking,
        c.metadata,
        c.bytes_read,
        c.bytes_written,
        c.time_s * 1e3,
        c.consecutive,
        c.strided,
        c.backward
    )
}

/// The summary as text: totals, per file, per call site, then the
/// access-size histograms.
pub fn format_summary(s: &IoSummary) -> String {
    let mut out = format!(
        "{:<40} {:>7} {:>7} {:>6} {:>6} {:>6} {:>14} {:>14} {:>10} {:>7} {:>7} {:>7}\n",
        "", "reads", "writes", "coll", "nonbl", "meta", "bytes_read", "bytes_written", "time_ms", "consec", "strided", "back"
    );
    out += &row("total", &s.total);
    for f in &s.files {
        out += &row(&format!("file {} ({} ranks)", f.file, f.ranks), &f.counters);
    }
    for site in &s.sites {
        out += &row(&format!("{} {}", site.call, site.site), &site.counters);
    }
    out += "\naccess size     reads    writes\n";
    for (i, (_, label)) in SIZE_BUCKETS.iter().enumerate() {
        let (r, w) = (s.total.read_sizes[i], s.total.write_sizes[i]);
        if r + w > 0 {
            out += &format!("{label:<12} {r:>8} {w:>9}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_fall_in_darshan_buckets_and_patterns_follow_offsets() {
        let mut c = IoCounters::default();
        c.add(Op::FileWriteAtAll, 100, 0.5);
        c.add(Op::FileReadAt, 99, 0.25);
        c.add(Op::FileIwrite, 2 << 30, 0.0);
        c.add(Op::FileOpen, 0, 0.25);
        assert_eq!((c.reads, c.writes, c.collective, c.nonblocking, c.metadata), (1, 2, 1, 1, 1));
        assert_eq!((c.bytes_read, c.bytes_written), (99, 100 + (2 << 30)));
        assert_eq!(c.time_s, 1.0);
        assert_eq!(c.read_sizes[0], 1, "99 B is in 0-100");
        assert_eq!(c.write_sizes[1], 1, "100 B is in 100-1K");
        assert_eq!(c.write_sizes[9], 1, "2 GiB is in 1G+");
        for (offset, end) in [(10, Some(10)), (30, Some(20)), (0, Some(20)), (5, None)] {
            c.pattern(offset, end);
        }
        assert_eq!((c.consecutive, c.strided, c.backward), (1, 1, 1));
        let text = format_summary(&IoSummary { total: c, ..IoSummary::default() });
        assert!(text.contains("1G+"), "{text}");
        assert!(!text.contains("4M-10M"), "empty buckets are left out: {text}");
    }
}

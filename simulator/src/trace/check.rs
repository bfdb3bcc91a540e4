//! `simulator trace check`: the health and size of each rank file of a
//! trace directory. A file cut short by a crash (SIGKILL, a node failure)
//! is read up to its last whole chunk ([`RankTrace::open_salvage`]) and the
//! report says what was lost; replay refuses such a file.

use std::path::Path;

use serde::Serialize;

use super::{rank_file_name, read_meta, RankTrace, TraceError};

/// What `check` found in one rank file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankCheck {
    /// World rank.
    pub rank: u32,
    /// File size, bytes.
    pub bytes: u64,
    /// Records readable, over every thread's stream.
    pub records: u64,
    /// Record streams (threads that made MPI calls).
    pub streams: usize,
    /// `bytes / records` (whole file: header, module table and footer included).
    pub bytes_per_record: f64,
    /// `None` for a complete file; else why it is incomplete (one line).
    pub incomplete: Option<String>,
    /// Bytes of a cut chunk at the end that could not be read.
    pub dropped_bytes: u64,
    /// A record that does not decode (the count stops before it).
    pub error: Option<String>,
}

/// Checks every rank file of the trace directory `dir`.
///
/// # Errors
/// [`TraceError`] naming the file when `meta.json` or a rank file cannot
/// be opened at all (missing, not a trace, a corrupt header); damage
/// after the header is reported in the [`RankCheck`]s instead.
pub fn check_dir(dir: &Path) -> Result<Vec<RankCheck>, TraceError> {
    let meta = read_meta(dir)?;
    super::check_no_extra_ranks(dir, meta.ranks)?;
    (0..meta.ranks).map(|r| check_file(&dir.join(rank_file_name(r)), r)).collect()
}

#[cfg(test)]
pub(crate) fn check_file_for_test(path: &Path) -> RankCheck {
    check_file(path, 0).unwrap()
}

fn check_file(path: &Path, rank: u32) -> Result<RankCheck, TraceError> {
    let (t, salvage) = RankTrace::open_salvage(path)?;
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let (mut records, mut error) = (0u64, None);
    let streams = t.streams();
    'streams: for &s in &streams {
        for rec in t.records_of(s)? {
            match rec {
                Ok(_) => records += 1,
                Err(e) => {
                    error = Some(e.to_string());
                    break 'streams;
                }
            }
        }
    }
    let written = t.footer.records.saturating_sub(t.footer.dropped_records);
    if error.is_none() && salvage.is_none() && records != written {
        error = Some(super::TraceErrorKind::RecordCount { read: records, written }.to_string());
    }
    Ok(RankCheck {
        rank,
        bytes,
        records,
        streams: streams.len(),
        bytes_per_record: bytes as f64 / records.max(1) as f64,
        incomplete: salvage.as_ref().map(|s| s.reason.to_string()),
        dropped_bytes: salvage.map_or(0, |s| s.dropped_bytes),
        error,
    })
}

/// The report as text: one line per rank, then the totals.
pub fn format(checks: &[RankCheck]) -> String {
    let mut s = String::new();
    for c in checks {
        let state = match (&c.incomplete, &c.error) {
            (None, None) => "complete".to_string(),
            (Some(why), _) => format!("INCOMPLETE ({why}; {} bytes dropped)", c.dropped_bytes),
            (None, Some(e)) => format!("UNREADABLE RECORD ({e})"),
        };
        s += &format!(
            "rank {}: {state}; {} records in {} stream(s), {} bytes, {:.2} bytes/record\n",
            c.rank, c.records, c.streams, c.bytes, c.bytes_per_record
        );
    }
    let (records, bytes) = checks.iter().fold((0, 0), |(r, b), c| (r + c.records, b + c.bytes));
    s += &format!("total: {records} records, {bytes} bytes, {:.2} bytes/record\n", bytes as f64 / records.max(1) as f64);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::{header, send as record};
    use crate::trace::{RankWriter, TimingSource, TraceMeta, META_FILE};

    fn write_dir(dir: &Path, ranks: u32, records: u64) {
        let meta = TraceMeta {
            format_version: 1,
            ranks,
            mpi_library: String::new(),
            timing_source: TimingSource::ClockGettime,
            tsc_hz: None,
            command: vec![],
            mode: "trace".into(),
        };
        std::fs::write(dir.join(META_FILE), serde_json::to_vec(&meta).unwrap()).unwrap();
        for r in 0..ranks {
            let f = std::fs::File::create(dir.join(rank_file_name(r))).unwrap();
            let mut w = RankWriter::create(f, &header(r)).unwrap();
            for i in 0..records {
                w.push(&record(i)).unwrap();
            }
            w.finish(&[]).unwrap();
        }
    }

    #[test]
    fn a_cut_file_is_counted_up_to_its_last_whole_chunk() {
        let tmp = tempfile::tempdir().unwrap();
        write_dir(tmp.path(), 2, 20_000);
        let whole = check_dir(tmp.path()).unwrap();
        assert!(whole.iter().all(|c| c.incomplete.is_none() && c.error.is_none() && c.records == 20_000), "{whole:?}");
        // Cut rank 1 in the middle of its second record chunk.
        let path = tmp.path().join(rank_file_name(1));
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(70_000.min(len - 10)).unwrap();
        let cut = check_dir(tmp.path()).unwrap();
        assert_eq!(cut[0], whole[0]);
        let c = &cut[1];
        assert!(c.incomplete.as_deref().is_some_and(|w| w.contains("truncated")), "{c:?}");
        assert!(c.records > 0 && c.records < 20_000 && c.dropped_bytes > 0, "{c:?}");
        let text = format(&cut);
        assert!(text.contains("rank 1: INCOMPLETE") && text.contains("rank 0: complete"), "{text}");
    }
}

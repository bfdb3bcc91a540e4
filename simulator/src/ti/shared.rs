//! A single-file TI trace (every rank's lines in one file, as SimGrid's
//! replay accepts): the file is mapped into memory and indexed once, in
//! one pass, by runs of consecutive lines of the same rank; each rank's
//! stream then reads only its own runs. Reading is O(file) in all, not
//! O(ranks × file) as when every rank scans the whole file.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use super::parse::{self, Fields};
use super::TiError;

/// Consecutive lines of one rank: bytes `start .. start + len` of the
/// file (each line with its newline), the first of them line
/// `first_line` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: u64,
    len: u32,
    first_line: u32,
}

/// A single-file TI trace, mapped, with each rank's runs of lines.
pub(super) struct SharedFile {
    map: memmap2::Mmap,
    /// Per rank, its runs in file order.
    runs: Vec<Vec<Run>>,
}

/// What [`index`] found at `path`.
pub(super) enum Layout {
    /// The file's first action line is not `<rank> <verb> …`: a trace list.
    List,
    /// A single file of every rank's lines; the rank count is the
    /// number of runs lists (one more than the largest rank).
    Single(Arc<SharedFile>),
}

impl SharedFile {
    /// Number of ranks.
    pub(super) fn ranks(&self) -> u32 {
        self.runs.len() as u32
    }
}

/// Whether `line`'s first field is a comment.
fn comment_or_empty(line: &[u8]) -> bool {
    Fields::new(line).next().is_none_or(|w| w.starts_with(b"#"))
}

/// Maps `path` and, when its first action line is `<rank> <verb> …`,
/// indexes it: blank and comment lines belong to no rank, a line whose
/// first field is not a rank to rank 0 (whose parser then names it).
///
/// # Errors
/// [`TiError`] naming `path` when it cannot be read or mapped, or when a
/// rank or line number does not fit in 32 bits.
pub(super) fn index(path: &Path) -> Result<Layout, TiError> {
    let err = |line: Option<usize>, what: String| TiError { path: path.to_path_buf(), line, what };
    let file = File::open(path).map_err(|e| err(None, e.to_string()))?;
    if file.metadata().map_err(|e| err(None, e.to_string()))?.len() == 0 {
        return Ok(Layout::List);
    }
    // SAFETY: the mapping is read-only; a trace changed by another process
    // while it is replayed gives wrong lines (as reading it would), and
    // the parser checks every byte it reads.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| err(None, e.to_string()))?;
    let bytes: &[u8] = &map;
    let mut runs: Vec<Vec<Run>> = Vec::new();
    let (mut pos, mut line_no, mut seen_action) = (0usize, 0usize, false);
    // The rank whose run the previous line extended.
    let mut last: Option<u32> = None;
    while pos < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i + 1);
        let line = &bytes[pos..end];
        line_no += 1;
        if comment_or_empty(line) {
            last = None;
            pos = end;
            continue;
        }
        let mut f = Fields::new(line);
        let rank = f.next().and_then(parse::uint);
        if !seen_action {
            seen_action = true;
            let verb = f.next().is_some_and(|v| v.iter().all(|b| b.is_ascii_alphabetic() || *b == b'_'));
            if rank.is_none() || !verb {
                return Ok(Layout::List);
            }
        }
        let r = rank.unwrap_or(0);
        let first_line = u32::try_from(line_no).map_err(|_| err(Some(line_no), "more than 2^32 lines".into()))?;
        if runs.len() <= r as usize {
            let n = (r as usize).checked_add(1).ok_or_else(|| err(Some(line_no), format!("rank {r} is too large")))?;
            runs.resize_with(n, Vec::new);
        }
        let own = &mut runs[r as usize];
        match own.last_mut() {
            Some(run)
                if last == Some(r) && run.start + run.len as u64 == pos as u64 && run.len as usize + (end - pos) <= u32::MAX as usize =>
            {
                run.len += (end - pos) as u32
            }
            _ => own.push(Run { start: pos as u64, len: (end - pos) as u32, first_line }),
        }
        last = Some(r);
        pos = end;
    }
    if !seen_action {
        return Ok(Layout::List);
    }
    Ok(Layout::Single(Arc::new(SharedFile { map, runs })))
}

/// One rank's lines of a [`SharedFile`], in file order.
pub(super) struct SharedLines {
    file: Arc<SharedFile>,
    rank: usize,
    /// The run being read, and the next byte within it.
    run: usize,
    at: u64,
    /// The 1-based file line number of the line last returned.
    pub(super) line: usize,
}

impl SharedLines {
    /// Rank `rank`'s lines of `file` (none when the file has no such rank).
    pub(super) fn new(file: Arc<SharedFile>, rank: u32) -> SharedLines {
        let (at, line) = file.runs.get(rank as usize).and_then(|r| r.first()).map_or((0, 0), |r| (r.start, r.first_line as usize - 1));
        SharedLines { file, rank: rank as usize, run: 0, at, line }
    }

    /// The next line, without its `\n`; `None` at the end.
    pub(super) fn next_line(&mut self) -> Option<&[u8]> {
        let runs = self.file.runs.get(self.rank)?;
        let mut run = runs.get(self.run)?;
        if self.at >= run.start + run.len as u64 {
            self.run += 1;
            run = runs.get(self.run)?;
            self.at = run.start;
            self.line = run.first_line as usize - 1;
        }
        let end = (run.start + run.len as u64) as usize;
        let bytes = &self.file.map[self.at as usize..end];
        let n = memchr::memchr(b'\n', bytes).map_or(bytes.len(), |i| i + 1);
        self.at += n as u64;
        self.line += 1;
        let l = &bytes[..n];
        Some(l.strip_suffix(b"\n").unwrap_or(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(file: &Arc<SharedFile>, rank: u32) -> Vec<(usize, String)> {
        let mut s = SharedLines::new(file.clone(), rank);
        let mut out = Vec::new();
        while let Some(l) = s.next_line().map(|l| String::from_utf8_lossy(l).into_owned()) {
            out.push((s.line, l));
        }
        out
    }

    #[test]
    fn each_rank_reads_its_own_lines_with_their_file_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("all.txt");
        std::fs::write(&p, "# a comment\n0 init\n1 init\n1 send 0 1 8\n\n0 recv 1 1 8\n2 init\n0 finalize\n1 finalize\n2 finalize")
            .unwrap();
        let Layout::Single(f) = index(&p).unwrap() else { panic!("not a single file") };
        assert_eq!(f.ranks(), 3);
        assert_eq!(lines_of(&f, 0), [(2, "0 init".into()), (6, "0 recv 1 1 8".into()), (8, "0 finalize".into())]);
        assert_eq!(lines_of(&f, 1), [(3, "1 init".into()), (4, "1 send 0 1 8".into()), (9, "1 finalize".into())]);
        // The last line has no newline.
        assert_eq!(lines_of(&f, 2), [(7, "2 init".into()), (10, "2 finalize".into())]);
        // Rank 1's two consecutive lines are one run.
        assert_eq!(f.runs[1].len(), 2);
        assert!(lines_of(&f, 3).is_empty());
    }

    #[test]
    fn a_trace_list_or_an_empty_file_is_not_a_single_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("list.txt");
        std::fs::write(&p, "# list\nrank-0.txt\nrank-1.txt\n").unwrap();
        assert!(matches!(index(&p).unwrap(), Layout::List));
        std::fs::write(&p, "").unwrap();
        assert!(matches!(index(&p).unwrap(), Layout::List));
        let e = index(&dir.path().join("none.txt")).err().unwrap().to_string();
        assert!(e.contains("none.txt"), "{e}");
    }
}

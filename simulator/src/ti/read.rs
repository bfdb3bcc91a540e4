//! Reading a TI action file: large sequential reads split into lines on
//! bytes, and the parse of a batch of lines into actions.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::action::Action;

use super::parse::RankParser;
use super::shared::{SharedFile, SharedLines};
use super::TiError;

/// A rank file read sequentially: kept open, or (`file` = `None`)
/// reopened at `offset` for each read and closed again.
pub(super) struct RankFile {
    path: PathBuf,
    file: Option<File>,
    offset: u64,
}

impl RankFile {
    /// Opens `path`; with `reopen`, closes it again until each read.
    pub(super) fn open(path: &Path, reopen: bool) -> std::io::Result<RankFile> {
        let f = File::open(path)?;
        Ok(RankFile { path: path.into(), file: (!reopen).then_some(f), offset: 0 })
    }
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

/// The lines of a byte source, read `capacity` bytes at a time (the
/// buffer grows only for a longer line).
pub(super) struct Lines<R> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// Lines returned so far (the last one's 1-based number).
    pub(super) line: usize,
}

impl<R: Read> Lines<R> {
    pub(super) fn new(src: R, capacity: usize) -> Self {
        Lines { src, buf: vec![0; capacity.max(16)], start: 0, end: 0, eof: false, line: 0 }
    }

    /// The next line, without its `\n` (a last line without one counts);
    /// `None` at the end.
    ///
    /// # Errors
    /// The source's read error.
    pub(super) fn next_line(&mut self) -> std::io::Result<Option<&[u8]>> {
        let (s, e) = loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let s = self.start;
                self.start += i + 1;
                break (s, s + i);
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let s = self.start;
                self.start = self.end;
                break (s, self.end);
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.line += 1;
        Ok(Some(&self.buf[s..e]))
    }
}

/// Where a rank's lines come from.
enum Source {
    /// The rank's own file.
    Own(Lines<RankFile>),
    /// Its lines of a single file of every rank's lines.
    Shared(SharedLines),
}

impl Source {
    /// The next line, without its `\n`; `None` at the end.
    fn next_line(&mut self) -> std::io::Result<Option<&[u8]>> {
        match self {
            Source::Own(lines) => lines.next_line(),
            Source::Shared(lines) => Ok(lines.next_line()),
        }
    }

    /// The 1-based line number, in its file, of the line last returned.
    fn line(&self) -> usize {
        match self {
            Source::Own(l) => l.line,
            Source::Shared(l) => l.line,
        }
    }
}

/// One rank's action file and parsing state.
pub(super) struct RankSource {
    pub(super) path: PathBuf,
    lines: Source,
    parser: RankParser,
}

impl RankSource {
    /// Opens `path` for rank `rank` of `ranks`, reading `buffer` bytes at
    /// a time; with `reopen`, the file is closed between reads.
    ///
    /// # Errors
    /// [`TiError`] naming `path` when it cannot be opened.
    pub(super) fn open(path: &Path, rank: u32, ranks: u32, (buffer, reopen): (usize, bool)) -> Result<RankSource, TiError> {
        let file = RankFile::open(path, reopen).map_err(|e| TiError { path: path.into(), line: None, what: e.to_string() })?;
        Ok(RankSource { path: path.into(), lines: Source::Own(Lines::new(file, buffer)), parser: RankParser::new(rank, ranks, false) })
    }

    /// Rank `rank`'s lines of the single-file trace `file` read from `path`.
    pub(super) fn shared(path: &Path, file: Arc<SharedFile>, rank: u32) -> RankSource {
        let ranks = file.ranks();
        RankSource { path: path.into(), lines: Source::Shared(SharedLines::new(file, rank)), parser: RankParser::new(rank, ranks, true) }
    }

    /// Parses lines until `out` holds at least `max` actions or the file
    /// ends; `Ok(true)` at the end of the file.
    ///
    /// # Errors
    /// [`TiError`] naming the file and line of a bad action (the actions of
    /// the lines before it are in `out`), or a read error.
    pub(super) fn fill(&mut self, out: &mut Vec<Action>, max: usize) -> Result<bool, TiError> {
        while out.len() < max {
            // A read error is on the line after the last one returned.
            let line_no = self.lines.line() + 1;
            let line = match self.lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => return Ok(true),
                Err(e) => return Err(TiError { path: self.path.clone(), line: Some(line_no), what: e.to_string() }),
            };
            if let Err(what) = self.parser.line(line, out) {
                return Err(TiError { path: self.path.clone(), line: Some(self.lines.line()), what });
            }
        }
        Ok(false)
    }
}

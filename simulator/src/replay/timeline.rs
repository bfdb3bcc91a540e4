//! A Chrome/Perfetto timeline of the simulated run, in the Trace Event
//! Format (`{"traceEvents":[…]}` of complete `"ph":"X"` events; open it in
//! <https://ui.perfetto.dev> or `chrome://tracing`). One track per rank
//! (`pid` 0, `tid` = rank), and one per file-system server (`pid` 1, `tid`
//! = server) when MPI-IO runs on a modelled file system; times in
//! microseconds of simulated time.
//! Spans are streamed to the file as the replay goes, so memory does not
//! grow with the trace.
//!
//! [`Timeline::marks`] keeps no file: only, per rank, when the first and
//! the last span of one name ended (what `simulator validate` needs to
//! predict a program's own timed region).

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A timeline being written.
pub struct Timeline {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    first: bool,
    err: Option<io::Error>,
    marks: Option<(String, Marks)>,
}

/// Per rank, when the first and the last call of the name given to
/// [`Timeline::marks`] ended, seconds of simulated time; filled as the
/// replay goes, read after it. Each MPI call is one span; back-to-back
/// calls of that name with no other span between them count as one.
#[derive(Debug, Clone, Default)]
pub struct Marks(Rc<RefCell<Vec<Option<MarkEnds>>>>);

#[derive(Debug, Clone, Copy)]
struct MarkEnds {
    first_end_s: f64,
    last_end_s: f64,
    /// Still in the first call (no span of another name since).
    first_open: bool,
}

impl Marks {
    /// `(first_end_s, last_end_s)` of `rank`, if it made such a call.
    pub fn ends(&self, rank: usize) -> Option<(f64, f64)> {
        self.0.borrow().get(rank).copied().flatten().map(|m| (m.first_end_s, m.last_end_s))
    }

    /// Records a span on `rank` ending at `end_s`, of the marked name or not.
    fn note(&self, rank: usize, marked: bool, end_s: f64) {
        let mut v = self.0.borrow_mut();
        if v.len() <= rank {
            v.resize(rank + 1, None);
        }
        v[rank] = match (v[rank], marked) {
            (None, false) => None,
            (None, true) => Some(MarkEnds { first_end_s: end_s, last_end_s: end_s, first_open: true }),
            (Some(m), false) => Some(MarkEnds { first_open: false, ..m }),
            (Some(m), true) => Some(MarkEnds { first_end_s: if m.first_open { end_s } else { m.first_end_s }, last_end_s: end_s, ..m }),
        };
    }
}

impl Timeline {
    /// Creates (truncates) `path` and writes the header.
    ///
    /// # Errors
    /// The I/O error, with `path` in its message.
    pub fn create(path: &Path) -> io::Result<Timeline> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let mut out = BufWriter::new(File::create(path).map_err(named)?);
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[").map_err(named)?;
        Ok(Timeline { path: path.into(), out: Some(out), first: true, err: None, marks: None })
    }

    /// A timeline that writes nothing and keeps, per rank, the ends of the
    /// first and the last span named `name` (e.g. `MPI_Barrier`), read
    /// from the returned [`Marks`] once the replay is over. Spans of zero
    /// length count too.
    pub fn marks(name: &str) -> (Timeline, Marks) {
        let m = Marks::default();
        (Timeline { path: PathBuf::new(), out: None, first: true, err: None, marks: Some((name.to_string(), m.clone())) }, m)
    }

    /// Records that `rank` spent `[start_s, end_s]` (seconds) in `name`.
    /// Empty spans are skipped. The first I/O error is kept for [`Timeline::finish`].
    pub fn span(&mut self, rank: usize, name: &str, start_s: f64, end_s: f64) {
        if let Some((n, m)) = &self.marks {
            m.note(rank, n == name, end_s);
        }
        self.write(0, rank, name, start_s, end_s);
    }

    /// Records that file-system server `server` was busy with `what`
    /// (`link`, `disk write`, ...) during `[start_s, end_s]` (seconds).
    pub fn server_span(&mut self, server: usize, what: &str, start_s: f64, end_s: f64) {
        self.write(1, server, what, start_s, end_s);
    }

    /// Whether spans go to a file (not only to [`Marks`]).
    pub fn writes(&self) -> bool {
        self.out.is_some()
    }

    fn write(&mut self, pid: u32, tid: usize, name: &str, start_s: f64, end_s: f64) {
        let Some(out) = self.out.as_mut() else { return };
        if self.err.is_some() || end_s <= start_s {
            return;
        }
        let sep = if self.first { "" } else { "," };
        self.first = false;
        let r = write!(
            out,
            "{sep}\n{{\"name\":\"{name}\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{:.6},\"dur\":{:.6}}}",
            start_s * 1e6,
            (end_s - start_s) * 1e6
        );
        if let Err(e) = r {
            self.err = Some(e);
        }
    }

    /// Closes the JSON and flushes.
    ///
    /// # Errors
    /// The first I/O error met, with the file's path in its message.
    pub fn finish(mut self) -> io::Result<()> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", self.path.display()));
        if let Some(e) = self.err.take() {
            return Err(named(e));
        }
        let Some(mut out) = self.out.take() else { return Ok(()) };
        out.write_all(b"\n]}\n").and_then(|()| out.flush()).map_err(named)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_trace_event_json() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        let mut t = Timeline::create(&p).unwrap();
        t.span(0, "compute", 0.0, 1e-3);
        t.span(1, "MPI_Recv", 0.5e-3, 0.5e-3);
        t.span(1, "MPI_Recv", 0.0, 2e-6);
        t.server_span(3, "disk write", 1e-3, 2e-3);
        t.finish().unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(ev.len(), 3);
        assert_eq!((ev[0]["dur"].as_f64(), ev[1]["tid"].as_u64()), (Some(1000.0), Some(1)));
        assert_eq!((ev[2]["pid"].as_u64(), ev[2]["tid"].as_u64(), ev[2]["name"].as_str()), (Some(1), Some(3), Some("disk write")));
        // Marks: the first and last end of one name per rank, zero-length spans included.
        // A barrier of two rounds, compute, a one-round barrier of zero length.
        let (mut t, m) = Timeline::marks("MPI_Barrier");
        t.span(1, "compute", 0.0, 0.5e-3);
        t.span(1, "MPI_Barrier", 0.5e-3, 0.8e-3);
        t.span(1, "MPI_Barrier", 0.8e-3, 1e-3);
        t.span(1, "compute", 1e-3, 5e-3);
        t.span(1, "MPI_Barrier", 5e-3, 5e-3);
        t.span(0, "MPI_Barrier", 0.0, 2e-3);
        t.span(2, "compute", 0.0, 2e-3);
        t.finish().unwrap();
        assert_eq!((m.ends(0), m.ends(1), m.ends(2)), (Some((2e-3, 2e-3)), Some((1e-3, 5e-3)), None));
    }
}

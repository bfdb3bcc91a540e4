//! A Chrome/Perfetto timeline of the simulated run, in the Trace Event
//! Format (`{"traceEvents":[…]}` of complete `"ph":"X"` events; open it in
//! <https://ui.perfetto.dev> or `chrome://tracing`). One track per rank
//! (`pid` 0, `tid` = rank); times in microseconds of simulated time.
//! Spans are streamed to the file as the replay goes, so memory does not
//! grow with the trace.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A timeline being written.
pub struct Timeline {
    path: PathBuf,
    out: BufWriter<File>,
    first: bool,
    err: Option<io::Error>,
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
        Ok(Timeline { path: path.into(), out, first: true, err: None })
    }

    /// Records that `rank` spent `[start_s, end_s]` (seconds) in `name`.
    /// Empty spans are skipped. The first I/O error is kept for [`Timeline::finish`].
    pub fn span(&mut self, rank: usize, name: &str, start_s: f64, end_s: f64) {
        if self.err.is_some() || end_s <= start_s {
            return;
        }
        let sep = if self.first { "" } else { "," };
        self.first = false;
        let r = write!(
            self.out,
            "{sep}\n{{\"name\":\"{name}\",\"ph\":\"X\",\"pid\":0,\"tid\":{rank},\"ts\":{:.6},\"dur\":{:.6}}}",
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
        self.out.write_all(b"\n]}\n").and_then(|()| self.out.flush()).map_err(named)
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
        t.finish().unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!((ev[0]["dur"].as_f64(), ev[1]["tid"].as_u64()), (Some(1000.0), Some(1)));
    }
}

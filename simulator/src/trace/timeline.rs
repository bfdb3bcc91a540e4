//! A recorded run as a Chrome/Perfetto timeline (the JSON "trace event
//! format": open it in `ui.perfetto.dev` or `chrome://tracing`).
//!
//! One process per rank (`pid` = rank), one track per recorded thread
//! stream (`tid`), a complete event (`"ph": "X"`) per MPI call and per
//! compute block, in microseconds since the rank's trace epoch. Call
//! events carry their parameters as `args`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::json;

use super::record::Params;
use super::{RankTrace, TraceError};

/// Error writing a timeline.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// Reading the trace failed.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// Writing the output failed.
    #[error("{path}: {source}")]
    Write {
        /// The output file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn args(p: &Params) -> serde_json::Value {
    match p {
        Params::P2p { peer, tag, bytes, comm, .. } => json!({"peer": peer, "tag": tag, "bytes": bytes, "comm": comm}),
        Params::Sendrecv { dst, src, send_bytes, recv_bytes, .. } => {
            json!({"dst": dst, "src": src, "send_bytes": send_bytes, "recv_bytes": recv_bytes})
        }
        Params::Coll { root, bytes, comm } | Params::Icoll { root, bytes, comm, .. } => {
            json!({"root": root, "bytes": bytes, "comm": comm})
        }
        Params::Io { file, offset, bytes, .. } => json!({"file": file, "offset": offset, "bytes": bytes}),
        Params::Mrecv { bytes, .. } => json!({"bytes": bytes}),
        Params::RequestSome { requests, completed } => json!({"requests": requests.len(), "completed": completed.len()}),
        Params::Waitall { requests } | Params::RequestSet { requests, .. } => json!({"requests": requests.len()}),
        Params::Probe { peer, bytes, found, .. } => json!({"peer": peer, "bytes": bytes, "found": found}),
        Params::CommCreate { comm, members, .. } => json!({"comm": comm, "members": members.len()}),
        _ => json!({}),
    }
}

/// Writes the timeline of `ranks` to `out`; returns the number of events.
///
/// # Errors
/// [`TimelineError`] naming the trace or output file at fault.
pub fn write_chrome(ranks: &[RankTrace], out: &Path) -> Result<u64, TimelineError> {
    let werr = |source| TimelineError::Write { path: out.to_path_buf(), source };
    let mut w = BufWriter::new(File::create(out).map_err(werr)?);
    let mut n = 0u64;
    w.write_all(b"{\"traceEvents\":[\n").map_err(werr)?;
    let mut sep = "";
    let mut emit = |w: &mut BufWriter<File>, v: serde_json::Value| -> std::io::Result<()> {
        write!(w, "{sep}{v}")?;
        sep = ",\n";
        n += 1;
        Ok(())
    };
    for t in ranks {
        let pid = t.header.rank;
        let name = json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": format!("rank {pid} ({})", t.header.host)}});
        emit(&mut w, name).map_err(werr)?;
        for stream in t.streams() {
            for rec in t.records_of(stream)? {
                let rec = rec?;
                let us = |ns: u64| ns as f64 / 1e3;
                if rec.compute_wall_ns > 0 {
                    let start = rec.t_start_ns.saturating_sub(rec.compute_wall_ns);
                    let ev = json!({"name": "compute", "cat": "compute", "ph": "X", "pid": pid, "tid": stream,
                        "ts": us(start), "dur": us(rec.compute_wall_ns), "args": {"cpu_us": us(rec.compute_cpu_ns)}});
                    emit(&mut w, ev).map_err(werr)?;
                }
                let ev = json!({"name": rec.op.mpi_name(), "cat": "mpi", "ph": "X", "pid": pid, "tid": stream,
                    "ts": us(rec.t_start_ns), "dur": us(rec.t_end_ns - rec.t_start_ns), "args": args(&rec.params)});
                emit(&mut w, ev).map_err(werr)?;
            }
        }
    }
    w.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n").map_err(werr)?;
    w.flush().map_err(werr)?;
    Ok(n)
}

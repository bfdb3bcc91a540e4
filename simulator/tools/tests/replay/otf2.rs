//! OTF2 in and out with a real run: `c-tests/build/jacobi2d` at 4 ranks
//! under `mpirun --oversubscribe` (Open MPI) with the interposer
//! preloaded, exported with `simulator trace export-otf2`, checked with the
//! OTF2 library's `otf2-print`, replayed, and written again as the
//! simulated run (`replay --otf2`); and an archive written by a small C
//! program through the OTF2 library's own writer API.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use simulator::trace::record::{Op, Params, PROC_NULL};

use crate::common::{built, root};

const PLATFORM: &str = r#"
name = "otf2-test"
[[hosts]]
name = "node0"
cores = 4
[network.intra]
eager_threshold_bytes = 65536
transfer = [ { intercept_s = 2e-6, bandwidth_bytes_per_s = 5e9 } ]
"#;

const FS: &str = r#"
[[fs]]
name = "scratch"
servers = 2
stripe_size_bytes = 65536
metadata_latency_s = 2e-4
link_bytes_per_s = 1.25e9
[fs.disk]
latency_s = 1e-4
read_bytes_per_s = 5e8
write_bytes_per_s = 3e8
cache_bytes = 0
"#;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Why this test cannot run here, if it cannot.
fn missing() -> Option<String> {
    if let Err(e) = mpi_launch::Mpi::find(None) {
        return Some(format!("{e} (.ci/setup installs Open MPI)"));
    }
    for (tool, arg) in [("otf2-print", "--version"), ("cc", "--version")] {
        let ok = Command::new(tool).arg(arg).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if !ok {
            return Some(format!("`{tool} {arg}` failed (.ci/setup installs it)"));
        }
    }
    None
}

/// Traces jacobi2d at 4 ranks into `<dir>/trace`.
fn trace_jacobi(dir: &Path) -> PathBuf {
    trace_c_test(dir, "jacobi2d", &["128", "20"])
}

/// Traces `c-tests/build/<prog> <args>` at 4 ranks into `<dir>/trace`.
fn trace_c_test(dir: &Path, prog: &str, args: &[&str]) -> PathBuf {
    let so = built().join("libinterposer.so");
    let out = dir.join("trace");
    let mpi = mpi_launch::Mpi::find(None).unwrap();
    let (mut cmd, _session) = mpi.command(4).unwrap();
    mpi.forward(&mut cmd, "LD_PRELOAD", &so);
    mpi.forward(&mut cmd, "INTERPOSER_OUT", &out);
    let run = cmd.arg(root().join("c-tests/build").join(prog)).args(args).output().unwrap();
    assert!(run.status.success(), "mpirun failed: {}", String::from_utf8_lossy(&run.stderr));
    out
}

/// The replay of an exported archive ends where the trace's replay does:
/// to 1e-9 relative, or within 1 µs when the archive writer had to move
/// an event of a record whose clocks disagree by a few ns (OTF2 refuses
/// a time below the previous one on a location).
#[track_caller]
fn same_makespan(m_trace: f64, m_otf2: f64) {
    let d = (m_otf2 - m_trace).abs();
    assert!(d < 1e-9 * m_trace || d < 1e-6, "trace {m_trace} s, OTF2 {m_otf2} s");
}

fn simulator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simulator")).args(args).output().unwrap()
}

#[track_caller]
fn ok(out: &Output) -> String {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts a failure: exit code 1 and one line on stderr containing `needle`.
#[track_caller]
fn fails_naming(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

fn replay_json(platform: &Path, input: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["replay", "--platform", s(platform), s(input), "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(&simulator(&args))).unwrap()
}

/// `otf2-print` of an archive: events per kind, and region entries per region name.
fn print_counts(anchor: &Path) -> (HashMap<String, u64>, HashMap<String, u64>) {
    let out = Command::new("otf2-print").arg(anchor).output().unwrap();
    let text = ok(&out);
    let (mut kinds, mut enters) = (HashMap::new(), HashMap::new());
    for line in text.lines().filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && !l.starts_with("Event")) {
        let kind = line.split_whitespace().next().unwrap().to_string();
        if kind == "ENTER" {
            let name = line.split('"').nth(1).unwrap_or_default().to_string();
            *enters.entry(name).or_insert(0) += 1;
        }
        *kinds.entry(kind).or_insert(0) += 1;
    }
    (kinds, enters)
}

/// Records per MPI name, and point-to-point posts with a real peer per op.
fn trace_counts(trace: &Path) -> (HashMap<String, u64>, HashMap<Op, u64>) {
    let (_, ranks) = simulator::trace::open_dir(trace).unwrap();
    let (mut calls, mut p2p) = (HashMap::new(), HashMap::new());
    for t in &ranks {
        for rec in t.records().unwrap() {
            let rec = rec.unwrap();
            *calls.entry(rec.op.mpi_name().to_string()).or_insert(0) += 1;
            if let Params::P2p { peer, .. } = rec.params {
                if peer != PROC_NULL {
                    *p2p.entry(rec.op).or_insert(0) += 1;
                }
            }
        }
    }
    (calls, p2p)
}

#[test]
fn jacobi2d_exports_replays_and_round_trips_through_otf2() {
    if let Some(why) = missing() {
        eprintln!("SKIPPED jacobi2d_exports_replays_and_round_trips_through_otf2: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_jacobi(dir.path());
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, PLATFORM).unwrap();
    let rec = dir.path().join("recorded");
    let said = ok(&simulator(&["trace", "export-otf2", s(&trace), "--out", s(&rec)]));
    assert!(said.contains("traces.otf2") && said.contains("4 ranks"), "{said}");

    // Every MPI call of the trace is a region entry; every message and collective an event.
    let (calls, p2p) = trace_counts(&trace);
    let (kinds, enters) = print_counts(&rec.join("traces.otf2"));
    for (name, n) in &calls {
        assert_eq!(enters.get(name), Some(n), "{name}: region entries against trace records");
    }
    let isends = p2p[&Op::Isend];
    let irecvs = p2p[&Op::Irecv];
    assert!(isends > 0 && irecvs > 0);
    assert_eq!(kinds["MPI_ISEND"], isends);
    assert_eq!(kinds["MPI_ISEND_COMPLETE"], isends);
    assert_eq!(kinds["MPI_IRECV_REQUEST"], irecvs);
    assert_eq!(kinds["MPI_IRECV"], irecvs);
    let colls = calls["MPI_Allreduce"] + calls["MPI_Barrier"];
    assert_eq!((kinds["MPI_COLLECTIVE_BEGIN"], kinds["MPI_COLLECTIVE_END"]), (colls, colls));

    // Round trip: the archive replays as the trace does with wall-time compute blocks.
    let m_trace = replay_json(&platform, &trace, &["--compute-time", "wall"])["makespan_s"].as_f64().unwrap();
    let sim = dir.path().join("simulated");
    let v = replay_json(&platform, &rec.join("traces.otf2"), &["--otf2", s(&sim)]);
    let m_otf2 = v["makespan_s"].as_f64().unwrap();
    assert!(m_trace > 0.0);
    same_makespan(m_trace, m_otf2);

    // The simulated run: the same messages and collectives, simulated times.
    let (skinds, senters) = print_counts(&sim.join("traces.otf2"));
    for k in ["MPI_ISEND", "MPI_ISEND_COMPLETE", "MPI_IRECV_REQUEST", "MPI_IRECV", "MPI_COLLECTIVE_END"] {
        assert_eq!(skinds[k], kinds[k], "{k} in the simulated archive");
    }
    assert_eq!(senters["MPI_Allreduce"], calls["MPI_Allreduce"]);
    // Replayed again it ends where it did, but for the rounding of its
    // timestamps to nanoseconds (at most 1 ns per compute block).
    let m_sim = replay_json(&platform, &sim, &[])["makespan_s"].as_f64().unwrap();
    let blocks = enters.iter().filter(|(k, _)| !k.starts_with("MPI_")).map(|(_, n)| n).sum::<u64>() as f64;
    assert!((m_sim - m_otf2).abs() <= blocks * 1e-9, "simulated archive {m_sim} s, replay {m_otf2} s");

    // A second export into the same directory is refused, naming the anchor file.
    fails_naming(&simulator(&["trace", "export-otf2", s(&trace), "--out", s(&rec)]), "traces.otf2");
}

#[test]
fn persistent_cancelled_nonblocking_collective_and_io_calls_round_trip() {
    if let Some(why) = missing() {
        eprintln!("SKIPPED persistent_cancelled_nonblocking_collective_and_io_calls_round_trip: {why}");
        return;
    }
    // mpi_more: persistent requests, a cancelled receive, a send freed
    // unwaited, matched probes, nonblocking collectives, communicators and
    // MPI-IO, on a platform with a file system (so offsets and which
    // ranks share a file count).
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_c_test(dir.path(), "mpi_more", &[]);
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, format!("{PLATFORM}{FS}")).unwrap();
    let rec = dir.path().join("recorded");
    ok(&simulator(&["trace", "export-otf2", s(&trace), "--out", s(&rec)]));
    let (kinds, _) = print_counts(&rec.join("traces.otf2"));
    let (calls, _) = trace_counts(&trace);
    assert_eq!(kinds["MPI_REQUEST_CANCELLED"], calls["MPI_Cancel"]);
    for k in ["IO_CREATE_HANDLE", "IO_DESTROY_HANDLE", "IO_OPERATION_BEGIN", "IO_OPERATION_COMPLETE", "NON_BLOCKING_COLLECTIVE_COMPLETE"] {
        assert!(kinds.get(k).is_some_and(|&n| n > 0), "no {k} events");
    }
    let m_trace = replay_json(&platform, &trace, &["--compute-time", "wall"])["makespan_s"].as_f64().unwrap();
    let v = replay_json(&platform, &rec, &[]);
    let m_otf2 = v["makespan_s"].as_f64().unwrap();
    same_makespan(m_trace, m_otf2);
    assert!(v["ranks"].as_array().unwrap().iter().all(|r| r["io_s"].as_f64().unwrap() > 0.0), "I/O not modelled: {v}");
}

#[test]
fn blocking_calls_of_every_kind_round_trip() {
    if let Some(why) = missing() {
        eprintln!("SKIPPED blocking_calls_of_every_kind_round_trip: {why}");
        return;
    }
    // mpi_calls: blocking and nonblocking point-to-point of every mode,
    // probes, tests and every blocking collective, scans included.
    let dir = tempfile::tempdir().unwrap();
    let trace = trace_c_test(dir.path(), "mpi_calls", &[]);
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, PLATFORM).unwrap();
    let rec = dir.path().join("recorded");
    ok(&simulator(&["trace", "export-otf2", s(&trace), "--out", s(&rec)]));
    let (calls, _) = trace_counts(&trace);
    let (_, enters) = print_counts(&rec.join("traces.otf2"));
    for (name, n) in &calls {
        assert_eq!(enters.get(name), Some(n), "{name}: region entries against trace records");
    }
    let m_trace = replay_json(&platform, &trace, &["--compute-time", "wall"])["makespan_s"].as_f64().unwrap();
    let m_otf2 = replay_json(&platform, &rec, &[])["makespan_s"].as_f64().unwrap();
    same_makespan(m_trace, m_otf2);
}

#[test]
fn bad_or_truncated_archive_is_one_line_naming_it() {
    if let Some(why) = missing() {
        eprintln!("SKIPPED bad_or_truncated_archive_is_one_line_naming_it: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, PLATFORM).unwrap();
    let missing = dir.path().join("nowhere.otf2");
    fails_naming(&simulator(&["replay", "--platform", s(&platform), s(&missing)]), "nowhere.otf2");
    let archive = c_archive(dir.path());
    let evt = archive.join("traces/1.evt");
    let len = std::fs::metadata(&evt).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&evt).unwrap().set_len(len / 2).unwrap();
    fails_naming(&simulator(&["replay", "--platform", s(&platform), s(&archive)]), "traces.otf2");
    std::fs::write(archive.join("traces.otf2"), b"not an archive").unwrap();
    fails_naming(&simulator(&["replay", "--platform", s(&platform), s(&archive.join("traces.otf2"))]), "traces.otf2");
}

/// Builds and runs tests/replay/otf2_writer.c: a two-rank archive written with
/// the OTF2 library's writer API, in `<dir>/c`.
fn c_archive(dir: &Path) -> PathBuf {
    let exe = dir.join("otf2_writer");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay/otf2_writer.c");
    let cc = Command::new("cc").arg("-o").arg(&exe).arg(&src).arg("-lopen-trace-format2").output().unwrap();
    assert!(cc.status.success(), "cc failed: {}", String::from_utf8_lossy(&cc.stderr));
    let out = dir.join("c");
    let run = Command::new(&exe).arg(&out).output().unwrap();
    assert!(run.status.success(), "writer failed: {}", String::from_utf8_lossy(&run.stderr));
    out
}

#[test]
fn archive_from_the_otf2_library_writer_replays() {
    if let Some(why) = missing() {
        eprintln!("SKIPPED archive_from_the_otf2_library_writer_replays: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, PLATFORM).unwrap();
    let archive = c_archive(dir.path());
    let out = simulator(&["replay", "--platform", s(&platform), s(&archive), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    // Compute is the time between MPI regions (inside `main`): rank 0
    // 100 + 190 µs, rank 1 50 + 50 µs, on a microsecond timer.
    let ranks = v["ranks"].as_array().unwrap();
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} != {b}");
    close(ranks[0]["compute_s"].as_f64().unwrap(), 290e-6);
    close(ranks[1]["compute_s"].as_f64().unwrap(), 100e-6);
    // The send's 1000 bytes, and the allreduce of 16 / 2 = 8 bytes per rank.
    assert_eq!(ranks[1]["bytes_sent"].as_u64(), Some(8));
    assert_eq!(ranks[0]["bytes_sent"].as_u64(), Some(1008));
    // Rank 1 waits in the receive for the send: it cannot end before rank 0 sent.
    assert!(v["makespan_s"].as_f64().unwrap() >= 290e-6);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("MeasurementOnOff ×4"), "{err}");
}

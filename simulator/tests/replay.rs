//! End-to-end tests of `simulator replay`: a synthetic trace directory
//! written with the library's writer, replayed through the built binary.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use simulator::trace::{self, CallRecord, Op, Params, RankHeader, RankWriter, TimingSource, TraceMeta};

/// Transfer time of an 8-byte message on the test platform: 1 ms + 8 B / 1 GB/s.
const T: f64 = 1e-3 + 8e-9;

const PLATFORM: &str = r#"
name = "test"
[[hosts]]
name = "node0"
cores = 2
[network.intra]
eager_threshold_bytes = 4096
transfer = [ { intercept_s = 1e-3, bandwidth_bytes_per_s = 1e9 } ]
"#;

fn rec(op: Op, cpu_ms: u64, wall_ms: u64, params: Params) -> CallRecord {
    let ms = 1_000_000;
    CallRecord {
        op,
        failed: false,
        caller: 0x1000,
        compute_cpu_ns: cpu_ms * ms,
        compute_wall_ns: wall_ms * ms,
        t_start_ns: 0,
        t_end_ns: 0,
        params,
    }
}

fn p2p(peer: i32) -> Params {
    Params::P2p { peer, tag: 0, bytes: 8, comm: 0, request: 0 }
}

/// Ping-pong: rank 0 computes 2 ms (cpu; 3 ms wall), sends, receives, computes
/// 1 ms; rank 1 receives, computes 1 ms (cpu; 2 ms wall), sends back.
fn write_trace(dir: &Path) {
    let ranks = [
        vec![
            rec(Op::Init, 0, 0, Params::None),
            rec(Op::Send, 2, 3, p2p(1)),
            rec(Op::Recv, 0, 0, p2p(1)),
            rec(Op::Finalize, 1, 1, Params::None),
        ],
        vec![
            rec(Op::Init, 0, 0, Params::None),
            rec(Op::Recv, 0, 0, p2p(0)),
            rec(Op::Send, 1, 2, p2p(0)),
            rec(Op::Finalize, 0, 0, Params::None),
        ],
    ];
    std::fs::create_dir_all(dir).unwrap();
    let meta = TraceMeta {
        format_version: 1,
        ranks: 2,
        mpi_library: "synthetic".into(),
        timing_source: TimingSource::ClockGettime,
        command: vec!["pingpong".into()],
        mode: "trace".into(),
    };
    std::fs::write(dir.join(trace::META_FILE), serde_json::to_string(&meta).unwrap()).unwrap();
    for (r, records) in ranks.iter().enumerate() {
        let header = RankHeader {
            rank: r as u32,
            ranks: 2,
            host: "tracehost".into(),
            pid: 100 + r as u32,
            timing_source: TimingSource::ClockGettime,
            epoch_unix_s: 0.0,
        };
        let f = File::create(dir.join(trace::rank_file_name(r as u32))).unwrap();
        let mut w = RankWriter::create(f, &header).unwrap();
        for rec in records {
            w.push(rec).unwrap();
        }
        w.finish(&[]).unwrap();
    }
}

struct Case {
    _tmp: tempfile::TempDir,
    trace: PathBuf,
    platform: PathBuf,
}

fn case() -> Case {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace");
    write_trace(&trace);
    let platform = tmp.path().join("platform.toml");
    std::fs::write(&platform, PLATFORM).unwrap();
    Case { _tmp: tmp, trace, platform }
}

fn simulator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simulator")).args(args).output().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[track_caller]
fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

/// Asserts a failure: exit code 1, nothing on stdout, one line on stderr
/// containing every string of `needles`.
#[track_caller]
fn fails_with(out: &Output, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(out.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in: {err}");
    }
    err
}

#[test]
fn replays_a_trace_directory_as_one_json_object() {
    let c = case();
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&c.trace), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    // cpu: rank 0 sends at 2 ms; rank 1 receives at 2 ms + T, computes 1 ms,
    // sends; rank 0 receives at 3 ms + 2T and computes 1 ms more.
    close(v["makespan_s"].as_f64().unwrap(), 4e-3 + 2.0 * T);
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    assert_eq!(ranks[1]["host"], "node0");
    close(ranks[1]["end_s"].as_f64().unwrap(), 3e-3 + T);
    assert_eq!((ranks[0]["messages"].as_u64(), ranks[0]["bytes_sent"].as_u64()), (Some(1), Some(8)));
    // Each record is a compute block and its call.
    assert_eq!(v["actions"], 16);
    for key in ["events", "wall_clock_s"] {
        assert!(v[key].is_number(), "{key} missing: {text}");
    }
    for r in ranks {
        let sum: f64 = ["compute_s", "comm_s", "wait_s"].iter().map(|k| r[k].as_f64().unwrap()).sum();
        close(sum, r["end_s"].as_f64().unwrap());
    }
}

#[test]
fn compute_time_wall_uses_wall_durations() {
    let c = case();
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&c.trace), "--json", "--compute-time", "wall"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 3 ms, then 2 ms on rank 1, then 1 ms.
    close(v["makespan_s"].as_f64().unwrap(), 6e-3 + 2.0 * T);
}

#[test]
fn without_json_prints_a_table() {
    let c = case();
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&c.trace)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("makespan: 0.006"), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains("node0")).count(), 2, "{text}");
}

#[test]
fn truncated_rank_file_fails_fast_naming_it() {
    let c = case();
    let f = c.trace.join("rank-1.trace");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() - 5]).unwrap();
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&c.trace), "--json"]);
    fails_with(&out, &[s(&f), "truncated"]);
}

#[test]
fn missing_platform_fails_naming_it() {
    let c = case();
    let missing = c.trace.join("nope.toml");
    let out = simulator(&["replay", "--platform", s(&missing), s(&c.trace), "--json"]);
    fails_with(&out, &[s(&missing)]);
}

#[test]
fn bad_platform_toml_fails_naming_file_and_line() {
    let c = case();
    std::fs::write(&c.platform, "[[hosts]]\nname = \"a\"\ncores = \n").unwrap();
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&c.trace)]);
    fails_with(&out, &[s(&c.platform), "line 3"]);
}

#[test]
fn ti_trace_list_is_not_supported_yet() {
    let c = case();
    let list = c.trace.join("meta.json");
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&list), "--json"]);
    fails_with(&out, &[&format!("SimGrid TI trace lists are not supported yet: {}", s(&list))]);
}

#[test]
fn missing_trace_fails_naming_it() {
    let c = case();
    let missing = c.trace.join("nowhere");
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&missing)]);
    fails_with(&out, &[s(&missing)]);
}

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
        counters: None,
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
    write_ranks(dir, &ranks);
}

/// A trace directory of `ranks`' records (rank r: `ranks[r]`).
fn write_ranks(dir: &Path, ranks: &[Vec<CallRecord>]) {
    let n = ranks.len() as u32;
    std::fs::create_dir_all(dir).unwrap();
    let meta = TraceMeta {
        format_version: 1,
        ranks: n,
        mpi_library: "synthetic".into(),
        timing_source: TimingSource::ClockGettime,
        tsc_hz: None,
        command: vec!["synthetic".into()],
        mode: "trace".into(),
    };
    std::fs::write(dir.join(trace::META_FILE), serde_json::to_string(&meta).unwrap()).unwrap();
    for (r, records) in ranks.iter().enumerate() {
        let header = RankHeader {
            rank: r as u32,
            ranks: n,
            host: "tracehost".into(),
            pid: 100 + r as u32,
            timing_source: TimingSource::ClockGettime,
            tsc_hz: None,
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

const CLUSTER_XML: &str = r#"<?xml version='1.0'?>
<platform version="4.1"><zone id="w" routing="Full">
<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" core="1" bw="1MBps" lat="0s"/>
</zone></platform>
"#;

/// Writes a TI trace list with one file per entry of `ranks` (its lines
/// after the rank column) and a cluster platform; returns (dir, list, xml).
fn ti_case(ranks: &[&str]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mut list = String::new();
    for (r, body) in ranks.iter().enumerate() {
        let f = dir.path().join(format!("rank-{r}.txt"));
        let text: String = body.lines().map(|l| format!("{r} {}\n", l.trim())).collect();
        std::fs::write(&f, text).unwrap();
        list.push_str(&format!("rank-{r}.txt\n"));
    }
    std::fs::write(dir.path().join("trace.txt"), list).unwrap();
    std::fs::write(dir.path().join("c.xml"), CLUSTER_XML).unwrap();
    let (l, x) = (dir.path().join("trace.txt"), dir.path().join("c.xml"));
    (dir, l, x)
}

fn makespan(out: &Output) -> f64 {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["makespan_s"].as_f64().unwrap()
}

#[test]
fn ti_trace_list_replays_on_a_simgrid_cluster() {
    // 2e9 flops at 1 Gf, then 1 MB at 1 MBps: SMPI times it as 1 000 016 B
    // at 0.940694 × 1 MBps (bw-factor above 65472 B), no latency.
    let (_d, list, xml) = ti_case(&["init\ncompute 2e9\nsend 1 0 1000000 6\nfinalize", "init\nrecv 0 0 1000000 6\nfinalize"]);
    let m = makespan(&simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]));
    close(m, 2.0 + 1_000_016.0 / 940_694.0);
}

#[test]
fn concurrent_transfers_share_the_bottleneck_uplink() {
    // Contention: k transfers of 1 MB from rank 0 take k times one.
    let one = |k: usize| {
        let mut ranks = vec![String::from("init\n")];
        for d in 1..=k {
            ranks[0].push_str(&format!("isend {d} 0 1000000 6\n"));
            ranks.push("init\nrecv 0 0 1000000 6\nfinalize".to_string());
        }
        ranks[0].push_str("waitall\nfinalize");
        let refs: Vec<&str> = ranks.iter().map(String::as_str).collect();
        let (_d, list, xml) = ti_case(&refs);
        makespan(&simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]))
    };
    let t1 = one(1);
    for k in [2, 3] {
        close(one(k), k as f64 * t1);
    }
}

#[test]
fn ti_errors_name_file_and_line() {
    let (d, list, xml) = ti_case(&["init\nfrobnicate 1\nfinalize"]);
    let out = simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]);
    fails_with(&out, &[&format!("{}:2: unknown action `frobnicate`", d.path().join("rank-0.txt").display())]);
    std::fs::write(d.path().join("rank-1.txt"), "1 init\n").unwrap();
    let five = "rank-0.txt\nrank-1.txt\nrank-1.txt\nrank-1.txt\nrank-1.txt\n";
    std::fs::write(&list, five).unwrap();
    let out = simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]);
    fails_with(&out, &["platform: 5 ranks but only 4 cores on 4 hosts"]);
    std::fs::write(&list, "rank-0.txt\nrank-9.txt\n").unwrap();
    let out = simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]);
    fails_with(&out, &[&format!("{}:2: rank 1 trace file rank-9.txt does not exist", s(&list))]);
}

#[test]
fn missing_trace_fails_naming_it() {
    let c = case();
    let missing = c.trace.join("nowhere");
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&missing)]);
    fails_with(&out, &[s(&missing)]);
}

#[test]
fn timeline_has_compute_and_mpi_spans_per_rank() {
    let (d, list, xml) = ti_case(&["init\ncompute 1e9\nsend 1 0 1000000 6\nfinalize", "init\nrecv 0 0 1000000 6\nfinalize"]);
    let tl = d.path().join("t.json");
    let m = makespan(&simulator(&["replay", "--platform", s(&xml), s(&list), "--json", "--timeline", s(&tl)]));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&tl).unwrap()).unwrap();
    let mut spans: Vec<(String, u64, f64)> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_string(), e["tid"].as_u64().unwrap(), e["dur"].as_f64().unwrap()))
        .collect();
    spans.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    assert_eq!(spans.iter().map(|x| (x.0.as_str(), x.1)).collect::<Vec<_>>(), [("MPI_Send", 0), ("compute", 0), ("MPI_Recv", 1)]);
    // The receive waits from t = 0 to the makespan.
    assert!((spans[2].2 - m * 1e6).abs() < 1e-3, "{spans:?} vs {m}");
}

#[test]
fn timeline_spans_cover_each_rank_without_gaps() {
    // Each call's overheads (sends, posted receives, a reduction) are in
    // its span: a rank's spans tile its time from 0 to its end.
    let (d, list, xml) = ti_case(&[
        "init\ncompute 1e8\nallreduce 100000 100000 6\nisend 1 0 100000 6\nwait\nallreduce 1000 0 6\nfinalize",
        "init\ncompute 2e8\nallreduce 100000 100000 6\nirecv 0 0 100000 6\nwait\nallreduce 1000 0 6\nfinalize",
    ]);
    // Overheads at both ends, a cost of posting a receive, a reduction cost.
    let toml = d.path().join("p.toml");
    let text = PLATFORM.replace("cores = 2", "cores = 2\nspeed_flops = 1e9")
        + "send_overhead = [ { intercept_s = 2e-4, bandwidth_bytes_per_s = inf } ]\n"
        + "recv_overhead = [ { intercept_s = 3e-4, bandwidth_bytes_per_s = inf } ]\n"
        + "[smpi]\nirecv_s = 1e-4\n[collectives]\nreduce_intercept_s = 5e-4\nreduce_s_per_byte = 1e-9\n";
    std::fs::write(&toml, text).unwrap();
    let _ = xml;
    let tl = d.path().join("t.json");
    let out = simulator(&["replay", "--platform", s(&toml), s(&list), "--json", "--timeline", s(&tl)]);
    makespan(&out);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&tl).unwrap()).unwrap();
    for rank in 0..2u64 {
        let mut spans: Vec<(f64, f64, String)> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["tid"].as_u64() == Some(rank))
            .map(|e| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap(), e["name"].as_str().unwrap().to_string()))
            .collect();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut end = 0.0;
        for (ts, dur, name) in &spans {
            // A span inside the one before (a reduction inside its call) is nested.
            if ts + dur <= end + 1e-5 {
                continue;
            }
            assert!((ts - end).abs() < 1e-5, "rank {rank}: {name} starts at {ts} µs, the span before ends at {end}: {spans:?}");
            end = ts + dur;
        }
        let end_s = report["ranks"][rank as usize]["end_s"].as_f64().unwrap();
        assert!((end - end_s * 1e6).abs() < 1e-3, "rank {rank}: spans end at {end} µs, the rank at {end_s} s");
        // Posting the receive is its own call: irecv_s.
        if rank == 1 {
            assert!(spans.iter().any(|x| x.2 == "MPI_Irecv" && (x.1 - 100.0).abs() < 1e-3), "{spans:?}");
        }
    }
}

mod common;

/// A 1 GHz jitter trace: a 2 µs event after every 98 µs of compute (2 %).
fn jitter_trace(dir: &Path) -> PathBuf {
    use simulator::jitter_trace::{JitterRecord, JitterTrace};
    let header = common::jitter_header(0, None);
    let records: Vec<JitterRecord> = (0..100).map(|_| JitterRecord { jitter_cycles: 2_000, cycles_to_next: 98_000 }).collect();
    let duration_cycles = records.iter().map(|r| r.jitter_cycles + r.cycles_to_next).sum();
    let t = JitterTrace { header, lead_cycles: 0, records, duration_cycles, dropped_events: 0 };
    let path = dir.join("node0.cpu0.jitter");
    t.write(&path).unwrap();
    path
}

#[test]
fn jitter_stretches_compute_blocks_by_the_trace_noise() {
    let c = case();
    let jt = jitter_trace(c._tmp.path());
    let plain = makespan(&simulator(&["replay", "--platform", s(&c.platform), s(&c.trace), "--json"]));
    for mode in ["sync", "unsync"] {
        let args = ["replay", "--platform", s(&c.platform), s(&c.trace), "--json", "--jitter", s(&jt), "--jitter-mode", mode];
        let jittered = makespan(&simulator(&args));
        // 4 ms of compute on the critical path (four 1 ms blocks), 2 µs
        // lost per 98 µs worked: each block meets 10 or 11 events, so
        // 80-88 µs more, whatever the offsets.
        let added = jittered - plain;
        assert!(added > 79e-6 && added < 89e-6, "{mode}: {jittered} vs {plain}");
        assert_eq!(jittered, makespan(&simulator(&args)), "{mode}: not deterministic");
    }
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&c.trace), "--jitter", s(&jt), "--jitter-mode", "cosched"]);
    fails_with(&out, &["cosched", "window"]);
}

#[test]
fn collective_selectors_and_overrides_from_the_command_line() {
    let c = case();
    let run = |extra: &[&str]| {
        let mut args = vec!["replay", "--platform", s(&c.platform), s(&c.trace), "--json"];
        args.extend_from_slice(extra);
        simulator(&args)
    };
    for extra in [&["--coll-selector", "ompi"][..], &["--coll-selector", "simgrid-ompi", "--coll", "barrier=linear"]] {
        let out = run(extra);
        assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let out = run(&["--coll", "allreduce=bogus"]);
    fails_with(&out, &["--coll allreduce=bogus", "unknown algorithm `bogus` for allreduce (valid: rdb,", "rabenseifner"]);
    fails_with(&run(&["--coll", "allreduce"]), &["--coll allreduce: expected <collective>=<algorithm>"]);
    fails_with(&run(&["--coll", "bcast=pipeline:lots"]), &["segment size `lots`"]);
    fails_with(&run(&["--coll-selector", "openmpi"]), &["--coll-selector", "valid: smpi (or default), mpich, ompi, simgrid-ompi"]);
}

#[path = "replay/models.rs"]
mod models;

#[path = "replay/dvfs.rs"]
mod dvfs;

#[test]
fn a_host_with_more_ranks_than_cores_shares_them_and_says_so() {
    // The ping-pong on one core. Yield: each rank computes while the
    // other waits, as with a core each: 4 ms + 2T. Poll: the waiting rank
    // keeps half the core: rank 0's 2 ms take 4, rank 1's 1 ms take 2;
    // rank 1 has finalized when rank 0 computes its last 1 ms alone.
    let c = case();
    let one_core = c.platform.with_file_name("one-core.toml");
    std::fs::write(&one_core, PLATFORM.replace("cores = 2", "cores = 1")).unwrap();
    let run = |policy: &str| {
        let out = simulator(&["replay", "--platform", s(&one_core), s(&c.trace), "--json", "--waiting-ranks", policy]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.lines().filter(|l| l.contains("oversubscribed")).count(), 1, "{err}");
        assert!(err.contains("2 ranks on 1 cores") && err.contains(policy), "{err}");
        let v: Value = serde_json::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
        let o = &v["oversubscribed"][0];
        assert_eq!((o["host"].as_str(), o["ranks"].as_u64(), o["cores"].as_u64()), (Some("node0"), Some(2), Some(1)), "{v}");
        assert_eq!(o["waiting_ranks"], policy);
        v["makespan_s"].as_f64().unwrap()
    };
    close(run("yield"), 4e-3 + 2.0 * T);
    close(run("poll"), 7e-3 + 2.0 * T);
    // A core per rank: nothing said, nothing in the report.
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&c.trace), "--json"]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("oversubscribed"));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("oversubscribed"));
}

#[path = "replay/io.rs"]
mod io;
#[path = "replay/otf2.rs"]
mod otf2;

/// Three runs of an exchange whose compute before it is `(rank 0, rank 1)`
/// ms: one rank late in the first run, the other in the second, neither
/// in the third.
fn noisy_runs(dir: &Path) -> Vec<PathBuf> {
    [(10, 2), (2, 10), (3, 3)]
        .iter()
        .enumerate()
        .map(|(k, &(a, b))| {
            let run = dir.join(format!("run{k}"));
            let ranks = [
                vec![
                    rec(Op::Init, 0, 0, Params::None),
                    rec(Op::Send, a, a, p2p(1)),
                    rec(Op::Recv, 0, 0, p2p(1)),
                    rec(Op::Finalize, 0, 0, Params::None),
                ],
                vec![
                    rec(Op::Init, 0, 0, Params::None),
                    rec(Op::Recv, b, b, p2p(0)),
                    rec(Op::Send, 0, 0, p2p(0)),
                    rec(Op::Finalize, 0, 0, Params::None),
                ],
            ];
            write_ranks(&run, &ranks);
            run
        })
        .collect()
}

#[test]
fn several_runs_merge_by_blocks_or_by_the_median_run() {
    let c = case();
    let runs = noisy_runs(c.trace.parent().unwrap());
    let replay = |merge: &str| {
        let mut args = vec!["replay", "--platform", s(&c.platform), "--json", "--merge", merge];
        args.extend(runs.iter().map(|r| s(r)));
        let out = simulator(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    // Each run alone: rank 1 answers once it has computed and the message
    // (sent eagerly after rank 0's compute) has come.
    let alone = [10e-3 + 2.0 * T, 10e-3 + T, 3e-3 + 2.0 * T];
    let runs_v = replay("runs");
    let band: Vec<f64> = runs_v["runs_makespan_s"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    alone.iter().zip(&band).for_each(|(a, b)| close(*a, *b));
    // The median run, replayed alone.
    assert_eq!(runs_v["median_run"], 1);
    close(runs_v["makespan_s"].as_f64().unwrap(), alone[1]);
    // Blocks at their medians (3 ms on each rank): a run quieter than any of the three.
    let blocks_v = replay("blocks");
    assert!(blocks_v.get("median_run").is_none(), "{blocks_v}");
    close(blocks_v["makespan_s"].as_f64().unwrap(), 3e-3 + 2.0 * T);
}

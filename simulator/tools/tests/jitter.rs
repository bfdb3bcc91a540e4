//! `simulator jitter` end to end: JSON output, sweeps, plots and
//! one-line errors for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use simulator::jitter_trace::{trace_file_name, JitterRecord, JitterTrace};

mod common;

/// A 10 ms trace at 1 GHz: a 2 µs event every 100 µs (2 % noise), plus a 50 µs one.
fn write_trace(dir: &Path, cpu: u32, window: Option<u64>) -> PathBuf {
    let mut records: Vec<JitterRecord> = (0..99).map(|_| JitterRecord { jitter_cycles: 2_000, cycles_to_next: 98_000 }).collect();
    records[40].jitter_cycles = 50_000;
    records[40].cycles_to_next = 50_000;
    let lead = 1_000;
    let duration_cycles = lead + records.iter().map(|r| r.jitter_cycles + r.cycles_to_next).sum::<u64>();
    let t = JitterTrace { header: common::jitter_header(cpu, window), lead_cycles: lead, records, duration_cycles, dropped_events: 0 };
    let path = dir.join(trace_file_name("node0", cpu));
    t.write(&path).unwrap();
    path
}

fn simulator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simulator")).arg("jitter").args(args).output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn json_has_slowdown_pct_for_a_file_and_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_trace(dir.path(), 0, None);
    write_trace(dir.path(), 1, None);
    let base = ["--tasks", "16", "--phases", "20", "--work", "0.0005", "--json"];
    for (trace, mode) in [(file.to_str().unwrap(), "unsync"), (dir.path().to_str().unwrap(), "sync")] {
        let v = json(&simulator(&[&["--trace", trace, "--mode", mode][..], &base].concat()));
        let s = v["slowdown_pct"].as_f64().unwrap();
        assert!(s > 0.0, "{v}");
        let parts = v["compute_slowdown_pct"].as_f64().unwrap() + v["comm_slowdown_pct"].as_f64().unwrap();
        assert!((parts - s).abs() < 1e-9, "{v}");
        assert_eq!(v["tasks"], 16);
    }
    let v =
        json(&simulator(&[&["--trace", dir.path().to_str().unwrap(), "--mode", "sync", "--per-phase", "--reps", "3"][..], &base].concat()));
    assert_eq!(v["traces"].as_array().unwrap().len(), 2);
    assert_eq!(v["per_phase"].as_array().unwrap().len(), 20);
    assert!(v["band"]["p5"].as_f64().unwrap() <= v["band"]["p95"].as_f64().unwrap());
}

#[test]
fn sweep_makes_a_table_json_points_and_an_svg() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_trace(dir.path(), 0, Some(1_000_000));
    let svg = dir.path().join("sweep.svg");
    let args = [
        "--trace",
        file.to_str().unwrap(),
        "--tasks",
        "1,2,...,8",
        "--phases",
        "10",
        "--work",
        "0.0002",
        "--mode",
        "unsync,sync,cosched",
        "--collective",
        "allreduce",
    ];
    let v = json(&simulator(&[&args[..], &["--json", "--plot", svg.to_str().unwrap()]].concat()));
    let points = v["points"].as_array().unwrap();
    let tasks: Vec<u64> = points.iter().map(|p| p["tasks"].as_u64().unwrap()).collect();
    assert_eq!(tasks, [1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8]);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let out = simulator(&args);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    assert_eq!(table.lines().count(), 13, "{table}");
    assert!(table.starts_with("    tasks"), "{table}");
}

/// Runs with `args` and checks: exit code 1, one stderr line containing `needle`.
fn fails(args: &[&str], needle: &str) {
    let out = simulator(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{args:?}: `{err}` lacks `{needle}`");
}

#[test]
fn bad_input_gives_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_trace(dir.path(), 0, None);
    let good = good.to_str().unwrap();
    let ok = |t: &'static str, p: &'static str, w: &'static str| -> Vec<String> {
        ["--tasks", t, "--phases", p, "--work", w].iter().map(|s| s.to_string()).collect()
    };
    let run = |trace: &str, rest: &[String], needle: &str| {
        let mut a = vec!["--trace", trace];
        a.extend(rest.iter().map(String::as_str));
        fails(&a, needle);
    };
    run(good, &ok("0", "5", "0.001"), "--tasks");
    run(good, &ok("4", "0", "0.001"), "--phases");
    run(good, &ok("4", "5", "0"), "--work");
    run(good, &ok("4", "5", "-1"), "--work");
    run(good, &[ok("4", "5", "0.001"), vec!["--mode".into(), "cosched".into()]].concat(), "cosched");
    run(good, &[ok("4", "5", "0.001"), vec!["--collective".into(), "scatter".into()]].concat(), "--collective");
    let text = std::fs::read_to_string(good).unwrap();
    let empty = dir.path().join("empty.jitter");
    std::fs::write(&empty, "").unwrap();
    run(empty.to_str().unwrap(), &ok("4", "5", "0.001"), "empty.jitter");
    let nofreq = dir.path().join("nofreq.jitter");
    std::fs::write(&nofreq, text.lines().filter(|l| !l.starts_with("tsc_hz")).collect::<Vec<_>>().join("\n")).unwrap();
    run(nofreq.to_str().unwrap(), &ok("4", "5", "0.001"), "tsc_hz");
    let cut = dir.path().join("cut.jitter");
    let half: Vec<&str> = text.lines().collect();
    std::fs::write(&cut, half[..half.len() / 2].join("\n")).unwrap();
    run(cut.to_str().unwrap(), &ok("4", "5", "0.001"), "truncated");
    let bad_line = dir.path().join("badline.jitter");
    std::fs::write(&bad_line, text.replacen("2000\t98000", "2000\tx", 1)).unwrap();
    run(bad_line.to_str().unwrap(), &ok("4", "5", "0.001"), "badline.jitter:");
    let none = tempfile::tempdir().unwrap();
    run(none.path().to_str().unwrap(), &ok("4", "5", "0.001"), "no *.jitter");
}

#[test]
fn platform_latencies_and_cores_per_node() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_trace(dir.path(), 0, None);
    let pf = dir.path().join("p.toml");
    let toml = "name = \"t\"\n[[hosts]]\nname = \"n0\"\ncores = 4\n[network.intra]\neager_threshold_bytes = 4096\n\
                transfer = [ { intercept_s = 1e-6, bandwidth_bytes_per_s = 1e9 } ]\n[network.inter]\neager_threshold_bytes = 4096\n\
                transfer = [ { intercept_s = 1e-5, bandwidth_bytes_per_s = 1e9 } ]\n";
    std::fs::write(&pf, toml).unwrap();
    let run = |extra: &[&str]| {
        let base = [
            "--trace",
            trace.to_str().unwrap(),
            "--tasks",
            "16",
            "--phases",
            "5",
            "--work",
            "0.001",
            "--mode",
            "sync",
            "--json",
            "--platform",
            pf.to_str().unwrap(),
        ];
        json(&simulator(&[&base[..], extra].concat()))
    };
    let v = run(&[]);
    assert_eq!(v["cores_per_node"], 4);
    // Noise-free binary barrier over 16 tasks, 4 per node: a few µs on 1 ms of work.
    let quiet = v["comm_noise_free_pct"].as_f64().unwrap();
    assert!(quiet > 0.5 && quiet < 20.0, "{v}");
    let one_per_node = run(&["--cores-per-node", "1"]);
    assert!(one_per_node["comm_noise_free_pct"].as_f64().unwrap() > quiet, "{one_per_node}");
    fails(
        &["--trace", trace.to_str().unwrap(), "--tasks", "4", "--phases", "1", "--work", "0.001", "--platform", "/nonexistent.toml"],
        "/nonexistent.toml",
    );
}

//! Overhead benchmark (`cargo bench -p interposer --bench overhead`):
//!
//! 1. The cost the interposer adds per intercepted call, from
//!    `c-tests/overhead` run plainly and under the interposer with
//!    `INTERPOSER_COUNTERS=off` (wall time from the TSC only), `=sw` (plus
//!    thread CPU time) and `=auto` (hardware counters where they exist),
//!    and in `INTERPOSER_MODE=regions` (per-region block sums only), in
//!    one run, medians of 5 runs each taken round-robin, 10^6 iterations
//!    (`OVERHEAD_ITERS`).
//! 2. Trace size: bytes per recorded call (whole rank files: header, records,
//!    module table and footer) of each C and Fortran c-test traced at
//!    `-np 2` (`OVERHEAD_SECTIONS=2` runs only this part).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use statrs::statistics::{Data, Median, Statistics};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn run(prog: &Path, iters: &str, env: &[(&str, String)]) -> (f64, f64) {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "-np", "2"]);
    for (k, v) in env {
        cmd.env(k, v).args(["-x", k]);
    }
    let out = cmd.arg(prog).arg(iters).output().expect("mpirun");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |key: &str| -> f64 { text.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN) };
    (get("pingpong_ns_per_call="), get("iprobe_ns_per_call="))
}

/// Median of `v` (non-empty; the mean of the two middle values for an even count).
fn median(v: Vec<f64>) -> f64 {
    Data::new(v).median()
}

/// Bytes per event of each c-test's trace (section 2).
fn sizes(root: &Path, lib: &Path) {
    let progs = root.join("c-tests/build");
    let cases: [(&str, &[&str]); 11] = [
        ("pingpong", &["20"]),
        ("ring", &["100000", "8"]),
        ("jacobi2d", &["1024", "150"]),
        ("allreduce_loop", &["5000", "1024"]),
        ("comm_split", &["100"]),
        ("mpi_calls", &["20"]),
        ("mpi_more", &["10"]),
        ("overlap", &["50"]),
        ("threads", &[]),
        ("fortran_calls", &["20"]),
        ("fortran_more", &["10"]),
    ];
    println!("\n{:<16} {:>10} {:>12} {:>12}", "program", "events", "bytes", "bytes/event");
    let (mut events_all, mut bytes_all, mut per_program) = (0u64, 0u64, Vec::new());
    for (prog, args) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("mpirun");
        cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "2"]);
        cmd.env("LD_PRELOAD", lib).env("INTERPOSER_OUT", dir.path()).args(["-x", "LD_PRELOAD", "-x", "INTERPOSER_OUT"]);
        let out = cmd.arg(progs.join(prog)).args(args).output().expect("mpirun");
        if !out.status.success() {
            println!("{prog:<16} failed: {}", String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or(""));
            continue;
        }
        // Every thread's stream, whole files (header, modules, footer included).
        let checks = simulator::trace::check::check_dir(dir.path()).expect("trace");
        let events: u64 = checks.iter().map(|c| c.records).sum();
        let bytes: u64 = checks.iter().map(|c| c.bytes).sum();
        let per = bytes as f64 / events.max(1) as f64;
        println!("{prog:<16} {events:>10} {bytes:>12} {per:>12.2}");
        (events_all, bytes_all) = (events_all + events, bytes_all + bytes);
        per_program.push(per);
    }
    let mean = if per_program.is_empty() { 0.0 } else { per_program.iter().mean() };
    println!("{:<16} {events_all:>10} {bytes_all:>12} {:>12.2}", "all", bytes_all as f64 / events_all.max(1) as f64);
    println!("mean of the programs' bytes/event: {mean:.2} (goal: <= 12)");
}

fn main() {
    let root = root();
    let ok = Command::new(env!("CARGO")).args(["build", "--release", "--quiet", "-p", "interposer"]).current_dir(&root).status();
    assert!(ok.expect("cargo").success());
    assert!(Command::new("make").args(["-s", "-C"]).arg(root.join("c-tests")).status().expect("make").success());
    let lib = common::release_dir(&root).join("libinterposer.so");
    if std::env::var("OVERHEAD_SECTIONS").is_ok_and(|v| v.trim() == "2") {
        return sizes(&root, &lib);
    }
    let prog = root.join("c-tests/build/overhead");
    let iters = std::env::var("OVERHEAD_ITERS").unwrap_or_else(|_| "1000000".into());
    let dir = tempfile::tempdir().unwrap();
    let regions_dir = tempfile::tempdir().unwrap();
    let modes: [(&str, Vec<(&str, String)>); 5] = [
        ("plain", vec![]),
        (
            "counters=off",
            vec![
                ("LD_PRELOAD", lib.display().to_string()),
                ("INTERPOSER_OUT", dir.path().display().to_string()),
                ("INTERPOSER_COUNTERS", "off".into()),
            ],
        ),
        (
            "counters=sw",
            vec![
                ("LD_PRELOAD", lib.display().to_string()),
                ("INTERPOSER_OUT", dir.path().display().to_string()),
                ("INTERPOSER_COUNTERS", "sw".into()),
            ],
        ),
        (
            "counters=auto",
            vec![
                ("LD_PRELOAD", lib.display().to_string()),
                ("INTERPOSER_OUT", dir.path().display().to_string()),
                ("INTERPOSER_COUNTERS", "auto".into()),
            ],
        ),
        (
            "mode=regions",
            vec![
                ("LD_PRELOAD", lib.display().to_string()),
                ("INTERPOSER_OUT", regions_dir.path().display().to_string()),
                ("INTERPOSER_MODE", "regions".into()),
            ],
        ),
    ];
    let mut base = (0.0, 0.0);
    println!("{:<14} {:>16} {:>16} {:>14} {:>14}", "mode", "pingpong_ns/call", "iprobe_ns/call", "added_pp_ns", "added_iprobe_ns");
    // Round-robin over the modes, so that a change in the machine's load
    // falls on all of them alike.
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new(); modes.len()];
    for _ in 0..5 {
        for (m, (_, env)) in modes.iter().enumerate() {
            runs[m].push(run(&prog, &iters, env));
        }
    }
    for ((name, _), runs) in modes.iter().zip(&runs) {
        let pp = median(runs.iter().map(|r| r.0).collect());
        let ip = median(runs.iter().map(|r| r.1).collect());
        if *name == "plain" {
            base = (pp, ip);
        }
        println!("{name:<14} {pp:>16.1} {ip:>16.1} {:>14.1} {:>14.1}", pp - base.0, ip - base.1);
    }
    // What auto used here (hardware counters or not) and the wall clock.
    if let Ok((meta, ranks)) = simulator::trace::open_dir(dir.path()) {
        let clock = meta.tsc_hz.map_or("CLOCK_MONOTONIC".to_string(), |hz| format!("TSC at {:.3} MHz", hz / 1e6));
        println!("auto = {}; wall time: {clock}", ranks[0].footer.counters);
    }
    sizes(&root, &lib);
}

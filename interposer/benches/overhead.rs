//! Overhead benchmark (`cargo bench -p interposer --bench overhead`):
//!
//! 1. The cost the interposer adds per intercepted call, from
//!    `c-tests/overhead` run plainly and under the interposer with
//!    `INTERPOSER_COUNTERS=off` (wall time from the TSC only), `=sw` (plus
//!    thread CPU time) and `=auto` (hardware counters where they exist),
//!    in `INTERPOSER_MODE=regions` (per-region block sums only) and in
//!    `INTERPOSER_MODE=off`: a 1-byte ping-pong (per call on the critical
//!    path, wall time), a failed `MPI_Iprobe` and `MPI_Comm_rank` (wall
//!    time, and thread CPU time, which a preemption on a shared machine
//!    does not lengthen). Each figure is the median over `OVERHEAD_REPS`
//!    (5) repetitions taken round-robin over the modes; the added cost is
//!    the median of each repetition's difference to the plain run of the
//!    same round, and its noise band those differences' range. 10^6
//!    iterations (`OVERHEAD_ITERS`).
//! 2. Instructions per call: Valgrind's callgrind counts what the
//!    library runs inside each wrapper beyond the MPI function itself
//!    (perf_event's instruction counter would need hardware counters,
//!    which virtual machines often lack; callgrind needs `valgrind`).
//! 3. Trace size: bytes per recorded call (whole rank files: header, records,
//!    module table and footer) of each C and Fortran c-test traced at
//!    `-np 2` (`OVERHEAD_SECTIONS=3` runs only this part).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use statrs::statistics::{Data, Median, Statistics};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `mpirun` of 2 ranks (as root, oversubscribed if need be, a session
/// directory of its own kept while the guard lives) with `env` set and
/// passed to them; the program and its arguments follow.
fn mpirun(env: &[(&str, String)]) -> (Command, mpi_launch::Session) {
    let mpi = mpi_launch::Mpi::find(None).unwrap_or_else(|e| panic!("{e}"));
    let (mut cmd, session) = mpi.command(2).expect("a session directory for mpirun");
    for (k, v) in env {
        mpi.forward(&mut cmd, k, v);
    }
    (cmd, session)
}

/// The figures `c-tests/overhead` printed, by key (`iprobe_ns_per_call`, ...).
fn run(prog: &Path, args: &[&str], env: &[(&str, String)]) -> BTreeMap<String, f64> {
    let (mut cmd, _session) = mpirun(env);
    let out = cmd.arg(prog).args(args).output().expect("mpirun");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter_map(|(k, v)| Some((k.trim().to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// Median of `v` (non-empty; the mean of the two middle values for an even count).
fn median(v: Vec<f64>) -> f64 {
    Data::new(v).median()
}

/// The figures of section 1: key printed by the program, column title.
const FIGURES: [(&str, &str); 5] = [
    ("pingpong_ns_per_call", "ping-pong"),
    ("iprobe_ns_per_call", "iprobe"),
    ("iprobe_cpu_ns_per_call", "iprobe cpu"),
    ("comm_rank_ns_per_call", "comm_rank"),
    ("comm_rank_cpu_ns_per_call", "comm_rank cpu"),
];

/// Section 1: every mode against the plain run, interleaved.
fn per_call(prog: &Path, lib: &Path) {
    let iters = std::env::var("OVERHEAD_ITERS").unwrap_or_else(|_| "1000000".into());
    let reps: usize = std::env::var("OVERHEAD_REPS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(5).max(1);
    let dir = tempfile::tempdir().unwrap();
    let regions_dir = tempfile::tempdir().unwrap();
    let preload = |extra: &[(&'static str, &str)], out: &Path| {
        let mut env = vec![("LD_PRELOAD", lib.display().to_string()), ("INTERPOSER_OUT", out.display().to_string())];
        env.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        env
    };
    let modes: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("plain", vec![]),
        ("counters=off", preload(&[("INTERPOSER_COUNTERS", "off")], dir.path())),
        ("counters=sw", preload(&[("INTERPOSER_COUNTERS", "sw")], dir.path())),
        ("counters=auto", preload(&[("INTERPOSER_COUNTERS", "auto")], dir.path())),
        ("mode=regions", preload(&[("INTERPOSER_MODE", "regions")], regions_dir.path())),
        ("mode=off", preload(&[("INTERPOSER_MODE", "off")], dir.path())),
    ];
    // Round-robin over the modes, so that a change in the machine's load
    // falls on all of them alike.
    let mut runs: Vec<Vec<BTreeMap<String, f64>>> = vec![Vec::new(); modes.len()];
    for _ in 0..reps {
        for (m, (_, env)) in modes.iter().enumerate() {
            runs[m].push(run(prog, &[&iters, &iters], env));
        }
    }
    println!("ns per call, median of {reps} interleaved runs; added: median [range] of each round's difference to the plain run");
    print!("{:<14}", "mode");
    FIGURES.iter().for_each(|(_, title)| print!(" {title:>26}"));
    println!();
    let get = |r: &BTreeMap<String, f64>, key: &str| r.get(key).copied().unwrap_or(f64::NAN);
    for ((name, _), mode_runs) in modes.iter().zip(&runs) {
        print!("{name:<14}");
        for (key, _) in FIGURES {
            let value = median(mode_runs.iter().map(|r| get(r, key)).collect());
            if *name == "plain" {
                print!(" {value:>26.1}");
                continue;
            }
            let diffs: Vec<f64> = mode_runs.iter().zip(&runs[0]).map(|(r, p)| get(r, key) - get(p, key)).collect();
            let (lo, hi) = (diffs.iter().copied().fold(f64::INFINITY, f64::min), diffs.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            print!(" {:>26}", format!("{value:.1} {:+.1} [{lo:+.1}, {hi:+.1}]", median(diffs.clone())));
        }
        println!();
    }
    // What auto used here (hardware counters or not) and the wall clock.
    if let Ok((meta, ranks)) = simulator::trace::open_dir(dir.path()) {
        let clock = meta.tsc_hz.map_or("CLOCK_MONOTONIC".to_string(), |hz| format!("TSC at {:.3} MHz", hz / 1e6));
        println!("auto = {}; wall time: {clock}", ranks[0].footer.counters);
    }
}

/// Instructions callgrind counted in `file` per function, inclusive: the
/// interposer's wrapper `MPI_<name>` and the MPI's `PMPI_<name>`.
fn callgrind_costs(file: &Path, names: &[&str]) -> Option<BTreeMap<String, (u64, u64)>> {
    let out = Command::new("callgrind_annotate").args(["--inclusive=yes", "--threshold=100"]).arg(file).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let cost = |func: &str, lib_has: &str| -> u64 {
        text.lines()
            .find(|l| l.contains(&format!(":{func} [")) && l.contains(lib_has))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.replace(',', "").parse().ok())
            .unwrap_or(0)
    };
    Some(names.iter().map(|n| (n.to_string(), (cost(&format!("MPI_{n}"), "libinterposer"), cost(&format!("PMPI_{n}"), "")))).collect())
}

/// Section 2: instructions the interposer adds per call, under callgrind
/// (rank 0 of a traced run with `INTERPOSER_COUNTERS=off`).
fn instructions(prog: &Path, lib: &Path) {
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("\ninstructions per call: valgrind not found (apt-get install valgrind)");
        return;
    }
    let calls = 20_000u64;
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("trace");
    let (mut cmd, _session) = mpirun(&[
        ("LD_PRELOAD", lib.display().to_string()),
        ("INTERPOSER_OUT", out_dir.display().to_string()),
        ("INTERPOSER_COUNTERS", "off".into()),
    ]);
    let cg = dir.path().join("cg.%p");
    cmd.args(["valgrind", "-q", "--tool=callgrind"]).arg(format!("--callgrind-out-file={}", cg.display()));
    let status = cmd.arg(prog).args([calls.to_string(), calls.to_string()]).output().map(|o| o.status.success());
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
    files.retain(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cg.")));
    files.sort();
    let names = ["Iprobe", "Comm_rank", "Send", "Recv"];
    let Some(costs) = (status.unwrap_or(false)).then(|| files.first().and_then(|f| callgrind_costs(f, &names))).flatten() else {
        println!("\ninstructions per call: the callgrind run failed");
        return;
    };
    println!("\ninstructions per call added by the interposer (callgrind, rank 0, counters=off, {calls} calls each; encoding included)");
    for n in names {
        let (wrapper, mpi) = costs[n];
        println!("MPI_{n:<10} {:>8.1}", wrapper.saturating_sub(mpi) as f64 / calls as f64);
    }
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
        let env = [("LD_PRELOAD", lib.display().to_string()), ("INTERPOSER_OUT", dir.path().display().to_string())];
        let (mut cmd, _session) = mpirun(&env);
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
    let prog = root.join("c-tests/build/overhead");
    let only = std::env::var("OVERHEAD_SECTIONS").ok().and_then(|v| v.trim().parse::<u32>().ok());
    if only.is_none_or(|s| s == 1) {
        per_call(&prog, &lib);
    }
    if only.is_none_or(|s| s == 2) {
        instructions(&prog, &lib);
    }
    if only.is_none_or(|s| s == 3) {
        sizes(&root, &lib);
    }
}

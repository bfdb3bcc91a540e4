//! Extrapolated replay at scale, two workloads traced at 2, 4 and 8 ranks
//! and replayed at 65,536 and 1,048,576 ranks by `simulator replay
//! --ranks N` (each rank's actions generated as the replay reads them, no
//! file per rank), each run a child process timed for wall clock, CPU
//! and maximum resident set size (`wait4`'s rusage):
//!
//! - `ring`: `nbexchange 8 8 2`, a ring exchange (`MPI_Irecv` from both
//!   neighbours, `MPI_Isend` to both, `MPI_Waitall`) with an
//!   `MPI_Allreduce` of one double every second iteration: about 100
//!   actions per rank, the size of a short TI ring + all-reduce trace;
//! - `jacobi2d`: `jacobi2d 2048 30`, a 2-D halo exchange with an
//!   all-reduce per iteration: about 1,250 events per rank.
//!
//! ```sh
//! cargo build --release -p interposer        # the tracing library
//! cargo bench -p simulator-tools --bench million
//! BENCH_RANKS=65536 BENCH_REPEAT=5 BENCH_WORKLOADS=jacobi2d cargo bench -p simulator-tools --bench million
//! ```
//!
//! Inputs go to `target/bench-million` (`BENCH_DIR` to move them): the
//! traces are taken once with OpenMPI's `mpirun` and the interposer
//! (`c-tests` built by `make`), the platform is 32,768 hosts of 32 cores.
//! `BENCH_WORKLOADS` (comma-separated names, default both), `BENCH_RANKS`
//! (comma-separated) and `BENCH_REPEAT` (runs per count, default 3 below
//! a million ranks and 1 above) choose the runs; the medians of wall
//! time, CPU time and maximum RSS are printed with the actions and
//! events per rank and the load average, since a shared machine moves
//! the wall time most. Each run's JSON report is kept as
//! `report-<workload>-<N>.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[allow(dead_code, reason = "each benchmark uses part of the shared helpers")]
mod common;
use common::{load, median, timed_child, trace_c_test};

/// The workloads: name, c-test program and its arguments.
const WORKLOADS: [(&str, &str, &[&str]); 2] = [("ring", "nbexchange", &["8", "8", "2"]), ("jacobi2d", "jacobi2d", &["2048", "30"])];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target/bench-million"));
    std::fs::create_dir_all(&dir).expect("bench directory");
    let platform = dir.join("platform.toml");
    std::fs::write(&platform, platform_toml(32_768, 32)).expect("platform");
    let ranks: Vec<u32> = match std::env::var("BENCH_RANKS") {
        Ok(s) => s.split(',').map(|n| n.trim().parse().expect("BENCH_RANKS: comma-separated rank counts")).collect(),
        Err(_) => vec![65_536, 1_048_576],
    };
    let names: Vec<String> = match std::env::var("BENCH_WORKLOADS") {
        Ok(s) => s.split(',').map(|w| w.trim().to_string()).collect(),
        Err(_) => WORKLOADS.iter().map(|w| w.0.to_string()).collect(),
    };
    let repeat: Option<usize> = std::env::var("BENCH_REPEAT").ok().map(|s| s.parse().expect("BENCH_REPEAT: a count"));
    println!(
        "{:>9} {:>9} {:>5} {:>10} {:>10} {:>11} {:>9} {:>9} {:>14}  load (1, 5, 15 min)",
        "workload", "ranks", "runs", "wall_s", "cpu_s", "max_rss_mb", "act/rank", "ev/rank", "makespan_s"
    );
    for name in &names {
        let Some(&(_, prog, args)) = WORKLOADS.iter().find(|w| w.0 == name) else {
            panic!("BENCH_WORKLOADS: unknown workload {name} (known: ring, jacobi2d)");
        };
        let traces = traces(&root, &dir, prog, args);
        for &n in &ranks {
            let runs = repeat.unwrap_or(if n < 1 << 20 { 3 } else { 1 });
            let report = dir.join(format!("report-{name}-{n}.json"));
            let (mut walls, mut cpus, mut rss) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                let (wall, cpu, kb) = run(&platform, n, &traces, &report);
                walls.push(wall);
                cpus.push(cpu);
                rss.push(kb as f64 / 1024.0);
            }
            // Only the totals: the per-rank part of a million-rank report
            // would take this process's memory to about a gigabyte, which
            // the next child's maximum RSS would count from its fork.
            let file = std::io::BufReader::new(std::fs::File::open(&report).expect("report"));
            let top: Totals = serde_json::from_reader(file).expect("JSON report");
            let makespan = top.makespan_s;
            let (actions, events) = (top.actions / n as f64, top.events / n as f64);
            let (wall, cpu, rss) = (median(&mut walls), median(&mut cpus), median(&mut rss));
            println!(
                "{name:>9} {n:>9} {runs:>5} {wall:>10.2} {cpu:>10.2} {rss:>11.0} {actions:>9.1} {events:>9.1} {makespan:>14.9}  {}",
                load()
            );
        }
    }
}

/// The totals of a replay's JSON report (its other fields are skipped).
#[derive(serde::Deserialize)]
struct Totals {
    makespan_s: f64,
    actions: f64,
    events: f64,
}

/// One replay as a child process: wall seconds, CPU seconds and maximum RSS, KiB.
fn run(platform: &Path, n: u32, traces: &[PathBuf], report: &Path) -> (f64, f64, i64) {
    let out = std::fs::File::create(report).expect("report file");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_simulator"));
    cmd.args(["replay", "--json", "--ranks", &n.to_string(), "--platform"]).arg(platform).args(traces).stdout(out).stderr(Stdio::inherit());
    timed_child(&mut cmd, &format!("replay at {n} ranks"))
}

/// The trace directories of `prog args` at 2, 4 and 8 ranks, taken when missing.
fn traces(root: &Path, dir: &Path, prog: &str, args: &[&str]) -> Vec<PathBuf> {
    let tag = args.join("-");
    [2, 4, 8]
        .iter()
        .map(|&np| {
            let out = dir.join(format!("{prog}-{tag}-{np}"));
            if !out.join("meta.json").exists() {
                trace_c_test(root, &out, prog, args, np);
            }
            out
        })
        .collect()
}
/// `hosts` hosts of `cores` cores, shared memory within a host and a
/// faster-latency-bound network between hosts (a calibrated shape).
fn platform_toml(hosts: u32, cores: u32) -> String {
    let mut s = String::from("name = \"bench-million\"\n");
    for h in 0..hosts {
        s += &format!("[[hosts]]\nname = \"n{h}\"\ncores = {cores}\n");
    }
    s + "[network.intra]
eager_threshold_bytes = 4096
transfer = [ { max_bytes = 4096, intercept_s = 4e-7, bandwidth_bytes_per_s = 3e9 }, { intercept_s = 2e-6, bandwidth_bytes_per_s = 6e9 } ]
send_overhead = [ { intercept_s = 2e-7, bandwidth_bytes_per_s = 2e10 } ]
recv_overhead = [ { intercept_s = 2e-7, bandwidth_bytes_per_s = 2e10 } ]
[network.inter]
eager_threshold_bytes = 65536
transfer = [ { max_bytes = 65536, intercept_s = 1.5e-6, bandwidth_bytes_per_s = 5e9 }, { intercept_s = 4e-6, bandwidth_bytes_per_s = 1.2e10 } ]
send_overhead = [ { intercept_s = 5e-7, bandwidth_bytes_per_s = 2e10 } ]
recv_overhead = [ { intercept_s = 5e-7, bandwidth_bytes_per_s = 2e10 } ]
"
}

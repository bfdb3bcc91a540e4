//! Extrapolated replay at scale: `jacobi2d 2048 30` traced at 2, 4 and 8
//! ranks, replayed at 65,536 and 1,048,576 ranks by `simulator replay
//! --ranks N`, each run a child process timed for wall clock and maximum
//! resident set size (`wait4`'s rusage).
//!
//! ```sh
//! cargo build --release -p interposer        # the tracing library
//! cargo bench -p simulator-tools --bench million
//! BENCH_RANKS=65536 BENCH_REPEAT=5 cargo bench -p simulator-tools --bench million
//! ```
//!
//! Inputs go to `target/bench-million` (`BENCH_DIR` to move them): the
//! traces are taken once with OpenMPI's `mpirun` and the interposer
//! (`c-tests` built by `make`), the platform is 32,768 hosts of 32 cores.
//! `BENCH_RANKS` (comma-separated) and `BENCH_REPEAT` (runs per count,
//! default 3 below a million ranks and 1 above) choose the runs; the
//! medians of wall time, CPU time and maximum RSS are printed with the
//! load average, since a shared machine moves the wall time most. Each run's JSON report is kept as `report-<N>.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{load, median, timed_child, trace_c_test};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target/bench-million"));
    std::fs::create_dir_all(&dir).expect("bench directory");
    let traces = traces(&root, &dir);
    let platform = dir.join("platform.toml");
    std::fs::write(&platform, platform_toml(32_768, 32)).expect("platform");
    let ranks: Vec<u32> = match std::env::var("BENCH_RANKS") {
        Ok(s) => s.split(',').map(|n| n.trim().parse().expect("BENCH_RANKS: comma-separated rank counts")).collect(),
        Err(_) => vec![65_536, 1_048_576],
    };
    let repeat: Option<usize> = std::env::var("BENCH_REPEAT").ok().map(|s| s.parse().expect("BENCH_REPEAT: a count"));
    println!(
        "{:>9} {:>5} {:>10} {:>10} {:>11} {:>14}  load (1, 5, 15 min)",
        "ranks", "runs", "wall_s", "cpu_s", "max_rss_mb", "makespan_s"
    );
    for n in ranks {
        let runs = repeat.unwrap_or(if n < 1 << 20 { 3 } else { 1 });
        let report = dir.join(format!("report-{n}.json"));
        let (mut walls, mut cpus, mut rss) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let (wall, cpu, kb) = run(&platform, n, &traces, &report);
            walls.push(wall);
            cpus.push(cpu);
            rss.push(kb as f64 / 1024.0);
        }
        let text = std::fs::read_to_string(&report).expect("report");
        let makespan = serde_json::from_str::<serde_json::Value>(&text).expect("JSON report")["makespan_s"].as_f64().unwrap_or(f64::NAN);
        let (wall, cpu, rss) = (median(&mut walls), median(&mut cpus), median(&mut rss));
        println!("{n:>9} {runs:>5} {wall:>10.2} {cpu:>10.2} {rss:>11.0} {makespan:>14.9}  {}", load());
    }
}

/// One replay as a child process: wall seconds, CPU seconds and maximum RSS, KiB.
fn run(platform: &Path, n: u32, traces: &[PathBuf], report: &Path) -> (f64, f64, i64) {
    let out = std::fs::File::create(report).expect("report file");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_simulator"));
    cmd.args(["replay", "--json", "--ranks", &n.to_string(), "--platform"]).arg(platform).args(traces).stdout(out).stderr(Stdio::inherit());
    timed_child(&mut cmd, &format!("replay at {n} ranks"))
}

/// The trace directories at 2, 4 and 8 ranks, taken when missing.
fn traces(root: &Path, dir: &Path) -> Vec<PathBuf> {
    [2, 4, 8]
        .iter()
        .map(|&np| {
            let out = dir.join(format!("jacobi2d-{np}"));
            if !out.join("meta.json").exists() {
                trace_c_test(root, &out, "jacobi2d", &["2048", "30"], np);
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

//! A collective checkpoint at scale: a synthetic trace of `BENCH_RANKS`
//! ranks (default 1024) that each compute 10 ms, then open a shared file,
//! write their 16 MiB block with `MPI_File_write_at_all`, sync and close
//! it, `BENCH_STEPS` times (default 10), replayed by `simulator replay` on
//! 32-core hosts with an 8-server file system (1 MiB stripes, a 256 MiB
//! write-back cache per server). Each replay is a child process timed for
//! wall clock, CPU and maximum RSS; medians of `BENCH_REPEAT` runs
//! (default 3) are printed with the load average.
//!
//! ```sh
//! cargo bench -p simulator-tools --bench checkpoint_io
//! BENCH_RANKS=4096 BENCH_STEPS=4 cargo bench -p simulator-tools --bench checkpoint_io
//! ```
//!
//! `BENCH_LINKS=1` adds link sharing (`[links]`, 12.5 GB/s per host link):
//! the file system's traffic then moves as flows of the network.
//!
//! The trace and platform go to `target/bench-checkpoint` (`BENCH_DIR`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use simulator::trace::{self, CallRecord, Op, Params, RankHeader, RankWriter, TimingSource, TraceMeta};

#[allow(dead_code, reason = "each benchmark uses part of the shared helpers")]
mod common;
use common::{load, median, timed_child};

const BLOCK: u64 = 16 << 20;

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name).map_or(default, |s| s.parse().unwrap_or_else(|_| panic!("{name}: a count")))
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target/bench-checkpoint"));
    let (ranks, steps, repeat) = (env_u32("BENCH_RANKS", 1024), env_u32("BENCH_STEPS", 10), env_u32("BENCH_REPEAT", 3));
    let trace = dir.join(format!("trace-{ranks}x{steps}"));
    if !trace.join(trace::META_FILE).exists() {
        write_trace(&trace, ranks, steps);
    }
    let platform = dir.join("platform.toml");
    let mut toml = platform_toml(ranks.div_ceil(32), 32);
    if std::env::var("BENCH_LINKS").is_ok_and(|v| v == "1") {
        toml += "[links]\nbw_bytes_per_s = 1.25e10\n";
    }
    std::fs::write(&platform, toml).expect("platform");
    let report = dir.join(format!("report-{ranks}x{steps}.json"));
    let (mut walls, mut cpus, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeat {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_simulator"));
        cmd.args(["replay", "--json", "--platform"]).arg(&platform).arg(&trace);
        cmd.stdout(File::create(&report).expect("report file")).stderr(Stdio::inherit());
        let (wall, cpu, kb) = timed_child(&mut cmd, "replay of the checkpoint trace");
        walls.push(wall);
        cpus.push(cpu);
        rss.push(kb as f64 / 1024.0);
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON report");
    println!(
        "{:>6} {:>6} {:>5} {:>8} {:>8} {:>11} {:>12} {:>12}  load",
        "ranks", "steps", "runs", "wall_s", "cpu_s", "max_rss_mb", "makespan_s", "io_s/rank"
    );
    println!(
        "{ranks:>6} {steps:>6} {repeat:>5} {:>8.2} {:>8.2} {:>11.0} {:>12.6} {:>12.6}  {}",
        median(&mut walls),
        median(&mut cpus),
        median(&mut rss),
        v["makespan_s"].as_f64().unwrap_or(f64::NAN),
        v["io_s"].as_f64().unwrap_or(f64::NAN) / f64::from(ranks),
        load()
    );
}

fn rec(op: Op, compute_ms: u64, params: Params) -> CallRecord {
    let ns = compute_ms * 1_000_000;
    CallRecord {
        op,
        failed: false,
        caller: 0x1000,
        compute_cpu_ns: ns,
        compute_wall_ns: ns,
        counters: None,
        t_start_ns: 0,
        t_end_ns: 0,
        params,
    }
}

fn io(file: u32, offset: u64, bytes: u64) -> Params {
    Params::Io { file, offset, bytes, comm: 0, request: 0 }
}

/// `MPI_File_open` of `file` on `MPI_COMM_WORLD`, no hints.
fn open(file: u32) -> Params {
    Params::IoInfo { file, comm: 0, amode: 0, disp: 0, etype_bytes: 0, view_bytes: 0, view_extent: 0, block_bytes: 0, hints: Vec::new() }
}

/// `ranks` rank files of `steps` checkpoints each (file ids 1, 2, ...).
fn write_trace(dir: &Path, ranks: u32, steps: u32) {
    std::fs::create_dir_all(dir).expect("trace directory");
    let meta = TraceMeta {
        format_version: 1,
        ranks,
        mpi_library: "synthetic".into(),
        timing_source: TimingSource::ClockGettime,
        tsc_hz: None,
        command: vec!["checkpoint".into()],
        mode: "trace".into(),
    };
    std::fs::write(dir.join(trace::META_FILE), serde_json::to_string(&meta).expect("meta")).expect("meta.json");
    for r in 0..ranks {
        let header = RankHeader {
            rank: r,
            ranks,
            host: "synthetic".into(),
            pid: r + 1,
            timing_source: TimingSource::ClockGettime,
            tsc_hz: None,
            epoch_unix_s: 0.0,
        };
        let f = File::create(dir.join(trace::rank_file_name(r))).expect("rank file");
        let mut w = RankWriter::create(f, &header).expect("rank header");
        w.push(&rec(Op::Init, 0, Params::None)).expect("write");
        for s in 0..steps {
            let file = s + 1;
            w.push(&rec(Op::FileOpen, 10, open(file))).expect("write");
            w.push(&rec(Op::FileWriteAtAll, 0, io(file, u64::from(r) * BLOCK, BLOCK))).expect("write");
            w.push(&rec(Op::FileSync, 0, io(file, 0, 0))).expect("write");
            w.push(&rec(Op::FileClose, 0, io(file, 0, 0))).expect("write");
        }
        w.push(&rec(Op::Finalize, 0, Params::None)).expect("write");
        w.finish(&[]).expect("rank end");
    }
}

/// `hosts` hosts of `cores` cores on a 10 GB/s network, and the file system.
fn platform_toml(hosts: u32, cores: u32) -> String {
    let mut s = String::from("name = \"bench-checkpoint\"\n");
    for h in 0..hosts {
        s += &format!("[[hosts]]\nname = \"n{h}\"\ncores = {cores}\n");
    }
    s + "[network.intra]
eager_threshold_bytes = 4096
transfer = [ { intercept_s = 4e-7, bandwidth_bytes_per_s = 6e9 } ]
[network.inter]
eager_threshold_bytes = 65536
transfer = [ { intercept_s = 2e-6, bandwidth_bytes_per_s = 1e10 } ]
[[fs]]
name = \"scratch\"
servers = 8
stripe_size_bytes = 1048576
metadata_latency_s = 2e-4
link_bytes_per_s = 1.25e9
[fs.disk]
latency_s = 1e-4
read_bytes_per_s = 5e8
write_bytes_per_s = 3e8
cache_bytes = 268435456
"
}

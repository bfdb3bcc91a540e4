//! Extrapolation accuracy: c-tests traced at 2, 4, 8, 16 and 32 ranks;
//! the runs at 16 and 32 extrapolated from those at 2, 4 and 8, and the
//! replay of each extrapolated run set against the replay of the real
//! traces at that count, on the same platform.
//!
//! ```sh
//! make -C c-tests && cargo build --release -p interposer -p calibrate
//! cargo bench -p simulator-tools --bench extrapolation
//! BENCH_RUNS=5 BENCH_PROGS=jacobi2d,ring BENCH_REGIONS=1 cargo bench -p simulator-tools --bench extrapolation
//! BENCH_ISOLATE=1 cargo bench -p simulator-tools --bench extrapolation
//! ```
//!
//! Inputs go to `target/bench-extrapolation` (`BENCH_DIR` to move them) and
//! are kept: the traces (`<prog>-<N>-<run>`, OpenMPI's `mpirun
//! --oversubscribe` with the interposer; delete a directory to trace it
//! again) and the platform, `calibrate network`'s (`BENCH_PLATFORM` names
//! another). Its hosts are replaced by one host with a core per rank
//! (`cores`: the run one wants to predict, where a rank's imbalance and
//! waits show) and by one host of the tracing machine's 2 cores
//! (`shared`: where the traces were taken, ranks sharing the cores).
//!
//! Each count is traced `BENCH_RUNS` times (default 3). The real side
//! replays the runs at N together (each block at the median of its
//! durations); the model reads every run at 2, 4 and 8 ranks. The table:
//! the real runs' replayed makespan and the spread of the runs replayed
//! one by one ((max − min) / median: how far the reference itself moves
//! on this machine), the extrapolated makespan, error, whether every rank sends the same messages
//! and bytes as in the real run, the compute summed over ranks (real and
//! extrapolated), the mean wait per rank, and the largest compute law's
//! fit residual, weighted by the region's share of the compute.
//! `BENCH_REGIONS=1` adds each region's compute total, real and
//! extrapolated, at every target count. The load average is printed with
//! each program. `BENCH_ISOLATE=1` traces every run in online mode on the
//! bench's platform with the interposer's default isolation (one rank of
//! the node computes at a time once the ranks outnumber the cores, so no
//! block's CPU time is measured beside another rank's), into
//! `<prog>-<N>-<run>-isolated`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use simulator::action::ComputeTime;
use simulator::extrapolate::{Model, Sample};
use simulator::platform::Platform;
use simulator::replay::{replay, ReplayReport};

#[allow(dead_code, reason = "each benchmark uses part of the shared helpers")]
mod common;
use common::{load, median, trace_c_test_env};

/// Programs and their arguments: a strong-scaling stencil, a ring, a
/// collective loop and sub-communicators.
const PROGRAMS: [(&str, &[&str]); 4] =
    [("jacobi2d", &["2048", "30"]), ("ring", &["1000", "4096"]), ("allreduce_loop", &["300", "65536"]), ("comm_split", &["200", "8192"])];
const SMALL: [u32; 3] = [2, 4, 8];
const TARGETS: [u32; 2] = [16, 32];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target/bench-extrapolation"));
    std::fs::create_dir_all(&dir).expect("bench directory");
    let runs: usize = std::env::var("BENCH_RUNS").map(|s| s.parse().expect("BENCH_RUNS: a count")).unwrap_or(3);
    let wanted: Option<Vec<String>> = std::env::var("BENCH_PROGS").ok().map(|s| s.split(',').map(str::to_string).collect());
    let regions = std::env::var_os("BENCH_REGIONS").is_some();
    let base_path = platform_path(&root, &dir);
    let base = platform(&base_path);
    let isolate = std::env::var_os("BENCH_ISOLATE").is_some().then_some(base_path.as_path());
    let platforms = [("cores", with_host(&base, 32)), ("shared", with_host(&base, 2))];
    println!(
        "{:<15} {:>3} {:<7} {:>10} {:>8} {:>10} {:>8} {:>5} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "program", "N", "host", "real_s", "spread_%", "extrap_s", "err_%", "msgs", "cpu_real", "cpu_extr", "wait_re", "wait_ex", "resid_%"
    );
    for (prog, args) in PROGRAMS {
        if wanted.as_ref().is_some_and(|w| !w.iter().any(|p| p == prog)) {
            continue;
        }
        let traced = |n: u32| -> Vec<PathBuf> { (0..runs).map(|k| trace(&root, &dir, prog, args, n, k, isolate)).collect() };
        let small: Vec<PathBuf> = SMALL.iter().flat_map(|&n| traced(n)).collect();
        let samples = small.iter().map(|d| Sample::open(d).expect("trace")).collect();
        let model = Model::build(samples).unwrap_or_else(|e| panic!("{prog}: {e}"));
        let resid = residual(&model);
        for n in TARGETS {
            let real_dirs = traced(n);
            for (host, p) in &platforms {
                let real = replay_real(p, &real_dirs);
                let mut each: Vec<f64> = real_dirs.iter().map(|d| replay_real(p, std::slice::from_ref(d)).makespan_s).collect();
                let lo = each.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = each.iter().copied().fold(0.0, f64::max);
                let spread = (hi - lo) / median(&mut each) * 100.0;
                let extr = replay(p, model.streams(n)).expect("replay of the extrapolated run");
                let err = (extr.makespan_s / real.makespan_s - 1.0) * 100.0;
                let sent = |r: &ReplayReport| r.ranks.iter().map(|k| (k.messages, k.bytes_sent)).collect::<Vec<_>>();
                let msgs = if sent(&real) == sent(&extr) { "exact" } else { "DIFF" };
                let sum = |r: &ReplayReport, f: fn(&simulator::replay::RankReport) -> f64| r.ranks.iter().map(f).sum::<f64>();
                let k = n as f64;
                println!(
                    "{prog:<15} {n:>3} {host:<7} {:>10.6} {spread:>8.1} {:>10.6} {err:>+8.2} {msgs:>5} {:>9.5} {:>9.5} {:>9.6} {:>9.6} {:>7.2}",
                    real.makespan_s,
                    extr.makespan_s,
                    sum(&real, |r| r.compute_s),
                    sum(&extr, |r| r.compute_s),
                    sum(&real, |r| r.wait_s) / k,
                    sum(&extr, |r| r.wait_s) / k,
                    resid * 100.0
                );
            }
            if regions {
                region_table(&model, &real_dirs, n);
            }
        }
        println!("# {prog}: load {}", load());
    }
}

/// The replay of traced runs of one rank count: one run as it is, several
/// with each block at the median of its durations.
fn replay_real(p: &Platform, dirs: &[PathBuf]) -> ReplayReport {
    let open = |d: &PathBuf| simulator::replay::open_trace_dir(d, ComputeTime::Cpu).expect("trace");
    if dirs.len() == 1 {
        return replay(p, open(&dirs[0])).expect("replay");
    }
    replay(p, simulator::replay::runs::median_of_runs(dirs.iter().map(open).collect())).expect("replay")
}

/// The compute-weighted relative residual of the model's compute laws
/// (weights: each region's compute at the largest sample).
fn residual(model: &Model) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for c in &model.classes {
        for l in &c.laws {
            let w = l.points.last().map_or(0.0, |p| p.1) * l.blocks as f64;
            num += w * l.law.rel_rms;
            den += w;
        }
    }
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

/// Compute CPU seconds per region, summed over ranks: real (first traced
/// run) against extrapolated, largest first.
fn region_table(model: &Model, real_dirs: &[PathBuf], n: u32) {
    let mut totals: HashMap<u64, (f64, f64)> = HashMap::new();
    let mut names: HashMap<u64, String> = HashMap::new();
    let (_, traces) = simulator::trace::open_dir(&real_dirs[0]).expect("trace");
    for t in traces {
        let mut prev = simulator::trace::CallSite { module: String::new(), offset: 0 };
        for r in t.records().expect("records") {
            let r = r.expect("record");
            let site = t.call_site(r.caller);
            let id = simulator::trace::region_id(&prev, &site);
            names.entry(id).or_insert_with(|| format!("{prev}:{site}"));
            totals.entry(id).or_default().0 += r.compute_cpu_ns as f64 * 1e-9;
            prev = site;
        }
    }
    for r in 0..n {
        let mut it = model.records(r, n);
        while let Some((rec, region)) = it.next_with_region() {
            totals.entry(region).or_default().1 += rec.compute_cpu_ns as f64 * 1e-9;
        }
    }
    let mut rows: Vec<(u64, (f64, f64))> = totals.into_iter().filter(|(_, (a, b))| a.max(*b) > 1e-4).collect();
    rows.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0));
    for (id, (real, extr)) in rows.iter().take(6) {
        let name = names.get(id).map_or("?", String::as_str);
        println!("    {name:<40} at {n}: real {real:.5} s, extrapolated {extr:.5} s ({:+.1} %)", (extr / real - 1.0) * 100.0);
    }
}

/// The trace of run `k` of `prog` at `n` ranks, taken when missing. With
/// `isolate` (the platform file given) the run is made in online mode
/// with the interposer's default isolation (`INTERPOSER_ISOLATE=auto`: one
/// rank of the node computes at a time when the ranks outnumber the
/// cores), into `<prog>-<n>-<k>-isolated`.
fn trace(root: &Path, dir: &Path, prog: &str, args: &[&str], n: u32, k: usize, isolate: Option<&Path>) -> PathBuf {
    let suffix = if isolate.is_some() { "-isolated" } else { "" };
    let out = dir.join(format!("{prog}-{n}-{k}{suffix}"));
    if out.join("meta.json").exists() {
        return out;
    }
    let env: Vec<(&str, &std::ffi::OsStr)> = match isolate {
        Some(p) => {
            vec![("INTERPOSER_MODE", "online".as_ref()), ("INTERPOSER_ISOLATE", "auto".as_ref()), ("INTERPOSER_PLATFORM", p.as_os_str())]
        }
        None => Vec::new(),
    };
    trace_c_test_env(root, &out, prog, args, n, &env);
    out
}

/// The calibrated platform's file: `BENCH_PLATFORM`, else `calibrate
/// network`'s output, made once.
fn platform_path(root: &Path, dir: &Path) -> PathBuf {
    match std::env::var_os("BENCH_PLATFORM") {
        Some(p) => PathBuf::from(p),
        None => {
            let path = dir.join("calibrated.toml");
            if !path.exists() {
                let exe = common::release_dir(root).join("calibrate");
                assert!(exe.exists(), "{} missing: cargo build --release -p calibrate", exe.display());
                let ok = Command::new(&exe)
                    .args(["network", "--out"])
                    .arg(&path)
                    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(ok, "calibrate network failed");
            }
            path
        }
    }
}

/// The platform in `path`, as a TOML table.
fn platform(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse().unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `base` with its hosts replaced by one host of `cores` cores.
fn with_host(base: &toml::Table, cores: i64) -> Platform {
    let mut t = base.clone();
    let mut host = toml::Table::new();
    host.insert("name".into(), "node0".into());
    host.insert("cores".into(), cores.into());
    t.insert("hosts".into(), toml::Value::Array(vec![toml::Value::Table(host)]));
    let path = std::env::temp_dir().join(format!("bench-extrapolation-{}-{cores}.toml", std::process::id()));
    std::fs::write(&path, toml::to_string(&t).expect("platform TOML")).expect("platform file");
    let p = Platform::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_file(&path);
    p
}

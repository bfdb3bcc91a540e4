//! Replay at scale on a contended cluster against SimGrid, in one table:
//! a flat SimGrid cluster (a private 10 GBps / 1 µs link per host, so
//! every transfer shares its hosts' links: our max-min flow sharing),
//! and `c-tests/stencil2d` (a 2-D halo exchange of 16 KiB per neighbour,
//! 100 µs of compute per step and an `MPI_Allreduce`):
//!
//! - `extrapolated N`: the skeleton traced at 2, 4 and 8 ranks with the
//!   interposer (Open MPI), 100 steps, and replayed at N ranks by
//!   `simulator replay --ranks N`, against SMPI emulating the program at
//!   N ranks (`smpicc`; the compute injected with `smpi_execute` and
//!   `smpi/simulate-computation:no`, so SMPI's time is all simulation);
//! - `ti 32`: SMPI's TI trace of the skeleton at 32 ranks, 2000 steps
//!   (`smpirun -trace-ti`), replayed by `smpirun -replay` and by ours;
//! - `lu 32`: the same for `c-tests/ssor_wavefront` (NPB LU's pipelined
//!   wavefront sweeps: 400-byte messages along a 2-D grid, 5 µs of
//!   compute per plane, 32 planes, 80 iterations; about 1M lines);
//! - `million`: the skeleton, 10 steps, extrapolated to 1,048,576 ranks
//!   on a 2^20-host cluster (ours only), stopped after
//!   `BENCH_MILLION_LIMIT_S` seconds (default 300; its row then shows
//!   the times at the stop, marked `>`, and no makespan).
//!
//! ```sh
//! cargo build --release -p interposer && make -C c-tests
//! cargo bench -p simulator-tools --bench scale
//! BENCH_RANKS=256 BENCH_MILLION=0 BENCH_BASELINE=/tmp/old-simulator cargo bench -p simulator-tools --bench scale
//! ```
//!
//! Each row gives the medians of `BENCH_REPEAT` runs (default 3; 1 for
//! the million ranks) of wall and CPU seconds and the largest maximum
//! RSS (`wait4`'s rusage), the makespan (SMPI's emulation: its
//! `wall_s=` line, the timed region between barriers, plus nothing
//! else), and SimGrid's CPU time over ours. `BENCH_RANKS` (default
//! 256,1024) sets the extrapolated counts, `BENCH_SMPI=0` skips SimGrid,
//! `BENCH_MILLION=0` the million-rank run, and `BENCH_BASELINE` names
//! another build of `simulator`, run interleaved with this one (its
//! makespan must agree to 1e-9 relative). Inputs go to
//! `target/bench-scale` (`BENCH_DIR` to move them); traces are kept.

use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code, reason = "each benchmark uses part of the shared helpers")]
mod common;
use common::{load, median, timed_child_status, trace_c_test};

/// The skeleton's arguments: bytes per neighbour, steps, compute µs per step.
const ARGS: [&str; 3] = ["16384", "100", "100"];
const MILLION: u32 = 1 << 20;
/// Steps of the 32-rank TI trace (about 1M lines).
const TI_STEPS: &str = "2000";
/// The wavefront's arguments: bytes per message, iterations, planes,
/// compute µs per plane (about 1M lines at 32 ranks).
const LU_ARGS: [&str; 4] = ["400", "80", "32", "5"];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target/bench-scale"));
    std::fs::create_dir_all(&dir).expect("bench directory");
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let ranks: Vec<u32> = env("BENCH_RANKS")
        .map_or(vec![256, 1024], |s| s.split(',').map(|n| n.trim().parse().expect("BENCH_RANKS: comma-separated rank counts")).collect());
    let repeat: usize = env("BENCH_REPEAT").map_or(3, |s| s.parse().expect("BENCH_REPEAT: a count"));
    let smpi = env("BENCH_SMPI").is_none_or(|v| v != "0") && have("smpicc") && have("smpirun");
    let million = env("BENCH_MILLION").is_none_or(|v| v != "0");
    let limit_s: f64 = env("BENCH_MILLION_LIMIT_S").map_or(300.0, |s| s.parse().expect("BENCH_MILLION_LIMIT_S: seconds"));
    let ours = PathBuf::from(env!("CARGO_BIN_EXE_simulator"));
    let baseline = env("BENCH_BASELINE").map(PathBuf::from);
    let mut bins: Vec<(&str, &Path)> = baseline.iter().map(|b| ("baseline", b.as_path())).collect();
    bins.push(("ours", &ours));

    let traces = |steps: &str| -> Vec<PathBuf> {
        [2, 4, 8]
            .iter()
            .map(|&np| {
                let out = dir.join(format!("stencil2d-{steps}-{np}"));
                if !out.join("meta.json").exists() {
                    trace_c_test(&root, &out, "stencil2d", &[ARGS[0], steps, ARGS[2]], np);
                }
                out
            })
            .collect()
    };
    if smpi {
        for prog in ["stencil2d", "ssor_wavefront"] {
            let src = root.join(format!("c-tests/{prog}.c"));
            let ok = Command::new("smpicc").args(["-O2", "-I"]).arg(root.join("c-tests")).arg(&src).arg("-o").arg(dir.join(prog)).status();
            assert!(ok.is_ok_and(|s| s.success()), "smpicc {}", src.display());
        }
    } else {
        println!("# SimGrid skipped (BENCH_SMPI=0, or smpicc / smpirun not found)");
    }
    println!("load before: {}", load());
    let mut rows: Vec<Row> = Vec::new();
    let small = traces(ARGS[1]);
    for &n in &ranks {
        let xml = cluster(&dir, n);
        let mut runs: Vec<(String, Command)> = bins.iter().map(|(name, bin)| (name.to_string(), replay(bin, &xml, n, &small))).collect();
        if smpi {
            let mut c = Command::new("smpirun");
            c.args(["-np", &n.to_string(), "-platform"]).arg(&xml).arg("-hostfile").arg(hostfile(&dir, n));
            c.args(["--cfg=smpi/host-speed:1Gf", "--cfg=smpi/simulate-computation:no"]).arg(dir.join("stencil2d")).args(ARGS);
            runs.push(("smpi emulation".into(), c));
        }
        rows.extend(measure(&dir, &format!("extrapolated {n}"), runs, repeat));
    }
    if smpi {
        let xml = cluster(&dir, 32);
        std::fs::copy(&xml, dir.join("p.xml")).expect("platform");
        std::fs::copy(hostfile(&dir, 32), dir.join("hosts")).expect("hostfile");
        let stencil = [ARGS[0], TI_STEPS, ARGS[2]];
        for (case, prog, args) in [("ti 32", "stencil2d", &stencil[..]), ("lu 32", "ssor_wavefront", &LU_ARGS[..])] {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let (list, lines) = common::smpi_ti_trace(&dir, prog, &args, 32);
            let mut runs: Vec<(String, Command)> = bins
                .iter()
                .map(|(name, bin)| {
                    let mut c = Command::new(bin);
                    c.arg("replay").arg("--platform").arg(&xml).arg(&list).arg("--json");
                    (name.to_string(), c)
                })
                .collect();
            let mut c = Command::new("smpirun");
            c.args(["-np", "32", "-platform"]).arg(&xml).arg("-hostfile").arg(dir.join("hosts")).arg("-replay").arg(&list);
            runs.push(("smpirun -replay".into(), c));
            rows.extend(measure(&dir, &format!("{case} ({lines} lines)"), runs, repeat));
        }
    }
    if million {
        let big = traces("10");
        let xml = cluster(&dir, MILLION);
        let runs = bins
            .iter()
            .map(|(name, bin)| {
                let inner = replay(bin, &xml, MILLION, &big);
                let mut c = Command::new("timeout");
                c.arg(format!("{limit_s}")).arg(inner.get_program()).args(inner.get_args());
                (name.to_string(), c)
            })
            .collect();
        rows.extend(measure(&dir, "million (10 steps)", runs, 1));
    }
    println!("load after: {}\n", load());
    println!(
        "{:<24} {:<16} {:>5} {:>9} {:>9} {:>9} {:>16} {:>9}",
        "case", "tool", "runs", "wall_s", "cpu_s", "rss_MB", "makespan_s", "sg/cpu"
    );
    for (case, group) in rows.chunk_by(|a, b| a.case == b.case).map(|g| (&g[0].case, g)) {
        let sg = group.iter().find(|r| r.tool.starts_with("smpi")).map(|r| r.cpu);
        for r in group {
            let ratio = sg.filter(|_| !r.tool.starts_with("smpi")).map_or("-".into(), |s| format!("{:.1}x", s / r.cpu));
            let ms = r.makespan.map_or(if r.stopped { "stopped" } else { "?" }.into(), |m| format!("{m:.9}"));
            let at = if r.stopped { ">" } else { "" };
            let (wall, cpu) = (format!("{at}{:.2}", r.wall), format!("{at}{:.2}", r.cpu));
            println!("{case:<24} {:<16} {:>5} {wall:>9} {cpu:>9} {:>9.1} {ms:>16} {ratio:>9}", r.tool, r.runs, r.rss_mb);
        }
        let m = |t: &str| group.iter().find(|r| r.tool == t).and_then(|r| r.makespan);
        if let (Some(b), Some(o)) = (m("baseline"), m("ours")) {
            assert!((b - o).abs() <= 1e-9 * b.abs(), "{case}: makespan {o} differs from the baseline's {b} by more than 1e-9 relative");
        }
    }
}

/// One tool's medians on one case.
struct Row {
    case: String,
    tool: String,
    runs: usize,
    wall: f64,
    cpu: f64,
    rss_mb: f64,
    makespan: Option<f64>,
    /// Some run was stopped by its time limit.
    stopped: bool,
}

/// One tool's runs on one case: wall and CPU seconds, the largest
/// maximum RSS (MiB), the last makespan, and whether a run was stopped.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    rss_mb: f64,
    makespan: Option<f64>,
    stopped: bool,
}

/// Runs each command `repeat` times, round-robin, stdout to a file.
fn measure(dir: &Path, case: &str, mut runs: Vec<(String, Command)>, repeat: usize) -> Vec<Row> {
    let mut got: Vec<Samples> = runs.iter().map(|_| Samples::default()).collect();
    let out = dir.join("out.txt");
    for _ in 0..repeat {
        for ((tool, cmd), g) in runs.iter_mut().zip(&mut got) {
            let file = std::fs::File::create(&out).expect("output file");
            cmd.stdout(file.try_clone().expect("output file")).stderr(file);
            let what = format!("{case}: {tool}");
            let (wall, cpu, kb, status) = timed_child_status(cmd, &what);
            // A `timeout` wrapper that stopped its command exits with 124.
            let stopped = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 124;
            assert!(stopped || libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{what} failed (status {status})");
            g.stopped |= stopped;
            g.wall.push(wall);
            g.cpu.push(cpu);
            g.rss_mb = f64::max(g.rss_mb, kb as f64 / 1024.0);
            g.makespan = if stopped { None } else { makespan(&out) };
        }
    }
    runs.iter()
        .zip(got)
        .map(|((tool, _), mut g)| Row {
            case: case.into(),
            tool: tool.clone(),
            runs: repeat,
            wall: median(&mut g.wall),
            cpu: median(&mut g.cpu),
            rss_mb: g.rss_mb,
            makespan: g.makespan,
            stopped: g.stopped,
        })
        .collect()
}

/// The makespan a run printed: our JSON's `makespan_s`, the skeleton's
/// `wall_s=` line, or `smpirun -replay`'s "Simulation time".
fn makespan(out: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(out).ok()?;
    if let Some(v) = text.lines().find_map(|l| l.strip_prefix("wall_s=")) {
        return v.trim().parse().ok();
    }
    if let Some(v) = text.lines().find_map(|l| serde_json::from_str::<Totals>(l).ok()) {
        return Some(v.makespan_s);
    }
    text.lines().rev().find_map(|l| l.split("Simulation time ").nth(1)).and_then(|v| v.trim().parse().ok())
}

/// The totals of a replay's JSON report (its other fields are skipped).
#[derive(serde::Deserialize)]
struct Totals {
    makespan_s: f64,
}

/// `simulator replay --ranks n` on `xml` from the traces `small`.
fn replay(bin: &Path, xml: &Path, n: u32, small: &[PathBuf]) -> Command {
    let mut c = Command::new(bin);
    c.args(["replay", "--json", "--ranks", &n.to_string(), "--platform"]).arg(xml).args(small);
    c
}

/// A flat SimGrid cluster of `n` hosts, a private 10 GBps / 1 µs link each.
fn cluster(dir: &Path, n: u32) -> PathBuf {
    let path = dir.join(format!("flat-{n}.xml"));
    let xml = format!(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
         <platform version=\"4.1\"><zone id=\"world\" routing=\"Full\">\n  \
         <cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\" core=\"1\" bw=\"10GBps\" lat=\"1us\"/>\n\
         </zone></platform>\n",
        n - 1
    );
    std::fs::write(&path, xml).expect("platform");
    path
}

/// A host file naming the cluster's `n` hosts in order.
fn hostfile(dir: &Path, n: u32) -> PathBuf {
    let path = dir.join(format!("hosts-{n}"));
    std::fs::write(&path, (0..n).map(|i| format!("node-{i}\n")).collect::<String>()).expect("hostfile");
    path
}

fn have(cmd: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {cmd}")).output().is_ok_and(|o| o.status.success())
}

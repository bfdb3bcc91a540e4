//! TI replay throughput against SimGrid (`cargo bench -p simulator-tools
//! --bench ti_throughput`): traces c-tests programs at 32 ranks with
//! `smpirun -trace-ti` (SimGrid), then replays each trace with
//! `smpirun -replay` and with `simulator replay` on the same platform
//! XML, and prints, per trace and tool, the median wall and CPU (user +
//! sys) seconds of `TI_BENCH_REPS` runs taken round-robin (default 3), the
//! largest peak RSS (GNU time's "Maximum resident set size", of the
//! smpireplaymain process for smpirun) and the makespan, then SimGrid's
//! time over ours.
//!
//! The MPI_PROC_NULL send/recv lines are removed from the traces (SimGrid
//! 3.32's replay aborts on them), so both tools replay the same lines.
//!
//! Environment:
//! - `TI_BENCH_BASELINE=/path/to/simulator`: also time another build of
//!   our replay (e.g. the previous commit's) and check that its makespan
//!   agrees with this build's to 1e-9 relative (link sharing may keep
//!   rates between fillings, which changes rounding only).
//! - `TI_BENCH_CASES=jacobi2d,allreduce_loop,ring`: the traces to make.
//! - `TI_BENCH_SCALE=1.0`: multiplies every trace's iteration count
//!   (1.0: about 4.1M lines for jacobi2d, 2M for the others).
//! - `TI_BENCH_SIMGRID=0`: skip `smpirun -replay` (ours only).
//! - `TI_BENCH_PLATFORMS=flat,backbone`: the platforms each trace replays
//!   on: `flat`, a cluster whose transfers share the hosts' links (our
//!   flow-level sharing), and `backbone`, the same with a 10 GBps
//!   backbone (`bb_bw`) that every transfer between two hosts shares.
//!
//! Skips (exit 0) when `smpicc`, `smpirun` or `/usr/bin/time` is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code, reason = "each benchmark uses part of the shared helpers")]
mod common;
use common::{load, median};

const NP: usize = 32;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(cmd: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {cmd}")).output().is_ok_and(|o| o.status.success())
}

/// One timed run: (wall s, user + sys s, peak RSS KiB, stdout + stderr);
/// wall from our clock (GNU time's has 10 ms steps).
fn timed(dir: &Path, cmd: &mut Command) -> (f64, f64, u64, String) {
    let tfile = dir.join("time.txt");
    let prog = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let t0 = std::time::Instant::now();
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%e %U %S %M")
        .arg("-o")
        .arg(&tfile)
        .arg(prog)
        .args(args)
        .output()
        .expect("/usr/bin/time");
    let wall = t0.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?} failed:\n{}", text.lines().rev().take(5).collect::<Vec<_>>().join("\n"));
    let t = std::fs::read_to_string(&tfile).expect("time output");
    let v: Vec<f64> = t.lines().last().unwrap_or_default().split_whitespace().filter_map(|x| x.parse().ok()).collect();
    assert_eq!(v.len(), 4, "GNU time output: {t}");
    (wall, v[1] + v[2], v[3] as u64, text)
}

struct Tool {
    name: String,
    wall: Vec<f64>,
    cpu: Vec<f64>,
    rss_kib: u64,
    makespan: Option<f64>,
}

fn main() {
    for cmd in ["smpicc", "smpirun"] {
        if !have(cmd) {
            println!("skip: {cmd} not found (SimGrid)");
            return;
        }
    }
    if !Path::new("/usr/bin/time").exists() {
        println!("skip: GNU time (/usr/bin/time) not found");
        return;
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let reps: usize = env("TI_BENCH_REPS").and_then(|v| v.parse().ok()).unwrap_or(3);
    let scale: f64 = env("TI_BENCH_SCALE").and_then(|v| v.parse().ok()).unwrap_or(1.0);
    let with_simgrid = env("TI_BENCH_SIMGRID").is_none_or(|v| v != "0");
    let cases = env("TI_BENCH_CASES").unwrap_or_else(|| "jacobi2d,allreduce_loop,ring".into());
    let ours = PathBuf::from(env!("CARGO_BIN_EXE_simulator"));
    let baseline = env("TI_BENCH_BASELINE").map(PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let hosts: String = (0..NP).map(|i| format!("node-{i}\n")).collect();
    std::fs::write(dir.join("hosts"), hosts).unwrap();
    let xml = format!(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
         <platform version=\"4.1\"><zone id=\"world\" routing=\"Full\">\n  \
         <cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\" core=\"1\" bw=\"1.25GBps\" lat=\"2us\"/>\n\
         </zone></platform>\n",
        NP - 1
    );
    std::fs::write(dir.join("p.xml"), &xml).unwrap();
    std::fs::write(dir.join("backbone.xml"), xml.replace("lat=\"2us\"/>", "lat=\"2us\" bb_bw=\"10GBps\" bb_lat=\"1us\"/>")).unwrap();
    let platforms = env("TI_BENCH_PLATFORMS").unwrap_or_else(|| "flat,backbone".into());
    let iters = |n: f64| ((n * scale).round() as u64).max(1).to_string();
    println!("load before: {}", load());
    let mut rows = Vec::new();
    for case in cases.split(',').map(str::trim) {
        let args: Vec<String> = match case {
            "jacobi2d" => vec!["256".into(), iters(13300.0)],
            "allreduce_loop" => vec![iters(31000.0), "128".into()],
            "ring" => vec![iters(31000.0), "8".into()],
            other => panic!("unknown case {other} (jacobi2d, allreduce_loop, ring)"),
        };
        let src = root().join("c-tests").join(format!("{case}.c"));
        let st = Command::new("smpicc")
            .args(["-O2", "-I"])
            .arg(root().join("c-tests"))
            .arg(&src)
            .arg("-o")
            .arg(dir.join(case))
            .arg("-lm")
            .output();
        assert!(st.as_ref().is_ok_and(|o| o.status.success()), "smpicc {}: {st:?}", src.display());
        let (list, lines) = common::smpi_ti_trace(dir, case, &args, NP);
        for platform in platforms.split(',').map(str::trim) {
            let xml = dir.join(match platform {
                "flat" => "p.xml",
                "backbone" => "backbone.xml",
                other => panic!("unknown platform {other} (flat, backbone)"),
            });
            let mut tools: Vec<(String, Command)> = Vec::new();
            if with_simgrid {
                let mut c = Command::new("smpirun");
                c.args(["-np", &NP.to_string(), "-platform"]).arg(&xml).arg("-hostfile").arg(dir.join("hosts")).arg("-replay").arg(&list);
                tools.push(("simgrid".into(), c));
            }
            for (name, bin) in baseline.iter().map(|b| ("baseline", b)).chain([("ours", &ours)]) {
                let mut c = Command::new(bin);
                c.arg("replay").arg("--platform").arg(&xml).arg(&list).arg("--json");
                tools.push((name.into(), c));
            }
            let mut res: Vec<Tool> =
                tools.iter().map(|(n, _)| Tool { name: n.clone(), wall: vec![], cpu: vec![], rss_kib: 0, makespan: None }).collect();
            for _ in 0..reps {
                for ((_, cmd), t) in tools.iter_mut().zip(&mut res) {
                    let (wall, cpu, rss, text) = timed(dir, cmd);
                    t.wall.push(wall);
                    t.cpu.push(cpu);
                    t.rss_kib = t.rss_kib.max(rss);
                    let ms = if t.name == "simgrid" {
                        text.lines().rev().filter_map(|l| l.split("Simulation time ").nth(1)).filter_map(|v| v.trim().parse().ok()).next()
                    } else {
                        serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v["makespan_s"].as_f64())
                    };
                    assert!(t.makespan.is_none() || t.makespan == ms, "{}: makespan changed between runs", t.name);
                    t.makespan = ms;
                }
            }
            rows.push((format!("{case} {} {platform}", args.join(" ")), lines, res));
        }
    }
    println!("load after: {}\n", load());
    println!("{} ranks, median of {reps} runs; cpu = user + sys", NP);
    println!(
        "{:<36} {:>9} {:<9} {:>8} {:>8} {:>9} {:>14} {:>10} {:>10}",
        "trace", "lines", "tool", "wall_s", "cpu_s", "rss_MB", "makespan_s", "sg/wall", "sg/cpu"
    );
    for (trace, lines, res) in &rows {
        let sg = res.iter().find(|t| t.name == "simgrid").map(|t| (median(&mut t.wall.clone()), median(&mut t.cpu.clone())));
        for t in res {
            let (w, c) = (median(&mut t.wall.clone()), median(&mut t.cpu.clone()));
            let ratio = |s: Option<f64>, x: f64| s.map_or("-".into(), |s| format!("{:.1}x", s / x));
            println!(
                "{:<36} {:>9} {:<9} {:>8.3} {:>8.3} {:>9.1} {:>14} {:>10} {:>10}",
                trace,
                lines,
                t.name,
                w,
                c,
                t.rss_kib as f64 / 1024.0,
                t.makespan.map_or("?".into(), |m| format!("{m:.9}")),
                ratio(sg.map(|s| s.0), w),
                ratio(sg.map(|s| s.1), c)
            );
        }
        if let (Some(b), Some(o)) = (res.iter().find(|t| t.name == "baseline"), res.iter().find(|t| t.name == "ours")) {
            let same = b.makespan.map(f64::to_bits) == o.makespan.map(f64::to_bits);
            let close = matches!((b.makespan, o.makespan), (Some(b), Some(o)) if (b - o).abs() <= 1e-9 * b.abs());
            let verdict = if same {
                "bit-identical"
            } else if close {
                "within 1e-9"
            } else {
                "DIFFERS"
            };
            println!("{:<36} baseline and ours: makespan {verdict}", "");
            assert!(same || close, "{trace}: makespan differs from the baseline by more than 1e-9 relative");
        }
    }
}

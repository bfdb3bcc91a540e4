//! Online-mode report (`cargo bench -p interposer --bench online`): the
//! online-mode figures from one run, as medians of `ONLINE_REPS` (3) runs.
//!
//! 1. Online prediction vs offline replay of the trace recorded in the
//!    same run, `-np 4`: jacobi2d, ring, allreduce_loop.
//! 2. Accuracy at `-np 2`: the online makespan, and jacobi2d's own timed
//!    region under `INTERPOSER_VIRTUAL_WTIME=1`, against the measured
//!    `wall_s` of untraced runs.
//! 3. Overhead: jacobi2d's `wall_s` in online mode over untraced.
//! 4. Oversubscription: jacobi2d weak-scaled at `-np 16` (256 × 256 and
//!    512 × 512 points per rank; 1000 and 500 iterations, about 0.1 s
//!    predicted: shorter runs are dominated by a few first-touch page faults)
//!    for a 16-core version of the platform, under `taskset -c 0` and
//!    `taskset -c 0,1`, alternating.
//!
//! `ONLINE_SECTIONS=24` runs only sections 2, 3 and 4 (2 and 3 share runs).
//!
//! The platform is `$ONLINE_PLATFORM` (a `calibrate network --out` file);
//! without it, `calibrate network` runs first (about 90 s). The machine's
//! load (`uptime`) is printed before and after: the figures are as noisy
//! as the machine.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use simulator::action::ComputeTime;
use statrs::statistics::{Data, Median};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

struct Run {
    /// The program's own `wall_s=` line, seconds.
    wall_s: f64,
    /// `online.json`'s makespan, when online.
    makespan_s: Option<f64>,
    /// Offline replay of the trace the run recorded, when online.
    offline_s: Option<f64>,
}

struct Bench {
    mpi: mpi_launch::Mpi,
    lib: PathBuf,
    progs: PathBuf,
    tmp: tempfile::TempDir,
    runs: usize,
}

impl Bench {
    fn run(&self, np: u32, prog: &str, args: &[&str], online: Option<&Path>, extra: &[(&str, &str)], cpus: Option<&str>) -> Run {
        let k = self.runs_next();
        let out_dir = self.tmp.path().join(format!("o{k}"));
        let (launch, _session) = self.mpi.command(np).expect("an MPI session directory");
        // Pinned: the launcher and its ranks under `taskset`, with the
        // launcher's own arguments and environment.
        let mut cmd = match cpus {
            Some(c) => {
                let mut t = Command::new("taskset");
                t.args(["-c", c]).arg(launch.get_program()).args(launch.get_args());
                for (k, v) in launch.get_envs() {
                    if let Some(v) = v {
                        t.env(k, v);
                    }
                }
                t
            }
            None => launch,
        };
        cmd.args(["--bind-to", "none"]);
        let mut env: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        if let Some(p) = online {
            env.push(("LD_PRELOAD".into(), self.lib.display().to_string()));
            env.push(("INTERPOSER_OUT".into(), out_dir.display().to_string()));
            env.push(("INTERPOSER_MODE".into(), "online".into()));
            env.push(("INTERPOSER_PLATFORM".into(), p.display().to_string()));
        }
        for (k, v) in &env {
            self.mpi.forward(&mut cmd, k, v);
        }
        let out = cmd.arg(self.progs.join(prog)).args(args).output().expect("mpirun");
        assert!(out.status.success(), "{prog}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        let wall_s = text.lines().find_map(|l| l.strip_prefix("wall_s=")).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
        let (mut makespan_s, mut offline_s) = (None, None);
        if let Some(p) = online {
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out_dir.join("online.json")).expect("online.json")).unwrap();
            makespan_s = json["makespan_s"].as_f64();
            let plat = simulator::platform::Platform::load(p).unwrap();
            let streams = simulator::replay::open_trace_dir(&out_dir, ComputeTime::Cpu).unwrap();
            offline_s = Some(simulator::replay::replay(&plat, streams).unwrap().makespan_s);
        }
        let _ = std::fs::remove_dir_all(&out_dir);
        Run { wall_s, makespan_s, offline_s }
    }

    fn runs_next(&self) -> usize {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// Median of `v` (non-empty; the mean of the two middle values for an even count).
fn median(v: Vec<f64>) -> f64 {
    Data::new(v).median()
}

fn uptime() -> String {
    Command::new("uptime").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

fn main() {
    let root = root();
    let ok = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "-p", "interposer", "-p", "calibrate"])
        .current_dir(&root)
        .status();
    assert!(ok.expect("cargo").success());
    assert!(Command::new("make").args(["-s", "-C"]).arg(root.join("c-tests")).status().expect("make").success());
    let release = common::release_dir(&root);
    let bench = Bench {
        mpi: mpi_launch::Mpi::find(None).unwrap_or_else(|e| panic!("{e}")),
        lib: release.join("libinterposer.so"),
        progs: root.join("c-tests/build"),
        tmp: tempfile::tempdir().unwrap(),
        runs: std::env::var("ONLINE_REPS").ok().and_then(|v| v.parse().ok()).unwrap_or(3),
    };
    let platform = match std::env::var_os("ONLINE_PLATFORM") {
        Some(p) => PathBuf::from(p),
        None => {
            let p = bench.tmp.path().join("calibrated.toml");
            let st = Command::new(release.join("calibrate")).arg("network").arg("--out").arg(&p).status().expect("calibrate");
            assert!(st.success(), "calibrate network failed");
            p
        }
    };
    println!("platform: {}\nload before: {}\n", platform.display(), uptime());
    let sections = std::env::var("ONLINE_SECTIONS").unwrap_or_else(|_| "1234".into());
    if sections.contains('1') {
        agreement(&bench, &platform);
    }
    if sections.contains('2') || sections.contains('3') {
        accuracy(&bench, &platform);
    }
    if sections.contains('4') {
        oversubscription(&bench, &platform);
    }
    println!("\nload after: {}", uptime());
}

fn agreement(bench: &Bench, platform: &Path) {
    println!("1. online vs offline replay of the same run, -np 4 (median of {} runs)", bench.runs);
    println!("{:<28} {:>12} {:>12} {:>10}", "program", "online_s", "offline_s", "diff_%");
    for (prog, args) in [("jacobi2d", &["1024", "100"][..]), ("ring", &["10000", "8"][..]), ("allreduce_loop", &["1000", "1024"][..])] {
        let runs: Vec<Run> = (0..bench.runs).map(|_| bench.run(4, prog, args, Some(platform), &[], None)).collect();
        let diffs: Vec<f64> =
            runs.iter().map(|r| (r.makespan_s.unwrap() - r.offline_s.unwrap()).abs() / r.offline_s.unwrap() * 100.0).collect();
        let on = median(runs.iter().map(|r| r.makespan_s.unwrap()).collect());
        let off = median(runs.iter().map(|r| r.offline_s.unwrap()).collect());
        println!("{:<28} {on:>12.6} {off:>12.6} {:>10.4}", format!("{prog} {}", args.join(" ")), median(diffs));
    }
}

fn accuracy(bench: &Bench, platform: &Path) {
    let (n, iters) = ("2048", "600");
    println!("\n2./3. jacobi2d {n} {iters} at -np 2: prediction vs measured, and online-mode overhead");
    let (mut plain, mut online, mut makespan, mut virt) = (vec![], vec![], vec![], vec![]);
    for _ in 0..bench.runs {
        plain.push(bench.run(2, "jacobi2d", &[n, iters], None, &[], None).wall_s);
        let r = bench.run(2, "jacobi2d", &[n, iters], Some(platform), &[], None);
        online.push(r.wall_s);
        makespan.push(r.makespan_s.unwrap());
        virt.push(bench.run(2, "jacobi2d", &[n, iters], Some(platform), &[("INTERPOSER_VIRTUAL_WTIME", "1")], None).wall_s);
    }
    let (plain, online, makespan, virt) = (median(plain), median(online), median(makespan), median(virt));
    println!("measured wall_s (untraced)            {plain:>10.4} s");
    println!("online makespan (Init..Finalize)      {makespan:>10.4} s   ratio {:.4}", makespan / plain);
    println!("online virtual wall_s (same region)   {virt:>10.4} s   ratio {:.4}", virt / plain);
    println!("online-mode wall_s                    {online:>10.4} s   overhead ×{:.4}", online / plain);
}

fn oversubscription(bench: &Bench, platform: &Path) {
    let p16 = bench.tmp.path().join("p16.toml");
    let mut plat = simulator::platform::Platform::load(platform).unwrap();
    plat.hosts.truncate(1);
    plat.hosts[0].cores = 16;
    plat.mapping = simulator::platform::Mapping::Block;
    plat.save(&p16).unwrap();
    for (n, iters, side) in [("1024", "1000", 256), ("2048", "500", 512)] {
        println!("\n4. jacobi2d {n} {iters} at -np 16 ({side} × {side} per rank) for 16 cores, by CPUs given");
        let mut preds = vec![];
        // The two settings alternate run by run, so that load drift falls on both alike.
        let mut by_cpus: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
        for _ in 0..bench.runs {
            for (k, cpus) in ["0", "0,1"].into_iter().enumerate() {
                by_cpus[k].push(bench.run(16, "jacobi2d", &[n, iters], Some(&p16), &[], Some(cpus)));
            }
        }
        for (cpus, runs) in ["0", "0,1"].into_iter().zip(&by_cpus) {
            let pred = median(runs.iter().map(|r| r.makespan_s.unwrap()).collect());
            let wall = median(runs.iter().map(|r| r.wall_s).collect());
            println!("taskset -c {cpus:<4} predicted {pred:>10.6} s   (oversubscribed wall_s {wall:.3} s)");
            preds.push(pred);
        }
        println!("predictions differ by {:.3} %", (preds[0] - preds[1]).abs() / preds[1] * 100.0);
    }
}

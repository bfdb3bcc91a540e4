//! Overhead benchmark (`cargo bench -p interposer`): the cost the
//! interposer adds per intercepted call, from `c-tests/overhead` run plainly
//! and under the interposer with `INTERPOSER_COUNTERS=off` and `=sw`, in
//! one run, medians of 5 runs each, 10^6 iterations (`OVERHEAD_ITERS`).

use std::path::{Path, PathBuf};
use std::process::Command;

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
    let get = |key: &str| -> f64 {
        text.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
    };
    (get("pingpong_ns_per_call="), get("iprobe_ns_per_call="))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let root = root();
    let ok = Command::new(env!("CARGO")).args(["build", "--release", "--quiet", "-p", "interposer"]).current_dir(&root).status();
    assert!(ok.expect("cargo").success());
    assert!(Command::new("make").args(["-s", "-C"]).arg(root.join("c-tests")).status().expect("make").success());
    let lib = root.join("target/release/libinterposer.so");
    let prog = root.join("c-tests/build/overhead");
    let iters = std::env::var("OVERHEAD_ITERS").unwrap_or_else(|_| "1000000".into());
    let dir = tempfile::tempdir().unwrap();
    let modes: [(&str, Vec<(&str, String)>); 3] = [
        ("plain", vec![]),
        ("counters=off", vec![("LD_PRELOAD", lib.display().to_string()), ("INTERPOSER_OUT", dir.path().display().to_string()), ("INTERPOSER_COUNTERS", "off".into())]),
        ("counters=sw", vec![("LD_PRELOAD", lib.display().to_string()), ("INTERPOSER_OUT", dir.path().display().to_string()), ("INTERPOSER_COUNTERS", "sw".into())]),
    ];
    let mut base = (0.0, 0.0);
    println!("{:<14} {:>16} {:>16} {:>14} {:>14}", "mode", "pingpong_ns/call", "iprobe_ns/call", "added_pp_ns", "added_iprobe_ns");
    for (name, env) in &modes {
        let runs: Vec<(f64, f64)> = (0..5).map(|_| run(&prog, &iters, env)).collect();
        let pp = median(runs.iter().map(|r| r.0).collect());
        let ip = median(runs.iter().map(|r| r.1).collect());
        if *name == "plain" {
            base = (pp, ip);
        }
        println!("{name:<14} {pp:>16.1} {ip:>16.1} {:>14.1} {:>14.1}", pp - base.0, ip - base.1);
    }
}

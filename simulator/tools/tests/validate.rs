//! Smoke test of `simulator validate`: a tiny suite, one plain run per
//! case, real `mpirun` (Open MPI), the real interposer preloaded, and a
//! quick `calibrate network` first. Asserts that every row is there with
//! sane numbers, not the accuracy (README: the full validation).

use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::{built, root};

/// Serializes the tests that run MPI jobs: each would slow the other's
/// measurements on a small machine.
static MPI_JOBS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mpi_lock() -> std::sync::MutexGuard<'static, ()> {
    MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why Open MPI is unusable here, if it is.
fn mpi_missing() -> Option<String> {
    match mpi_launch::Mpi::find(None) {
        Ok(m) if m.flavour() == mpi_launch::Flavour::OpenMpi => None,
        Ok(m) => Some(format!("`{}` is not Open MPI's ({})", m.program(), m.version())),
        Err(e) => Some(e.to_string()),
    }
}

fn validate(dir: &Path, suite: &Path, extra: &[&str]) -> Output {
    let bin = built();
    let session = dir.join("ompi");
    std::fs::create_dir_all(&session).unwrap();
    Command::new(env!("CARGO_BIN_EXE_simulator"))
        .arg("validate")
        .arg("--suite")
        .arg(suite)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--interposer")
        .arg(bin.join("libinterposer.so"))
        .arg("--calibrate")
        .arg(bin.join("calibrate"))
        .args(["-r", "1", "--timeout-s", "120"])
        .args(extra)
        .env("OMPI_MCA_orte_tmpdir_base", &session)
        .env_remove("MPIRUN")
        .output()
        .unwrap()
}

#[test]
fn validate_runs_every_case_and_writes_every_output() {
    if let Some(why) = mpi_missing() {
        eprintln!("SKIPPED validate_runs_every_case_and_writes_every_output: {why}");
        return;
    }
    let _mpi = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let build = root().join("c-tests/build");
    let suite = dir.path().join("suite.toml");
    let case = |name: &str, prog: &str, args: &str| {
        format!("[[case]]\nname = \"{name}\"\nprogram = \"{}\"\nargs = [{args}]\nranks = 2\n", build.join(prog).display())
    };
    let text = [
        case("ring", "ring", "\"200\", \"8\""),
        case("jacobi", "jacobi2d", "\"64\", \"10\""),
        case("allreduce", "allreduce_loop", "\"50\", \"64\""),
        // A program that prints no wall_s=: the interposer times it.
        case("overhead", "overhead", "\"2000\""),
        // The program's own line, through a regular expression.
        case("ring-regex", "ring", "\"200\", \"8\"") + "time_regex = 'wall_s=([0-9.e+-]+)'\n",
    ]
    .concat();
    std::fs::write(&suite, text).unwrap();
    let quick = ["--reps=3", "--sizes=16", "--max-bytes=65536", "--refine-rounds=0", "--loggp-n=0", "--holdout=0"];
    let mut extra: Vec<String> = quick.iter().map(|a| format!("--calibrate-arg={a}")).collect();
    // A hook that only logs: the "network" it changes is this file.
    let calls = dir.path().join("hook-calls");
    let hook = dir.path().join("hook.sh");
    std::fs::write(&hook, format!("#!/bin/sh\necho \"$1\" >> '{}'\n", calls.display())).unwrap();
    extra.extend(["--sweep".into(), "--sweep-hook".into(), format!("sh {}", hook.display())]);
    // A smoke run on a shared machine: a short wait for quiet, one repeat.
    extra.extend(["--quiet-wait-s=2".into(), "--retries=1".into()]);
    // Two traced runs: the prediction is the one whose replay is the
    // median (`--merge runs`), and the sweep must replay what the base
    // prediction replays (a slower network then never predicts faster).
    extra.push("--traced-runs=2".into());
    // A second calibration: each case is also predicted on it.
    extra.push("--calibrations=2".into());
    extra.push("--online-runs=2".into());
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = validate(dir.path(), &suite, &extra);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "validate failed:\n{stdout}\n{stderr}");
    let o = dir.path().join("out");
    assert!(o.join("platform.toml").is_file(), "no calibrated platform");
    let csv = std::fs::read_to_string(o.join("validate.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), ["ring", "jacobi", "allreduce", "overhead", "ring-regex"], "{csv}");
    let timed = o.join("cases/overhead-np2/timed-0/time.json");
    assert!(std::fs::read_to_string(&timed).is_ok_and(|t| t.contains("\"mode\": \"time\"")), "{}", timed.display());
    assert!(csv.lines().nth(4).is_some_and(|l| l.contains("timed by the interposer")), "{csv}");
    assert!(o.join("calibration-1/platform.toml").is_file(), "no second calibration");
    let column = |name: &str| csv.lines().next().unwrap().split(',').position(|h| h == name).unwrap_or_else(|| panic!("no {name} column"));
    let (calib, online_runs) = (column("calibrated_s"), column("online_runs_s"));
    for r in &rows {
        let num = |i: usize| r[i].parse::<f64>().unwrap_or_else(|_| panic!("column {i} of {r:?} is not a number\n{csv}"));
        // The prediction on each calibration; the offline one is their
        // median, the lower of two. A case predicted on the calibration of
        // another latency state of the machine (state.rs) has none.
        if r[calib].is_empty() {
            assert!(r.join(",").contains("of another latency state of the machine: not used"), "{r:?}\n{csv}");
        } else {
            let calibrated: Vec<f64> = r[calib].split(';').map(|x| x.parse().unwrap()).collect();
            assert_eq!((calibrated.len(), calibrated.iter().copied().fold(f64::INFINITY, f64::min)), (2, num(4)), "{r:?}");
        }
        let (measured, traced, offline) = (num(2), num(3), num(4));
        assert!(measured > 0.0 && traced > 0.0 && offline > 0.0, "{r:?}");
        // One of the traced runs replayed alone: inside the band they give.
        let (lo, hi) = (num(9), num(10));
        assert!(lo <= offline * (1.0 + 1e-9) && offline <= hi * (1.0 + 1e-9), "offline {offline} outside [{lo}, {hi}]: {r:?}");
        let note = r.join(",");
        assert!(note.contains("the median of 2 runs' replays") || note.contains("whose replays are in the fast state"), "{r:?}");
        // Two online runs: the prediction is their median, or the one in
        // the machine's fast state.
        let online: Vec<f64> = r[online_runs].split(';').filter_map(|x| x.parse().ok()).collect();
        let (lo, hi) = (online.iter().copied().fold(f64::INFINITY, f64::min), online.iter().copied().fold(0.0, f64::max));
        let o = num(5);
        assert!(online.len() == 2 && lo * (1.0 - 1e-12) <= o && o <= hi * (1.0 + 1e-12), "online {online:?} vs {o}: {r:?}");
        // Sane, not accurate: tiny runs on a shared machine.
        assert!(offline / measured > 0.01 && offline / measured < 100.0, "{r:?}");
        assert_eq!(r[1], "2");
    }
    for name in ["ring", "jacobi", "allreduce", "overhead", "ring-regex"] {
        assert!(stdout.lines().any(|l| l.starts_with(name)), "{name} missing from the table:\n{stdout}");
        assert!(o.join(format!("cases/{name}-np2/trace/meta.json")).is_file());
        // Every run's CPU contention is logged where the kernel reports it.
        if Path::new("/proc/pressure/cpu").is_file() {
            let c = std::fs::read_to_string(o.join(format!("cases/{name}-np2/contention.txt"))).unwrap();
            for run in ["plain-0 ", "trace ", "online "] {
                assert!(c.lines().any(|l| l.starts_with(run) && l.contains("CPU stall")), "{name}: no {run}line in\n{c}");
            }
        }
    }
    let md = std::fs::read_to_string(o.join("validate.md")).unwrap();
    assert!(md.contains("| ring | 2 | 1 |") && md.contains("load average") && md.contains("CPU contention"), "{md}");
    assert!(std::fs::read_to_string(o.join("validate.svg")).unwrap().contains("<svg"));
    // The sweep: four scalings per case; a slower network never predicts
    // faster; the bandwidth factors re-measured, interleaved with the base.
    let hooked = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(hooked, "1\n0.5\n2\n".repeat(5) + "1\n");
    let sweep = std::fs::read_to_string(o.join("sweep.csv")).unwrap();
    assert_eq!(sweep.lines().count(), 1 + 4 * 5, "{sweep}");
    for l in sweep.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        // measured_s only where the bandwidth changed; base_measured_s everywhere.
        assert_eq!(!f[8].is_empty(), f[3] != "1", "{l}");
        assert!(!f[7].is_empty(), "{l}");
        let (lat, bw, base, pred): (f64, f64, f64, f64) =
            (f[2].parse().unwrap(), f[3].parse().unwrap(), f[4].parse().unwrap(), f[5].parse().unwrap());
        if lat > 1.0 || bw < 1.0 {
            assert!(pred >= base, "{l}");
        } else {
            assert!(pred <= base, "{l}");
        }
    }
}

#[test]
fn a_missing_program_fails_naming_the_suite_and_case() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    std::fs::write(&suite, "[[case]]\nname = \"ghost\"\nprogram = \"no/such/program\"\nranks = 2\n").unwrap();
    // validate with `extra` arguments fails; its stderr.
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_simulator"))
            .arg("validate")
            .args(extra)
            .arg("--suite")
            .arg(&suite)
            .arg("--out")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&[]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&suite.display().to_string()) && err.contains("case ghost: program") && err.contains("not found"), "{err}");
    // --case picks cases by name; an unknown one fails before anything runs, listing the suite's.
    let err = run(&["--case", "nope"]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--case") && err.contains("no case named \"nope\"") && err.contains("its cases: ghost"), "{err}");
    assert!(run(&["--case", "ghost"]).contains("case ghost: program"));
}

/// Why `simulator/scripts/two-hosts.sh` cannot run here, if it cannot.
fn two_hosts_missing() -> Option<String> {
    if !Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n")) {
        return Some("needs root (ip netns, tc)".into());
    }
    if !Command::new("ip").args(["netns", "list"]).output().is_ok_and(|o| o.status.success()) {
        return Some("`ip netns list` failed".into());
    }
    let release = root().join("target/release");
    ["simulator", "calibrate", "libinterposer.so"]
        .iter()
        .find(|f| !release.join(f).is_file())
        .map(|f| format!("target/release/{f} missing (cargo build --release)"))
}

#[test]
fn two_hosts_script_runs_quick_and_removes_its_namespaces() {
    if let Some(why) = mpi_missing().or_else(two_hosts_missing) {
        eprintln!("SKIPPED two_hosts_script_runs_quick_and_removes_its_namespaces: {why}");
        return;
    }
    let _mpi = mpi_lock();
    built();
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new("bash")
        .arg(root().join("simulator/scripts/two-hosts.sh"))
        .args(["--quick", "--reps", "1", "--out"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let prefix = format!("mpvh{}", child.id());
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "two-hosts.sh failed:\n{text}");
    let left = String::from_utf8_lossy(&Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).to_string();
    assert!(!left.contains(&prefix), "namespaces {prefix}* left behind:\n{left}");
    // Two hosts, an inter-node model, every case predicted.
    let platform = simulator::platform::Platform::load(&dir.path().join("platform.toml")).unwrap();
    assert_eq!(platform.hosts.len(), 2);
    assert!(platform.network.inter.is_some());
    let csv = std::fs::read_to_string(dir.path().join("validate/validate.csv")).unwrap();
    assert_eq!(csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect::<Vec<_>>(), ["ring", "ring-256k", "jacobi2d"], "{csv}");
    for l in csv.lines().skip(1) {
        assert!(l.split(',').nth(4).unwrap().parse::<f64>().is_ok_and(|v| v > 0.0), "no offline prediction: {l}");
    }
    let placement = std::fs::read_to_string(dir.path().join("validate/cases/ring-np2/placement.txt")).unwrap();
    assert!(placement.contains(&format!("{prefix}a")) && placement.contains(&format!("{prefix}b")), "{placement}");
    let summary = std::fs::read_to_string(dir.path().join("summary.txt")).unwrap();
    assert!(summary.contains("inter-node bandwidth") && summary.contains("plain TCP ping-pong"), "{summary}");
}

/// Why SimGrid's SMPI is unusable here, if it is.
fn smpi_missing() -> Option<String> {
    let ok = Command::new("smpirun").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    (!ok).then(|| "`smpirun --version` failed (libsimgrid-dev: bash .ci/setup)".to_string())
}

/// The skeleton traced at 2, 4 and 8 ranks, extrapolated to 16 and set
/// against SMPI at 16 on the flat cluster: SMPI's compute bias is the
/// tracing's overhead on the blocks, both tools send the same messages,
/// and after the bias the compute agrees.
#[test]
fn the_smpi_reference_sets_an_extrapolation_against_smpi() {
    if let Some(why) = mpi_missing().or_else(smpi_missing) {
        eprintln!("SKIPPED the_smpi_reference_sets_an_extrapolation_against_smpi: {why}");
        return;
    }
    let _mpi = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.toml");
    let program = root().join("c-tests/build/skeleton");
    let source = root().join("c-tests/skeleton.c");
    let case = format!(
        "[[case]]\nprogram = \"{}\"\nsource = \"{}\"\nargs = [\"40\", \"300\", \"8192\"]\nranks = 8\n",
        program.display(),
        source.display()
    );
    std::fs::write(&suite, case).unwrap();
    let platform = root().join("c-tests/flat-cluster.xml");
    let out = validate(
        dir.path(),
        &suite,
        &["--reference", "smpi", "--platform", platform.to_str().unwrap(), "--ranks", "16", "--smpi-cfg", "smpi/simulate-computation:no"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("out/reference.json")).unwrap()).unwrap();
    let row = &report["rows"][0];
    let f = |k: &str| row[k].as_f64().unwrap_or_else(|| panic!("{k} in {row}"));
    assert_eq!(row["ranks"], 16, "{row}");
    assert_eq!(row["smpi_messages"], row["messages"], "{row}");
    // 16 ranks on a 4 x 4 grid: 2 x 4 x 3 neighbour pairs, both ways, per step.
    assert_eq!(row["messages"], 48 * 40, "{row}");
    let bias = report["bias"][0]["bias"]["ratio"].as_f64().unwrap();
    assert!(bias > 0.5 && bias <= 1.0, "tracing only adds to the blocks: bias {bias}");
    assert!((f("compute_s") / f("smpi_compute_s") - 1.0).abs() < 0.01, "{row}");
    assert!(f("smpi_s") >= 40.0 * 300e-6 && f("predicted_s") >= 40.0 * 300e-6 * 0.99, "{row}");
    assert!(text.contains("SMPI inside the band"), "{text}");
    assert!(dir.path().join("out/reference-skeleton.svg").is_file(), "the case's plot");
}

//! End to end: `calibrate network` really runs the benchmark under MPI and
//! writes a platform the simulator loads. Skips, saying why, when no MPI
//! compiler or launcher can be started.

use std::path::Path;
use std::process::{Command, Stdio};

use simulator::platform::Platform;

/// The reason MPI is unusable here, if it is.
fn mpi_missing() -> Option<String> {
    for (var, default) in [("MPICC", "mpicc"), ("MPIRUN", "mpirun")] {
        let tool = std::env::var(var).unwrap_or_else(|_| default.into());
        let ok = Command::new(&tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if !ok {
            return Some(format!("`{tool} --version` failed (set ${var})"));
        }
    }
    None
}

#[test]
fn calibrate_network_writes_a_loadable_platform() {
    if let Some(why) = mpi_missing() {
        eprintln!("SKIPPED calibrate_network_writes_a_loadable_platform: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("platform.toml");
    let csv = dir.path().join("samples.csv");
    let run = Command::new(env!("CARGO_BIN_EXE_calibrate"))
        .args(["network", "--reps", "5", "--sizes", "30", "--refine-rounds", "1", "--out"])
        .arg(&out)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "calibrate network failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("transfer") && stdout.contains("eager_threshold_bytes"), "{stdout}");

    let p = Platform::load(&out).unwrap();
    let m = &p.network.intra;
    let (small, large) = (m.transfer.eval(1), m.transfer.eval(4 << 20));
    assert!(small > 0.0 && small < large, "transfer(1 B) = {small} s, transfer(4 MiB) = {large} s\n{stdout}");
    assert!((1..=4 << 20).contains(&m.eager_threshold_bytes), "eager threshold {}\n{stdout}", m.eager_threshold_bytes);
    assert_eq!((p.hosts.len(), p.network.inter.is_none()), (1, true));

    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(rows.starts_with("op,size_bytes,start_s,duration_s\n"));
    assert_eq!(rows.lines().count(), 1 + 3 * 5 * 30);
    if stdout.contains("refined") {
        assert!(Path::new(&dir.path().join("samples.refine.csv")).exists());
    }
}

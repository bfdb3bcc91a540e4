//! End to end, through the `calibrate` binary: `calibrate io` really runs
//! the MPI-IO benchmark at 2 ranks in a scratch directory and adds an
//! `[[fs]]` table to an existing platform, leaving the rest as it was.
//!
//! Skips, saying why, when MPI is missing.

use std::process::Command;

use simulator::network::loggp::LogGps;
use simulator::platform::{Host, Platform};

/// The reason MPI is unusable here, if it is.
fn mpi_missing() -> Option<String> {
    mpi_launch::find_mpicc(None).err().or_else(|| mpi_launch::Mpi::find(None).err()).map(|e| e.to_string())
}

fn platform() -> Platform {
    let model = LogGps { L: 5e-7, o_s: 2e-7, o_r: 2e-7, g: 0.0, G: 1e-10, S: 65536 }.to_p2p();
    let mut p = Platform::new("node", vec![Host::new("node0", 2)], model);
    p.collectives.algs = simulator::collectives::CollAlgs::preset("ompi").unwrap();
    p
}

#[test]
fn calibrate_io_adds_a_loadable_fs_and_keeps_the_rest() {
    if let Some(why) = mpi_missing() {
        eprintln!("SKIPPED calibrate_io_adds_a_loadable_fs_and_keeps_the_rest: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, scratch, plots) = (dir.path().join("platform.toml"), dir.path().join("scratch"), dir.path().join("plots"));
    std::fs::create_dir(&scratch).unwrap();
    let before = platform();
    before.save(&out).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_calibrate"))
        .args(["io", "--ranks", "2", "--reps", "1", "--max-bytes", "65536", "--mpirun-arg=--oversubscribe", "--dir"])
        .arg(&scratch)
        .arg("--out")
        .arg(&out)
        .arg("--plot")
        .arg(&plots)
        .arg("--csv")
        .arg(dir.path().join("io.csv"))
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "calibrate io failed:\n{stdout}\n{stderr}");
    // The kept samples refit to the same file system without measuring.
    let refit_out = dir.path().join("refit.toml");
    before.save(&refit_out).unwrap();
    let refit = Command::new(env!("CARGO_BIN_EXE_calibrate"))
        .args(["io", "--ranks", "2", "--name", "scratch", "--from-csv"])
        .arg(dir.path().join("io.csv"))
        .arg("--out")
        .arg(&refit_out)
        .output()
        .unwrap();
    assert!(refit.status.success(), "{}", String::from_utf8_lossy(&refit.stderr));
    // All but the cache's size, the kernel's dirty limit read at each run.
    let fitted = |s: &str| s.lines().filter(|l| !l.contains("disk:")).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(fitted(&String::from_utf8_lossy(&refit.stdout)), fitted(&stdout));
    assert!(std::fs::read_to_string(dir.path().join("io.library.txt")).unwrap().trim().len() > 3);
    assert!(stdout.contains("file system scratch (2 ranks)") && stdout.contains("read_all"), "{stdout}");
    let after = Platform::load(&out).unwrap();
    assert_eq!(after.fs.len(), 1, "{}", std::fs::read_to_string(&out).unwrap());
    let fs = &after.fs[0];
    assert_eq!((fs.name.as_str(), fs.servers), ("scratch", 1));
    assert!(fs.disk.read_bytes_per_s > 0.0 && fs.disk.write_bytes_per_s > 0.0);
    assert_eq!(Platform { fs: Vec::new(), ..after.clone() }, before);
    assert!(std::fs::read_to_string(plots.join("io.svg")).unwrap().starts_with("<svg"));
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0, "benchmark files left in the scratch directory");
}

#[test]
fn calibrate_io_refuses_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("platform.toml");
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_calibrate"))
            .arg("io")
            .args(args)
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .output()
            .unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).trim().to_string()
    };
    let d = dir.path().to_str().unwrap();
    let o = out.to_str().unwrap();
    let e = run(&["--dir", "/nonexistent/x", "--out", o]);
    assert_eq!(e, "Error: --dir /nonexistent/x: not a directory");
    let e = run(&["--dir", d, "--out", o]);
    assert!(e.contains("no such platform; run `calibrate network") && !e.contains('\n'), "{e}");
    platform().save(&out).unwrap();
    let e = run(&["--dir", d, "--out", o, "--min-bytes", "0"]);
    assert!(e.starts_with("Error: --min-bytes 0") && !e.contains('\n'), "{e}");
    let csv = dir.path().join("s.csv");
    std::fs::write(&csv, "case,size_bytes,seconds\nwrite,4096,1e-5\nwrite,x,1e-5\n").unwrap();
    let e = run(&["--from-csv", csv.to_str().unwrap(), "--out", o]);
    assert!(e.contains("s.csv:3: bad size_bytes `x`") && !e.contains('\n'), "{e}");
    std::fs::write(&out, "hosts = 3\n").unwrap();
    let e = run(&["--dir", d, "--out", o]);
    assert!(e.starts_with(&format!("Error: --out {o}:")) && !e.contains('\n'), "{e}");
}

//! Trace extrapolation on real traces: runs at 2, 4 and 8 ranks make the
//! run at 16, set against a real 16-rank trace of the same program.

use super::*;

use simulator::action::{Action, ComputeTime};
use simulator::extrapolate::{Model, Sample};

/// Sends of each rank (point-to-point, including `MPI_Sendrecv`'s).
fn sends<E>(streams: Vec<simulator::replay::ActionStream<'_, E>>) -> Vec<usize> {
    streams
        .into_iter()
        .map(|s| s.filter(|a| matches!(a, Ok(Action::Send { .. } | Action::Isend { .. } | Action::Sendrecv { .. }))).count())
        .collect()
}

#[test]
fn extrapolated_runs_send_what_real_runs_send_rank_by_rank() {
    for (prog, args) in [("jacobi2d", &["256", "10"][..]), ("ring", &["50", "64"][..]), ("comm_split", &["20", "64"][..])] {
        let dirs: Vec<tempfile::TempDir> = [2, 4, 8, 16].iter().map(|&n| traced(n, prog, args).0).collect();
        let samples = dirs[..3].iter().map(|d| Sample::open(d.path()).unwrap()).collect();
        let model = Model::build(samples).unwrap_or_else(|e| panic!("{prog}: {e}"));
        let real = simulator::replay::open_trace_dir(dirs[3].path(), ComputeTime::Cpu).unwrap();
        assert_eq!(sends(model.streams(16)), sends(real), "{prog}: sends per rank");
        // The written trace reads back as the one generated in memory.
        let out = tempfile::tempdir().unwrap();
        model.write_dir(16, out.path()).unwrap();
        let written = simulator::replay::open_trace_dir(out.path(), ComputeTime::Cpu).unwrap();
        assert_eq!(sends(written), sends(model.streams(16)), "{prog}: written trace");
    }
}

#[test]
fn extrapolation_from_one_rank_count_is_refused_in_one_line() {
    let (dir, _) = traced(2, "ring", &["5", "8"]);
    // The simulator binary of this test's profile (built by `cargo build --workspace`).
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("simulator");
    if !bin.exists() {
        eprintln!("skipped: {} is not built (cargo build --workspace)", bin.display());
        return;
    }
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, "[[hosts]]\nname = \"n0\"\ncores = 4\n[network.intra]\nlatency_s = 1e-6\nbandwidth_bytes_per_s = 1e9\n")
        .unwrap();
    let out = Command::new(&bin).args(["replay", "--ranks", "8", "--platform"]).arg(&platform).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.lines().count() == 1 && err.contains("two or more rank counts"), "{err}");
}

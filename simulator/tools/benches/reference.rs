//! Predictions at scale against SimGrid's SMPI, in one table: every case
//! of `c-tests/reference.toml` traced at its small counts (three runs
//! each), extrapolated to 64, 256 and 1024 ranks, and set against SMPI
//! emulating the same program at those counts on the flat cluster
//! `c-tests/flat-cluster.xml` (`simulator validate --reference smpi`).
//!
//! ```sh
//! cargo build --release -p interposer && make -C c-tests
//! cargo bench -p simulator-tools --bench reference
//! BENCH_RANKS=64,256 BENCH_CASES=skeleton,skeleton-var cargo bench -p simulator-tools --bench reference
//! ```
//!
//! The table (error, band, coverage, per-rank decomposition, our replay
//! of SMPI's own trace, both tools' wall times) is printed and written to
//! `target/bench-reference/reference.{md,json}` with a plot per case
//! (`BENCH_DIR` to move them). `BENCH_RANKS` sets the counts,
//! `BENCH_CASES` the cases, `BENCH_RUNS` the traced runs per count.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let have = |p: &str| Command::new(p).arg("--version").output().is_ok_and(|o| o.status.success());
    if !have("smpirun") || !have("smpicc") {
        println!("SKIPPED: smpirun or smpicc not found (libsimgrid-dev: bash .ci/setup)");
        return;
    }
    let dir = env("BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target/bench-reference"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_simulator"));
    cmd.current_dir(&root).args(["validate", "--reference", "smpi", "--suite", "c-tests/reference.toml"]);
    cmd.args(["--platform", "c-tests/flat-cluster.xml", "--timeout-s", "3600"]);
    cmd.arg("--ranks").arg(env("BENCH_RANKS").unwrap_or_else(|| "64,256,1024".into()));
    cmd.arg("--traced-runs").arg(env("BENCH_RUNS").unwrap_or_else(|| "3".into()));
    cmd.arg("--out").arg(&dir);
    if let Some(cases) = env("BENCH_CASES") {
        cmd.arg("--case").arg(cases);
    }
    // As root, Open MPI refuses to start without these.
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let status = cmd.status().expect("run simulator validate");
    assert!(status.success(), "simulator validate --reference smpi failed: {status}");
}

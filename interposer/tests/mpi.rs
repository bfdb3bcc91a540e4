//! Integration tests: real `mpirun` (OpenMPI) with the real interposer
//! preloaded into the c-tests programs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use simulator::trace::{open_dir, CallRecord, Op, Params, RankTrace};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `target/<profile>/libinterposer.so`, rebuilt once per test run: cargo
/// does not build a `cdylib` for its crate's own integration tests.
fn library() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--quiet", "-p", "interposer"]).current_dir(root());
        if !cfg!(debug_assertions) {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("cargo").success(), "cargo build -p interposer failed");
        let exe = std::env::current_exe().unwrap();
        exe.parent().unwrap().parent().unwrap().join("libinterposer.so")
    })
}

/// Builds the c-tests once; returns their build directory.
fn programs() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = root().join("c-tests");
        let st = Command::new("make").arg("-s").arg("-C").arg(&dir).status().expect("make");
        assert!(st.success(), "make -C c-tests failed");
        dir.join("build")
    })
}

fn mpirun(np: u32, prog: &str, args: &[&str], env: &[(&str, &str)], preload: bool) -> Output {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", &np.to_string()]);
    for k in ["INTERPOSER_OUT", "INTERPOSER_MODE", "INTERPOSER_PLATFORM", "LD_PRELOAD"] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
        cmd.args(["-x", k]);
    }
    if preload {
        cmd.env("LD_PRELOAD", library()).args(["-x", "LD_PRELOAD"]);
    }
    cmd.arg(programs().join(prog)).args(args);
    let out = cmd.output().expect("mpirun");
    assert!(out.status.success(), "{prog} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn traced(np: u32, prog: &str, args: &[&str]) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = mpirun(np, prog, args, &[("INTERPOSER_OUT", dir.path().to_str().unwrap())], true);
    (dir, out)
}

fn records(t: &RankTrace) -> Vec<CallRecord> {
    t.records().unwrap().map(|r| r.unwrap()).collect()
}

fn count(recs: &[CallRecord], op: Op) -> usize {
    recs.iter().filter(|r| r.op == op).count()
}

#[test]
fn ring_records_every_send_and_recv_with_world_peers() {
    let (dir, _) = traced(3, "ring", &["50", "64"]);
    let (meta, ranks) = open_dir(dir.path()).unwrap();
    assert_eq!(meta.ranks, 3);
    assert!(meta.mpi_library.contains("MPI"), "{}", meta.mpi_library);
    for t in &ranks {
        let recs = records(t);
        assert_eq!(count(&recs, Op::Send), 50, "rank {}", t.header.rank);
        assert_eq!(count(&recs, Op::Recv), 50, "rank {}", t.header.rank);
        assert_eq!(recs.first().map(|r| r.op), Some(Op::Init));
        assert_eq!(recs.last().map(|r| r.op), Some(Op::Finalize));
        let me = t.header.rank as i32;
        for r in &recs {
            if let (Op::Send, Params::P2p { peer, bytes, .. }) = (r.op, &r.params) {
                assert_eq!((*peer, *bytes), ((me + 1) % 3, 64));
            }
            if let (Op::Recv, Params::P2p { peer, .. }) = (r.op, &r.params) {
                assert_eq!(*peer, (me + 2) % 3);
            }
        }
    }
}

#[test]
fn allreduce_loop_and_jacobi_counts_and_block_timing() {
    let (dir, _) = traced(2, "allreduce_loop", &["40", "16"]);
    let (_, ranks) = open_dir(dir.path()).unwrap();
    for t in &ranks {
        assert_eq!(count(&records(t), Op::Allreduce), 40);
    }
    let (dir, _) = traced(4, "jacobi2d", &["64", "15"]);
    let (_, ranks) = open_dir(dir.path()).unwrap();
    for t in &ranks {
        let recs = records(t);
        assert_eq!(count(&recs, Op::Allreduce), 15, "rank {}", t.header.rank);
        assert!(count(&recs, Op::Waitall) >= 15);
        assert_eq!(count(&recs, Op::Isend), count(&recs, Op::Irecv));
        // Blocks and calls tile the timeline: each call starts after the
        // previous ended; its compute block (timer and recorder cost
        // removed) fits in that gap.
        for w in recs.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            assert!(a.t_start_ns <= a.t_end_ns && a.t_end_ns <= b.t_start_ns, "{a:?} {b:?}");
            let gap = b.t_start_ns - a.t_end_ns;
            assert!(b.compute_wall_ns <= gap, "gap {gap} < block {}", b.compute_wall_ns);
            // Thread CPU time cannot exceed wall time (1 ms clock slack).
            assert!(b.compute_cpu_ns <= b.compute_wall_ns + 1_000_000, "{b:?}");
        }
    }
}

fn region_keys(dir: &Path) -> BTreeMap<u32, BTreeSet<String>> {
    let (_, ranks) = open_dir(dir).unwrap();
    ranks
        .iter()
        .map(|t| {
            let mut prev = String::from("init");
            let keys = records(t)
                .iter()
                .map(|r| {
                    let site = t.call_site(r.caller).to_string();
                    let key = format!("{prev}:{site}");
                    prev = site;
                    key
                })
                .collect();
            (t.header.rank, keys)
        })
        .collect()
}

#[test]
fn region_ids_are_stable_across_runs() {
    let (a, _) = traced(2, "jacobi2d", &["64", "5"]);
    let (b, _) = traced(2, "jacobi2d", &["64", "5"]);
    let (ka, kb) = (region_keys(a.path()), region_keys(b.path()));
    assert_eq!(ka, kb);
    assert!(ka[&0].iter().any(|k| k.contains("jacobi2d+0x")), "{:?}", ka[&0]);
}

fn result_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.starts_with("wall_s=")).map(str::to_string).collect()
}

#[test]
fn application_output_is_unchanged() {
    let plain = mpirun(2, "jacobi2d", &["96", "20"], &[], false);
    let (_, traced_out) = traced(2, "jacobi2d", &["96", "20"]);
    let lines = result_lines(&plain);
    assert!(!lines.is_empty(), "jacobi2d printed no result");
    assert_eq!(lines, result_lines(&traced_out));
}

fn warnings(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.contains("interposer")).map(str::to_string).collect()
}

#[test]
fn unwritable_out_dir_warns_once_and_runs() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let bad = file.path().join("sub"); // a directory below a regular file
    let out = mpirun(2, "ring", &["5", "8"], &[("INTERPOSER_OUT", bad.to_str().unwrap())], true);
    let w = warnings(&out);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("INTERPOSER_OUT"), "{w:?}");
}

#[test]
fn unset_out_and_bad_mode_warn_once() {
    let out = mpirun(2, "ring", &["5", "8"], &[], true);
    assert_eq!(warnings(&out).len(), 1, "{:?}", warnings(&out));
    let dir = tempfile::tempdir().unwrap();
    let env = [("INTERPOSER_OUT", dir.path().to_str().unwrap()), ("INTERPOSER_MODE", "sideways")];
    let out = mpirun(2, "ring", &["5", "8"], &env, true);
    let w = warnings(&out);
    assert!(w.len() == 1 && w[0].contains("INTERPOSER_MODE"), "{w:?}");
    assert!(!dir.path().join("rank-0.trace").exists());
}

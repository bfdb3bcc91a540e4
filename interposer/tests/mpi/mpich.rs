//! The one `libinterposer.so` under MPICH (the c-tests built with
//! `mpicc.mpich`/`mpif90.mpich`, launched by Hydra's `mpirun.mpich`) and
//! under a third MPI (SimGrid's SMPI), where it must stand aside.

use super::online::{offline_makespan, online_json, platform_file};
use super::*;

/// True when MPICH's compiler wrapper runs; prints why a test is skipped.
fn mpich_present() -> bool {
    let ok = Command::new("mpicc.mpich").arg("-show").output().is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIPPED: mpicc.mpich not found (install libmpich-dev)");
    }
    ok
}

/// Builds the c-tests with MPICH once; returns their build directory.
fn mpich_programs() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let ctests = root().join("c-tests");
        let st = Command::new("make")
            .args(["-s", "-C"])
            .arg(&ctests)
            .args(["MPICC=mpicc.mpich", "MPIFC=mpif90.mpich", "BUILD=build-mpich"])
            .status()
            .expect("make");
        assert!(st.success(), "make -C c-tests MPICC=mpicc.mpich failed");
        ctests.join("build-mpich")
    })
}

/// `mpirun.mpich -np <np>` of an MPICH-built c-test with `env` passed to
/// the ranks only (not to mpiexec), the one library preloaded when
/// `preload`.
fn mpich_run(np: u32, prog: &str, args: &[&str], env: &[(&str, &str)], preload: bool) -> Output {
    let mpi = mpi_launch::Mpi::find(Some("mpirun.mpich")).unwrap_or_else(|e| panic!("{e}"));
    let (mut cmd, _session) = mpi.command(np).expect("a session directory");
    for (k, v) in env {
        mpi.forward_to_ranks(&mut cmd, k, v);
    }
    if preload {
        mpi.forward_to_ranks(&mut cmd, "LD_PRELOAD", library());
    }
    let out = cmd.arg(mpich_programs().join(prog)).args(args).env_remove("LD_PRELOAD").output().expect("mpirun.mpich");
    assert!(out.status.success(), "{prog} under MPICH failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn mpich_traced(np: u32, prog: &str, args: &[&str]) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = mpich_run(np, prog, args, &[("INTERPOSER_OUT", dir.path().to_str().unwrap())], true);
    (dir, out)
}

/// True when both ends of region `r` are source lines (or `init`), not
/// `<module>+0x<offset>`: a library frame, or a program without line info.
fn symbolized(r: &str) -> bool {
    !r.contains("+0x") && !r.contains(".so")
}

/// The call-site regions (`prev:next`, symbolized to file:line) of a trace.
fn regions(dir: &Path) -> BTreeSet<String> {
    let (_, ranks) = open_dir(dir).unwrap();
    simulator::regions::region_report(&ranks).unwrap().into_iter().map(|s| s.region).collect()
}

#[test]
fn mpich_traces_the_same_calls() {
    if !mpich_present() {
        return;
    }
    // One library for both: it names no MPI library among its dependencies.
    let dynamic = Command::new("readelf").arg("-d").arg(library()).output().expect("readelf (binutils)");
    let needed = String::from_utf8_lossy(&dynamic.stdout).lines().filter(|l| l.contains("NEEDED")).map(str::to_string).collect::<Vec<_>>();
    assert!(!needed.is_empty() && needed.iter().all(|l| !l.contains("libmpi")), "{needed:?}");
    let (dir, out) = mpich_traced(4, "mpi_calls", &["3"]);
    let (meta, _) = open_dir(dir.path()).unwrap();
    assert!(meta.mpi_library.contains("MPICH"), "{}", meta.mpi_library);
    assert!(warnings(&out).is_empty(), "{:?}", warnings(&out));
    check_mpi_calls(dir.path(), &out);
    let (dir, out) = mpich_traced(3, "fortran_calls", &["7"]);
    assert_in_place_worked(&out);
    check_counts(dir.path(), &out);
    let io = tempfile::tempdir().unwrap();
    let file = io.path().join("io.dat");
    let (dir, out) = mpich_traced(4, "mpi_more", &["2", file.to_str().unwrap()]);
    check_mpi_more(dir.path(), &out, 4, 2);
    let file = io.path().join("ranks.dat");
    let (dir, out) = mpich_traced(3, "fortran_more", &["5", file.to_str().unwrap()]);
    assert_in_place_worked(&out);
    check_counts(dir.path(), &out);
    let (dir, out) = mpich_traced(4, "vcoll", &["2"]);
    vcoll::check_vcoll(dir.path(), &out, 4, true);
}

/// The same program built for each MPI gives the same call-site regions
/// under each; Fortran ones name the program's lines under MPICH too,
/// whose Fortran binding calls the C `MPI_X` from its own frame.
#[test]
fn regions_are_the_same_under_both_mpis() {
    if !mpich_present() {
        return;
    }
    for (np, prog, args) in [(4, "jacobi2d", &["64", "10"][..]), (4, "vcoll", &["2"][..]), (3, "comm_split", &["5"][..])] {
        let (a, _) = traced(np, prog, args);
        let (b, _) = mpich_traced(np, prog, args);
        let (ra, rb) = (regions(a.path()), regions(b.path()));
        assert!(ra.iter().all(|r| symbolized(r)), "{ra:?}");
        assert_eq!(ra, rb, "{prog}: Open MPI's regions, then MPICH's");
    }
    let (a, _) = traced(3, "fortran_calls", &["7"]);
    let (b, _) = mpich_traced(3, "fortran_calls", &["7"]);
    let (ra, rb) = (regions(a.path()), regions(b.path()));
    for r in ra.iter().chain(&rb) {
        assert!(symbolized(r) && (r.contains("fortran_calls.f90:") || r == "init:init"), "{r}: {ra:?} {rb:?}");
    }
    // Only the region ending at the last call (MPI_FINALIZE, after which
    // the program returns) may differ: the two builds' line tables may give
    // its call instruction different lines.
    let differ = ra.symmetric_difference(&rb).count();
    assert!(differ <= 2 && ra.len() >= 10, "Open MPI {ra:?}\nMPICH {rb:?}");
}

/// Runs `prog args` on `np` ranks under MPICH in online mode on
/// `platform`, asserting it warned of nothing; returns the run's output
/// directory, its output, the online prediction and the offline replay
/// of the trace it recorded, seconds.
/// `INTERPOSER_MODE=off` under MPICH: nothing written, the results and the
/// Fortran bindings (which MPICH routes through the C entry points) as in
/// a plain run.
#[test]
fn off_mode_under_mpich_changes_nothing() {
    if !mpich_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let env = [("INTERPOSER_OUT", dir.path().to_str().unwrap()), ("INTERPOSER_MODE", "off")];
    for (np, prog, args) in [(2, "jacobi2d", &["96", "20"][..]), (3, "fortran_calls", &["7"][..])] {
        let out = mpich_run(np, prog, args, &env, true);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{prog}: off mode wrote into INTERPOSER_OUT");
        assert_eq!(result_lines(&out), result_lines(&mpich_run(np, prog, args, &[], false)), "{prog}");
    }
}

fn online_under_mpich(np: u32, prog: &str, args: &[&str], platform: &Path) -> (tempfile::TempDir, Output, f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("INTERPOSER_OUT", dir.path().to_str().unwrap()),
        ("INTERPOSER_MODE", "online"),
        ("INTERPOSER_PLATFORM", platform.to_str().unwrap()),
    ];
    let out = mpich_run(np, prog, args, &env, true);
    assert!(warnings(&out).iter().all(|w| !w.contains("warning")), "{prog}: {:?}", warnings(&out));
    let online = online_json(dir.path())["makespan_s"].as_f64().unwrap();
    let offline = offline_makespan(dir.path(), platform);
    (dir, out, online, offline)
}

/// Online mode under MPICH: the shadow communicators (PMPI calls of the
/// MPICH build) carry the prediction, which agrees with the offline
/// replay of the trace the same run recorded; results are unchanged.
#[test]
fn online_mode_works_under_mpich() {
    if !mpich_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let platform = platform_file(tmp.path(), 1.0);
    for (prog, args) in [("jacobi2d", &["512", "40"][..]), ("ring", &["200", "100000"][..])] {
        let (_dir, out, online, offline) = online_under_mpich(4, prog, args, &platform);
        let rel = (online - offline).abs() / offline;
        assert!(online > 0.0 && rel < 0.01, "{prog}: online {online} s vs offline {offline} s");
        let plain = mpich_run(4, prog, args, &[], false);
        assert_eq!(result_lines(&plain), result_lines(&out), "{prog}: online mode changed the results");
    }
}

/// Online mode under MPICH with MPICH's shared-memory collectives in the
/// platform: the all-reduces past the threshold run the release-gather
/// model online as in the replay of the recorded trace, which differs
/// from the replay without the model.
#[test]
fn shared_memory_collectives_online_agree_with_replay_under_mpich() {
    if !mpich_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let plain = platform_file(tmp.path(), 1.0);
    let text = std::fs::read_to_string(&plain).unwrap()
        + "[collectives]\nselector = \"mpich\"\nshm_call_s = 1.5e-6\nshm_flag_s = 2e-7\nshm_s_per_byte = 1e-10\n";
    let platform = tmp.path().join("shm.toml");
    std::fs::write(&platform, text).unwrap();
    let (dir, _, online, offline) = online_under_mpich(2, "allreduce_loop", &["200", "1024"], &platform);
    assert!(online > 0.0 && (online - offline).abs() / offline < 0.01, "online {online} s vs offline {offline} s");
    let without = offline_makespan(dir.path(), &plain);
    assert!((without - offline).abs() / offline > 0.01, "with the model {offline} s, without {without} s");
}

/// A third MPI (SimGrid's SMPI, run without privatization so that the
/// program's MPI calls go through the global scope): one warning naming
/// its library, no trace, and the program's output as without the
/// interposer.
#[test]
fn a_third_mpi_warns_once_and_passes_through() {
    if Command::new("smpicc").arg("-show").output().is_err() {
        println!("SKIPPED: smpicc not found (install libsimgrid-dev)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let prog = tmp.path().join("comm_split");
    let st = Command::new("smpicc").args(["-O2", "-o"]).arg(&prog).arg(root().join("c-tests/comm_split.c")).arg("-lm").status().unwrap();
    assert!(st.success(), "smpicc c-tests/comm_split.c failed");
    std::fs::write(
        tmp.path().join("cluster.xml"),
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n  \
         <cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"10GBps\" lat=\"1us\"/>\n</platform>\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("hosts"), "node-0\nnode-1\nnode-2\nnode-3\n").unwrap();
    let out_dir = tmp.path().join("trace");
    let run = |preload: bool| {
        let mut cmd = Command::new("smpirun");
        cmd.args(["-no-privatize", "-np", "4", "-platform", "cluster.xml", "-hostfile", "hosts", "./comm_split", "5"]);
        cmd.current_dir(tmp.path()).env_remove("LD_PRELOAD").env("INTERPOSER_OUT", &out_dir);
        if preload {
            cmd.env("LD_PRELOAD", library());
        }
        let out = cmd.output().expect("smpirun");
        assert!(out.status.success(), "smpirun comm_split failed: {}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let plain = run(false);
    let out = run(true);
    let w = warnings(&out);
    assert!(w.len() == 1 && w[0].contains("neither Open MPI nor MPICH") && w[0].contains("libsimgrid"), "{w:?}");
    assert!(!out_dir.exists(), "a trace was written under a third MPI");
    let lines = result_lines(&plain);
    assert!(lines.iter().any(|l| l.starts_with("checksum=")), "{lines:?}");
    assert_eq!(lines, result_lines(&out));
}

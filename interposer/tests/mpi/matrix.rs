//! Online mode must never hang or change the application: every order of
//! point-to-point operations MPI allows (`tests/mpi/orders.c`), at eager
//! and rendezvous sizes, to a peer and to self, at 2 and 4 ranks and
//! oversubscribed, each run under a timeout; and a program the model
//! deadlocks on, which the watchdog must let finish.

use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use super::online::{offline_makespan, online_json, platform_file, test_program};
use super::*;

/// Runs `mpirun` on `np` ranks of `prog args` with `env`, killing the
/// whole process group after `limit`: returns stdout, stderr and whether
/// it ended in time with status 0.
fn bounded(np: u32, prog: &Path, args: &[&str], env: &[(&str, &str)], preload: bool, limit: Duration) -> (String, String, bool) {
    let (out, err, ok) = bounded_once(np, prog, args, env, preload, limit);
    if !ok && open_mpi_exit_race(&err) {
        eprintln!("{}: mpirun reported a rank with PID 0 exiting improperly (Open MPI's exit race); running it again", prog.display());
        return bounded_once(np, prog, args, env, preload, limit);
    }
    (out, err, ok)
}

/// One run of [`bounded`].
fn bounded_once(np: u32, prog: &Path, args: &[&str], env: &[(&str, &str)], preload: bool, limit: Duration) -> (String, String, bool) {
    let logs = tempfile::tempdir().unwrap();
    let (out, err) = (logs.path().join("out"), logs.path().join("err"));
    let (mut cmd, _session) = launcher(np);
    for k in ["INTERPOSER_OUT", "INTERPOSER_MODE", "INTERPOSER_PLATFORM", "INTERPOSER_ONLINE_STALL_S", "LD_PRELOAD"] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        mpi().forward(&mut cmd, k, v);
    }
    if preload {
        mpi().forward(&mut cmd, "LD_PRELOAD", library());
    }
    cmd.arg(prog).args(args).process_group(0);
    cmd.stdout(std::fs::File::create(&out).unwrap()).stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().expect("mpirun");
    let start = Instant::now();
    let ok = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.success();
        }
        if start.elapsed() > limit {
            // SAFETY: a plain kill(2) of the process group spawned above.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (std::fs::read_to_string(out).unwrap(), std::fs::read_to_string(err).unwrap(), ok)
}

fn cases(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.starts_with("case ")).collect()
}

const LIMIT: Duration = Duration::from_secs(90);

#[test]
fn every_point_to_point_order_ends_online_unchanged_and_as_the_replay_predicts() {
    let tmp = tempfile::tempdir().unwrap();
    let platform = platform_file(tmp.path(), 1.0);
    let prog = test_program("orders");
    // (ranks, doubles per message, peers): 8 doubles go eagerly on the
    // platform, 32768 (256 KiB) by rendezvous; 5 ranks oversubscribe.
    for (np, count, peers) in [
        (2, "8", "other"),
        (2, "32768", "other"),
        (2, "8", "self"),
        (2, "32768", "self"),
        (4, "32768", "other"),
        (4, "8", "self"),
        (5, "32768", "other"),
    ] {
        let what = format!("{np} ranks, {count} doubles, {peers}");
        let (plain, err, ok) = bounded(np, &prog, &[count, peers], &[], false, LIMIT);
        assert!(ok, "{what}: the plain run failed: {err}");
        assert_eq!(cases(&plain).len(), 15, "{what}: {plain}");
        let dir = tempfile::tempdir().unwrap();
        let env = [
            ("INTERPOSER_OUT", dir.path().to_str().unwrap()),
            ("INTERPOSER_MODE", "online"),
            ("INTERPOSER_PLATFORM", platform.to_str().unwrap()),
        ];
        let (online, err, ok) = bounded(np, &prog, &[count, peers], &env, true, LIMIT);
        let last = cases(&online).last().copied().unwrap_or("none");
        assert!(ok, "{what}: the online run did not end in time (last case printed: {last}): {err}");
        assert_eq!(cases(&online), cases(&plain), "{what}: online mode changed the output");
        let report = online_json(dir.path());
        assert_eq!(report["complete"], true, "{what}: {report}");
        let (on, off) = (report["makespan_s"].as_f64().unwrap(), offline_makespan(dir.path(), &platform));
        assert!(on > 0.0 && (on - off).abs() <= 1e-9 * off, "{what}: online {on} s, offline replay {off} s");
    }
}

#[test]
fn every_point_to_point_order_leaves_a_complete_trace() {
    let prog = test_program("orders");
    for (np, count, peers) in [(2, "32768", "other"), (4, "8", "self"), (5, "32768", "self")] {
        let what = format!("{np} ranks, {count} doubles, {peers}");
        let dir = tempfile::tempdir().unwrap();
        let (out, err, ok) = bounded(np, &prog, &[count, peers], &[("INTERPOSER_OUT", dir.path().to_str().unwrap())], true, LIMIT);
        assert!(ok && cases(&out).len() == 15, "{what}: {out} {err}");
        let (meta, ranks) = open_dir(dir.path()).unwrap();
        assert_eq!(meta.ranks, np, "{what}");
        for t in &ranks {
            let recs = records(t);
            assert_eq!(recs.len() as u64, t.footer.records, "{what}: rank {}", t.header.rank);
            assert_eq!(recs.last().map(|r| r.op), Some(Op::Finalize), "{what}: rank {}", t.header.rank);
        }
    }
}

#[test]
fn a_model_deadlock_fires_the_watchdog_and_the_run_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(platform_file(tmp.path(), 1.0))
        .unwrap()
        .replace("eager_threshold_bytes = 4096", "eager_threshold_bytes = 1024");
    let platform = tmp.path().join("eager-1k.toml");
    std::fs::write(&platform, text).unwrap();
    let prog = test_program("cycle");
    let (plain, _, ok) = bounded(2, &prog, &[], &[], false, LIMIT);
    assert!(ok, "plain run");
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("INTERPOSER_OUT", dir.path().to_str().unwrap()),
        ("INTERPOSER_MODE", "online"),
        ("INTERPOSER_PLATFORM", platform.to_str().unwrap()),
        ("INTERPOSER_ONLINE_STALL_S", "1"),
    ];
    let (out, err, ok) = bounded(2, &prog, &[], &env, true, LIMIT);
    assert!(ok, "the run did not finish: {err}");
    let sorted = |s: &str| {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&out), sorted(&plain), "the application's output changed");
    let stalls: Vec<&str> = err.lines().filter(|l| l.contains("warning: online mode stalled")).collect();
    assert_eq!(stalls.len(), 2, "one warning per rank: {err}");
    assert!(stalls.iter().all(|l| l.contains("MPI_Send") && l.contains("tag 7") && l.contains("rank ")), "{stalls:?}");
    let report = online_json(dir.path());
    assert_eq!(report["complete"], false, "{report}");
    let why = report["incomplete_reason"].as_str().unwrap();
    assert!(why.contains("rank 0") && why.contains("rank 1") && why.contains("acknowledgement"), "{why}");
    // The trace is whole: the offline replay reads it (and finds the deadlock).
    let (_, ranks) = open_dir(dir.path()).unwrap();
    assert!(ranks.iter().all(|t| records(t).last().map(|r| r.op) == Some(Op::Finalize)));
}

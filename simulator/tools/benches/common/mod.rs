//! What the benchmarks share: a child process timed for wall clock, CPU
//! and maximum resident set size, medians, the load average, traces of
//! the c-tests taken with the interposer, and SimGrid TI traces taken
//! with `smpirun -trace-ti`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Runs `cmd` to its end: wall seconds, CPU seconds (user and system) and
/// maximum RSS, KiB, from `wait4`'s rusage. Panics naming `what` when it
/// fails.
pub fn timed_child(cmd: &mut Command, what: &str) -> (f64, f64, i64) {
    let (wall, cpu, kb, status) = timed_child_status(cmd, what);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{what} failed (status {status})");
    (wall, cpu, kb)
}

/// [`timed_child`] that also returns the child's `wait4` status instead
/// of checking it (CPU and RSS include the children it waited for, as a
/// `timeout` wrapper's). Panics naming `what` when it cannot start.
#[allow(clippy::zombie_processes, reason = "the child is reaped by wait4, which also gives its rusage")]
pub fn timed_child_status(cmd: &mut Command, what: &str) -> (f64, f64, i64, i32) {
    let started = Instant::now();
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let mut status = 0;
    // SAFETY: rusage is plain data, filled by wait4 for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for the child just spawned, which nothing else reaps.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let wall = started.elapsed().as_secs_f64();
    assert!(pid > 0, "{what}: wait4 failed");
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (wall, secs(usage.ru_utime) + secs(usage.ru_stime), usage.ru_maxrss, status)
}

/// The median; the mean of the two middle values for an even count.
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

/// The release build directory: `$CARGO_TARGET_DIR/release` (relative to
/// the repository at `root` when relative), else `<root>/target/release`.
pub fn release_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |d| root.join(d)).join("release")
}

/// Traces `c-tests/build/<prog> <args>` at `np` ranks into `out` with
/// The MPI launcher [`mpi_launch::Mpi::find`] finds and the release interposer ([`release_dir`]) of the
/// repository at `root` (building the c-tests when missing). Panics naming
/// the program and rank count when tracing fails.
pub fn trace_c_test(root: &Path, out: &Path, prog: &str, args: &[&str], np: u32) {
    trace_c_test_env(root, out, prog, args, np, &[]);
}

/// [`trace_c_test`] with more environment variables for the interposer
/// (name, value), each passed to the ranks with `mpirun -x`.
pub fn trace_c_test_env(root: &Path, out: &Path, prog: &str, args: &[&str], np: u32, env: &[(&str, &std::ffi::OsStr)]) {
    let lib = release_dir(root).join("libinterposer.so");
    let exe = root.join("c-tests/build").join(prog);
    assert!(lib.exists(), "{} missing: cargo build --release -p interposer", lib.display());
    if !exe.exists() {
        let ok = Command::new("make").arg("-C").arg(root.join("c-tests")).status().is_ok_and(|s| s.success());
        assert!(ok, "make -C c-tests failed (needs mpicc)");
    }
    let _ = std::fs::remove_dir_all(out);
    let mpi = mpi_launch::Mpi::find(None).unwrap_or_else(|e| panic!("{e}"));
    let (mut cmd, _session) = mpi.command(np).expect("a session directory for mpirun");
    mpi.forward(&mut cmd, "INTERPOSER_OUT", out);
    mpi.forward(&mut cmd, "LD_PRELOAD", &lib);
    for (name, value) in env {
        mpi.forward(&mut cmd, name, value);
    }
    let ok = cmd.arg(&exe).args(args).stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    assert!(ok && out.join("meta.json").exists(), "tracing {prog} at {np} ranks failed");
}

/// Traces `dir/<prog> args` (built with `smpicc`) at `np` ranks with
/// `smpirun -trace-ti` on `dir/p.xml` and `dir/hosts`, compute counted at
/// 1 Gflop/s (`smpi/host-speed`); returns the trace list and its line
/// count. The MPI_PROC_NULL send/recv lines are removed (SimGrid 3.32's
/// replay aborts on them), so every tool replays the same lines.
pub fn smpi_ti_trace(dir: &Path, prog: &str, args: &[String], np: usize) -> (PathBuf, usize) {
    let raw = dir.join(format!("{prog}-raw"));
    let out = dir.join(format!("{prog}-ti"));
    std::fs::create_dir_all(&raw).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let st = Command::new("smpirun")
        .args(["-np", &np.to_string(), "-platform"])
        .arg(dir.join("p.xml"))
        .arg("-hostfile")
        .arg(dir.join("hosts"))
        .arg("-trace-ti")
        .arg(format!("--cfg=tracing/filename:{}", raw.join("trace.txt").display()))
        .arg("--cfg=smpi/host-speed:1Gf")
        .arg(dir.join(prog))
        .args(args)
        .output()
        .expect("smpirun");
    assert!(st.status.success(), "tracing {prog}: {}", String::from_utf8_lossy(&st.stderr));
    let list = std::fs::read_to_string(raw.join("trace.txt")).unwrap();
    let (mut names, mut lines) = (String::new(), 0);
    for f in list.lines().filter(|l| !l.trim().is_empty()) {
        let f = Path::new(f.trim());
        let text = std::fs::read_to_string(f).unwrap();
        let kept: String = text
            .lines()
            .filter(|l| {
                let w: Vec<&str> = l.split_whitespace().take(3).collect();
                !(w.len() == 3 && matches!(w[1], "send" | "isend" | "recv" | "irecv") && w[2] == "-333")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        lines += kept.lines().count();
        let dst = out.join(f.file_name().unwrap());
        std::fs::write(&dst, kept).unwrap();
        std::fs::remove_file(f).unwrap();
        names += &format!("{}\n", dst.display());
    }
    std::fs::write(out.join("list.txt"), names).unwrap();
    (out.join("list.txt"), lines)
}

//! End to end, through the `calibrate` binary:
//! - `calibrate network` really runs the benchmark under MPI, writes a
//!   platform the simulator loads and a SimGrid platform `smpirun` accepts;
//! - `calibrate speed` finds an injected 2× slowdown in one region of two
//!   interposer traces.
//!
//! Each skips, saying why, when MPI, SimGrid or the interposer is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use simulator::platform::Platform;
use simulator::speed::SpeedRatios;
use simulator::trace::ComputeTime;

/// Serializes the MPI runs of this binary's tests: on a 2-core machine two
/// 2-rank jobs at once oversubscribe it and blur the timings.
static MPI_JOBS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds [`MPI_JOBS`], even after another test panicked while holding it.
fn mpi_lock() -> std::sync::MutexGuard<'static, ()> {
    MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner())
}

/// True when the 1-minute load average exceeds the number of cores.
fn overloaded() -> bool {
    let load: f64 = std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| s.split_whitespace().next()?.parse().ok()).unwrap_or(0.0);
    load > std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// The reason MPI is unusable here, if it is.
fn mpi_missing() -> Option<String> {
    mpi_launch::find_mpicc(None).err().or_else(|| mpi_launch::Mpi::find(None).err()).map(|e| e.to_string())
}

#[test]
fn calibrate_network_writes_a_loadable_platform() {
    if let Some(why) = mpi_missing() {
        eprintln!("SKIPPED calibrate_network_writes_a_loadable_platform: {why}");
        return;
    }
    let _mpi = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("platform.toml");
    let csv = dir.path().join("samples.csv");
    let xml = dir.path().join("simgrid.xml");
    let run = Command::new(env!("CARGO_BIN_EXE_calibrate"))
        .args(["network", "--reps", "10", "--sizes", "30", "--refine-rounds", "1", "--budget-s", "30", "--out"])
        .arg(&out)
        .arg("--csv")
        .arg(&csv)
        .arg("--simgrid")
        .arg(&xml)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "calibrate network failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("transfer") && stdout.contains("eager_threshold_bytes"), "{stdout}");

    let p = Platform::load(&out).unwrap();
    let m = &p.network.intra;
    let (small, large) = (m.transfer.eval(1), m.transfer.eval(4 << 20));
    assert!(small > 0.0 && small < large, "transfer(1 B) = {small} s, transfer(4 MiB) = {large} s\n{stdout}");
    if m.eager_threshold_bytes == (4 << 20) + 1 && overloaded() {
        // Under heavy load from other jobs the eager/rendezvous jump can
        // drown in noise; the platform is still valid, so say so loudly.
        eprintln!("WARNING: no eager/rendezvous switch found; the machine is overloaded (/proc/loadavg > cores)\n{stdout}");
    } else {
        assert!((1..=4 << 20).contains(&m.eager_threshold_bytes), "eager threshold {}\n{stdout}", m.eager_threshold_bytes);
    }
    assert_eq!((p.hosts.len(), p.network.inter.is_none()), (1, true));
    // Posting an MPI_Irecv and waiting on a satisfied request cost time.
    let (irecv, wait) = (p.smpi.irecv_s, p.smpi.wait_s);
    assert!(irecv > 0.0 && irecv < 1e-4 && wait > 0.0 && wait < 1e-4, "irecv_s {irecv}, wait_s {wait}\n{stdout}");
    assert!(stdout.contains("MPI_Irecv post") && stdout.contains("MPI_Wait on a satisfied request"), "{stdout}");
    // So does a one-sided call, and each of the calls timed alone.
    let rma = p.smpi.rma_call_s;
    assert!(rma > 0.0 && rma < 1e-3 && stdout.contains("one-sided call"), "rma_call_s {rma}\n{stdout}");
    for (name, v) in p.smpi.rma_calls.fields() {
        assert!(v.is_some_and(|v| (0.0..1e-1).contains(&v)), "rma_calls.{name} = {v:?}\n{stdout}");
    }
    let c = p.smpi.rma_calls;
    assert!(c.create_s > c.lock_s && stdout.contains("one-sided calls timed alone"), "{c:?}\n{stdout}");

    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(rows.starts_with("op,size_bytes,start_s,duration_s\n"));
    // One grid pass, plus at most 3 more while the medians are unstable;
    // 20 rows per plan entry (pingpong, exchange, pair, send, recv, isend,
    // wtime, iprobe, irecv, wait, rma, rma_put, rma_get, rma_acc,
    // rma_lock, rma_unlock, rma_post, rma_complete, rma_create, rma_free).
    assert!(rows.contains("\nirecv,0,") && rows.contains("\nwait,0,") && rows.contains("\nrma,0,"));
    assert!(rows.contains("\nrma_lock,0,") && rows.contains("\nrma_complete,0,") && rows.contains("\nrma_create,0,"));
    assert!(rows.contains("\nexchange,") && stdout.contains("host copy rate"), "{stdout}");
    assert!(rows.contains("\nrma_put,") && rows.contains("\nrma_get,") && rows.contains("\nrma_acc,"));
    assert!(rows.contains("\npair,") && stdout.contains("two transfers into one rank at once"), "{stdout}");
    let passes = (rows.lines().count() - 1) as f64 / (20 * 10 * 30) as f64;
    assert!(passes.fract() == 0.0 && (1.0..=4.0).contains(&passes), "{passes} grid passes");
    if stdout.contains("refined") {
        assert!(Path::new(&dir.path().join("samples.refine.csv")).exists());
    }
    assert!(stdout.contains("held-back validation: ") && stdout.contains("median error"), "{stdout}");
    assert!(stdout.contains("<prop id=\"smpi/os\" value=\"0:"), "{stdout}");
    assert!(
        stdout.contains("LogGP: L = ")
            && stdout.contains("(fitted on PRTT)")
            && stdout.contains("one-hop network skipped (needs two nodes"),
        "{stdout}"
    );
    smpirun_accepts(&xml, dir.path());
}

/// SimGrid round trip: `smpirun` runs a small ping-pong on the calibrated
/// platform `xml`, applying every `smpi/*` property without complaint.
/// Skips, saying why, when SimGrid's `smpicc`/`smpirun` are missing.
fn smpirun_accepts(xml: &Path, dir: &Path) {
    let probe = |tool: &str| Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !probe("smpicc") || !probe("smpirun") {
        eprintln!("SKIPPED SimGrid round trip: `smpicc`/`smpirun` cannot be started (install libsimgrid-dev)");
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/smpi_pingpong.c");
    let exe = dir.join("smpi_pingpong");
    let cc = Command::new("smpicc").arg("-O1").arg("-o").arg(&exe).arg(&src).output().unwrap();
    assert!(cc.status.success(), "smpicc failed: {}", String::from_utf8_lossy(&cc.stderr));
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "node0\nnode1\n").unwrap();
    let run = Command::new("smpirun").args(["-np", "2", "-platform"]).arg(xml).arg("-hostfile").arg(&hosts).arg(&exe).output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    let platform = std::fs::read_to_string(xml).unwrap();
    assert!(run.status.success(), "smpirun rejected the platform:\n{err}\n{platform}");
    for id in ["os", "ois", "or", "bw-factor", "lat-factor", "async-small-thresh", "send-is-detached-thresh", "wtime", "iprobe"] {
        assert!(err.contains(&format!("Set 'smpi/{id}'")), "smpirun did not apply smpi/{id}:\n{err}");
    }
    assert!(!err.to_lowercase().contains("error") && !err.contains("Malformed"), "{err}");
    let simulated: f64 = out.lines().find_map(|l| l.strip_prefix("simulated_s ")).and_then(|v| v.trim().parse().ok()).unwrap_or(-1.0);
    assert!(simulated > 0.0, "no simulated time in:\n{out}");
}

/// The interposer library: `$INTERPOSER_LIB`, else the newer of the
/// workspace's `target/{release,debug}/libinterposer.so` (CI builds debug
/// only, so a release build may be stale); `Err(reason)` when missing.
fn interposer_lib() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("INTERPOSER_LIB") {
        return Ok(PathBuf::from(p));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // A relative CARGO_TARGET_DIR is relative to the workspace root, as cargo reads it.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |d| root.join(d));
    ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("libinterposer.so"))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
        .ok_or_else(|| format!("no libinterposer.so under {} (run `cargo build --release`, or set $INTERPOSER_LIB)", target.display()))
}

/// Runs `exe` on 2 ranks under the interposer, tracing into `out`, with
/// `SLOW_B=slow`.
fn traced_run(lib: &Path, exe: &Path, out: &Path, slow: &str) {
    traced_run_args(lib, exe, &["20", "400000"], out, slow)
}

/// [`traced_run`] with the program's arguments `args`.
fn traced_run_args(lib: &Path, exe: &Path, args: &[&str], out: &Path, slow: &str) {
    let mpi = mpi_launch::Mpi::find(None).unwrap();
    let (mut cmd, _session) = mpi.command(2).unwrap();
    mpi.forward(&mut cmd, "INTERPOSER_OUT", out);
    mpi.forward(&mut cmd, "LD_PRELOAD", lib);
    mpi.forward(&mut cmd, "SLOW_B", slow);
    let run = cmd.arg(exe).args(args).output().unwrap();
    assert!(run.status.success(), "traced run failed:\n{}", String::from_utf8_lossy(&run.stderr));
}

#[test]
fn calibrate_speed_finds_an_injected_2x_slowdown_in_one_region() {
    if let Some(why) = mpi_missing() {
        eprintln!("SKIPPED calibrate_speed_finds_an_injected_2x_slowdown_in_one_region: {why}");
        return;
    }
    let lib = match interposer_lib() {
        Ok(lib) => lib,
        Err(why) => {
            eprintln!("SKIPPED calibrate_speed_finds_an_injected_2x_slowdown_in_one_region: {why}");
            return;
        }
    };
    let _mpi = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("speed_regions");
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/speed_regions.c");
    let cc = Command::new(&mpicc).args(["-O1", "-g", "-o"]).arg(&exe).arg(&src).output().unwrap();
    assert!(cc.status.success(), "{mpicc} failed: {}", String::from_utf8_lossy(&cc.stderr));
    let (reference, target) = (dir.path().join("ref"), dir.path().join("slow"));
    traced_run(&lib, &exe, &reference, "1");
    traced_run(&lib, &exe, &target, "2");

    let ratios = dir.path().join("ratios.csv");
    let run =
        Command::new(env!("CARGO_BIN_EXE_calibrate")).arg("speed").arg(&reference).arg(&target).arg("--out").arg(&ratios).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(
        run.status.success(),
        "calibrate speed failed (is {} older than the simulator's trace format? rebuild it):\n{stdout}\n{stderr}",
        lib.display()
    );
    let file = SpeedRatios::load(&ratios).unwrap();
    let text = std::fs::read_to_string(&ratios).unwrap();
    assert!(text.starts_with("\"start-stop\",\"ratio\"\n"), "{text}");
    // The loops' regions (at least 1 ms of reference time over at least 10
    // blocks): one at ~2, the others at ~1. The first block after
    // MPI_Init (one per rank, cold caches) is left out: two samples do
    // not make a ratio a test can bound. The summary prints ratio,
    // ref (s), target (s), blocks, region.
    let big: Vec<(f64, String)> = stdout
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (ratio, ref_s, blocks, key) =
                (f.first()?.parse::<f64>().ok()?, f.get(1)?.parse::<f64>().ok()?, f.get(3)?.parse::<u64>().ok()?, f.last()?);
            (ref_s >= 1e-3 && blocks >= 10).then(|| (ratio, key.to_string()))
        })
        .collect();
    let slowed: Vec<&(f64, String)> = big.iter().filter(|(r, _)| *r > 1.5).collect();
    assert_eq!(slowed.len(), 1, "exactly one slowed region expected:\n{stdout}");
    assert!((1.7..=2.4).contains(&slowed[0].0), "slowed region ratio {}:\n{stdout}", slowed[0].0);
    assert!(big.len() >= 2, "{stdout}");
    for (r, key) in big.iter().filter(|(r, _)| *r <= 1.5) {
        assert!((0.85..=1.2).contains(r), "region {key}: ratio {r}, want ~1:\n{stdout}");
    }
    let in_file = file.get_key(&slowed[0].1).unwrap();
    assert!((in_file - slowed[0].0).abs() < 1e-3, "file has {in_file} for {}", slowed[0].1);

    // The file's keys are the regions replay sees: every compute block of
    // the reference trace with time has a ratio, found by its region id.
    let (_, ranks) = simulator::trace::open_dir(&reference).unwrap();
    let actions = simulator::action::TraceActions::new(ranks[0].clone(), ComputeTime::Cpu).unwrap();
    let (mut found, mut missing) = (0, 0);
    for a in actions {
        if let Ok(simulator::action::Action::Compute { region, seconds }) = a {
            match file.get(region) {
                Some(_) => found += 1,
                None if seconds == 0.0 => {}
                None => missing += 1,
            }
        }
    }
    assert!(found >= 20 && missing == 0, "{found} compute blocks matched a ratio, {missing} with time did not:\n{stdout}");

    // dPerf's rule on the same trace: every region has a threshold.
    let run = Command::new(env!("CARGO_BIN_EXE_calibrate")).arg("blocks").arg(&reference).output().unwrap();
    let table = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && table.starts_with("  blocks     th   t_avg (us)") && table.contains(&slowed[0].1), "{table}");

    // A pair from different programs is a one-line error.
    let other = dir.path().join("other");
    let pp = dir.path().join("hello");
    std::fs::copy(&exe, &pp).unwrap();
    traced_run(&lib, &pp, &other, "1");
    let run = Command::new(env!("CARGO_BIN_EXE_calibrate"))
        .arg("speed")
        .arg(&reference)
        .arg(&other)
        .arg("--out")
        .arg(&ratios)
        .env_remove("RUST_BACKTRACE") // else anyhow appends a backtrace
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && stderr.contains("traced `speed_regions` but") && stderr.trim().lines().count() == 1,
        "status {}:\n{stderr}",
        run.status
    );
}

#[test]
fn calibrate_network_with_a_hostfile_adds_an_inter_node_model() {
    if let Some(why) = mpi_missing() {
        eprintln!("SKIPPED calibrate_network_with_a_hostfile_adds_an_inter_node_model: {why}");
        return;
    }
    // One machine here: a one-host hostfile exercises the two-placement
    // path (both ranks land on it), not a real network.
    let _mpi = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let (out, hosts) = (dir.path().join("cluster.toml"), dir.path().join("hosts"));
    std::fs::write(&hosts, "localhost slots=2\n").unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_calibrate"))
        .args(["network", "--reps", "3", "--sizes", "12", "--refine-rounds", "0", "--loggp-n", "0", "--hostfile"])
        .arg(&hosts)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "calibrate network --hostfile failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(
        stdout.contains("two nodes (--hostfile):") && stdout.contains("one-hop network ") && !stdout.contains("skipped (needs two nodes"),
        "{stdout}"
    );
    let p = Platform::load(&out).unwrap();
    assert_eq!(p.hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), vec!["localhost"]);
    assert!(p.network.inter.is_some(), "no inter-node model:\n{stdout}");
}

#[test]
fn calibrate_power_measure_says_in_one_line_whether_rapl_exists() {
    let run = Command::new(env!("CARGO_BIN_EXE_calibrate"))
        .args(["power", "--measure"])
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let want = if calibrate::power::rapl_source().is_some() { "RAPL found at" } else { "no RAPL on this machine" };
    assert!(!run.status.success() && stderr.contains(want) && stderr.trim().lines().count() == 1, "{stderr}");
}

/// A one-host platform: 1 µs + 1 GB/s per message, eager below 4 KiB,
/// 0.2 µs send and receive overheads.
const TEST_PLATFORM: &str = r#"name = "test"
[[hosts]]
name = "node0"
cores = 2
speed_ratio = 1.0
[mapping]
kind = "block"
[network.intra]
eager_threshold_bytes = 4096
[[network.intra.transfer]]
intercept_s = 1e-6
bandwidth_bytes_per_s = 1e9
[[network.intra.send_overhead]]
intercept_s = 2e-7
bandwidth_bytes_per_s = 1e12
[[network.intra.recv_overhead]]
intercept_s = 2e-7
bandwidth_bytes_per_s = 1e12
"#;

/// Every record of every rank, in order.
fn all_records(dir: &Path) -> Vec<Vec<simulator::trace::CallRecord>> {
    let (_, ranks) = simulator::trace::open_dir(dir).unwrap();
    ranks.iter().map(|r| r.records().unwrap().map(|x| x.unwrap()).collect()).collect()
}

#[test]
fn calibrate_blocks_compresses_ring_and_jacobi2d_traces_keeping_the_makespan() {
    let name = "calibrate_blocks_compresses_ring_and_jacobi2d_traces_keeping_the_makespan";
    if let Some(why) = mpi_missing() {
        eprintln!("SKIPPED {name}: {why}");
        return;
    }
    let lib = match interposer_lib() {
        Ok(lib) => lib,
        Err(why) => {
            eprintln!("SKIPPED {name}: {why}");
            return;
        }
    };
    let ctests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../c-tests");
    let st = Command::new("make").arg("-s").arg("-C").arg(&ctests).status().unwrap();
    assert!(st.success(), "make -C c-tests failed");
    let _mpi = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, TEST_PLATFORM).unwrap();
    // (program, arguments, least record reduction, largest relative
    // change of the makespan). Averaging a region's blocks also removes
    // the imbalance that the machine's noise adds to each iteration of a
    // halo exchange (the slower rank of every iteration sets its pace), so
    // jacobi2d's makespan may shrink by that noise.
    for (prog, args, least, moved) in [("ring", ["20000", "8"], 2.0, 0.02), ("jacobi2d", ["256", "300"], 1.0, 0.05)] {
        let (trace, small) = (dir.path().join(prog), dir.path().join(format!("{prog}.z")));
        traced_run_args(&lib, &ctests.join("build").join(prog), &args, &trace, "1");
        let run = Command::new(env!("CARGO_BIN_EXE_calibrate"))
            .arg("blocks")
            .arg(&trace)
            .arg("--compress")
            .arg(&small)
            .arg("--platform")
            .arg(&platform)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{prog}: {stdout}\n{}", String::from_utf8_lossy(&run.stderr));
        eprintln!("{prog}:\n{}", stdout.lines().filter(|l| !l.starts_with(' ')).collect::<Vec<_>>().join("\n"));
        let report = calibrate::compress::compress_trace(&trace, &dir.path().join("again"), 0.02, 256).unwrap();
        assert!(report.stored_records as f64 * least <= report.records as f64, "{prog}: {report:?}");
        assert!(report.stored_records < report.records && report.bytes_after < report.bytes_before, "{prog}: {report:?}");
        // The same calls in the same order; compute times move only after
        // each region's threshold, and each region's total stays.
        let (a, b) = (all_records(&trace), all_records(&small));
        let mut totals = std::collections::HashMap::<(usize, u64, u64), (i64, i64)>::new();
        for (r, (ra, rb)) in a.iter().zip(&b).enumerate() {
            assert_eq!(ra.len(), rb.len(), "{prog} rank {r}");
            let mut prev = 0;
            for (x, y) in ra.iter().zip(rb) {
                assert_eq!((x.op, x.caller, &x.params), (y.op, y.caller, &y.params), "{prog} rank {r}");
                let t = totals.entry((r, prev, x.caller)).or_default();
                (t.0, t.1) = (t.0 + x.compute_cpu_ns as i64, t.1 + y.compute_cpu_ns as i64);
                prev = x.caller;
            }
        }
        for (k, (before, after)) in &totals {
            assert!((before - after).abs() as f64 <= 0.02 * *before as f64 + 1e-3 * 1e9, "{prog} region {k:?}: {before} ns -> {after} ns");
        }
        let makespan = |t: &Path| calibrate::compress::replay_makespan(&platform, t, ComputeTime::Cpu).unwrap();
        let (before, after) = (makespan(&trace), makespan(&small));
        assert!((after / before - 1.0).abs() <= moved, "{prog}: makespan {before} s -> {after} s");
    }
}

#[test]
fn clean_buffers_and_host_copy_reach_the_benchmark_and_the_platform() {
    if let Some(why) = mpi_missing() {
        eprintln!("SKIPPED clean_buffers_and_host_copy_reach_the_benchmark_and_the_platform: {why}");
        return;
    }
    let _mpi = mpi_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("platform.toml");
    let csv = dir.path().join("samples.csv");
    let quick =
        ["--reps", "5", "--sizes", "12", "--refine-rounds", "0", "--loggp-n", "0", "--allreduce-reps", "0", "--max-extra-passes", "0"];
    let run = Command::new(env!("CARGO_BIN_EXE_calibrate"))
        .args(["network", "--clean-buffers", "--host-copy"])
        .args(quick)
        .arg("--out")
        .arg(&out)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "calibrate network failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().filter(|l| l.starts_with("exchange,")).count(), 5 * 12, "one exchange sample per plan entry");
    // The rate is written exactly when the fit saw sharing.
    let p = Platform::load(&out).unwrap();
    match p.network.host_copy_bytes_per_s {
        Some(c) => assert!(c.is_finite() && c > 0.0 && stdout.contains("shared by concurrent transfers"), "{c}\n{stdout}"),
        None => assert!(stdout.contains("no sharing seen"), "{stdout}"),
    }
}

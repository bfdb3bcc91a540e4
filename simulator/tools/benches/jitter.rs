//! Cost of the jitter engine (`simulator jitter`) with the barrier (arity
//! 2, 1 µs / 4 µs latencies, 2 tasks per node, 1 ms of work per phase),
//! unsync, sync and cosched, on seeded synthetic traces of 1k, 10k, 18k and 100k
//! detours per second (`simulator::jitter::synth`: Poisson detours,
//! log-uniform lengths, 2 % noise, two CPUs × 10 s at 2.3 GHz, co-scheduler
//! windows of 2e6 cycles) and, when `JITTER_BENCH_TRACE` names a
//! `tracecollector` output directory or trace file, on that real trace.
//!
//! Per row it prints:
//! - the CPU time (user + sys) per task-phase on one thread, ns (sync
//!   tasks share one offset, so a phase's lookups fall on a few events
//!   and stay in the cache: the gap to unsync is the cost of lookups
//!   scattered over the whole trace):
//!   `JITTER_BENCH_TASKS` tasks (default 65,536) × `JITTER_BENCH_PHASES`
//!   phases (default 200) on a one-thread pool, the run's set-up included;
//! - with `JITTER_BENCH_BIG=1`, wall and CPU time of 1,048,576 tasks × 1000
//!   phases on all threads (`RAYON_NUM_THREADS`), with the load average
//!   before the run: on a shared machine the wall time is inflated, the CPU
//!   time much less so.
//!
//! `JITTER_BENCH_FILTER` keeps the rows whose "trace mode" label contains
//! it (e.g. `18k/s cosched`). `JITTER_BENCH_WRITE=DIR` also writes each
//! synthetic trace as a `tracecollector`-style directory `DIR/<rate>`, for
//! timing the `simulator jitter` command itself.
//!
//! `cargo bench -p simulator-tools --bench jitter`

use std::path::Path;
use std::time::Instant;

use simulator::jitter::collective::{latency_model, Collective, Net};
use simulator::jitter::synth::{synthetic_trace, SynthSpec};
use simulator::jitter::{load_tracks, simulate, Config, Mode, Track};
use simulator::jitter_trace::trace_file_name;

const HZ: f64 = 2.3e9;
const WINDOW: u64 = 2_000_000;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// User + system CPU time of the process so far, seconds.
fn cpu_s() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn config(tasks: u64, phases: u32, mode: Mode, hz: f64) -> Config {
    Config {
        tasks,
        phases,
        work_s: 1e-3,
        mode,
        coverage_pct: 100.0,
        collective: Collective::Barrier,
        arity: 2,
        bytes: 8,
        net: Net { intra: latency_model(1e-6), inter: latency_model(4e-6), cores_per_node: 2, hz },
        seed: 1,
    }
}

/// Runs `cfg` on `pool`; returns (wall s, CPU s, slowdown %).
fn time(pool: &rayon::ThreadPool, tracks: &[Track], hz: f64, cfg: &Config) -> (f64, f64, f64) {
    let (c0, t0) = (cpu_s(), Instant::now());
    let r = pool.install(|| simulate(tracks, hz, cfg).expect("valid configuration"));
    (t0.elapsed().as_secs_f64(), cpu_s() - c0, r.slowdown_pct())
}

fn main() {
    let tasks = env_u64("JITTER_BENCH_TASKS", 1 << 16);
    let phases = env_u64("JITTER_BENCH_PHASES", 200).clamp(1, u32::MAX as u64) as u32;
    let big = std::env::var("JITTER_BENCH_BIG").is_ok_and(|v| v == "1");
    let filter = std::env::var("JITTER_BENCH_FILTER").ok();
    let write = std::env::var("JITTER_BENCH_WRITE").ok();
    let mut traces: Vec<(String, Vec<Track>, f64)> = Vec::new();
    for (label, rate) in [("1k", 1e3), ("10k", 1e4), ("18k", 1.8e4), ("100k", 1e5)] {
        let mut tracks = Vec::new();
        for cpu in 0..2u32 {
            let spec = SynthSpec {
                rate_per_s: rate,
                noise: 0.02,
                duration_s: 10.0,
                hz: HZ,
                cosched_window_cycles: Some(WINDOW),
                seed: 1 + cpu as u64,
            };
            let trace = synthetic_trace(&spec);
            if let Some(dir) = &write {
                let dir = Path::new(dir).join(label);
                std::fs::create_dir_all(&dir).expect("JITTER_BENCH_WRITE is a writable directory");
                trace.write(&dir.join(trace_file_name("synthetic", cpu))).expect("JITTER_BENCH_WRITE is a writable directory");
            }
            tracks.push(Track::new("synthetic", &trace, HZ, None).expect("synthetic traces are valid"));
        }
        traces.push((format!("synthetic {label}/s"), tracks, HZ));
    }
    match std::env::var("JITTER_BENCH_TRACE") {
        Ok(p) => match load_tracks(Path::new(&p), Some(WINDOW)) {
            Ok((tracks, hz)) => traces.push((format!("real {}", Path::new(&p).display()), tracks, hz)),
            Err(e) => println!("real trace skipped: {e}"),
        },
        Err(_) => println!(
            "real trace skipped: set JITTER_BENCH_TRACE to a `tracecollector --duration 10 --out DIR` directory \
             (recording at bench time would hold every CPU for 10 s and measure the benchmark's own noise)"
        ),
    }
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a one-thread pool");
    let all = rayon::ThreadPoolBuilder::new().build().expect("a thread pool");
    println!(
        "barrier, 1 ms/phase; 1 thread: {tasks} tasks × {phases} phases; all: {} threads, 1,048,576 × 1000",
        all.current_num_threads()
    );
    println!(
        "{:<24} {:>10} {:>7} {:>8} {:>12} {:>10} {:>9} {:>9} {:>16}",
        "trace", "detours/s", "noise%", "mode", "1T ns/t-ph", "slowdown%", "1M wall s", "1M CPU s", "load before"
    );
    for (name, tracks, hz) in &traces {
        let period_s = tracks[0].period() as f64 / hz;
        let events: usize = tracks.iter().map(|t| t.events()).sum();
        let rate = events as f64 / (period_s * tracks.len() as f64);
        let noise = 100.0 * tracks.iter().map(|t| (t.period() - t.compute_per_period()) as f64).sum::<f64>()
            / tracks.iter().map(|t| t.period() as f64).sum::<f64>();
        for mode in [Mode::Unsync, Mode::Sync, Mode::Cosched] {
            let m = format!("{mode:?}").to_lowercase();
            if !filter.as_deref().is_none_or(|f| format!("{name} {m}").contains(f)) {
                continue;
            }
            let (_, cpu, slowdown) = time(&one, tracks, *hz, &config(tasks, phases, mode, *hz));
            let ns = cpu * 1e9 / (tasks as f64 * phases as f64);
            let (mut wall_big, mut cpu_big, mut load_big) = (String::from("-"), String::from("-"), String::from("-"));
            if big {
                load_big = load();
                let (w, c, _) = time(&all, tracks, *hz, &config(1 << 20, 1000, mode, *hz));
                (wall_big, cpu_big) = (format!("{w:.2}"), format!("{c:.2}"));
            }
            println!("{name:<24} {rate:>10.0} {noise:>7.2} {m:>8} {ns:>12.1} {slowdown:>10.3} {wall_big:>9} {cpu_big:>9} {load_big:>16}");
        }
    }
}

//! Throughput of the jitter engine (`simulator jitter`), task-phases per
//! second, on seeded synthetic traces of 1k, 10k, 100k and 1M detours per
//! second (`simulator::jitter::synth`: Poisson detours, log-uniform
//! lengths, 2 % noise, 4 s at 2.6 GHz, co-scheduler windows of 2e6 cycles)
//! and, when `JITTER_BENCH_TRACE` names a `tracecollector` output directory
//! or trace file, on that real trace.
//!
//! Each row is the median of `JITTER_BENCH_REPS` (default 3) runs of
//! `JITTER_BENCH_TASKS` tasks (default 1,048,576) with 1 ms of work per
//! phase; the collective-free runs do 100 phases, the barrier runs
//! `JITTER_BENCH_BARRIER_PHASES` (default 5: the barrier's tree costs far
//! more per task-phase than the compute). "task-ph/s" counts the whole
//! run, its set-up (start offsets, the tree's order) included; "per phase"
//! is the rate of the phases alone: each repetition also runs one phase,
//! and the median of the differences is taken.
//! `JITTER_BENCH_FILTER` keeps the rows whose "trace mode collective"
//! label contains it (e.g. `1e5/s unsync none`).
//!
//! `cargo bench -p simulator-tools --bench jitter`

use std::path::Path;
use std::time::Instant;

use simulator::jitter::collective::{latency_model, Collective, Net};
use simulator::jitter::synth::{synthetic_trace, SynthSpec};
use simulator::jitter::{load_tracks, simulate, Config, Mode, Track};

const HZ: f64 = 2.6e9;
const WINDOW: u64 = 2_000_000;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let tasks = env_u64("JITTER_BENCH_TASKS", 1 << 20);
    let reps = env_u64("JITTER_BENCH_REPS", 3).max(1);
    let filter = std::env::var("JITTER_BENCH_FILTER").ok();
    let mut traces: Vec<(String, Vec<Track>, f64)> = Vec::new();
    for rate in [1e3, 1e4, 1e5, 1e6] {
        let spec = SynthSpec { rate_per_s: rate, noise: 0.02, duration_s: 4.0, hz: HZ, cosched_window_cycles: Some(WINDOW), seed: 1 };
        let track = Track::new("synthetic", &synthetic_trace(&spec), HZ, None).expect("synthetic traces are valid");
        traces.push((format!("synthetic {rate:.0e}/s"), vec![track], HZ));
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
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("tasks {tasks}, work 1 ms/phase, median of {reps}, {} threads, load {}", rayon_threads(), load.trim());
    println!(
        "{:<28} {:>10} {:>7} {:>8} {:>10} {:>7} {:>10} {:>12} {:>12} {:>12}",
        "trace", "detours/s", "noise%", "mode", "collective", "phases", "median s", "slowdown%", "task-ph/s", "per phase"
    );
    let barrier_phases = env_u64("JITTER_BENCH_BARRIER_PHASES", 5).clamp(2, u32::MAX as u64) as u32;
    for (name, tracks, hz) in &traces {
        let period_s = tracks[0].period() as f64 / hz;
        let events: usize = tracks.iter().map(|t| t.events()).sum();
        let rate = events as f64 / (period_s * tracks.len() as f64);
        let noise = 100.0 * tracks.iter().map(|t| (t.period() - t.compute_per_period()) as f64).sum::<f64>()
            / tracks.iter().map(|t| t.period() as f64).sum::<f64>();
        for (collective, phases) in [(Collective::None, 100u32), (Collective::Barrier, barrier_phases)] {
            for mode in [Mode::Unsync, Mode::Cosched] {
                let label = format!("{name} {} {}", format!("{mode:?}").to_lowercase(), format!("{collective:?}").to_lowercase());
                if !filter.as_deref().is_none_or(|f| label.contains(f)) {
                    continue;
                }
                let cfg = Config {
                    tasks,
                    phases,
                    work_s: 1e-3,
                    mode,
                    coverage_pct: 100.0,
                    collective,
                    arity: 2,
                    bytes: 8,
                    net: Net { intra: latency_model(1e-6), inter: latency_model(4e-6), cores_per_node: 2, hz: *hz },
                    seed: 1,
                };
                let one = Config { phases: 1, ..cfg.clone() };
                let (mut times, mut extra) = (Vec::new(), Vec::new());
                let mut slowdown = 0.0;
                for _ in 0..reps {
                    let t0 = Instant::now();
                    let r = simulate(tracks, *hz, &cfg).expect("valid configuration");
                    let all = t0.elapsed().as_secs_f64();
                    let t1 = Instant::now();
                    simulate(tracks, *hz, &one).expect("valid configuration");
                    times.push(all);
                    extra.push(all - t1.elapsed().as_secs_f64());
                    slowdown = r.slowdown_pct();
                }
                let s = median(times);
                let per_phase = tasks as f64 * (phases - 1) as f64 / median(extra);
                println!(
                    "{:<28} {:>10.0} {:>7.2} {:>8} {:>10} {:>7} {:>10.4} {:>12.3} {:>12.3e} {:>12.3e}",
                    name,
                    rate,
                    noise,
                    format!("{mode:?}").to_lowercase(),
                    format!("{collective:?}").to_lowercase(),
                    phases,
                    s,
                    slowdown,
                    tasks as f64 * phases as f64 / s,
                    per_phase
                );
            }
        }
    }
}

/// rayon's pool size: `RAYON_NUM_THREADS`, else the CPUs available.
fn rayon_threads() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::env::var("RAYON_NUM_THREADS").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(cpus)
}

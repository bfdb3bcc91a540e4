//! The plain reference the engine is tested against: jitSim's
//! work-conserving rule (§3.4) as a linear walk over every event of the
//! raw trace, and a sequential barrier over it; property tests on seeded
//! random traces compare the prefix-sum cursors and the engine with them.

use std::time::Instant;

use super::collective::{self, latency_model, Collective, Net};
use super::engine::{run, segment, splitmix, Config, Mode};
use super::tasks::{Env, PhaseStat, Tasks};
use super::track::{Quiet, TraceCursor, Track};
use crate::jitter_trace::{JitterHeader, JitterRecord, JitterTrace};

pub(crate) const HZ: f64 = 1e9;

/// Finish time of `work` compute cycles started at task time `t` by a task
/// reading `[offset, offset + segment)` of `trace` cyclically (cycles of the
/// trace): walks the events one by one. A start inside an event waits out its
/// remainder; an end exactly at an event start leaves the event.
pub(crate) fn walk(trace: &JitterTrace, offset: u64, segment: u64, t: u64, work: u64) -> u64 {
    let period = trace.duration_cycles;
    let events: Vec<(u64, u64)> = trace.events().collect();
    let (mut t, mut work) = (t, work);
    let mut rounds = 0;
    while work > 0 {
        rounds += 1;
        assert!(rounds < 1_000_000, "the segment holds no compute");
        let v = t % segment;
        let mut pos = (offset + v) % period;
        // Positions up to `lim` follow each other without a segment end or wrap.
        let lim = pos + (segment - v).min(period - pos);
        for &(s, d) in &events {
            if s + d <= pos {
                continue;
            }
            if s >= lim || work == 0 {
                break;
            }
            if s > pos {
                let gap = s - pos;
                if gap >= work {
                    t += work;
                    pos += work;
                    work = 0;
                    break;
                }
                t += gap;
                work -= gap;
                pos = s;
            }
            let end = (s + d).min(lim);
            t += end - pos;
            pos = end;
        }
        if work > 0 && pos < lim {
            let w = (lim - pos).min(work);
            t += w;
            work -= w;
        }
    }
    t
}

fn header(window: Option<u64>) -> JitterHeader {
    JitterHeader {
        host: "r".into(),
        cpu: 0,
        tsc_hz: HZ,
        tsc_hz_kernel: None,
        tsc_hz_kernel_source: None,
        t_min_cycles: 1,
        threshold_cycles: 1,
        timer_read: "rdtsc".into(),
        start_unix_ns: 0,
        requested_duration_s: 1.0,
        kernel: "reference".into(),
        cosched_window_cycles: window,
        cosched_origin_cycles: window.map(|_| 0),
    }
}

/// A small random trace: up to 25 events of 1–40 cycles, gaps of 0–80
/// cycles (a quarter of them 0, so events come back to back), a lead of 0–50.
pub(crate) fn random_trace(seed: u64) -> JitterTrace {
    let r = |i: u64| splitmix(seed, i);
    let n = r(0) % 26;
    let records: Vec<JitterRecord> = (0..n)
        .map(|i| JitterRecord {
            jitter_cycles: 1 + r(3 * i + 1) % 40,
            cycles_to_next: if r(3 * i + 2) % 4 == 0 { 0 } else { r(3 * i + 3) % 81 },
        })
        .collect();
    let mut lead = r(1 << 20) % 51;
    if lead + records.iter().map(|x| x.cycles_to_next).sum::<u64>() == 0 {
        lead = 1;
    }
    let duration_cycles = lead + records.iter().map(|x| x.jitter_cycles + x.cycles_to_next).sum::<u64>();
    JitterTrace { header: header(Some(37)), lead_cycles: lead, records, duration_cycles, dropped_events: 0 }
}

/// Start offsets of `n` tasks over `tracks` (task `i` on track `i mod
/// tracks.len()`) as the three modes draw them, by `pick % 3`: each its own
/// (unsync), one shared (sync), or a few shared window starts (cosched).
fn random_offsets(tracks: &[Track], n: u64, pick: u64, r: &impl Fn(u64) -> u64) -> Vec<u64> {
    let nt = tracks.len() as u64;
    (0..n)
        .map(|i| {
            let p = tracks[(i % nt) as usize].period();
            match pick % 3 {
                0 => r(1000 + i) % p,
                1 => r(999) % p,
                _ => (r(1000 + i) % 3) * 37 % p,
            }
        })
        .collect()
}

/// A segment length the engine accepts: the whole period, or more than the longest jitter burst.
fn random_segment(track: &Track, r: u64) -> u64 {
    let p = track.period();
    if r.is_multiple_of(3) || track.longest_jitter_run() + 1 >= p {
        p
    } else {
        track.longest_jitter_run() + 1 + r % (p - track.longest_jitter_run())
    }
}

#[test]
fn cursors_equal_the_linear_walk_on_random_traces() {
    for case in 0..400u64 {
        let seed = splitmix(0x5eed, case);
        let trace = random_trace(seed);
        let track = Track::new("r", &trace, HZ, None).unwrap();
        let p = track.period();
        let r = |i: u64| splitmix(seed ^ 0xabcdef, i);
        let offset = r(0) % p;
        let segment = random_segment(&track, r(1));
        let (mut hint, mut quiet) = (0u32, Quiet::default());
        let mut cursor = TraceCursor::new(&track, offset);
        let mut t = r(2) % (3 * p);
        for step in 0..40u64 {
            let x = r(10 + step);
            let work = match x % 5 {
                0 => 0,
                1 => 1 + x / 7 % 8,
                2 => 1 + x / 7 % (3 * p),
                _ => 1 + x / 7 % 60,
            };
            let want = walk(&trace, offset, segment, t, work);
            let ctx = format!("case {case} step {step}: offset {offset} segment {segment} period {p} t {t} work {work}");
            assert_eq!(track.stretch(&mut 0, offset, segment, t, work), want, "fresh hint, {ctx}");
            assert_eq!(track.stretch(&mut hint, offset, segment, t, work), want, "reused hint, {ctx}");
            assert_eq!(track.stretch_quiet(&mut quiet, offset, segment, t, work), want, "quiet cursor, {ctx}");
            if segment == p {
                assert_eq!(cursor.stretch(t, work), want - t, "trace cursor, {ctx}");
            }
            // Mostly carry on from the end (as tasks do); sometimes jump anywhere, backwards too.
            t = if x % 7 == 0 { r(100 + step) % (4 * p) } else { want + x / 11 % 30 };
        }
    }
}

/// The barrier of jitSim §3.6 (Fig. 6), sequentially over the walk: up the
/// binary tree in decreasing task order, then down it in increasing order.
fn reference_barrier(trace: &JitterTrace, offsets: &[u64], segment: u64, t: &mut [u64], send: u64, recv: u64) {
    let n = t.len();
    let s = |i: usize, at: u64, w: u64| walk(trace, offsets[i], segment, at, w);
    let mut arr = vec![0u64; n];
    for i in (0..n).rev() {
        let mut x = t[i];
        for &a in arr.iter().take((2 * i + 3).min(n)).skip(2 * i + 1) {
            x = s(i, x.max(a), recv);
        }
        if i > 0 {
            x = s(i, x, send);
            arr[i] = x;
        }
        t[i] = x;
    }
    for i in 0..n {
        let mut x = t[i];
        if i > 0 {
            x = s(i, x.max(arr[i]), recv);
        }
        for slot in arr.iter_mut().take((2 * i + 3).min(n)).skip(2 * i + 1) {
            x = s(i, x, send);
            *slot = x;
        }
        t[i] = x;
    }
}

#[test]
fn engine_equals_the_reference_walk_on_random_traces() {
    for case in 0..200u64 {
        let seed = splitmix(0xe9e, case);
        let trace = random_trace(seed);
        let track = Track::new("r", &trace, HZ, None).unwrap();
        let p = track.period();
        let r = |i: u64| splitmix(seed ^ 0x1234, i);
        let n = 1 + (r(0) % 40) as usize;
        let work = 1 + r(1) % (2 * p);
        let latency = r(2) % 30;
        let coverage = if r(3) % 3 == 0 { 100.0 } else { 100.0 * random_segment(&track, r(4)) as f64 / p as f64 };
        let segment = ((p as f64 * coverage / 100.0).round() as u64).clamp(1, p);
        if segment <= track.longest_jitter_run() {
            continue;
        }
        let offsets = random_offsets(std::slice::from_ref(&track), n as u64, r(5), &r);
        for collective in [Collective::None, Collective::Barrier] {
            let cfg = Config {
                tasks: n as u64,
                phases: 6,
                work_s: work as f64 / HZ,
                mode: Mode::Unsync,
                coverage_pct: coverage,
                collective,
                arity: 2,
                bytes: 0,
                net: Net {
                    intra: latency_model(2.0 * latency as f64 / HZ),
                    inter: latency_model(2.0 * latency as f64 / HZ),
                    cores_per_node: 1,
                    hz: HZ,
                },
                seed: 0,
            };
            let got = run(std::slice::from_ref(&track), HZ, &cfg, &offsets, Instant::now(), &|_| {});
            let mut t = vec![0u64; n];
            let mut last = 0;
            for (phase, stat) in got.phases.iter().enumerate() {
                for (i, ti) in t.iter_mut().enumerate() {
                    *ti = walk(&trace, offsets[i], segment, *ti, work);
                }
                let compute_max = t.iter().max().copied().unwrap() - last;
                if collective == Collective::Barrier {
                    reference_barrier(&trace, &offsets, segment, &mut t, latency, latency);
                }
                let end = *t.iter().max().unwrap();
                let ctx = format!("case {case} {collective:?} phase {phase}: n {n} work {work} segment {segment} period {p}");
                assert_eq!(stat.consumed_cycles, end - last, "{ctx}");
                if collective == Collective::None {
                    assert_eq!(stat.compute_max_cycles, compute_max, "{ctx}");
                    t.fill(end);
                }
                last = end;
            }
        }
    }
}

#[cfg(feature = "parallel")]
#[test]
fn results_do_not_depend_on_the_thread_count() {
    use super::engine::simulate;
    use super::synth::{synthetic_trace, SynthSpec};
    let spec = SynthSpec { rate_per_s: 20_000.0, noise: 0.02, duration_s: 0.2, hz: HZ, cosched_window_cycles: Some(1_000_000), seed: 3 };
    let track = Track::new("s", &synthetic_trace(&spec), HZ, None).unwrap();
    let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
    for collective in [Collective::None, Collective::Barrier, Collective::Allreduce] {
        for mode in [Mode::Unsync, Mode::Cosched, Mode::Sync] {
            let cfg = Config {
                tasks: 20_000,
                phases: 4,
                work_s: 2e-4,
                mode,
                coverage_pct: 100.0,
                collective,
                arity: 2,
                bytes: 8,
                net: Net { intra: latency_model(1e-6), inter: latency_model(4e-6), cores_per_node: 2, hz: HZ },
                seed: 7,
            };
            let sim = |threads| pool(threads).install(|| simulate(std::slice::from_ref(&track), HZ, &cfg).unwrap().phases);
            let one = sim(1);
            assert_eq!(sim(2), one, "{collective:?} {mode:?}");
            assert_eq!(sim(3), one, "{collective:?} {mode:?}");
        }
    }
}

/// The engine as separate passes, phase by phase: every task's compute
/// (each block from a fresh cursor), then the collective level by level,
/// with nothing fused, reordered or skipped.
fn run_in_passes(tracks: &[Track], cfg: &Config, offsets: &[u64]) -> Vec<PhaseStat> {
    let n = cfg.tasks as usize;
    let work = (cfg.work_s * HZ).round() as u64;
    let segments: Vec<u64> = tracks.iter().map(|t| segment(t, cfg.coverage_pct)).collect();
    let env = Env::new(tracks, offsets, &segments);
    let (mut t, mut cursors, mut arr) = (vec![0u64; n], vec![Quiet::default(); n], vec![0u64; n]);
    let (mut last, mut out) = (0, Vec::new());
    for _ in 0..cfg.phases {
        let mut compute_max = 0;
        for (i, ti) in t.iter_mut().enumerate() {
            let s = *ti;
            *ti = env.stretch(i as u64, &mut Quiet::default(), s, work);
            compute_max = compute_max.max(*ti - s);
        }
        let mut ts = Tasks { t: &mut t, cursors: &mut cursors, arr: &mut arr, sent: false, env };
        let exit = collective::run(cfg.collective, &mut ts, &cfg.net, cfg.arity as u64, cfg.bytes, None);
        out.push(PhaseStat { consumed_cycles: exit.end - last, compute_max_cycles: compute_max });
        last = exit.end;
        if cfg.collective == Collective::None {
            // Without a collective all tasks start the next phase together (jitSim Fig. 3).
            t.fill(last);
        }
    }
    out
}

#[test]
fn engine_equals_separate_passes_on_random_traces() {
    let collectives =
        [Collective::Barrier, Collective::ReduceBcast, Collective::Allreduce, Collective::Bcast, Collective::Gather, Collective::None];
    for case in 0..600u64 {
        let seed = splitmix(0x9a55, case);
        let r = |i: u64| splitmix(seed ^ 0x77, i);
        let tracks: Vec<Track> = (0..1 + r(0) % 3).map(|j| Track::new("r", &random_trace(splitmix(seed, j)), HZ, None).unwrap()).collect();
        let coverage = if r(1) % 3 == 0 { 100.0 } else { 55.0 + (r(2) % 45) as f64 };
        if tracks.iter().any(|t| segment(t, coverage) <= t.longest_jitter_run()) {
            continue;
        }
        // Powers of two often: recursive doubling without fold-in tasks.
        let n = if r(12) % 2 == 0 { 1 << (r(3) % 9) } else { 1 + r(3) % 300 };
        let offsets = random_offsets(&tracks, n, r(14), &r);
        let cfg = Config {
            tasks: n,
            phases: 1 + (r(4) % 6) as u32,
            work_s: (1 + r(5) % 300) as f64 / HZ,
            mode: Mode::Unsync,
            coverage_pct: coverage,
            collective: collectives[(r(6) % collectives.len() as u64) as usize],
            arity: 2 + (r(7) % 3) as u32,
            bytes: r(8) % 2 * 8,
            // Free messages half the time: a barrier's chains are then empty
            // and every task's compute starts right at its parent's message.
            net: Net {
                intra: latency_model((r(9) % 20 * (r(13) % 2)) as f64 / HZ),
                inter: latency_model((r(10) % 60 * (r(13) % 2)) as f64 / HZ),
                cores_per_node: 1 + r(11) % 4,
                hz: HZ,
            },
            seed: 0,
        };
        let got = run(&tracks, HZ, &cfg, &offsets, Instant::now(), &|_| {}).phases;
        assert_eq!(got, run_in_passes(&tracks, &cfg, &offsets), "case {case}: {cfg:?}");
    }
}

/// The barrier and reduce-bcast over whole traces (fused subtree blocks,
/// four blocks in unit tests) on trees of up to 3000 tasks, arity 2-5,
/// messages free or costly within and across nodes, against the
/// collectives run level by level over every task.
#[test]
fn fused_tree_equals_separate_passes_on_larger_trees() {
    for case in 0..120u64 {
        let seed = splitmix(0xb10c, case);
        let r = |i: u64| splitmix(seed ^ 0x3c, i);
        let tracks: Vec<Track> = (0..1 + r(0) % 3).map(|j| Track::new("r", &random_trace(splitmix(seed, j)), HZ, None).unwrap()).collect();
        let n = 1 + r(3) % 3000;
        let offsets = random_offsets(&tracks, n, r(14), &r);
        // Each kind of message free a third of the time: then a chain's
        // points after no work stay where it started.
        let cost = |i: u64, most: u64| if r(i) % 3 == 0 { 0.0 } else { (1 + r(i + 1) % most) as f64 / HZ };
        let cfg = Config {
            tasks: n,
            phases: 1 + (r(4) % 5) as u32,
            work_s: (1 + r(5) % 300) as f64 / HZ,
            mode: Mode::Unsync,
            coverage_pct: 100.0,
            collective: if r(6) % 2 == 0 { Collective::Barrier } else { Collective::ReduceBcast },
            arity: 2 + (r(7) % 4) as u32,
            bytes: r(8) % 2 * 8,
            net: Net { intra: latency_model(cost(20, 20)), inter: latency_model(cost(22, 60)), cores_per_node: 1 + r(11) % 4, hz: HZ },
            seed: 0,
        };
        let got = run(&tracks, HZ, &cfg, &offsets, Instant::now(), &|_| {}).phases;
        assert_eq!(got, run_in_passes(&tracks, &cfg, &offsets), "case {case}: {cfg:?}");
    }
}

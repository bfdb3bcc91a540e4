//! Unit tests of the jitter engine: jitSim's worked examples and analytic checks.

use std::time::Instant;

use super::collective::{latency_model, Collective, Net};
use super::engine::{run, simulate, splitmix, Config, Mode};
use super::*;
use crate::jitter_trace::{JitterHeader, JitterRecord, JitterTrace};

const HZ: f64 = 1e9;

fn header(window: Option<u64>) -> JitterHeader {
    JitterHeader {
        host: "t".into(),
        cpu: 0,
        tsc_hz: HZ,
        tsc_hz_kernel: None,
        tsc_hz_kernel_source: None,
        t_min_cycles: 1,
        threshold_cycles: 9,
        timer_read: "rdtsc".into(),
        start_unix_ns: 0,
        requested_duration_s: 1.0,
        kernel: "test".into(),
        cosched_window_cycles: window,
        cosched_origin_cycles: window.map(|_| 0),
    }
}

fn trace(lead: u64, pairs: &[(u64, u64)], window: Option<u64>) -> JitterTrace {
    let records: Vec<_> = pairs.iter().map(|&(j, g)| JitterRecord { jitter_cycles: j, cycles_to_next: g }).collect();
    let duration_cycles = lead + pairs.iter().map(|(j, g)| j + g).sum::<u64>();
    JitterTrace { header: header(window), lead_cycles: lead, records, duration_cycles, dropped_events: 0 }
}

fn track(lead: u64, pairs: &[(u64, u64)]) -> Track {
    Track::new("t", &trace(lead, pairs, None), HZ, None).unwrap()
}

/// jitSim Fig. 2's trace: ⟨jitter, cycles to next jitter⟩.
const FIG2: [(u64, u64); 10] = [(10, 50), (5, 30), (25, 20), (5, 10), (15, 100), (20, 300), (10, 20), (60, 60), (5, 20), (10, 70)];

fn cfg(tasks: u64, phases: u32, work_cycles: u64, collective: Collective, latency_s: f64) -> Config {
    Config {
        tasks,
        phases,
        work_s: work_cycles as f64 / HZ,
        mode: Mode::Unsync,
        coverage_pct: 100.0,
        collective,
        arity: 2,
        bytes: 0,
        net: Net { intra: latency_model(latency_s), inter: latency_model(latency_s), cores_per_node: 1, hz: HZ },
        seed: 1,
    }
}

#[test]
fn fig2_two_nodes_100_cycles_take_130_and_165() {
    let t = track(0, &FIG2);
    // Node 1 starts after row 1's jitter, node 2 after row 7's (jitSim Fig. 2).
    let node2 = FIG2[..6].iter().map(|(j, g)| j + g).sum::<u64>() + 10;
    assert_eq!(t.stretch(&mut 0, 10, t.period(), 0, 100), 130);
    assert_eq!(t.stretch(&mut 0, node2, t.period(), 0, 100), 165);
    assert_eq!(TraceCursor::new(&t, 10).stretch(0, 100), 130);
    // Fig. 3: the phase completes at the maximum; node 1 waits 35 cycles.
    let r = run(&[t], HZ, &cfg(2, 1, 100, Collective::None, 0.0), &[10, node2], Instant::now(), &|_| {});
    assert_eq!(r.phases[0].consumed_cycles, 165);
    assert!((r.slowdown_pct() - 65.0).abs() < 1e-9);
}

#[test]
fn stretch_waits_out_a_started_event_and_wraps() {
    let t = track(0, &FIG2);
    // Starting 4 cycles into row 1's 10-cycle jitter: wait 6, then as node 1.
    assert_eq!(t.stretch(&mut 0, 4, t.period(), 0, 100), 136);
    // Zero work takes no time, even inside an event.
    assert_eq!(t.stretch(&mut 0, 4, t.period(), 0, 0), 0);
    // Wrapping: the last gap (70) then the trace restarts with row 1's jitter.
    let last_gap_start = t.period() - 70;
    assert_eq!(t.stretch(&mut 0, last_gap_start, t.period(), 0, 100), 70 + 10 + 30);
    // A cursor reused with a stale hint (moving backwards) still answers right.
    let mut c = TraceCursor::new(&t, 0);
    let late = c.stretch(700, 10);
    assert_eq!(c.stretch(10, 100), 130);
    assert_eq!(c.stretch(700, 10), late);
}

#[test]
fn coverage_limits_each_task_to_its_segment() {
    // Jitter of 50 every 100 cycles; a 150-cycle segment starting at a gap
    // holds 100 compute + 50 jitter, then restarts at the gap.
    let t = track(0, &[(50, 100); 20]);
    let seg = 150;
    assert_eq!(t.stretch(&mut 0, 50, seg, 0, 100), 100);
    assert_eq!(t.stretch(&mut 0, 50, seg, 0, 200), 250);
    assert_eq!(t.stretch(&mut 0, 50, seg, 0, 300), 400);
}

#[test]
fn rescales_traces_to_the_reference_frequency() {
    let mut tr = trace(0, &FIG2, None);
    tr.header.tsc_hz = HZ / 2.0;
    let t = Track::new("half", &tr, HZ, None).unwrap();
    assert_eq!(t.period(), 2 * trace(0, &FIG2, None).duration_cycles);
    assert_eq!(t.stretch(&mut 0, 20, t.period(), 0, 200), 260);
}

#[test]
fn fig6_seven_task_binary_barrier() {
    // Noise-free: leaves send at W+L; the root receives at W+5L, W+6L and
    // sends down; the last leaf (task 6) is released at W+12L.
    let quiet = track(1 << 40, &[]);
    let (w, l) = (1000u64, 10u64);
    let c = cfg(7, 1, w, Collective::Barrier, 2.0 * l as f64 / HZ);
    let r = run(std::slice::from_ref(&quiet), HZ, &c, &[0; 7], Instant::now(), &|_| {});
    assert_eq!(r.phases[0].compute_max_cycles, w);
    assert_eq!(r.phases[0].consumed_cycles, w + 12 * l);
    // A 50-cycle event hitting the root's first receive delays everyone's release by 50.
    let t = track(100_000, &[(50, 1 << 30)]);
    let mut offs = [0u64; 7];
    offs[0] = 100_000 - (w + 4 * l);
    let r = run(&[t], HZ, &c, &offs, Instant::now(), &|_| {});
    assert_eq!(r.phases[0].consumed_cycles, w + 12 * l + 50);
    assert_eq!(r.phases[0].compute_max_cycles, w);
}

#[test]
fn cosched_tasks_meet_jitter_together() {
    // Figs. 4–5: windows of 500 cycles whose last 50 are the low-priority
    // window, where all jitter falls. Tasks starting at any window start
    // finish 900 work cycles together, at 950, and stay in step.
    let pairs: Vec<(u64, u64)> = (0..200).map(|_| (50, 450)).collect();
    let tr = trace(450, &pairs[..199], Some(500));
    let t = Track::new("co", &tr, HZ, None).unwrap();
    let mut c = cfg(64, 3, 900, Collective::None, 0.0);
    c.mode = Mode::Cosched;
    let r = simulate(std::slice::from_ref(&t), HZ, &c).unwrap();
    let consumed: Vec<u64> = r.phases.iter().map(|p| p.consumed_cycles).collect();
    assert_eq!(consumed, vec![950, 1000, 1000]);
    c.tasks = 1;
    let one = simulate(&[t], HZ, &c).unwrap();
    assert_eq!(one.slowdown_pct(), r.slowdown_pct());
}

/// A long trace of random events: gaps uniform in [1, 2g], durations from `dur`.
fn random_trace(events: u64, g: u64, seed: u64, dur: impl Fn(u64) -> u64) -> Track {
    let pairs: Vec<(u64, u64)> = (0..events).map(|i| (dur(splitmix(seed, 2 * i)), 1 + splitmix(seed, 2 * i + 1) % (2 * g))).collect();
    track(g, &pairs)
}

#[test]
fn sync_slowdown_is_the_trace_noise_ratio() {
    let t = random_trace(4000, 10_000, 7, |r| 100 + r % 2000);
    let expect = 100.0 * (t.period() - t.compute_per_period()) as f64 / t.compute_per_period() as f64;
    let mut c = cfg(32, 400, t.compute_per_period() / 100, Collective::None, 0.0);
    c.mode = Mode::Sync;
    let r = simulate(&[t], HZ, &c).unwrap();
    assert!((r.slowdown_pct() / expect - 1.0).abs() < 0.01, "{} vs {expect}", r.slowdown_pct());
}

/// Every quantum of `w` compute cycles is followed by an event with duration
/// `dur(random)`, so each phase of `w` cycles meets exactly one.
fn quantum_trace(quanta: u64, w: u64, dur: impl Fn(u64) -> u64) -> Track {
    let mut pairs = Vec::new();
    let mut gap = 0;
    for i in 0..quanta {
        gap += w;
        let d = dur(splitmix(99, i));
        if d > 0 {
            pairs.push((d, 0));
            let n = pairs.len();
            if n > 1 {
                pairs[n - 2].1 = gap;
            } else {
                pairs[0].1 = 0;
            }
            gap = 0;
        }
    }
    let lead = w;
    let n = pairs.len();
    pairs[n - 1].1 = gap + 1;
    track(lead, &pairs)
}

#[test]
fn bernoulli_delay_approaches_d_times_one_minus_q_to_the_n() {
    let (w, d, p) = (1000u64, 200u64, 0.3);
    let t = quantum_trace(400_000, w, |r| if (r % 1_000_000) as f64 / 1e6 < p { d } else { 0 });
    for n in [1u64, 2, 4, 16] {
        let r = simulate(std::slice::from_ref(&t), HZ, &cfg(n, 20_000, w, Collective::None, 0.0)).unwrap();
        let delay = r.slowdown_pct() / 100.0 * w as f64;
        let expect = d as f64 * (1.0 - (1.0 - p).powi(n as i32));
        assert!((delay / expect - 1.0).abs() < 0.03, "n={n}: {delay} vs {expect}");
    }
}

#[test]
fn exponential_delay_grows_like_the_harmonic_number() {
    let (w, mean) = (1000u64, 10_000.0);
    let t = quantum_trace(200_000, w, |r| 1 + (-(((r >> 11) as f64 + 0.5) / (1u64 << 53) as f64).ln() * mean).round() as u64);
    for n in [1u64, 8, 64] {
        let r = simulate(std::slice::from_ref(&t), HZ, &cfg(n, 4000, w, Collective::None, 0.0)).unwrap();
        let delay = r.slowdown_pct() / 100.0 * w as f64;
        let h: f64 = (1..=n).map(|k| 1.0 / k as f64).sum();
        assert!((delay / (mean * h) - 1.0).abs() < 0.05, "n={n}: {delay} vs {}", mean * h);
    }
}

#[test]
fn deterministic_for_a_seed_and_collectives_cost_time() {
    let t = random_trace(2000, 50_000, 3, |r| 500 + r % 20_000);
    for coll in [Collective::Barrier, Collective::Allreduce, Collective::ReduceBcast, Collective::Bcast, Collective::Gather] {
        let mut c = cfg(37, 20, 200_000, coll, 2e-6);
        c.arity = 3;
        let a = simulate(std::slice::from_ref(&t), HZ, &c).unwrap();
        let b = simulate(std::slice::from_ref(&t), HZ, &c).unwrap();
        assert_eq!(a.phases, b.phases, "{coll:?}");
        // bcast and gather do not synchronize all tasks, so tasks drift and
        // the split can go either way; barrier and allreduce always cost.
        if matches!(coll, Collective::Barrier | Collective::Allreduce | Collective::ReduceBcast) {
            assert!(a.comm_slowdown_pct() > 0.0, "{coll:?}");
        }
        assert!(a.slowdown_pct() > 0.0, "{coll:?}");
        c.seed = 2;
        assert_ne!(simulate(std::slice::from_ref(&t), HZ, &c).unwrap().phases, a.phases);
    }
}

#[test]
fn allreduce_recursive_doubling_rounds() {
    // Noise-free, L = send + recv: 8 tasks take 3 rounds; 6 tasks fold 2 in and out (+2 rounds).
    let quiet = track(1 << 40, &[]);
    for (n, rounds) in [(8u64, 3u64), (6, 4), (1, 0)] {
        let c = cfg(n, 1, 1000, Collective::Allreduce, 20.0 / HZ);
        let r = run(std::slice::from_ref(&quiet), HZ, &c, &vec![0; n as usize], Instant::now(), &|_| {});
        assert_eq!(r.phases[0].consumed_cycles, 1000 + 20 * rounds, "n={n}");
    }
}

#[test]
fn bad_parameters_name_the_flag() {
    let t = track(0, &FIG2);
    let check = |c: Config, flag: &str| {
        let e = simulate(std::slice::from_ref(&t), HZ, &c).unwrap_err().to_string();
        assert!(e.starts_with(flag), "{e}");
    };
    check(Config { tasks: 0, ..cfg(1, 1, 100, Collective::None, 0.0) }, "--tasks");
    check(Config { phases: 0, ..cfg(1, 1, 100, Collective::None, 0.0) }, "--phases");
    check(Config { work_s: -1.0, ..cfg(1, 1, 100, Collective::None, 0.0) }, "--work");
    check(Config { arity: 1, ..cfg(1, 1, 100, Collective::None, 0.0) }, "--arity");
    check(Config { mode: Mode::Cosched, ..cfg(1, 1, 100, Collective::None, 0.0) }, "--mode");
    check(Config { coverage_pct: 0.0, ..cfg(1, 1, 100, Collective::None, 0.0) }, "--coverage");
    let e = Track::new("x.jitter", &trace(0, &[(10, 0)], None), HZ, None).unwrap_err().to_string();
    assert!(e.starts_with("x.jitter:"), "{e}");
}

#[test]
fn replay_cursors_from_start_offsets() {
    // Per-rank cursors placed as the engine places tasks: sync ranks share an
    // offset and stretch identically; the stretch is work-conserving.
    let tracks = [random_trace(500, 10_000, 5, |r| 100 + r % 5000)];
    let offs = start_offsets(&tracks, Mode::Sync, 4, 9);
    assert!(offs.windows(2).all(|w| w[0] == w[1]));
    let mut a = TraceCursor::new(&tracks[0], offs[0]);
    let mut b = TraceCursor::new(&tracks[0], offs[3]);
    let (mut t, mut jitter) = (0u64, 0u64);
    for block in [5_000u64, 120_000, 7, 40_000] {
        let c = a.stretch(t, block);
        assert_eq!(c, b.stretch(t, block));
        assert!(c >= block);
        jitter += c - block;
        t += c + 1_000; // then 1000 cycles of communication
    }
    assert!(jitter > 0);
    let mut cursors = rank_cursors(&tracks, Mode::Sync, 4, 9);
    assert_eq!(cursors[2].stretch(0, 5_000), TraceCursor::new(&tracks[0], offs[0]).stretch(0, 5_000));
    let u = start_offsets(&tracks, Mode::Unsync, 3, 9);
    assert!(u.iter().all(|&o| o < tracks[0].period()) && u[0] != u[1]);
}

#[test]
fn phase_sweep_equals_brute_force() {
    let t = random_trace(3000, 20_000, 11, |r| if r % 50 == 0 { 200_000 } else { 100 + r % 3000 });
    let tracks = std::slice::from_ref(&t);
    for (n, work) in [(5000u64, 30_000u64), (40_000, 3_000), (700, 400_000), (3, 1000)] {
        let c = cfg(n, 12, work, Collective::None, 0.0);
        let fast = simulate(tracks, HZ, &c).unwrap();
        let offs = start_offsets(tracks, Mode::Unsync, n as usize, c.seed);
        let mut now = 0;
        for p in &fast.phases {
            let end = offs.iter().map(|&o| t.stretch(&mut 0, o, t.period(), now, work)).max().unwrap();
            assert_eq!(end - now, p.consumed_cycles, "n={n}");
            now = end;
        }
    }
}

#[test]
fn replay_receive_overheads_meet_the_jitter() {
    // An eager receive's CPU overhead o_r (8 ms, from the
    // receive's post) meets the receiver's jitter, here one 0.5 ms event at
    // 3 ms (1 GHz trace read from offset 0 by every rank). Transfer 1 ms.
    use crate::action::Action;
    use crate::network::{P2pModel, Piecewise, Segment};
    use crate::platform::{Host, Platform};
    use crate::replay::{ActionStream, Replay, Stretch};
    let t = track(3_000_000, &[(500_000, 100_000_000)]);
    let pw =
        |intercept_s: f64| Piecewise { segments: vec![Segment { max_bytes: None, intercept_s, bandwidth_bytes_per_s: f64::INFINITY }] };
    let model = P2pModel { eager_threshold_bytes: 1024, transfer: pw(1e-3), send_overhead: pw(0.0), recv_overhead: pw(8e-3), rma: None };
    let platform = Platform::new("t", vec![Host::new("n0", 2)], model);
    let compute = |seconds| Action::Compute { seconds, region: 0 };
    let sender = vec![compute(5e-3), Action::Send { dst: 1, tag: 0, bytes: 8, comm: 0 }];
    let run = |receiver: Vec<Action>, jitter: bool| {
        let streams: Vec<ActionStream<'_, std::convert::Infallible>> =
            [sender.clone(), receiver].into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'_, _>).collect();
        let mut cursors = [TraceCursor::new(&t, 0), TraceCursor::new(&t, 0)];
        let stretch: Stretch<'_> =
            Box::new(move |r, start_s, d| cursors[r].stretch((start_s * HZ).round() as u64, (d * HZ).round() as u64) as f64 / HZ);
        let replay = if jitter { Replay::new(&platform).jitter(stretch) } else { Replay::new(&platform) };
        let report = replay.run(streams).unwrap();
        report.ranks[1].end_s
    };
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    // Blocking receive posted at 1 ms: o_r spans [1, 9] ms and meets the
    // event, 9.5 ms; the sender's own compute meets it too (arrival 6.5 ms).
    let blocking = vec![compute(1e-3), Action::Recv { src: 0, tag: 0, bytes: 8, comm: 0 }];
    close(run(blocking.clone(), false), 9e-3);
    close(run(blocking, true), 9.5e-3);
    // Irecv posted at 0, then compute past the event (the cursor moves to
    // 4.5 ms) before the message is matched: o_r is stretched from its own
    // start, 0, out of order, and meets the event once: 8.5 ms.
    let irecv = vec![Action::Irecv { src: 0, tag: 0, bytes: 8, comm: 0, req: 7 }, compute(2e-3), compute(2e-3), Action::Wait { req: 7 }];
    close(run(irecv.clone(), false), 8e-3);
    close(run(irecv, true), 8.5e-3);
}

#[test]
fn work_longer_than_the_trace_a_task_reads_is_refused() {
    // A 10 000-cycle trace: 1000 quiet cycles, then a 100-cycle burst every 1000.
    let t = track(1_000, &[(100, 900); 9]);
    let mut c = cfg(2, 1, 20_000, Collective::Barrier, 0.0);
    let e = simulate(std::slice::from_ref(&t), HZ, &c).unwrap_err().to_string();
    assert!(e.starts_with("--work: ") && e.contains("longer than the"), "{e}");
    c.work_s = 5_000.0 / HZ;
    assert!(simulate(&[t], HZ, &c).is_ok());
}

//! Worked examples with hand-computed answers. Unless a test says
//! otherwise: one host, eager below 1024 bytes, transfer = L = 1 ms for
//! any size, zero overheads.

use std::convert::Infallible;

use super::*;
use crate::action::ComputeTime;
use crate::collectives::CollAlgs;
use crate::network::{P2pModel, Piecewise, Segment};
use crate::platform::Host;

const L: f64 = 1e-3;

fn pw(intercept_s: f64, bandwidth_bytes_per_s: f64) -> Piecewise {
    Piecewise { segments: vec![Segment { max_bytes: None, intercept_s, bandwidth_bytes_per_s }] }
}

fn model(latency: f64, bw: f64, os: f64, or: f64) -> P2pModel {
    P2pModel {
        eager_threshold_bytes: 1024,
        transfer: pw(latency, bw),
        send_overhead: pw(os, f64::INFINITY),
        recv_overhead: pw(or, f64::INFINITY),
        rma: None,
    }
}

fn platform(m: P2pModel) -> Platform {
    Platform::new("test", vec![Host::new("node0", 64)], m)
}

fn simple() -> Platform {
    platform(model(L, f64::INFINITY, 0.0, 0.0))
}

fn run(p: &Platform, ranks: Vec<Vec<Action>>) -> Result<ReplayReport, ReplayError> {
    let streams: Vec<ActionStream<'static, Infallible>> =
        ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    replay(p, streams)
}

#[track_caller]
fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-12 * b.abs().max(1e-3), "{a} != {b}");
}

/// `compute_s + comm_s + wait_s = end_s` on every rank.
#[track_caller]
fn balanced(r: &ReplayReport) {
    for k in &r.ranks {
        close(k.compute_s + k.comm_s + k.wait_s, k.end_s);
        assert!(k.comm_s >= 0.0 && k.wait_s >= -1e-15, "{k:?}");
    }
}

fn compute(seconds: f64) -> Action {
    Action::Compute { seconds, region: 0 }
}
fn send(dst: u32, bytes: u64) -> Action {
    Action::Send { dst, tag: 0, bytes, comm: 0 }
}
fn recv(src: i32) -> Action {
    Action::Recv { src, tag: -1, bytes: 0, comm: 0 }
}

#[test]
fn eager_ping_pong_makespan_is_two_transfers() {
    let r = run(&simple(), vec![vec![Action::Init, send(1, 8), recv(1), Action::Finalize], vec![recv(0), send(0, 8)]]).unwrap();
    close(r.makespan_s, 2.0 * L);
    let (r0, r1) = (&r.ranks[0], &r.ranks[1]);
    close(r0.comm_s, L); // its own receive's transfer
    close(r0.wait_s, L); // rank 1 only sends after its own receive
    close(r1.end_s, L);
    assert_eq!((r0.messages, r0.bytes_sent, r0.actions, r1.actions), (1, 8, 4, 2));
    assert_eq!(r.actions, 6);
    balanced(&r);

    // With overheads o_s = 0.1 ms, o_r = 0.2 ms: rank 0 is busy o_s, its
    // receive is posted at o_s and completes at 2L; rank 1 ends at L + o_s.
    let (os, or) = (1e-4, 2e-4);
    let r = run(&platform(model(L, f64::INFINITY, os, or)), vec![vec![send(1, 8), recv(1)], vec![recv(0), send(0, 8)]]).unwrap();
    close(r.makespan_s, 2.0 * L);
    close(r.ranks[1].end_s, L + os);
    close(r.ranks[0].comm_s, os + L);
    close(r.ranks[0].wait_s, L - os);
    balanced(&r);
}

#[test]
fn rendezvous_send_waits_for_a_late_receiver() {
    // 1 MB at 1 GB/s after 1 ms latency: T = 2 ms. Receiver posts at 5 ms.
    let p = platform(model(L, 1e9, 0.0, 0.0));
    let big = 1_000_000;
    let late = vec![compute(5e-3), recv(0)];
    let r = run(&p, vec![vec![send(1, big)], late.clone()]).unwrap();
    close(r.makespan_s, 7e-3);
    close(r.ranks[0].end_s, 7e-3);
    close(r.ranks[0].comm_s, 2e-3);
    close(r.ranks[0].wait_s, 5e-3);
    close(r.ranks[1].compute_s, 5e-3);
    close(r.ranks[1].comm_s, 2e-3);
    balanced(&r);

    // Isend returns at once: 1 ms of compute overlaps the wait for the receiver.
    let isend = Action::Isend { dst: 1, tag: 0, bytes: big, comm: 0, req: 7 };
    let r = run(&p, vec![vec![isend, compute(1e-3), Action::Wait { req: 7 }], late]).unwrap();
    close(r.ranks[0].end_s, 7e-3);
    close(r.ranks[0].comm_s, 2e-3);
    close(r.ranks[0].wait_s, 4e-3);
    balanced(&r);
}

#[test]
fn waitall_over_two_irecvs_ends_at_the_later_message() {
    let irecv = |src, req| Action::Irecv { src, tag: 0, bytes: 8, comm: 0, req };
    let rank0 = vec![irecv(1, 1), irecv(2, 2), Action::Waitall { reqs: vec![1, 0, 99, 2] }];
    let r = run(&simple(), vec![rank0, vec![compute(1e-3), send(0, 8)], vec![compute(3e-3), send(0, 8)]]).unwrap();
    close(r.ranks[0].end_s, 3e-3 + L);
    close(r.ranks[0].comm_s, L);
    close(r.ranks[0].wait_s, 3e-3);
    balanced(&r);
}

#[test]
fn allreduce_by_recursive_doubling() {
    // 4 ranks: 2 rounds of one transfer each.
    let all = vec![Action::Allreduce { bytes: 8, comm: 0 }];
    let r = run(&simple(), vec![all.clone(); 4]).unwrap();
    close(r.makespan_s, 2.0 * L);
    for k in &r.ranks {
        close(k.end_s, 2.0 * L);
        close(k.comm_s, 2.0 * L);
        assert_eq!((k.messages, k.bytes_sent), (2, 16));
    }
    balanced(&r);

    // 3 ranks (fold): 0 → 1 arrives at L; rank 2's half of the 1 ↔ 2
    // exchange left at 0, so rank 1 is done at L and sends back to 0
    // (arrives 2L); rank 1's half reaches rank 2 at 2L.
    let r = run(&simple(), vec![all; 3]).unwrap();
    let ends: Vec<f64> = r.ranks.iter().map(|k| k.end_s).collect();
    for (e, want) in ends.iter().zip([2.0 * L, L, 2.0 * L]) {
        close(*e, want);
    }
    balanced(&r);
}

#[test]
fn barrier_with_one_late_rank() {
    // Dissemination on 4 ranks, rank 3 arrives at D: rank 3 has heard from
    // everyone at once, ranks 0, 1 one transfer later, rank 2 two later.
    let d = 10.0 * L;
    let b = Action::Barrier { comm: 0 };
    let r = run(&simple(), vec![vec![b.clone()], vec![b.clone()], vec![b.clone()], vec![compute(d), b]]).unwrap();
    let ends: Vec<f64> = r.ranks.iter().map(|k| k.end_s).collect();
    for (e, want) in ends.iter().zip([d + L, d + L, d + 2.0 * L, d]) {
        close(*e, want);
    }
    close(r.ranks[2].wait_s, d);
    close(r.ranks[2].comm_s, 2.0 * L);
    assert!(r.ranks.iter().all(|k| k.bytes_sent == 0 && k.messages == 2));
    balanced(&r);
}

#[test]
fn bcast_and_reduce_follow_the_binomial_tree() {
    // 4 ranks, root 0: bcast 0 → 2, 0 → 1, 2 → 3 (sequential sends are
    // free with zero overhead), so rank 3 ends at 2L.
    let bc = Action::Bcast { root: 0, bytes: 8, comm: 0 };
    let r = run(&simple(), vec![vec![bc.clone()]; 4]).unwrap();
    let ends: Vec<f64> = r.ranks.iter().map(|k| k.end_s).collect();
    for (e, want) in ends.iter().zip([0.0, L, L, 2.0 * L]) {
        close(*e, want);
    }
    // Reduce to root 1 (virtual rank = rank − 1 mod 4): leaves 0 and 2
    // finish at once; 0 → 3 → 1 reaches the root at 2L.
    let red = Action::Reduce { root: 1, bytes: 8, comm: 0 };
    let r = run(&simple(), vec![vec![red.clone()]; 4]).unwrap();
    close(r.makespan_s, 2.0 * L);
    close(r.ranks[1].end_s, 2.0 * L);
    balanced(&r);
}

#[test]
fn deadlock_is_an_error_naming_the_blocked_ranks() {
    let e = run(&simple(), vec![vec![recv(1)], vec![recv(0)]]).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e.kind, ReplayErrorKind::Deadlock { blocked: 2, ranks: 2, .. }), "{msg}");
    assert!(msg.contains("rank 0 at t=0.000000000 s in MPI_Recv(src=1, tag=-1, comm=0) waits for recv from 1"), "{msg}");
    assert!(msg.contains("rank 1 "), "{msg}");
    assert_eq!(msg.lines().count(), 1);

    // Two blocking rendezvous sends facing each other.
    let big = 1 << 20;
    let e = run(&simple(), vec![vec![send(1, big), recv(1)], vec![send(0, big), recv(0)]]).unwrap_err();
    assert!(e.to_string().contains("rendezvous send of 1048576 B to 1 tag 0 on comm 0"), "{e}");
}

#[test]
fn any_source_matches_the_earlier_sender_in_simulated_time() {
    // Rank 2 sends at L, rank 1 at 2L. The first receive must take rank 2's
    // message (done at 2L); after 10L of compute the second finds rank 1's
    // waiting: end 12L. Taking rank 1's first would end at 13L.
    let any = Action::Recv { src: -1, tag: -1, bytes: 8, comm: 0 };
    let rank0 = vec![any.clone(), compute(10.0 * L), any];
    let r = run(&simple(), vec![rank0, vec![compute(2.0 * L), send(0, 8)], vec![compute(L), send(0, 8)]]).unwrap();
    close(r.ranks[0].end_s, 12.0 * L);
    balanced(&r);
}

#[test]
fn collective_traffic_never_matches_user_receives() {
    // Rank 1's wildcard receive is posted before the barrier; the barrier's
    // message from rank 0 must not satisfy it. Rank 0 sends at L + 5L.
    let wild = Action::Irecv { src: -1, tag: -1, bytes: 8, comm: 0, req: 5 };
    let b = Action::Barrier { comm: 0 };
    let r = run(&simple(), vec![vec![b.clone(), compute(5.0 * L), send(1, 8)], vec![wild, b, Action::Wait { req: 5 }]]).unwrap();
    close(r.ranks[1].end_s, 7.0 * L);
    balanced(&r);
}

#[test]
fn sendrecv_ring_and_proc_null() {
    let n = 4u32;
    let ranks = (0..n)
        .map(|r| {
            let (dst, src) = ((r + 1) % n, ((r + n - 1) % n) as i32);
            let sr = Action::Sendrecv { dst, send_tag: 0, send_bytes: 8, src, recv_tag: 0, recv_bytes: 8, comm: 0 };
            vec![compute(r as f64 * L), sr]
        })
        .collect();
    let r = run(&simple(), ranks).unwrap();
    // Rank r needs rank r−1's message, sent at (r−1)L; rank 0 needs rank 3's.
    let ends: Vec<f64> = r.ranks.iter().map(|k| k.end_s).collect();
    for (e, want) in ends.iter().zip([4.0 * L, L, 2.0 * L, 3.0 * L]) {
        close(*e, want);
    }
    balanced(&r);
    let null = Action::Sendrecv { dst: (-2i32) as u32, send_tag: 0, send_bytes: 8, src: -2, recv_tag: 0, recv_bytes: 8, comm: 0 };
    let r = run(&simple(), vec![vec![null]]).unwrap();
    assert_eq!((r.makespan_s, r.ranks[0].messages), (0.0, 0));
}

#[test]
fn host_speed_and_inter_node_model_apply() {
    let mut p = simple();
    p.hosts = vec![Host { speed_ratio: 2.0, ..Host::new("a", 1) }, Host::new("b", 1)];
    p.network.inter = Some(model(3.0 * L, f64::INFINITY, 0.0, 0.0));
    let r = run(&p, vec![vec![compute(4.0 * L), send(1, 8)], vec![recv(0)]]).unwrap();
    close(r.ranks[0].compute_s, 2.0 * L);
    close(r.makespan_s, 5.0 * L);
    assert_eq!((r.ranks[0].host.as_str(), r.ranks[1].host.as_str()), ("a", "b"));
}

#[test]
fn unsupported_and_invalid_actions_name_rank_and_action() {
    let bc = Action::Bcast { root: 0, bytes: 8, comm: 5 };
    let e = run(&simple(), vec![vec![], vec![bc]]).unwrap_err().to_string();
    assert_eq!(e, "rank 1: Bcast { root: 0, bytes: 8, comm: 5 }: communicator 5 of rank 1 was never created in its trace");
    let e = run(&simple(), vec![vec![send(3, 8)]]).unwrap_err().to_string();
    assert!(e.starts_with("rank 0: Send { dst: 3") && e.contains("not among the 1 ranks"), "{e}");
    let e = run(&simple(), vec![vec![compute(-1.0)]]).unwrap_err().to_string();
    assert!(e.contains("finite and >= 0"), "{e}");
    let mut p = simple();
    p.mapping = Mapping::Explicit { hosts: vec![0] };
    let e = run(&p, vec![vec![], vec![]]).unwrap_err().to_string();
    assert!(e.starts_with("platform: mapping.hosts places 1 ranks"), "{e}");
}

#[test]
fn stream_errors_carry_the_rank() {
    #[derive(Debug, thiserror::Error)]
    #[error("trace.bin: boom")]
    struct Boom;
    let ok: ActionStream<'static, Boom> = Box::new(std::iter::empty());
    let bad: ActionStream<'static, Boom> = Box::new([Ok(compute(1.0)), Err(Boom)].into_iter());
    let e = replay(&simple(), vec![ok, bad]).unwrap_err();
    assert_eq!(e.to_string(), "rank 1: trace.bin: boom");
}

#[test]
fn mixed_workload_is_balanced_and_deterministic() {
    // Ring exchanges alternating eager / rendezvous sizes, then every
    // collective, on a non-power-of-two and a power-of-two size, on two
    // hosts with overheads everywhere.
    let mut p = platform(model(L, 1e9, 1e-5, 2e-5));
    p.hosts = vec![Host::new("a", 3), Host { speed_ratio: 1.5, ..Host::new("b", 3) }];
    p.network.inter = Some(model(2.0 * L, 5e8, 3e-5, 1e-5));
    for n in [5u32, 8] {
        let ranks: Vec<Vec<Action>> = (0..n)
            .map(|r| {
                let mut v = vec![Action::Init];
                for i in 0..50u32 {
                    let bytes = if i % 2 == 0 { 64 } else { 100_000 };
                    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
                    v.push(compute(((r * 7 + i * 3) % 11) as f64 * 1e-4));
                    v.push(Action::Irecv { src: left as i32, tag: i as i32, bytes, comm: 0, req: 10 });
                    v.push(Action::Isend { dst: right, tag: i as i32, bytes, comm: 0, req: 11 });
                    v.push(Action::Waitall { reqs: vec![10, 11] });
                    v.push(Action::Allreduce { bytes: 8 << (i % 12), comm: 0 });
                    v.push(Action::Bcast { root: i % n, bytes: 1 << (i % 20), comm: 0 });
                    v.push(Action::Reduce { root: (i + 1) % n, bytes: 4096, comm: 0 });
                    v.push(Action::Barrier { comm: 0 });
                }
                v.push(Action::Finalize);
                v
            })
            .collect();
        let a = run(&p, ranks.clone()).unwrap();
        let b = run(&p, ranks).unwrap();
        balanced(&a);
        assert_eq!((a.makespan_s, a.events, &a.ranks), (b.makespan_s, b.events, &b.ranks), "n = {n}");
        assert!(a.makespan_s > 0.0 && a.ranks.iter().all(|k| k.wait_s > 0.0), "n = {n}: {a:?}");
    }
}

/// Replay speed on a 2-rank, 1e6-action stream (eager ping: compute +
/// send / compute + recv). Run with
/// `cargo test -p simulator --release -- --ignored --nocapture replay_speed`.
#[test]
#[ignore = "benchmark"]
fn replay_speed() {
    let n = 250_000;
    let s0 = (0..n).flat_map(|_| [compute(1e-6), send(1, 8)]).map(Ok);
    let s1 = (0..n).flat_map(|_| [compute(2e-6), recv(0)]).map(Ok);
    let streams: Vec<ActionStream<'static, Infallible>> = vec![Box::new(s0), Box::new(s1)];
    let r = replay(&simple(), streams).unwrap();
    assert_eq!(r.actions, 1_000_000);
    println!(
        "replay_speed: {} actions, {} events in {:.3} s = {:.3e} actions/s (makespan {:.6} s)",
        r.actions,
        r.events,
        r.wall_clock_s,
        r.actions_per_s(),
        r.makespan_s
    );
}

/// Replay speed from interposer trace files: 2 ranks × 250 000 records
/// (500 000 records = 1e6 actions), decoded through [`TraceActions`]. Run
/// with `cargo test -p simulator --release -- --ignored --nocapture replay_speed`.
#[test]
#[ignore = "benchmark"]
fn replay_speed_from_trace_files() {
    use crate::trace::{rank_file_name, CallRecord, Op, Params, RankHeader, RankWriter, TimingSource, TraceMeta};
    let dir = tempfile::tempdir().unwrap();
    let n = 250_000u64;
    let meta = TraceMeta {
        format_version: 1,
        ranks: 2,
        mpi_library: "synthetic".into(),
        timing_source: TimingSource::ClockGettime,
        tsc_hz: None,
        command: vec![],
        mode: "trace".into(),
    };
    std::fs::write(dir.path().join(crate::trace::META_FILE), serde_json::to_string(&meta).unwrap()).unwrap();
    for r in 0..2u32 {
        let header = RankHeader {
            rank: r,
            ranks: 2,
            host: "h".into(),
            pid: 1,
            timing_source: TimingSource::ClockGettime,
            tsc_hz: None,
            epoch_unix_s: 0.0,
        };
        let f = std::io::BufWriter::new(std::fs::File::create(dir.path().join(rank_file_name(r))).unwrap());
        let mut w = RankWriter::create(f, &header).unwrap();
        let op = if r == 0 { Op::Send } else { Op::Recv };
        for i in 0..n {
            let params = Params::P2p { peer: 1 - r as i32, tag: 0, bytes: 8, comm: 0, request: 0 };
            let caller = 0x1000 + (i % 4) * 0x10;
            w.push(&CallRecord {
                op,
                failed: false,
                caller,
                compute_cpu_ns: 1000,
                compute_wall_ns: 1000,
                counters: None,
                t_start_ns: 0,
                t_end_ns: 0,
                params,
            })
            .unwrap();
        }
        w.finish(&[]).unwrap();
    }
    let t0 = std::time::Instant::now();
    let streams = open_trace_dir(dir.path(), ComputeTime::Cpu).unwrap();
    let r = replay(&simple(), streams).unwrap();
    let total = t0.elapsed().as_secs_f64();
    assert_eq!(r.actions, 4 * n);
    println!(
        "replay_speed_from_trace_files: {} actions in {:.3} s (open + replay) = {:.3e} actions/s",
        r.actions,
        total,
        r.actions as f64 / total
    );
}

#[test]
fn speed_ratios_scale_compute_by_region_and_count_misses() {
    let mut ratios = crate::speed::SpeedRatios::new();
    ratios.insert("a.c:1:a.c:2", 0.5).unwrap();
    let known = crate::trace::region_key_id("a.c:1:a.c:2");
    let streams: Vec<ActionStream<'static, Infallible>> = vec![Box::new(
        vec![Action::Compute { seconds: 2.0, region: known }, Action::Compute { seconds: 1.0, region: 7 }, compute(1.0)]
            .into_iter()
            .map(Ok),
    )];
    let (streams, tally) = apply_speed_ratios(streams, ratios);
    let r = replay(&simple(), streams).unwrap();
    close(r.makespan_s, 2.0 * 0.5 + 1.0 + 1.0);
    assert_eq!(tally.stats(), RatioStats { blocks: 3, missing_blocks: 2, missing_regions: 2 });
}

#[test]
fn ti_flops_need_a_host_speed_and_take_flops_over_speed() {
    let p = simple();
    let e = run(&p, vec![vec![Action::Flops { flops: 1e9 }]]).unwrap_err().to_string();
    assert!(e.contains("host node0 has no speed_flops"), "{e}");
    let mut x = p.clone();
    x.hosts[0].speed_flops = Some(2e9);
    let s: Vec<ActionStream<'static, Infallible>> = vec![Box::new([Ok(Action::Flops { flops: 1e9 })].into_iter())];
    close(replay(&x, s).unwrap().makespan_s, 0.5);
}

#[test]
fn new_collectives_complete_with_expected_rounds() {
    // 4 ranks on one host, transfer = 1 ms whatever the size: a pairwise
    // all-to-all is 3 rounds, a ring all-gather 3; with SimGrid's default
    // selector every send of an all-gather or an all-to-all-v is posted
    // at once (1 round), a gather is linear (1), a scan a chain (3).
    let n = 4;
    let all = |a: Action| (0..n).map(|_| vec![a.clone()]).collect::<Vec<_>>();
    let with = |overrides: &[(&str, &str)]| {
        let mut p = simple();
        p.collectives.algs = CollAlgs::smpi();
        for (c, a) in overrides {
            p.collectives.algs.set(c, a).unwrap();
        }
        p
    };
    let go_on = |p: &Platform, ranks: Vec<Vec<Action>>| {
        let streams = ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, Infallible>);
        replay(p, streams.collect())
    };
    let rounds = with(&[("alltoall", "pair"), ("allgatherv", "ring")]);
    close(go_on(&rounds, all(Action::Alltoall { bytes: 8, comm: 0 })).unwrap().makespan_s, 3.0 * L);
    close(go_on(&rounds, all(Action::Allgatherv { recv_bytes: vec![8; 4], comm: 0 })).unwrap().makespan_s, 3.0 * L);
    let smpi = with(&[]);
    let go = |ranks: Vec<Vec<Action>>| go_on(&smpi, ranks);
    close(go(all(Action::Allgatherv { recv_bytes: vec![8; 4], comm: 0 })).unwrap().makespan_s, L);
    close(go(all(Action::Alltoallv { send_bytes: vec![8; 4], comm: 0 })).unwrap().makespan_s, L);
    close(go(all(Action::Gather { root: 2, bytes: 8, comm: 0 })).unwrap().makespan_s, L);
    close(go(all(Action::Scan { bytes: 8, exclusive: false, comm: 0 })).unwrap().makespan_s, 3.0 * L);
    let e = go(all(Action::Alltoallv { send_bytes: vec![8; 3], comm: 0 })).unwrap_err().to_string();
    assert!(e.contains("needs one size per rank (4), got 3"), "{e}");
}

/// A neighbourhood collective is one round: on a 4-rank ring every rank
/// sends to both neighbours and receives from both, all posted together,
/// so 1 ms whatever the sizes; a neighbour outside the communicator is a
/// one-line error naming it, and the nonblocking form overlaps compute.
#[test]
fn neighbour_collectives_are_one_round_with_the_listed_peers() {
    let n = 4u32;
    let ring = |r: u32, req: u64| {
        let (l, rt) = ((r + n - 1) % n, (r + 1) % n);
        let nb = Action::Neighbor { sends: vec![(l, 8), (rt, 8 * (r as u64 + 1))], srcs: vec![l, rt], comm: 0 };
        match req {
            0 => vec![nb],
            req => vec![Action::Icoll { req, coll: Box::new(nb) }, Action::Compute { seconds: 2.0 * L, region: 0 }, Action::Wait { req }],
        }
    };
    let r = run(&simple(), (0..n).map(|r| ring(r, 0)).collect()).unwrap();
    close(r.makespan_s, L);
    assert!(r.ranks.iter().all(|k| k.messages == 2), "{r:?}");
    close(run(&simple(), (0..n).map(|r| ring(r, 7)).collect()).unwrap().makespan_s, 2.0 * L);
    let bad = Action::Neighbor { sends: vec![(9, 8)], srcs: vec![], comm: 0 };
    let e = run(&simple(), vec![vec![bad]; 4]).unwrap_err().to_string();
    assert!(e.contains("neighbour 9 is not among the 4 ranks of communicator 0"), "{e}");
}

/// Energy: two hosts, a known load profile and known
/// pstates, joules by hand to 1e-9 relative.
#[test]
fn energy_of_two_hosts_matches_the_hand_computed_joules() {
    use crate::energy::{PowerRange, Pstate};
    let mut p = simple();
    p.hosts = vec![Host::new("a", 2), Host::new("b", 1)];
    p.mapping = Mapping::Explicit { hosts: vec![0, 0, 1] };
    let ps = |speed_flops: f64, w: &str| Pstate { speed_flops, watts: Some(PowerRange::parse(w).unwrap()) };
    p.hosts[0].pstates = vec![ps(2e9, "100:120:200"), ps(1e9, "90:100:140")];
    p.hosts[1].pstates = vec![ps(1e9, "50:60:80")];
    p.set_pstate("a=1").unwrap();
    let ranks = vec![
        // Host a, pstate 1 (1 Gflop/s): 2 Gflop = 2 s.
        vec![Action::Flops { flops: 2e9 }, Action::Finalize],
        // 0.5 s recorded at pstate 0 (2 Gflop/s) = 1 s at pstate 1; then
        // waits (idle) for rank 2's message sent at 3 s, arriving at 3 s + L.
        vec![compute(0.5), Action::Recv { src: 2, tag: 0, bytes: 8, comm: 0 }, Action::Finalize],
        // Host b, one pstate: 1 Gflop = 1 s, then 2 s recorded, then the send.
        vec![Action::Flops { flops: 1e9 }, compute(2.0), Action::Send { dst: 1, tag: 0, bytes: 8, comm: 0 }],
    ];
    let streams: Vec<ActionStream<'static, Infallible>> =
        ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    let r = replay(&p, streams).unwrap();
    let end = 3.0 + L;
    close(r.makespan_s, end);
    // Host a (2 cores, 90:100:140 W): 0–1 s two busy 140 W, 1–2 s one busy
    // 100 + ½·40 = 120 W, then idle 90 W to the end.
    let a = 140.0 + 120.0 + 90.0 * (end - 2.0);
    // Host b (1 core, 50:60:80 W): busy 0–3 s at 80 W, then idle 50 W.
    let b = 80.0 * 3.0 + 50.0 * (end - 3.0);
    let rel = |x: f64, y: f64| assert!((x - y).abs() <= 1e-9 * y, "{x} J != {y} J");
    rel(r.hosts[0].energy_j.unwrap(), a);
    rel(r.hosts[1].energy_j.unwrap(), b);
    rel(r.energy_j.unwrap(), a + b);
    assert_eq!((r.hosts[0].pstate, r.hosts[0].speed_flops, r.hosts[1].pstate), (1, 1e9, 0));
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"energy_j\":") && json.contains("\"hosts\":[{\"name\":\"a\",\"pstate\":1"), "{json}");
    assert!(p.set_pstate("a=2").unwrap_err().0.contains("host a has 2 pstates"));
    assert!(p.set_pstate("zz=0").unwrap_err().0.contains("no host named zz"));
}

#[test]
fn sub_communicator_collectives_run_among_their_members() {
    // 4 ranks, transfer 1 ms. Ranks {0, 1} and {2, 3} each split off a pair
    // and give it the same local id 1 (ids are per rank). A recursive
    // doubling all-reduce on a pair is one exchange; on WORLD it is two.
    let split = |r: u32| Action::CommCreate { comm: 1, members: if r < 2 { vec![0, 1] } else { vec![2, 3] } };
    let on = |comm| (0..4).map(|r| vec![split(r), Action::Allreduce { bytes: 8, comm }]).collect::<Vec<_>>();
    let sub = run(&simple(), on(1)).unwrap();
    let world = run(&simple(), on(0)).unwrap();
    close(sub.makespan_s, L);
    close(world.makespan_s, 2.0 * L);
    assert!(sub.ranks.iter().all(|k| k.messages == 1) && world.ranks.iter().all(|k| k.messages == 2));
    // Roots are world ranks, translated: a bcast from world rank 3 on
    // {2, 3} reaches rank 2 only; ranks 0 and 1 take no part.
    let bc = |r: u32| if r < 2 { vec![] } else { vec![split(r), Action::Bcast { root: 3, bytes: 8, comm: 1 }] };
    let r = run(&simple(), (0..4).map(bc).collect()).unwrap();
    assert_eq!(r.ranks.iter().map(|k| k.messages).collect::<Vec<_>>(), [0, 0, 0, 1]);
    close(r.ranks[2].end_s, L);
    // Point-to-point on one communicator that the two ranks number
    // differently (0 calls it 3, 1 calls it 2) matches; a message on WORLD
    // does not match a receive on the duplicate.
    let dup = |id| Action::CommCreate { comm: id, members: vec![0, 1] };
    let ranks = vec![
        vec![dup(3), Action::Send { dst: 1, tag: 0, bytes: 8, comm: 3 }, compute(5.0 * L), send(1, 8)],
        vec![dup(2), recv(0), Action::Recv { src: 0, tag: 0, bytes: 8, comm: 2 }],
    ];
    let r = run(&simple(), ranks).unwrap();
    close(r.ranks[1].end_s, 6.0 * L);
    // A rank not among the members, or a root outside them, is an error.
    let e = run(&simple(), vec![vec![Action::CommCreate { comm: 1, members: vec![1] }, Action::Barrier { comm: 1 }], vec![]]);
    assert!(e.unwrap_err().to_string().contains("rank 0 is not a member of communicator 1"));
    let e = run(&simple(), (0..4).map(|r| vec![split(r), Action::Bcast { root: 0, bytes: 8, comm: 1 }]).collect());
    assert!(e.unwrap_err().to_string().contains("root 0 is not among the 2 ranks of communicator 1"));
}

#[test]
fn scatterv_takes_one_algorithm_on_every_rank() {
    // OpenMPI's table says binomial for a small scatter on 8 ranks, but
    // only the root knows a scatterv's sizes: every rank goes linear.
    let mut ompi = simple();
    ompi.collectives.algs = CollAlgs::preset("ompi").unwrap();
    let ranks = (0..8u32).map(|r| {
        let send_bytes = if r == 3 { vec![8; 8] } else { vec![] };
        Box::new([Ok(Action::Scatterv { root: 3, send_bytes, comm: 0 })].into_iter()) as ActionStream<'static, Infallible>
    });
    let r = replay(&ompi, ranks.collect()).unwrap();
    close(r.makespan_s, L);
    assert_eq!(r.ranks[3].messages, 7);
}

#[test]
fn a_salvaged_replay_ends_ranks_waiting_for_a_stream_that_stopped() {
    // Rank 1's records stop before its receive: rank 0's rendezvous send waits for ever.
    let ranks = || {
        vec![
            vec![Action::Compute { seconds: 1.0, region: 0 }, Action::Send { dst: 1, tag: 0, bytes: 1 << 20, comm: 0 }, Action::Finalize],
            vec![Action::Compute { seconds: 0.5, region: 0 }],
        ]
    };
    let streams =
        |v: Vec<Vec<Action>>| v.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    let e = Replay::new(&simple()).run(streams(ranks())).unwrap_err().to_string();
    assert!(e.contains("deadlock"), "{e}");
    let r = Replay::new(&simple()).salvage().run(streams(ranks())).unwrap();
    close(r.ranks[0].end_s, 1.0);
    close(r.ranks[1].end_s, 0.5);
    let s = r.salvaged.unwrap();
    assert!(s.starts_with("1 ranks: rank 0") && s.contains("rendezvous send"), "{s}");
}

mod cores;
mod modes;
mod nbc;

mod bulk;
mod dvfs;
mod gamma;
mod host_copy;
mod io;
mod io_flows;
mod limits;
mod log;
mod rma;
mod shm;

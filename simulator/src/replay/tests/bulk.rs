//! Collectives evaluated in bulk against the same replay run as events:
//! random workloads of all-reduces (power-of-two and folded
//! communicators), barriers, sub-communicators and point-to-point traffic
//! between them give bit-identical reports.

use super::*;
use crate::collectives::ReduceCost;

use crate::rng::Rng;

fn lat_model(latency: f64, bw: f64, os: f64, or: f64, eager: u64) -> P2pModel {
    P2pModel { eager_threshold_bytes: eager, ..model(latency, bw, os, or) }
}

/// Hosts of `cores` cores (block mapping: some pairs within a host, some
/// between), a reduction cost, and SMPI's async-small-thresh or not.
fn bulk_platform(rng: &mut Rng, cores: u32, hosts: usize) -> Platform {
    let hs = (0..hosts).map(|i| Host::new(format!("h{i}"), cores)).collect();
    let mut p = Platform::new("t", hs, lat_model(3e-7, 5e9, 1e-7, 2e-7, 1024));
    p.network.inter = Some(lat_model(2e-6, 1e9, 5e-7, 4e-7, 4096));
    if rng.below(2) == 0 {
        p.collectives.reduce = ReduceCost { intercept_s: 1e-7, s_per_byte: 2e-10, min_bytes: 16 };
    }
    p.smpi.async_small_thresh_bytes = [None, Some(0), Some(64)][rng.below(3)];
    p
}

/// Per rank: computes of random length around all-reduces (of eager and
/// rendezvous sizes) and barriers on WORLD and on halves, and ring
/// exchanges between them.
fn workload(rng: &mut Rng, n: u32) -> Vec<Vec<Action>> {
    let mut ranks: Vec<Vec<Action>> = (0..n)
        .map(|r| {
            let half: Vec<u32> = if r < n / 2 { (0..n / 2).collect() } else { (n / 2..n).collect() };
            vec![Action::CommCreate { comm: 1, members: half }]
        })
        .collect();
    for _ in 0..6 {
        let kind = rng.below(5);
        let bytes = [8, 512, 2048, 65536][rng.below(4)];
        for (r, acts) in ranks.iter_mut().enumerate() {
            acts.push(compute(rng.unit() * 1e-5));
            let r = r as u32;
            acts.push(match kind {
                0 | 1 => Action::Allreduce { bytes, comm: 0 },
                2 => Action::Barrier { comm: 0 },
                3 => Action::Allreduce { bytes, comm: 1 },
                _ => Action::Sendrecv {
                    dst: (r + 1) % n,
                    send_tag: 0,
                    send_bytes: bytes,
                    src: ((r + n - 1) % n) as i32,
                    recv_tag: 0,
                    recv_bytes: bytes,
                    comm: 0,
                },
            });
        }
    }
    ranks
}

fn replayed(p: &Platform, ranks: Vec<Vec<Action>>, bulk: bool) -> ReplayReport {
    let streams: Vec<ActionStream<'static, std::convert::Infallible>> =
        ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, std::convert::Infallible>).collect();
    let replay = Replay::new(p);
    let replay = if bulk { replay } else { replay.events_only() };
    replay.run(streams).unwrap()
}

#[test]
fn bulk_collectives_equal_the_event_replay_bit_for_bit() {
    let mut rng = Rng::new(7);
    let mut fewer_events = 0;
    for case in 0..480 {
        let n = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32][case % 12];
        let cores = [1, 2, 4][rng.below(3)];
        let p = bulk_platform(&mut rng, cores, 32);
        let mut ranks = workload(&mut rng, n);
        if case % 3 == 0 {
            // A nonblocking all-reduce in flight across blocking ones (at
            // the same place on every rank: collectives come in one order).
            let at = 1 + rng.below(ranks[0].len() - 1);
            for acts in &mut ranks {
                acts.insert(at, Action::Icoll { req: 9, coll: Box::new(Action::Allreduce { bytes: 64, comm: 0 }) });
                acts.push(Action::Allreduce { bytes: 8, comm: 0 });
                acts.push(Action::Wait { req: 9 });
            }
        }
        let (bulk, events) = (replayed(&p, ranks.clone(), true), replayed(&p, ranks, false));
        assert_eq!(bulk.makespan_s.to_bits(), events.makespan_s.to_bits(), "case {case}: {n} ranks");
        for (a, b) in bulk.ranks.iter().zip(&events.ranks) {
            let bits = |k: &RankReport| {
                (k.end_s.to_bits(), k.compute_s.to_bits(), k.comm_s.to_bits(), k.wait_s.to_bits(), k.messages, k.bytes_sent, k.actions)
            };
            assert_eq!(bits(a), bits(b), "case {case}: {n} ranks\n{a:?}\n{b:?}");
        }
        fewer_events += usize::from(bulk.events < events.events);
    }
    assert!(fewer_events > 400, "bulk evaluation ran in {fewer_events} of 480 cases");
}

#[test]
fn a_collective_some_member_never_enters_is_a_deadlock_naming_it() {
    let ranks = vec![vec![Action::Allreduce { bytes: 8, comm: 0 }], vec![Action::Allreduce { bytes: 8, comm: 0 }], vec![], vec![]];
    let e = run(&simple(), ranks).unwrap_err().to_string();
    assert!(e.contains("MPI_Allreduce"), "{e}");
}

#[test]
fn members_in_different_collectives_are_refused() {
    let ranks = vec![vec![Action::Allreduce { bytes: 8, comm: 0 }], vec![Action::Allreduce { bytes: 16, comm: 0 }]];
    let e = run(&simple(), ranks).unwrap_err().to_string();
    assert!(e.contains("MPI_Allreduce") && e.contains("rank 1"), "{e}");
}

/// Per rank: computes, nonblocking exchanges with both ring neighbours,
/// blocking sends and receives, and the collectives of [`workload`].
fn exchanges(rng: &mut Rng, n: u32) -> Vec<Vec<Action>> {
    let mut ranks = workload(rng, n);
    for _ in 0..8 {
        let bytes = [8, 512, 8192][rng.below(3)];
        let kind = rng.below(3);
        for (r, acts) in ranks.iter_mut().enumerate() {
            let r = r as u32;
            let (right, left) = ((r + 1) % n, (r + n - 1) % n);
            acts.push(compute(rng.unit() * 2e-6));
            match kind {
                0 => {
                    acts.push(Action::Irecv { src: left as i32, tag: 1, bytes, comm: 0, req: 1 });
                    acts.push(Action::Irecv { src: right as i32, tag: 2, bytes, comm: 0, req: 2 });
                    acts.push(Action::Isend { dst: right, tag: 1, bytes, comm: 0, req: 3 });
                    acts.push(compute(rng.unit() * 1e-6));
                    acts.push(Action::Isend { dst: left, tag: 2, bytes, comm: 0, req: 4 });
                    acts.push(Action::Waitall { reqs: vec![1, 2, 3, 4] });
                }
                1 if n > 1 => {
                    // Even ranks send first, odd ones receive first.
                    let (s, v) =
                        (Action::Send { dst: right, tag: 3, bytes, comm: 0 }, Action::Recv { src: left as i32, tag: 3, bytes, comm: 0 });
                    acts.extend(if r.is_multiple_of(2) { [s, v] } else { [v, s] });
                }
                _ => acts.push(Action::Barrier { comm: 0 }),
            }
        }
    }
    ranks
}

#[test]
fn order_free_replays_equal_the_event_order_bit_for_bit() {
    let mut rng = Rng::new(11);
    for case in 0..240 {
        let n = [2, 3, 4, 5, 8, 12, 16, 32][case % 8];
        let cores = [1, 2, 4][rng.below(3)];
        let p = bulk_platform(&mut rng, cores, 32);
        let ranks = exchanges(&mut rng, n);
        let streams = |ranks: Vec<Vec<Action>>| -> Vec<ActionStream<'static, std::convert::Infallible>> {
            ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, std::convert::Infallible>).collect()
        };
        let events = Replay::new(&p).run(streams(ranks.clone())).unwrap();
        let ahead = Replay::new(&p).order_free(true).run(streams(ranks)).unwrap();
        assert_eq!(ahead.makespan_s.to_bits(), events.makespan_s.to_bits(), "case {case}: {n} ranks");
        for (a, b) in ahead.ranks.iter().zip(&events.ranks) {
            let bits = |k: &RankReport| {
                (k.end_s.to_bits(), k.compute_s.to_bits(), k.comm_s.to_bits(), k.wait_s.to_bits(), k.messages, k.bytes_sent)
            };
            assert_eq!(bits(a), bits(b), "case {case}: {n} ranks\n{a:?}\n{b:?}");
        }
        assert!(ahead.events <= events.events, "case {case}");
    }
}

#[test]
fn an_order_sensitive_call_in_streams_declared_order_free_is_an_error() {
    let ranks = vec![vec![compute(1e-3), Action::Send { dst: 1, tag: 0, bytes: 8, comm: 0 }], vec![recv(-1)]];
    let streams: Vec<ActionStream<'static, std::convert::Infallible>> =
        ranks.into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, std::convert::Infallible>).collect();
    let e = Replay::new(&simple()).order_free(true).run(streams).unwrap_err().to_string();
    assert!(e.contains("order_free") && e.contains("rank 1"), "{e}");
}

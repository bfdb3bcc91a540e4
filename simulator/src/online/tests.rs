//! The online clocks against the offline replay of the same actions: two
//! hosts with different intra/inter models, nonzero overheads, a host
//! twice as fast; every figure must agree with [`crate::replay::replay`].

use std::convert::Infallible;

use super::*;
use crate::action::{Action, IoCall};
use crate::network::{Piecewise, Segment};
use crate::platform::{Host, Mapping};
use crate::replay::{self, ActionStream};

fn pw(intercept_s: f64, bandwidth_bytes_per_s: f64) -> Piecewise {
    Piecewise { segments: vec![Segment { max_bytes: None, intercept_s, bandwidth_bytes_per_s }] }
}

fn platform() -> Platform {
    let model = |l: f64, bw: f64| P2pModel {
        eager_threshold_bytes: 1024,
        transfer: pw(l, bw),
        send_overhead: pw(2e-6, 1e9),
        recv_overhead: pw(3e-6, 2e9),
        rma: None,
    };
    // Rank r on host r mod 2, a core per rank (sharing is tested apart).
    let mut p = Platform::new("t", vec![Host::new("a", 4), Host { speed_ratio: 2.0, ..Host::new("b", 4) }], model(1e-6, 1e10));
    p.mapping = Mapping::RoundRobin;
    p.network.inter = Some(model(1e-5, 1e9));
    p.smpi.irecv_s = 4e-7;
    p.smpi.wait_s = 5e-7;
    p.smpi.poll_s = 6e-7;
    p
}

fn offline(ranks: Vec<Vec<Action>>) -> Vec<VirtualStats> {
    offline_on(&platform(), ranks)
}

fn offline_on(p: &Platform, ranks: Vec<Vec<Action>>) -> Vec<VirtualStats> {
    let streams: Vec<ActionStream<'static, Infallible>> =
        ranks.into_iter().map(|a| Box::new(a.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    let rep = replay::replay(p, streams).unwrap();
    rep.ranks
        .iter()
        .map(|r| VirtualStats { end_s: r.end_s, compute_s: r.compute_s, comm_s: r.comm_s, wait_s: r.wait_s, ..Default::default() })
        .collect()
}

fn assert_close(online: VirtualStats, offline: VirtualStats) {
    for (name, a, b) in [
        ("end_s", online.end_s, offline.end_s),
        ("compute_s", online.compute_s, offline.compute_s),
        ("comm_s", online.comm_s, offline.comm_s),
        ("wait_s", online.wait_s, offline.wait_s),
    ] {
        assert!((a - b).abs() < 1e-12, "{name}: online {a} vs offline {b}");
    }
}

fn compute(s: f64) -> Action {
    Action::Compute { seconds: s, region: 0 }
}

/// Blocking eager and rendezvous messages both ways (a ping-pong).
#[test]
fn blocking_ping_pong_agrees_with_replay() {
    for bytes in [100u64, 5000] {
        let send = |dst| Action::Send { dst, tag: 0, bytes, comm: 0 };
        let recv = |src| Action::Recv { src, tag: 0, bytes, comm: 0 };
        let off = offline(vec![
            vec![compute(1e-4), send(1), recv(1), Action::Finalize],
            vec![compute(3e-4), recv(0), compute(1e-5), send(0), Action::Finalize],
        ]);
        let (mut a, mut b) = (VirtualRank::new(platform(), 0), VirtualRank::new(platform(), 1));
        a.compute(1e-4);
        let sa = a.send(1, bytes);
        b.compute(3e-4);
        let (post_b, _) = b.recv(0, bytes, sa.post_s);
        a.send_done(1, bytes, sa, post_b);
        let post_a = a.recv_post(7);
        b.compute(1e-5);
        let sb = b.send(0, bytes);
        let (post_a2, _) = a.recv_matched(7, 1, bytes, sb.post_s).unwrap();
        assert_eq!(post_a, post_a2);
        a.complete(&[7]);
        b.send_done(0, bytes, sb, post_a);
        assert_close(a.stats(), off[0]);
        assert_close(b.stats(), off[1]);
    }
}

/// A halo exchange: Irecv, Isend, Waitall, with a rendezvous and an eager message.
#[test]
fn nonblocking_exchange_agrees_with_replay() {
    let (big, small) = (4096u64, 64u64);
    let off = offline(vec![
        vec![
            compute(2e-4),
            Action::Irecv { src: 1, tag: 0, bytes: small, comm: 0, req: 1 },
            Action::Isend { dst: 1, tag: 0, bytes: big, comm: 0, req: 2 },
            Action::Poll,
            Action::Poll,
            Action::Waitall { reqs: vec![1, 2] },
            Action::Finalize,
        ],
        vec![
            compute(5e-5),
            Action::Isend { dst: 0, tag: 0, bytes: small, comm: 0, req: 3 },
            compute(1e-4),
            Action::Irecv { src: 0, tag: 0, bytes: big, comm: 0, req: 4 },
            Action::Waitall { reqs: vec![4, 3] },
            Action::Finalize,
        ],
    ]);
    let (mut a, mut b) = (VirtualRank::new(platform(), 0), VirtualRank::new(platform(), 1));
    a.compute(2e-4);
    a.irecv(1);
    let sa = a.isend(2, 1, big);
    a.poll();
    a.poll();
    b.compute(5e-5);
    let sb = b.isend(3, 0, small);
    b.compute(1e-4);
    b.irecv(4);
    assert_eq!((a.pending(1), a.pending(2), b.pending(3)), (Pending::Recv, Pending::RendezvousSend, Pending::None));
    let (post_b, eager) = b.recv_matched(4, 0, big, sa.post_s).unwrap();
    assert!(!eager);
    a.recv_matched(1, 1, small, sb.post_s).unwrap();
    assert!(a.send_matched(2, post_b));
    a.wait(&[1, 2]);
    b.wait(&[4, 3]);
    assert_close(a.stats(), off[0]);
    assert_close(b.stats(), off[1]);
}

/// Collectives run through the replay engine on the members, with a
/// non-world member list and a remapped root.
#[test]
fn collectives_agree_with_replay() {
    let entries = [3e-4, 1e-4, 2e-4];
    for action in [Action::Allreduce { bytes: 8, comm: 0 }, Action::Bcast { root: 2, bytes: 2000, comm: 0 }, Action::Barrier { comm: 0 }] {
        let off = offline(entries.iter().map(|&e| vec![compute(e), action.clone(), Action::Finalize]).collect());
        for r in 0..3u32 {
            let mut v = VirtualRank::new(platform(), r);
            v.compute(entries[r as usize]);
            let entry: Vec<f64> = (0..3).map(|i| entries[i] / platform().hosts[platform().host_of(i as u32)].speed_ratio).collect();
            v.collective(&action, &[0, 1, 2], &entry).unwrap();
            assert!((v.now() - off[r as usize].end_s).abs() < 1e-12, "{action:?} rank {r}: {} vs {}", v.now(), off[r as usize].end_s);
            assert!((v.stats().comm_s - off[r as usize].comm_s).abs() < 1e-12);
        }
    }
    let mut v = VirtualRank::new(platform(), 1);
    let e = v.collective(&Action::Bcast { root: 0, bytes: 8, comm: 3 }, &[1, 0], &[0.0, 0.0]).unwrap();
    assert!(e > 0.0);
    assert!(v.collective(&Action::Barrier { comm: 0 }, &[0, 2], &[0.0, 0.0]).is_err());
}

/// Collectives whose sizes differ between members (a gather of uneven
/// contributions, a scatterv whose sizes only the root has, an
/// all-to-all-v with asymmetric sends): each member runs the action it
/// has offline once the members' sizes come with their entry times.
#[test]
fn collectives_of_uneven_sizes_agree_with_replay() {
    let entries = [3e-4, 1e-4, 2e-4];
    for kind in 0..3 {
        let action = |r: usize| -> Action {
            match kind {
                0 => Action::Gather { root: 1, bytes: [100, 7000, 30_000][r], comm: 0 },
                1 => Action::Scatterv { root: 2, send_bytes: if r == 2 { vec![50_000, 10, 2000] } else { Vec::new() }, comm: 0 },
                _ => Action::Alltoallv { send_bytes: [vec![0, 9000, 10], vec![200, 0, 40_000], vec![5, 6, 0]][r].clone(), comm: 0 },
            }
        };
        let off = offline((0..3).map(|r| vec![compute(entries[r]), action(r), Action::Finalize]).collect());
        let entry: Vec<f64> = (0..3).map(|i| entries[i] / platform().hosts[platform().host_of(i as u32)].speed_ratio).collect();
        let sizes: Vec<Vec<u64>> = (0..3).map(|r| member_sizes(&action(r), 3)).collect();
        for r in 0..3u32 {
            let mut v = VirtualRank::new(platform(), r);
            v.compute(entries[r as usize]);
            v.collective_sized(&action(r as usize), &[0, 1, 2], &entry, &sizes).unwrap();
            let o = off[r as usize];
            assert!((v.now() - o.end_s).abs() < 1e-12, "{:?} rank {r}: {} vs {}", action(r as usize), v.now(), o.end_s);
            assert!((v.stats().comm_s - o.comm_s).abs() < 1e-12);
        }
    }
}

/// Nonblocking collectives posted at different times, overlapped with
/// compute of different lengths (some shorter than the collective, some
/// longer), then waited: completion under the replay's asynchronous
/// progress, and the wait's communication/waiting split.
#[test]
fn nonblocking_collectives_agree_with_replay() {
    let posts = [3e-4, 1e-4, 2e-4];
    let overlap = [1e-6, 4e-4, 2e-5];
    for coll in [
        Action::Allreduce { bytes: 8, comm: 0 },
        Action::Bcast { root: 2, bytes: 5000, comm: 0 },
        Action::Reduce { root: 0, bytes: 2000, comm: 0 },
        Action::Barrier { comm: 0 },
        Action::Scan { bytes: 64, exclusive: true, comm: 0 },
    ] {
        let icoll = Action::Icoll { req: 5, coll: Box::new(coll.clone()) };
        let off = offline(
            (0..3)
                .map(|i| vec![compute(posts[i]), icoll.clone(), compute(overlap[i]), Action::Wait { req: 5 }, Action::Finalize])
                .collect(),
        );
        let speed = |i: usize| platform().hosts[platform().host_of(i as u32)].speed_ratio;
        let entries: Vec<f64> = (0..3).map(|i| posts[i] / speed(i)).collect();
        for r in 0..3usize {
            let mut v = VirtualRank::new(platform(), r as u32);
            v.compute(posts[r]);
            assert_eq!(v.icoll(5), entries[r]);
            assert_eq!(v.pending(5), Pending::Collective);
            v.compute(overlap[r]);
            let done = v.icoll_matched(5, &coll, &[0, 1, 2], &entries).unwrap().unwrap();
            assert!(done >= entries[r]);
            v.wait(&[5]);
            assert_close(v.stats(), off[r]);
        }
    }
    let mut v = VirtualRank::new(platform(), 0);
    assert_eq!(v.icoll_matched(9, &Action::Barrier { comm: 0 }, &[0, 1], &[0.0, 0.0]).unwrap(), None);
}

/// The reduction steps ([`crate::collectives::Collectives::reduce`]) are local compute online as
/// offline, and the clocks still agree.
#[test]
fn reductions_are_compute_online_as_offline() {
    let mut x = platform();
    x.collectives.reduce = crate::collectives::ReduceCost { intercept_s: 1e-6, s_per_byte: 1e-9, min_bytes: 0 };
    let entries = [3e-4, 1e-4, 2e-4];
    for action in [Action::Allreduce { bytes: 4096, comm: 0 }, Action::Reduce { root: 1, bytes: 800, comm: 0 }] {
        let streams: Vec<ActionStream<'static, Infallible>> = entries
            .iter()
            .map(|&e| Box::new(vec![compute(e), action.clone(), Action::Finalize].into_iter().map(Ok)) as ActionStream<'static, Infallible>)
            .collect();
        let off = replay::replay(&x, streams).unwrap();
        assert!(off.ranks.iter().map(|r| r.compute_s).sum::<f64>() > entries.iter().sum::<f64>() / 2.0 + 1e-6);
        for r in 0..3u32 {
            let mut v = VirtualRank::new(x.clone(), r);
            v.compute(entries[r as usize]);
            let entry: Vec<f64> = (0..3).map(|i| entries[i] / platform().hosts[platform().host_of(i as u32)].speed_ratio).collect();
            v.collective(&action, &[0, 1, 2], &entry).unwrap();
            let o = &off.ranks[r as usize];
            let want = VirtualStats { end_s: o.end_s, compute_s: o.compute_s, comm_s: o.comm_s, wait_s: o.wait_s, ..Default::default() };
            assert_close(v.stats(), want);
        }
    }
}

/// Four ranks, two per host: each opens the file, computes (rank 3 for
/// 5 ms), writes 4 MiB collectively, then 1 MiB independently, syncs and
/// closes; the online clocks, given the members' entry times and parts,
/// end where the replay ends them.
#[test]
fn mpi_io_on_the_file_system_agrees_with_the_replay() {
    const MIB: u64 = 1 << 20;
    let mut p = platform();
    p.hosts = vec![Host::new("a", 2), Host { speed_ratio: 2.0, ..Host::new("b", 2) }];
    p.fs = vec![crate::io::tests::fs(2, MIB)];
    let io = |call, offset, bytes| Action::Io { call, file: 7, offset, bytes, recorded_s: 0.5 };
    let late = |r: u64| if r == 3 { 1e-2 } else { 0.0 };
    let ranks: Vec<Vec<Action>> = (0..4u64)
        .map(|r| {
            vec![
                io(IoCall::Open { comm: 0 }, 0, 0),
                Action::Compute { seconds: late(r), region: 0 },
                io(IoCall::WriteAll, r * 4 * MIB, 4 * MIB),
                io(IoCall::Write, (16 + r) * MIB, MIB),
                io(IoCall::Sync, 0, 0),
                io(IoCall::Close, 0, 0),
                Action::Finalize,
            ]
        })
        .collect();
    let streams: Vec<ActionStream<'static, Infallible>> =
        ranks.iter().cloned().map(|a| Box::new(a.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    let rep = replay::replay(&p, streams).unwrap();
    let mut clocks: Vec<VirtualRank> = (0..4).map(|r| VirtualRank::new(p.clone(), r)).collect();
    for (r, c) in clocks.iter_mut().enumerate() {
        c.io(&ranks[r][0]).unwrap();
        c.compute(late(r as u64));
    }
    let entries: Vec<f64> = clocks.iter().map(VirtualRank::now).collect();
    let parts: Vec<(u64, u64, u64)> = (0..4u64).map(|r| (r * 4 * MIB, 4 * MIB, 4 * MIB)).collect();
    for (r, c) in clocks.iter_mut().enumerate() {
        c.collective_io(&ranks[r][2], &[0, 1, 2, 3], &entries, &parts).unwrap();
    }
    // Independent accesses after the collective one: each clock sees only
    // its own requests, so compare one rank per server pair alone.
    // The sync is collective: here no cache holds anything to write back.
    let r = 0;
    for a in &ranks[r][3..6] {
        if matches!(a, Action::Io { call: IoCall::Sync, .. }) {
            let now = clocks[r].now();
            clocks[r].collective_io(a, &[0, 1, 2, 3], &[now; 4], &[(0, 0, 0); 4]).unwrap();
        } else {
            clocks[r].io(a).unwrap();
        }
    }
    let (online, offline) = (clocks[r].stats(), &rep.ranks[r]);
    for (name, a, b) in
        [("end_s", online.end_s, offline.end_s), ("io_s", online.io_s, offline.io_s), ("wait_s", online.wait_s, offline.wait_s)]
    {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1e-6), "rank {r} {name}: online {a} offline {b}");
    }
    for c in &clocks[1..] {
        assert!(c.stats().io_s > 0.0 && c.stats().end_s >= entries[3], "{:?}", c.stats());
    }
    // Without a file system: the recorded durations, as compute.
    let mut bare = VirtualRank::new(platform(), 0);
    bare.io(&io(IoCall::Write, 0, MIB)).unwrap();
    assert!((bare.now() - 0.5).abs() < 1e-12 && bare.stats().compute_s == bare.now());
}

#[test]
fn polling_ranks_on_an_oversubscribed_host_share_its_cores_as_offline() {
    // 3 ranks on host a's 2 cores (poll): each 1 s block takes 1.5 s, as
    // in the replay while no rank has finalized.
    let mut p = platform();
    p.hosts[0].cores = 2;
    p.mapping = Mapping::Explicit { hosts: vec![0, 0, 0] };
    let streams: Vec<ActionStream<'static, Infallible>> =
        (0..3).map(|_| Box::new([compute(1.0), compute(0.5)].into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    let rep = replay::replay(&p, streams).unwrap();
    for r in 0..3u32 {
        let mut v = VirtualRank::new(p.clone(), r).with_world(3);
        assert!((v.core_share() - 2.0 / 3.0).abs() < 1e-12);
        v.compute(1.0);
        v.compute(0.5);
        assert!((v.now() - 2.25).abs() < 1e-12 && (rep.ranks[r as usize].end_s - 2.25).abs() < 1e-12, "{}", v.now());
    }
    // Yield: online gives each block a whole core.
    p.waiting_ranks = crate::platform::WaitingRanks::Yield;
    assert_eq!(VirtualRank::new(p, 0).with_world(3).core_share(), 1.0);
}

/// 3 ranks on host a's 2 cores (poll) meet at a barrier, then compute
/// final blocks of 0.1, 0.4 and 1 s: the replay speeds the later ones up
/// as ranks finalize, which the clocks alone miss and [`final_ends`]
/// restores; a rank with MPI time after its last block has no final block.
#[test]
fn final_blocks_share_the_cores_of_ranks_that_finalized_as_offline() {
    let mut p = platform();
    p.hosts[0].cores = 2;
    p.mapping = Mapping::Explicit { hosts: vec![0, 0, 0] };
    let (entries, finals) = ([3e-4, 1e-4, 2e-4], [0.1, 0.4, 1.0]);
    let actions = |r: usize| vec![compute(entries[r]), Action::Barrier { comm: 0 }, compute(finals[r]), Action::Finalize];
    let off = offline_on(&p, (0..3).map(actions).collect());
    let share = 2.0 / 3.0;
    let entry: Vec<f64> = entries.iter().map(|e| e / share).collect();
    let (mut blocks, mut ends) = (Vec::new(), Vec::new());
    for r in 0..3u32 {
        let mut v = VirtualRank::new(p.clone(), r).with_world(3);
        v.compute(entries[r as usize]);
        v.collective(&Action::Barrier { comm: 0 }, &[0, 1, 2], &entry).unwrap();
        v.compute(finals[r as usize]);
        blocks.push(v.final_block());
        ends.push(v.now());
    }
    assert!(blocks.iter().all(Option::is_some));
    let last = off.iter().map(|s| s.end_s).fold(0.0, f64::max);
    assert!(ends[2] > last * 1.05, "the clocks alone keep a third of the cores to the end: {} vs {last}", ends[2]);
    let shared = final_ends(&p, &blocks, &ends);
    for r in 0..3 {
        assert!((shared[r] - off[r].end_s).abs() < 1e-12, "rank {r}: {} vs {}", shared[r], off[r].end_s);
    }
    // MPI time after the last block: no final block, the host's clocks stay.
    let mut v = VirtualRank::new(p.clone(), 0).with_world(3);
    v.compute(0.1);
    v.poll();
    assert_eq!(v.final_block(), None);
    blocks[0] = None;
    assert_eq!(final_ends(&p, &blocks, &ends), ends);
}

/// A sync on a shared file writes back every member's cached data: the
/// online clock of a rank that cached 1 MiB, with another member holding
/// 3 MiB and syncing first, waits for all 4 MiB, as the shared replay
/// does.
#[test]
fn a_sync_waits_for_every_members_cached_data() {
    const MIB: u64 = 1 << 20;
    let mut p = platform();
    let mut fs = crate::io::tests::fs(1, MIB);
    fs.disk.cache_bytes = 64 * MIB;
    fs.disk.cache_bytes_per_s = Some(1e10);
    fs.disk.drain_after_bytes = 64 * MIB;
    p.fs = vec![fs];
    let io = |call, offset, bytes| Action::Io { call, file: 7, offset, bytes, recorded_s: 0.5 };
    let mut c = VirtualRank::new(p, 0);
    c.io(&io(IoCall::Open { comm: 0 }, 0, 0)).unwrap();
    c.io(&io(IoCall::Write, 0, MIB)).unwrap();
    let sync = io(IoCall::Sync, 0, 0);
    let part = c.io_part(&sync, 2).expect("a sync with a file system is collective");
    assert_eq!(part, (0, MIB, 0));
    let t = c.now();
    let first = t - 1e-3;
    c.collective_io(&sync, &[0, 1], &[t, first], &[part, (0, 3 * MIB, 0)]).unwrap();
    // 4 MiB at 1e8 B/s from the first member's sync, then the sync latency (1 ms).
    let want = first + 4.0 * MIB as f64 / 1e8 + 1e-3;
    assert!((c.now() - want).abs() < 1e-9, "{} vs {want}", c.now());
}

/// On OMPIO a collective write of two ranks runs as the rank's own write
/// (nothing to gather) and its bytes join the rank's part of the next
/// sync; of four ranks it gathers the members' parts.
#[test]
fn ompio_collectives_of_two_ranks_run_on_the_ranks_own_clock() {
    const MIB: u64 = 1 << 20;
    let mut p = platform();
    let mut fs = crate::io::tests::fs(1, MIB);
    fs.mpi_io = crate::io::MpiIo::Ompio;
    p.fs = vec![fs];
    let lat = crate::io::client::server_latency_s(&p);
    let io = |call, offset, bytes| Action::Io { call, file: 7, offset, bytes, recorded_s: 0.5 };
    let mut c = VirtualRank::new(p, 0);
    c.io(&io(IoCall::Open { comm: 0 }, 0, 0)).unwrap();
    let write = io(IoCall::WriteAll, 0, MIB);
    assert_eq!(c.io_part(&write, 4), Some((0, MIB, MIB)));
    assert_eq!(c.io_part(&write, 2), None);
    let t = c.now();
    c.io(&write).unwrap();
    // The network's latency to the server, 10 ms + 1 MiB at 1e8 B/s.
    assert!((c.now() - (t + lat + 1e-2 + MIB as f64 / 1e8)).abs() < 1e-9, "{}", c.now());
    assert_eq!(c.io_part(&io(IoCall::Sync, 0, 0), 2), Some((0, MIB, 0)));
}

/// MPICH's shared-memory all-reduce and barrier ([`crate::collectives::shm`]):
/// three ranks on one host make seven all-reduces of 12 KiB (two cells)
/// and three barriers with compute of different lengths between them;
/// the online clocks, each counting the calls per communicator, end
/// where the replay ends them, and the model is in use (without it the
/// figures differ).
#[test]
fn shared_memory_collectives_agree_with_replay() {
    let mut x = platform();
    x.mapping = Mapping::Explicit { hosts: vec![0; 3] };
    x.collectives.shm = Some(crate::collectives::ShmCost { call_s: 3e-7, flag_s: 2e-7, s_per_byte: 1e-10 });
    let work = |k: usize, r: usize| 1e-5 * ((k * 7 + r * 3) % 5) as f64;
    let seq: Vec<Action> =
        (0..10).map(|k| if k % 3 == 2 { Action::Barrier { comm: 0 } } else { Action::Allreduce { bytes: 12288, comm: 0 } }).collect();
    let streams = |p: &Platform| {
        let s: Vec<ActionStream<'static, Infallible>> = (0..3)
            .map(|r| {
                let acts: Vec<Action> =
                    seq.iter().enumerate().flat_map(|(k, a)| [compute(work(k, r)), a.clone()]).chain([Action::Finalize]).collect();
                Box::new(acts.into_iter().map(Ok)) as ActionStream<'static, Infallible>
            })
            .collect();
        replay::replay(p, s).unwrap()
    };
    let off = streams(&x);
    let mut plain = x.clone();
    plain.collectives.shm = None;
    assert!((streams(&plain).makespan_s - off.makespan_s).abs() > 1e-7);
    let mut v: Vec<VirtualRank> = (0..3).map(|r| VirtualRank::new(x.clone(), r)).collect();
    for (k, a) in seq.iter().enumerate() {
        for (r, vr) in v.iter_mut().enumerate() {
            vr.compute(work(k, r));
        }
        let entries: Vec<f64> = v.iter().map(|vr| vr.now()).collect();
        for vr in v.iter_mut() {
            vr.collective(a, &[0, 1, 2], &entries).unwrap();
        }
    }
    for (r, vr) in v.iter().enumerate() {
        let o = &off.ranks[r];
        assert_close(
            vr.stats(),
            VirtualStats { end_s: o.end_s, compute_s: o.compute_s, comm_s: o.comm_s, wait_s: o.wait_s, ..Default::default() },
        );
    }
}

/// Two rendezvous transfers into rank 0 from rank 2 on its host take
/// turns in rank 0's copy lane (`serial_receives`) at the wait that
/// completes them; one from rank 1 on the other host does not. Every
/// order in which real time may bring the companions gives the replay's
/// virtual times. Transfers below `serial_receives_min_bytes` move in
/// parallel.
#[test]
fn serial_receives_end_when_the_replays_do() {
    for min_bytes in [0, 1_000_000, 1_000_001] {
        serial_receives_from(min_bytes, false);
        serial_receives_from(min_bytes, true);
    }
}

/// `one_by_one`: rank 0 waits for its three receives one call each.
fn serial_receives_from(min_bytes: u64, one_by_one: bool) {
    let mut p = platform();
    p.network.serial_receives = true;
    p.network.serial_receives_min_bytes = min_bytes;
    let big = 1_000_000u64;
    let isend = |dst, req| Action::Isend { dst, tag: req as i32, bytes: big, comm: 0, req };
    let irecv = |src, req| Action::Irecv { src, tag: req as i32, bytes: if src == 1 { 2000 } else { big }, comm: 0, req };
    let wait = |req| Action::Wait { req };
    let off = offline_on(
        &p,
        vec![
            match one_by_one {
                true => vec![irecv(2, 1), irecv(2, 2), irecv(1, 3), wait(2), wait(1), wait(3), Action::Finalize],
                false => vec![irecv(2, 1), irecv(2, 2), irecv(1, 3), Action::Waitall { reqs: vec![1, 2, 3] }, Action::Finalize],
            },
            vec![Action::Isend { dst: 0, tag: 3, bytes: 2000, comm: 0, req: 3 }, Action::Waitall { reqs: vec![3] }, Action::Finalize],
            vec![compute(1e-5), isend(0, 1), isend(0, 2), Action::Waitall { reqs: vec![1, 2] }, Action::Finalize],
        ],
    );
    let mut last = None;
    for order in [[1, 2, 3], [2, 3, 1], [3, 2, 1]] {
        let (mut a, mut b, mut c) = (VirtualRank::new(p.clone(), 0), VirtualRank::new(p.clone(), 1), VirtualRank::new(p.clone(), 2));
        (1..=3).for_each(|r| _ = a.irecv(r));
        let s3 = b.isend(3, 0, 2000);
        c.compute(1e-5);
        let (s1, s2) = (c.isend(1, 0, big), c.isend(2, 0, big));
        // Companions in the order real time brings them.
        for req in order {
            let (src, s) = [(2, s1), (2, s2), (1, s3)][req as usize - 1];
            let bytes = if src == 1 { 2000 } else { big };
            let (post, eager) = a.recv_matched(req, src, bytes, s.post_s).unwrap();
            assert!(!eager);
            let sender = if src == 1 { &mut b } else { &mut c };
            assert!(sender.send_matched(req, post));
        }
        match one_by_one {
            true => [2, 1, 3].iter().for_each(|r| a.wait(&[*r])),
            false => a.wait(&[1, 2, 3]),
        }
        b.wait(&[3]);
        c.wait(&[1, 2]);
        assert_close(a.stats(), off[0]);
        assert_close(b.stats(), off[1]);
        assert_close(c.stats(), off[2]);
        let stats = [a.stats(), b.stats(), c.stats()];
        assert!(last.is_none_or(|l| l == stats), "{order:?}: {stats:?} vs {last:?}");
        last = Some(stats);
    }
    let a_end = last.unwrap()[0].end_s;
    // 1e-5 s of compute, then two of 1e-6 + big / 1e10 s one after another.
    let alone = 1e-5 + 1e-6 + big as f64 / 1e10;
    let turns = a_end > alone + 9e-5;
    assert_eq!(turns, min_bytes <= big, "the two transfers from rank 2 take turns from {min_bytes} B: {a_end} vs {alone}");
}

/// Pstates that change during the run: waits at pstate 2, one region at
/// pstate 1, switches of 0.1 ms; the rank's clock against the replay.
#[test]
fn dvfs_policies_agree_with_replay() {
    use crate::dvfs::{Dvfs, RegionPstates};
    use crate::energy::{PowerRange, Pstate};
    let key = "app.c:1:app.c:9";
    let region = crate::trace::region_key_id(key);
    let mut p = platform();
    let ps = |speed_flops: f64| Pstate { speed_flops, watts: Some(PowerRange::parse("100:120:200").unwrap()) };
    for h in &mut p.hosts {
        h.pstates = vec![ps(1e9), ps(0.8e9), ps(0.6e9)];
        h.pstate_switch_s = 1e-4;
    }
    let regions = RegionPstates::parse(&format!("region,pstate\n{key},1\n"), std::path::Path::new("r.csv")).unwrap();
    p.dvfs = Dvfs { wait_pstate: Some(2), regions, waiting_busy: false };
    let (send, recv) = (|dst| Action::Send { dst, tag: 0, bytes: 100, comm: 0 }, |src| Action::Recv { src, tag: 0, bytes: 100, comm: 0 });
    let ranks = || {
        vec![
            vec![
                Action::Compute { seconds: 1e-3, region },
                send(1),
                recv(1),
                compute(2e-4),
                Action::Barrier { comm: 0 },
                compute(3e-4),
                Action::Finalize,
            ],
            vec![
                compute(1e-4),
                recv(0),
                Action::Compute { seconds: 5e-4, region },
                send(0),
                Action::Barrier { comm: 0 },
                compute(3e-4),
                Action::Finalize,
            ],
        ]
    };
    let off = offline_on(&p, ranks());
    let (mut a, mut b) = (VirtualRank::new(p.clone(), 0), VirtualRank::new(p.clone(), 1));
    a.compute_in(1e-3, Some(region));
    let sa = a.send(1, 100);
    b.compute(1e-4);
    b.recv(0, 100, sa.post_s);
    b.compute_in(5e-4, Some(region));
    let sb = b.send(0, 100);
    a.recv(1, 100, sb.post_s);
    a.compute(2e-4);
    let entries = [a.now(), b.now()];
    a.collective(&Action::Barrier { comm: 0 }, &[0, 1], &entries).unwrap();
    b.collective(&Action::Barrier { comm: 0 }, &[0, 1], &entries).unwrap();
    a.compute(3e-4);
    b.compute(3e-4);
    assert_close(a.stats(), off[0]);
    assert_close(b.stats(), off[1]);
    // The policy changed the times: without it the clocks end earlier.
    let plain = offline_on(&Platform { dvfs: Dvfs::default(), ..p.clone() }, ranks());
    assert!(off[0].end_s > plain[0].end_s + 1e-4 && off[1].end_s > plain[1].end_s + 1e-4, "{off:?} {plain:?}");
}

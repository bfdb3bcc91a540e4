use super::alg::{alg_names, parse_alg};
use super::*;
use std::collections::VecDeque;

/// Result of executing every rank's schedule with FIFO channels.
struct Run {
    /// Per rank, the set of ranks whose data it has seen at exit (bitmask).
    know: Vec<u64>,
    /// Bytes each rank sent.
    sent: Vec<u64>,
    /// Bytes each rank received.
    received: Vec<u64>,
    /// Messages in all.
    messages: usize,
}

/// Executes the schedules round by round (sends of a round, then its
/// receives), or panics on a deadlock or an unreceived message.
fn run(schedules: &[Vec<Step>]) -> Run {
    let n = schedules.len();
    let mut know: Vec<u64> = (0..n).map(|r| 1 << r).collect();
    let mut chan: Vec<VecDeque<(u64, u64)>> = vec![VecDeque::new(); n * n];
    let (mut sent, mut received, mut messages) = (vec![0; n], vec![0; n], 0);
    let mut pos = vec![0usize; n];
    let mut posted = vec![false; n];
    loop {
        let mut progress = false;
        for r in 0..n {
            let s = &schedules[r];
            if pos[r] == s.len() {
                continue;
            }
            let end = pos[r] + s[pos[r]..].iter().position(|x| x.end_round).unwrap() + 1;
            let round = &s[pos[r]..end];
            if !posted[r] {
                for st in round.iter().filter(|st| st.send) {
                    assert_ne!(st.peer as usize, r, "rank {r} sends to itself");
                    chan[r * n + st.peer as usize].push_back((know[r], st.bytes));
                    sent[r] += st.bytes;
                    messages += 1;
                }
                posted[r] = true;
                progress = true;
            }
            let ready = round.iter().filter(|st| !st.send).all(|st| !chan[st.peer as usize * n + r].is_empty());
            if ready {
                for st in round.iter().filter(|st| !st.send) {
                    let (k, b) = chan[st.peer as usize * n + r].pop_front().unwrap();
                    know[r] |= k;
                    received[r] += b;
                }
                pos[r] = end;
                posted[r] = false;
                progress = true;
            }
        }
        if pos.iter().zip(schedules).all(|(p, s)| *p == s.len()) {
            assert!(chan.iter().all(|c| c.is_empty()), "unreceived messages");
            return Run { know, sent, received, messages };
        }
        assert!(progress, "schedules deadlock: {pos:?}");
    }
}

fn schedules(n: u32, f: impl Fn(u32, &mut Vec<Step>)) -> Vec<Vec<Step>> {
    (0..n)
        .map(|r| {
            let mut v = Vec::new();
            f(r, &mut v);
            v
        })
        .collect()
}

fn rounds(s: &[Step]) -> usize {
    s.iter().filter(|x| x.end_round).count()
}

fn all(n: u32) -> u64 {
    (1u64 << n) - 1
}

/// The schedules of `call` on `n` ranks with `alg` forced.
fn forced(call: &CollCall, alg: &str, n: u32) -> Vec<Vec<Step>> {
    let mut algs = CollAlgs::mpich();
    algs.set(call.coll.name(), alg).unwrap();
    schedules(n, |r, v| schedule(&algs, call, r, n, v))
}

#[test]
fn every_algorithm_of_every_collective_delivers() {
    let sizes: Vec<u64> = (0..20).map(|i| 8 * (i % 3 + 1)).collect();
    for coll in Coll::ALL {
        for (name, _) in alg_names(coll) {
            for n in 1..=19u32 {
                for root in [0, n / 2, n - 1] {
                    let bytes = 8 * 64;
                    let v = matches!(coll, Coll::Allgatherv | Coll::Alltoallv | Coll::ReduceScatter);
                    let call = CollCall { coll, root, bytes, sizes: if v { &sizes[..n as usize] } else { &[] }, vector: v };
                    let alg = if name.contains("pipeline") || name.contains("chain") { format!("{name}:100") } else { name.to_string() };
                    let k = run(&forced(&call, &alg, n)).know;
                    let ok = match coll {
                        Coll::Bcast | Coll::Scatter => k.iter().all(|k| k & (1 << root) != 0),
                        Coll::Reduce | Coll::Gather => k[root as usize] == all(n),
                        Coll::Scan | Coll::Exscan => (0..n).all(|r| k[r as usize] & all(r + 1) == all(r + 1)),
                        _ => k.iter().all(|&k| k == all(n)),
                    };
                    assert!(ok, "{} {alg} n = {n} root = {root}: {k:?}", coll.name());
                }
            }
        }
    }
}

#[test]
fn message_volumes_match_the_textbook_formulas() {
    let b = 1024u64;
    for n in [2u32, 4, 8, 16] {
        let every = |r: &Run, want: u64, what: &str| assert!(r.sent.iter().all(|&s| s == want), "{what} n = {n}: {:?}", r.sent);
        // Rabenseifner and the ring all-reduce: 2 (n − 1)/n × bytes per rank.
        let m = n as u64 * b;
        every(&run(&schedules(n, |r, v| rabenseifner_allreduce(r, n, m, 8, v))), 2 * (n as u64 - 1) * b, "rabenseifner");
        every(&run(&schedules(n, |r, v| ring_allreduce(r, n, m, 8, v))), 2 * (n as u64 - 1) * b, "ring");
        // Recursive doubling all-reduce: log2 n exchanges of the whole buffer.
        every(&run(&schedules(n, |r, v| allreduce(r, n, m, v))), n.ilog2() as u64 * m, "rdb");
        // All-gathers and all-to-alls: (n − 1) blocks per rank; Bruck's
        // all-to-all n/2 blocks in each of log2 n rounds.
        for (what, s) in [
            ("ring allgather", schedules(n, |r, v| ring_allgather(r, n, |_| b, v))),
            ("rdb allgather", schedules(n, |r, v| rdb_allgather(r, n, |_| b, v))),
            ("bruck allgather", schedules(n, |r, v| bruck_allgather(r, n, |_| b, v))),
            ("neighbor allgather", schedules(n, |r, v| neighbor_allgather(r, n, b, v))),
            ("pairwise", schedules(n, |r, v| pairwise(r, n, |_| b, v))),
            ("linear alltoall", schedules(n, |r, v| linear_alltoall(r, n, |_| b, v))),
            ("recursive halving", schedules(n, |r, v| recursive_halving_reduce_scatter(r, n, &vec![b; n as usize], v))),
            ("ring reduce-scatter", schedules(n, |r, v| ring_reduce_scatter(r, n, |_| b, v))),
        ] {
            every(&run(&s), (n as u64 - 1) * b, what);
        }
        let bruck = run(&schedules(n, |r, v| bruck_alltoall(r, n, b, v)));
        every(&bruck, n as u64 / 2 * n.ilog2() as u64 * b, "bruck alltoall");
        // Rooted trees: n − 1 messages; gathers bring (n − 1) blocks to the root.
        let t = run(&schedules(n, |r, v| bcast(r, n, 1, b, v)));
        assert_eq!((t.messages, t.sent.iter().sum::<u64>()), (n as usize - 1, (n as u64 - 1) * b));
        let k = run(&schedules(n, |r, v| knomial_bcast(r, n, 1, 4, b, v)));
        assert_eq!(k.messages, n as usize - 1);
        let g = run(&schedules(n, |r, v| binomial_gather(r, n, 1, b, v)));
        assert_eq!((g.messages, g.received[1]), (n as usize - 1, (n as u64 - 1) * b));
        let s = run(&schedules(n, |r, v| binomial_scatter(r, n, 1, b, v)));
        assert_eq!(s.sent[1], (n as u64 - 1) * b);
        // A chain of 100-byte segments: (n − 1) × ⌈bytes / 100⌉ messages.
        let c = run(&schedules(n, |r, v| chain_bcast(r, n, 0, b, 100, v)));
        assert_eq!(c.messages, (n as usize - 1) * 11);
        // van de Geijn: the root scatters (n − 1)/n of the message, then
        // every rank passes n − 1 chunks on.
        let vg = run(&schedules(n, |r, v| scatter_allgather_bcast(r, n, 0, m, true, v)));
        assert_eq!(vg.sent[0], (n as u64 - 1) * b + (n as u64 - 1) * b);
        // Rabenseifner's reduce: the root receives (n − 1)/n of the message
        // in the reduce-scatter and as much again in the gather.
        let rr = run(&schedules(n, |r, v| rabenseifner_reduce(r, n, 0, m, 8, v)));
        assert_eq!(rr.received[0], 2 * (n as u64 - 1) * b, "rabenseifner reduce n = {n}");
        // Segmented trees and chains: (n − 1) edges × segments.
        for (what, s) in [
            ("binary bcast", schedules(n, |r, v| binary_bcast(r, n, 0, b, 100, v))),
            ("binary reduce", schedules(n, |r, v| binary_reduce(r, n, 0, b, 100, v))),
            ("chain reduce", schedules(n, |r, v| chain_reduce(r, n, 0, b, 100, v))),
        ] {
            assert_eq!(run(&s).messages, (n as usize - 1) * 11, "{what} n = {n}");
        }
        // Recursive-doubling scan: log2 n exchanges of the whole buffer.
        every(&run(&schedules(n, |r, v| rdb_scan(r, n, b, v))), n.ilog2() as u64 * b, "rdb scan");
        // OpenMPI's segmented ring in 2 phases moves what the ring moves.
        let mut seg = CollAlgs::mpich();
        seg.set("allreduce", &format!("segmented_ring:{}", b / 2)).unwrap();
        let call = CollCall { coll: Coll::Allreduce, root: 0, bytes: m, sizes: &[], vector: false };
        let sr = run(&schedules(n, |r, v| schedule(&seg, &call, r, n, v)));
        every(&sr, 2 * (n as u64 - 1) * b, "segmented ring");
        assert_eq!(sr.messages, n as usize * (n as usize - 1) * 3, "segmented ring n = {n}");
        // Barriers: ⌈log2 n⌉ rounds of 0 bytes.
        let d = schedules(n, |r, v| barrier(r, n, v));
        assert!(d.iter().all(|x| rounds(x) == n.ilog2() as usize && x.iter().all(|s| s.bytes == 0)));
        let rd = schedules(n, |r, v| recursive_doubling_barrier(r, n, v));
        assert!(rd.iter().all(|x| rounds(x) == n.ilog2() as usize));
    }
}

#[test]
fn binomial_bcast_from_root_0_on_8_ranks() {
    let mut v = Vec::new();
    bcast(0, 8, 0, 4, &mut v);
    assert_eq!(v.iter().map(|s| (s.peer, s.send)).collect::<Vec<_>>(), [(4, true), (2, true), (1, true)]);
    v.clear();
    bcast(6, 8, 0, 4, &mut v);
    assert_eq!(v.iter().map(|s| (s.peer, s.send)).collect::<Vec<_>>(), [(4, false), (7, true)]);
}

#[test]
fn ompi_selector_follows_openmpi_4_1_decision_fixed() {
    let o = CollAlgs::preset("ompi").unwrap();
    let sg = CollAlgs::preset("simgrid-ompi").unwrap();
    use Alg::*;
    // (collective, ranks, size measure) → OpenMPI 4.1's choice; SimGrid's.
    for (coll, n, bytes, want, want_sg) in [
        (Coll::Allreduce, 4, 8, Ring, Lr),
        (Coll::Allreduce, 4, 8192, Rabenseifner, Rabenseifner),
        (Coll::Allreduce, 8, 100, RecursiveDoubling, RecursiveDoubling),
        (Coll::Allreduce, 16, 8, SegmentedRing { seg: 0, simgrid: false }, SegmentedRing { seg: 1 << 20, simgrid: true }),
        (Coll::Allreduce, 16, 4096, Rabenseifner, Rabenseifner),
        (Coll::Allreduce, 300, 1000, Nonoverlapping, Nonoverlapping),
        (Coll::Allreduce, 2, 300_000, Rabenseifner, Rabenseifner),
        (Coll::Barrier, 2, 0, RecursiveDoubling, RecursiveDoubling),
        (Coll::Barrier, 4, 0, Linear, Linear),
        (Coll::Barrier, 16, 0, RecursiveDoubling, RecursiveDoubling),
        (Coll::Barrier, 100, 0, Dissemination, Dissemination),
        (Coll::Barrier, 300, 0, Tree, Tree),
        (Coll::Bcast, 4, 16, BinaryTree { seg: 0 }, BinaryTree { seg: 8192 }),
        (Coll::Bcast, 2, 1000, Knomial, Knomial),
        (Coll::Bcast, 20, 2 << 20, ScatterAllgather, ScatterAllgather),
        (Coll::Bcast, 6, 2 << 20, Pipeline { seg: 0 }, Pipeline { seg: 128 * 1024 }),
        (Coll::Reduce, 4, 100, BinaryTree { seg: 0 }, BinaryTree { seg: 0 }),
        (Coll::Reduce, 2, 4, Rabenseifner, Linear),
        (Coll::Alltoall, 16, 100, Bruck, Bruck),
        (Coll::Alltoall, 2, 2, Pairwise, Linear),
        (Coll::Alltoall, 100, 100_000, Linear, Linear),
        (Coll::ReduceScatter, 64, 100_000, RecursiveHalving, Ring),
        (Coll::Allgather, 40, 2000, Neighbor, Neighbor),
        (Coll::Gather, 4, 100, Binomial, Binomial),
        (Coll::Scatter, 2, 100, Linear, Linear),
    ] {
        assert_eq!(o.pick(coll, n, bytes, bytes / 8), want, "ompi {} n = {n} bytes = {bytes}", coll.name());
        assert_eq!(sg.pick(coll, n, bytes, bytes / 8), want_sg, "simgrid-ompi {} n = {n} bytes = {bytes}", coll.name());
    }
}

#[test]
fn mpich_selector_follows_the_default_cvars() {
    let m = CollAlgs::preset("mpich").unwrap();
    use Alg::*;
    for (coll, n, bytes, want) in [
        (Coll::Bcast, 16, 100_000, ScatterAllgather),
        (Coll::Bcast, 12, 100_000, ScatterRingAllgather),
        (Coll::Bcast, 4, 100_000, Binomial),
        (Coll::Bcast, 16, 12287, Binomial),
        (Coll::Allreduce, 8, 2048, RecursiveDoubling),
        (Coll::Allreduce, 8, 4096, Rabenseifner),
        (Coll::Reduce, 8, 4096, Rabenseifner),
        (Coll::Alltoall, 8, 256, Bruck),
        (Coll::Alltoall, 8, 1000, Linear),
        (Coll::Alltoall, 8, 40_000, Pairwise),
        (Coll::Allgather, 8, 1000, RecursiveDoubling),
        (Coll::Allgather, 12, 1000, Bruck),
        (Coll::Allgather, 12, 10_000, Ring),
        (Coll::ReduceScatter, 12, 600_000, Pairwise),
        (Coll::Barrier, 5, 0, Dissemination),
    ] {
        assert_eq!(m.pick(coll, n, bytes, bytes / 8), want, "mpich {} n = {n} bytes = {bytes}", coll.name());
    }
}

#[test]
fn fallbacks_of_ring_and_lr_for_short_vectors() {
    // 8 bytes on 16 ranks: OpenMPI's segmented ring → ring → recursive
    // doubling; SimGrid's → lr → its default reduce + bcast.
    let call = CollCall { coll: Coll::Allreduce, root: 0, bytes: 8, sizes: &[], vector: false };
    let (o, sg) = (CollAlgs::preset("ompi").unwrap(), CollAlgs::preset("simgrid-ompi").unwrap());
    let rdb = schedules(16, |r, v| allreduce(r, 16, 8, v));
    let redbcast = schedules(16, |r, v| {
        linear_gather(r, 16, 0, 8, v);
        reducing(v, 0, 8);
        bcast(r, 16, 0, 8, v);
    });
    assert_eq!(schedules(16, |r, v| schedule(&o, &call, r, 16, v)), rdb);
    assert_eq!(schedules(16, |r, v| schedule(&sg, &call, r, 16, v)), redbcast);
}

#[test]
fn names_and_errors() {
    let mut c = CollAlgs::preset("mpich").unwrap();
    c.set("barrier", "ompi_basic_linear").unwrap();
    assert_eq!(c.get(Coll::Barrier), Some(Alg::Linear));
    c.set("bcast", "pipeline:65536").unwrap();
    assert_eq!(c.get(Coll::Bcast), Some(Alg::Pipeline { seg: 65536 }));
    let e = c.set("allreduce", "nope").unwrap_err();
    assert!(e.0.starts_with("unknown algorithm `nope` for allreduce (valid: rdb, recursive_doubling,"), "{e}");
    assert!(c.set("allgather", "rdb:12").unwrap_err().0.contains("takes no segment size"));
    assert!(c.set("allmighty", "rdb").unwrap_err().0.starts_with("unknown collective `allmighty` (valid: barrier, bcast,"));
    let e = CollAlgs::preset("openmpi").unwrap_err();
    assert_eq!(e, "unknown collective selector `openmpi` (valid: smpi (or default), mpich, ompi, simgrid-ompi)".into());
    assert_eq!(parse_alg(Coll::Allreduce, "ompi_ring_segmented:4096"), Ok(Alg::SegmentedRing { seg: 4096, simgrid: true }));
    assert_eq!(split_blocks(100, 3, 4), [32, 32, 36]);
    assert_eq!(segments(250, 100), [100, 100, 50]);
}

#[test]
fn reduction_steps_are_the_receives_whose_data_is_combined() {
    let reduced = |s: &[Step]| -> Vec<u64> { s.iter().filter(|x| x.reduce_bytes > 0).map(|x| x.reduce_bytes).collect() };
    let call = |coll, bytes, sizes: &'static [u64]| CollCall { coll, root: 0, bytes, sizes, vector: !sizes.is_empty() };
    // Ring all-reduce on 4 ranks, 4 blocks of 1024 B: the reduce-scatter's
    // 3 receives, none of the all-gather's.
    for (r, s) in forced(&call(Coll::Allreduce, 4096, &[]), "ring", 4).iter().enumerate() {
        assert_eq!(reduced(s), vec![1024; 3], "rank {r}");
        assert!(s[..6].iter().all(|x| x.send || x.reduce_bytes == 1024) && s[6..].iter().all(|x| x.reduce_bytes == 0));
    }
    // Uneven blocks (8, 8, 8, 32 B): rank r combines blocks r − 2, r − 3,
    // r − 4 (mod 4).
    let s = forced(&call(Coll::Allreduce, 8 * 7, &[]), "ring", 4);
    assert_eq!((reduced(&s[1]), reduced(&s[3])), (vec![32, 8, 8], vec![8, 8, 32]));
    // Recursive doubling on 3 ranks (MPICH's fold): rank 1 combines the
    // folded rank 0's data, then its partner's; rank 0 nothing.
    let s = forced(&call(Coll::Allreduce, 64, &[]), "rdb", 3);
    assert_eq!((reduced(&s[0]), reduced(&s[1]), reduced(&s[2])), (vec![], vec![64, 64], vec![64]));
    // Rabenseifner on 4 ranks: halving keeps 2 blocks, then 1; the
    // all-gather combines nothing.
    assert_eq!(reduced(&forced(&call(Coll::Allreduce, 4096, &[]), "rabenseifner", 4)[2]), vec![2048, 1024]);
    // Binomial reduce to 0 on 4 ranks: the root combines 2 children.
    let s = forced(&call(Coll::Reduce, 100, &[]), "binomial", 4);
    assert_eq!((reduced(&s[0]), reduced(&s[1]), reduced(&s[2])), (vec![100, 100], vec![], vec![100]));
    // A chain reduce combines every received segment.
    assert_eq!(reduced(&forced(&call(Coll::Reduce, 250, &[]), "chain:100", 3)[1]), vec![100, 100, 50]);
    // A linear reduce: the root combines each rank's data.
    assert_eq!(reduced(&forced(&call(Coll::Reduce, 8, &[]), "linear", 4)[0]), vec![8; 3]);
    // Reduce-scatter, pairwise: each receive is this rank's block.
    assert_eq!(reduced(&forced(&call(Coll::ReduceScatter, 0, &[8, 16, 24]), "pairwise", 3)[2]), vec![24, 24]);
    // Scans: linear chain, one step per rank after the first.
    let s = forced(&call(Coll::Scan, 32, &[]), "linear", 3);
    assert_eq!((reduced(&s[0]), reduced(&s[2])), (vec![], vec![32]));
    // Nothing to combine in a bcast, an all-gather or a tree barrier.
    for (c, alg) in [(Coll::Bcast, "binomial"), (Coll::Allgather, "ring"), (Coll::Barrier, "tree")] {
        assert!(forced(&call(c, 64, &[]), alg, 5).iter().all(|s| reduced(s).is_empty()), "{}", c.name());
    }
}

use super::fit::{fit_size, fit_time, Var};
use super::rules::{dims_2d, fit_members, fit_peer, Grid, Iter, MemberRule, PeerRule, PeerSeen};
use super::*;
use crate::trace::record::{ANY_SOURCE, PROC_NULL};

#[test]
fn dims_match_mpi_dims_create() {
    for (n, d) in
        [(1, (1, 1)), (2, (2, 1)), (4, (2, 2)), (8, (4, 2)), (12, (4, 3)), (16, (4, 4)), (32, (8, 4)), (7, (7, 1)), (1 << 20, (1024, 1024))]
    {
        assert_eq!(dims_2d(n), d, "{n}");
    }
}

#[test]
fn fits_recover_known_scaling_laws() {
    // Weak scaling: a constant, even with 1 % noise.
    let law = fit_time(&[(2, 1.00), (4, 1.01), (8, 0.995)]);
    assert_eq!(law.a, 0.0);
    assert!((law.eval(1024) - 1.0).abs() < 0.01);
    // Strong scaling without offset: 0.8 / N.
    let pts: Vec<(u32, f64)> = [2u32, 4, 8].iter().map(|&n| (n, 0.8 / n as f64)).collect();
    let law = fit_time(&pts);
    assert!((law.b - 1.0).abs() < 1e-9 && law.c == 0.0 && law.rel_rms < 1e-9, "{law:?}");
    assert!((law.eval(64) - 0.8 / 64.0).abs() < 1e-12);
    // Strong scaling with a serial part: 3·N^-1.5 + 0.2.
    let pts: Vec<(u32, f64)> = [2u32, 4, 8, 16].iter().map(|&n| (n, 3.0 * (n as f64).powf(-1.5) + 0.2)).collect();
    let law = fit_time(&pts);
    assert!((law.b - 1.5).abs() < 0.011 && (law.c - 0.2).abs() < 0.01, "{law:?}");
    assert!((law.eval(1024) - (3.0 * 1024f64.powf(-1.5) + 0.2)).abs() < 0.01);
}

#[test]
fn sizes_follow_the_rank_count_or_a_grid_side_exactly() {
    // A halo row of n/px doubles, px the smaller side of the 2-D grid.
    let pts: Vec<(u32, f64)> = [2u32, 4, 8].iter().map(|&n| (n, 8.0 * 1024.0 / dims_2d(n).1 as f64)).collect();
    let (law, exact) = fit_size(&pts);
    assert!(exact && law.var == Var::Dim1, "{law:?}");
    assert_eq!(law.eval(32).round(), 8.0 * 1024.0 / 4.0);
    let (law, exact) = fit_size(&[(2, 4096.0), (4, 2048.0), (8, 1024.0)]);
    assert!(exact && law.var == Var::Ranks && law.eval(64).round() == 128.0);
    let (law, exact) = fit_size(&[(2, 8.0), (4, 8.0)]);
    assert!(exact && law.eval(1 << 20) == 8.0);
}

fn seen(n: u32, r: u32, p: i32) -> PeerSeen {
    PeerSeen { n, r, p, members: (0..n).collect(), it: Iter::ONCE }
}

#[test]
fn ring_peers_wrap_and_halo_peers_stop_at_the_edges() {
    let next: Vec<PeerSeen> = [2u32, 4, 8].iter().flat_map(|&n| (0..n).map(move |r| seen(n, r, ((r + 1) % n) as i32))).collect();
    let rule = fit_peer(&next).unwrap();
    assert_eq!(rule, PeerRule::Periodic(1));
    assert_eq!(rule.eval(31, 32, &[]), 0);
    let right: Vec<PeerSeen> =
        [2u32, 4, 8].iter().flat_map(|&n| (0..n).map(move |r| seen(n, r, if r + 1 < n { (r + 1) as i32 } else { PROC_NULL }))).collect();
    assert_eq!(fit_peer(&right), Some(PeerRule::Offset(1)));
    let any: Vec<PeerSeen> = (0..4).map(|r| seen(4, r, ANY_SOURCE)).collect();
    assert_eq!(fit_peer(&any), Some(PeerRule::Fixed(ANY_SOURCE)));
    // A peer drawn at random follows no rule.
    let random = vec![seen(4, 0, 3), seen(4, 1, 0), seen(4, 2, 0), seen(8, 0, 5), seen(8, 1, 2)];
    assert_eq!(fit_peer(&random), None);
}

/// jacobi2d's neighbours: px = the smaller side, x = r mod px, up = r − px,
/// `MPI_PROC_NULL` off the grid.
fn jacobi_up(r: u32, n: u32) -> i32 {
    let px = dims_2d(n).1;
    if r >= px {
        (r - px) as i32
    } else {
        PROC_NULL
    }
}

fn jacobi_right(r: u32, n: u32) -> i32 {
    let px = dims_2d(n).1;
    if r % px + 1 < px {
        (r + 1) as i32
    } else {
        PROC_NULL
    }
}

#[test]
fn grid_peers_give_corners_edges_and_interior_their_neighbours() {
    for f in [jacobi_up as fn(u32, u32) -> i32, jacobi_right] {
        let obs: Vec<PeerSeen> = [2u32, 4, 8].iter().flat_map(|&n| (0..n).map(move |r| seen(n, r, f(r, n)))).collect();
        let rule = fit_peer(&obs).unwrap();
        assert!(matches!(rule, PeerRule::Grid { grid: Grid { narrow: true }, periodic: false, .. }), "{rule:?}");
        // At 16 ranks (4 x 4, never traced): corners, edges and interior.
        for r in 0..16 {
            assert_eq!(rule.eval(r, 16, &[]), f(r, 16), "rank {r}");
        }
        assert!((0..36).all(|r| rule.eval(r, 36, &[]) == f(r, 36)));
    }
}

#[test]
fn split_communicators_are_grid_rows_and_columns() {
    let row = |r: u32, n: u32| {
        let px = dims_2d(n).1;
        (r / px * px..r / px * px + px).collect::<Vec<u32>>()
    };
    let obs: Vec<(u32, u32, Vec<u32>)> = [2u32, 4, 8].iter().flat_map(|&n| (0..n).map(move |r| (n, r, row(r, n)))).collect();
    let rule = fit_members(&obs).unwrap();
    assert_eq!(rule, MemberRule::Row(Grid { narrow: true }));
    assert_eq!(rule.eval(5, 16), row(5, 16));
    let col: Vec<(u32, u32, Vec<u32>)> =
        [4u32, 8].iter().flat_map(|&n| (0..n).map(move |r| (n, r, (r % 2..n).step_by(2).collect()))).collect();
    assert_eq!(fit_members(&col), Some(MemberRule::Column(Grid { narrow: true })));
}

fn rec(op: Op, params: Params, cpu_ns: u64) -> CallRecord {
    CallRecord {
        op,
        failed: false,
        caller: 0,
        compute_cpu_ns: cpu_ns,
        compute_wall_ns: cpu_ns,
        counters: None,
        t_start_ns: 0,
        t_end_ns: 0,
        params,
    }
}

fn site(offset: u64) -> CallSite {
    CallSite { module: "prog".into(), offset }
}

/// A sample of `n` ranks where rank 0 sends first and the others receive
/// first (ring.c), with compute blocks of `work / n` seconds.
fn ring_sample(n: u32, work: f64) -> Sample {
    let header = |r| RankHeader {
        rank: r,
        ranks: n,
        host: "h".into(),
        pid: 1,
        timing_source: trace::TimingSource::ClockGettime,
        tsc_hz: None,
        epoch_unix_s: 0.0,
    };
    let ranks = (0..n)
        .map(|r| {
            let block = (work / n as f64 * 1e9) as u64;
            let send =
                (rec(Op::Send, Params::P2p { peer: ((r + 1) % n) as i32, tag: 0, bytes: 64, comm: 0, request: 0 }, block), site(0x10));
            let recv =
                (rec(Op::Recv, Params::P2p { peer: ((r + n - 1) % n) as i32, tag: 0, bytes: 64, comm: 0, request: 0 }, 0), site(0x20));
            let mut recs = vec![(rec(Op::Init, Params::None, 0), site(0x1))];
            recs.extend(if r == 0 { [send, recv] } else { [recv, send] });
            recs.push((rec(Op::Finalize, Params::None, 0), site(0x30)));
            (header(r), Vec::new(), recs)
        })
        .collect();
    let meta = TraceMeta {
        format_version: 4,
        ranks: n,
        mpi_library: "test".into(),
        timing_source: trace::TimingSource::ClockGettime,
        tsc_hz: None,
        command: vec![],
        mode: "trace".into(),
    };
    Sample { dir: PathBuf::new(), meta, ranks }
}

#[test]
fn rank_classes_name_the_first_rank_and_the_rest() {
    let model = Model::build(vec![ring_sample(4, 0.4), ring_sample(2, 0.4), ring_sample(8, 0.4)]).unwrap();
    let rules: Vec<ClassRule> = model.classes.iter().map(|c| c.rule).collect();
    assert_eq!(rules, [ClassRule::Rank(0), ClassRule::Rest]);
    let n = 64;
    for r in [0, 1, 33, 63] {
        let recs: Vec<CallRecord> = model.records(r, n).collect();
        let ops: Vec<Op> = recs.iter().map(|c| c.op).collect();
        let sends_first = r == 0;
        assert_eq!(ops[1], if sends_first { Op::Send } else { Op::Recv }, "rank {r}");
        for c in &recs {
            if let Params::P2p { peer, .. } = c.params {
                let want = if c.op == Op::Send { (r + 1) % n } else { (r + n - 1) % n };
                assert_eq!(peer, want as i32, "rank {r} {:?}", c.op);
            }
        }
        // Strong scaling: the send's block is 0.4 s / N.
        let send = recs.iter().find(|c| c.op == Op::Send).unwrap();
        assert!((send.compute_cpu_ns as f64 * 1e-9 - 0.4 / n as f64).abs() < 1e-6, "{}", send.compute_cpu_ns);
    }
}

#[test]
fn behaviours_no_rank_rule_separates_are_refused_with_their_call_site() {
    // Odd ranks send first: neither first, last nor "the rest".
    let mut samples = Vec::new();
    for n in [4u32, 8] {
        let mut s = ring_sample(n, 0.1);
        for r in (1..n).step_by(2) {
            let recs = &mut s.ranks[r as usize].2;
            recs.swap(1, 2);
        }
        samples.push(s);
    }
    let err = Model::build(samples).unwrap_err().to_string();
    assert!(err.contains("cannot extrapolate") && err.contains("prog+0x"), "{err}");
    let one = Model::build(vec![ring_sample(4, 0.1)]).unwrap_err().to_string();
    assert!(one.contains("two or more different rank counts"), "{one}");
}

#[test]
fn dims_3d_match_mpi_dims_create() {
    for (n, d) in [(1, [1, 1, 1]), (2, [2, 1, 1]), (4, [2, 2, 1]), (8, [2, 2, 2]), (12, [3, 2, 2]), (16, [4, 2, 2]), (32, [4, 4, 2])] {
        assert_eq!(super::rules::dims_3d(n), d, "{n}");
    }
    assert_eq!(super::rules::dims_3d(36), [4, 3, 3]);
    assert_eq!(super::rules::dims_3d(1 << 20), [128, 128, 64]);
}

/// halo3d's neighbour along side `axis` in direction `dir` on the periodic
/// grid of `MPI_Dims_create(n, 3)` (ranks row-major, last side fastest).
fn halo3d_peer(r: u32, n: u32, axis: usize, dir: i64) -> i32 {
    let d = super::rules::dims_3d(n).map(i64::from);
    let r = r as i64;
    let mut c = [r / (d[1] * d[2]), r / d[2] % d[1], r % d[2]];
    c[axis] = (c[axis] + dir).rem_euclid(d[axis]);
    ((c[0] * d[1] + c[1]) * d[2] + c[2]) as i32
}

#[test]
fn periodic_3d_grid_peers_extrapolate_from_small_runs() {
    let fit = |counts: &[u32], axis: usize, dir: i64| {
        let obs: Vec<PeerSeen> = counts.iter().flat_map(|&n| (0..n).map(move |r| seen(n, r, halo3d_peer(r, n, axis, dir)))).collect();
        fit_peer(&obs).unwrap_or_else(|| panic!("no rule for axis {axis} dir {dir}"))
    };
    for axis in 0..3 {
        // Counts whose sides tell a step from its opposite: the exact rule.
        for dir in [-1, 1] {
            let rule = fit(&[2, 4, 8, 12, 18, 27], axis, dir);
            for n in [32u32, 64, 96, 4096] {
                assert!((0..n).all(|r| rule.eval(r, n, &[]) == halo3d_peer(r, n, axis, dir)), "{rule:?} at {n}");
            }
        }
        // At 2, 4 and 8 ranks no side is longer than 2, so −1 and +1 look
        // alike: refused, naming the side.
        let obs: Vec<PeerSeen> = [2u32, 4, 8].iter().flat_map(|&n| (0..n).map(move |r| seen(n, r, halo3d_peer(r, n, axis, 1)))).collect();
        let rule = fit_peer(&obs).unwrap();
        let why = super::rules::undetermined(&rule, &obs).unwrap_or_else(|| panic!("{rule:?} taken as known"));
        assert!(why.contains(&format!("side {axis}")), "{why}");
    }
    // Off the edges of a non-periodic 3-D grid: MPI_PROC_NULL.
    let rule = PeerRule::Grid3 { step: [0, 0, 1], periodic: false };
    assert_eq!(rule.eval(1, 8, &[]), PROC_NULL);
    assert_eq!(rule.eval(0, 8, &[]), 1);
}

#[test]
fn runs_of_one_count_merge_at_the_median_of_their_blocks() {
    // Three runs at 4 ranks, one hit by a detour that made every block 10
    // times longer: the model's law is that of the two quiet runs, 0.4 s / N.
    let mut slow = ring_sample(4, 4.0);
    slow.dir = PathBuf::from("slow");
    let runs = vec![ring_sample(2, 0.4), ring_sample(4, 0.4), slow, ring_sample(4, 0.4), ring_sample(8, 0.4)];
    let model = Model::build(runs).unwrap();
    assert_eq!(model.sample_ranks, [2, 4, 8]);
    let law = &model.classes.iter().find(|c| c.rule == ClassRule::Rest).unwrap().laws;
    let send = law.iter().find(|l| l.points.iter().any(|p| p.1 > 0.0)).unwrap();
    assert_eq!(send.blocks, 1);
    assert!((send.points[1].1 - 0.1).abs() < 1e-9 && (send.law.b - 1.0).abs() < 1e-6, "{send:?}");
    // Runs of one count that call differently are refused, naming both.
    let mut other = ring_sample(4, 0.4);
    other.dir = PathBuf::from("other");
    other.ranks[1].2.swap(1, 2);
    let err = Model::build(vec![ring_sample(2, 0.4), ring_sample(4, 0.4), other]).unwrap_err().to_string();
    assert!(err.contains("other") && err.contains("rank 1") && err.contains("at 4 ranks"), "{err}");
    // Runs of one count alone make no model.
    let one = Model::build(vec![ring_sample(4, 0.1), ring_sample(4, 0.1)]).unwrap_err().to_string();
    assert!(one.contains("two or more different rank counts"), "{one}");
}

#[test]
fn compute_laws_follow_a_grid_side_when_the_work_is_over_rows() {
    // A halo packed row by row: rows = 2048 / the larger side of the grid,
    // which is 2 at both 2 and 4 ranks; no power of N gives that step.
    let rows = |n: u32| 2048.0 / dims_2d(n).0 as f64 * 1e-7;
    let law = fit_time(&[2u32, 4, 8].map(|n| (n, rows(n))));
    assert_eq!((law.var, law.b), (Var::Dim0, 1.0), "{law:?}");
    for n in [16, 32, 64, 1 << 20] {
        assert!((law.eval(n) / rows(n) - 1.0).abs() < 1e-9, "{n}: {law:?}");
    }
    // A law in N with a few percent of noise keeps N.
    let law = fit_time(&[(2, 0.5 * 1.03), (4, 0.25 * 0.97), (8, 0.125 * 1.02)]);
    assert_eq!(law.var, Var::Ranks, "{law:?}");
}

#[test]
fn strong_scaling_falls_at_most_as_one_over_n() {
    // Superlinear at small counts (the working set entering a cache):
    // N^-1.3 from 2, 4 and 8 ranks extrapolates as 1/N from there.
    let pts = [2u32, 4, 8].map(|n| (n, (n as f64).powf(-1.3)));
    let law = fit_time(&pts);
    assert_eq!((law.var, law.b, law.c), (Var::Ranks, 1.0, 0.0), "{law:?}");
    assert!((law.eval(32) / law.eval(8) - 0.25).abs() < 1e-12);
    assert!(law.rel_rms > 0.01, "the cap shows in the residual: {law:?}");
    // Below 1 the exponent is the fitted one.
    let law = fit_time(&[2u32, 4, 8].map(|n| (n, (n as f64).powf(-0.6))));
    assert!((law.b - 0.6).abs() < 1e-9 && law.rel_rms < 1e-9, "{law:?}");
}

/// A sample of `n` ranks that post five receives from the left and five
/// sends to the right (ten requests, more than a rank holds inline),
/// wait for all, then all-reduce 8 bytes; compute blocks differ by rank.
fn halo_sample(n: u32) -> Sample {
    let mut s = ring_sample(n, 0.1);
    for (r, rank) in s.ranks.iter_mut().enumerate() {
        let r = r as u32;
        let p2p = |op, peer: u32, k: u64| {
            let params = Params::P2p { peer: peer as i32, tag: k as i32, bytes: 800, comm: 0, request: 0x100 * (k + 1) + op as u64 % 2 };
            rec(op, params, 1000 + 37 * r as u64 + 11 * k)
        };
        let mut recs = vec![(rec(Op::Init, Params::None, 0), site(0x1))];
        let mut reqs = Vec::new();
        for k in 0..5 {
            let recv = p2p(Op::Irecv, (r + n - 1) % n, k);
            let send = p2p(Op::Isend, (r + 1) % n, k);
            for (i, x) in [recv, send].into_iter().enumerate() {
                if let Params::P2p { request, .. } = x.params {
                    reqs.push(request);
                }
                recs.push((x, site(0x100 + 0x10 * k + i as u64)));
            }
        }
        recs.push((rec(Op::Waitall, Params::Waitall { requests: reqs }, 50), site(0x200)));
        recs.push((rec(Op::Allreduce, Params::Coll { root: -1, bytes: 8, comm: 0 }, 2000 + 13 * r as u64), site(0x210)));
        recs.push((rec(Op::Finalize, Params::None, 0), site(0x220)));
        rank.2 = recs;
    }
    s
}

/// 8 hosts of 4 cores; transfers 2 µs + bytes / 1 GB/s, eager below 512 B.
fn eight_hosts() -> crate::platform::Platform {
    use crate::network::{P2pModel, Piecewise, Segment};
    use crate::platform::{Host, Platform};
    let pw =
        |intercept_s, bandwidth_bytes_per_s| Piecewise { segments: vec![Segment { max_bytes: None, intercept_s, bandwidth_bytes_per_s }] };
    let m = P2pModel {
        eager_threshold_bytes: 512,
        transfer: pw(2e-6, 1e9),
        send_overhead: pw(1e-7, 1e10),
        recv_overhead: pw(2e-7, 1e10),
        rma: None,
    };
    Platform::new("test", (0..8).map(|h| Host::new(format!("n{h}"), 4)).collect(), m)
}

/// The streams generated on the fly and the same run written as an
/// ordinary trace directory replay to the same report.
#[test]
fn generated_streams_replay_as_their_written_trace() {
    use crate::trace::ComputeTime;
    let model = Model::build(vec![halo_sample(2), halo_sample(4), halo_sample(8)]).unwrap();
    let platform = eight_hosts();
    let dir = tempfile::tempdir().unwrap();
    for n in [8, 32] {
        let generated = crate::replay::replay(&platform, model.streams(n)).unwrap();
        let out = dir.path().join(format!("x{n}"));
        model.write_dir(n, &out).unwrap();
        let written = crate::replay::replay(&platform, crate::replay::open_trace_dir(&out, ComputeTime::Cpu).unwrap()).unwrap();
        assert!(generated.makespan_s > 0.0 && generated.actions == written.actions, "{n} ranks");
        assert_eq!(generated.makespan_s.to_bits(), written.makespan_s.to_bits(), "{n} ranks: makespan");
        for (a, b) in generated.ranks.iter().zip(&written.ranks) {
            assert_eq!(
                (a.end_s.to_bits(), a.comm_s.to_bits(), a.messages),
                (b.end_s.to_bits(), b.comm_s.to_bits(), b.messages),
                "{n} ranks"
            );
        }
    }
}

#[test]
fn order_free_models_replay_as_the_event_order_and_wildcards_are_not() {
    use crate::replay::Replay;
    let model = Model::build(vec![halo_sample(2), halo_sample(4), halo_sample(8)]).unwrap();
    assert!(model.order_free());
    let platform = eight_hosts();
    for n in [8, 32, 100] {
        let events = Replay::new(&platform).run(model.streams(n)).unwrap();
        let ahead = Replay::new(&platform).order_free(true).run(model.streams(n)).unwrap();
        // 100 ranks oversubscribe the 32 cores: their shared cores keep the event order.
        let fewer = if n <= 32 { ahead.events < events.events } else { ahead.events == events.events };
        assert!(fewer, "{n} ranks: {} events against {}", ahead.events, events.events);
        assert_eq!(ahead.makespan_s.to_bits(), events.makespan_s.to_bits(), "{n} ranks");
        for (a, b) in ahead.ranks.iter().zip(&events.ranks) {
            let bits = |k: &crate::replay::RankReport| {
                (k.end_s.to_bits(), k.compute_s.to_bits(), k.comm_s.to_bits(), k.wait_s.to_bits(), k.messages)
            };
            assert_eq!(bits(a), bits(b), "{n} ranks");
        }
    }
    // A receive from MPI_ANY_SOURCE takes whichever message came first.
    let wild = |n: u32| {
        let mut s = ring_sample(n, 0.1);
        for (_, _, recs) in &mut s.ranks {
            for (rec, _) in recs.iter_mut().filter(|(r, _)| r.op == Op::Recv) {
                if let Params::P2p { peer, .. } = &mut rec.params {
                    *peer = crate::trace::record::ANY_SOURCE;
                }
            }
        }
        s
    };
    let model = Model::build(vec![wild(2), wild(4)]).unwrap();
    assert!(!model.order_free());
    assert!(Model::build(vec![ring_sample(2, 0.1), ring_sample(4, 0.1)]).unwrap().order_free());
}

#[test]
fn the_cloned_template_repeats_the_traced_blocks_and_the_band_holds_the_prediction() {
    let mut big = ring_sample(8, 0.4);
    for (r, rank) in big.ranks.iter_mut().enumerate() {
        for (rec, _) in rank.2.iter_mut().filter(|(c, _)| c.compute_cpu_ns > 0) {
            rec.compute_cpu_ns = (rec.compute_cpu_ns as f64 * (1.0 + r as f64 / 10.0)) as u64;
            rec.compute_wall_ns = rec.compute_cpu_ns;
        }
    }
    let traced: Vec<Vec<u64>> = big.ranks.iter().map(|r| r.2.iter().map(|(c, _)| c.compute_cpu_ns).collect()).collect();
    let model = Model::build(vec![ring_sample(2, 0.4), ring_sample(4, 0.4), big]).unwrap();
    let clone = |r: u32, n: u32| model.records_as(r, n, super::Variant::CLONE_TEMPLATE).map(|c| c.compute_cpu_ns).collect::<Vec<u64>>();
    for r in 0..8 {
        assert_eq!(clone(r, 8), traced[r as usize], "rank {r}");
    }
    // Rank r of a larger run copies traced rank 1 + (r mod 7)'s blocks
    // (rank 0 is a class of its own), all scaled by one law's factor.
    let ratio = |r: u32| {
        let (b, t) = (clone(r, 24), &traced[1 + r as usize % 7]);
        b.iter().zip(t).filter(|(_, t)| **t > 0).map(|(b, t)| *b as f64 / *t as f64).sum::<f64>()
    };
    let f = ratio(8);
    assert!(f > 0.1 && f < 1.0, "{f}");
    assert!((9..24).all(|r| (ratio(r) / f - 1.0).abs() < 1e-6), "{:?}", (8..24).map(ratio).collect::<Vec<_>>());
    let v = super::band_variants(4, false);
    assert_eq!(v[0], super::Variant::PREDICTION);
    assert_eq!(v.len(), 6);
    assert!(v[1..4].iter().all(|x| x.sigma == 0.0 && x.draw.is_some() && x.draw != v[0].draw));
    assert_eq!((v[4].sigma, v[5].sigma), (-1.0, 1.0));
    assert_eq!(
        super::band_variants(4, true),
        [super::Variant::CLONE_TEMPLATE, super::Variant { sigma: -1.0, draw: None }, super::Variant { sigma: 1.0, draw: None }]
    );
    // Draws 1.0, 1.2, 0.9; the laws' edges 0.95 and 1.1 of the first.
    let (lo, hi) = super::band_of(&[1.0, 1.2, 0.9, 0.95, 1.1]);
    assert!((lo - 0.85).abs() < 1e-12 && (hi - 1.3).abs() < 1e-12, "{lo} {hi}");
}

/// A wavefront on the grid of `layout` at `n` ranks, as ssor_wavefront
/// and LULESH make it: per plane a receive from each low neighbour along
/// each side (a call site per side), a block, a send to each high
/// neighbour, skipping the neighbours a rank on the boundary lacks; an
/// all-reduce per sweep. Returns the sample and each rank's (op, peer)
/// calls.
fn wavefront(n: u32, layout: grid::Layout, planes: usize) -> (Sample, Vec<Vec<(Op, i32)>>) {
    let mut s = ring_sample(n, 0.1);
    let mut want = Vec::new();
    let sides: Vec<usize> = match layout {
        grid::Layout::Grid2(_) => vec![1, 2],
        grid::Layout::Grid3 => vec![0, 1, 2],
    };
    for (r, rank) in s.ranks.iter_mut().enumerate() {
        let r = r as u32;
        let mut recs = vec![(rec(Op::Init, Params::None, 0), site(0x1))];
        for _ in 0..planes {
            for (op, dir, base) in [(Op::Recv, -1, 0x100), (Op::Send, 1, 0x200)] {
                for &a in &sides {
                    let mut step = [0; 3];
                    step[a] = dir;
                    let peer = layout.neighbour(step).eval(r, n, &[]);
                    if peer != PROC_NULL {
                        let p = Params::P2p { peer, tag: a as i32, bytes: 400, comm: 0, request: 0 };
                        recs.push((rec(op, p, if op == Op::Send { 5000 } else { 50 }), site(base + a as u64)));
                    }
                }
            }
        }
        recs.push((rec(Op::Allreduce, Params::Coll { root: -1, bytes: 40, comm: 0 }, 100), site(0x300)));
        recs.push((rec(Op::Finalize, Params::None, 0), site(0x310)));
        want.push(
            recs.iter()
                .map(|(c, _)| match c.params {
                    Params::P2p { peer, .. } => (c.op, peer),
                    _ => (c.op, -1),
                })
                .collect(),
        );
        rank.2 = recs;
    }
    (s, want)
}

fn calls_of(model: &Model, r: u32, n: u32) -> Vec<(Op, i32)> {
    model
        .records(r, n)
        .map(|c| match c.params {
            Params::P2p { peer, .. } => (c.op, peer),
            _ => (c.op, -1),
        })
        .collect()
}

#[test]
fn grid_positions_class_boundary_ranks_and_make_the_untraced_interior() {
    let rows = grid::Layout::Grid2(Grid { narrow: true });
    // At 2, 4 and 8 ranks (2 × 1, 2 × 2, 4 × 2) no rank is interior along
    // the short side: ranks there are made from its first and last ranks.
    let model = Model::build([2, 4, 8].map(|n| wavefront(n, rows, 3).0).into()).unwrap();
    assert!(model.classes.iter().all(|c| matches!(c.rule, ClassRule::Position(p) if p.layout == rows)), "{:?}", model.classes[0].rule);
    for n in [16, 36, 64, 256] {
        model.covers(n).unwrap();
        let want = wavefront(n, rows, 3).1;
        for r in 0..n {
            assert_eq!(calls_of(&model, r, n), want[r as usize], "rank {r} of {n}");
        }
    }
    // A 3-D grid's 27 positions are all at 27 ranks (3 × 3 × 3).
    let model = Model::build([1, 8, 27].map(|n| wavefront(n, grid::Layout::Grid3, 2).0).into()).unwrap();
    assert_eq!(model.classes.len(), 1 + 8 + 19, "the lone rank, the corners, the rest at 27");
    for n in [64, 256] {
        let want = wavefront(n, grid::Layout::Grid3, 2).1;
        assert!((0..n).all(|r| calls_of(&model, r, n) == want[r as usize]), "{n} ranks");
    }
    // A side of 1 at the target where no traced count had one: no class.
    let err = model.covers(2).unwrap_err().to_string();
    assert!(err.contains("rank 0 is at (first, only, only)"), "{err}");
}

#[test]
fn an_interior_whose_call_order_the_corners_do_not_show_is_refused_naming_the_count() {
    // At 2, 4 and 8 ranks every rank of a 3-D grid is a corner: an
    // interior rank's send along one side and receive along the next
    // could come in either order.
    let err = Model::build([2, 4, 8].map(|n| wavefront(n, grid::Layout::Grid3, 2).0).into()).unwrap_err().to_string();
    assert!(err.contains("cannot extrapolate MPI_") && err.contains("prog+0x"), "{err}");
    assert!(err.contains("ranks, which has a rank there, would decide"), "{err}");
}

#[test]
fn a_short_periodic_sides_direction_is_taken_from_the_same_call_on_a_long_side() {
    // Powers of two up to 16: side 0 is 4 long at 16, sides 1 and 2 never
    // more than 2.
    let counts = [2u32, 4, 8, 16];
    let obs = |axis: usize, dir: i64| -> Vec<PeerSeen> {
        counts.iter().flat_map(|&n| (0..n).map(move |r| seen(n, r, halo3d_peer(r, n, axis, dir)))).collect()
    };
    for dir in [-1, 1] {
        let long = obs(0, dir);
        let rule = fit_peer(&long).unwrap();
        assert_eq!(super::rules::direction(&rule, &long), Some(dir), "{rule:?}");
        for axis in [1, 2] {
            let short = obs(axis, dir);
            let rule = fit_peer(&short).unwrap();
            assert!(super::rules::undetermined(&rule, &short).is_some(), "{rule:?}");
            assert_eq!(super::rules::direction(&rule, &short), None);
            let oriented = super::rules::oriented(&rule, &short, dir).unwrap();
            for n in [32u32, 64, 256] {
                assert!((0..n).all(|r| oriented.eval(r, n, &[]) == halo3d_peer(r, n, axis, dir)), "{oriented:?} at {n}");
            }
        }
    }
}

#[test]
fn butterfly_partners_follow_the_iteration_and_transposes_the_grid() {
    // Row sums by recursive halving: at iteration t of k = log2 of the
    // row's width, the rank of column col XOR (width >> (t + 1)).
    let mut halving = Vec::new();
    for n in [2u32, 4, 8] {
        let w = dims_2d(n).0;
        let k = w.trailing_zeros();
        for t in 0..k {
            for r in 0..n {
                let col = r % w;
                let p = (r - col + (col ^ (w >> (t + 1)))) as i32;
                halving.push(PeerSeen { n, r, p, members: (0..n).collect(), it: Iter { t, k } });
            }
        }
    }
    let rule = fit_peer(&halving).unwrap();
    assert_eq!(rule, PeerRule::XorHalving);
    // 64 ranks, 8 × 8: rank 9 (row 1, column 1) meets columns 5, 3, 0.
    assert_eq!([0, 1, 2].map(|t| rule.eval_at(9, 64, &[], Iter { t, k: 3 })), [13, 11, 8]);
    // The transpose exchange of a grid whose width is once or twice its height.
    let transpose = |r: u32, n: u32| {
        let (cols, rows) = dims_2d(n);
        let (q, b) = (cols / rows, r / (cols / rows));
        (q * ((b % rows) * rows + b / rows) + r % q) as i32
    };
    let seen: Vec<PeerSeen> = [2u32, 4, 8].iter().flat_map(|&n| (0..n).map(move |r| seen(n, r, transpose(r, n)))).collect();
    let rule = fit_peer(&seen).unwrap();
    assert_eq!(rule, PeerRule::Transpose);
    for n in [16, 32, 256] {
        assert!((0..n).all(|r| rule.eval(r, n, &[]) == transpose(r, n)), "{n}");
    }
    assert_eq!(rule.eval(1, 16, &[]), 4);
    assert_eq!(rule.eval(2, 32, &[]), 8);
    // No multiple: no transpose partner.
    assert_eq!(rule.eval(1, 12, &[]), PROC_NULL);
}

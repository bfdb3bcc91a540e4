//! Wider coverage: every call of `mpi_calls` and `mpi_more` counted with
//! its peers, bytes and members; sub-communicator collectives replayed on
//! their members; an overlapping program's trace replayed.

use super::*;

#[test]
fn wider_coverage_counts_and_sub_communicators() {
    let (dir, out) = traced(4, "mpi_calls", &["3"]);
    check_mpi_calls(dir.path(), &out);
}

/// The `calls <MPI_Name>=<n>` lines a c-test prints: its own count per rank.
pub(super) fn expected_calls(out: &Output) -> Vec<(String, usize)> {
    let expected: Vec<(String, usize)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("calls "))
        .map(|l| {
            let (name, n) = l.split_once('=').unwrap();
            (name.to_string(), n.parse().unwrap())
        })
        .collect();
    expected
}

/// Each rank's records of each call the program counted equal its count.
pub(super) fn check_counts(dir: &Path, out: &Output) -> Vec<RankTrace> {
    let expected = expected_calls(out);
    assert!(!expected.is_empty(), "no `calls` lines in {}", String::from_utf8_lossy(&out.stdout));
    let (_, ranks) = open_dir(dir).unwrap();
    for t in &ranks {
        let recs = records(t);
        for (name, n) in &expected {
            let got = recs.iter().filter(|r| r.op.mpi_name() == name).count();
            assert_eq!(got, *n, "rank {} {name}", t.header.rank);
        }
    }
    ranks
}

/// The `mpi_calls` program's own call counts equal the records of each
/// rank; sub-communicators carry their members; probes their message.
pub(super) fn check_mpi_calls(dir: &Path, out: &Output) {
    assert!(expected_calls(out).len() > 15);
    let ranks = check_counts(dir, out);
    for t in &ranks {
        let recs = records(t);
        let me = t.header.rank;
        let split: Vec<_> = recs.iter().filter(|r| r.op == Op::CommSplit).collect();
        let Params::CommCreate { parent, comm, members } = &split[0].params else { panic!("{:?}", split[0]) };
        assert_eq!((*parent, members.len()), (0, 2));
        assert!(members.iter().all(|m| m % 2 == me % 2) && members.contains(&me), "{members:?}");
        let on_half = recs.iter().filter(|r| matches!(r.params, Params::Coll { comm: c, .. } if c == *comm));
        assert!(on_half.count() >= 1, "no collective on the split communicator");
        for r in recs.iter().filter(|r| r.op == Op::Probe) {
            assert!(matches!(r.params, Params::Probe { found: true, bytes: 32, .. }), "{r:?}");
        }
    }
    // Every call converts to replay actions, MPI_Scatterv (once an error
    // for want of the root's sizes) included.
    for t in ranks {
        for a in simulator::action::TraceActions::new(t, Default::default()).unwrap() {
            if let Err(e) = a {
                panic!("{e}");
            }
        }
    }
}

/// `comm_split` traced under mpirun replays with its collectives among
/// the members of its row and column communicators and its ring on a
/// duplicate of WORLD: per iteration a rank sends 1 message for the row
/// all-reduce (2 ranks), 1 for the ring, 1 for the column barrier, and the
/// column's root 1 for the bcast; plus 2 × 2 for the two WORLD barriers.
/// On WORLD the all-reduce and barrier alone would take 2 messages each.
#[test]
fn comm_split_replays_sub_communicator_collectives_on_their_members() {
    let iters = 20u64;
    let (dir, out) = traced(4, "comm_split", &[&iters.to_string(), "100"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("grid=2x2"));
    let platform = dir.path().join("platform.toml");
    std::fs::write(
        &platform,
        "name = \"t\"\n[[hosts]]\nname = \"n\"\ncores = 4\n[network.intra]\neager_threshold_bytes = 4096\n\
         transfer = [ { intercept_s = 1e-3, bandwidth_bytes_per_s = 1e9 } ]\n",
    )
    .unwrap();
    let p = simulator::platform::Platform::load(&platform).unwrap();
    for selector in ["mpich", "ompi", "smpi"] {
        let mut x = p.clone();
        x.collectives.algs = simulator::collectives::CollAlgs::preset(selector).unwrap();
        let streams = simulator::replay::open_trace_dir(dir.path(), Default::default()).unwrap();
        let r = simulator::replay::replay(&x, streams).unwrap();
        let msgs: Vec<u64> = r.ranks.iter().map(|k| k.messages).collect();
        // WORLD barriers on 4 ranks: dissemination (mpich), linear (ompi, smpi).
        let world_barriers = if selector == "mpich" { [4; 4] } else { [6, 2, 2, 2] };
        let want: Vec<u64> = (0..4).map(|w| iters * (3 + u64::from(w < 2)) + world_barriers[w]).collect();
        assert_eq!(msgs, want, "{selector}");
    }
}

#[test]
fn more_coverage_counts_peers_bytes_and_members() {
    let (dir, io) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = io.path().join("io.dat");
    let out = mpirun(4, "mpi_more", &["2", file.to_str().unwrap()], &[("INTERPOSER_OUT", dir.path().to_str().unwrap())], true);
    check_mpi_more(dir.path(), &out, 4, 2);
}

/// The `calls@<rank> <MPI_Name>=<n>` lines of `mpi_more`: each rank's own counts.
pub(super) fn rank_calls(out: &Output) -> BTreeMap<u32, Vec<(String, usize)>> {
    let mut by_rank: BTreeMap<u32, Vec<(String, usize)>> = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.strip_prefix("calls@")) {
        let (rank, rest) = l.split_once(' ').unwrap();
        let (name, n) = rest.split_once('=').unwrap();
        by_rank.entry(rank.parse().unwrap()).or_default().push((name.to_string(), n.parse().unwrap()));
    }
    by_rank
}

/// `mpi_more`'s per-rank counts equal each rank's records (every wrapped
/// function it calls, 52 of them); persistent requests, matched probes,
/// new communicators and MPI-IO records carry the right peers, bytes,
/// members and byte offsets.
pub(super) fn check_mpi_more(dir: &Path, out: &Output, np: u32, iters: u64) {
    let expected = rank_calls(out);
    assert_eq!(expected.len(), np as usize, "{}", String::from_utf8_lossy(&out.stdout));
    let (_, ranks) = open_dir(dir).unwrap();
    for t in &ranks {
        let me = t.header.rank;
        let recs = records(t);
        let want = &expected[&me];
        assert_eq!(want.len(), 52);
        for (name, n) in want {
            let got = recs.iter().filter(|r| r.op.mpi_name() == name).count();
            assert_eq!(got, *n, "rank {me} {name}");
            assert!(*n > 0, "rank {me} never called {name}");
        }
        let peer = (me ^ 1) as i32;
        let of = |op| recs.iter().filter(move |r: &&CallRecord| r.op == op);
        // Persistent requests: Start and Startall name the init calls' requests.
        let init = |op| match of(op).next().unwrap().params {
            Params::P2p { peer: p, bytes: 32, request, .. } if p == peer && request != 0 => request,
            ref other => panic!("rank {me} {op:?}: {other:?}"),
        };
        let (send, recv) = (init(Op::SendInit), init(Op::RecvInit));
        let modes = [init(Op::SsendInit), init(Op::BsendInit), init(Op::RsendInit)];
        for r in of(Op::Startall) {
            assert_eq!(r.params, Params::Waitall { requests: vec![send, recv] });
        }
        for r in of(Op::Start) {
            assert!(matches!(r.params, Params::Request { request } if modes.contains(&request)), "{r:?}");
        }
        let freed: Vec<u64> = of(Op::RequestFree)
            .filter_map(|r| match r.params {
                Params::Request { request } => Some(request),
                _ => None,
            })
            .collect();
        assert!([send, recv].iter().chain(&modes).all(|r| freed.contains(r)), "{freed:?}");
        // Waitsome returns each of the 6 requests of an iteration once.
        let done: usize = of(Op::Waitsome)
            .map(|r| match &r.params {
                Params::RequestSome { requests, completed } => {
                    assert_eq!(requests.len(), 6);
                    completed.len()
                }
                p => panic!("{p:?}"),
            })
            .sum();
        assert_eq!(done as u64, 6 * iters, "rank {me}");
        // Mrecv receives the message its Mprobe matched.
        for (probe, mrecv) in of(Op::Mprobe).zip(of(Op::Mrecv)) {
            let Params::P2p { peer: p, tag: 15, bytes: 32, request: msg, .. } = probe.params else { panic!("{probe:?}") };
            assert_eq!(p, peer);
            assert_eq!(mrecv.params, Params::Mrecv { message: msg, bytes: 32, request: 0 });
        }
        let found: Vec<_> = of(Op::Improbe).filter(|r| matches!(r.params, Params::P2p { request, .. } if request != 0)).collect();
        assert_eq!(found.len() as u64, iters);
        assert!(matches!(found[0].params, Params::P2p { peer: p, tag: 16, bytes: 16, .. } if p == peer), "{:?}", found[0]);
        // Nonblocking collectives: bytes, roots as world ranks, a request.
        for r in of(Op::Iallreduce) {
            assert!(matches!(r.params, Params::Icoll { root: -1, bytes: 32, comm: 0, request } if request != 0), "{r:?}");
        }
        for r in of(Op::Ireduce) {
            assert!(matches!(r.params, Params::Icoll { root, bytes: 32, .. } if root == np as i32 - 1), "{r:?}");
        }
        // Communicators: members as world ranks.
        let members = |op| match &of(op).next().unwrap().params {
            Params::CommCreate { members, .. } => members.clone(),
            p => panic!("{op:?}: {p:?}"),
        };
        assert_eq!(members(Op::CartCreate), (0..np).collect::<Vec<_>>());
        let row: Vec<u32> = (0..np).filter(|r| r / (np / 2) == me / (np / 2)).collect();
        assert_eq!(members(Op::CartSub), row, "rank {me}");
        let same: Vec<u32> = (0..np).filter(|r| r % 2 == me % 2).collect();
        let other: Vec<u32> = (0..np).filter(|r| r % 2 != me % 2).collect();
        assert_eq!(members(Op::CommCreateGroup), same);
        let Params::Intercomm { comm: inter, local, remote, .. } = &of(Op::IntercommCreate).next().unwrap().params else {
            panic!("no intercommunicator")
        };
        assert_eq!((local, remote), (&same, &other), "rank {me}");
        // Point-to-point on the intercommunicator: the peer as a world rank.
        let on_inter = recs.iter().find(|r| matches!(r.params, Params::Sendrecv { comm, .. } if comm == *inter)).unwrap();
        assert!(matches!(on_inter.params, Params::Sendrecv { dst, src, .. } if dst == peer && src == peer), "{on_inter:?}");
        assert_eq!(members(Op::IntercommMerge).len(), np as usize);
        // MPI-IO: one file id; a view after a 64-byte header; rank r's
        // first explicit-offset block at doubles (0 * np + r) * 4, the
        // individual pointer at doubles 4000 * np + r * 4 after seek.
        let Params::IoInfo { file, comm: 0, .. } = of(Op::FileOpen).next().unwrap().params else { panic!("File_open") };
        assert!(recs.iter().filter(|r| r.op != Op::FileDelete).all(|r| !matches!(r.params, Params::Io { file: f, .. } if f != file)));
        assert!(matches!(of(Op::FileSetView).next().unwrap().params, Params::IoInfo { disp: 64, .. }));
        let io = |op| match of(op).next().unwrap().params {
            Params::Io { offset, bytes, .. } => (offset, bytes),
            ref p => panic!("{op:?}: {p:?}"),
        };
        let at = 64 + 8 * 4 * me as u64;
        let ptr = 64 + 8 * (4000 * np as u64 + 4 * me as u64);
        for op in [Op::FileWriteAt, Op::FileWriteAtAll, Op::FileIwriteAt, Op::FileReadAt, Op::FileReadAtAll, Op::FileIreadAt] {
            assert_eq!(io(op), (at, 32), "rank {me} {op:?}");
        }
        for op in [Op::FileWrite, Op::FileWriteAll, Op::FileIwrite, Op::FileRead, Op::FileReadAll, Op::FileIread] {
            assert_eq!(io(op), (ptr, 32), "rank {me} {op:?}");
        }
        assert_eq!(io(Op::FileSeek).0, ptr);
    }
    // The trace's MPI-IO summary agrees with the program's own call counts
    // (32-byte accesses, one file).
    let s = simulator::io::io_summary(&ranks).unwrap();
    let calls = |f: &dyn Fn(&str) -> bool| expected.values().flatten().filter(|(name, _)| f(name)).map(|(_, n)| *n as u64).sum::<u64>();
    let t = &s.total;
    let writes = calls(&|m| m.starts_with("MPI_File_") && m.contains("write"));
    let reads = calls(&|m| m.starts_with("MPI_File_") && m.contains("read"));
    assert_eq!((t.writes, t.reads), (writes, reads), "{t:?}");
    assert_eq!(t.collective, calls(&|m| m.starts_with("MPI_File_") && m.ends_with("_all")));
    assert_eq!(t.nonblocking, calls(&|m| m.starts_with("MPI_File_i")));
    assert_eq!((t.bytes_written, t.bytes_read, t.write_sizes[0], t.read_sizes[0]), (32 * writes, 32 * reads, writes, reads));
    assert_eq!(s.files.len(), 1, "{:?}", s.files);
    assert_eq!(s.files[0].ranks, np);
    assert!(s.sites.iter().all(|site| site.site.starts_with("mpi_more.c:")), "{:?}", s.sites);
}

/// Persistent requests, Iallreduce overlapped with compute, matched
/// probes, a cancel and Waitsome, traced and replayed: every call is
/// counted, and on a 4-core host with a fast network the makespan is the
/// ranks' compute (CPU time, 20 × 2 blocks of 3·10^5 flops, some ms) plus
/// little communication, and below the traced span (4 ranks spinning on
/// 2 cores).
#[test]
fn overlap_trace_replays_with_a_plausible_makespan() {
    let (dir, out) = traced(4, "overlap", &["20", "30"]);
    let ranks = check_counts(dir.path(), &out);
    let span_s =
        ranks.iter().map(|t| records(t).iter().find(|r| r.op == Op::Finalize).unwrap().t_start_ns as f64 * 1e-9).fold(0.0, f64::max);
    let platform = dir.path().join("platform.toml");
    std::fs::write(
        &platform,
        "name = \"local\"\n[[hosts]]\nname = \"node0\"\ncores = 4\n[network.intra]\neager_threshold_bytes = 4096\n\
         transfer = [ { intercept_s = 2e-6, bandwidth_bytes_per_s = 5e9 } ]\n",
    )
    .unwrap();
    let platform = simulator::platform::Platform::load(&platform).unwrap();
    let streams = simulator::replay::open_trace_dir(dir.path(), Default::default()).unwrap();
    let report = simulator::replay::replay(&platform, streams).unwrap();
    let compute = report.ranks.iter().map(|r| r.compute_s).fold(0.0, f64::max);
    println!("traced span {span_s:.4} s, replayed makespan {:.4} s, max compute {compute:.4} s", report.makespan_s);
    assert!(report.ranks.iter().all(|r| r.compute_s > 2e-3), "{report:?}");
    assert!(report.makespan_s >= compute && report.makespan_s < compute * 1.5 + 0.01, "{report:?}");
    assert!(report.makespan_s < span_s, "{report:?} vs {span_s} s");
}

/// The hints given at `MPI_File_open` and a strided view are recorded
/// (`iopattern` with a view of one 64 KiB block per rank in turn, and
/// `cb_nodes=1`, `cb_buffer_size=1 MiB`, `romio_ds_write=enable`), and
/// the replay on a file system applies them: the collective write of 32
/// blocks by 2 ranks moves each rank's 2 MiB.
#[test]
fn io_hints_and_strided_views_are_recorded_and_replayed() {
    use simulator::trace::record::hint;
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().to_str().unwrap();
    let (dir, out) = traced(2, "iopattern", &[scratch, "64", "32", "1", "1", "1", "1", "1"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("checked=2"), "{}", String::from_utf8_lossy(&out.stdout));
    let (_, ranks) = open_dir(dir.path()).unwrap();
    for t in &ranks {
        let me = u64::from(t.header.rank);
        let recs = records(t);
        let of = |op| recs.iter().find(|r: &&CallRecord| r.op == op).map(|r| r.params.clone());
        let Some(Params::IoInfo { hints, .. }) = of(Op::FileOpen) else { panic!("rank {me}: File_open") };
        assert_eq!(hints, vec![(hint::CB_NODES, 1), (hint::CB_BUFFER_SIZE, 1 << 20), (hint::DS_WRITE, hint::ENABLE)], "rank {me}");
        let Some(Params::IoInfo { disp, etype_bytes, view_bytes, view_extent, block_bytes, .. }) = of(Op::FileSetView) else {
            panic!("rank {me}: File_set_view")
        };
        assert_eq!((disp, etype_bytes, view_bytes, view_extent, block_bytes), (me * 65536, 1, 65536, 2 * 65536, 65536), "rank {me}");
        assert!(matches!(of(Op::FileWriteAtAll), Some(Params::Io { offset, bytes: 2097152, .. }) if offset == me * 65536));
    }
    let platform = tmp.path().join("fs.toml");
    std::fs::write(
        &platform,
        "name = \"io\"\n[[hosts]]\nname = \"n0\"\ncores = 2\n[network.intra]\neager_threshold_bytes = 4096\n\
         transfer = [ { intercept_s = 1e-6, bandwidth_bytes_per_s = 5e9 } ]\n\
         [[fs]]\nname = \"scratch\"\nservers = 2\nstripe_size_bytes = 1048576\nmetadata_latency_s = 1e-4\n\
         [fs.disk]\nlatency_s = 2e-4\nread_bytes_per_s = 4e8\nwrite_bytes_per_s = 2e8\n",
    )
    .unwrap();
    let p = simulator::platform::Platform::load(&platform).unwrap();
    let streams = simulator::replay::open_trace_dir(dir.path(), simulator::action::ComputeTime::Cpu).unwrap();
    let r = simulator::replay::replay(&p, streams).unwrap();
    let written: u64 = r.io_servers.iter().map(|s| s.bytes_written).sum();
    assert_eq!(written, 2 * 2097152, "{:?}", r.io_servers);
    assert!(r.ranks.iter().all(|k| k.io_s > 0.0), "{:?}", r.ranks);
}

//! Record-to-action conversion: region ids and `MPI_COMM_SELF`.

use super::*;
use crate::trace::{region_id, Module, RankHeader, RankWriter, TimingSource};

/// A call of `op` at `caller` with `params`, no compute block, no times.
fn call(op: Op, caller: u64, params: Params) -> CallRecord {
    CallRecord { caller, ..CallRecord::bare(op, params) }
}

#[test]
fn comm_self_is_introduced_once_as_a_communicator_of_the_rank_alone() {
    let barrier = call(Op::Barrier, 0x10, Params::Coll { root: -1, bytes: 0, comm: COMM_SELF });
    let mut c = RecordConverter::new(4).for_rank(3);
    let mut out = Vec::new();
    for r in [&barrier, &barrier] {
        c.convert(r, 0.0, 0).unwrap();
        while let Some(a) = c.pop() {
            out.push(a);
        }
    }
    let created = out.iter().filter(|a| matches!(a, Action::CommCreate { comm: COMM_SELF, members } if members == &[3])).count();
    assert_eq!((created, out.len()), (1, 3), "{out:?}");
    assert!(matches!(out[1], Action::Barrier { comm: COMM_SELF }), "{out:?}");
    // Without the rank (a converter of no rank), nothing is added.
    let mut c = RecordConverter::new(4);
    c.convert(&barrier, 0.0, 0).unwrap();
    assert!(matches!(c.pop(), Some(Action::Barrier { .. })) && c.pop().is_none());
}

/// Rank 0's file of a world of `ranks`, opened for writing in `dir`.
fn rank_zero(dir: &std::path::Path, ranks: u32) -> (std::path::PathBuf, RankWriter<std::fs::File>) {
    let path = dir.join("rank-0.trace");
    let header =
        RankHeader { rank: 0, ranks, host: "h".into(), pid: 1, timing_source: TimingSource::ClockGettime, tsc_hz: None, epoch_unix_s: 0.0 };
    let w = RankWriter::create(std::fs::File::create(&path).unwrap(), &header).unwrap();
    (path, w)
}

#[test]
fn region_ids_name_the_call_site_pair() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut w) = rank_zero(dir.path(), 1);
    let callers = [0x1010, 0x1020, 0x1010, 0x1020, 0x9999];
    for caller in callers {
        let rec = call(Op::Barrier, caller, Params::Coll { root: -1, bytes: 0, comm: 0 });
        w.push(&CallRecord { compute_cpu_ns: 5, compute_wall_ns: 7, ..rec }).unwrap();
    }
    w.finish(&[Module { path: "/bin/app".into(), start: 0x1000, end: 0x2000, file_offset: 0 }]).unwrap();
    let trace = RankTrace::open(&path).unwrap();
    // /bin/app is not a file here: sites keep their module+offset names.
    let site = |a| trace.call_site(a);
    let want = [
        region_key_id("init:app+0x10"),
        region_id(&site(0x1010), &site(0x1020)),
        region_id(&site(0x1020), &site(0x1010)),
        region_id(&site(0x1010), &site(0x1020)),
        region_id(&site(0x1020), &site(0x9999)),
    ];
    let got: Vec<u64> = TraceActions::new(trace.clone(), ComputeTime::Wall)
        .unwrap()
        .filter_map(|a| match a.unwrap() {
            Action::Compute { seconds, region } => {
                assert!((seconds - 7e-9).abs() < 1e-18, "{seconds}");
                Some(region)
            }
            _ => None,
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(want[1], want[3]);
    assert_ne!(want[1], want[2]);
}

#[test]
fn reduce_scatter_block_takes_the_communicator_size() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut w) = rank_zero(dir.path(), 4);
    let rsb = |comm| Params::Coll { root: -1, bytes: 16, comm };
    let params = [
        (Op::CommSplit, Params::CommCreate { parent: 0, comm: 1, members: vec![0, 2, 3] }),
        (Op::ReduceScatterBlock, rsb(1)),
        (Op::ReduceScatterBlock, rsb(0)),
        (Op::IreduceScatterBlock, Params::Icoll { root: -1, bytes: 16, comm: 1, request: 7 }),
        (Op::ReduceScatterBlock, rsb(9)),
    ];
    for (op, params) in params {
        w.push(&call(op, 0x1010, params)).unwrap();
    }
    w.finish(&[]).unwrap();
    let trace = RankTrace::open(&path).unwrap();
    let got: Vec<_> = TraceActions::new(trace, ComputeTime::Cpu)
        .unwrap()
        .filter(|a| !matches!(a, Ok(Action::Compute { .. })))
        .map(|a| a.map_err(|e| e.to_string()))
        .collect();
    assert_eq!(got[0], Ok(Action::CommCreate { comm: 1, members: vec![0, 2, 3] }));
    assert_eq!(got[1], Ok(Action::ReduceScatter { recv_bytes: vec![16; 3], comm: 1 }));
    assert_eq!(got[2], Ok(Action::ReduceScatter { recv_bytes: vec![16; 4], comm: 0 }));
    // The nonblocking form too.
    let coll = Box::new(Action::ReduceScatter { recv_bytes: vec![16; 3], comm: 1 });
    assert_eq!(got[3], Ok(Action::Icoll { req: 7, coll }));
    assert!(got[4].as_ref().unwrap_err().contains("MPI_Reduce_scatter_block"), "{:?}", got[4]);
}

#[test]
fn tests_that_complete_nothing_and_iprobes_are_polls() {
    let set = |result| Params::RequestSet { requests: vec![5, 6], result };
    let some = |completed| Params::RequestSome { requests: vec![5, 6], completed };
    let probe = |found| Params::Probe { peer: 1, tag: 0, bytes: 8, comm: 0, found };
    let cases = [
        (Op::Test, Params::Test { request: 5, completed: false }, Some(Action::Poll)),
        (Op::Test, Params::Test { request: 5, completed: true }, Some(Action::Wait { req: 5 })),
        (Op::Testany, set(-1), Some(Action::Poll)),
        (Op::Testany, set(1), Some(Action::Wait { req: 6 })),
        (Op::Waitany, set(-1), None),
        (Op::Testall, set(0), Some(Action::Poll)),
        (Op::Testall, set(1), Some(Action::Waitall { reqs: vec![5, 6] })),
        (Op::Testsome, some(vec![]), Some(Action::Poll)),
        (Op::Testsome, some(vec![1]), Some(Action::Waitall { reqs: vec![6] })),
        (Op::Waitsome, some(vec![]), None),
        (Op::Iprobe, probe(false), Some(Action::Poll)),
        (Op::Iprobe, probe(true), Some(Action::Poll)),
    ];
    for (op, params, want) in cases {
        let got = op_action(&call(op, 0x10, params.clone()));
        assert_eq!(got, Ok(want), "{op:?} {params:?}");
    }
}

/// Each side of an intercommunicator names its own group first and may
/// give it another id: both sides still create one member list, by which
/// the replay matches their point-to-point traffic.
#[test]
fn both_sides_of_an_intercommunicator_create_the_same_member_list() {
    let side = |comm: u32, local: Vec<u32>, remote: Vec<u32>| {
        let rec = CallRecord::bare(Op::IntercommCreate, Params::Intercomm { parent: 1, comm, local, remote });
        match op_action(&rec) {
            Ok(Some(Action::CommCreate { comm: c, members })) => (c, members),
            other => panic!("{other:?}"),
        }
    };
    let even = side(9, vec![0, 2], vec![1, 3]);
    let odd = side(5, vec![1, 3], vec![0, 2]);
    assert_eq!((even.0, odd.0), (9, 5), "each rank keeps its own id");
    assert_eq!(even.1, vec![0, 2, 1, 3]);
    assert_eq!(odd.1, even.1);
    // A failed creation creates nothing.
    let failed =
        CallRecord::bare(Op::IntercommCreate, Params::Intercomm { parent: 1, comm: COMM_UNKNOWN, local: vec![0], remote: vec![1] });
    assert!(matches!(op_action(&failed), Ok(None)));
}

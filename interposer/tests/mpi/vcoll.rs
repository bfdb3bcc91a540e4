//! The v-, w- and neighbourhood collectives (`c-tests/vcoll.c`): their
//! records carry the byte counts (and neighbours) the program passed,
//! the trace replays, and its TI export replays under SimGrid.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use simulator::trace::{open_dir, CallRecord, Op, Params};

use super::{rank_calls, records, traced};

/// One `<kind>@<rank> <MPI_Name> key=a,b ...` line of `vcoll`.
type Lists = BTreeMap<String, Vec<i64>>;

/// `(kind, rank, name)` → the line's lists (`-` is an empty list).
fn lines(out: &Output) -> BTreeMap<(String, u32, String), Lists> {
    let mut by = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((kind, rest)) = l.split_once('@') else { continue };
        if !["rec", "nbr", "dist", "graph"].contains(&kind) {
            continue;
        }
        let mut words = rest.split(' ');
        let rank: u32 = words.next().unwrap().parse().unwrap();
        let name = words.next().unwrap().to_string();
        let lists = words
            .map(|w| {
                let (k, v) = w.split_once('=').unwrap();
                let v = if v == "-" { vec![] } else { v.split(',').map(|x| x.parse().unwrap()).collect() };
                (k.to_string(), v)
            })
            .collect();
        by.insert((kind.to_string(), rank, name), lists);
    }
    by
}

fn as_i64<T: Copy + Into<i64>>(v: &[T]) -> Vec<i64> {
    v.iter().map(|&x| x.into()).collect()
}

/// The record's lists under the keys `vcoll` prints.
fn recorded(r: &CallRecord) -> Lists {
    match &r.params {
        Params::Vcoll { send, recv, .. } => {
            let b = |v: &[u64]| v.iter().map(|&x| x as i64).collect();
            [("send".to_string(), b(send)), ("recv".to_string(), b(recv))].into()
        }
        Params::Neighbor { dsts, send, srcs, recv, .. } => {
            let b = |v: &[u64]| v.iter().map(|&x| x as i64).collect();
            [("dsts", as_i64(dsts)), ("send", b(send)), ("srcs", as_i64(srcs)), ("recv", b(recv))]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        }
        p => panic!("{:?}: {p:?}", r.op),
    }
}

/// Every rank's counts equal the program's; the first record of each
/// call carries the byte counts (and neighbours) the program printed;
/// new communicators carry their members; the trace replays.
pub(super) fn check_vcoll(dir: &Path, out: &Output, np: u32, full: bool) {
    let text = String::from_utf8_lossy(&out.stdout);
    let expected = rank_calls(out);
    assert_eq!(expected.len(), np as usize, "{text}");
    let printed = lines(out);
    let (_, ranks) = open_dir(dir).unwrap();
    for t in &ranks {
        let me = t.header.rank;
        assert!(text.contains(&format!("errors@{me} 0\n")), "rank {me} received wrong values: {text}");
        let recs = records(t);
        for (name, n) in &expected[&me] {
            let got = recs.iter().filter(|r| r.op.mpi_name() == name).count();
            assert_eq!(got, *n, "rank {me} {name}");
        }
        let first = |name: &str| recs.iter().find(|r| r.op.mpi_name() == name).unwrap_or_else(|| panic!("rank {me}: no {name}"));
        let mut checked = 0;
        for ((kind, rank, name), want) in &printed {
            if *rank != me || !["rec", "nbr"].contains(&kind.as_str()) {
                continue;
            }
            let got = recorded(first(name));
            for (k, v) in want {
                assert_eq!(&got[k], v, "rank {me} {name} {k}");
            }
            checked += 1;
        }
        assert!(checked >= if full { 32 } else { 6 }, "rank {me}: {checked} lines checked");
        if !full {
            continue;
        }
        // Graph communicators: the calls on them name their neighbours.
        let comm_of = |op| match recs.iter().find(|r| r.op == op).unwrap().params {
            Params::CommCreate { comm, ref members, .. } => {
                assert_eq!(members, &(0..np).collect::<Vec<_>>(), "rank {me} {op:?}");
                comm
            }
            ref p => panic!("{op:?}: {p:?}"),
        };
        for (kind, op, call) in
            [("dist", Op::DistGraphCreateAdjacent, "MPI_Neighbor_alltoall"), ("graph", Op::GraphCreate, "MPI_Neighbor_allgather")]
        {
            let comm = comm_of(op);
            let on = recs.iter().find(|r| matches!(r.params, Params::Neighbor { comm: c, .. } if c == comm)).unwrap();
            assert_eq!(on.op.mpi_name(), call);
            let want = &printed[&(kind.to_string(), me, call.to_string())];
            assert_eq!(&recorded(on), want, "rank {me} {kind}");
        }
        comm_of(Op::CommIdup);
        let shared: usize = text.lines().find_map(|l| l.strip_prefix(&format!("shared@{me} "))).unwrap().parse().unwrap();
        let split = recs.iter().find(|r| r.op == Op::CommSplitType).unwrap();
        assert!(matches!(&split.params, Params::CommCreate { members, .. } if members.len() == shared && members.contains(&me)));
    }
    // The trace replays: every call is an action, the makespan positive.
    let platform = dir.join("platform.toml");
    std::fs::write(
        &platform,
        "name = \"t\"\n[[hosts]]\nname = \"n\"\ncores = 4\n[network.intra]\neager_threshold_bytes = 4096\n\
         transfer = [ { intercept_s = 1e-6, bandwidth_bytes_per_s = 1e9 } ]\n",
    )
    .unwrap();
    let p = simulator::platform::Platform::load(&platform).unwrap();
    let streams = simulator::replay::open_trace_dir(dir, Default::default()).unwrap();
    let report = simulator::replay::replay(&p, streams).unwrap();
    assert!(report.makespan_s > 0.0, "{report:?}");
    assert!(report.ranks.iter().all(|r| r.messages > 0), "{report:?}");
}

#[test]
fn v_w_and_neighbourhood_collectives_carry_their_counts_and_replay() {
    let (dir, out) = traced(4, "vcoll", &["2"]);
    check_vcoll(dir.path(), &out, 4, true);
}

/// The blocking v-collectives of a traced run, exported as TI with their
/// count vectors, replay under SimGrid's own `smpirun -replay`.
#[test]
fn v_collectives_ti_export_replays_in_simgrid() {
    if Command::new("smpirun").arg("-version").output().is_err() {
        println!("SKIPPED: smpirun not found (install libsimgrid-dev)");
        return;
    }
    let (dir, out) = traced(4, "vcoll", &["2", "0"]);
    check_vcoll(dir.path(), &out, 4, false);
    let (_, ranks) = open_dir(dir.path()).unwrap();
    let ti = tempfile::tempdir().unwrap();
    let e = simulator::trace::ti_export::export_ti(&ranks, ti.path(), 1e9).unwrap();
    let rank0 = std::fs::read_to_string(ti.path().join("rank-0.ti")).unwrap();
    for verb in ["gatherv", "scatterv", "allgatherv", "alltoallv", "reducescatter"] {
        assert!(rank0.lines().any(|l| l.starts_with(&format!("0 {verb} "))), "no {verb} in {rank0}");
    }
    assert!(rank0.contains("0 allgatherv 8 8 12 16 20\n"), "{rank0}");
    let out = super::smpirun_replay(ti.path(), &e.list);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "smpirun -replay failed: {log}");
    assert!(log.contains("Simulation time"), "{log}");
}

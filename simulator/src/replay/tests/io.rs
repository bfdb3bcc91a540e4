//! MPI-IO in the replay: the file-system model's hand-computed cases
//! through the engine, and the recorded durations without a file system.

use super::*;
use crate::action::IoCall;
use crate::io::FileSystem;
use crate::trace::record::hint;

const MIB: u64 = 1 << 20;

fn fs(servers: u32) -> FileSystem {
    crate::io::tests::fs(servers, MIB)
}

fn io(call: IoCall, offset: u64, bytes: u64) -> Action {
    Action::Io { call, file: 3, offset, bytes, recorded_s: 0.25 }
}

fn open() -> Action {
    io(IoCall::Open { comm: 0 }, 0, 0)
}

/// Two hosts of two cores; transfer 1 ms + 1 GB/s between them, free within one.
fn two_hosts(servers: u32) -> Platform {
    let mut p = Platform::new("t", vec![Host::new("a", 2), Host::new("b", 2)], model(0.0, f64::INFINITY, 0.0, 0.0));
    p.network.inter = Some(model(L, 1e9, 0.0, 0.0));
    p.fs = vec![fs(servers)];
    p
}

#[test]
fn without_a_file_system_io_takes_its_recorded_time() {
    let r = run(&simple(), vec![vec![open(), io(IoCall::Write, 0, MIB), Action::Finalize]]).unwrap();
    close(r.makespan_s, 0.5);
    assert_eq!((r.io_recorded_calls, r.ranks[0].io_s, r.io_s), (2, 0.0, 0.0));
    assert!(r.io_servers.is_empty());
    assert_eq!(r.ranks[0].compute_s, 0.5);
}

#[test]
fn independent_writes_queue_on_the_servers_and_io_scale_halves_bandwidth() {
    // Two ranks on host a each write 4 MiB at once: two servers, stripes
    // alternate, each server takes 2 MiB of each: 2 x (10 ms + 2 MiB/100 MB/s).
    // The network's latency (1 ms: a client reaches the servers across the
    // inter-host network) comes first.
    let ranks = |p: &Platform| {
        let w = |r: u64| vec![open(), io(IoCall::Write, r * 4 * MIB, 4 * MIB), io(IoCall::Close, 0, 0), Action::Finalize];
        run(p, vec![w(0), w(1)]).unwrap()
    };
    let p = two_hosts(2);
    let piece = 1e-2 + 2.0 * MIB as f64 / 1e8;
    let r = ranks(&p);
    close(r.makespan_s, 1e-3 + L + 2.0 * piece + 1e-3);
    close(r.ranks[1].io_s, r.makespan_s);
    close(r.io_s, r.ranks[0].io_s + r.ranks[1].io_s);
    balanced(&r);
    // Each server took 2 MiB of each rank: two requests, 4 MiB, disk busy 2 pieces.
    assert_eq!(r.io_servers.len(), 2);
    for s in &r.io_servers {
        assert_eq!((s.requests, s.bytes_written, s.bytes_read), (2, 4 * MIB, 0));
        close(s.disk_busy_s, 2.0 * piece);
    }
    let mut slow = p.clone();
    slow.fs[0].scale_bandwidth(0.5);
    let piece_slow = 1e-2 + 4.0 * MIB as f64 / 1e8;
    close(ranks(&slow).makespan_s, 1e-3 + L + 2.0 * piece_slow + 1e-3);
}

#[test]
fn the_timeline_has_a_lane_per_server_with_its_busy_spans() {
    let w = |r: u64| vec![open(), io(IoCall::Write, r * 4 * MIB, 4 * MIB), io(IoCall::Read, r * 4 * MIB, 2 * MIB), Action::Finalize];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let streams: Vec<ActionStream<'static, Infallible>> =
        [w(0), w(1)].into_iter().map(|v| Box::new(v.into_iter().map(Ok)) as ActionStream<'static, Infallible>).collect();
    let p = two_hosts(2);
    let r = crate::replay::Replay::new(&p).timeline(Timeline::create(&path).unwrap()).run(streams).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    for (i, s) in r.io_servers.iter().enumerate() {
        let on = |what: &str| {
            ev.iter()
                .filter(|e| e["pid"] == 1 && e["tid"] == i && e["name"].as_str().unwrap().starts_with(what))
                .map(|e| e["dur"].as_f64().unwrap() * 1e-6)
                .sum::<f64>()
        };
        close(on("disk"), s.disk_busy_s);
        assert!(s.bytes_read > 0 && s.disk_busy_s > 0.0, "{s:?}");
    }
}

#[test]
fn a_collective_write_waits_for_every_member_and_uses_two_aggregators() {
    // Ranks 0, 1 on host a, 2, 3 on host b; 4 MiB each, contiguous;
    // `romio_cb_write = enable`; rank 3 enters 5 ms late. Aggregators 0
    // and 2; the exchange (4 MiB within a host: free) then, after the
    // network's latency to the servers, each aggregator's 8 MiB, 4 MiB per
    // server, the second behind the first: 2 x (10 ms + 4 MiB/100 MB/s).
    let p = two_hosts(2);
    let r = run(&p, late_writers(vec![(hint::CB_WRITE, hint::ENABLE)])).unwrap();
    let piece = 1e-2 + 4.0 * MIB as f64 / 1e8;
    let end = 1e-3 + 5e-3 + L + 2.0 * piece;
    for k in &r.ranks {
        close(k.end_s, end);
    }
    close(r.ranks[0].io_s, end);
    close(r.ranks[3].io_s, 1e-3 + L + 2.0 * piece);
    balanced(&r);
    close(r.ranks[0].wait_s, 5e-3);
}

/// Ranks 0..4 opening file 3 with `hints`, rank 3 5 ms late, then each
/// writing its contiguous 4 MiB collectively.
fn late_writers(hints: Vec<(u32, u64)>) -> Vec<Vec<Action>> {
    let info = crate::io::FileInfo { open_comm: Some(0), view: None, sets_view: false, hints: crate::io::Hints::from_pairs(&hints) };
    let open = Action::IoInfo { file: 3, info: Box::new(info), recorded_s: 0.25 };
    (0..4u64)
        .map(|r| {
            let late = if r == 3 { vec![Action::Compute { seconds: 5e-3, region: 0 }] } else { vec![] };
            [vec![open.clone()], late, vec![io(IoCall::WriteAll, r * 4 * MIB, 4 * MIB), Action::Finalize]].concat()
        })
        .collect()
}

/// ROMIO's `automatic` collective buffering: parts that do not interleave
/// skip the two phases; once the last member entered, each writes its own
/// 4 MiB (2 MiB per server). The four requests queue on the two servers:
/// each server serves four 2 MiB pieces, one after another.
#[test]
fn parts_that_do_not_interleave_are_written_independently_under_automatic() {
    let p = two_hosts(2);
    let r = run(&p, late_writers(vec![])).unwrap();
    let piece = 1e-2 + 2.0 * MIB as f64 / 1e8;
    close(r.makespan_s, 1e-3 + 5e-3 + L + 4.0 * piece);
    assert!(r.ranks[0].end_s < r.makespan_s, "rank 0's request is served first: {:?}", r.ranks);
    assert!(r.ranks.iter().all(|k| k.end_s > 1e-3 + 5e-3), "all wait for the last member");
    balanced(&r);
}

#[test]
fn a_collective_access_a_member_never_enters_is_a_deadlock() {
    let p = two_hosts(1);
    let w = |all: bool| {
        let mut v = vec![open()];
        if all {
            v.push(io(IoCall::WriteAll, 0, MIB));
        }
        v.push(Action::Finalize);
        v
    };
    let e = run(&p, vec![w(true), w(false)]).unwrap_err().to_string();
    assert!(e.contains("deadlock") || e.contains("blocked"), "{e}");
}

#[test]
fn a_nonblocking_write_overlaps_compute() {
    let p = two_hosts(1);
    let write = |req| io(IoCall::Iwrite { req }, 0, MIB);
    let r = run(&p, vec![vec![open(), write(9), Action::Compute { seconds: 1.0, region: 0 }, Action::Wait { req: 9 }, Action::Finalize]])
        .unwrap();
    close(r.makespan_s, 1e-3 + 1.0);
}

/// Hints given at open apply to the file's accesses: with
/// `romio_cb_write = disable` a collective write is each rank's own
/// independent write (no wait for the late member); the view set later
/// spreads a rank's data, so the sieved range is read and written back.
#[test]
fn hints_at_open_and_views_shape_the_accesses() {
    use crate::io::{FileInfo, FileView, Hints};
    let info = |hints: Vec<(u32, u64)>, open: bool, view: Option<FileView>| Action::IoInfo {
        file: 3,
        info: Box::new(FileInfo { open_comm: open.then_some(0), view, sets_view: !open, hints: Hints::from_pairs(&hints) }),
        recorded_s: 0.0,
    };
    let p = two_hosts(2);
    let ranks = |hints: Vec<(u32, u64)>| {
        (0..4u64)
            .map(|r| {
                let late = if r == 3 { vec![Action::Compute { seconds: 0.5, region: 0 }] } else { vec![] };
                [vec![info(hints.clone(), true, None)], late, vec![io(IoCall::WriteAll, r * 4 * MIB, 4 * MIB), Action::Finalize]].concat()
            })
            .collect::<Vec<_>>()
    };
    let two_phase = run(&p, ranks(vec![])).unwrap();
    assert!(two_phase.ranks[0].end_s > 0.5, "rank 0 waits for rank 3: {}", two_phase.ranks[0].end_s);
    let independent = run(&p, ranks(vec![(hint::CB_WRITE, hint::DISABLE)])).unwrap();
    assert!(independent.ranks[0].end_s < 0.5, "rank 0 writes alone: {}", independent.ranks[0].end_s);
    balanced(&independent);
    // A strided view: 1 MiB of data per 2 MiB, in 1 MiB blocks; 2 MiB
    // written cover 3 MiB, sieved (read then written back) in 512 KiB buffers.
    let view = FileView::strided(MIB, 2 * MIB, MIB);
    let r =
        run(&p, vec![vec![info(vec![], true, None), info(vec![], false, view), io(IoCall::Write, 0, 2 * MIB), Action::Finalize]]).unwrap();
    let s: u64 = r.io_servers.iter().map(|s| s.bytes_written).sum();
    let read: u64 = r.io_servers.iter().map(|s| s.bytes_read).sum();
    assert_eq!((s, read), (3 * MIB, 3 * MIB), "{:?}", r.io_servers);
}

/// On OMPIO (`mpi_io = "ompio"`) a collective write of two ranks is each
/// rank's own write (`fcoll` `individual`): the early rank does not wait
/// for the late one; of four ranks it runs `vulcan`, which waits.
#[test]
fn ompio_collectives_of_two_ranks_do_not_wait() {
    let mut p = two_hosts(1);
    p.fs[0].mpi_io = crate::io::MpiIo::Ompio;
    let ranks = |n: u64| {
        (0..n)
            .map(|r| {
                let late = if r == n - 1 { vec![Action::Compute { seconds: 0.5, region: 0 }] } else { vec![] };
                [vec![open()], late, vec![io(IoCall::WriteAll, r * 4 * MIB, 4 * MIB), Action::Finalize]].concat()
            })
            .collect::<Vec<_>>()
    };
    let two = run(&p, ranks(2)).unwrap();
    // The two opens (1 ms each on the metadata queue), then 10 ms + 4 MiB
    // at 1e8 B/s on the one server.
    close(two.ranks[0].end_s, 2e-3 + 1e-2 + 4.0 * MIB as f64 / 1e8);
    assert_eq!(two.ranks[0].wait_s, 0.0);
    let four = run(&p, ranks(4)).unwrap();
    assert!(four.ranks[0].end_s > 0.5, "rank 0 waits for rank 3: {}", four.ranks[0].end_s);
}

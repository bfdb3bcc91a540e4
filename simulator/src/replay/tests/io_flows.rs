//! MPI-IO over the shared network (link sharing): hand-computed cases of
//! client–server flows, against servers' links and MPI messages.

use super::*;
use crate::action::IoCall;
use crate::io::{Disk, FileSystem, MpiIo};
use crate::network::FlowSharing;

const MIB: u64 = 1 << 20;

/// The metadata latency of an open, seconds (part of a rank's `io_s`).
const OPEN: f64 = 1e-3;

fn io(call: IoCall, offset: u64, bytes: u64) -> Action {
    Action::Io { call, file: 3, offset, bytes, recorded_s: 0.25 }
}

/// `n` hosts of one core on a crossbar of `host_bw` bytes/s per link;
/// transfers L + bytes / 1e12 between hosts (the links limit them).
fn cluster(n: usize, host_bw: f64) -> Platform {
    let hosts = (0..n).map(|i| Host::new(format!("h{i}"), 1)).collect();
    let mut p = Platform::new("t", hosts, model(0.0, f64::INFINITY, 0.0, 0.0));
    p.network.inter = Some(model(L, 1e12, 0.0, 0.0));
    p.links = Some(FlowSharing {
        link_bw_bytes_per_s: host_bw,
        nominal_rate_bytes_per_s: 0.0,
        crosstraffic: 0.0,
        header_bytes: 0,
        topology: Default::default(),
        latency_per_link: false,
    });
    p
}

/// `servers` dedicated servers of 1 MiB stripes whose links carry
/// `link_bw` bytes/s; disks without latency at 1e12 bytes/s; metadata 1 ms.
fn dedicated(servers: u32, link_bw: Option<f64>) -> FileSystem {
    FileSystem {
        name: "t".into(),
        servers,
        server_hosts: Vec::new(),
        stripe_size_bytes: MIB,
        stripe_count: None,
        metadata_latency_s: 1e-3,
        sync_latency_s: None,
        link_bytes_per_s: link_bw,
        disk: Disk::new(0.0, 1e12, 1e12),
        cb_buffer_bytes: None,
        cb_nodes: None,
        mpi_io: MpiIo::Romio,
    }
}

fn writer(r: u64, bytes: u64) -> Vec<Action> {
    vec![io(IoCall::Open { comm: 0 }, 0, 0), io(IoCall::Write, r * bytes, bytes), Action::Finalize]
}

#[test]
fn eight_clients_share_one_server_link_and_four_servers_take_a_quarter() {
    let each = 64 * MIB;
    let run_on = |servers: u32| {
        let mut p = cluster(8, 1e12);
        p.fs = vec![dedicated(servers, Some(1e8))];
        let r = run(&p, (0..8).map(|i| writer(i, each)).collect()).unwrap();
        balanced(&r);
        r
    };
    let (one, four) = (run_on(1), run_on(4));
    // Eight flows share the one server's link fairly and end together;
    // the disk then takes the eight pieces one after another.
    let disk = |pieces: f64, bytes: f64| pieces * bytes / 1e12;
    close(one.makespan_s, OPEN + L + 8.0 * each as f64 / 1e8 + disk(8.0, each as f64));
    for k in &one.ranks {
        assert!(k.io_s > 8.0 * each as f64 / 1e8, "{k:?}");
    }
    // Over four servers each link carries a quarter of every request.
    let quarter = each as f64 / 4.0;
    close(four.makespan_s, OPEN + L + 8.0 * quarter / 1e8 + disk(8.0, quarter));
    assert!((one.makespan_s - OPEN) / (four.makespan_s - OPEN) > 3.9);
    assert_eq!(four.io_servers.len(), 4);
    for s in &four.io_servers {
        assert_eq!((s.requests, s.bytes_written), (8, 8 * each / 4));
        close(s.link_busy_s, 8.0 * quarter / 1e8);
    }
}

#[test]
fn a_write_and_a_message_share_the_client_hosts_link() {
    // Rank 0 on h0 sends 20 MB to rank 1 on h1 (rendezvous) while it writes
    // 10 MB to a dedicated server without a link of its own: both flows
    // cross h0's link of 1e8 bytes/s, each at half of it until the write's
    // data is out; the message then has the link to itself.
    let bytes = 10_000_000;
    let mut p = cluster(2, 1e8);
    p.fs = vec![dedicated(1, None)];
    let r0 = vec![
        io(IoCall::Open { comm: 0 }, 0, 0),
        Action::Isend { dst: 1, tag: 0, bytes: 2 * bytes, comm: 0, req: 1 },
        io(IoCall::Write, 0, bytes),
        Action::Wait { req: 1 },
        Action::Finalize,
    ];
    let r1 = vec![recv(0), Action::Finalize];
    let r = run(&p, vec![r0, r1]).unwrap();
    balanced(&r);
    let shared = 2.0 * bytes as f64 / 1e8;
    close(r.ranks[0].io_s, OPEN + L + shared + bytes as f64 / 1e12);
    close(r.makespan_s, OPEN + L + shared + bytes as f64 / 1e8);
    // Alone, the write takes half as long on the link.
    let alone = run(&p, vec![writer(0, bytes), vec![Action::Finalize]]).unwrap();
    close(alone.ranks[0].io_s, OPEN + L + bytes as f64 / 1e8 + bytes as f64 / 1e12);
}

#[test]
fn a_read_flows_back_after_the_disk_and_a_server_on_the_clients_host_moves_nothing() {
    let bytes = 4 * MIB;
    let mut p = cluster(2, 1e8);
    let mut fs = dedicated(1, None);
    fs.server_hosts = vec!["h1".into()];
    fs.servers = 0;
    fs.disk = Disk::new(2e-3, 1e9, 1e9);
    p.fs = vec![fs];
    let reader = vec![io(IoCall::Open { comm: 0 }, 0, 0), io(IoCall::Read, 0, bytes), Action::Finalize];
    let r = run(&p, vec![reader.clone(), reader]).unwrap();
    balanced(&r);
    let disk = 2e-3 + bytes as f64 / 1e9;
    // Rank 1 runs on the server's host: the disk alone. Rank 0's request
    // reaches h1 after L; the disk serves rank 1's first (it came first),
    // then rank 0's; the data flows back over h1's and h0's links.
    close(r.ranks[1].io_s, OPEN + disk);
    close(r.ranks[0].io_s, OPEN + L.max(disk) + disk + L + bytes as f64 / 1e8);
    assert_eq!((r.io_servers[0].requests, r.io_servers[0].bytes_read), (2, 2 * bytes));
    close(r.io_servers[0].disk_busy_s, 2.0 * disk);
}

#[test]
fn a_collective_write_with_two_aggregators_ends_with_its_last_flow() {
    // Four ranks, two per host, write consecutive 1 MiB blocks collectively
    // with two-phase forced on: one aggregator per host (ranks 0 and 2),
    // each writing its 2 MiB domain after an exchange within its host
    // (free here); both aggregators' flows share the server's link of 1e8
    // bytes/s, and the disk takes the two pieces one after the other.
    let mut p = cluster(2, 1e12);
    for h in &mut p.hosts {
        h.cores = 2;
    }
    p.fs = vec![dedicated(1, Some(1e8))];
    let hints = crate::io::Hints { cb_write: Some(true), ..Default::default() };
    let info = crate::io::FileInfo { open_comm: None, view: None, sets_view: false, hints };
    let member = |r: u64| {
        vec![
            io(IoCall::Open { comm: 0 }, 0, 0),
            Action::IoInfo { file: 3, info: Box::new(info.clone()), recorded_s: 0.0 },
            io(IoCall::WriteAll, r * MIB, MIB),
            Action::Finalize,
        ]
    };
    let r = run(&p, (0..4).map(member).collect()).unwrap();
    balanced(&r);
    let expect = OPEN + L + 4.0 * MIB as f64 / 1e8 + 2.0 * (2 * MIB) as f64 / 1e12;
    for k in &r.ranks {
        close(k.end_s, expect);
    }
    assert_eq!((r.io_servers[0].requests, r.io_servers[0].bytes_written), (2, 4 * MIB));
    // Without link sharing the same call queues on the server's FIFO link:
    // the two 2 MiB pieces one after the other, the first one's disk time
    // hidden behind the second one's transfer.
    let mut fifo = p.clone();
    fifo.links = None;
    let f = run(&fifo, (0..4).map(member).collect()).unwrap();
    close(f.makespan_s, OPEN + L + 4.0 * MIB as f64 / 1e8 + (2 * MIB) as f64 / 1e12);
}

#[test]
fn a_nonblocking_write_overlaps_compute_until_its_flow_ends() {
    // Iwrite of 10 MB over h0's link of 1e8 bytes/s (0.1 s), 0.05 s of
    // compute, then the wait: it ends with the write.
    let bytes = 10_000_000;
    let mut p = cluster(2, 1e8);
    p.fs = vec![dedicated(1, None)];
    let r0 = vec![
        io(IoCall::Open { comm: 0 }, 0, 0),
        io(IoCall::Iwrite { req: 7 }, 0, bytes),
        compute(0.05),
        Action::Wait { req: 7 },
        Action::Finalize,
    ];
    let r = run(&p, vec![r0]).unwrap();
    balanced(&r);
    close(r.makespan_s, OPEN + L + bytes as f64 / 1e8 + bytes as f64 / 1e12);
    close(r.ranks[0].compute_s, 0.05);
}

//! Hand-computed cases of the file-system model.

use super::*;
use crate::network::Piecewise;

const MIB: u64 = 1 << 20;

/// A file system of `servers` servers and `stripe`-byte stripes: disks of
/// 10 ms latency, 200 MB/s read and 100 MB/s write, 1 ms metadata, no cache.
pub(crate) fn fs(servers: u32, stripe: u64) -> FileSystem {
    FileSystem {
        name: "t".into(),
        servers,
        server_hosts: Vec::new(),
        stripe_size_bytes: stripe,
        stripe_count: None,
        metadata_latency_s: 1e-3,
        sync_latency_s: None,
        link_bytes_per_s: None,
        disk: Disk::new(1e-2, 2e8, 1e8),
        cb_buffer_bytes: None,
        cb_nodes: None,
        mpi_io: MpiIo::Romio,
    }
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-9 * b.abs().max(1e-9), "{a} vs {b}");
}

#[test]
fn a_request_over_five_stripes_of_three_servers() {
    let mut st = FsState::new(fs(3, MIB));
    assert_eq!(st.pieces(0, 0, 5 * MIB), [(0, 2 * MIB), (1, 2 * MIB), (2, MIB)]);
    // Starting mid-stripe: half of stripe 0, stripes 1-4, half of stripe 5.
    assert_eq!(st.pieces(0, MIB / 2, 5 * MIB), [(0, MIB / 2 + MIB), (1, 2 * MIB), (2, MIB + MIB / 2)]);
    // Another file starts on another server.
    assert_eq!(st.pieces(1, 0, 5 * MIB), [(1, 2 * MIB), (2, 2 * MIB), (0, MIB)]);
    // The two 2 MiB pieces end last: latency + 2 MiB at 1e8 B/s.
    close(st.request(0.0, 0.0, 0, 0, 5 * MIB, IoKind::Write), 1e-2 + 2.0 * MIB as f64 / 1e8);
}

#[test]
fn pieces_of_long_requests_add_up() {
    let st = FsState::new(FileSystem { stripe_count: Some(4), ..fs(6, 64 * 1024) });
    for (off, len) in [(0, 1u64 << 30), (12345, 987654321), (64 * 1024 - 1, 2), (7, 1)] {
        let p = st.pieces(3, off, len);
        assert_eq!(p.iter().map(|x| x.1).sum::<u64>(), len, "{off} {len}");
        assert!(p.iter().all(|x| x.0 < 4));
    }
}

#[test]
fn eight_clients_on_four_servers_take_a_quarter_of_the_time_on_one() {
    let run = |servers: u32| {
        let mut st = FsState::new(FileSystem { disk: Disk { latency_s: 0.0, ..fs(1, MIB).disk }, ..fs(servers, MIB) });
        (0..8u64).map(|c| st.request(0.0, 0.0, 0, c * 64 * MIB, 64 * MIB, IoKind::Write)).fold(0.0, f64::max)
    };
    let (one, four) = (run(1), run(4));
    close(one, 8.0 * 64.0 * MIB as f64 / 1e8);
    close(one / four, 4.0);
}

#[test]
fn a_write_smaller_than_the_cache_finishes_at_memory_speed_and_sync_pays_the_flush() {
    let disk = Disk { cache_bytes: 64 * MIB, cache_bytes_per_s: Some(1e10), ..fs(1, MIB).disk };
    let mut st = FsState::new(FileSystem { disk, ..fs(1, MIB) });
    let w = st.request(0.0, 0.0, 0, 0, 32 * MIB, IoKind::Write);
    close(w, 32.0 * MIB as f64 / 1e10);
    close(st.sync(w), w + 32.0 * MIB as f64 / 1e8 + 1e-3);
    // A write larger than the room left goes to the disk after the drain.
    let big = st.request(w, 0.0, 0, 32 * MIB, 48 * MIB, IoKind::Write);
    close(big, w + 32.0 * MIB as f64 / 1e8 + 1e-2 + 48.0 * MIB as f64 / 1e8);
}

#[test]
fn a_collective_write_of_four_ranks_with_two_aggregators() {
    // Ranks 0, 1 on host 0 and 2, 3 on host 1, 4 MiB each, contiguous:
    // aggregators 0 and 2, domains [0, 8) and [8, 16) MiB, one round.
    let members: Vec<Member> = (0..4u64)
        .map(|r| Member { host: (r / 2) as usize, offset: r * 4 * MIB, bytes: 4 * MIB, span: 4 * MIB, entry_s: r as f64 * 1e-3 })
        .collect();
    assert_eq!(aggregators(&members, None), [0, 2]);
    let mut st = FsState::new(fs(2, MIB));
    let exchange = |_: usize, _: usize, b: u64| 1e-6 + b as f64 / 1e9;
    let done = two_phase_plan(&st, 0, &members, IoKind::Write, &Hints::default(), exchange).run(&mut st, 0.0);
    // Last entry 3 ms; exchange of 4 MiB; then each aggregator's 8 MiB is
    // 4 MiB per server, the second aggregator's queued behind the first's.
    let t_x = 3e-3 + 1e-6 + 4.0 * MIB as f64 / 1e9;
    let piece = 1e-2 + 4.0 * MIB as f64 / 1e8;
    for d in done {
        close(d, t_x + 2.0 * piece);
    }
    // cb_nodes = 1: one aggregator, 12 MiB exchanged to it.
    let mut st = FsState::new(FileSystem { cb_nodes: Some(1), ..fs(2, MIB) });
    assert_eq!(aggregators(&members, Some(1)), [0]);
    let done = two_phase_plan(&st, 0, &members, IoKind::Write, &Hints::default(), exchange).run(&mut st, 0.0);
    close(done[0], 3e-3 + 1e-6 + 12.0 * MIB as f64 / 1e9 + 1e-2 + 8.0 * MIB as f64 / 1e8);
}

#[test]
fn collective_rounds_follow_the_buffer_and_reads_exchange_after_the_disk() {
    let members = [
        Member { host: 0, offset: 0, bytes: 8 * MIB, span: 8 * MIB, entry_s: 0.0 },
        Member { host: 1, offset: 8 * MIB, bytes: 8 * MIB, span: 8 * MIB, entry_s: 0.0 },
    ];
    let mut st = FsState::new(FileSystem { cb_buffer_bytes: Some(4 * MIB), ..fs(1, 16 * MIB) });
    let exchange = |_: usize, _: usize, _: u64| 0.5;
    // Each aggregator reads its own 8 MiB in two rounds of 4 MiB; nothing
    // to exchange (each member's data is in its own domain).
    let done = two_phase_plan(&st, 0, &members, IoKind::Read, &Hints::default(), exchange).run(&mut st, 0.0);
    let read = 1e-2 + 4.0 * MIB as f64 / 2e8;
    close(done[1], 4.0 * read);
}

#[test]
fn bad_file_systems_are_named() {
    let hosts = ["n0", "n1"];
    assert!(fs(2, MIB).validate(&hosts).is_ok());
    let bad = FileSystem { server_hosts: vec!["n9".into()], ..fs(2, MIB) };
    assert!(bad.validate(&hosts).unwrap_err().0.contains("`n9` is not a host"));
    let bad = FileSystem { disk: Disk { write_bytes_per_s: -1.0, ..fs(1, MIB).disk }, ..fs(2, MIB) };
    assert!(bad.validate(&hosts).unwrap_err().0.contains("disk.write_bytes_per_s"));
    assert!(fs(0, MIB).validate(&hosts).unwrap_err().0.contains("at least one server"));
}

#[test]
fn io_scale_multiplies_every_bandwidth() {
    let mut f = fs(1, MIB);
    f.link_bytes_per_s = Some(1e9);
    f.scale_bandwidth(0.5);
    assert_eq!((f.disk.read_bytes_per_s, f.disk.write_bytes_per_s, f.link_bytes_per_s), (1e8, 5e7, Some(5e8)));
}

/// Four 64 KiB blocks through a view of one block per 128 KiB, written at
/// once: one request per block without data sieving; with it, the
/// covered 448 KiB read and written back in one 512 KiB buffer.
#[test]
fn a_strided_write_is_one_request_per_block_or_one_sieved_range() {
    const KIB: u64 = 1024;
    let view = FileView::strided(64 * KIB, 128 * KIB, 64 * KIB);
    let mut open = client::OpenFile { view, ..Default::default() };
    let write = client::Access { call: crate::action::IoCall::Write, file: 0, offset: 0, bytes: 256 * KIB };
    let mut st = FsState::new(fs(1, 1 << 30));
    let sieved = client::independent(&mut st, &open, 0.0, 0.0, write);
    let span = (3 * 128 + 64) * KIB;
    close(sieved, 1e-2 + span as f64 / 2e8 + 1e-2 + span as f64 / 1e8);
    open.hints = Hints::from_pairs(&[(crate::trace::record::hint::DS_WRITE, crate::trace::record::hint::DISABLE)]);
    let mut st = FsState::new(fs(1, 1 << 30));
    let blocks = client::independent(&mut st, &open, 0.0, 0.0, write);
    close(blocks, 4.0 * (1e-2 + (64 * KIB) as f64 / 1e8));
    assert_eq!(st.server_stats()[0].requests, 4);
}

/// `striping_factor = 1` at open puts a 5 MiB request on one server of three.
#[test]
fn striping_hints_narrow_a_file_to_one_server() {
    let mut st = FsState::new(fs(3, MIB));
    st.set_striping(9, None, Some(1));
    let done = st.request(0.0, 0.0, 9, 0, 5 * MIB, IoKind::Write);
    close(done, 1e-2 + (5 * MIB) as f64 / 1e8);
    st.set_striping(4, Some(2 * MIB), None);
    assert_eq!(st.pieces(4, 0, 5 * MIB), vec![(1, 2 * MIB), (2, 2 * MIB), (0, MIB)]);
}

/// With a cache, data written a moment ago reads at the cache's speed;
/// data never written (or pushed out) comes from the disk.
#[test]
fn a_read_of_data_still_cached_skips_the_disk() {
    let mut f = fs(1, 1 << 30);
    f.disk.cache_bytes = 4 * MIB;
    f.disk.cache_bytes_per_s = Some(1e9);
    let mut st = FsState::new(f);
    let w = st.request(0.0, 0.0, 1, 0, MIB, IoKind::Write);
    let r = st.request(w, 0.0, 1, 0, MIB, IoKind::Read);
    close(r - w, MIB as f64 / 1e9);
    let cold = st.request(r, 0.0, 1, 8 * MIB, MIB, IoKind::Read);
    assert!(cold - r >= 1e-2 + MIB as f64 / 2e8 - 1e-12, "{}", cold - r);
    // 8 MiB more written: the first MiB is no longer held.
    st.request(cold, 0.0, 1, 16 * MIB, 8 * MIB, IoKind::Write);
    let t = 100.0;
    assert!(st.request(t, 0.0, 1, 0, MIB, IoKind::Read) - t >= 1e-2, "pushed out");
}

/// A page cache: writes below `drain_after_bytes` wait in the cache until
/// the sync writes them back, however long the application computes in
/// between; each write and cached read pays its per-request latency.
#[test]
fn a_page_cache_writes_back_at_the_sync_and_serves_reads_at_its_own_speed() {
    let disk = Disk {
        cache_bytes: 64 * MIB,
        cache_bytes_per_s: Some(1e10),
        cache_latency_s: 5e-6,
        cache_read_bytes_per_s: Some(2e10),
        cache_read_latency_s: Some(1e-6),
        drain_after_bytes: 32 * MIB,
        ..fs(1, MIB).disk
    };
    let f = FileSystem { disk: disk.clone(), ..fs(1, MIB) };
    let mut st = FsState::new(f.clone());
    let mut t = 0.0;
    for k in 0..16 {
        t = st.request(t, 0.0, 0, k * MIB, MIB, IoKind::Write);
    }
    close(t, 16.0 * (5e-6 + MIB as f64 / 1e10));
    // One second of compute: nothing was written back meanwhile.
    let s = 1.0 + t;
    close(st.sync(s), s + 16.0 * MIB as f64 / 1e8 + 1e-3);
    let r = st.request(10.0, 0.0, 0, 3 * MIB, MIB, IoKind::Read);
    close(r - 10.0, 1e-6 + MIB as f64 / 2e10);
    // Past the threshold the write-back starts behind the write that crossed it.
    let mut st = FsState::new(f.clone());
    let mut t = 0.0;
    for k in 0..33 {
        t = st.request(t, 0.0, 0, k * MIB, MIB, IoKind::Write);
    }
    close(st.sync(t), t + 33.0 * MIB as f64 / 1e8 + 1e-3);
    close(st.sync(50.0), 50.0 + 1e-3);
    // The eager cache (threshold 0) drains while the writes go on.
    let mut st = FsState::new(FileSystem { disk: Disk { drain_after_bytes: 0, ..disk }, ..f });
    let w = st.request(0.0, 0.0, 0, 0, MIB, IoKind::Write);
    close(st.sync(1.0), 1.0 + 1e-3);
    assert!(w < 1e-3);
}

#[test]
fn a_piecewise_cache_cost_prices_each_write_and_read_by_its_size() {
    let seg = |max_bytes, intercept_s, bandwidth_bytes_per_s| crate::network::Segment { max_bytes, intercept_s, bandwidth_bytes_per_s };
    let disk = Disk {
        cache_bytes: 64 * MIB,
        cache_write: Piecewise { segments: vec![seg(Some(65536), 1e-6, 8e9), seg(None, 2e-5, 1e9)] },
        cache_read: Piecewise { segments: vec![seg(None, 5e-7, 2e10)] },
        ..fs(1, MIB).disk
    };
    let mut st = FsState::new(FileSystem { disk, ..fs(1, MIB) });
    // 16 KiB below the break: 1 µs + 16384 / 8e9 s.
    close(st.request(0.0, 0.0, 0, 0, 16384, IoKind::Write), 1e-6 + 16384.0 / 8e9);
    // 1 MiB above it: 20 µs + 1 MiB / 1e9 s.
    close(st.request(1.0, 0.0, 0, MIB, MIB, IoKind::Write), 1.0 + 2e-5 + MIB as f64 / 1e9);
    // The data just written is read from the cache: 0.5 µs + 16384 / 2e10 s.
    close(st.request(2.0, 0.0, 0, 0, 16384, IoKind::Read), 2.0 + 5e-7 + 16384.0 / 2e10);
}

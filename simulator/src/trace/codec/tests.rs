use super::*;
use crate::trace::record::{BlockCounters, Op, ANY_SOURCE, ANY_TAG, PROC_NULL};

fn rec(op: Op, params: Params, t: u64) -> CallRecord {
    CallRecord {
        op,
        failed: t.is_multiple_of(3),
        caller: 0x7f00_1234 + (t % 2) * 8,
        compute_cpu_ns: 1500 + t % 2,
        compute_wall_ns: 1500,
        // Every third record carries hardware counts (bit 6).
        counters: (t % 3 == 1).then_some(BlockCounters { cycles: 3900 + t, instructions: 1 << (20 + t % 7) }),
        t_start_ns: 10 + 3000 * t,
        t_end_ns: 20 + 3000 * t,
        params,
    }
}

fn cases() -> Vec<CallRecord> {
    let shapes = vec![
        (Op::Init, Params::None),
        (Op::Send, Params::P2p { peer: 3, tag: 7, bytes: 4096, comm: 0, request: 0 }),
        (Op::Irecv, Params::P2p { peer: ANY_SOURCE, tag: ANY_TAG, bytes: 8, comm: 2, request: 0x5600_dead }),
        (Op::Wait, Params::Wait { request: 0x5600_dead, source: 1 }),
        (Op::Waitall, Params::Waitall { requests: vec![0x5600_0010, 0, 0x5600_0090] }),
        (Op::Sendrecv, Params::Sendrecv { dst: 1, send_tag: 0, send_bytes: 8, src: 1, recv_tag: 0, recv_bytes: 8, comm: 0 }),
        (Op::Allreduce, Params::Coll { root: -1, bytes: 8, comm: 0 }),
        (Op::Test, Params::Test { request: 9, completed: true }),
        (Op::Waitany, Params::RequestSet { requests: vec![4, 5], result: 1 }),
        (Op::Iprobe, Params::Probe { peer: 2, tag: 3, bytes: 64, comm: 1, found: true }),
        (Op::CommSplit, Params::CommCreate { parent: 0, comm: 3, members: vec![0, 2, 4] }),
        (Op::AlltoallvTotal, Params::Coll { root: -1, bytes: 4096, comm: 3 }),
        (Op::SendInit, Params::P2p { peer: 1, tag: 4, bytes: 64, comm: 0, request: 0x5600_0200 }),
        (Op::Start, Params::Request { request: 0x5600_0200 }),
        (Op::Startall, Params::Waitall { requests: vec![0x5600_0200, 0x5600_0300] }),
        (Op::Waitsome, Params::RequestSome { requests: vec![7, 0, 9], completed: vec![2, 0] }),
        (Op::Testsome, Params::RequestSome { requests: vec![7], completed: vec![] }),
        (Op::Improbe, Params::P2p { peer: 1, tag: 4, bytes: 64, comm: 2, request: 0 }),
        (Op::Mrecv, Params::Mrecv { message: 0x5600_0400, bytes: 64, request: 0 }),
        (Op::Imrecv, Params::Mrecv { message: 0x5600_0400, bytes: 64, request: 0x5600_0500 }),
        (Op::CartSub, Params::CommCreate { parent: 4, comm: 5, members: vec![1, 3] }),
        (Op::IntercommCreate, Params::Intercomm { parent: 3, comm: 6, local: vec![0, 2], remote: vec![1, 3] }),
        (Op::Iallreduce, Params::Icoll { root: -1, bytes: 8, comm: 0, request: 0x5600_0600 }),
        (Op::Ibcast, Params::Icoll { root: 2, bytes: 80, comm: 5, request: 0x5600_0700 }),
        (Op::FileOpenIo, Params::Io { file: 7, offset: 0, bytes: 0, comm: 0, request: 0 }),
        (
            Op::FileOpen,
            Params::IoInfo {
                file: 7,
                comm: 3,
                amode: 9,
                disp: 0,
                etype_bytes: 0,
                view_bytes: 0,
                view_extent: 0,
                block_bytes: 0,
                hints: vec![(crate::trace::record::hint::CB_NODES, 2), (crate::trace::record::hint::CB_WRITE, 2)],
            },
        ),
        (
            Op::FileSetView,
            Params::IoInfo {
                file: 7,
                comm: 0,
                amode: 0,
                disp: 64,
                etype_bytes: 8,
                view_bytes: 32,
                view_extent: 128,
                block_bytes: 32,
                hints: vec![],
            },
        ),
        (Op::FileWriteAt, Params::Io { file: 7, offset: 1 << 33, bytes: 4096, comm: 0, request: 0 }),
        (Op::FileIread, Params::Io { file: 7, offset: 64, bytes: 32, comm: 0, request: 0x5600_0800 }),
        (Op::Cancel, Params::Request { request: 0x5600_0800 }),
        (Op::RequestFree, Params::Request { request: 0x5600_0200 }),
        (Op::Allgatherv, Params::Vcoll { root: -1, comm: 0, request: 0, send: vec![8], recv: vec![8, 16, 0, 300] }),
        (Op::Gatherv, Params::Vcoll { root: 2, comm: 4, request: 0, send: vec![12], recv: vec![] }),
        (Op::Iscatterv, Params::Vcoll { root: 1, comm: 0, request: 0x5600_0900, send: vec![1 << 40, 0], recv: vec![7] }),
        (Op::Ialltoallw, Params::Vcoll { root: -1, comm: 3, request: 0x5600_0a00, send: vec![4, 8], recv: vec![8, 4] }),
        (Op::ReduceScatter, Params::Vcoll { root: -1, comm: 0, request: 0, send: vec![], recv: vec![] }),
        (
            Op::NeighborAlltoallv,
            Params::Neighbor { comm: 6, request: 0, dsts: vec![PROC_NULL, 3], send: vec![0, 24], srcs: vec![1], recv: vec![40] },
        ),
        (
            Op::IneighborAllgather,
            Params::Neighbor { comm: 0, request: 0x5600_0b00, dsts: vec![], send: vec![], srcs: vec![2, 2], recv: vec![8, 8] },
        ),
        (Op::CommIdup, Params::CommCreate { parent: 0, comm: 7, members: vec![0, 1, 2, 3] }),
        (Op::WinCreate, rma(9, 5, -1, 0, 1 << 20, 0, 0, 0, vec![])),
        (Op::Raccumulate, rma(9, 0, 3, 1 << 35, 8, 1, 0, 0x5600_0c00, vec![])),
        (Op::WinLock, rma(9, 0, 0, 0, 0, 1, 0x1000, 0, vec![])),
        (Op::WinPost, rma(9, 0, -1, 0, 0, 0, 4, 0, vec![1, 3, 2])),
    ];
    shapes.into_iter().enumerate().map(|(t, (op, p))| rec(op, p, t as u64)).collect()
}

#[allow(clippy::too_many_arguments)]
fn rma(win: u32, comm: u32, target: i32, disp: u64, bytes: u64, op: u32, assert: u32, request: u64, group: Vec<i32>) -> Params {
    Params::Rma { win, comm, target, disp, bytes, op, assert, request, group }
}

#[test]
fn format_2_streams_still_decode() {
    // Two MPI_Wait records as format 2 wrote them: plain CPU time, the
    // request as a zigzag delta from the previous handle.
    let v2 = [14, NEW_SITE, 0x40, 100, 90, 0, 7, 10, 2, 14, 0, 0, 100, 90, 0, 7, 0, 2];
    let mut d = Decoder::v2();
    let (a, n) = d.decode(&v2).unwrap();
    let (b, m) = d.decode(&v2[n..]).unwrap();
    assert_eq!(n + m, v2.len());
    for (r, start) in [(&a, 100), (&b, 207)] {
        assert_eq!((r.caller, r.compute_wall_ns, r.compute_cpu_ns, r.t_start_ns), (0x40, 100, 90, start));
        assert_eq!(r.params, Params::Wait { request: 5, source: 1 });
    }
}

/// Two `MPI_Wait` records at one call site, 0x40: computing 100 ns wall,
/// 90 ns CPU, a 7 ns call, request 5 from source 1, the second starting
/// 100 ns after the first ends (start 100, then 207).
fn check_waits(a: &CallRecord, b: &CallRecord) {
    for (r, start) in [(a, 100), (b, 207)] {
        assert_eq!(
            (r.op, r.caller, r.compute_wall_ns, r.compute_cpu_ns, r.t_start_ns, r.t_end_ns),
            (Op::Wait, 0x40, 100, 90, start, start + 7)
        );
        assert_eq!(r.params, Params::Wait { request: 5, source: 1 });
    }
}

#[test]
fn format_3_streams_still_decode() {
    // As format 3 wrote them: op first, the new site as its address, CPU
    // time as zigzag(wall - cpu), the gap as a delta, the request as
    // RECENT + zigzag(5) and then as recent entry 0.
    let v3 = [14, NEW_SITE, 0x40, 100, 20, 0, 7, 18, 2, 14, 0, 0, 100, 20, 0, 7, 0, 2];
    let mut d = Decoder::new(Version::V3);
    let (a, n) = d.decode(&v3).unwrap();
    let (b, m) = d.decode(&v3[n..]).unwrap();
    assert_eq!(n + m, v3.len());
    check_waits(&a, &b);
}

#[test]
fn format_4_puts_flags_first_omits_a_sites_repeated_op_and_deltas_new_sites() {
    // The same two waits in format 4: flags, op, zigzag(0x40 - 0) = 0x80;
    // then SAME_OP and no op byte.
    let v4 = [NEW_SITE, 14, 0x80, 1, 100, 20, 0, 7, 18, 2, SAME_OP, 0, 100, 20, 0, 7, 0, 2];
    let mut d = Decoder::default();
    let (a, n) = d.decode(&v4).unwrap();
    let (b, m) = d.decode(&v4[n..]).unwrap();
    assert_eq!(n + m, v4.len());
    check_waits(&a, &b);
    let (mut enc, mut buf) = (Encoder::default(), [0u8; 256]);
    let n = enc.encode(&a, &mut buf).unwrap();
    let m = enc.encode(&b, &mut buf[n..]).unwrap();
    assert_eq!(&buf[..n + m], &v4);
    // A second site 0x30 below the first: a negative delta, one byte.
    let c = CallRecord { caller: 0x10, ..b.clone() };
    let k = enc.encode(&c, &mut buf).unwrap();
    assert_eq!(&buf[..3], &[NEW_SITE, 14, 0x5f]);
    assert_eq!(d.decode(&buf[..k]).unwrap().0.caller, 0x10);
}

#[test]
fn recent_requests_take_one_byte_and_the_table_evicts_the_oldest() {
    let mut enc = Encoder::default();
    let mut buf = vec![0u8; 4096];
    let handles: Vec<u64> = (0..RECENT as u64 + 1).map(|k| 0x7f00_0000_0000 + k * 0x1_0000_0000).collect();
    let waitall = |requests: Vec<u64>| rec(Op::Waitall, Params::Waitall { requests }, 0);
    let first = enc.encode(&waitall(handles.clone()), &mut buf).unwrap();
    let again = enc.encode(&waitall(handles[1..].to_vec()), &mut buf[first..]).unwrap();
    // The second list: its fixed fields, then one byte per handle.
    let fixed = enc.encode(&waitall(vec![]), &mut buf[first + again..]).unwrap();
    assert_eq!(again, fixed + RECENT);
    // handles[0] was evicted: it comes back as a delta.
    let back = enc.encode(&waitall(vec![handles[0]]), &mut buf[first + again + fixed..]).unwrap();
    assert!(back > fixed + 1);
    let mut dec = Decoder::default();
    let mut at = 0;
    for want in [handles.clone(), handles[1..].to_vec(), vec![], vec![handles[0]]] {
        let (r, n) = dec.decode(&buf[at..]).unwrap();
        assert_eq!(r.params, Params::Waitall { requests: want });
        at += n;
    }
    // An index past the handles seen so far is an error, not a guess.
    let bad = [NEW_SITE | CPU_IS_WALL, 15, 2, 0, 0, 1, 1, 0];
    assert_eq!(Decoder::default().decode(&bad), Err(DecodeError::BadRequest(0)));
}

#[test]
fn every_shape_round_trips_through_the_stream_state() {
    let (mut enc, mut dec) = (Encoder::default(), Decoder::default());
    let mut buf = vec![0u8; 8192];
    let mut pos = 0;
    for c in cases().iter().chain(cases().iter()) {
        pos += enc.encode(c, &mut buf[pos..]).unwrap();
    }
    let mut at = 0;
    for c in cases().iter().chain(cases().iter()) {
        let (d, n) = dec.decode(&buf[at..pos]).unwrap();
        assert_eq!(&d, c);
        at += n;
    }
    assert_eq!(at, pos);
}

/// Ops that predate the per-member counts keep their bytes: a legacy
/// `MPI_Gatherv` (code 35) record is still `root bytes [comm]`.
#[test]
fn legacy_v_collective_records_keep_their_encoding() {
    let r = CallRecord { caller: 0x10, ..CallRecord::bare(Op::GathervTotal, Params::Coll { root: -1, bytes: 100, comm: 0 }) };
    let mut buf = [0u8; 256];
    let n = Encoder::default().encode(&r, &mut buf).unwrap();
    assert_eq!(&buf[..n], &[NEW_SITE | CPU_IS_WALL | WORLD, 35, 0x20, 0, 0, 0, 1, 100]);
    assert_eq!(Decoder::default().decode(&buf[..n]).unwrap(), (r, n));
}

#[test]
fn a_ring_send_takes_at_most_twelve_bytes() {
    let mut enc = Encoder::default();
    let mut buf = [0u8; 256];
    let first = rec(Op::Send, Params::P2p { peer: 1, tag: 0, bytes: 8, comm: 0, request: 0 }, 0);
    enc.encode(&first, &mut buf).unwrap();
    let mut next = first.clone();
    (next.t_start_ns, next.t_end_ns, next.compute_wall_ns, next.compute_cpu_ns) = (first.t_end_ns + 60, first.t_end_ns + 300, 40, 40);
    let n = enc.encode(&next, &mut buf).unwrap();
    assert!(n <= 11, "{n} bytes");
}

#[test]
fn a_repeat_marker_reads_its_body_again_on_the_clock() {
    // Two plain records, then a 3-record body read 1 + 2 times, then one more.
    let all = cases();
    let body = &all[1..4];
    let (mut enc, mut dec) = (Encoder::default(), Decoder::default());
    let mut buf = vec![0u8; 8192];
    let mut pos = enc.encode(&all[0], &mut buf).unwrap();
    pos += enc.encode_repeat(3, 2, &mut buf[pos..]).unwrap();
    for r in body {
        pos += enc.encode(r, &mut buf[pos..]).unwrap();
    }
    pos += enc.encode(&all[4], &mut buf[pos..]).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        if let Some(c) = dec.next_copy() {
            out.push(c);
            continue;
        }
        if at == pos {
            break;
        }
        let (rec, n) = dec.decode_item(&buf[at..pos]).unwrap();
        out.extend(rec);
        at += n;
    }
    assert_eq!(out.len(), 1 + 3 * 3 + 1);
    assert_eq!(out[0], all[0]);
    for (j, r) in out[1..10].iter().enumerate() {
        let b = &body[j % 3];
        assert_eq!((r.op, &r.params, r.caller, r.compute_cpu_ns), (b.op, &b.params, b.caller, b.compute_cpu_ns));
        assert_eq!(r.t_end_ns - r.t_start_ns, b.t_end_ns - b.t_start_ns);
        // Each copy starts one compute block plus the body's gap after the previous end.
        let gap = b.t_start_ns as i64 - b.compute_wall_ns as i64 - all[j % 3].t_end_ns as i64;
        assert_eq!(r.t_start_ns as i64, out[j].t_end_ns as i64 + r.compute_wall_ns as i64 + gap, "{j}");
    }
    // The record after the copies decodes on the encoder's clock, which
    // counted the copies: it keeps its own times.
    assert_eq!(out[10], all[4]);
    // A marker inside a body is an error; so is a zero count.
    let mut d = Decoder::default();
    assert_eq!(d.decode_item(&[REPEAT, 2, 1]).unwrap(), (None, 3));
    assert_eq!(d.decode_item(&[REPEAT, 2, 1]), Err(DecodeError::BadRepeat("inside another repeat")));
    assert!(matches!(Decoder::default().decode_item(&[REPEAT, 2, 0]), Err(DecodeError::BadRepeat(_))));
}

#[test]
fn short_unknown_and_undefined_sites_are_errors() {
    let mut enc = Encoder::default();
    let mut buf = [0u8; 256];
    let r = rec(Op::Send, Params::P2p { peer: 1, tag: 0, bytes: 1, comm: 0, request: 0 }, 1);
    let n = enc.encode(&r, &mut buf).unwrap();
    assert_eq!(Decoder::default().decode(&buf[..n - 1]), Err(DecodeError::Short));
    let n2 = enc.encode(&r, &mut buf).unwrap(); // now refers to site 0
    assert_eq!(Decoder::default().decode(&buf[..n2]), Err(DecodeError::BadSite(0)));
    let n = Encoder::default().encode(&r, &mut buf).unwrap();
    buf[1] = 250;
    assert_eq!(Decoder::default().decode(&buf[..n]), Err(DecodeError::UnknownOp(250)));
    // A new site cannot take its op from an earlier record there.
    buf[0] |= SAME_OP;
    assert_eq!(Decoder::default().decode(&buf[..n]), Err(DecodeError::NoOp));
    assert!(enc.encode(&r, &mut buf[..10]).is_none());
}

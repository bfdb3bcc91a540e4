use super::*;
use crate::trace::record::ANY_SOURCE;

pub(crate) fn header(rank: u32) -> RankHeader {
    RankHeader { rank, ranks: 2, host: "h".into(), pid: 1, timing_source: TimingSource::ClockGettime, tsc_hz: None, epoch_unix_s: 0.0 }
}

pub(crate) fn send(i: u64) -> CallRecord {
    CallRecord {
        op: Op::Send,
        failed: false,
        caller: 0x1000 + i,
        compute_cpu_ns: i,
        compute_wall_ns: i,
        counters: None,
        t_start_ns: i,
        t_end_ns: i + 1,
        params: Params::P2p { peer: 1, tag: 0, bytes: 8, comm: 0, request: 0 },
    }
}

fn write_file(path: &Path, n: u64) -> Vec<CallRecord> {
    let f = File::create(path).unwrap();
    let mut w = RankWriter::create(f, &header(0)).unwrap();
    let mut all = Vec::new();
    for i in 0..n {
        let r = send(i);
        w.push(&r).unwrap();
        all.push(r);
    }
    let big = CallRecord { params: Params::Waitall { requests: (0..20_000).collect() }, op: Op::Waitall, ..send(n) };
    w.push(&big).unwrap();
    all.push(big);
    let modules = [Module { path: "/bin/app".into(), start: 0x1000, end: 0x9000, file_offset: 0x200 }];
    w.finish(&modules).unwrap();
    all
}

#[test]
fn many_chunks_round_trip_and_big_waitall_splits() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-0.trace");
    let written = write_file(&p, 30_000);
    let t = RankTrace::open(&p).unwrap();
    assert_eq!(t.header.rank, 0);
    assert!(t.record_chunks.len() > 3, "expected several chunks");
    let read: Vec<CallRecord> = t.records().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(read[..30_000], written[..30_000]);
    let reqs: Vec<u64> = read[30_000..]
        .iter()
        .flat_map(|r| match &r.params {
            Params::Waitall { requests } => requests.clone(),
            _ => panic!("not a waitall"),
        })
        .collect();
    assert_eq!(reqs, (0..20_000).collect::<Vec<u64>>());
    assert_eq!(t.footer.records as usize, read.len());
    assert_eq!(t.call_site(0x1010), CallSite { module: "app".into(), offset: 0x210 });
    assert_eq!(t.call_site(0x10).module, "?");
    let _ = ANY_SOURCE;
}

#[test]
fn truncated_file_is_one_line_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-0.trace");
    write_file(&p, 3000);
    let full = std::fs::read(&p).unwrap();
    for cut in [full.len() - 1, full.len() / 2, 20, 3] {
        std::fs::write(&p, &full[..cut]).unwrap();
        let e = RankTrace::open(&p).unwrap_err().to_string();
        assert!(e.starts_with(&p.display().to_string()), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn missing_end_marker_is_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-0.trace");
    let f = File::create(&p).unwrap();
    let mut w = RankWriter::create(f, &header(0)).unwrap();
    w.push(&send(1)).unwrap();
    w.flush().unwrap();
    drop(w);
    let e = RankTrace::open(&p).unwrap_err();
    assert!(matches!(e.kind, TraceErrorKind::NoEnd { .. }), "{e}");
}

#[test]
fn flipped_byte_is_detected_by_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-0.trace");
    write_file(&p, 100);
    let mut bytes = std::fs::read(&p).unwrap();
    let at = 200;
    bytes[at] ^= 0xff;
    std::fs::write(&p, &bytes).unwrap();
    let t = RankTrace::open(&p).unwrap();
    let errs: Vec<_> = t.records().unwrap().filter_map(|r| r.err()).collect();
    assert!(errs[0].to_string().contains("checksum"), "{}", errs[0]);
}

#[test]
fn salvage_keeps_every_whole_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-0.trace");
    let written = write_file(&p, 30_000);
    let full = std::fs::read(&p).unwrap();
    // Cut inside the third record chunk: the first two survive whole.
    let t = RankTrace::open(&p).unwrap();
    let (third_at, _) = t.record_chunks[2];
    let cut = third_at as usize + 10;
    std::fs::write(&p, &full[..cut]).unwrap();
    let (s, salvage) = RankTrace::open_salvage(&p).unwrap();
    let salvage = salvage.expect("a salvage report");
    assert_eq!(salvage.kept_bytes + salvage.dropped_bytes, cut as u64);
    assert!(matches!(salvage.reason, TraceErrorKind::Truncated { .. }));
    let read: Vec<CallRecord> = s.records().unwrap().map(|r| r.unwrap()).collect();
    assert!(!read.is_empty() && read.len() < 30_000, "{}", read.len());
    assert_eq!(read[..], written[..read.len()]);
    // A complete file needs no salvage.
    std::fs::write(&p, &full).unwrap();
    assert!(RankTrace::open_salvage(&p).unwrap().1.is_none());
}

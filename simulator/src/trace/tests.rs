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

/// A format-3 file as the interposer wrote it: JSON header, modules and
/// end chunks around a chunk of two `MPI_Wait` records in the format-3
/// layout.
#[test]
fn format_3_files_still_read() {
    use chunk::{write_chunk, MAGIC_V3};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-1.trace");
    let mut f = Vec::from(*MAGIC_V3);
    let head = br#"{"rank":1,"ranks":2,"host":"vm","pid":31986,"timing_source":"clock_gettime","tsc_hz":2445405720.5,"epoch_unix_s":1795488280.25}"#;
    write_chunk(&mut f, ChunkKind::Header, 0, head).unwrap();
    let records = [14, 4, 0x40, 100, 20, 0, 7, 18, 2, 14, 0, 0, 100, 20, 0, 7, 0, 2];
    write_chunk(&mut f, ChunkKind::Records, 0, &records).unwrap();
    let modules = br#"[{"path":"/bin/app","start":0,"end":4096,"file_offset":4096}]"#;
    write_chunk(&mut f, ChunkKind::Modules, 0, modules).unwrap();
    let end = br#"{"records":2,"failed_calls":0,"dropped_records":0,"overhead_cpu_ns":652,"overhead_wall_ns":50,"counters":"sw"}"#;
    write_chunk(&mut f, ChunkKind::End, 0, end).unwrap();
    std::fs::write(&p, &f).unwrap();
    let t = RankTrace::open(&p).unwrap();
    let want = RankHeader { rank: 1, host: "vm".into(), pid: 31986, tsc_hz: Some(2445405720.5), epoch_unix_s: 1795488280.25, ..header(0) };
    assert_eq!(t.header, want);
    assert_eq!((t.footer.records, t.footer.overhead_cpu_ns, t.footer.counters.as_str()), (2, 652, "sw"));
    assert_eq!(t.call_site(0x40), CallSite { module: "app".into(), offset: 0x1040 });
    let read: Vec<CallRecord> = t.records().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(
        read.iter().map(|r| (r.op, r.caller, r.compute_cpu_ns, r.t_start_ns)).collect::<Vec<_>>(),
        [(Op::Wait, 0x40, 90, 100), (Op::Wait, 0x40, 90, 207)]
    );
    assert_eq!(read[1].params, Params::Wait { request: 5, source: 1 });
}

/// Format 4's fixed parts (header, footer, module table) are binary:
/// a file with one record takes under 200 bytes (175: 56 of magic and
/// chunk headers, 38 of path) where format 3 took 570.
#[test]
fn format_4_fixed_parts_are_small() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-0.trace");
    let mut w =
        RankWriter::create(File::create(&p).unwrap(), &RankHeader { host: "node-17".into(), tsc_hz: Some(2.4e9), ..header(0) }).unwrap();
    w.push(&CallRecord { caller: 0x55c6_1000_0040, ..send(0x10) }).unwrap();
    w.set_overhead(652, 50);
    let note = "sw (hardware counters unavailable: no hardware cycle counter (a VM without a virtual PMU?) (No such file or directory (os error 2)))";
    w.set_counters(note);
    let app = Module {
        path: "/work/main/c-tests/build/fortran_calls".into(),
        start: 0x55c6_1000_0000,
        end: 0x55c6_1000_1000,
        file_offset: 0x1000,
    };
    let unused =
        Module { path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(), start: 0x7f00_0000_0000, end: 0x7f00_0010_0000, file_offset: 0 };
    w.finish(&[app.clone(), unused]).unwrap();
    let size = std::fs::metadata(&p).unwrap().len();
    assert!(size < 200, "{size} bytes");
    let t = RankTrace::open(&p).unwrap();
    assert_eq!(t.modules, [app]);
    assert_eq!((t.footer.overhead_cpu_ns, t.footer.overhead_wall_ns, t.footer.counters.as_str()), (652, 50, note));
}

/// A file on a disk that holds `limit` bytes: writes past it are short,
/// then fail with `ENOSPC`.
struct SmallDisk {
    file: File,
    limit: u64,
}

impl std::io::Write for SmallDisk {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let used = self.file.metadata()?.len();
        let room = self.limit.saturating_sub(used) as usize;
        if room == 0 {
            return Err(std::io::Error::from_raw_os_error(ENOSPC));
        }
        self.file.write(&buf[..buf.len().min(room)])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Linux's `ENOSPC`.
const ENOSPC: i32 = 28;

#[test]
fn a_full_disk_keeps_every_whole_chunk_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank-0.trace");
    let limit = 100_000;
    let file = File::create(&path).unwrap();
    let disk = SmallDisk { file: file.try_clone().unwrap(), limit };
    let mut w = RankWriter::create(disk, &header(0)).unwrap().rewind_with(file);
    let mut failed = false;
    for i in 0..40_000 {
        failed |= w.push(&send(i)).is_err();
    }
    assert!(failed && w.finish(&[]).is_err() && w.stopped().is_some());
    // The same records on a disk with room: how many fit in `limit` bytes.
    let full = dir.path().join("full.trace");
    write_file(&full, 40_000);
    let t = RankTrace::open(&full).unwrap();
    let ends: Vec<u64> = t.record_chunks.iter().map(|(at, h)| at + h.len as u64).collect();
    assert!(ends.len() > 1 && ends[0] < limit && ends[1] > limit, "the second chunk crosses the limit: {ends:?}");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size <= limit, "{size}");
    let (t, salvage) = RankTrace::open_salvage(&path).unwrap();
    let reason = salvage.unwrap().reason.to_string();
    assert!(reason.starts_with("writing stopped at byte") && reason.contains("os error 28"), "{reason}");
    let kept: Vec<CallRecord> = t.records().unwrap().map(Result::unwrap).collect();
    // Records per byte of the full file, times the bytes the disk held.
    let per_byte = 40_000.0 / ends[ends.len() - 1] as f64;
    let fit = per_byte * limit as f64;
    assert!(kept.len() as f64 >= 0.9 * fit, "{} records kept of about {fit:.0} that fit", kept.len());
    assert_eq!(kept, (0..kept.len() as u64).map(send).collect::<Vec<_>>());
}

/// The chunks of a complete file, as (offset, header) pairs.
fn chunks_of(bytes: &[u8]) -> Vec<(usize, chunk::ChunkHead)> {
    let mut at = MAGIC.len();
    let mut out = Vec::new();
    while at < bytes.len() {
        let h = chunk::parse_chunk_header(bytes[at..at + CHUNK_HEADER_BYTES].try_into().unwrap()).unwrap();
        out.push((at, h));
        at += CHUNK_HEADER_BYTES + h.len;
    }
    out
}

#[test]
fn a_file_holding_its_trace_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-0.trace");
    write_file(&p, 100);
    let once = std::fs::read(&p).unwrap();
    let mut twice = once.clone();
    twice.extend_from_slice(&once[MAGIC.len()..]);
    std::fs::write(&p, &twice).unwrap();
    let e = RankTrace::open(&p).unwrap_err().to_string();
    assert!(e.contains("rank-0.trace") && e.contains("two traces"), "{e}");
}

#[test]
fn a_record_chunk_repeated_disagrees_with_the_end_count() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rank-0.trace");
    write_file(&p, 100);
    let bytes = std::fs::read(&p).unwrap();
    let chunks = chunks_of(&bytes);
    let (at, h) = *chunks.iter().find(|(_, h)| h.kind == ChunkKind::Records).unwrap();
    let mut doubled = bytes[..at + CHUNK_HEADER_BYTES + h.len].to_vec();
    doubled.extend_from_slice(&bytes[at..]);
    std::fs::write(&p, &doubled).unwrap();
    let t = RankTrace::open(&p).unwrap();
    let last = t.records().unwrap().last().unwrap().unwrap_err().to_string();
    let counts = format!("records read but the end chunk counts {}", t.footer.records);
    assert!(last.contains("rank-0.trace") && last.contains(&counts), "{last}");
    let checked = check::check_file_for_test(&p);
    assert!(checked.error.as_deref().is_some_and(|e| e.contains(&counts)), "{checked:?}");
    assert!(checked.records > t.footer.records, "{checked:?}");
}

#[test]
fn unknown_meta_version_extra_rank_files_and_directories_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let meta = TraceMeta {
        format_version: 99,
        ranks: 1,
        mpi_library: "synthetic".into(),
        timing_source: TimingSource::ClockGettime,
        tsc_hz: None,
        command: vec![],
        mode: "trace".into(),
    };
    let write_meta = |m: &TraceMeta| std::fs::write(dir.path().join(META_FILE), serde_json::to_string(m).unwrap()).unwrap();
    write_meta(&meta);
    let e = read_meta(dir.path()).unwrap_err().to_string();
    assert!(e.contains("meta.json") && e.contains("format_version 99"), "{e}");
    write_meta(&TraceMeta { format_version: 1, ..meta });
    std::fs::create_dir(dir.path().join("rank-0.trace")).unwrap();
    let e = open_dir(dir.path()).unwrap_err().to_string();
    assert!(e.contains("rank-0.trace") && e.contains("not a regular file"), "{e}");
    std::fs::remove_dir(dir.path().join("rank-0.trace")).unwrap();
    write_file(&dir.path().join("rank-0.trace"), 3);
    assert!(open_dir(dir.path()).is_ok());
    write_file(&dir.path().join("rank-7.trace"), 3);
    let e = open_dir(dir.path()).unwrap_err().to_string();
    assert!(e.contains("rank-7.trace") && e.contains("beyond the 1 ranks"), "{e}");
}

#[test]
fn a_call_site_has_its_address_in_another_process_s_modules() {
    let module = |start: u64, file_offset: u64| Module { path: "/opt/app/lulesh2.0".into(), start, end: start + 0x2000, file_offset };
    let here = [module(0x5000_0000, 0), module(0x5000_4000, 0x3000)];
    let there = [
        Module { path: "/lib/libc.so.6".into(), start: 0x1000, end: 0x9000, file_offset: 0 },
        module(0x7000_0000, 0),
        module(0x7100_0000, 0x3000),
    ];
    for addr in [0x5000_0010, 0x5000_1fff, 0x5000_4123] {
        let site = call_site_in(&here, addr);
        let moved = address_in(&there, &site).expect("the module is mapped there");
        assert_eq!(call_site_in(&there, moved), site);
        assert_ne!(moved, addr);
    }
    assert_eq!(address_in(&there, &CallSite { module: "other".into(), offset: 0x10 }), None);
    assert_eq!(address_in(&there, &CallSite { module: "lulesh2.0".into(), offset: 0x2800 }), None, "between the mappings");
}

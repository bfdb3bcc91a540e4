//! Writes a small archive with the library's writer, reads it back with
//! [`otf2::read`] and checks `otf2-print` (Debian `otf2-tools`) reads it too.

use otf2::consts as c;
use otf2::{Comm, Event, Group, Posted, Writer};

fn write(dir: &std::path::Path) {
    let mut w = Writer::create(dir, "traces", 1_000_000_000).unwrap();
    let send = w.region("MPI_Send", c::ROLE_POINT2POINT as u8, c::PARADIGM_MPI as u8);
    let recv = w.region("MPI_Recv", c::ROLE_POINT2POINT as u8, c::PARADIGM_MPI as u8);
    let bar = w.region("MPI_Barrier", c::ROLE_COLL_OTHER as u8, c::PARADIGM_MPI as u8);
    for r in 0..2u64 {
        let g = w.location_group(&format!("rank {r}"));
        w.location(r, &format!("rank {r}"), g);
    }
    let locs = w.group(Group {
        name: "world locations".into(),
        kind: c::GROUP_COMM_LOCATIONS as u8,
        paradigm: c::PARADIGM_MPI as u8,
        members: vec![0, 1],
    });
    let world =
        w.group(Group { name: "world".into(), kind: c::GROUP_COMM_GROUP as u8, paradigm: c::PARADIGM_MPI as u8, members: vec![0, 1] });
    assert_eq!(locs, 0);
    let comm = w.comm(Comm { name: "MPI_COMM_WORLD".into(), group: world, parent: None });
    w.event(0, 100, &Event::Enter { region: send }).unwrap();
    w.event(0, 110, &Event::MpiSend { receiver: 1, comm, tag: 7, bytes: 800 }).unwrap();
    w.event(0, 150, &Event::Leave { region: send }).unwrap();
    w.event(1, 90, &Event::Enter { region: recv }).unwrap();
    w.event(1, 160, &Event::MpiRecv { sender: 0, comm, tag: 7, bytes: 800 }).unwrap();
    w.event(1, 170, &Event::Leave { region: recv }).unwrap();
    let irecv = Event::MpiIrecvRequest { request: 9, posted: Some(Posted { sender: 1, comm, tag: u32::MAX, bytes: 64 }) };
    w.event(0, 180, &irecv).unwrap();
    w.event(0, 181, &Event::MpiRequestCancelled { request: 9 }).unwrap();
    for r in 0..2u64 {
        w.event(r, 200, &Event::Enter { region: bar }).unwrap();
        w.event(r, 201, &Event::MpiCollectiveBegin).unwrap();
        let end =
            Event::MpiCollectiveEnd { op: c::BARRIER as u8, comm, root: c::UNDEFINED_UINT32, sent: 0, received: 0, counts: vec![r, 7] };
        w.event(r, 250, &end).unwrap();
        w.event(r, 251, &Event::Leave { region: bar }).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn written_archive_reads_back_and_otf2_print_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let a = otf2::read(dir.path()).unwrap();
    assert_eq!(a.resolution, 1_000_000_000);
    assert_eq!(a.locations.len(), 2);
    assert_eq!(a.events[&0][1], (110, Event::MpiSend { receiver: 1, comm: 0, tag: 7, bytes: 800 }));
    assert_eq!(a.events[&1].len(), 7);
    // Attributes: a receive's posted parameters, a collective's per-member counts.
    let posted = Some(Posted { sender: 1, comm: 0, tag: u32::MAX, bytes: 64 });
    assert_eq!(a.events[&0][3], (180, Event::MpiIrecvRequest { request: 9, posted }));
    assert_eq!(a.events[&0][4], (181, Event::MpiRequestCancelled { request: 9 }));
    let end = a.events[&1].iter().find_map(|(_, e)| match e {
        Event::MpiCollectiveEnd { counts, .. } => Some(counts.clone()),
        _ => None,
    });
    assert_eq!(end, Some(vec![1, 7]));
    assert_eq!(a.comms[&0].name, "MPI_COMM_WORLD");
    assert!(a.skipped.is_empty(), "{:?}", a.skipped);
    let out = std::process::Command::new("otf2-print").arg(dir.path().join("traces.otf2")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| l.starts_with("MPI_SEND ")).count(), 1, "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("MPI_COLLECTIVE_END ")).count(), 2, "{text}");
}

#[test]
fn a_second_archive_of_the_same_name_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let e = Writer::create(dir.path(), "traces", 1).err().unwrap().to_string();
    assert!(e.contains("traces.otf2") && !e.contains('\n'), "{e}");
}

#[test]
fn a_missing_or_truncated_archive_is_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = otf2::read(&dir.path().join("nope.otf2")).unwrap_err().to_string();
    assert!(e.contains("nope.otf2") && !e.contains('\n'), "{e}");
    write(dir.path());
    let evt = dir.path().join("traces/0.evt");
    let len = std::fs::metadata(&evt).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&evt).unwrap().set_len(len / 2).unwrap();
    let e = otf2::read(dir.path()).unwrap_err().to_string();
    assert!(e.contains("traces.otf2") && !e.contains('\n'), "{e}");
}

/// OTF2 refuses a time below the last one written on a location; the
/// writer writes such an event at the last time instead.
#[test]
fn a_time_below_the_last_written_takes_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::create(dir.path(), "traces", 1_000_000_000).unwrap();
    let block = w.region("compute", c::ROLE_CODE as u8, c::PARADIGM_USER as u8);
    let g = w.location_group("rank 0");
    w.location(0, "rank 0", g);
    w.event(0, 100, &Event::Enter { region: block }).unwrap();
    w.event(0, 95, &Event::Leave { region: block }).unwrap();
    w.finish().unwrap();
    let a = otf2::read(dir.path()).unwrap();
    let times: Vec<u64> = a.events[&0].iter().map(|(t, _)| *t).collect();
    assert_eq!(times, [100, 100]);
}

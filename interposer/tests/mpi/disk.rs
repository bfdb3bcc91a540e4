//! A full disk under a traced run: the whole chunks kept, the reason
//! recorded, the kept part replayed with salvage.

use super::*;

/// A network of 1 µs and 1 GB/s at any size, eager below 4 KiB.
fn one_us() -> simulator::network::P2pModel {
    let seg = simulator::network::Segment { max_bytes: None, intercept_s: 1e-6, bandwidth_bytes_per_s: 1e9 };
    simulator::network::P2pModel {
        eager_threshold_bytes: 4096,
        transfer: simulator::network::Piecewise { segments: vec![seg] },
        send_overhead: Default::default(),
        recv_overhead: Default::default(),
        rma: None,
    }
}

/// A trace directory on a 64 KiB tmpfs fills up: the application runs to
/// its end with unchanged output, one warning per rank, and each rank file
/// keeps every whole chunk it wrote and says where and why writing stopped.
#[test]
fn a_full_disk_keeps_the_whole_chunks_and_the_application_runs() {
    let mnt = tempfile::tempdir().unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"]).arg(mnt.path()).status();
    if !mounted.is_ok_and(|s| s.success()) {
        println!("SKIPPED a_full_disk_keeps_the_whole_chunks_and_the_application_runs: cannot mount a tmpfs (needs root)");
        return;
    }
    let out_dir = mnt.path().join("t");
    let out = mpirun(2, "jacobi2d", &["512", "2000"], &[("INTERPOSER_OUT", out_dir.to_str().unwrap())], true);
    let plain = mpirun(2, "jacobi2d", &["512", "2000"], &[], false);
    // The kept part replays with salvage, which says who was left waiting.
    let salvaged = simulator::replay::open_trace_dir_salvage(&out_dir, simulator::action::ComputeTime::Cpu).map(|(streams, lost)| {
        let p = simulator::platform::Platform::new("p", vec![simulator::platform::Host::new("n", 2)], one_us());
        (lost.len(), simulator::replay::Replay::new(&p).salvage().run(streams).map(|r| r.makespan_s > 0.0))
    });
    let mut checks = Vec::new();
    for r in 0..2 {
        checks.push(RankTrace::open_salvage(&out_dir.join(format!("rank-{r}.trace"))).map(|(t, s)| {
            let n = t.records().map(|rs| rs.count()).unwrap_or(0);
            (n, s.map(|s| s.reason.to_string()))
        }));
    }
    let _ = Command::new("umount").arg(mnt.path()).status();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(result_lines(&out), result_lines(&plain));
    assert!(warnings(&out).iter().any(|w| w.contains("No space left on device")), "{:?}", warnings(&out));
    // Whichever rank filled the disk kept most of the records.
    let files: Vec<(usize, Option<String>)> = checks.into_iter().map(|c| c.expect("each rank's file reads")).collect();
    let most = files.iter().map(|f| f.0).max().unwrap_or(0);
    assert!(most > 1000, "{files:?}");
    for (n, why) in &files {
        let why = why.as_deref().unwrap_or_default();
        assert!(why.starts_with("writing stopped at byte") && why.contains("os error 28"), "{n} records: {why}");
    }
    let (lost, replayed) = salvaged.expect("the salvaged trace opens");
    assert!(lost >= 1 && replayed.expect("the salvaged replay runs"), "{lost} incomplete files");
}

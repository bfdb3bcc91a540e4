use super::*;
use crate::energy::{PowerRange, Pstate};
use crate::platform::Platform;

/// Three pstates of 1, 0.8 and 0.6 Gflop/s.
fn host(switch_s: f64) -> Host {
    let pstates = [1e9, 0.8e9, 0.6e9]
        .iter()
        .map(|&speed_flops| Pstate { speed_flops, watts: Some(PowerRange::parse("100:120:200").unwrap()) })
        .collect();
    Host { pstates, pstate_switch_s: switch_s, ..Host::new("n0", 1) }
}

fn model() -> crate::network::P2pModel {
    let none = crate::network::Piecewise { segments: Vec::new() };
    crate::network::P2pModel {
        eager_threshold_bytes: 0,
        transfer: none.clone(),
        send_overhead: none.clone(),
        recv_overhead: none,
        rma: None,
    }
}

#[test]
fn a_block_at_a_slower_pstate_takes_the_speed_ratio_longer() {
    let h = host(0.0);
    let mut d = RankDvfs::new(&h);
    assert_eq!(d.compute(&h, 0, 0.0, 1.5), 1.5);
    let t = d.compute(&h, 2, 1.5, 1.5);
    assert!((t - 1.5 / 0.6).abs() < 1e-15, "{t}");
    assert_eq!(d.pstate(), 2);
    d.block_ended(&h, 1.5 + t);
    assert_eq!(d.pstate(), 0);
}

#[test]
fn a_switch_runs_its_duration_at_the_slower_speed() {
    // Waiting at pstate 2 from 0 to 1 with 0.1 s switches: the block of
    // 1 s that starts at the resume runs 0.1 s at 0.6 Gf (0.06 s of work),
    // then 0.94 s at full speed: 1.04 s.
    let h = host(0.1);
    let policy = Dvfs { wait_pstate: Some(2), ..Dvfs::default() };
    let mut d = RankDvfs::new(&h);
    d.wait(&h, &policy, 0.0, 1.0);
    let t = d.compute(&h, 0, 1.0, 1.0);
    assert!((t - 1.04).abs() < 1e-12, "{t}");
    // A block shorter than the switch's work ends inside it.
    let mut d = RankDvfs::new(&h);
    d.wait(&h, &policy, 0.0, 1.0);
    let t = d.compute(&h, 0, 1.02, 0.03);
    assert!((t - 0.05).abs() < 1e-12, "{t}");
    // No wait (resume = since) and no policy: no switch.
    let mut d = RankDvfs::new(&h);
    d.wait(&h, &policy, 1.0, 1.0);
    d.wait(&h, &Dvfs::default(), 0.0, 1.0);
    assert_eq!(d.compute(&h, 0, 1.0, 1.0), 1.0);
}

#[test]
fn specs_parse_and_pstates_are_checked_against_the_hosts() {
    let d = Dvfs::parse("wait=2").unwrap();
    assert_eq!(d.wait_pstate, Some(2));
    assert!(!d.is_static() && Dvfs::default().is_static());
    for bad in ["wait=x", "sleep=1", "regions=/nonexistent/r.csv"] {
        let e = Dvfs::parse(bad).unwrap_err().0;
        assert!(e.contains(bad.split('=').next_back().unwrap()) || e.contains(bad), "{bad}: {e}");
    }
    let mut p = Platform::new("t", vec![host(0.0)], model());
    assert!(d.check(&p).is_ok());
    let e = Dvfs::parse("wait=3").unwrap().check(&p).unwrap_err().0;
    assert!(e.contains("wait=3") && e.contains("n0") && e.contains("3 pstates"), "{e}");
    p.hosts[0].pstates.clear();
    assert!(d.check(&p).unwrap_err().0.contains("no pstates"));
}

#[test]
fn region_files_name_the_file_and_line_of_a_bad_row() {
    let path = std::path::Path::new("r.csv");
    let ok = RegionPstates::parse("region,pstate\n\"a.c:3:a.c:9\",2\nb+0x10:b+0x20,1\n", path).unwrap();
    assert_eq!(ok.get(crate::trace::region_key_id("a.c:3:a.c:9")), Some(2));
    assert_eq!(ok.get(crate::trace::region_key_id("b+0x10:b+0x20")), Some(1));
    assert_eq!(ok.check(3), Ok(()));
    assert_eq!(ok.check(2).unwrap_err().0, "r.csv:2: pstate 2");
    for (text, want) in [
        ("start-stop,ratio\n", "r.csv:1: expected the header"),
        ("region,pstate\na,1\n\na,2\n", "r.csv:4: region `a` given twice"),
        ("region,pstate\na,-1\n", "r.csv:2: pstate `-1`"),
        ("region,pstate\na,1,2\n", "r.csv:2: expected 2 fields"),
        ("", "r.csv: empty file"),
    ] {
        let e = RegionPstates::parse(text, path).unwrap_err().0;
        assert!(e.starts_with(want), "{text:?}: {e}");
    }
}

use super::*;
use crate::collectives::{CollAlgs, ReduceCost, Selector};
use crate::network::{Piecewise, Segment};

pub(crate) fn sample() -> Platform {
    let model = P2pModel {
        eager_threshold_bytes: 4096,
        transfer: Piecewise { segments: vec![Segment { max_bytes: None, intercept_s: 1e-6, bandwidth_bytes_per_s: 1e9 }] },
        send_overhead: Piecewise::default(),
        recv_overhead: Piecewise::default(),
        rma: None,
    };
    Platform::new("t", vec![Host::new("a", 2), Host::new("b", 2)], model)
}

fn write(dir: &Path, text: &str) -> PathBuf {
    let f = dir.join("p.toml");
    std::fs::write(&f, text).unwrap();
    f
}

#[test]
fn toml_round_trip_and_block_mapping() {
    let p = sample();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.toml");
    p.save(&f).unwrap();
    let q = Platform::load(&f).unwrap();
    assert_eq!(p, q);
    assert_eq!((q.host_of(0), q.host_of(1), q.host_of(2), q.host_of(4)), (0, 0, 1, 0));
}

#[test]
fn placement_is_host_of_for_every_rank() {
    let mut p = sample();
    p.hosts.push(Host::new("c", 3));
    for mapping in
        [Mapping::Block, Mapping::RoundRobin, Mapping::Explicit { hosts: vec![2, 0, 1, 1, 0, 2, 2, 0, 1, 0, 0, 1, 2, 1, 0, 2, 1] }]
    {
        p.mapping = mapping;
        let want: Vec<u32> = (0..17).map(|r| p.host_of(r) as u32).collect();
        assert_eq!(p.placement(17), want, "{:?}", p.mapping);
    }
}

#[test]
fn every_part_of_the_schema_round_trips_and_names_are_escaped() {
    let mut p = sample();
    p.name = "a \"quoted\" name\nwith a newline".into();
    p.hosts[0].speed_flops = Some(2e9);
    p.hosts[1].pstates =
        vec![Pstate { speed_flops: 2e9, watts: Some(PowerRange::parse("95:120:200").unwrap()) }, Pstate { speed_flops: 1e9, watts: None }];
    p.hosts[1].pstate = 1;
    p.smpi.async_small_thresh_bytes = Some(0);
    p.links = Some(FlowSharing {
        link_bw_bytes_per_s: 1.25e9,
        nominal_rate_bytes_per_s: 1e9,
        crosstraffic: 0.05,
        header_bytes: 142,
        topology: crate::network::topology::Topology::Crossbar,
        latency_per_link: true,
    });
    p.collectives.algs = CollAlgs::preset("ompi").unwrap();
    p.collectives.algs.set("allreduce", "rdb").unwrap();
    p.collectives.reduce = ReduceCost { intercept_s: 2e-7, s_per_byte: 1.5e-10, min_bytes: 4041 };
    p.no_oversubscription = true;
    p.fs = vec![crate::io::FileSystem {
        name: "scratch".into(),
        servers: 2,
        server_hosts: vec!["b".into()],
        stripe_size_bytes: 1 << 20,
        stripe_count: Some(2),
        metadata_latency_s: 1e-4,
        sync_latency_s: None,
        link_bytes_per_s: Some(1.25e9),
        disk: crate::io::Disk {
            cache_bytes: 1 << 26,
            read_cache_bytes: Some(1 << 30),
            cache_latency_s: 5e-6,
            cache_read_bytes_per_s: Some(2e10),
            cache_read_latency_s: Some(2e-6),
            drain_after_bytes: 1 << 24,
            cache_write: crate::network::Piecewise {
                segments: vec![
                    crate::network::Segment { max_bytes: Some(65536), intercept_s: 1e-6, bandwidth_bytes_per_s: 8e9 },
                    crate::network::Segment { max_bytes: None, intercept_s: 2e-5, bandwidth_bytes_per_s: 1e9 },
                ],
            },
            ..crate::io::Disk::new(1e-4, 5e8, 3e8)
        },
        cb_buffer_bytes: Some(1 << 22),
        cb_nodes: None,
        mpi_io: crate::io::MpiIo::Ompio,
    }];
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.toml");
    p.save(&f).unwrap();
    assert_eq!(Platform::load(&f).unwrap(), p);
}

#[test]
fn toml_gives_host_speeds_and_smpi_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = toml::to_string_pretty(&sample()).unwrap();
    text = text.replacen("speed_ratio = 1.0", "speed_ratio = 1.0\nspeed_flops = 2e9", 1);
    text.push_str("\n[smpi]\nasync_small_thresh_bytes = 0\n");
    let f = write(dir.path(), &text);
    let p = Platform::load(&f).unwrap();
    assert_eq!(
        (p.hosts[0].running_speed_flops(), p.hosts[1].running_speed_flops(), p.smpi.async_small_thresh_bytes),
        (Some(2e9), None, Some(0))
    );
    assert!(Platform::load_with(&f, &["smpi/os:0:1:0".into()]).unwrap_err().to_string().contains("XML"));
}

#[test]
fn one_sided_call_costs_round_trip_and_bad_ones_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = sample();
    p.smpi.rma_call_s = 1e-7;
    p.smpi.rma_calls = RmaCalls { lock_s: Some(3e-7), create_s: Some(2e-4), ..RmaCalls::default() };
    let f = dir.path().join("p.toml");
    p.save(&f).unwrap();
    let back = Platform::load(&f).unwrap();
    assert_eq!(back, p);
    let c = |k| back.smpi.rma_call_cost(k);
    assert_eq!((c(RmaCallKind::Lock), c(RmaCallKind::Unlock), c(RmaCallKind::Create)), (3e-7, 1e-7, 2e-4));
    p.smpi.rma_calls.create_s = None;
    assert_eq!(p.smpi.rma_call_cost(RmaCallKind::Create), 0.0, "a creation without its cost is free");
    let text = std::fs::read_to_string(&f).unwrap();
    for (from, to, want) in [("lock_s = 0.0000003", "lock_s = -1.0", "rma_calls.lock_s"), ("lock_s", "lok_s", "lok_s")] {
        assert!(text.contains(from), "{text}");
        let e = Platform::load(&write(dir.path(), &text.replacen(from, to, 1))).unwrap_err().to_string();
        assert!(e.contains(want) && e.lines().count() == 1, "{e}");
    }
}

#[test]
fn missing_and_bad_files_name_the_path() {
    let e = Platform::load(Path::new("/nonexistent/x.toml")).unwrap_err().to_string();
    assert!(e.starts_with("/nonexistent/x.toml:"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(&f, "hosts = []\n[network.intra]\neager_threshold_bytes = 1\ntransfer = []\n").unwrap();
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("bad.toml") && e.contains("hosts"), "{e}");
    assert_eq!(e.lines().count(), 1);
}

#[test]
fn unknown_keys_are_refused_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = toml::to_string_pretty(&sample()).unwrap();
    for (from, to, key) in [
        ("speed_ratio = 1.0", "speed_ratio = 1.0\nsped_flops = 1e9", "sped_flops"),
        ("name = \"t\"", "name = \"t\"\nhostz = 3", "hostz"),
        ("eager_threshold_bytes", "eagre_threshold_bytes", "eagre_threshold_bytes"),
    ] {
        let f = write(dir.path(), &text.replacen(from, to, 1));
        let e = Platform::load(&f).unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains(key) && e.lines().count() == 1, "{e}");
    }
    let f = write(dir.path(), &format!("{text}\n[links]\nbw_bytes_per_s = 1e9\ncrosstrafic = 0.05\n"));
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("crosstrafic"), "{e}");
}

#[test]
fn toml_pstates_load_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = toml::to_string_pretty(&sample()).unwrap();
    let ps = "pstate = 1\npstates = [{ speed_flops = 2e9, watts = \"95:120:200\" }, { speed_flops = 1e9, watts = \"93:150\" }]";
    text = text.replacen("speed_ratio = 1.0", &format!("speed_ratio = 1.0\n{ps}"), 1);
    let f = write(dir.path(), &text);
    let p = Platform::load(&f).unwrap();
    assert_eq!((p.hosts[0].running_speed_flops(), p.hosts[0].pstate_time_scale()), (Some(1e9), 2.0));
    assert_eq!(p.hosts[0].watts().unwrap().epsilon_w, 93.0);
    assert!(p.hosts[1].pstates.is_empty());
    write(dir.path(), &text.replace("pstate = 1", "pstate = 5"));
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("hosts[0].pstate 5 is out of range"), "{e}");
    write(dir.path(), &text.replace("93:150", "93"));
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("p.toml") && e.contains("Idle:Epsilon:AllCores") && e.lines().count() == 1, "{e}");
    write(dir.path(), &text.replace("pstate = 1", "pstate = 1\nrecorded_pstate = 0\nspeed_flops = 1e9"));
    assert!(Platform::load(&f).unwrap_err().to_string().contains("not both"));
}

#[test]
fn recorded_pstate_scales_time_and_set_pstate_picks_hosts() {
    let mut p = sample();
    let ps = |s: f64| Pstate { speed_flops: s, watts: None };
    p.hosts[0].pstates = vec![ps(2e9), ps(1e9)];
    p.hosts[0].pstate = 1;
    assert_eq!((p.hosts[0].running_speed_flops(), p.hosts[0].pstate_time_scale()), (Some(1e9), 2.0));
    p.set_pstate("0").unwrap();
    assert_eq!(p.hosts[0].pstate, 0);
    p.set_pstate("a=1").unwrap();
    assert_eq!(p.hosts[0].pstate, 1);
    assert!(p.set_pstate("b=1").unwrap_err().0.contains("host b has 0 pstates"));
    assert!(p.set_pstate("0=2").unwrap_err().0.contains("2 pstates"));
    assert!(p.set_pstate("zz=0").unwrap_err().0.contains("no host named zz"));
    p.hosts[0].pstate = 2;
    assert!(p.validate().unwrap_err().0.contains("pstate 2 is out of range"));
}

#[test]
fn the_collectives_table_sets_the_selector_and_the_reduction_cost() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.toml");
    sample().save(&f).unwrap();
    let x = Platform::load(&f).unwrap().collectives;
    assert_eq!((x.algs, x.reduce), (CollAlgs::mpich(), ReduceCost::default()));
    let mut ompi = sample();
    ompi.collectives.algs = CollAlgs::preset("ompi").unwrap();
    ompi.collectives.reduce = ReduceCost { intercept_s: 2e-7, s_per_byte: 1.5e-10, min_bytes: 0 };
    ompi.save(&f).unwrap();
    let p = Platform::load(&f).unwrap();
    assert_eq!((p.collectives.algs.selector, p.collectives.reduce), (Selector::Ompi, ompi.collectives.reduce));
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.replace("\"ompi\"", "\"openmpi\"")).unwrap();
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("p.toml") && e.contains("collectives.selector") && e.contains("`openmpi`") && e.lines().count() == 1, "{e}");
    let mut bad = ompi.clone();
    bad.collectives.reduce.s_per_byte = -1.0;
    bad.save(&f).unwrap();
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("p.toml") && e.contains("collectives.reduce_s_per_byte") && e.lines().count() == 1, "{e}");
    std::fs::write(&f, text.replace("selector", "selektor")).unwrap();
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("p.toml") && e.contains("selektor") && e.lines().count() == 1, "{e}");
}

#[test]
fn a_file_system_on_an_unknown_host_or_with_a_negative_bandwidth_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = toml::to_string_pretty(&sample()).unwrap();
    let fs = "[[fs]]\nname = \"s\"\nserver_hosts = [\"zz\"]\nstripe_size_bytes = 65536\n\
              disk = { latency_s = 0.0, read_bytes_per_s = 1e8, write_bytes_per_s = 1e8 }\n";
    let f = write(dir.path(), &format!("{text}\n{fs}"));
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("p.toml") && e.contains("fs[0].server_hosts: `zz`") && e.lines().count() == 1, "{e}");
    let f = write(
        dir.path(),
        &format!("{text}\n{}", fs.replace("[\"zz\"]", "[\"a\"]").replace("write_bytes_per_s = 1e8", "write_bytes_per_s = -5")),
    );
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("fs[0].disk.write_bytes_per_s") && e.lines().count() == 1, "{e}");
    let ok = fs.replace("[\"zz\"]", "[\"a\"]");
    let pieces = ", cache_write = [{ max_bytes = 4096, intercept_s = 1e-6, bandwidth_bytes_per_s = 1e9 }, { intercept_s = 1e-6, bandwidth_bytes_per_s = 0 }] }";
    let f = write(dir.path(), &format!("{text}\n{}", ok.replace(" }", pieces)));
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("fs[0].disk.cache_write: segment 1: bandwidth_bytes_per_s") && e.lines().count() == 1, "{e}");
    let f = write(dir.path(), &format!("{text}\n{}", ok.replace("stripe_size_bytes", "mpi_io = \"mpich\"\nstripe_size_bytes")));
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("p.toml") && e.contains("mpi_io") && e.contains("mpich") && e.lines().count() == 1, "{e}");
    let f = write(dir.path(), &format!("{text}\n{ok}"));
    assert_eq!(Platform::load(&f).unwrap().fs[0].mpi_io, crate::io::MpiIo::Romio, "a file system without mpi_io is ROMIO's");
}

#[test]
fn waiting_ranks_and_per_call_costs_default_round_trip_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.toml");
    let p = sample();
    p.save(&f).unwrap();
    let text = std::fs::read_to_string(&f).unwrap();
    // Defaults are not written, so older readers and files agree.
    assert!(!text.contains("waiting_ranks") && !text.contains("irecv_s"), "{text}");
    let q = Platform::load(&f).unwrap();
    assert_eq!((q.waiting_ranks, q.smpi.irecv_s, q.smpi.wait_s), (WaitingRanks::Poll, 0.0, 0.0));
    let mut p = sample();
    p.waiting_ranks = WaitingRanks::Yield;
    p.smpi.irecv_s = 1.5e-8;
    p.smpi.wait_s = 7e-9;
    p.smpi.poll_s = 6e-8;
    p.save(&f).unwrap();
    assert_eq!(Platform::load(&f).unwrap(), p);
    let text = std::fs::read_to_string(&f).unwrap();
    for field in ["wait_s", "poll_s"] {
        let negative: String =
            text.lines().map(|l| if l.starts_with(field) { format!("{field} = -1.0\n") } else { format!("{l}\n") }).collect();
        let bad = write(dir.path(), &negative);
        let e = Platform::load(&bad).unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains(&format!("smpi.{field}")), "{e}");
    }
    let bad = write(dir.path(), &text.replace("\"yield\"", "\"spin\""));
    let e = Platform::load(&bad).unwrap_err().to_string();
    assert!(e.contains("p.toml") && e.contains("waiting_ranks") && e.contains("line"), "{e}");
}

#[test]
fn rates_and_times_that_overflow_are_refused_by_their_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let base = "name = \"t\"\n[[hosts]]\nname = \"a\"\ncores = 2\n[network.intra]\neager_threshold_bytes = 4096\n";
    for (seg, needle) in [
        ("intercept_s = 1e-3, bandwidth_bytes_per_s = 0", "segment 0: bandwidth_bytes_per_s must be > 0, got 0"),
        ("intercept_s = 1e-3, bandwidth_bytes_per_s = 1e-308", "segment 0: bandwidth_bytes_per_s 1e-308 makes a 9007199254740992-byte"),
        ("intercept_s = inf, bandwidth_bytes_per_s = 1e9", "segment 0: intercept_s must be finite, got inf"),
        ("intercept_s = -1, bandwidth_bytes_per_s = 1e9", "the value at its first size 0 B must be >= 0"),
    ] {
        let f = write(dir.path(), &format!("{base}transfer = [ {{ {seg} }} ]\n"));
        let e = Platform::load(&f).unwrap_err().to_string();
        assert!(e.contains("p.toml: network.intra.transfer: ") && e.contains(needle), "{e} !~ {needle}");
    }
    let f = write(dir.path(), &format!("{base}transfer = [ {{ intercept_s = 0, bandwidth_bytes_per_s = 1e9 }} ]\n"));
    let e = Platform::load_limited(&f, &[], 0).unwrap_err().to_string();
    assert!(e.contains("1 [[hosts]]; at most 0 (--max-hosts)"), "{e}");
    let e = Platform::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
}

#[test]
fn measured_one_sided_costs_round_trip_and_a_bad_one_is_named() {
    let mut p = sample();
    let line = |s: f64| Piecewise { segments: vec![Segment { max_bytes: None, intercept_s: s, bandwidth_bytes_per_s: 1e10 }] };
    p.network.intra.rma = Some(crate::network::rma::RmaCosts { put: line(1.3e-6), get: line(1.4e-6), accumulate: line(2.8e-6) });
    let dir = tempfile::tempdir().unwrap();
    let text = toml::to_string_pretty(&p).unwrap();
    assert!(text.contains("[[network.intra.rma.put]]"), "{text}");
    assert_eq!(Platform::load(&write(dir.path(), &text)).unwrap(), p);
    let f = write(dir.path(), &text.replacen("intercept_s = 0.0000014", "intercept_s = -1.0", 1));
    let e = Platform::load(&f).unwrap_err().to_string();
    assert!(e.contains("p.toml") && e.contains("rma.get: segment 0") && e.lines().count() == 1, "{e}");
}

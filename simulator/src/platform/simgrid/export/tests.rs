use super::*;

#[test]
fn factors_are_written_to_round_trip() {
    let p = SmpiProps {
        os: vec![(0, 1e-7, 0.0)],
        ois: vec![(0, 1e-7, 0.0)],
        or: vec![(0, 1e-7, 1e-11)],
        bw_factor: vec![(0, 0.1234567891234)],
        lat_factor: vec![(0, 1.0), (1039, 2.5)],
        async_small_thresh: 0,
        send_is_detached_thresh: 65536,
        wtime_s: None,
        iprobe_s: None,
        link_latency_s: 1e-6,
        link_bandwidth_bytes_per_s: 1e9,
    };
    let props = p.props();
    let get = |id: &str| props.iter().find(|(k, _)| *k == id).map(|(_, v)| v.clone());
    assert_eq!(get("smpi/bw-factor").as_deref(), Some("0:0.1234567891234"));
    assert_eq!(get("smpi/lat-factor").as_deref(), Some("0:1;1039:2.5"));
    assert_eq!(get("network/TCP-gamma"), None);
    // 4 MiB / (2 · 1 s) is below 1 GBps: gamma is raised so that it does not bound the rate.
    let slow = SmpiProps { link_latency_s: 1.0, ..p };
    let gamma = slow.props().into_iter().find(|(k, _)| *k == "network/TCP-gamma").unwrap().1;
    assert!(gamma.parse::<f64>().unwrap() / 2.0 >= 1e9, "{gamma}");
}

use std::path::Path;

use crate::energy::{PowerRange, Pstate};
use crate::network::{FlowSharing, P2pModel, Segment};
use crate::platform::Host;

fn seg(max_bytes: Option<u64>, intercept_s: f64, bandwidth_bytes_per_s: f64) -> Segment {
    Segment { max_bytes, intercept_s, bandwidth_bytes_per_s }
}

fn pw(segments: Vec<Segment>) -> Piecewise {
    Piecewise { segments }
}

/// Four hosts of two pstates on a 2×2 torus, with a three-piece
/// inter-host model.
fn platform() -> Platform {
    let pstates = vec![
        Pstate { speed_flops: 2e9, watts: Some(PowerRange { idle_w: 95.0, epsilon_w: 120.0, all_cores_w: 200.0 }) },
        Pstate { speed_flops: 1e9, watts: Some(PowerRange { idle_w: 93.0, epsilon_w: 110.0, all_cores_w: 150.0 }) },
    ];
    let hosts = (0..4).map(|i| Host { pstates: pstates.clone(), pstate: 1, ..Host::new(format!("n{i}"), 2) }).collect();
    let inter = P2pModel {
        eager_threshold_bytes: 65536,
        transfer: pw(vec![seg(Some(1024), 2e-6, 1e9), seg(Some(65536), 5e-6, 2e9), seg(None, 2e-5, 5e9)]),
        send_overhead: pw(vec![seg(Some(4096), 3e-7, 1e10), seg(None, 1e-6, f64::INFINITY)]),
        recv_overhead: pw(vec![seg(Some(1), 1e-7, f64::INFINITY), seg(None, 4e-7, 2e10)]),
        rma: None,
    };
    let intra = P2pModel { transfer: pw(vec![seg(None, 5e-7, 1e10)]), ..inter.clone() };
    let mut p = Platform::new("rt", hosts, intra);
    p.network.inter = Some(inter);
    p.links = Some(FlowSharing {
        link_bw_bytes_per_s: 5e9,
        nominal_rate_bytes_per_s: 0.0,
        crosstraffic: 0.05,
        header_bytes: 0,
        topology: Topology::Torus { dims: vec![2, 2] },
        latency_per_link: false,
    });
    p
}

/// Sizes around every threshold and the header, 0 B … 1 MB.
fn sizes() -> Vec<u64> {
    let mut s: Vec<u64> = [0, 1, 2, 15, 16, 17, 100, 1023, 1024, 1025, 4095, 4096, 4097, 65535, 65536, 65537, 1_000_000].to_vec();
    s.extend((0..=20).map(|k| 1u64 << k));
    s
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

#[test]
fn a_platform_round_trips_through_simgrid_xml() {
    let p = platform();
    let text = to_xml(&p).unwrap();
    let back = super::super::parse(&text, Path::new("rt.xml"), &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let (want, got) = (p.network.inter.as_ref().unwrap(), back.network.inter.as_ref().unwrap());
    for s in sizes() {
        let (w, g) = (want.transfer.eval(s), got.transfer.eval(s));
        assert!(close(w, g), "transfer {s} B: {g} vs {w}\n{text}");
        if s > 0 {
            for (name, w, g) in [("send", &want.send_overhead, &got.send_overhead), ("recv", &want.recv_overhead, &got.recv_overhead)] {
                assert!(close(w.eval(s), g.eval(s)), "{name} overhead {s} B: {} vs {}\n{text}", g.eval(s), w.eval(s));
            }
        }
    }
    // SMPI never charges overheads to a 0-byte message.
    assert_eq!((got.send_overhead.eval(0), got.recv_overhead.eval(0)), (0.0, 0.0));
    assert_eq!(got.eager_threshold_bytes, 65536);
    assert_eq!(back.smpi.async_small_thresh_bytes, Some(65536));
    assert_eq!(back.hosts.len(), 4);
    for h in &back.hosts {
        assert_eq!((h.cores, &h.pstates, h.pstate), (2, &p.hosts[0].pstates, 1));
    }
    let links = back.links.unwrap();
    assert_eq!((links.link_bw_bytes_per_s, links.crosstraffic, links.topology), (5e9, 0.05, Topology::Torus { dims: vec![2, 2] }));
}

#[test]
fn gamma_and_crosstraffic_are_written_when_they_differ_from_simgrids_defaults() {
    let mut p = platform();
    p.hosts.iter_mut().for_each(|h| (h.pstates, h.pstate, h.speed_flops) = (Vec::new(), 0, Some(3e9)));
    let inter = p.network.inter.as_mut().unwrap();
    inter.transfer = pw(vec![seg(Some(100), 1.0, 1e9), seg(None, 2.0, 1e9)]);
    let l = p.links.as_mut().unwrap();
    (l.crosstraffic, l.topology, l.link_bw_bytes_per_s) = (0.0, Topology::Crossbar, 1e9);
    let text = to_xml(&p).unwrap();
    assert!(text.contains("network/TCP-gamma") && text.contains("<prop id=\"network/crosstraffic\" value=\"no\"/>"), "{text}");
    let back = super::super::parse(&text, Path::new("rt.xml"), &[]).unwrap();
    for s in sizes() {
        let (w, g) = (p.network.inter.as_ref().unwrap().transfer.eval(s), back.network.inter.as_ref().unwrap().transfer.eval(s));
        assert!(close(w, g), "transfer {s} B: {g} vs {w}\n{text}");
    }
    assert_eq!(back.hosts[0].speed_flops, Some(3e9));
    assert_eq!(back.links.unwrap().crosstraffic, 0.0);
}

/// An intercept below 16 bytes' worth of the bandwidth needs a negative
/// latency factor: it is written as 0, and those sizes take at most 16
/// bytes' time more.
#[test]
fn a_latency_below_the_header_time_is_floored() {
    let intra = P2pModel {
        eager_threshold_bytes: 1024,
        transfer: pw(vec![seg(Some(64), 1e-9, 1e8), seg(None, 1e-6, 1e9)]),
        send_overhead: Piecewise::default(),
        recv_overhead: Piecewise::default(),
        rma: None,
    };
    let p = Platform::new("low", vec![Host::new("a", 1), Host::new("b", 1)], intra.clone());
    let props = SmpiProps::from_platform(&p).unwrap();
    assert_eq!(props.lat_factor[0], (0, 0.0));
    assert_eq!(props.link_bandwidth_bytes_per_s, 1e9);
    let back = super::super::parse(&to_xml(&p).unwrap(), Path::new("low.xml"), &[]).unwrap();
    let got = back.network.inter.unwrap();
    assert!(close(got.transfer.eval(1000), intra.transfer.eval(1000)));
    let (w, g) = (intra.transfer.eval(10), got.transfer.eval(10));
    assert!(g >= w && g - w <= 16.0 / 1e8, "{g} vs {w}");
}

#[test]
fn what_simgrid_cannot_express_is_an_error() {
    let mut p = platform();
    p.network.inter.as_mut().unwrap().transfer.segments[2].bandwidth_bytes_per_s = f64::INFINITY;
    assert_eq!(to_xml(&p).unwrap_err(), "transfer segment 2: bandwidth_bytes_per_s must be finite for SMPI");
    let mut p = platform();
    p.hosts[3].cores = 4;
    assert!(to_xml(&p).unwrap_err().starts_with("host n3 differs from host n0"));
    let mut p = platform();
    p.links.as_mut().unwrap().crosstraffic = 0.5;
    assert!(to_xml(&p).unwrap_err().contains("crosstraffic 0.5"));
}

#[test]
fn a_backbone_is_written_as_bb_bw_and_reads_back() {
    let mut p = platform();
    p.links.as_mut().unwrap().topology = Topology::Backbone { ratio: 4.0 };
    let text = to_xml(&p).unwrap();
    assert!(text.contains(" bb_bw=\"") && text.contains(" bb_lat=\"0s\""), "{text}");
    let back = super::super::parse(&text, Path::new("rt.xml"), &[]).unwrap();
    assert_eq!(back.links.unwrap().topology, Topology::Backbone { ratio: 4.0 });
    for s in sizes() {
        let (w, g) = (p.network.inter.as_ref().unwrap().transfer.eval(s), back.network.inter.as_ref().unwrap().transfer.eval(s));
        assert!(close(w, g), "transfer {s} B: {g} vs {w}\n{text}");
    }
}

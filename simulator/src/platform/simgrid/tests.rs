use std::path::Path;

use super::*;
use crate::collectives::{Alg, Coll, CollAlgs, Selector};
use crate::network::topology::Topology;
use crate::platform::{Mapping, Platform, PlatformError};

fn xml(cluster_attrs: &str, config: &str) -> String {
    format!(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n\
         <!-- a comment with <cluster> inside -->\n{config}\n<zone id=\"w\" routing=\"Full\">\n\
         <cluster id=\"c\" prefix=\"node-\" suffix=\".x\" {cluster_attrs}/>\n</zone>\n</platform>\n"
    )
}

fn load(text: &str, opts: &[&str]) -> Result<Platform, PlatformError> {
    let opts: Vec<String> = opts.iter().map(|s| s.to_string()).collect();
    parse(text, Path::new("p.xml"), &opts)
}

const SLOW: &str = r#"radical="0-1" speed="1Gf" core="1" bw="1MBps" lat="1s""#;

#[test]
fn cluster_gives_hosts_speeds_and_round_robin_mapping() {
    let p = load(&xml(r#"radical="0-2,7" speed="2.5Gf,1Gf" core="4" bw="10Gbps" lat="2us""#, ""), &[]).unwrap();
    let names: Vec<&str> = p.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["node-0.x", "node-1.x", "node-2.x", "node-7.x"]);
    assert!(p.hosts.iter().all(|h| h.cores == 4));
    assert_eq!(p.mapping, Mapping::RoundRobin);
    assert_eq!(p.hosts[3].running_speed_flops(), Some(2.5e9));
    assert_eq!(p.smpi.async_small_thresh_bytes, Some(0));
    let inter = p.network.inter.as_ref().unwrap();
    assert_eq!(inter.eager_threshold_bytes, 65536);
    let f = p.links.clone().unwrap();
    assert_eq!((f.link_bw_bytes_per_s, f.header_bytes, f.crosstraffic), (1.25e9, 16, 0.05));
}

/// Makespans printed by `smpirun -replay` (SimGrid 3.32, default SMPI
/// model) of one `send`/`recv` of s bytes between two hosts of a cluster
/// with 1 s links, at 1 MBps and 1 GBps (the latter bound by TCP-gamma).
#[test]
fn transfer_matches_smpirun_replay_of_single_messages() {
    let cases = [
        ("1MBps", 0, 4.029360),
        ("1MBps", 241, 4.029656),
        ("1MBps", 242, 3.907583),
        ("1MBps", 731, 3.902784),
        ("1MBps", 1426, 3.223868),
        ("1MBps", 65471, 23.356816),
        ("1MBps", 1_000_000, 24.350262),
        ("1GBps", 0, 4.029359),
        ("1GBps", 1_000_000, 24.301015),
    ];
    for (bw, s, want) in cases {
        let p = load(&xml(&SLOW.replace("1MBps", bw), ""), &[]).unwrap();
        let got = p.network.inter.as_ref().unwrap().transfer.eval(s);
        assert!((got - want).abs() < 2e-6, "{bw} {s} B: {got} vs smpirun {want}");
    }
}

#[test]
fn config_props_and_options_override_defaults() {
    let config = r#"<config><prop id="smpi/send-is-detached-thresh" value="1024"/><prop id="smpi/os" value="0:1e-6:1e-9"/></config>"#;
    let p = load(&xml(SLOW, config), &["smpi/async-small-thresh:100", "network/crosstraffic:no"]).unwrap();
    let inter = p.network.inter.as_ref().unwrap();
    assert_eq!(inter.eager_threshold_bytes, 1024);
    assert_eq!(p.smpi.async_small_thresh_bytes, Some(100));
    assert_eq!(p.links.clone().unwrap().crosstraffic, 0.0);
    // smpi/os: threshold 0 applies to sizes > 0.
    assert_eq!(inter.send_overhead.eval(0), 0.0);
    assert!((inter.send_overhead.eval(1000) - 2e-6).abs() < 1e-15);
    assert_eq!(p.collectives.algs, CollAlgs::smpi());
    let p = load(&xml(SLOW, ""), &["smpi/coll-selector:mpich", "smpi/barrier:ompi_basic_linear"]).unwrap();
    assert_eq!((p.collectives.algs.selector, p.collectives.algs.get(Coll::Barrier)), (Selector::Mpich, Some(Alg::Linear)));
    let p = load(&xml(SLOW, ""), &["smpi/coll-selector:ompi", "smpi/alltoall:bruck"]).unwrap();
    assert_eq!((p.collectives.algs.selector, p.collectives.algs.get(Coll::Alltoall)), (Selector::SimgridOmpi, Some(Alg::Bruck)));
    let e = load(&xml(SLOW, ""), &["smpi/allreduce:bogus"]).unwrap_err().to_string();
    assert!(e.contains("smpi/allreduce: unknown algorithm `bogus` for allreduce (valid: rdb, "), "{e}");
    let p = load(&xml(SLOW, ""), &["network/model:CM02"]).unwrap();
    assert!((p.network.inter.as_ref().unwrap().transfer.eval(1_000_000) - 3.0).abs() < 1e-9);
}

#[test]
fn unsupported_or_bad_platforms_are_one_line_errors() {
    for (text, needle) in [
        (xml(&SLOW.replace("1s", "fast"), ""), "line 7: <cluster>: bad lat `fast`"),
        (xml(&format!("{SLOW} topology=\"TORUS\""), ""), "line 7: <cluster>: bad topo_parameters ``"),
        (xml(&format!("{SLOW} topology=\"TORUS\" topo_parameters=\"3\""), ""), "torus dims [3] do not give the 2 hosts"),
        (xml(&format!("{SLOW} topology=\"DRAGONFLY\""), ""), "topology DRAGONFLY is not supported"),
        (xml(r#"radical="0-1" speed="1Gf""#, ""), "line 7: <cluster>: missing attribute bw"),
        ("<platform><host id=\"a\" speed=\"1Gf\"/></platform>".to_string(), "line 1: <host> platforms are not supported"),
        ("<platform></platform>".to_string(), "no <cluster> element"),
        (xml(SLOW, ""), "network/model X is not supported"),
        (xml(SLOW, "").replace("</zone>\n</platform>\n", ""), "line 7: malformed XML: the root node was opened but never closed"),
        (xml(SLOW, "").replace("</zone>", "</zon>"), "line 8: malformed XML: expected 'zone' tag, not 'zon'"),
        (xml(&format!("{SLOW} bandwith=\"1GBps\""), ""), "line 7: <cluster>: unknown attribute `bandwith` (valid: id, prefix, "),
        (xml(&format!("{SLOW} limiter_link=\"1GBps\""), ""), "line 7: <cluster>: limiter_link is not supported"),
        (xml(&SLOW.replace("1Gf", "0f"), ""), "line 7: <cluster>: bad speed `0f`"),
        (xml(&SLOW.replace("1Gf", "1Gf,-2Gf"), ""), "line 7: <cluster>: bad speed `-2Gf`"),
        (xml(&SLOW.replace("1MBps", "0Bps"), ""), "line 7: <cluster>: bad bw `0Bps`"),
        (
            xml(&SLOW.replace("0-1", "0-999999999999"), ""),
            "radical `0-999999999999` gives 1000000000000 hosts; at most 1048576 (--max-hosts)",
        ),
        (xml(&SLOW.replace("0-1", "0-18446744073709551615"), ""), "gives 18446744073709551616 hosts; at most 1048576 (--max-hosts)"),
        (
            xml(SLOW, "").replace("/>\n</zone>", "><prop id=\"pstate\" value=\"99\"/></cluster>\n</zone>"),
            "line 7: <prop> pstate `99` is not one of the 1 pstates",
        ),
        (
            xml(&SLOW.replace("1s", "1e308s"), ""),
            "line 7: <cluster>: the imported platform is invalid: network.inter.transfer: segment 0: ",
        ),
        (
            xml(SLOW, "<config><prop id=\"smpi/os\" value=\"18446744073709551615:1e-6:1e-10\"/></config>"),
            "line 5: <prop> smpi/os: threshold 18446744073709551615",
        ),
        (xml(SLOW, "<config><prop id=\"smpi/bw-factor\" value=\"0:inf\"/></config>"), "smpi/bw-factor: a value in `0:inf` is not finite"),
        (xml(&SLOW.replace("1MBps", "1e-320Bps"), ""), "line 7: <cluster>: the imported platform is invalid: network.inter.transfer"),
        (
            xml(&format!("{SLOW} loopback_bw=\"1e-300Bps\""), ""),
            "line 7: <cluster>: the imported platform is invalid: network.intra.transfer",
        ),
    ] {
        let opts: &[&str] = if needle.contains("model X") { &["network/model:X"] } else { &[] };
        let e = load(&text, opts).unwrap_err().to_string();
        assert!(e.starts_with("p.xml: ") && e.contains(needle), "{e} !~ {needle}");
        assert_eq!(e.lines().count(), 1);
    }
}

#[test]
fn torus_and_fat_tree_clusters_give_their_topology() {
    let torus = SLOW.replace("0-1", "0-7") + r#" topology="TORUS" topo_parameters="4,2""#;
    let p = load(&xml(&torus, ""), &[]).unwrap();
    assert_eq!(p.links.clone().unwrap().topology, Topology::Torus { dims: vec![4, 2] });
    let ft = SLOW.replace("0-1", "0-15") + r#" topology="FAT_TREE" topo_parameters="2;4,4;1,2;1,2""#;
    let p = load(&xml(&ft, ""), &[]).unwrap();
    assert_eq!(p.links.clone().unwrap().topology, Topology::FatTree { down: vec![4, 4], up: vec![1, 2], count: vec![1, 2] });
}

#[test]
fn a_backbone_cluster_shares_its_private_links_and_its_backbone() {
    let bb = SLOW.replace("0-1", "0-3") + r#" bb_bw="4MBps" bb_lat="1ms""#;
    let p = load(&xml(&bb, ""), &[]).unwrap();
    let links = p.links.clone().unwrap();
    let Topology::Backbone { ratio } = links.topology else { panic!("{:?}", links.topology) };
    assert!((ratio * links.link_bw_bytes_per_s - 4e6).abs() < 1e-3, "{ratio}");
    // The model's latency is the whole route's (2 lat + bb_lat).
    assert!(!links.latency_per_link);
    let flat = load(&xml(&SLOW.replace("0-1", "0-3"), ""), &[]).unwrap();
    assert!(p.network.inter.as_ref().unwrap().transfer.eval(0) > flat.network.inter.as_ref().unwrap().transfer.eval(0) + 0.9e-3);
}

#[test]
fn sharing_policy_and_router_id_are_accepted_and_ignored() {
    let attrs = format!("{SLOW} sharing_policy=\"SPLITDUPLEX\" bb_sharing_policy=\"SHARED\" router_id=\"r\"");
    assert_eq!(load(&xml(&attrs, ""), &[]).unwrap(), load(&xml(SLOW, ""), &[]).unwrap());
}

/// 20,000 nested `<zone>`s: parsing returns (a platform or a one-line
/// error) without exhausting the stack.
#[test]
fn deeply_nested_zones_return() {
    let depth = 20_000;
    let text = format!(
        "<platform version=\"4.1\">{}<cluster id=\"c\" {SLOW}/>{}</platform>",
        "<zone id=\"z\" routing=\"Full\">".repeat(depth),
        "</zone>".repeat(depth)
    );
    match load(&text, &[]) {
        Ok(p) => assert_eq!(p.hosts.len(), 2),
        Err(e) => assert_eq!(e.to_string().lines().count(), 1, "{e}"),
    }
}

#[test]
fn max_hosts_bounds_the_radical_and_a_replay_keeps_the_hosts_it_uses() {
    let text = xml(&SLOW.replace("0-1", "0-99"), "");
    let e = parse_limited(&text, Path::new("p.xml"), &[], 50).unwrap_err().to_string();
    assert!(e.contains("radical `0-99` gives 100 hosts; at most 50 (--max-hosts)"), "{e}");
    let p = parse_limited(&text, Path::new("p.xml"), &[], 100).unwrap();
    assert_eq!(p.hosts.len(), 100);
    let used = p.used_by(3).unwrap();
    assert_eq!(used.hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["node-0.x", "node-1.x", "node-2.x"]);
    assert_eq!((0..3).map(|r| used.host_of(r)).collect::<Vec<_>>(), (0..3).map(|r| p.host_of(r)).collect::<Vec<_>>());
    assert!(p.used_by(100).is_none() && p.used_by(1000).is_none());
    // A torus routes through hosts no rank uses: nothing is cut.
    let torus = xml(&format!("{} topology=\"TORUS\" topo_parameters=\"10,10\"", SLOW.replace("0-1", "0-99")), "");
    assert!(load(&torus, &[]).unwrap().used_by(3).is_none());
}

/// `<host>`s holding `<disk>`s (SimGrid's storage model) beside the
/// cluster become the servers of one file system.
#[test]
fn hosts_with_disks_import_as_a_file_system() {
    let disk = |id: &str, r: &str, w: &str| {
        format!("<host id=\"{id}\" speed=\"1Gf\"><disk id=\"d\" read_bw=\"{r}\" write_bw=\"{w}\"><prop id=\"mount\" value=\"/scratch\"/></disk></host>")
    };
    let with = |hosts: &str| xml(SLOW, "").replace("</zone>", &format!("{hosts}\n</zone>"));
    let p = load(&with(&format!("{}{}", disk("s0", "200MBps", "100MBps"), disk("s1", "200MBps", "100MBps"))), &[]).unwrap();
    assert_eq!(p.hosts.len(), 2, "storage hosts are not compute hosts");
    let fs = &p.fs[0];
    assert_eq!((fs.name.as_str(), fs.servers, fs.disk.read_bytes_per_s, fs.disk.write_bytes_per_s), ("/scratch", 2, 2e8, 1e8));
    let e = load(&with(&format!("{}{}", disk("s0", "200MBps", "100MBps"), disk("s1", "100MBps", "100MBps"))), &[]).unwrap_err().to_string();
    assert!(e.contains("p.xml") && e.contains("speeds differ") && e.contains("line"), "{e}");
    let e = load(&with("<host id=\"s\" speed=\"1Gf\"><disk id=\"d\" read_bw=\"1MBps\"/></host>"), &[]).unwrap_err().to_string();
    assert!(e.contains("<disk> needs write_bw"), "{e}");
    assert!(load(&xml(SLOW, ""), &[]).unwrap().fs.is_empty());
}

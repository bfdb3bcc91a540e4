//! Pstates and energy, LogGP, topologies, `simulator compare`,
//! determinism and bad input.

use super::*;

/// A 2-pstate cluster of two 2-core hosts (SimGrid `host_energy` syntax).
const ENERGY_XML: &str = r#"<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="n" radical="0-1" suffix="" speed="2Gf,1Gf" core="2" bw="1GBps" lat="1us">
    <prop id="wattage_per_state" value="100:120:200, 90:100:140"/>
  </cluster>
</platform>
"#;

fn energy(out: &Output) -> (f64, Vec<f64>) {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hosts = v["hosts"].as_array().unwrap().iter().map(|h| h["energy_j"].as_f64().unwrap()).collect();
    (v["energy_j"].as_f64().unwrap(), hosts)
}

#[test]
fn energy_per_host_from_simgrid_wattage_per_state_and_pstate_option() {
    // Ranks 0, 2 on n0 and 1, 3 on n1 (round-robin); flops 2e9, 1e9, 3e9, 0.
    let (_d, list, _) = ti_case(&["compute 2e9", "compute 1e9", "compute 3e9", "compute 0"]);
    let xml = list.with_file_name("energy.xml");
    std::fs::write(&xml, ENERGY_XML).unwrap();
    // Pstate 0 (2 Gf, 100:120:200 W): n0 has 2 cores busy 0–1 s (200 W),
    // 1 busy 1–1.5 s (120 + ½·80 = 160 W): 280 J; n1 one busy 0–0.5 s (160 W)
    // then idle (100 W) to 1.5 s: 180 J. smpirun -replay --cfg=plugin:host_energy
    // (SimGrid 3.32) prints these same 280 J, 180 J and 460 J.
    let (total, hosts) = energy(&simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]));
    assert!((total - 460.0).abs() < 1e-9 && (hosts[0] - 280.0).abs() < 1e-9 && (hosts[1] - 180.0).abs() < 1e-9);
    // Pstate 1 on n0 only (1 Gf, 90:100:140 W): n0 2 busy 0–2 s (280 J), 1 busy
    // 2–3 s (120 J); n1 stays at pstate 0: 160 W 0–0.5 s, 100 W 0.5–3 s (330 J).
    let out = simulator(&["replay", "--platform", s(&xml), s(&list), "--json", "--pstate", "n0=1"]);
    assert_eq!(makespan(&out), 3.0);
    let (total, hosts) = energy(&out);
    assert!((hosts[0] - 400.0).abs() < 1e-9 && (hosts[1] - 330.0).abs() < 1e-9 && (total - 730.0).abs() < 1e-9);
    let out = simulator(&["replay", "--platform", s(&xml), s(&list), "--pstate", "2"]);
    fails_with(&out, &["--pstate", "`2`", "2 pstates"]);
}

/// Two one-core hosts with LogGP(S) between and within them.
const LOGGP_TOML: &str = r#"
name = "loggp"
[[hosts]]
name = "a"
cores = 1
[[hosts]]
name = "b"
cores = 1
[network.intra]
loggp = { L = 5e-6, o_s = 1e-6, o_r = 2e-6, g = 3e-6, G = 1e-9, S = 4096 }
"#;

#[test]
fn loggps_platform_times_eager_and_rendezvous_by_hand() {
    let (_d, list, _) = ti_case(&["send 1 0 1000 6\nsend 1 0 10000 6", "recv 0 0 1000 6\nrecv 0 0 10000 6"]);
    let toml = list.with_file_name("loggp.toml");
    std::fs::write(&toml, LOGGP_TOML).unwrap();
    // Eager 1000 B: the sender is busy max(o_s, g) = 3 us; the receive ends at
    // o_s + L + 999 G + o_r = 8.999 us. Rendezvous 10000 B (≥ S), posted at
    // 3 us and 8.999 us: both end at 8.999 + 2 (o_s + L + o_r) + 9999 G us.
    let out = simulator(&["replay", "--platform", s(&toml), s(&list), "--json"]);
    let m = makespan(&out);
    let want = 8.999e-6 + 16e-6 + 9999e-9;
    assert!((m - want).abs() < 1e-15, "{m} != {want}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Rank 0: its 3 us eager overhead, then the rendezvous: 25.999 us of
    // transfer (comm) and 5.999 us waiting for the late receive.
    let r0 = &v["ranks"][0];
    assert!((r0["comm_s"].as_f64().unwrap() - 28.999e-6).abs() < 1e-15, "{v}");
    assert!((r0["wait_s"].as_f64().unwrap() - 5.999e-6).abs() < 1e-15, "{v}");
    std::fs::write(&toml, format!("{LOGGP_TOML}eager_threshold_bytes = 1\n")).unwrap();
    let out = simulator(&["replay", "--platform", s(&toml), s(&list)]);
    fails_with(&out, &["loggp.toml", "either loggp or eager_threshold_bytes"]);
    std::fs::write(&toml, LOGGP_TOML.replace("G = 1e-9", "G = -1")).unwrap();
    fails_with(&simulator(&["replay", "--platform", s(&toml), s(&list)]), &["loggp.toml", "loggp.G must be"]);
}

/// Four one-core hosts, 1 MB/s links and transfers, rendezvous always.
fn topo_toml(topology: &str) -> String {
    format!(
        r#"
[[hosts]]
name = "h0"
cores = 1
[[hosts]]
name = "h1"
cores = 1
[[hosts]]
name = "h2"
cores = 1
[[hosts]]
name = "h3"
cores = 1
[network.intra]
eager_threshold_bytes = 0
transfer = [ {{ intercept_s = 0.0, bandwidth_bytes_per_s = 1e6 }} ]
[links]
bw_bytes_per_s = 1e6
topology = {topology}
"#
    )
}

#[test]
fn torus_and_fat_tree_routes_share_links_as_expected() {
    let pair = |a: usize, b: usize| {
        let mut r = vec![String::new(); 4];
        r[a] = format!("send {b} 0 1000000 6");
        r[b] = format!("recv {a} 0 1000000 6");
        r
    };
    // Ranks 0 → 2 and 1 → 3 at once.
    let crossing: Vec<String> = pair(0, 2).into_iter().zip(pair(1, 3)).map(|(a, b)| a + &b).collect();
    let disjoint: Vec<String> = pair(0, 1).into_iter().zip(pair(2, 3)).map(|(a, b)| a + &b).collect();
    let run = |ranks: &[String], topology: &str| {
        let refs: Vec<&str> = ranks.iter().map(String::as_str).collect();
        let (_d, list, _) = ti_case(&refs);
        let toml = list.with_file_name("topo.toml");
        std::fs::write(&toml, topo_toml(topology)).unwrap();
        makespan(&simulator(&["replay", "--platform", s(&toml), s(&list), "--json"]))
    };
    // Ring of 4 (1-D torus): 0 → 2 goes up via links (0,1), (1,2); 1 → 3 via
    // (1,2), (2,3): they share link (1,2) and each gets half of it.
    let ring = r#"{ kind = "torus", dims = [4] }"#;
    close(run(&crossing, ring), 2.0);
    close(run(&disjoint, ring), 1.0);
    // Crossbar: no shared link.
    close(run(&crossing, r#"{ kind = "crossbar" }"#), 1.0);
    // Fat tree of 2 leaves with 2 hosts each, one top switch: 0 → 2 and 1 → 3
    // share leaf 0's uplink (and leaf 1's downlink) ...
    close(run(&crossing, r#"{ kind = "fat-tree", down = [2, 2], up = [1, 1], count = [1, 1] }"#), 2.0);
    // ... unless that link is doubled (count 2).
    close(run(&crossing, r#"{ kind = "fat-tree", down = [2, 2], up = [1, 1], count = [1, 2] }"#), 1.0);
    let (_d, list, _) = ti_case(&["", "", "", ""]);
    let toml = list.with_file_name("topo.toml");
    std::fs::write(&toml, topo_toml(r#"{ kind = "torus", dims = [3] }"#)).unwrap();
    fails_with(&simulator(&["replay", "--platform", s(&toml), s(&list)]), &["topo.toml", "links.topology: torus dims [3]"]);
}

#[test]
fn compare_prints_measured_against_predicted_from_a_platform_or_a_report() {
    let c = case();
    let json = simulator(&["compare", s(&c.trace), s(&c.platform), "--json"]);
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    // Measured compute (cpu): rank 0 2 + 1 ms, rank 1 1 ms; predicted end as the replay's.
    close(rows[0]["measured"]["compute_s"].as_f64().unwrap(), 3e-3);
    close(rows[1]["measured"]["compute_s"].as_f64().unwrap(), 1e-3);
    close(rows[0]["predicted"]["end_s"].as_f64().unwrap(), 4e-3 + 2.0 * T);
    close(rows[1]["predicted"]["mpi_s"].as_f64().unwrap(), 2e-3 + T);
    // A saved report gives the same table as replaying the platform.
    let report = c.trace.with_file_name("report.json");
    let out = simulator(&["replay", "--platform", s(&c.platform), s(&c.trace), "--json"]);
    std::fs::write(&report, &out.stdout).unwrap();
    let a = simulator(&["compare", s(&c.trace), s(&report)]);
    let b = simulator(&["compare", s(&c.trace), s(&c.platform)]);
    assert!(a.status.success() && a.stdout == b.stdout, "{}", String::from_utf8_lossy(&a.stderr));
    let table = String::from_utf8(a.stdout).unwrap();
    assert_eq!(table.lines().count(), 1 + 2 * 3 + 1, "{table}");
    assert!(table.lines().last().unwrap().starts_with("   all  makespan"), "{table}");
    std::fs::write(&report, "{\"makespan_s\": 1}").unwrap();
    fails_with(&simulator(&["compare", s(&c.trace), s(&report)]), &["report.json", "no `ranks` list"]);
}

/// Progress and determinism: the same inputs give the same JSON
/// to the last bit (but for the replay's own wall-clock time).
#[test]
fn same_inputs_give_bit_identical_json() {
    // Contention, collectives, any-source receives and energy in one run.
    let body = |r: usize| {
        let (next, prev) = ((r + 1) % 4, (r + 3) % 4);
        format!(
            "init\ncompute {}e8\nisend {next} 0 300000 6\nirecv {prev} 0 300000 6\nwaitall 2\nallreduce 1000 1000 6\nbcast 70000 0 6\nfinalize",
            r + 1
        )
    };
    let ranks: Vec<String> = (0..4).map(body).collect();
    let refs: Vec<&str> = ranks.iter().map(String::as_str).collect();
    let (_d, list, _) = ti_case(&refs);
    let xml = list.with_file_name("energy.xml");
    std::fs::write(&xml, ENERGY_XML).unwrap();
    let strip = |o: Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v.as_object_mut().unwrap().remove("wall_clock_s");
        serde_json::to_string(&v).unwrap()
    };
    let runs: Vec<String> = (0..3).map(|_| strip(simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]))).collect();
    assert!(runs.iter().all(|r| r == &runs[0]), "{runs:?}");
    assert!(runs[0].contains("\"makespan_s\":") && runs[0].contains("\"energy_j\":"), "{}", runs[0]);
}

#[test]
fn ti_line_with_missing_fields_names_file_and_line() {
    let (d, list, xml) = ti_case(&["init\nsend 1\nfinalize", "init\nfinalize"]);
    let out = simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]);
    fails_with(&out, &[&format!("{}:2:", d.path().join("rank-0.txt").display())]);
}

/// `smpirun -replay` of `list` (`ranks` ranks) on `xml` with `hosts`
/// hosts and `extra` options: its output, or `None` (with the reason
/// printed) when SimGrid is not installed.
fn smpirun(dir: &Path, xml: &Path, list: &Path, (ranks, hosts): (usize, usize), extra: &[&str]) -> Option<String> {
    let hf = dir.join("hostfile");
    std::fs::write(&hf, (0..hosts).map(|h| format!("n{h}\n")).collect::<String>()).unwrap();
    let n = ranks.to_string();
    let args = ["-np", &n, "-platform", s(xml), "-hostfile", s(&hf), "-replay", s(list)];
    // SimGrid resolves the list's relative file names against its working directory.
    let out = match Command::new("smpirun").args(extra).args(args).current_dir(dir).output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skip: smpirun not runnable ({e})");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "smpirun failed: {text}");
    Some(text)
}

/// The number after the last `before` in `text`.
fn after(text: &str, before: &str) -> f64 {
    let t = text.rsplit(before).next().and_then(|r| r.split_whitespace().next());
    t.and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("no `{before}` number in: {text}"))
}

#[test]
fn energy_matches_smpirun_host_energy_plugin() {
    let (d, list, _) = ti_case(&["compute 2e9", "compute 1e9", "compute 3e9", "compute 0"]);
    let xml = d.path().join("energy.xml");
    std::fs::write(&xml, ENERGY_XML).unwrap();
    let out = simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]);
    let (total, hosts) = energy(&out);
    let Some(sg) = smpirun(d.path(), &xml, &list, (4, 2), &["--cfg=plugin:host_energy"]) else { return };
    for (h, e) in hosts.iter().enumerate() {
        let want = after(&sg, &format!("Energy consumption of host n{h}: "));
        assert!((e - want).abs() < 1e-6 * want, "host n{h}: ours {e} J, smpirun {want} J");
    }
    let want = after(&sg, "Total energy consumption: ");
    assert!((total - want).abs() < 1e-6 * want, "total: ours {total} J, smpirun {want} J");
}

/// `dir/cluster.xml`: a SimGrid cluster of `n` one-core 1 Gf hosts `n0`…
/// with 1 MBps / 1 ms links and the cluster attributes `extra`.
fn cluster_xml(dir: &Path, n: usize, extra: &str) -> PathBuf {
    let xml = dir.join("cluster.xml");
    let body = format!(
        r#"<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="n" radical="0-{}" suffix="" speed="1Gf" core="1" bw="1MBps" lat="1ms"{extra}/>
</platform>
"#,
        n - 1
    );
    std::fs::write(&xml, body).unwrap();
    xml
}

/// Our makespan of the `n`-rank TI trace `list` on `xml` and the end of
/// `smpirun -replay`'s simulation (the last "Simulation time" any rank
/// prints), seconds; `None` when SimGrid is not installed.
fn ours_and_smpirun(dir: &Path, xml: &Path, list: &Path, n: usize) -> Option<(f64, f64)> {
    let ours = makespan(&simulator(&["replay", "--platform", s(xml), s(list), "--json"]));
    let out = smpirun(dir, xml, list, (n, n), &[])?;
    Some((ours, after(&out, "Simulation time ")))
}

#[test]
fn torus_and_fat_tree_link_sharing_match_smpirun() {
    // Concurrent transfers on SimGrid TORUS and FAT_TREE clusters (1 MBps,
    // 1 ms links; routes of 1 to 4 links, so flows of different route
    // latencies share links): makespans as smpirun -replay gives them.
    // Each rank posts all its sends and receives, then waits for them.
    // (topology, topo_parameters, hosts, transfers as (from, to))
    type Case = (&'static str, &'static str, usize, &'static [(usize, usize)]);
    let cases: [Case; 7] = [
        ("TORUS", "4,2", 8, &[(0, 3), (1, 6), (2, 5), (7, 4)]),
        ("TORUS", "4,2", 8, &[(0, 2), (1, 3), (4, 6), (5, 1)]),
        ("TORUS", "4", 4, &[(0, 2), (1, 2)]),
        ("TORUS", "3,3,2", 18, &[(0, 17), (4, 13), (8, 1), (9, 2), (12, 7), (16, 5)]),
        ("FAT_TREE", "2;4,4;1,2;1,2", 16, &[(0, 5), (2, 6), (1, 9), (3, 13)]),
        ("FAT_TREE", "2;4,4;1,2;1,2", 16, &[(4, 15), (5, 4)]),
        ("FAT_TREE", "2;4,4;1,2;1,1", 16, &[(0, 5), (2, 7), (1, 9), (4, 12)]),
    ];
    for (topology, params, n, pairs) in cases {
        let mut ranks = vec![String::new(); n];
        let mut posted = vec![0; n];
        for &(a, b) in pairs {
            ranks[a] += &format!("isend {b} 0 1000000 6\n");
            ranks[b] += &format!("irecv {a} 0 1000000 6\n");
            posted[a] += 1;
            posted[b] += 1;
        }
        for (r, k) in ranks.iter_mut().zip(&posted).filter(|(_, &k)| k > 0) {
            *r += &format!("waitall {k}\n");
        }
        let refs: Vec<&str> = ranks.iter().map(String::as_str).collect();
        let (d, list, _) = ti_case(&refs);
        let xml = cluster_xml(d.path(), n, &format!(r#" topology="{topology}" topo_parameters="{params}""#));
        let Some((ours, sg)) = ours_and_smpirun(d.path(), &xml, &list, n) else { return };
        // smpirun prints 6 decimals.
        assert!((ours - sg).abs() < 1e-6, "{topology} {params} {pairs:?}: ours {ours} s, smpirun {sg} s");
    }
}

/// A platform exported by `simgrid::to_xml` times single messages under
/// `smpirun -replay` as our replay times them on the original platform
/// (1 s / 1 MBps-scale links so that smpirun's 6 printed decimals suffice).
#[test]
fn exported_platform_matches_smpirun() {
    use simulator::network::{P2pModel, Piecewise, Segment};
    use simulator::platform::{simgrid, Host, Platform};
    let seg = |max_bytes, intercept_s, bandwidth_bytes_per_s| Segment { max_bytes, intercept_s, bandwidth_bytes_per_s };
    let inter = P2pModel {
        eager_threshold_bytes: 65536,
        transfer: Piecewise { segments: vec![seg(Some(1024), 1.5, 1e6), seg(Some(65536), 2.0, 2e6), seg(None, 3.0, 5e6)] },
        send_overhead: Piecewise::default(),
        recv_overhead: Piecewise::default(),
        rma: None,
    };
    let mut p = Platform::new("exp", vec![Host::new("a", 1), Host::new("b", 1)], inter.clone());
    p.network.inter = Some(inter);
    for bytes in [0u64, 1000, 1024, 50_000, 65536, 1_000_000] {
        let (d, list, _) = ti_case(&[&format!("init\nsend 1 0 {bytes} 6\nfinalize"), &format!("init\nrecv 0 0 {bytes} 6\nfinalize")]);
        let toml = d.path().join("p.toml");
        p.save(&toml).unwrap();
        let ours = makespan(&simulator(&["replay", "--platform", s(&toml), s(&list), "--json"]));
        let xml = d.path().join("exp.xml");
        std::fs::write(&xml, simgrid::to_xml(&p).unwrap().replace("prefix=\"node\"", "prefix=\"n\"")).unwrap();
        let Some(out) = smpirun(d.path(), &xml, &list, (2, 2), &[]) else { return };
        let sg = after(&out, "Simulation time ");
        assert!((ours - sg).abs() < 2e-6, "{bytes} B: ours {ours} s, smpirun {sg} s");
    }
}

/// SimGrid's default selector (no `smpi/coll-selector`) posts every send
/// of an all-gather(v) and an all-to-all-v at once, and runs `alltoall`
/// by the `ompi` selector's table (Bruck for small blocks on more than a
/// few ranks, linear or pairwise for larger ones): makespans as
/// `smpirun -replay` gives them, 16 ranks on a 1 MBps / 1 ms cluster.
#[test]
fn default_selector_all_to_alls_all_gathers_and_reduce_scatter_match_smpirun() {
    let n = 16;
    let v = |b: u32| vec![b.to_string(); n].join(" ");
    let cases = [
        "allgather 256 256".to_string(),
        format!("allgatherv 256 {}", v(256)),
        "alltoall 4 4".to_string(),
        "alltoall 512 512".to_string(),
        "alltoall 65536 65536".to_string(),
        format!("alltoallv 4096 {} 4096 {}", v(256), v(256)),
        format!("reducescatter {} 0", v(256)),
    ];
    for line in cases {
        let body = format!("init\n{line}\n{line}\nfinalize");
        let ranks = vec![body.as_str(); n];
        let (d, list, _) = ti_case(&ranks);
        let xml = cluster_xml(d.path(), n, "");
        let Some((ours, sg)) = ours_and_smpirun(d.path(), &xml, &list, n) else { return };
        assert!((ours - sg).abs() < 1e-6 * sg.max(1.0), "{line}: ours {ours} s, smpirun {sg} s");
    }
}

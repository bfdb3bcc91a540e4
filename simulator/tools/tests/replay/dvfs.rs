//! `simulator replay --dvfs`, `simulator energy`, and the wait policy
//! against SimGrid's `host_energy` plugin on an SMPI program that switches
//! its host's pstate around its communication.

use super::*;

/// Four one-core hosts with three pstates (SimGrid `host_energy` syntax).
const DVFS_XML: &str = r#"<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-3" speed="1Gf,0.8Gf,0.6Gf" core="1" bw="1.25GBps" lat="2us">
    <prop id="wattage_per_state" value="100:120:200, 90:105:160, 80:90:120"/>
  </cluster>
</platform>
"#;

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The 2-rank ping of the hand-computed case: rank 0 computes 1e9 flops
/// at 1 Gf then sends, while rank 1 waits.
fn ping() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (d, list, _) = ti_case(&["init\ncompute 1e9\nsend 1 0 1000 6\nfinalize", "init\nrecv 0 0 1000 6\nfinalize"]);
    let xml = list.with_file_name("dvfs.xml");
    std::fs::write(&xml, DVFS_XML.replace("0-3", "0-1")).unwrap();
    (d, list, xml)
}

#[test]
fn wait_policy_saves_idle_power_on_the_waiting_host_only() {
    let (_d, list, xml) = ping();
    let base = json(&simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]));
    let low = json(&simulator(&["replay", "--platform", s(&xml), s(&list), "--json", "--dvfs", "wait=2"]));
    assert_eq!(base["makespan_s"], low["makespan_s"]);
    // Rank 1 waits from 0 to its end: (Idle0 − Idle2) × that on node-1.
    let waited = low["ranks"][1]["end_s"].as_f64().unwrap();
    let e = |v: &Value, h: usize| v["hosts"][h]["energy_j"].as_f64().unwrap();
    assert!((e(&base, 1) - e(&low, 1) - (100.0 - 80.0) * waited).abs() < 1e-9, "{base} {low}");
    assert_eq!(e(&base, 0), e(&low, 0));
}

#[test]
fn energy_sweeps_static_pstates_and_policies_as_json_with_a_plot() {
    let (d, list, xml) = ping();
    let svg = d.path().join("front.svg");
    let v = json(&simulator(&["energy", "--platform", s(&xml), s(&list), "--json", "--plot", s(&svg)]));
    let rows = v["rows"].as_array().unwrap();
    let policies: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(policies, ["pstate=0", "pstate=1", "pstate=2", "wait=2"]);
    for r in rows {
        assert_eq!(r.as_object().unwrap().len(), 4, "{r}");
        let (m, e) = (r["makespan_s"].as_f64().unwrap(), r["energy_j"].as_f64().unwrap());
        assert!((r["edp_js"].as_f64().unwrap() - m * e).abs() <= 1e-12 * m * e, "{r}");
    }
    // Static pstate k: 1e9 flops take 1/speed(k); waiting at the lowest
    // pstate keeps pstate 0's makespan with less energy than it.
    let m = |i: usize| rows[i]["makespan_s"].as_f64().unwrap();
    let e = |i: usize| rows[i]["energy_j"].as_f64().unwrap();
    assert!((m(1) - m(0) - (1.0 / 0.8 - 1.0)).abs() < 1e-9 && (m(2) - m(0) - (1.0 / 0.6 - 1.0)).abs() < 1e-9, "{v}");
    assert!(m(3) == m(0) && e(3) < e(0), "{v}");
    let least = |k: &str| (0..rows.len()).min_by(|&a, &b| rows[a][k].as_f64().unwrap().total_cmp(&rows[b][k].as_f64().unwrap())).unwrap();
    assert_eq!(v["min_energy"], rows[least("energy_j")]["policy"]);
    assert_eq!(v["min_edp"], rows[least("edp_js")]["policy"]);
    assert_eq!(v.as_object().unwrap().len(), 3);
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg") && plot.contains("Pareto front") && plot.contains("wait=2"), "{plot}");
    // The table marks the front.
    let out = simulator(&["energy", "--platform", s(&xml), s(&list), "--dvfs", "wait=1"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l.starts_with("wait=1 ")) && text.contains("least energy:"), "{text}");
}

#[test]
fn bad_policies_fail_naming_the_option_file_and_line() {
    let (d, list, xml) = ping();
    let run = |dvfs: &str| simulator(&["replay", "--platform", s(&xml), s(&list), "--dvfs", dvfs]);
    fails_with(&run("wait=3"), &["--dvfs", "wait=3", "node-0 has 3 pstates"]);
    fails_with(&run("fast=1"), &["--dvfs fast=1", "expected wait=<pstate> or regions=<file.csv>"]);
    let csv = d.path().join("regions.csv");
    std::fs::write(&csv, "region,pstate\n\"a.c:1:a.c:2\",1\nb.c:1:b.c:2,x\n").unwrap();
    fails_with(&run(&format!("regions={}", csv.display())), &[&format!("{}:3", csv.display()), "pstate `x`"]);
    std::fs::write(&csv, "region,pstate\n\"a.c:1:a.c:2\",1\nb.c:1:b.c:2,7\n").unwrap();
    fails_with(&run(&format!("regions={}", csv.display())), &[&format!("{}:3: pstate 7", csv.display()), "3 pstates"]);
    let toml = d.path().join("none.toml");
    std::fs::write(&toml, "[[hosts]]\nname = \"a\"\ncores = 2\nspeed_flops = 1e9\n[network.intra]\ntransfer = [ { intercept_s = 1e-6, bandwidth_bytes_per_s = 1e9 } ]\neager_threshold_bytes = 4096\n").unwrap();
    fails_with(&simulator(&["replay", "--platform", s(&toml), s(&list), "--dvfs", "wait=0"]), &["--dvfs", "no pstates"]);
}

/// The SimGrid energy lines of an `smpirun --cfg=plugin:host_energy` log:
/// the total, then per host.
fn simgrid_energy(log: &str) -> (f64, Vec<f64>) {
    let joules = |l: &str, after: &str| l.split(after).nth(1).and_then(|t| t.split_whitespace().next()).and_then(|x| x.parse().ok());
    let total = log.lines().find_map(|l| joules(l, "Total energy consumption: ")).expect("SimGrid's total energy");
    let hosts = log.lines().filter(|l| l.contains("Energy consumption of host")).filter_map(|l| joules(l, ": ")).collect();
    (total, hosts)
}

#[test]
fn wait_policy_matches_simgrid_switching_pstates_around_communication() {
    if Command::new("smpicc").arg("-show").output().is_err() {
        println!("SKIPPED: smpicc not found (install libsimgrid-dev)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let prog = d.path().join("dvfs_wait");
    let src = common::root().join("c-tests/dvfs_wait.c");
    let inc = format!("-I{}", common::root().join("c-tests").display());
    let st = Command::new("smpicc").args(["-O2", &inc, "-o"]).arg(&prog).arg(&src).output().unwrap();
    assert!(st.status.success(), "smpicc {}: {}", src.display(), String::from_utf8_lossy(&st.stderr));
    let xml = d.path().join("c.xml");
    std::fs::write(&xml, DVFS_XML).unwrap();
    std::fs::write(d.path().join("hosts"), "node-0\nnode-1\nnode-2\nnode-3\n").unwrap();
    for k in ["2", "1"] {
        let list = d.path().join(format!("ti-{k}.txt"));
        // The program lowers its host to pstate k around each receive; the
        // TI trace does not record it: --dvfs wait=k does.
        let out = Command::new("smpirun")
            .args(["-np", "4", "-platform", s(&xml), "-hostfile", "hosts", "--cfg=plugin:host_energy"])
            .args(["--cfg=smpi/simulate-computation:no", "-trace-ti", &format!("--cfg=tracing/filename:{}", list.display())])
            .arg(&prog)
            .args(["4", "100", "1024", k])
            .current_dir(d.path())
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "smpirun: {log}");
        let (total, hosts) = simgrid_energy(&log);
        let ours = json(&simulator(&["replay", "--platform", s(&xml), s(&list), "--json", "--dvfs", &format!("wait={k}")]));
        let rel = |a: f64, b: f64| (a - b).abs() / b;
        let e = ours["energy_j"].as_f64().unwrap();
        assert!(rel(e, total) < 1e-3, "wait={k}: ours {e} J, SimGrid {total} J");
        for (h, sg) in hosts.iter().enumerate() {
            let mine = ours["hosts"][h]["energy_j"].as_f64().unwrap();
            assert!(rel(mine, *sg) < 1e-3, "wait={k}: node-{h}: ours {mine} J, SimGrid {sg} J");
        }
        // Without the policy, the hosts idle at pstate 0 while they wait: more energy.
        let still = json(&simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]));
        assert!(still["energy_j"].as_f64().unwrap() > total * 1.01, "{still}");
    }
}

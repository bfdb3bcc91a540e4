//! Pstates and energy, LogGP, topologies, `simulator compare`,
//! determinism and bad input (issue 6, "models and outputs").

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

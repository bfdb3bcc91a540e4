//! `simulator replay` end to end on inputs that must fail with a clear
//! error rather than give a wrong answer: sizes that overflow, sends never
//! received, makespans that overflow, clusters of absurd size.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn simulator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simulator")).args(args).output().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A two-rank TI trace list (bodies after the rank column) in `dir`.
fn ti(dir: &Path, ranks: [&str; 2]) -> PathBuf {
    for (r, body) in ranks.iter().enumerate() {
        let text: String = body.lines().map(|l| format!("{r} {}\n", l.trim())).collect();
        std::fs::write(dir.join(format!("rank-{r}.txt")), text).unwrap();
    }
    std::fs::write(dir.join("trace.txt"), "rank-0.txt\nrank-1.txt\n").unwrap();
    dir.join("trace.txt")
}

fn platform(dir: &Path, radical: &str) -> PathBuf {
    let xml = format!(
        "<?xml version='1.0'?>\n<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n\
         <cluster id=\"c\" prefix=\"n\" radical=\"{radical}\" speed=\"1Gf\" bw=\"1GBps\" lat=\"1us\"/>\n</zone></platform>\n"
    );
    std::fs::write(dir.join("c.xml"), xml).unwrap();
    dir.join("c.xml")
}

/// Asserts a one-line failure holding every needle.
fn fails_with(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "exit 0; stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for n in needles {
        assert!(err.contains(n), "{err} !~ {n}");
    }
}

#[test]
fn wrong_answers_with_exit_0_are_now_errors_naming_their_cause() {
    let d = tempfile::tempdir().unwrap();
    let xml = platform(d.path(), "0-1");
    let cases: [([&str; 2], &[&str]); 4] = [
        (["send 1 0 18446744073709551615", "recv 0 0 18446744073709551615"], &["rank-0.txt:1:", "exceeds the limit of 2^53 bytes"]),
        (["allreduce 1e308 0", "allreduce 1e308 0"], &["rank-0.txt:1: `allreduce`: 1e308 × 1 B exceeds"]),
        (["sleep 1e308\nsleep 1e308", ""], &["rank 0: end time is inf"]),
        (["send 1 0 8", ""], &["unmatched: 1 sends never received: eager send of 8 B from 0 to 1 tag 0"]),
    ];
    for (ranks, needles) in cases {
        let list = ti(d.path(), ranks);
        fails_with(&simulator(&["replay", "--platform", s(&xml), s(&list)]), needles);
    }
}

#[test]
fn host_count_is_bounded_and_a_big_cluster_costs_what_the_trace_uses() {
    let d = tempfile::tempdir().unwrap();
    let list = ti(d.path(), ["send 1 0 8", "recv 0 0 8"]);
    let xml = platform(d.path(), "0-999999999999");
    fails_with(
        &simulator(&["replay", "--platform", s(&xml), s(&list)]),
        &["c.xml: line 3: <cluster>: radical", "at most 1048576 (--max-hosts)"],
    );
    let xml = platform(d.path(), "0-99999");
    fails_with(&simulator(&["replay", "--platform", s(&xml), s(&list), "--max-hosts", "1000"]), &["gives 100000 hosts; at most 1000"]);
    let out = simulator(&["replay", "--platform", s(&xml), s(&list), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ranks"][1]["host"], "n1");
    assert!(v["makespan_s"].as_f64().unwrap() > 0.0, "{v}");
}

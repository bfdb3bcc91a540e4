//! Unit tests of the jitter-trace format.

use super::*;

fn header() -> JitterHeader {
    JitterHeader {
        host: "node07".into(),
        cpu: 3,
        tsc_hz: 2_596_146_212.5,
        tsc_hz_kernel: Some(2_596_146_000.0),
        tsc_hz_kernel_source: Some("kernel log".into()),
        t_min_cycles: 26,
        threshold_cycles: 234,
        timer_read: "rdtsc".into(),
        start_unix_ns: 1_767_225_600_000_000_000,
        requested_duration_s: 1.5,
        kernel: "6.8.0-45-generic".into(),
        cosched_window_cycles: Some(500),
        cosched_origin_cycles: Some(120),
    }
}

/// jitSim Fig. 2's node-1 trace slice, after a lead of 40 cycles.
fn trace() -> JitterTrace {
    let pairs = [(10, 50), (5, 30), (25, 20), (5, 10), (15, 100), (20, 300)];
    let records: Vec<_> = pairs.iter().map(|&(j, g)| JitterRecord { jitter_cycles: j, cycles_to_next: g }).collect();
    let duration_cycles = 40 + records.iter().map(|r| r.jitter_cycles + r.cycles_to_next).sum::<u64>();
    JitterTrace { header: header(), lead_cycles: 40, records, duration_cycles, dropped_events: 0 }
}

fn write_text(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(trace_file_name("node07", 3));
    let t = trace();
    t.write(&path).unwrap();
    assert_eq!(JitterTrace::read(&path).unwrap(), t);
    let mut minimal = trace();
    minimal.header.tsc_hz_kernel = None;
    minimal.header.tsc_hz_kernel_source = None;
    minimal.header.cosched_window_cycles = None;
    minimal.header.cosched_origin_cycles = None;
    minimal.records.clear();
    minimal.lead_cycles = minimal.duration_cycles;
    minimal.write(&path).unwrap();
    assert_eq!(JitterTrace::read(&path).unwrap(), minimal);
}

#[test]
fn events_noise_and_windows() {
    let t = trace();
    let ev: Vec<_> = t.events().take(3).collect();
    assert_eq!(ev, vec![(40, 10), (100, 5), (135, 25)]);
    assert_eq!(t.total_jitter_cycles(), 80);
    assert!((t.noise_fraction() - 80.0 / 630.0).abs() < 1e-12);
    assert_eq!(t.window_starts().collect::<Vec<_>>(), vec![120, 620]);
    let mut no_marks = trace();
    no_marks.header.cosched_window_cycles = None;
    assert_eq!(no_marks.window_starts().count(), 0);
}

#[test]
fn netgauge_totals_match() {
    let mut t = trace();
    t.header.tsc_hz = 3e9; // 1 cycle = 1/3 ns, so every value rounds.
    let text = String::from_utf8(t.write_netgauge(Vec::new()).unwrap()).unwrap();
    let lines: Vec<(u64, u64)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (a, b) = l.split_once('\t').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    assert_eq!(lines.len(), t.records.len());
    let total_ns: u64 = lines.iter().map(|l| l.1).sum();
    let exact_ns = t.total_jitter_cycles() as f64 / 3.0;
    assert!((total_ns as f64 - exact_ns).abs() <= 0.5 * lines.len() as f64, "{total_ns} vs {exact_ns}");
    assert!(text.contains(&format!("# events 6 total_noise_ns {total_ns} duration_ns 210")), "{text}");
    assert_eq!(lines[0], (13, 3)); // 40 cycles = 13.3 ns, 10 cycles = 3.3 ns
}

#[test]
fn malformed_input_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = {
        let p = dir.path().join("good.jitter");
        trace().write(&p).unwrap();
        std::fs::read_to_string(p).unwrap()
    };
    let cases = [
        ("magic.jitter", "hello\n".to_string(), "magic.jitter:1: not a jitter trace"),
        ("version.jitter", good.replace("jitter-trace 1", "jitter-trace 9"), "version.jitter:1: unsupported jitter-trace version 9"),
        ("trunc.jitter", good[..good.find("end events").unwrap()].to_string(), "trunc.jitter: truncated: no `end` line after 22 lines"),
        ("record.jitter", good.replace("5\t30", "5\tthirty"), "record.jitter:18: bad record `5\tthirty`"),
        ("key.jitter", good.replace("cpu 3\n", ""), "key.jitter:15: header has no `cpu`"),
        ("value.jitter", good.replace("tsc_hz 2596146212.5", "tsc_hz fast"), "value.jitter:5: bad `tsc_hz` value `fast`"),
        ("sum.jitter", good.replace("20\t300", "20\t301"), "sum.jitter:23: lead + records sum to 631"),
        ("after.jitter", format!("{good}1\t2\n"), "after.jitter:24: unexpected `1\t2` after the `end` line"),
    ];
    for (name, text, want) in cases {
        let p = write_text(dir.path(), name, &text);
        let msg = JitterTrace::read(&p).unwrap_err().to_string();
        assert!(msg.contains(want), "{name}: got `{msg}`, want `{want}`");
        assert!(!msg.contains('\n'), "{msg}");
    }
    let missing = JitterTrace::read(&dir.path().join("nope.jitter")).unwrap_err().to_string();
    assert!(missing.contains("nope.jitter: "), "{missing}");
}

#[test]
fn writer_rejects_overlap_and_overrun() {
    let mut w = JitterWriter::new(Vec::new(), &header()).unwrap();
    w.event(10, 5).unwrap();
    assert_eq!(w.event(12, 1).unwrap_err().kind(), io::ErrorKind::InvalidInput);
    let mut w = JitterWriter::new(Vec::new(), &header()).unwrap();
    w.event(10, 5).unwrap();
    assert_eq!(w.finish(14, 0).unwrap_err().kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn directory_listing_orders_by_host_then_cpu() {
    let dir = tempfile::tempdir().unwrap();
    for (h, c) in [("b", 0), ("a", 10), ("a", 2)] {
        trace().write(&dir.path().join(trace_file_name(h, c))).unwrap();
    }
    std::fs::write(dir.path().join("summary-a.txt"), "x").unwrap();
    let names: Vec<_> =
        trace_files_in_dir(dir.path()).unwrap().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["a.cpu2.jitter", "a.cpu10.jitter", "b.cpu0.jitter"]);
    let empty = tempfile::tempdir().unwrap();
    assert!(trace_files_in_dir(empty.path()).unwrap_err().to_string().contains("no *.jitter trace files"));
}

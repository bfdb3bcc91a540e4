//! `simulator replay` of MPI-IO on a modelled file system: `--io-scale`
//! and the report's I/O fields.

use super::*;

/// One server, no latency, 100 MB/s write: 100 MB take 1 s.
const FS: &str = "[[fs]]\nname = \"scratch\"\nservers = 1\nstripe_size_bytes = 1048576\nmetadata_latency_s = 0.0\n\
                  [fs.disk]\nlatency_s = 0.0\nread_bytes_per_s = 1e8\nwrite_bytes_per_s = 1e8\n";

fn io(file: u32, offset: u64, bytes: u64) -> Params {
    Params::Io { file, offset, bytes, comm: 0, request: 0 }
}

#[test]
fn io_scale_doubles_a_disk_bound_run_and_leaves_compute_alone() {
    let c = case();
    let platform = c.platform.with_file_name("fs.toml");
    std::fs::write(&platform, format!("{PLATFORM}{FS}")).unwrap();
    let disk = c.trace.with_file_name("disk");
    let rank = vec![
        rec(Op::Init, 0, 0, Params::None),
        rec(Op::FileOpenIo, 0, 0, io(1, 0, 0)),
        rec(Op::FileWriteAt, 0, 0, io(1, 0, 100_000_000)),
        rec(Op::FileClose, 0, 0, io(1, 0, 0)),
        rec(Op::Finalize, 0, 0, Params::None),
    ];
    write_ranks(&disk, &[rank]);
    let run = |trace: &Path, scale: &str| {
        let out = simulator(&["replay", "--platform", s(&platform), s(trace), "--json", "--io-scale", scale]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        (makespan(&out), v)
    };
    // The write reaches the server after the network's 1 ms latency.
    let (base, v) = run(&disk, "1");
    close(base, 1e-3 + 1.0);
    assert_eq!(v["io_s"].as_f64(), Some(base));
    assert_eq!(v["io_servers"][0]["bytes_written"].as_u64(), Some(100_000_000), "{v}");
    close(run(&disk, "0.5").0, 1e-3 + 2.0);
    // The ping-pong has no I/O: the same makespan at any scale.
    close(run(&c.trace, "0.5").0, run(&c.trace, "1").0);
}

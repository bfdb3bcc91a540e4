//! `INTERPOSER_MODE=regions`: per-region block sums that name the same
//! regions, with the same block counts, as a traced run of the program.

use std::collections::BTreeMap;
use std::path::Path;

use simulator::trace::run_regions::RunRegions;

use super::mpirun;

/// Per rank, each region's block count.
fn counts(run: &RunRegions) -> Vec<BTreeMap<String, u64>> {
    run.ranks.iter().map(|m| m.iter().map(|(k, s)| (k.clone(), s.count)).collect()).collect()
}

fn run_in(mode: &str, np: u32, prog: &str, args: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    mpirun(np, prog, args, &[("INTERPOSER_OUT", dir.path().to_str().unwrap()), ("INTERPOSER_MODE", mode)], true);
    dir
}

fn same_regions_as_traced(np: u32, prog: &str, args: &[&str]) {
    let traced = run_in("trace", np, prog, args);
    let regions = run_in("regions", np, prog, args);
    let names: Vec<String> = std::fs::read_dir(regions.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(!names.iter().any(|n| n.ends_with(".trace") || n == "meta.json"), "{prog}: regions mode writes no trace: {names:?}");
    let t = counts(&RunRegions::from_trace(traced.path()).unwrap());
    let r = counts(&RunRegions::from_regions(regions.path()).unwrap());
    assert_eq!(r.len(), np as usize);
    for (rank, (t, r)) in t.iter().zip(&r).enumerate() {
        assert!(t.len() >= 3, "{prog} rank {rank}: {t:?}");
        assert_eq!(r, t, "{prog} rank {rank}: region keys and block counts, regions mode vs trace mode");
    }
    // Block times are there, and no larger than the run.
    let times = simulator::trace::region_times::RegionTimes::load_dir(regions.path()).unwrap();
    for f in &times {
        let cpu: f64 = f.regions.iter().map(|b| b.sums.cpu_s).sum();
        assert!(cpu > 0.0 && cpu <= f.wall_s + 1e-3, "rank {}: {cpu} s of blocks in a {} s run", f.rank, f.wall_s);
    }
}

#[test]
fn regions_mode_names_the_traced_run_s_regions_with_its_counts() {
    // Nonblocking exchanges and Waitall (a list call) on 4 ranks.
    same_regions_as_traced(4, "jacobi2d", &["64", "15"]);
    // Blocking sends and receives, and a polling loop of MPI_Iprobe that
    // the trace stores as runs.
    same_regions_as_traced(2, "overhead", &["5000"]);
}

#[test]
fn regions_mode_leaves_the_program_s_output_unchanged() {
    let plain = mpirun(3, "ring", &["20", "64"], &[], false);
    let dir = tempfile::tempdir().unwrap();
    let lean = mpirun(3, "ring", &["20", "64"], &[("INTERPOSER_OUT", dir.path().to_str().unwrap()), ("INTERPOSER_MODE", "regions")], true);
    let strip = |o: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.contains("wall_s=")).map(str::to_string).collect()
    };
    assert_eq!(strip(&lean), strip(&plain));
    assert!(!String::from_utf8_lossy(&lean.stderr).contains("warning"), "{}", String::from_utf8_lossy(&lean.stderr));
    assert!(Path::new(&dir.path().join("rank-2.regions.json")).is_file());
}

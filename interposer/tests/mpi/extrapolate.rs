//! Trace extrapolation on real traces: runs at 2, 4 and 8 ranks make the
//! run at 16, set against a real 16-rank trace of the same program.

use super::*;

use simulator::action::{Action, ComputeTime};
use simulator::extrapolate::{Model, Sample};

/// Sends of each rank (point-to-point, including `MPI_Sendrecv`'s).
fn sends<E>(streams: Vec<simulator::replay::ActionStream<'_, E>>) -> Vec<usize> {
    streams
        .into_iter()
        .map(|s| s.filter(|a| matches!(a, Ok(Action::Send { .. } | Action::Isend { .. } | Action::Sendrecv { .. }))).count())
        .collect()
}

#[test]
fn extrapolated_runs_send_what_real_runs_send_rank_by_rank() {
    for (prog, args) in [("jacobi2d", &["256", "10"][..]), ("ring", &["50", "64"][..]), ("comm_split", &["20", "64"][..])] {
        let dirs: Vec<tempfile::TempDir> = [2, 4, 8, 16].iter().map(|&n| traced(n, prog, args).0).collect();
        let samples = dirs[..3].iter().map(|d| Sample::open(d.path()).unwrap()).collect();
        let model = Model::build(samples).unwrap_or_else(|e| panic!("{prog}: {e}"));
        // The c-tests are built with -g: regions are named file:line.
        let regions: Vec<&str> = model.classes.iter().flat_map(|c| c.laws.iter().map(|l| l.region.as_str())).collect();
        assert!(regions.iter().any(|r| r.contains(&format!("{prog}.c:"))), "{prog}: {regions:?}");
        let real = simulator::replay::open_trace_dir(dirs[3].path(), ComputeTime::Cpu).unwrap();
        assert_eq!(sends(model.streams(16)), sends(real), "{prog}: sends per rank");
        // The written trace reads back as the one generated in memory.
        let out = tempfile::tempdir().unwrap();
        model.write_dir(16, out.path()).unwrap();
        let written = simulator::replay::open_trace_dir(out.path(), ComputeTime::Cpu).unwrap();
        assert_eq!(sends(written), sends(model.streams(16)), "{prog}: written trace");
    }
}

/// A periodic 3-D stencil: from 2, 4 and 8 ranks (every grid side at most
/// 2) the direction of each neighbour is unknown and the model says so;
/// with a 27-rank trace (3 × 3 × 3) it makes the 18-rank run (3 × 3 × 2).
#[test]
fn a_periodic_3d_stencil_extrapolates_once_a_trace_has_sides_of_three() {
    let args = &["4", "3"][..];
    let dirs: Vec<tempfile::TempDir> = [2, 4, 8, 27, 18].iter().map(|&n| traced(n, "halo3d", args).0).collect();
    let open = |i: &[usize]| i.iter().map(|&i| Sample::open(dirs[i].path()).unwrap()).collect::<Vec<_>>();
    let Err(err) = Model::build(open(&[0, 1, 2])) else { panic!("2, 4 and 8 ranks taken as enough") };
    let err = err.to_string();
    assert!(err.contains("periodic 3-D grid") && err.contains("27 ranks"), "{err}");
    let model = Model::build(open(&[0, 1, 2, 3])).unwrap_or_else(|e| panic!("{e}"));
    let real = simulator::replay::open_trace_dir(dirs[4].path(), ComputeTime::Cpu).unwrap();
    assert_eq!(destinations(model.streams(18)), destinations(real), "sends per rank");
}

/// Each rank's blocking sends as sorted `(destination, bytes)` pairs.
fn destinations<E>(streams: Vec<simulator::replay::ActionStream<'_, E>>) -> Vec<Vec<(u32, u64)>> {
    streams
        .into_iter()
        .map(|s| {
            let mut v: Vec<(u32, u64)> = s
                .filter_map(|a| match a {
                    Ok(Action::Send { dst, bytes, .. }) => Some((dst, bytes)),
                    _ => None,
                })
                .collect();
            v.sort_unstable();
            v
        })
        .collect()
}

#[test]
fn extrapolation_from_one_rank_count_is_refused_in_one_line() {
    let (dir, _) = traced(2, "ring", &["5", "8"]);
    // The simulator binary of this test's profile (built by `cargo build --workspace`).
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("simulator");
    if !bin.exists() {
        eprintln!("skipped: {} is not built (cargo build --workspace)", bin.display());
        return;
    }
    let platform = dir.path().join("platform.toml");
    std::fs::write(&platform, "[[hosts]]\nname = \"n0\"\ncores = 4\n[network.intra]\nlatency_s = 1e-6\nbandwidth_bytes_per_s = 1e9\n")
        .unwrap();
    let out = Command::new(&bin).args(["replay", "--ranks", "8", "--platform"]).arg(&platform).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.lines().count() == 1 && err.contains("two or more rank counts"), "{err}");
}

/// Ghost ranks: a 4-rank online run, with traces at 2 and 8 ranks, predicts
/// 64 ranks as the offline extrapolation of the same traces does.
#[test]
fn ghost_ranks_online_agree_with_the_offline_extrapolation() {
    let tmp = tempfile::tempdir().unwrap();
    let platform = super::online::platform_file(tmp.path(), 1.0);
    let prog = ("allreduce_loop", &["100", "4096"][..]);
    let (t2, t8) = (traced(2, prog.0, prog.1).0, traced(8, prog.0, prog.1).0);
    let traces = format!("{},{}", t2.path().display(), t8.path().display());
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("INTERPOSER_OUT", dir.path().to_str().unwrap()),
        ("INTERPOSER_MODE", "online"),
        ("INTERPOSER_PLATFORM", platform.to_str().unwrap()),
        ("INTERPOSER_GHOST_RANKS", "64"),
        ("INTERPOSER_GHOST_TRACES", &traces),
    ];
    let out = mpirun(4, prog.0, prog.1, &env, true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ghost = &super::online::online_json(dir.path())["ghost"];
    assert_eq!((ghost["ranks"].as_u64(), ghost["sample_ranks"].as_array().map(Vec::len)), (Some(64), Some(3)), "{ghost}");
    let online = ghost["makespan_s"].as_f64().unwrap_or_else(|| panic!("no prediction: {ghost}"));
    let samples = [dir.path(), t2.path(), t8.path()].iter().map(|d| Sample::open(d).unwrap()).collect();
    let model = Model::build(samples).unwrap();
    let p = simulator::platform::Platform::load(&platform).unwrap();
    let offline = simulator::replay::replay(&p, model.streams(64)).unwrap();
    assert_eq!(offline.ranks.len(), 64);
    let band = (ghost["band_s"][0].as_f64().unwrap(), ghost["band_s"][1].as_f64().unwrap());
    println!(
        "64 ghost ranks: online {online:.6} s, offline {:.6} s, band {band:?}, {} s in MPI_Finalize",
        offline.makespan_s, ghost["wall_s"]
    );
    assert!((online / offline.makespan_s - 1.0).abs() < 0.02, "online {online} s, offline {} s", offline.makespan_s);
    assert!(band.0 <= online && online <= band.1, "{band:?} around {online}");
    // Without traces at another rank count: one warning, no prediction, the run unchanged.
    let lone = tempfile::tempdir().unwrap();
    let env = [
        ("INTERPOSER_OUT", lone.path().to_str().unwrap()),
        ("INTERPOSER_MODE", "online"),
        ("INTERPOSER_PLATFORM", platform.to_str().unwrap()),
        ("INTERPOSER_GHOST_RANKS", "64"),
    ];
    let out = mpirun(4, prog.0, prog.1, &env, true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.matches("INTERPOSER_GHOST_RANKS=64").count() == 1, "{err}");
    let ghost = &super::online::online_json(lone.path())["ghost"];
    assert!(ghost["makespan_s"].is_null() && ghost["error"].as_str().unwrap().contains("INTERPOSER_GHOST_TRACES"), "{ghost}");
}

/// Several traced runs of one program replay as one, each block at the
/// median of its durations: the same run three times replays as itself,
/// and three runs give each block their median.
#[test]
fn several_traced_runs_replay_at_the_median_of_their_blocks() {
    use simulator::replay::runs::median_of_runs;
    let tmp = tempfile::tempdir().unwrap();
    let p = simulator::platform::Platform::load(&super::online::platform_file(tmp.path(), 1.0)).unwrap();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| traced(2, "jacobi2d", &["128", "20"]).0).collect();
    let open = |d: &tempfile::TempDir| simulator::replay::open_trace_dir(d.path(), ComputeTime::Cpu).unwrap();
    let alone = simulator::replay::replay(&p, open(&dirs[0])).unwrap().makespan_s;
    let same = simulator::replay::replay(&p, median_of_runs(vec![open(&dirs[0]), open(&dirs[0]), open(&dirs[0])])).unwrap().makespan_s;
    assert_eq!(alone, same);
    fn blocks<E>(streams: Vec<simulator::replay::ActionStream<'_, E>>) -> Vec<f64> {
        let seconds = |a: Result<Action, E>| match a {
            Ok(Action::Compute { seconds, .. }) => Some(seconds),
            _ => None,
        };
        streams.into_iter().flat_map(|s| s.filter_map(seconds)).collect()
    }
    let each: Vec<Vec<f64>> = dirs.iter().map(|d| blocks(open(d))).collect();
    let merged = blocks(median_of_runs(dirs.iter().map(open).collect()));
    assert_eq!(merged.len(), each[0].len());
    for (i, m) in merged.iter().enumerate() {
        let mut v = [each[0][i], each[1][i], each[2][i]];
        v.sort_by(f64::total_cmp);
        assert_eq!(*m, v[1], "block {i}");
    }
}

/// Each rank's point-to-point messages as sorted `(sent, peer, bytes)`
/// triples, sends and receives, blocking or not.
fn messages<E>(streams: Vec<simulator::replay::ActionStream<'_, E>>) -> Vec<Vec<(bool, i64, u64)>> {
    streams
        .into_iter()
        .map(|s| {
            let mut v: Vec<(bool, i64, u64)> = s
                .filter_map(|a| match a {
                    Ok(Action::Send { dst, bytes, .. } | Action::Isend { dst, bytes, .. }) => Some((true, dst as i64, bytes)),
                    Ok(Action::Recv { src, bytes, .. } | Action::Irecv { src, bytes, .. }) => Some((false, src as i64, bytes)),
                    _ => None,
                })
                .collect();
            v.sort_unstable();
            v
        })
        .collect()
}

/// Programs whose ranks on the process grid's boundary skip the
/// neighbours they lack: classed by grid position, the extrapolated run
/// at 16 ranks exchanges, rank by rank, the messages of a real 16-rank
/// run, also where no traced count had the position (the interior of the
/// wavefront's short side).
#[test]
fn boundary_ranks_that_skip_neighbours_extrapolate_by_grid_position() {
    let cases: [(&str, &[&str], [u32; 3]); 2] =
        [("ssor_wavefront", &["400", "2", "3", "5"], [2, 4, 8]), ("hydro3d", &["3", "2", "20"], [1, 8, 27])];
    for (prog, args, counts) in cases {
        let dirs: Vec<tempfile::TempDir> = counts.iter().chain(&[16]).map(|&n| traced(n, prog, args).0).collect();
        let samples = dirs[..3].iter().map(|d| Sample::open(d.path()).unwrap()).collect();
        let model = Model::build(samples).unwrap_or_else(|e| panic!("{prog}: {e}"));
        assert!(
            model.classes.iter().all(|c| matches!(c.rule, simulator::extrapolate::ClassRule::Position(_))),
            "{prog}: classes by grid position"
        );
        let real = simulator::replay::open_trace_dir(dirs[3].path(), ComputeTime::Cpu).unwrap();
        let want = messages(real);
        assert!(want.iter().map(Vec::len).min() < want.iter().map(Vec::len).max(), "{prog}: boundary ranks exchange less");
        assert_eq!(messages(model.streams(16)), want, "{prog}: messages per rank at 16");
        for n in [64, 256] {
            model.covers(n).unwrap_or_else(|e| panic!("{prog} at {n}: {e}"));
        }
    }
}

/// A multigrid V-cycle on a periodic 3-D grid at powers of two: at 2, 4
/// and 8 ranks every side is at most 2 long and the model refuses, naming
/// 16 ranks; with a 16-rank trace (4 × 2 × 2) the exchange function's
/// calls take along the short sides the direction they take along the
/// long one, and the 32-rank run (4 × 4 × 2) exchanges what a real one
/// does, rank by rank.
#[test]
fn a_periodic_multigrid_on_powers_of_two_takes_each_call_lines_direction_from_the_long_side() {
    let args = &["4", "1", "3", "20"][..];
    let dirs: Vec<tempfile::TempDir> = [2, 4, 8, 16, 32].iter().map(|&n| traced(n, "mg3d", args).0).collect();
    let open = |i: &[usize]| i.iter().map(|&i| Sample::open(dirs[i].path()).unwrap()).collect::<Vec<_>>();
    let Err(err) = Model::build(open(&[0, 1, 2])) else { panic!("2, 4 and 8 ranks taken as enough") };
    let err = err.to_string();
    assert!(err.contains("MPI_Irecv") && err.contains("among powers of two, 16") && err.contains("mg3d.c:"), "{err}");
    let model = Model::build(open(&[0, 1, 2, 3])).unwrap_or_else(|e| panic!("{e}"));
    let real = simulator::replay::open_trace_dir(dirs[4].path(), ComputeTime::Cpu).unwrap();
    assert_eq!(messages(model.streams(32)), messages(real), "messages per rank at 32");
}

/// A conjugate-gradient skeleton on NPB CG's grid: each row sum takes
/// log2 of the row's width exchanges, one at 2 and 4 ranks, two at 8 and
/// 16, three at 32, each with the partner of its iteration, and the
/// transpose exchange's partner follows the grid's shape. Traced at 2, 4
/// and 8 ranks, the model's loops fold and their trip counts follow the
/// grid: the extrapolated runs at 16 and 32 ranks exchange, rank by rank,
/// the messages of real runs, and 64 and 256 ranks are covered.
#[test]
fn loops_whose_trip_count_follows_the_grid_extrapolate_with_each_iteration_s_partner() {
    let args = &["1024", "1", "2", "400"][..];
    let dirs: Vec<tempfile::TempDir> = [2, 4, 8, 16, 32].iter().map(|&n| traced(n, "cg", args).0).collect();
    let samples = dirs[..3].iter().map(|d| Sample::open(d.path()).unwrap()).collect();
    let model = Model::build(samples).unwrap_or_else(|e| panic!("{e}"));
    // Every row sum's loop: log2 of the row's width.
    let laws: Vec<String> = model.classes.iter().flat_map(|c| c.loop_laws().iter().map(|l| l.to_string())).collect();
    assert!(!laws.is_empty() && laws.iter().all(|l| l == "log2 dims0(N)"), "{laws:?}");
    for (dir, n) in dirs[3..].iter().zip([16, 32]) {
        let real = simulator::replay::open_trace_dir(dir.path(), ComputeTime::Cpu).unwrap();
        let want = messages(real);
        let got = messages(model.streams(n));
        assert_eq!(got.len(), want.len());
        for (r, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "messages of rank {r} at {n}");
        }
    }
    for n in [64, 256] {
        model.covers(n).unwrap_or_else(|e| panic!("at {n}: {e}"));
        let sends = messages(model.streams(n)).iter().map(|m| m.iter().filter(|x| x.0).count()).collect::<Vec<_>>();
        // Per step: three row sums of log2(width) exchanges and the transpose.
        let width = simulator::extrapolate::rules::dims_2d(n).0;
        assert!(
            sends.iter().all(|&s| s == 2 * (3 * width.trailing_zeros() as usize + 1) + width.trailing_zeros() as usize),
            "{n}: {:?}",
            &sends[..4]
        );
    }
}

/// Each rank's all-to-all-v send vectors, call by call.
fn alltoallv<E>(streams: Vec<simulator::replay::ActionStream<'_, E>>) -> Vec<Vec<Vec<u64>>> {
    let vectors = |s: simulator::replay::ActionStream<'_, E>| {
        s.filter_map(|a| match a {
            Ok(Action::Alltoallv { send_bytes, .. }) => Some(send_bytes),
            _ => None,
        })
        .collect()
    };
    streams.into_iter().map(vectors).collect()
}

/// A bucket sort (NPB IS's pattern): the keys' all-to-all-v from 2, 4
/// and 8 ranks gets, at 16 ranks, a 16-entry send vector per call and
/// rank equal to a real run's, and vectors of length N at 64 and 256.
#[test]
fn a_bucket_sort_s_alltoallv_vectors_take_the_target_count_s_length() {
    let args = &["4096", "2", "200"][..];
    let dirs: Vec<tempfile::TempDir> = [2, 4, 8, 16].iter().map(|&n| traced(n, "bucket_sort", args).0).collect();
    let samples = dirs[..3].iter().map(|d| Sample::open(d.path()).unwrap()).collect();
    let model = Model::build(samples).unwrap_or_else(|e| panic!("{e}"));
    let real = simulator::replay::open_trace_dir(dirs[3].path(), ComputeTime::Cpu).unwrap();
    let want = alltoallv(real);
    assert!(want.iter().all(|calls| calls.len() == 2 && calls.iter().all(|v| v.len() == 16)), "{want:?}");
    assert_eq!(alltoallv(model.streams(16)), want, "send vectors at 16");
    for n in [64u32, 256] {
        let got = alltoallv(model.streams(n));
        let each = 4096 / n as u64 * 4;
        assert!(got.iter().all(|calls| calls.iter().all(|v| v.len() == n as usize && v.iter().all(|&b| b == each))), "at {n}");
    }
}

//! Network calibration v1: the intra-node [`P2pModel`] of this machine,
//! fitted from [`crate::bench`](mod@crate::bench) samples.
//!
//! - `transfer` is the segmented fit of half ping-pong round trips,
//!   `send_overhead` of blocking sends to a waiting receiver and
//!   `recv_overhead` of receives of already-sent messages (SMPI's
//!   `smpi/os`, `smpi/or`; Heinrich et al., IEEE Cluster 2017, §6.3).
//! - `eager_threshold_bytes` is where the `recv` fit jumps most, by a factor
//!   of at least [`MIN_SWITCH_JUMP`]: below the eager limit the message is
//!   already in the receiver's memory and the receive is a local copy;
//!   above it the receive pays the rendezvous handshake and the whole
//!   transfer. (The first breakpoint of the `send` fit is *not* used: with
//!   Open MPI's shared-memory BTL the blocking send time also jumps near
//!   256 B, where messages stop fitting its "fast box", well below the
//!   4 KiB eager limit.) The grid only brackets the switch between two
//!   measured sizes, so refinement rounds measure `recv` at sizes inside
//!   the bracket and keep the smallest size from which all are
//!   rendezvous-like.

use std::path::Path;

use simulator::network::P2pModel;
use simulator::platform::{Host, Mapping, Network, Platform};

use crate::bench::{self, Launcher, Op, Sample};
use crate::error::{Error, ErrorKind};
use crate::segmented::{self, FitOptions, SegmentedFit};

/// Smallest jump factor of the `recv` fit taken as the eager → rendezvous
/// switch (dimensionless). Observed: about 10 with Open MPI's vader BTL.
pub const MIN_SWITCH_JUMP: f64 = 2.0;

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkOptions {
    /// Repetitions of every size; default 30.
    pub reps: usize,
    /// Number of distinct sizes of the main grid; default 60.
    pub sizes: usize,
    /// Largest message size, bytes; default 4 MiB.
    pub max_bytes: u64,
    /// Seed of the size grid and of the shuffles; default 1.
    pub seed: u64,
    /// Rounds narrowing the eager threshold; default 3, 0 disables.
    pub refine_rounds: usize,
    /// Sizes measured per refinement round; default 12.
    pub refine_sizes: usize,
    /// Repetitions per size in refinement rounds; default 10.
    pub refine_reps: usize,
    /// Segmented-fit options; default [`FitOptions::default`].
    pub fit: FitOptions,
}

impl Default for NetworkOptions {
    fn default() -> NetworkOptions {
        NetworkOptions {
            reps: 30,
            sizes: 60,
            max_bytes: 4 << 20,
            seed: 1,
            refine_rounds: 3,
            refine_sizes: 12,
            refine_reps: 10,
            fit: FitOptions::default(),
        }
    }
}

/// The fitted models of one link class.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkFit {
    /// Half round-trip time against size.
    pub transfer: SegmentedFit,
    /// Blocking send time against size.
    pub send: SegmentedFit,
    /// Receive time of an already-sent message against size.
    pub recv: SegmentedFit,
    /// Messages strictly smaller than this are eager, bytes.
    pub eager_threshold_bytes: u64,
    /// How the threshold was found, one line for humans.
    pub threshold_note: String,
}

impl NetworkFit {
    /// The simulator's model.
    pub fn p2p_model(&self) -> P2pModel {
        P2pModel {
            eager_threshold_bytes: self.eager_threshold_bytes,
            transfer: self.transfer.to_piecewise(),
            send_overhead: self.send.to_piecewise(),
            recv_overhead: self.recv.to_piecewise(),
        }
    }

    /// A table of the pieces of every fit, with microseconds and GB/s.
    pub fn summary(&self) -> String {
        let mut out = format!("{:<14} {:>21} {:>8} {:>14} {:>11} {:>8}\n", "model", "sizes (B)", "points", "intercept (us)", "bw (GB/s)", "rms err");
        for (name, f) in [("transfer", &self.transfer), ("send_overhead", &self.send), ("recv_overhead", &self.recv)] {
            for (i, p) in f.pieces.iter().enumerate() {
                let bw = if p.slope_s_per_byte > 0.0 { format!("{:.3}", 1e-9 / p.slope_s_per_byte) } else { "inf".into() };
                out.push_str(&format!(
                    "{:<14} {:>10}..{:<9} {:>8} {:>14.3} {:>11} {:>7.1}%\n",
                    if i == 0 { name } else { "" },
                    p.first_bytes,
                    p.last_bytes,
                    p.points,
                    p.intercept_s * 1e6,
                    bw,
                    p.rms_rel_residual * 100.0
                ));
            }
        }
        out.push_str(&format!("eager_threshold_bytes = {} ({})\n", self.eager_threshold_bytes, self.threshold_note));
        out
    }
}

/// `(size_bytes, duration_s)` of the samples of `op`.
fn points(samples: &[Sample], op: Op) -> Vec<(u64, f64)> {
    samples.iter().filter(|s| s.op == op).map(|s| (s.size_bytes, s.duration_s)).collect()
}

/// Fits the three models of `samples` and places the eager threshold at
/// the `recv` fit's protocol switch (see the module doc); with no switch,
/// every measured size is eager (threshold = largest size + 1).
///
/// # Errors
/// [`ErrorKind::Fit`] naming the operation with too few distinct sizes or
/// a bad duration; [`ErrorKind::InvalidArgument`] for bad `fit` options.
pub fn fit_network(samples: &[Sample], fit: &FitOptions) -> Result<NetworkFit, Error> {
    let one = |op: Op| segmented::fit(&points(samples, op), fit).map_err(|e| Error::new(e.kind(), format!("{op}: {e}")));
    let (transfer, send, recv) = (one(Op::Pingpong)?, one(Op::Send)?, one(Op::Recv)?);
    let (eager_threshold_bytes, threshold_note) = match protocol_switch(&recv) {
        Some((k, jump)) => {
            let (lo, hi) = (recv.pieces[k - 1].last_bytes, recv.pieces[k].first_bytes);
            (hi, format!("recv jumps x{jump:.1} between {lo} and {hi} B"))
        }
        None => {
            let top = recv.pieces.last().map_or(1, |p| p.last_bytes) + 1;
            (top, format!("no recv jump >= x{MIN_SWITCH_JUMP}: all measured sizes eager"))
        }
    };
    Ok(NetworkFit { transfer, send, recv, eager_threshold_bytes, threshold_note })
}

/// The piece index `k ≥ 1` where the `recv` fit jumps most at its start,
/// with the jump factor `piece k / piece k-1` evaluated at the first size
/// of piece k, if that factor is at least [`MIN_SWITCH_JUMP`].
pub fn protocol_switch(recv: &SegmentedFit) -> Option<(usize, f64)> {
    (1..recv.pieces.len())
        .map(|k| {
            let b = recv.pieces[k].first_bytes;
            (k, recv.pieces[k].eval(b) / recv.pieces[k - 1].eval(b))
        })
        .filter(|&(_, jump)| jump >= MIN_SWITCH_JUMP)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Everything measured and fitted by [`calibrate`].
#[derive(Debug, Clone)]
pub struct NetworkCalibration {
    /// Samples of the main size grid (the fits use these).
    pub samples: Vec<Sample>,
    /// Samples of the refinement rounds (the eager threshold uses these).
    pub refine_samples: Vec<Sample>,
    /// The fits, threshold refined.
    pub fit: NetworkFit,
}

/// Compiles and runs the benchmark in a fresh temporary directory: the
/// main grid once, then up to `refine_rounds` rounds narrowing the eager
/// threshold; returns samples and fits.
///
/// # Errors
/// Any error of [`Launcher::compile`], [`Launcher::run`], [`bench::size_grid`]
/// or [`fit_network`]; [`ErrorKind::InvalidArgument`] when `reps` is 0;
/// [`ErrorKind::Io`] when no temporary directory can be made.
pub fn calibrate(launcher: &Launcher, options: &NetworkOptions) -> Result<NetworkCalibration, Error> {
    if options.reps == 0 {
        return Err(Error::new(ErrorKind::InvalidArgument, "reps: must be >= 1"));
    }
    let dir = tempfile::Builder::new()
        .prefix("calibrate-network-")
        .tempdir()
        .map_err(|e| Error::new(ErrorKind::Io, format!("temporary directory: {e}")))?;
    let exe = launcher.compile(dir.path())?;
    let grid = bench::size_grid(options.sizes, options.max_bytes, options.seed)?;
    let samples = run_warm(launcher, &exe, &grid, options.reps, options.seed, dir.path())?;
    let mut fit = fit_network(&samples, &options.fit)?;
    let mut refine_samples = Vec::new();
    if let Some((k, _)) = protocol_switch(&fit.recv) {
        let (eager, rndv) = (&fit.recv.pieces[k - 1], &fit.recv.pieces[k]);
        let (mut lo, mut hi) = (eager.last_bytes, rndv.first_bytes);
        let mut rounds = 0;
        while rounds < options.refine_rounds && hi - lo > 1 && options.refine_sizes > 0 && options.refine_reps > 0 {
            let sizes = between(lo, hi, options.refine_sizes);
            let seed = options.seed.wrapping_add(1 + rounds as u64);
            let round = run_warm(launcher, &exe, &sizes, options.refine_reps, seed, dir.path())?;
            let medians = segmented::median_by_size(&points(&round, Op::Recv));
            // Rendezvous-like: closer (in log) to the rendezvous piece.
            let is_rndv = |&(s, y): &(u64, f64)| y * y > eager.eval(s) * rndv.eval(s);
            let first = medians.iter().rposition(|m| !is_rndv(m)).map_or(0, |i| i + 1);
            lo = if first > 0 { medians[first - 1].0 } else { lo };
            hi = medians.get(first).map_or(hi, |m| m.0);
            refine_samples.extend(round);
            rounds += 1;
        }
        if rounds > 0 {
            fit.eager_threshold_bytes = hi;
            fit.threshold_note = format!("{}; refined in {rounds} rounds: eager at {lo} B, rendezvous at {hi} B", fit.threshold_note);
        }
    }
    Ok(NetworkCalibration { samples, refine_samples, fit })
}

/// Runs `sizes` once unrecorded (warm-up), then `reps` times shuffled.
fn run_warm(launcher: &Launcher, exe: &Path, sizes: &[u64], reps: usize, seed: u64, dir: &Path) -> Result<Vec<Sample>, Error> {
    let mut plan = sizes.to_vec();
    plan.extend(bench::shuffled_plan(sizes, reps, seed));
    launcher.run(exe, &plan, sizes.len(), dir)
}

/// Up to `count` distinct sizes evenly spaced strictly between `lo` and
/// `hi`, ascending (all of them when fewer exist).
fn between(lo: u64, hi: u64, count: usize) -> Vec<u64> {
    let gap = hi - lo;
    let mut v: Vec<u64> = (1..=count as u64).map(|i| lo + (gap * i).div_ceil(count as u64 + 1)).filter(|&s| s > lo && s < hi).collect();
    v.dedup();
    v
}

/// A one-host platform with `model` as its intra-node network: host
/// `host_name` with `cores` cores, block mapping, no inter-node model.
pub fn host_platform(host_name: &str, cores: u32, model: P2pModel) -> Platform {
    Platform {
        name: format!("calibrated-{host_name}"),
        hosts: vec![Host { name: host_name.into(), cores, speed_ratio: 1.0 }],
        mapping: Mapping::Block,
        network: Network { intra: model, inter: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples shaped like Open MPI's vader BTL: eager below 4096 B.
    fn vader_like() -> Vec<Sample> {
        let grid = bench::size_grid(60, 4 << 20, 1).unwrap();
        let mut out = Vec::new();
        for (i, &s) in grid.iter().enumerate() {
            let x = s as f64;
            let eager = s < 4096;
            let wobble = 1.0 + 0.02 * ((i % 5) as f64 - 2.0);
            let transfer = if eager { 3e-7 + x / 3e9 } else { 4e-6 + x / 8e9 };
            let send = if s < 256 {
                1e-7
            } else if eager {
                1e-6 + x / 2e9
            } else {
                5e-6 + x / 6e9
            };
            let recv = if eager { 1.5e-7 + x / 2e10 } else { 3e-6 + x / 9e9 };
            for (op, y) in [(Op::Pingpong, transfer), (Op::Send, send), (Op::Recv, recv)] {
                out.push(Sample { op, size_bytes: s, start_s: 0.0, duration_s: y * wobble });
            }
        }
        out
    }

    #[test]
    fn the_threshold_is_the_recv_jump_not_the_first_send_breakpoint() {
        let f = fit_network(&vader_like(), &FitOptions::default()).unwrap();
        let first_rndv = *bench::size_grid(60, 4 << 20, 1).unwrap().iter().find(|&&s| s >= 4096).unwrap();
        assert_eq!(f.eager_threshold_bytes, first_rndv, "{}", f.summary());
        assert!(f.send.breakpoints()[0] < 1000, "{}", f.summary());
        let m = f.p2p_model();
        assert!(m.validate().is_ok());
        assert!(m.transfer.eval(1) < m.transfer.eval(4 << 20));
        assert!(f.summary().contains("recv_overhead") && f.summary().contains("eager_threshold_bytes"));
    }

    #[test]
    fn without_a_jump_every_size_is_eager() {
        let flat: Vec<Sample> = vader_like().into_iter().map(|s| Sample { duration_s: 1e-6 + s.size_bytes as f64 / 1e10, ..s }).collect();
        let f = fit_network(&flat, &FitOptions::default()).unwrap();
        assert_eq!(f.eager_threshold_bytes, (4 << 20) + 1);
        assert!(f.threshold_note.contains("no recv jump"));
    }

    #[test]
    fn fit_errors_name_the_operation() {
        let only_pingpong: Vec<Sample> = vader_like().into_iter().filter(|s| s.op == Op::Pingpong).collect();
        let e = fit_network(&only_pingpong, &FitOptions::default()).unwrap_err();
        assert!(e.to_string().starts_with("send: "), "{e}");
    }

    #[test]
    fn refinement_sizes_lie_strictly_inside_the_bracket() {
        assert_eq!(between(3599, 4934, 12).len(), 12);
        assert!(between(3599, 4934, 12).iter().all(|&s| s > 3599 && s < 4934));
        assert_eq!(between(10, 14, 12), vec![11, 12, 13]);
        assert!(between(10, 11, 12).is_empty());
    }

    #[test]
    fn the_platform_round_trips_through_toml() {
        let f = fit_network(&vader_like(), &FitOptions::default()).unwrap();
        let p = host_platform("node0", 2, f.p2p_model());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        p.save(&path).unwrap();
        assert_eq!(Platform::load(&path).unwrap(), p);
    }
}

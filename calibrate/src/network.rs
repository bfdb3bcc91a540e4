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
use simulator::platform::RmaCalls;
use statrs::statistics::{Data, Median};

use crate::bench::{self, Launcher, Op, Sample};
use crate::error::{Error, ErrorKind};
use crate::loggp;
use crate::modes::{self, Bimodal, SlowState};
use crate::segmented::{self, FitOptions, SegmentedFit};
use simulator::network::loggp::LogGps;

pub mod copy;
pub mod gamma;
mod hosts;
mod jitsim;
pub mod rma;
pub mod shm;
mod summary;
mod validation;

pub use hosts::{cluster_platform, host_platform, hostfile_hosts};
pub use jitsim::JitsimLatencies;
pub use validation::{hold_out, median_ci, validate, Validation};

/// Smallest jump factor of the `recv` fit taken as the eager → rendezvous
/// switch (dimensionless). Observed: about 10 with Open MPI's vader BTL.
pub const MIN_SWITCH_JUMP: f64 = 2.0;

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkOptions {
    /// Repetitions of every size; default 60.
    pub reps: usize,
    /// Number of distinct sizes of the main grid; default 30 (fewer sizes,
    /// more repetitions: steadier per-size medians on a noisy machine).
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
    /// Share of the main-grid samples held back from the fit to validate
    /// it, in [0, 0.5]; default 0.2.
    pub holdout_fraction: f64,
    /// Messages per PRTT burst of the LogGP assessment; default 8, 0 skips it.
    pub loggp_n: u32,
    /// Repetitions per size of the LogGP assessment; default 10.
    pub loggp_reps: usize,
    /// Repetitions per size of the `MPI_Allreduce` samples
    /// ([`gamma::ALLREDUCE_SIZES`]) the reduction cost is fitted on;
    /// default 10, 0 skips them.
    pub allreduce_reps: usize,
    /// Ping-pongs and exchanges send from a buffer no rank writes and
    /// receive into another (netbench's `clean` mode, as OSU's and most
    /// bandwidth benchmarks do) instead of sending back what was
    /// received; default false.
    pub clean_buffers: bool,
    /// Grid passes are added (each `reps` more per size) while the
    /// per-size ping-pong medians of the fast state are less stable than
    /// this ([`median_ci`], dimensionless); default 0.025.
    pub stable_rel: f64,
    /// Most extra grid passes; default 3.
    pub max_extra_passes: usize,
    /// No extra pass starts unless the main grid's passes so far, plus one
    /// more of the same duration, fit in this budget; default 120 s.
    pub budget: std::time::Duration,
}

impl Default for NetworkOptions {
    fn default() -> NetworkOptions {
        NetworkOptions {
            reps: 60,
            sizes: 30,
            max_bytes: 4 << 20,
            seed: 1,
            refine_rounds: 3,
            refine_sizes: 12,
            refine_reps: 10,
            fit: FitOptions::default(),
            holdout_fraction: 0.2,
            loggp_n: 8,
            loggp_reps: 10,
            allreduce_reps: 10,
            clean_buffers: false,
            stable_rel: 0.025,
            max_extra_passes: 3,
            budget: std::time::Duration::from_secs(120),
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
    /// `MPI_Isend` time against size, when measured.
    pub isend: Option<SegmentedFit>,
    /// Median cost of one `MPI_Wtime` call, seconds, when measured.
    pub wtime_s: Option<f64>,
    /// Median cost of one `MPI_Iprobe` finding nothing, seconds, when measured.
    pub iprobe_s: Option<f64>,
    /// Median cost of posting one `MPI_Irecv`, seconds, when measured
    /// (the platform's `[smpi] irecv_s`).
    pub irecv_s: Option<f64>,
    /// Median cost of one `MPI_Wait` on a satisfied request, seconds, when
    /// measured (the platform's `[smpi] wait_s`).
    pub wait_s: Option<f64>,
    /// Median cost of one one-sided call (half an empty lock, unlock
    /// epoch), seconds, when measured (the platform's `[smpi] rma_call_s`).
    pub rma_call_s: Option<f64>,
    /// Medians of the one-sided calls timed alone, less one `MPI_Wtime`,
    /// seconds, when measured (the platform's `[smpi.rma_calls]`).
    pub rma_calls: RmaCalls,
    /// One-sided movements, when measured (the model's `rma` table).
    pub rma: Option<rma::RmaFit>,
    /// The host's copy rate shared by concurrent transfers, bytes/s, when
    /// the `exchange` samples show one ([`copy::fit_host_copy`]; the
    /// platform's `[network] host_copy_bytes_per_s`).
    pub host_copy_bytes_per_s: Option<f64>,
    /// Two transfers into one rank at once against one, when the `pair`
    /// samples tell ([`copy::fit_pairs`]; the platform's `[network]
    /// serial_receives` and `serial_receives_min_bytes`).
    pub pairs: Option<copy::PairFit>,
    /// Messages strictly smaller than this are eager, bytes.
    pub eager_threshold_bytes: u64,
    /// How the threshold was found, one line for humans.
    pub threshold_note: String,
}

impl NetworkFit {
    /// The simulator's model. Each fit's piece boundary that straddles
    /// the eager threshold is placed at the threshold
    /// ([`SegmentedFit::to_piecewise_switching_at`]): the refinement
    /// rounds locate the protocol switch to the byte, the size grid only
    /// between two of its sizes (here 3783 and 8231 B, so 4 and 8 KiB
    /// messages, rendezvous, took the eager piece's 0.5-0.9 µs instead of
    /// the measured 2.6-3.1 µs).
    pub fn p2p_model(&self) -> P2pModel {
        let at = Some(self.eager_threshold_bytes);
        P2pModel {
            eager_threshold_bytes: self.eager_threshold_bytes,
            transfer: self.transfer.to_piecewise_switching_at(at),
            send_overhead: self.send.to_piecewise_switching_at(at),
            recv_overhead: self.recv.to_piecewise_switching_at(at),
            rma: self.rma.as_ref().map(rma::RmaFit::costs),
        }
    }

    /// The platform's `[network] serial_receives` and
    /// `serial_receives_min_bytes`: from the `pair` samples, or, without
    /// them, at every size, as the single-copy shared-memory transports
    /// of Open MPI and MPICH receive.
    pub fn serial_receives(&self) -> (bool, u64) {
        match &self.pairs {
            None => (true, 0),
            Some(f) => (f.serial_from_bytes.is_some(), f.serial_from_bytes.unwrap_or(0)),
        }
    }
}

/// `(size_bytes, duration_s)` of the samples of `op`.
fn points(samples: &[Sample], op: Op) -> Vec<(u64, f64)> {
    samples.iter().filter(|s| s.op == op).map(|s| (s.size_bytes, s.duration_s)).collect()
}

/// Median duration of the samples of `op`, seconds; `None` without any.
fn op_median(samples: &[Sample], op: Op) -> Option<f64> {
    let v: Vec<f64> = samples.iter().filter(|s| s.op == op).map(|s| s.duration_s).collect();
    (!v.is_empty()).then(|| Data::new(v).median())
}

/// Fits the three models of `samples` and places the eager threshold at
/// the `recv` fit's protocol switch (see the module doc); with no switch,
/// every measured size is eager (threshold = largest size + 1).
///
/// # Errors
/// [`ErrorKind::Fit`] naming the operation with too few distinct sizes or
/// a bad duration; [`ErrorKind::InvalidArgument`] for bad `fit` options.
pub fn fit_network(samples: &[Sample], fit: &FitOptions) -> Result<NetworkFit, Error> {
    // A ping-pong sample is the mean of a loop of round trips (its
    // occasional slow ones included); from sample to sample it moves with
    // the benchmark's random order (a small size right after a large one
    // stays slow for tens of round trips: 8 B per-sample median 163.2 ns,
    // mean 168.4, max 249), which a program repeating a message does not
    // pay (ring: 158 ns per hop): its lines go through the medians.
    let pp = FitOptions { lines_by_median: true, ..*fit };
    let one = |op: Op| {
        let options = if op == Op::Pingpong { &pp } else { fit };
        segmented::fit(&points(samples, op), options).map_err(|e| Error::new(e.kind(), format!("{op}: {e}")))
    };
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
    let isend = if samples.iter().any(|s| s.op == Op::Isend) { Some(one(Op::Isend)?) } else { None };
    let median = |op: Op| op_median(samples, op);
    let rma_call_s = median(Op::Rma);
    let wtime_s = median(Op::Wtime);
    let rma_calls = rma::fit_calls(samples, wtime_s.unwrap_or(0.0));
    let rma = rma::fit_rma(samples, rma::epoch_calls_s(&rma_calls, rma_call_s.unwrap_or(0.0)), fit)?;
    let mut fit = NetworkFit {
        transfer,
        send,
        recv,
        isend,
        wtime_s,
        iprobe_s: median(Op::Iprobe),
        irecv_s: median(Op::Irecv),
        wait_s: median(Op::Wait),
        rma_call_s,
        rma_calls,
        rma,
        host_copy_bytes_per_s: None,
        pairs: None,
        eager_threshold_bytes,
        threshold_note,
    };
    fit.host_copy_bytes_per_s = copy::fit_host_copy(samples, &fit.p2p_model());
    fit.pairs = copy::fit_pairs(samples, &fit.p2p_model());
    Ok(fit)
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

/// What [`fit_validated`] gives.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The fits, on the fast state's samples.
    pub fit: NetworkFit,
    /// Validation on the held-back samples, if any.
    pub validation: Option<Validation>,
    /// Operations still bimodal at some sizes within the fast state (fitted on their fast mode).
    pub bimodal: Vec<Bimodal>,
    /// The machine's slow periods, when its ping-pong times show two states.
    pub slow_state: Option<SlowState>,
}

/// Fits the models on `samples` less a held-back share and validates the
/// ping-pong model on that share. When the ping-pong samples show the
/// machine switching between a fast and a slow state ([`SlowState`]),
/// every operation is fitted, and validated, on the samples taken in the
/// fast state; sizes still bimodal then keep their fast mode
/// ([`modes::fast_mode`]).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] for a holdout fraction outside [0, 0.5];
/// those of [`fit_network`].
pub fn fit_validated(samples: &[Sample], options: &NetworkOptions) -> Result<Fitted, Error> {
    if !(0.0..=0.5).contains(&options.holdout_fraction) {
        return Err(Error::new(ErrorKind::InvalidArgument, format!("holdout fraction: {} is not in [0, 0.5]", options.holdout_fraction)));
    }
    let (fit_samples, held) = hold_out(samples, options.holdout_fraction, options.seed);
    let slow_state = SlowState::locate(&fit_samples);
    let (fit_fast, held_fast) = match &slow_state {
        Some(st) => (st.keep_fast(&fit_samples), st.keep_fast(&held)),
        None => (fit_samples, held.clone()),
    };
    let (fast, bimodal) = modes::fast_mode(&fit_fast);
    let fit = fit_network(&fast, &options.fit)?;
    let validation = validate(&fit, &held, &modes::keep_fast(&held_fast, &bimodal));
    Ok(Fitted { fit, validation, bimodal, slow_state })
}

/// Everything measured and fitted by [`calibrate`].
#[derive(Debug, Clone)]
pub struct NetworkCalibration {
    /// Operations whose samples were bimodal at some sizes (fitted on the fast mode).
    pub bimodal: Vec<Bimodal>,
    /// The machine's slow periods, if it showed two states (fitted on the fast one).
    pub slow_state: Option<SlowState>,
    /// Validation of the fit on the held-back samples, if any.
    pub validation: Option<Validation>,
    /// Samples of the main size grid (the fits use all but the held-back ones).
    pub samples: Vec<Sample>,
    /// Samples of the refinement rounds (the eager threshold uses these).
    pub refine_samples: Vec<Sample>,
    /// The fits, threshold refined.
    pub fit: NetworkFit,
    /// PRTT samples of the LogGP assessment (eager sizes of the grid).
    pub prtt_samples: Vec<Sample>,
    /// LogGP parameters, when assessed.
    pub loggp: Option<LogGps>,
    /// `MPI_Allreduce` samples ([`gamma::fit_reduce_cost`]); empty when skipped.
    pub allreduce_samples: Vec<Sample>,
}

/// Compiles and runs the benchmark in a fresh temporary directory: the
/// main grid once, then up to `refine_rounds` rounds narrowing the eager
/// threshold, the LogGP assessment and the allreduce samples; returns
/// samples and fits.
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
    let started = std::time::Instant::now();
    let mut samples = run_warm(launcher, &exe, &grid, (options.reps, options.seed), options.clean_buffers, dir.path())?;
    let mut passes = 1u32;
    while passes as usize <= options.max_extra_passes && started.elapsed() * (passes + 1) / passes <= options.budget {
        let fast = SlowState::locate(&samples).map_or_else(|| samples.clone(), |st| st.keep_fast(&samples));
        if median_ci(&fast) <= options.stable_rel {
            break;
        }
        let seed = options.seed.wrapping_add(1000 * passes as u64);
        let more = run_warm(launcher, &exe, &grid, (options.reps, seed), options.clean_buffers, dir.path())?;
        // Later passes on the clock after the earlier ones (state labels go by time).
        let offset = samples.iter().map(|s| s.start_s).fold(0.0, f64::max) + 1.0;
        samples.extend(more.into_iter().map(|s| Sample { start_s: s.start_s + offset, ..s }));
        passes += 1;
    }
    let Fitted { mut fit, validation, bimodal, slow_state } = fit_validated(&samples, options)?;
    let mut refine_samples = Vec::new();
    if let Some((k, _)) = protocol_switch(&fit.recv) {
        let (eager, rndv) = (&fit.recv.pieces[k - 1], &fit.recv.pieces[k]);
        let (mut lo, mut hi) = (eager.last_bytes, rndv.first_bytes);
        let mut rounds = 0;
        while rounds < options.refine_rounds && hi - lo > 1 && options.refine_sizes > 0 && options.refine_reps > 0 {
            let sizes = between(lo, hi, options.refine_sizes);
            let seed = options.seed.wrapping_add(1 + rounds as u64);
            let round = run_warm(launcher, &exe, &sizes, (options.refine_reps, seed), options.clean_buffers, dir.path())?;
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
    let (prtt_samples, loggp) = if options.loggp_n >= 2 && options.loggp_reps > 0 {
        let sizes: Vec<u64> = grid.iter().copied().filter(|&s| s < fit.eager_threshold_bytes).collect();
        let largest = sizes.last().copied().unwrap_or(1);
        // The delay must exceed the gap: a few one-way transfers of the largest size.
        let d_s = (4.0 * fit.transfer.eval(largest)).max(5e-6);
        let prtt = run_prtt(launcher, &exe, &sizes, options, d_s, dir.path())?;
        let loggp = loggp::fit_loggp(&prtt, options.loggp_n, d_s, fit.recv.eval(1).max(0.0))?;
        (prtt, Some(loggp))
    } else {
        (Vec::new(), None)
    };
    let allreduce_samples = match options.allreduce_reps {
        0 => Vec::new(),
        reps => {
            let sizes = &gamma::ALLREDUCE_SIZES;
            let mut plan = sizes.to_vec();
            plan.extend(bench::shuffled_plan(sizes, reps, options.seed.wrapping_add(77)));
            launcher.run_allreduce(&exe, &plan, sizes.len(), dir.path())?
        }
    };
    Ok(NetworkCalibration { bimodal, slow_state, validation, samples, refine_samples, fit, prtt_samples, loggp, allreduce_samples })
}

/// Runs `sizes` once unrecorded (warm-up), then `reps` times shuffled
/// by `seed`, with clean buffers or not ([`NetworkOptions::clean_buffers`]).
fn run_warm(
    launcher: &Launcher,
    exe: &Path,
    sizes: &[u64],
    (reps, seed): (usize, u64),
    clean: bool,
    dir: &Path,
) -> Result<Vec<Sample>, Error> {
    let mut plan = sizes.to_vec();
    plan.extend(bench::shuffled_plan(sizes, reps, seed));
    launcher.run(exe, &plan, sizes.len(), clean, dir)
}

/// The PRTT runs of the LogGP assessment over `sizes`, warmed up.
fn run_prtt(launcher: &Launcher, exe: &Path, sizes: &[u64], options: &NetworkOptions, d_s: f64, dir: &Path) -> Result<Vec<Sample>, Error> {
    let mut plan = sizes.to_vec();
    plan.extend(bench::shuffled_plan(sizes, options.loggp_reps, options.seed.wrapping_add(99)));
    launcher.run_prtt(exe, &plan, sizes.len(), options.loggp_n, d_s, dir)
}

/// Up to `count` distinct sizes evenly spaced strictly between `lo` and
/// `hi`, ascending (all of them when fewer exist).
fn between(lo: u64, hi: u64, count: usize) -> Vec<u64> {
    let gap = hi - lo;
    let mut v: Vec<u64> = (1..=count as u64).map(|i| lo + (gap * i).div_ceil(count as u64 + 1)).filter(|&s| s > lo && s < hi).collect();
    v.dedup();
    v
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
    fn held_back_samples_validate_the_fit() {
        let all = vader_like();
        let (fit_part, held) = hold_out(&all, 0.2, 7);
        assert_eq!(fit_part.len() + held.len(), all.len());
        assert!(held.iter().all(|s| s.op == Op::Pingpong));
        let share = 3.0 * held.len() as f64 / all.len() as f64;
        assert!((0.12..0.28).contains(&share), "held back {share}");
        assert_eq!(hold_out(&all, 0.2, 7).1, held);
        let f = fit_network(&fit_part, &FitOptions::default()).unwrap();
        let v = validate(&f, &held, &held).unwrap();
        // The synthetic wobble is at most 4 %.
        assert!(v.samples > 0 && v.sizes > 0 && v.median_rel_error < 0.05, "{v:?}");
        assert!(v.sample_median_rel_error < 0.05 && v.sample_p90_rel_error < 0.1, "{v:?}");
        assert!(validate(&f, &[], &[]).is_none());
        // Medians of 1 % noise are stable; of a 50/50 two-state mixture not.
        let pp = |size_bytes, duration_s| Sample { op: Op::Pingpong, size_bytes, start_s: 0.0, duration_s };
        let calm: Vec<Sample> = (0..30).map(|i| pp(1 + i % 3, 1.0 + 0.01 * ((i * 7) % 10) as f64 / 10.0)).collect();
        assert!(median_ci(&calm) < 0.01, "{}", median_ci(&calm));
        let mixed: Vec<Sample> = (0..30).map(|i| pp(1 + i % 3, if i % 2 == 0 { 1.0 } else { 2.5 })).collect();
        assert!(median_ci(&mixed) > 0.25, "{}", median_ci(&mixed));
        assert_eq!(median_ci(&[]), f64::INFINITY);
        assert_eq!((v.slow_mode_samples, v.all_modes_median_rel_error), (0, v.median_rel_error));
    }

    #[test]
    fn jitsim_latencies_come_from_1_byte_messages() {
        let f = fit_network(&vader_like(), &FitOptions::default()).unwrap();
        let j = JitsimLatencies::new(&f, None);
        assert!((j.shared_memory_s / (3e-7 + 1.0 / 3e9) - 1.0).abs() < 0.05, "{j:?}");
        assert!((j.mpi_stack_s / (1e-7 + 1.5e-7) - 1.0).abs() < 0.1, "{j:?}");
        assert!(j.summary().contains("one-hop network skipped (needs two nodes: give --hostfile)"), "{}", j.summary());
        let j2 = JitsimLatencies::new(&f, Some(&f));
        assert!(j2.one_hop_network_s.is_some_and(|h| h >= 0.0));
    }

    #[test]
    fn hostfiles_list_hosts_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hosts");
        std::fs::write(&p, "# nodes\nnode1 slots=2\n\nnode0 slots=2 # second\nnode1\n").unwrap();
        assert_eq!(hostfile_hosts(&p).unwrap(), vec!["node1".to_string(), "node0".to_string()]);
        std::fs::write(&p, "# none\n").unwrap();
        assert!(hostfile_hosts(&p).unwrap_err().to_string().ends_with("hosts: no host listed"));
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
        assert_eq!(simulator::platform::Platform::load(&path).unwrap(), p);
    }
}

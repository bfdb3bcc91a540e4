//! The collectives' side of the network calibration: which MPI library
//! runs the benchmark (so the replay takes its collective selector), and
//! the cost of a reduction step ([`ReduceCost`], the γ term of Thakur,
//! Rabenseifner & Gropp's α + nβ + nγ, IJHPCA 2005), fitted as what the
//! measured `MPI_Allreduce` takes beyond the replay's prediction of it
//! with γ = 0 on the just-fitted network model.

use std::convert::Infallible;

use simulator::action::Action;
use simulator::collectives::ReduceCost;
use simulator::platform::Platform;
use simulator::replay::{self, ActionStream};

use crate::bench::{Op, Sample};
use crate::error::{Error, ErrorKind};
use crate::segmented;

/// Allreduce sizes measured, bytes (whole doubles), 64 B to 1 MiB.
pub const ALLREDUCE_SIZES: [u64; 8] = [64, 512, 2048, 8192, 16384, 65536, 262144, 1 << 20];

/// Allreduces per predicted loop (the benchmark times back-to-back calls).
const LOOP: usize = 8;

/// The collective selector (a name `--coll-selector` takes) of the MPI
/// library whose `mpirun --version` first line is `version`: Open MPI →
/// `ompi`; MPICH, its Hydra launcher, and MPICH derivatives (Intel MPI,
/// MVAPICH) → `mpich`; `None` when unknown.
pub fn selector_of(version: &str) -> Option<&'static str> {
    let v = version.to_ascii_lowercase();
    if v.contains("open mpi") || v.contains("openrte") {
        Some("ompi")
    } else if ["mpich", "hydra", "intel(r) mpi", "mvapich"].iter().any(|k| v.contains(k)) {
        Some("mpich")
    } else {
        None
    }
}

/// One measured allreduce size against the replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllreducePoint {
    /// Payload, bytes.
    pub size_bytes: u64,
    /// Median measured time of one allreduce, seconds.
    pub measured_s: f64,
    /// The replay's time with γ = 0, seconds.
    pub predicted_s: f64,
    /// Reduction steps on the replay's critical path (the intercept's factor).
    pub steps: f64,
    /// Bytes reduced on the critical path (γ's factor).
    pub bytes: f64,
}

/// The fitted reduction cost.
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceFit {
    /// The cost written to the platform (zero when nothing was measured).
    pub cost: ReduceCost,
    /// Per-size medians and the replay's figures, ascending size.
    pub points: Vec<AllreducePoint>,
    /// RMS relative error of the replay with `cost` over the sizes.
    pub rms_rel_residual: f64,
    /// RMS relative error of the replay with γ = 0.
    pub rms_rel_residual_zero: f64,
    /// How it was fitted, for humans.
    pub note: String,
}

impl ReduceFit {
    /// Per size: measured, and replayed without and with the cost, in
    /// microseconds (one line).
    pub fn table(&self) -> String {
        let c = self.cost;
        let cells: Vec<String> = self
            .points
            .iter()
            .map(|p| {
                let with = p.predicted_s + p.steps * c.intercept_s + p.bytes * c.s_per_byte;
                format!("{} B {:.2}/{:.2}/{:.2}", p.size_bytes, p.measured_s * 1e6, p.predicted_s * 1e6, with * 1e6)
            })
            .collect();
        format!("allreduce us measured/replayed γ=0/with γ: {}", cells.join(", "))
    }

    /// One line in the style of the other fits' summaries.
    pub fn summary(&self) -> String {
        if self.points.is_empty() {
            return format!("reduce cost: 0 ({})", self.note);
        }
        let (lo, hi) = (self.points[0].size_bytes, self.points[self.points.len() - 1].size_bytes);
        let per_gb = if self.cost.s_per_byte > 0.0 { format!("{:.2} GB/s", 1e-9 / self.cost.s_per_byte) } else { "inf".into() };
        format!(
            "reduce cost (allreduce {lo}..{hi} B, {} sizes): intercept {:.3} us + {:.3e} s/B ({per_gb}) per step of >= {} B; allreduce rms err {:.1}% (γ = 0: {:.1}%); {}",
            self.points.len(),
            self.cost.intercept_s * 1e6,
            self.cost.s_per_byte,
            self.cost.min_bytes,
            self.rms_rel_residual * 100.0,
            self.rms_rel_residual_zero * 100.0,
            self.note
        )
    }
}

/// Time of one allreduce of `bytes` on 2 ranks of `platform` (rank 0 and 1
/// placed by its mapping), from a replayed loop of [`LOOP`].
fn predict(platform: &Platform, bytes: u64) -> Result<f64, Error> {
    let streams: Vec<ActionStream<'static, Infallible>> = (0..2)
        .map(|_| Box::new(std::iter::repeat_n(Ok(Action::Allreduce { bytes, comm: 0 }), LOOP)) as ActionStream<'static, Infallible>)
        .collect();
    let r = replay::replay(platform, streams).map_err(|e| Error::new(ErrorKind::Fit, format!("allreduce replay: {e}")))?;
    Ok(r.makespan_s / LOOP as f64)
}

/// Fits [`ReduceCost`] to the `allreduce` samples among `samples`: with
/// m(s) the median measured time at size s, p(s) the replay's time with
/// γ = 0 on `platform` (its selector; its reduction cost is ignored), and k(s), n(s) the reduction steps and bytes the replay puts
/// on the critical path, least squares on `m − p ≈ k·intercept + n·γ`
/// relative to m (every size weighs alike) over the sizes with m > p,
/// both terms clamped at 0 (the other refitted alone), only steps of at
/// least the intra-node eager threshold charged ([`ReduceCost::min_bytes`]).
/// No samples: a zero cost, with a note.
///
/// # Errors
/// [`ErrorKind::Fit`] when the replay rejects the platform.
pub fn fit_reduce_cost(samples: &[Sample], platform: &Platform) -> Result<ReduceFit, Error> {
    let pts: Vec<(u64, f64)> =
        samples.iter().filter(|s| s.op == Op::Allreduce && s.size_bytes > 0).map(|s| (s.size_bytes, s.duration_s)).collect();
    let zero = ReduceCost::default();
    if pts.is_empty() {
        let note =
            "no allreduce samples (--allreduce-reps 0, or a CSV from before they were measured): the replay times no reduction".into();
        return Ok(ReduceFit { cost: zero, points: Vec::new(), rms_rel_residual: 0.0, rms_rel_residual_zero: 0.0, note });
    }
    let with = |cost: ReduceCost| {
        let mut p = platform.clone();
        p.collectives.reduce = cost;
        p
    };
    // Steps below the eager threshold are not charged (see ReduceCost).
    let min_bytes = platform.network.intra.eager_threshold_bytes;
    let (x0, xi, xg) = (
        with(zero),
        with(ReduceCost { intercept_s: 1e-6, s_per_byte: 0.0, min_bytes }),
        with(ReduceCost { intercept_s: 0.0, s_per_byte: 1e-9, min_bytes }),
    );
    let mut points = Vec::new();
    for (size_bytes, measured_s) in segmented::median_by_size(&pts) {
        let predicted_s = predict(&x0, size_bytes)?;
        let steps = (predict(&xi, size_bytes)? - predicted_s) / 1e-6;
        let bytes = (predict(&xg, size_bytes)? - predicted_s) / 1e-9;
        points.push(AllreducePoint { size_bytes, measured_s, predicted_s, steps, bytes });
    }
    // A size the replay already over-predicts with γ = 0 tells nothing of
    // the reduction (its exchange is what the model gets wrong: here 512 B
    // and 2 KiB, eager, 0.56 and 0.67 µs replayed against 0.47 and 0.63
    // measured), and as a relative residual it weighs as much as a large
    // size: with them the slope fell to 0.094 ns/B, where every size from
    // 8 KiB up needs 0.1-0.2.
    let visible: Vec<AllreducePoint> = points.iter().copied().filter(|p| p.measured_s > p.predicted_s).collect();
    let (mut cost, how) = least_squares(&visible);
    cost.min_bytes = if cost.is_zero() { 0 } else { min_bytes };
    let how = match points.len() - visible.len() {
        0 => how.to_string(),
        n => format!("{how}, over the {} sizes the replay under-predicts with γ = 0 ({n} left out)", visible.len()),
    };
    let rms = |c: ReduceCost| {
        let sq: f64 =
            points.iter().map(|p| ((p.predicted_s + p.steps * c.intercept_s + p.bytes * c.s_per_byte) / p.measured_s - 1.0).powi(2)).sum();
        (sq / points.len() as f64).sqrt()
    };
    let note = format!("selector {}, {how}", platform.collectives.algs.selector.name());
    Ok(ReduceFit { cost, rms_rel_residual: rms(cost), rms_rel_residual_zero: rms(zero), points, note })
}

/// Non-negative least squares of the relative residuals on (intercept, γ).
fn least_squares(points: &[AllreducePoint]) -> (ReduceCost, &'static str) {
    // Rows scaled by 1 / measured: relative errors.
    let rows: Vec<(f64, f64, f64)> =
        points.iter().map(|p| (p.steps / p.measured_s, p.bytes / p.measured_s, (p.measured_s - p.predicted_s) / p.measured_s)).collect();
    let sse = |c: ReduceCost| rows.iter().map(|&(a, b, y)| (y - a * c.intercept_s - b * c.s_per_byte).powi(2)).sum::<f64>();
    let (saa, sab, sbb) = rows.iter().fold((0.0, 0.0, 0.0), |(x, y, z), &(a, b, _)| (x + a * a, y + a * b, z + b * b));
    let (say, sby) = rows.iter().fold((0.0, 0.0), |(x, y), &(a, b, r)| (x + a * r, y + b * r));
    let mut candidates = vec![(ReduceCost::default(), "no residual to explain: zero")];
    let det = saa * sbb - sab * sab;
    if det.abs() > 1e-12 * saa * sbb {
        let c = ReduceCost { intercept_s: (say * sbb - sby * sab) / det, s_per_byte: (sby * saa - say * sab) / det, min_bytes: 0 };
        if c.intercept_s >= 0.0 && c.s_per_byte >= 0.0 {
            return (c, "least squares on relative residuals");
        }
    }
    if saa > 0.0 && say > 0.0 {
        candidates.push((ReduceCost { intercept_s: say / saa, s_per_byte: 0.0, min_bytes: 0 }, "least squares, γ clamped at 0"));
    }
    if sbb > 0.0 && sby > 0.0 {
        candidates.push((ReduceCost { intercept_s: 0.0, s_per_byte: sby / sbb, min_bytes: 0 }, "least squares, intercept clamped at 0"));
    }
    candidates.into_iter().min_by(|a, b| sse(a.0).total_cmp(&sse(b.0))).expect("zero is a candidate")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::network::host_platform;
    use simulator::collectives::CollAlgs;
    use simulator::network::{P2pModel, Piecewise, Segment};

    /// Three `MPI_Allreduce` samples per size of [`ALLREDUCE_SIZES`], at
    /// 0.99, 1 and 1.01 times `time(size)` seconds.
    pub(crate) fn allreduce_samples(time: impl Fn(u64) -> f64) -> Vec<Sample> {
        ALLREDUCE_SIZES
            .iter()
            .flat_map(|&s| {
                let t = time(s);
                (0..3).map(move |k| Sample {
                    op: Op::Allreduce,
                    size_bytes: s,
                    start_s: k as f64,
                    duration_s: t * (1.0 + 0.01 * (k as f64 - 1.0)),
                })
            })
            .collect()
    }

    /// One host of 2 cores with a simple intra-node model (0.5 µs + b / 5 GB/s).
    pub(crate) fn platform() -> Platform {
        let pw = |l: f64, bw: f64| Piecewise { segments: vec![Segment { max_bytes: None, intercept_s: l, bandwidth_bytes_per_s: bw }] };
        let m = P2pModel {
            eager_threshold_bytes: 4096,
            transfer: pw(5e-7, 5e9),
            send_overhead: pw(1e-7, f64::INFINITY),
            recv_overhead: pw(1e-7, 2e10),
            rma: None,
        };
        host_platform("node0", 2, m)
    }

    #[test]
    fn libraries_map_to_selectors() {
        assert_eq!(selector_of("mpirun (Open MPI) 4.1.4"), Some("ompi"));
        assert_eq!(selector_of("HYDRA build details: Version: 4.0.2"), Some("mpich"));
        assert_eq!(selector_of("Intel(R) MPI Library for Linux* OS, Version 2021.6"), Some("mpich"));
        assert_eq!(selector_of("srun 23.02"), None);
    }

    /// Samples made by the replay itself with a known cost give it back.
    #[test]
    fn a_known_cost_is_recovered_for_each_selector() {
        let truth = ReduceCost { intercept_s: 3e-7, s_per_byte: 1.5e-10, min_bytes: 4096 };
        for sel in ["ompi", "mpich"] {
            let mut x = platform();
            x.collectives.algs = CollAlgs::preset(sel).unwrap();
            let mut paid = x.clone();
            paid.collectives.reduce = truth;
            let samples = allreduce_samples(|s| predict(&paid, s).unwrap());
            let f = fit_reduce_cost(&samples, &x).unwrap();
            assert!((f.cost.intercept_s / truth.intercept_s - 1.0).abs() < 1e-6, "{sel}: {}", f.summary());
            assert!((f.cost.s_per_byte / truth.s_per_byte - 1.0).abs() < 1e-6, "{sel}: {}", f.summary());
            assert!(f.rms_rel_residual < 1e-9 && f.rms_rel_residual_zero > 0.01, "{}", f.summary());
        }
    }

    #[test]
    fn faster_than_the_model_clamps_at_zero_and_no_samples_give_zero() {
        let mut x = platform();
        x.collectives.algs = CollAlgs::preset("ompi").unwrap();
        let samples: Vec<Sample> = ALLREDUCE_SIZES
            .iter()
            .map(|&s| Sample { op: Op::Allreduce, size_bytes: s, start_s: 0.0, duration_s: 0.5 * predict(&x, s).unwrap() })
            .collect();
        let f = fit_reduce_cost(&samples, &x).unwrap();
        assert_eq!(f.cost, ReduceCost::default(), "{}", f.summary());
        let none = fit_reduce_cost(&[], &x).unwrap();
        assert_eq!(none.cost, ReduceCost::default());
        assert!(none.summary().contains("no allreduce samples"), "{}", none.summary());
    }
}

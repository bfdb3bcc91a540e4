//! MPICH's shared-memory collectives ([`ShmCost`],
//! `simulator::collectives::shm`): their costs fitted on the
//! `MPI_Allreduce` samples, which under MPICH (after the benchmark's
//! warm-up calls, past `MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD`) are
//! release-gather all-reduces of two ranks on one node.
//!
//! In a loop of them the replay's time per call is linear in the three
//! costs (per call: `call_s` + 2 × chunks × `flag_s` + 3 × bytes ×
//! `s_per_byte` on two ranks, chunks of at most 8 KiB); its
//! coefficients are read off replays with unit costs, and the costs are
//! the non-negative least squares of the relative residuals (every size
//! weighs alike).

use std::convert::Infallible;

use simulator::action::Action;
use simulator::collectives::{ShmCost, ShmCounter};
use simulator::platform::Platform;
use simulator::replay::{ActionStream, Replay};

use crate::bench::{Op, Sample};
use crate::error::{Error, ErrorKind};
use crate::segmented;

/// Allreduces per predicted loop (the benchmark times back-to-back calls).
const LOOP: usize = 8;

/// One measured size against the fitted model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShmPoint {
    /// Payload, bytes.
    pub size_bytes: u64,
    /// Median measured time of one allreduce, seconds.
    pub measured_s: f64,
    /// The replay's time with the fitted costs, seconds.
    pub predicted_s: f64,
}

/// The fitted shared-memory costs.
#[derive(Debug, Clone, PartialEq)]
pub struct ShmFit {
    /// The costs written to the platform.
    pub cost: ShmCost,
    /// Per-size medians and the replay's time with `cost`, ascending size.
    pub points: Vec<ShmPoint>,
    /// RMS relative error of the replay with `cost` over the sizes.
    pub rms_rel_residual: f64,
}

impl ShmFit {
    /// One line in the style of the other fits' summaries, with the
    /// per-size figures in microseconds.
    pub fn summary(&self) -> String {
        let c = self.cost;
        let cells: Vec<String> =
            self.points.iter().map(|p| format!("{} B {:.2}/{:.2}", p.size_bytes, p.measured_s * 1e6, p.predicted_s * 1e6)).collect();
        format!(
            "MPICH shared-memory collectives (allreduce {} sizes): call {:.3} us, flag {:.3} us, {:.3e} s/B; rms err {:.1}%\nallreduce us measured/replayed: {}",
            self.points.len(),
            c.call_s * 1e6,
            c.flag_s * 1e6,
            c.s_per_byte,
            self.rms_rel_residual * 100.0,
            cells.join(", ")
        )
    }
}

/// Time of one release-gather allreduce of `bytes` on 2 ranks of
/// `platform` with `cost`, from a replayed loop of [`LOOP`] past MPICH's
/// threshold.
fn predict(platform: &Platform, cost: ShmCost, bytes: u64) -> Result<f64, Error> {
    let mut p = platform.clone();
    p.collectives.shm = Some(cost);
    let streams: Vec<ActionStream<'static, Infallible>> = (0..2)
        .map(|_| Box::new(std::iter::repeat_n(Ok(Action::Allreduce { bytes, comm: 0 }), LOOP)) as ActionStream<'static, Infallible>)
        .collect();
    let r = Replay::new(&p)
        .shm_counter(ShmCounter::past_threshold())
        .run(streams)
        .map_err(|e| Error::new(ErrorKind::Fit, format!("allreduce replay: {e}")))?;
    Ok(r.makespan_s / LOOP as f64)
}

/// Fits [`ShmCost`] to the `allreduce` samples among `samples` on
/// `platform` (its `mpich` selector and placement of two ranks on one
/// host); `None` without samples.
///
/// # Errors
/// [`ErrorKind::Fit`] when the replay rejects the platform.
pub fn fit_shm_cost(samples: &[Sample], platform: &Platform) -> Result<Option<ShmFit>, Error> {
    let pts: Vec<(u64, f64)> =
        samples.iter().filter(|s| s.op == Op::Allreduce && s.size_bytes > 0).map(|s| (s.size_bytes, s.duration_s)).collect();
    if pts.is_empty() {
        return Ok(None);
    }
    let units = [
        ShmCost { call_s: 1e-6, flag_s: 0.0, s_per_byte: 0.0 },
        ShmCost { call_s: 0.0, flag_s: 1e-6, s_per_byte: 0.0 },
        ShmCost { call_s: 0.0, flag_s: 0.0, s_per_byte: 1e-9 },
    ];
    let mut rows = Vec::new();
    for (size, measured) in segmented::median_by_size(&pts) {
        let mut a = [0.0; 3];
        for (k, u) in units.iter().enumerate() {
            a[k] = predict(platform, *u, size)? / [1e-6, 1e-6, 1e-9][k];
        }
        rows.push((size, a, measured));
    }
    let x = nnls3(&rows.iter().map(|&(_, a, m)| (a.map(|v| v / m), 1.0)).collect::<Vec<_>>());
    let cost = ShmCost { call_s: x[0], flag_s: x[1], s_per_byte: x[2] };
    let mut points = Vec::new();
    for &(size_bytes, _, measured_s) in &rows {
        points.push(ShmPoint { size_bytes, measured_s, predicted_s: predict(platform, cost, size_bytes)? });
    }
    let sq: f64 = points.iter().map(|p| (p.predicted_s / p.measured_s - 1.0).powi(2)).sum();
    Ok(Some(ShmFit { cost, rms_rel_residual: (sq / points.len() as f64).sqrt(), points }))
}

/// Non-negative least squares of `a · x ≈ y` over rows `(a, y)` with
/// three unknowns: the best of the unconstrained solutions on every
/// subset of them that is non-negative (0 for the others).
fn nnls3(rows: &[([f64; 3], f64)]) -> [f64; 3] {
    let sse = |x: &[f64; 3]| rows.iter().map(|(a, y)| (y - a[0] * x[0] - a[1] * x[1] - a[2] * x[2]).powi(2)).sum::<f64>();
    let mut best = ([0.0; 3], sse(&[0.0; 3]));
    for mask in 1u32..8 {
        let idx: Vec<usize> = (0..3).filter(|i| mask & (1 << i) != 0).collect();
        let m = idx.len();
        // Normal equations on the chosen columns, solved by Gaussian elimination.
        let mut ab = vec![vec![0.0; m + 1]; m];
        for (a, y) in rows {
            for (i, &ci) in idx.iter().enumerate() {
                for (j, &cj) in idx.iter().enumerate() {
                    ab[i][j] += a[ci] * a[cj];
                }
                ab[i][m] += a[ci] * y;
            }
        }
        let Some(sol) = gauss(ab) else { continue };
        if sol.iter().any(|&v| !(v >= 0.0 && v.is_finite())) {
            continue;
        }
        let mut x = [0.0; 3];
        for (k, &i) in idx.iter().enumerate() {
            x[i] = sol[k];
        }
        let e = sse(&x);
        if e < best.1 {
            best = (x, e);
        }
    }
    best.0
}

/// Solves the augmented system `ab` (m rows of m + 1); `None` if singular.
fn gauss(mut ab: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let m = ab.len();
    for i in 0..m {
        let p = (i..m).max_by(|&a, &b| ab[a][i].abs().total_cmp(&ab[b][i].abs()))?;
        ab.swap(i, p);
        let scale = ab.iter().map(|r| r[i].abs()).fold(0.0, f64::max);
        if ab[i][i].abs() <= 1e-12 * scale {
            return None;
        }
        let pivot = ab[i].clone();
        for (_, row) in ab.iter_mut().enumerate().filter(|(r, _)| *r != i) {
            let f = row[i] / pivot[i];
            for (x, p) in row[i..].iter_mut().zip(&pivot[i..]) {
                *x -= f * p;
            }
        }
    }
    Some((0..m).map(|i| ab[i][m] / ab[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::gamma::tests::{allreduce_samples, platform};
    use crate::network::gamma::ALLREDUCE_SIZES;

    /// Samples made by the replay itself with known costs give them back.
    #[test]
    fn known_costs_are_recovered() {
        let truth = ShmCost { call_s: 1.2e-6, flag_s: 2e-7, s_per_byte: 1.1e-10 };
        let x = platform();
        let samples = allreduce_samples(|s| predict(&x, truth, s).unwrap());
        let f = fit_shm_cost(&samples, &x).unwrap().unwrap();
        for (got, want) in [(f.cost.call_s, truth.call_s), (f.cost.flag_s, truth.flag_s), (f.cost.s_per_byte, truth.s_per_byte)] {
            assert!((got / want - 1.0).abs() < 1e-6, "{}", f.summary());
        }
        assert!(f.rms_rel_residual < 1e-9, "{}", f.summary());
        assert!(fit_shm_cost(&[], &x).unwrap().is_none());
    }

    /// Times that fall by 0.4 µs per 8 KiB chunk (a negative flag time)
    /// give a flag time clamped at 0 and the other two refitted.
    #[test]
    fn a_negative_term_is_clamped_at_zero() {
        let x = platform();
        let samples: Vec<Sample> = ALLREDUCE_SIZES
            .iter()
            .map(|&s| {
                let chunks = s.div_ceil(8192) as f64;
                Sample { op: Op::Allreduce, size_bytes: s, start_s: 0.0, duration_s: 2e-6 + 3.0 * s as f64 * 1e-10 - chunks * 4e-7 }
            })
            .collect();
        let f = fit_shm_cost(&samples, &x).unwrap().unwrap();
        assert_eq!(f.cost.flag_s, 0.0, "{}", f.summary());
        assert!(f.cost.call_s > 0.0 && f.cost.s_per_byte > 0.0, "{}", f.summary());
    }
}

//! One-sided data movement (`[network.*.rma]`, the simulator's
//! [`RmaCosts`]) from the `rma_put`, `rma_get` and `rma_acc` samples:
//! each a passive-target epoch (`MPI_Win_lock`, one operation,
//! `MPI_Win_unlock`) against size, fitted as the point-to-point operations
//! are ([`segmented::fit`]), less the epoch's calls (lock and unlock as
//! timed alone, `[smpi.rma_calls]`, and the movement's own `rma_call_s`,
//! which the replay charges apart). Between the last measured size of one
//! piece and the first of the next, the cost is the line joining the two
//! pieces' values there, not the lower piece extended: one-sided
//! components switch protocol between grid sizes (Open MPI's `osc/rdma`
//! over shared memory does between 4 and 8 KiB), and the lower piece
//! extended can miss a size just below the next grid size by the whole
//! step.

use simulator::network::rma::RmaCosts;
use simulator::network::{Piecewise, Segment};
use simulator::platform::RmaCalls;

use super::{op_median, points};
use crate::bench::{Op, Sample};
use crate::error::Error;
use crate::segmented::{self, FitOptions, SegmentedFit};

/// The fitted epochs of each one-sided operation.
#[derive(Debug, Clone, PartialEq)]
pub struct RmaFit {
    /// Lock, `MPI_Put`, unlock: seconds against bytes.
    pub put: SegmentedFit,
    /// Lock, `MPI_Get`, unlock: seconds against bytes.
    pub get: SegmentedFit,
    /// Lock, `MPI_Accumulate`, unlock: seconds against bytes.
    pub accumulate: SegmentedFit,
    /// An epoch's calls besides its movement's time (lock, unlock and the
    /// movement's call), seconds.
    pub epoch_calls_s: f64,
}

/// Fits the epochs of `samples`, or `None` when they have no `rma_put`
/// samples (an MPI without a one-sided component for the network, or a
/// CSV from before they were measured) or too few sizes to fit (a short
/// size grid: accumulates of 8 bytes or less all move one double), said
/// in one warning; the platform then costs one-sided movement by the
/// point-to-point model. `epoch_calls_s`: the cost of an epoch's calls
/// (lock, unlock and the movement's call), seconds.
///
/// # Errors
/// [`crate::error::ErrorKind::Fit`] naming the operation with a bad
/// duration.
pub fn fit_rma(samples: &[Sample], epoch_calls_s: f64, options: &FitOptions) -> Result<Option<RmaFit>, Error> {
    if !samples.iter().any(|s| s.op == Op::RmaPut) {
        return Ok(None);
    }
    let ops = [Op::RmaPut, Op::RmaGet, Op::RmaAccumulate];
    if let Some(op) = ops.into_iter().find(|&op| distinct_sizes(samples, op) < options.min_points_per_segment.max(3)) {
        eprintln!(
            "calibrate network: warning: {op}: {} distinct sizes, too few to fit one-sided costs; the platform costs one-sided movement by the point-to-point model",
            distinct_sizes(samples, op)
        );
        return Ok(None);
    }
    let one = |op: Op| segmented::fit(&points(samples, op), options).map_err(|e| Error::new(e.kind(), format!("{op}: {e}")));
    Ok(Some(RmaFit { put: one(Op::RmaPut)?, get: one(Op::RmaGet)?, accumulate: one(Op::RmaAccumulate)?, epoch_calls_s }))
}

/// The platform's `[smpi.rma_calls]` from the samples of the one-sided
/// calls timed alone (`rma_lock`, `rma_unlock`, `rma_post`,
/// `rma_complete`, `rma_create`, `rma_free`): each one's median less
/// `wtime_s` (each duration holds one `MPI_Wtime` call), at least 0;
/// `None` for a call without samples.
pub fn fit_calls(samples: &[Sample], wtime_s: f64) -> RmaCalls {
    let alone = |op: Op| op_median(samples, op).map(|m| (m - wtime_s).max(0.0));
    RmaCalls {
        lock_s: alone(Op::RmaLock),
        unlock_s: alone(Op::RmaUnlock),
        post_s: alone(Op::RmaPost),
        complete_s: alone(Op::RmaComplete),
        create_s: alone(Op::RmaCreate),
        free_s: alone(Op::RmaFree),
    }
}

/// An epoch's calls besides its movement, seconds: lock and unlock as
/// timed alone (else one call of `call_s` each) and the movement's own call.
pub fn epoch_calls_s(calls: &RmaCalls, call_s: f64) -> f64 {
    calls.lock_s.unwrap_or(call_s) + calls.unlock_s.unwrap_or(call_s) + call_s
}

/// One line of the calibration summary on the calls timed alone (empty without them).
pub fn calls_summary(c: &RmaCalls) -> String {
    if c.is_empty() {
        return String::new();
    }
    let ns = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}", v * 1e9));
    let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}", v * 1e6));
    format!(
        "one-sided calls timed alone: lock {} ns, unlock {} ns, post {} ns, complete {} ns; window create {} us, free {} us\n",
        ns(c.lock_s),
        ns(c.unlock_s),
        ns(c.post_s),
        ns(c.complete_s),
        us(c.create_s),
        us(c.free_s)
    )
}

fn distinct_sizes(samples: &[Sample], op: Op) -> usize {
    let mut sizes: Vec<u64> = samples.iter().filter(|s| s.op == op).map(|s| s.size_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes.len()
}

impl RmaFit {
    /// The simulator's costs: each epoch's fit, bridged between pieces
    /// (see the module doc), less the epoch's calls, each segment's value kept
    /// ≥ 0 at its first size.
    pub fn costs(&self) -> RmaCosts {
        let less_calls = |f: &SegmentedFit| {
            let mut p = bridged(f);
            let mut start = 0u64;
            for s in &mut p.segments {
                let floor = -(start as f64) / s.bandwidth_bytes_per_s;
                s.intercept_s = (s.intercept_s - self.epoch_calls_s).max(floor);
                start = s.max_bytes.unwrap_or(start);
            }
            p
        };
        RmaCosts { put: less_calls(&self.put), get: less_calls(&self.get), accumulate: less_calls(&self.accumulate) }
    }

    /// The fits as rows of the calibration summary.
    pub fn rows(&self) -> [(&'static str, &SegmentedFit); 3] {
        [("rma put epoch", &self.put), ("rma get epoch", &self.get), ("rma acc epoch", &self.accumulate)]
    }
}

/// `f` as a piecewise function whose pieces end one byte after their
/// last measured size, joined to the next piece's first measured size by
/// a line (a constant at the next piece's value if that line falls).
fn bridged(f: &SegmentedFit) -> Piecewise {
    let line = |max_bytes, intercept_s, slope: f64| Segment {
        max_bytes,
        intercept_s,
        bandwidth_bytes_per_s: if slope > 0.0 { 1.0 / slope } else { f64::INFINITY },
    };
    let mut segments = Vec::new();
    for (k, p) in f.pieces.iter().enumerate() {
        let Some(next) = f.pieces.get(k + 1) else {
            segments.push(line(None, p.intercept_s, p.slope_s_per_byte));
            break;
        };
        let (x0, x1) = (p.last_bytes, next.first_bytes);
        if x1 <= x0 + 1 {
            segments.push(line(Some(x1), p.intercept_s, p.slope_s_per_byte));
            continue;
        }
        segments.push(line(Some(x0 + 1), p.intercept_s, p.slope_s_per_byte));
        let (y0, y1) = (p.eval(x0), next.eval(x1));
        let slope = (y1 - y0) / (x1 - x0) as f64;
        segments.push(if slope > 0.0 { line(Some(x1), y0 - slope * x0 as f64, slope) } else { line(Some(x1), y1, 0.0) });
    }
    Piecewise { segments }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Epochs of 3 calls of 0.1 µs plus a put of 1.3 µs + 0.1 ns/B, a get
    /// of 1.4 µs + 0.1 ns/B and an accumulate of 2.8 µs + 1 ns/B, ±1 %.
    fn epochs() -> Vec<Sample> {
        let mut v = Vec::new();
        for (i, size) in [8u64, 64, 512, 4096, 8192, 65536, 262144].into_iter().enumerate() {
            for rep in 0..3 {
                let noise = 1.0 + 0.01 * ((i + rep) % 3) as f64 - 0.01;
                for (op, a, b) in [(Op::RmaPut, 1.3e-6, 1e-10), (Op::RmaGet, 1.4e-6, 1e-10), (Op::RmaAccumulate, 2.8e-6, 1e-9)] {
                    let duration_s = (3e-7 + a + b * size as f64) * noise;
                    v.push(Sample { op, size_bytes: size, start_s: 0.0, duration_s });
                }
            }
        }
        v
    }

    #[test]
    fn the_costs_are_the_epochs_less_their_calls() {
        let f = fit_rma(&epochs(), 3e-7, &FitOptions::default()).unwrap().unwrap();
        let c = f.costs();
        for (p, a, b) in [(&c.put, 1.3e-6, 1e-10), (&c.get, 1.4e-6, 1e-10), (&c.accumulate, 2.8e-6, 1e-9)] {
            for size in [8u64, 4096, 262144] {
                let want = a + b * size as f64;
                assert!((p.eval(size) - want).abs() < 0.03 * (want + 3e-7), "{size} B: {} vs {want}", p.eval(size));
            }
        }
        assert!(c.validate().is_ok());
    }

    #[test]
    fn between_two_pieces_the_cost_joins_their_ends() {
        // Pieces 1 µs flat over 1..=4000 B and 2 µs + 0.1 ns/B from 8000 B:
        // at 6000 B, halfway, 1.5 µs + 0.4 µs.
        let piece = |first_bytes, last_bytes, intercept_s, slope_s_per_byte| segmented::LinearPiece {
            first_bytes,
            last_bytes,
            points: 3,
            intercept_s,
            slope_s_per_byte,
            rms_rel_residual: 0.0,
        };
        let f = SegmentedFit { pieces: vec![piece(1, 4000, 1e-6, 0.0), piece(8000, 1 << 20, 2e-6, 1e-10)], bic: 0.0, points: 6 };
        let p = bridged(&f);
        for (bytes, want) in [(4000, 1e-6), (6000, 1.5e-6 + 0.4e-6), (8000, 2.8e-6), (1 << 20, 2e-6 + 1e-10 * (1 << 20) as f64)] {
            assert!((p.eval(bytes) - want).abs() < 1e-12, "{bytes} B: {} vs {want}", p.eval(bytes));
        }
        assert!(p.validate().is_ok());
    }

    #[test]
    fn no_epoch_samples_give_no_costs_and_a_cost_never_goes_negative() {
        let pp = Sample { op: Op::Pingpong, size_bytes: 8, start_s: 0.0, duration_s: 1e-7 };
        assert_eq!(fit_rma(&[pp], 1e-7, &FitOptions::default()).unwrap(), None);
        // Calls dearer than the epochs: each cost starts at 0, not below.
        let f = fit_rma(&epochs(), 3e-5, &FitOptions::default()).unwrap().unwrap();
        let c = f.costs();
        assert!(c.validate().is_ok());
        assert_eq!(c.put.eval(0), 0.0);
    }

    #[test]
    fn calls_timed_alone_are_their_medians_less_one_wtime() {
        let mut v = epochs();
        for (k, d) in [4e-7, 5e-7, 9e-6].into_iter().enumerate() {
            v.push(Sample { op: Op::RmaLock, size_bytes: 0, start_s: k as f64, duration_s: d });
            v.push(Sample { op: Op::RmaCreate, size_bytes: 0, start_s: k as f64, duration_s: 1e3 * d });
        }
        let c = fit_calls(&v, 1e-7);
        assert!((c.lock_s.unwrap() - 4e-7).abs() < 1e-15, "{c:?}");
        assert!((c.create_s.unwrap() - (5e-4 - 1e-7)).abs() < 1e-12, "{c:?}");
        assert_eq!((c.unlock_s, c.post_s, c.complete_s, c.free_s), (None, None, None, None));
        // A call cheaper than MPI_Wtime costs 0, not less.
        assert_eq!(fit_calls(&v, 1.0).lock_s, Some(0.0));
        // The epochs lose the lock as timed and one call for the missing unlock and the movement.
        assert!((epoch_calls_s(&c, 1e-7) - (4e-7 + 2e-7)).abs() < 1e-15);
        assert!(calls_summary(&c).contains("lock 400.0 ns, unlock - ns") && calls_summary(&RmaCalls::default()).is_empty());
    }

    /// A short size grid (a quick probe) leaves accumulates with two sizes:
    /// no one-sided table, and the calibration goes on.
    #[test]
    fn too_few_sizes_leave_the_table_out() {
        let short: Vec<Sample> = epochs().into_iter().filter(|s| s.op != Op::RmaAccumulate || s.size_bytes <= 64).collect();
        assert_eq!(fit_rma(&short, 1e-7, &FitOptions::default()).unwrap(), None);
        assert!(fit_rma(&epochs(), 1e-7, &FitOptions::default()).unwrap().is_some());
    }
}

//! Segmented (piecewise) linear regression of a duration against message
//! size, with the number and position of breakpoints chosen by BIC.
//!
//! The method follows SMPI's calibration procedure (Heinrich et al.,
//! "Predictive simulation of HPC applications", IEEE Cluster 2017, §6.3 and
//! Fig. 9): durations are fitted piecewise-linearly in the message size,
//! each piece independently (the function may jump at a breakpoint, as it
//! does at a protocol switch). Our choices:
//!
//! - samples are aggregated per distinct size by the **median** to place
//!   the breakpoints, so a few descheduled or interrupted samples do not
//!   move them; each piece's line is then fitted to the per-size **mean**
//!   of the samples at most [`PREEMPTED_FACTOR`] times the size's median
//!   (more is a process that lost its core, or the machine's slow state):
//!   a program's time is a sum of message times, so the model must give
//!   their expected value, occasional slow round trips included (whose
//!   p99 may be half as long again as the median); samples that are each
//!   already a loop's mean take the
//!   per-size median instead ([`FitOptions::lines_by_median`]);
//! - each piece is fitted by weighted least squares with weights `1/y²`,
//!   i.e. it minimises the squared *relative* error, so the microsecond
//!   latency of small messages is not drowned by the millisecond times of
//!   large ones;
//! - breakpoints are chosen by exact dynamic programming over the sorted
//!   sizes (Bellman 1961, "On the approximation of curves by line
//!   segments using dynamic programming"), for every number of pieces from
//!   1 to `max_segments`; the number of pieces minimises the Bayesian
//!   information criterion `n ln(RSS/n) + p ln n` with `p = 3m − 1`
//!   parameters for `m` pieces (2 coefficients each, m − 1 breakpoints).

use simulator::network::{Piecewise, Segment};
use statrs::statistics::{Data, Median, Statistics};

use crate::error::{Error, ErrorKind};

/// Floor on the mean squared relative residual in the BIC, so that exact
/// (noise-free) data does not reward extra pieces with `ln 0`: a relative
/// rms error of 1e-6, far below any timer's noise.
const MIN_MEAN_SQUARED_REL_RESIDUAL: f64 = 1e-12;

/// Options of [`fit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FitOptions {
    /// Largest number of pieces tried; default 4.
    pub max_segments: usize,
    /// Fewest distinct sizes a piece may span; default 3 (at least 3 so
    /// every piece has a residual degree of freedom).
    pub min_points_per_segment: usize,
    /// Fit each piece's line to the per-size medians instead of the means
    /// (default false): for samples that are each already the mean of a
    /// loop (netbench's ping-pong), whose spread from sample to sample is
    /// the benchmark's own order, not what a program pays.
    pub lines_by_median: bool,
}

impl Default for FitOptions {
    fn default() -> FitOptions {
        FitOptions { max_segments: 4, min_points_per_segment: 3, lines_by_median: false }
    }
}

/// One fitted piece: `duration_s = intercept_s + slope_s_per_byte · size`
/// over the measured sizes `first_bytes ..= last_bytes`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearPiece {
    /// Smallest measured size of the piece, bytes.
    pub first_bytes: u64,
    /// Largest measured size of the piece, bytes.
    pub last_bytes: u64,
    /// Number of distinct sizes in the piece.
    pub points: usize,
    /// Constant term, seconds; never negative (a negative fit is refitted
    /// through the origin).
    pub intercept_s: f64,
    /// Seconds per byte; never negative (a negative fit is refitted as a
    /// constant).
    pub slope_s_per_byte: f64,
    /// Root mean square relative residual of the piece's medians.
    pub rms_rel_residual: f64,
}

impl LinearPiece {
    /// Modelled duration at `bytes`, seconds.
    pub fn eval(&self, bytes: u64) -> f64 {
        self.intercept_s + self.slope_s_per_byte * bytes as f64
    }
}

/// Result of [`fit`]: pieces in increasing size order.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentedFit {
    /// The pieces, ordered, covering all measured sizes.
    pub pieces: Vec<LinearPiece>,
    /// BIC of the chosen model (lower is better), dimensionless.
    pub bic: f64,
    /// Number of distinct sizes fitted.
    pub points: usize,
}

impl SegmentedFit {
    /// Sizes where a new piece starts (the first measured size of every
    /// piece but the first), bytes.
    pub fn breakpoints(&self) -> Vec<u64> {
        self.pieces.iter().skip(1).map(|p| p.first_bytes).collect()
    }

    /// Modelled duration at `bytes`, seconds, with the same interval rule
    /// as [`Piecewise::eval`] (a piece applies from its `first_bytes` up).
    pub fn eval(&self, bytes: u64) -> f64 {
        let mut piece = &self.pieces[0];
        for p in &self.pieces[1..] {
            if bytes >= p.first_bytes {
                piece = p;
            }
        }
        piece.eval(bytes)
    }

    /// The simulator's form: each boundary is placed at the first measured
    /// size of the next piece (`max_bytes`, exclusive), the last piece is
    /// unbounded, and a zero slope becomes an infinite bandwidth.
    pub fn to_piecewise(&self) -> Piecewise {
        self.to_piecewise_switching_at(None)
    }

    /// [`to_piecewise`](Self::to_piecewise), but the boundary between two
    /// pieces whose measured sizes straddle `switch_bytes` (the last size of
    /// one below it, the first of the next at or above it) is placed at
    /// `switch_bytes`: a protocol switch located more precisely than the
    /// size grid (the refined eager threshold). Without it, sizes between
    /// the threshold and the next measured size would take the eager
    /// piece's cost although they are sent by rendezvous.
    pub fn to_piecewise_switching_at(&self, switch_bytes: Option<u64>) -> Piecewise {
        let boundary = |next: &LinearPiece, prev: &LinearPiece| match switch_bytes {
            Some(t) if prev.last_bytes < t && t <= next.first_bytes => t,
            _ => next.first_bytes,
        };
        let segments = self
            .pieces
            .iter()
            .enumerate()
            .map(|(i, p)| Segment {
                max_bytes: self.pieces.get(i + 1).map(|next| boundary(next, p)),
                intercept_s: p.intercept_s,
                bandwidth_bytes_per_s: if p.slope_s_per_byte > 0.0 { 1.0 / p.slope_s_per_byte } else { f64::INFINITY },
            })
            .collect();
        Piecewise { segments }
    }
}

/// Samples above this many times their size's median are preemptions,
/// left out of [`mean_by_size`] (dimensionless).
pub const PREEMPTED_FACTOR: f64 = 2.0;

/// The mean duration of every distinct size, sorted by size, over the
/// samples at most [`PREEMPTED_FACTOR`] times that size's median.
///
/// `samples`: `(size_bytes, duration_s)` pairs in any order. Returns
/// `(size_bytes, mean_s)`, one per distinct size.
pub fn mean_by_size(samples: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let medians = median_by_size(samples);
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    sorted
        .chunk_by(|a, b| a.0 == b.0)
        .zip(medians)
        .map(|(group, (size, median))| (size, group.iter().map(|x| x.1).filter(|&y| y <= PREEMPTED_FACTOR * median).mean()))
        .collect()
}

/// The median duration of every distinct size, sorted by size.
///
/// `samples`: `(size_bytes, duration_s)` pairs in any order. Returns
/// `(size_bytes, median_s)`, one per distinct size; for an even count the
/// median is the mean of the two middle values.
pub fn median_by_size(samples: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    sorted
        .chunk_by(|a, b| a.0 == b.0)
        .map(|group| (group[0].0, Data::new(group.iter().map(|x| x.1).collect::<Vec<_>>()).median()))
        .collect()
}

/// Fits a segmented linear model of duration against size.
///
/// `samples`: `(size_bytes, duration_s)` pairs, any order, repetitions
/// allowed (aggregated by [`median_by_size`], lines by [`mean_by_size`]). Cost O(n² · max_segments)
/// for n distinct sizes.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when `max_segments` is 0 or
/// `min_points_per_segment` < 2; [`ErrorKind::Fit`] when a duration is not
/// finite and positive or there are fewer distinct sizes than
/// `min_points_per_segment`.
pub fn fit(samples: &[(u64, f64)], options: &FitOptions) -> Result<SegmentedFit, Error> {
    let FitOptions { max_segments, min_points_per_segment: min_pts, lines_by_median } = *options;
    if max_segments == 0 || min_pts < 2 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("segmented fit: need max_segments >= 1 and min_points_per_segment >= 2, got {max_segments} and {min_pts}"),
        ));
    }
    if let Some(&(size, y)) = samples.iter().find(|s| !(s.1.is_finite() && s.1 > 0.0)) {
        return Err(Error::new(ErrorKind::Fit, format!("segmented fit: duration {y} s at size {size} B is not finite and positive")));
    }
    let pts = median_by_size(samples);
    let n = pts.len();
    if n < min_pts {
        return Err(Error::new(ErrorKind::Fit, format!("segmented fit: {n} distinct sizes, need at least {min_pts}")));
    }

    // rss[i][j]: weighted RSS of one piece over points i..j (exclusive),
    // for j - i >= min_pts; filled incrementally in O(n²).
    let mut rss = vec![vec![f64::INFINITY; n + 1]; n];
    for (i, row) in rss.iter_mut().enumerate() {
        let mut acc = WeightedSums::default();
        for j in i..n {
            acc.add(pts[j].0 as f64, pts[j].1);
            if j + 1 - i >= min_pts {
                row[j + 1] = acc.rss();
            }
        }
    }

    // best[m][j]: least RSS covering points 0..j with m pieces; from[m][j]
    // the start of the last piece.
    let max_m = max_segments.min(n / min_pts);
    let mut best = vec![vec![f64::INFINITY; n + 1]; max_m + 1];
    let mut from = vec![vec![0usize; n + 1]; max_m + 1];
    best[0][0] = 0.0;
    for m in 1..=max_m {
        for j in m * min_pts..=n {
            for i in (m - 1) * min_pts..=j - min_pts {
                let c = best[m - 1][i] + rss[i][j];
                if c < best[m][j] {
                    best[m][j] = c;
                    from[m][j] = i;
                }
            }
        }
    }

    let nf = n as f64;
    // The segmented least-squares fit and its BIC are our own: no kept crate fits segmented regressions.
    let bic = |m: usize| {
        let mean = (best[m][n] / nf).max(MIN_MEAN_SQUARED_REL_RESIDUAL);
        nf * mean.ln() + (3 * m - 1) as f64 * nf.ln()
    };
    let mut m_best = 1;
    for m in 2..=max_m {
        if bic(m) < bic(m_best) {
            m_best = m;
        }
    }

    let mut bounds = vec![n];
    let mut j = n;
    for m in (1..=m_best).rev() {
        j = from[m][j];
        bounds.push(j);
    }
    bounds.reverse();
    // The breakpoints come from the medians (robust), each piece's line from
    // the means (what a sum of messages costs) unless asked for the
    // medians; same sizes, same order.
    let means = if lines_by_median { median_by_size(samples) } else { mean_by_size(samples) };
    // A piece is asked for sizes from just above the previous one's last.
    let pieces = bounds.windows(2).map(|w| fit_piece(&means[w[0]..w[1]], if w[0] == 0 { 0 } else { means[w[0] - 1].0 + 1 })).collect();
    Ok(SegmentedFit { pieces, bic: bic(m_best), points: n })
}

/// Weighted sums for a least-squares line with weights `1/y²`, updated one
/// point at a time with centred (West 1979) updates for stability.
#[derive(Debug, Default, Clone, Copy)]
struct WeightedSums {
    w: f64,
    mean_x: f64,
    mean_y: f64,
    sxx: f64,
    sxy: f64,
    syy: f64,
}

impl WeightedSums {
    fn add(&mut self, x: f64, y: f64) {
        let w = 1.0 / (y * y);
        self.w += w;
        let dx = x - self.mean_x;
        let dy = y - self.mean_y;
        self.mean_x += dx * w / self.w;
        self.mean_y += dy * w / self.w;
        self.sxx += w * dx * (x - self.mean_x);
        self.sxy += w * dx * (y - self.mean_y);
        self.syy += w * dy * (y - self.mean_y);
    }

    fn slope(&self) -> f64 {
        if self.sxx > 0.0 {
            self.sxy / self.sxx
        } else {
            0.0
        }
    }

    /// Weighted residual sum of squares of the unconstrained line.
    fn rss(&self) -> f64 {
        (self.syy - self.slope() * self.sxy).max(0.0)
    }
}

/// The constrained fit of one piece: the WLS line, refitted as a constant
/// if its slope is negative or through the origin if its intercept is.
/// The weighted line through `pts`, for sizes from `from` bytes on. Its
/// intercept may be negative when the line stays non-negative from `from`
/// (a rate-limited link lets a burst through faster than its rate: times
/// grow at the rate, below a line through the origin); else the line goes
/// through the origin.
fn fit_piece(pts: &[(u64, f64)], from: u64) -> LinearPiece {
    let mut acc = WeightedSums::default();
    for &(x, y) in pts {
        acc.add(x as f64, y);
    }
    let mut slope = acc.slope();
    let mut intercept = acc.mean_y - slope * acc.mean_x;
    if slope <= 0.0 {
        slope = 0.0;
        intercept = acc.mean_y;
    } else if intercept + slope * (from as f64) < 0.0 {
        // Through the origin: slope = Σ w x y / Σ w x² with w = 1/y².
        let (sxy, sxx) = pts.iter().fold((0.0, 0.0), |(a, b), &(x, y)| {
            let (x, w) = (x as f64, 1.0 / (y * y));
            (a + w * x * y, b + w * x * x)
        });
        slope = sxy / sxx;
        intercept = 0.0;
    }
    let sq: f64 = pts.iter().map(|&(x, y)| ((intercept + slope * x as f64 - y) / y).powi(2)).sum();
    LinearPiece {
        first_bytes: pts[0].0,
        last_bytes: pts[pts.len() - 1].0,
        points: pts.len(),
        intercept_s: intercept,
        slope_s_per_byte: slope,
        rms_rel_residual: (sq / pts.len() as f64).sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::bench::SplitMix64 as Rng;

    /// `count` log-spaced sizes from 1 to 4 MiB.
    fn sizes(count: usize) -> Vec<u64> {
        let mut v: Vec<u64> = (0..count).map(|i| (2f64.powf(22.0 * i as f64 / (count - 1) as f64)).round() as u64).collect();
        v.dedup();
        v
    }

    /// `reps` samples per size of `truth`, with ±`noise` relative uniform
    /// noise and a fraction `outliers` of samples multiplied by 3–10.
    fn synth(truth: impl Fn(u64) -> f64, reps: usize, noise: f64, outliers: f64, seed: u64) -> Vec<(u64, f64)> {
        let mut rng = Rng(seed);
        let mut out = Vec::new();
        for s in sizes(80) {
            for _ in 0..reps {
                let mut y = truth(s) * (1.0 + noise * (2.0 * rng.next_f64() - 1.0));
                if rng.next_f64() < outliers {
                    y *= 3.0 + 7.0 * rng.next_f64();
                }
                out.push((s, y));
            }
        }
        out
    }

    fn close(got: f64, want: f64, rel: f64) -> bool {
        (got - want).abs() <= rel * want.abs()
    }

    /// Three regimes like shared-memory MPI: small eager, eager with copy
    /// cost, rendezvous.
    fn three_regimes(s: u64) -> f64 {
        let x = s as f64;
        if s < 4096 {
            2e-7 + x / 5e9
        } else if s < 65536 {
            3e-6 + x / 4e9
        } else {
            2e-5 + x / 8e9
        }
    }

    #[test]
    fn recovers_breakpoints_and_coefficients_despite_noise_and_outliers() {
        let data = synth(three_regimes, 15, 0.05, 0.1, 7);
        let f = fit(&data, &FitOptions::default()).unwrap();
        let first_at_least = |b: u64| *sizes(80).iter().find(|&&s| s >= b).unwrap();
        assert_eq!(f.breakpoints(), vec![first_at_least(4096), first_at_least(65536)], "{f:#?}");
        let p = &f.pieces;
        assert!(close(p[0].intercept_s, 2e-7, 0.05) && close(p[0].slope_s_per_byte, 1.0 / 5e9, 0.1), "{:?}", p[0]);
        assert!(close(p[1].intercept_s, 3e-6, 0.1) && close(p[1].slope_s_per_byte, 1.0 / 4e9, 0.1), "{:?}", p[1]);
        assert!(close(p[2].intercept_s, 2e-5, 0.3) && close(p[2].slope_s_per_byte, 1.0 / 8e9, 0.05), "{:?}", p[2]);
        assert!(p.iter().all(|q| q.rms_rel_residual < 0.05));
    }

    #[test]
    fn a_single_line_stays_one_piece() {
        let data = synth(|s| 1e-6 + s as f64 / 1e10, 9, 0.05, 0.05, 3);
        let f = fit(&data, &FitOptions::default()).unwrap();
        assert_eq!(f.pieces.len(), 1, "{f:#?}");
        assert!(close(f.pieces[0].intercept_s, 1e-6, 0.05) && close(f.pieces[0].slope_s_per_byte, 1e-10, 0.05));
        // Exact data: no spurious pieces either.
        let f = fit(&synth(|s| 1e-6 + s as f64 / 1e10, 1, 0.0, 0.0, 1), &FitOptions::default()).unwrap();
        assert_eq!(f.pieces.len(), 1);
    }

    #[test]
    fn max_segments_caps_the_pieces() {
        let data = synth(three_regimes, 5, 0.02, 0.0, 11);
        let f = fit(&data, &FitOptions { max_segments: 2, ..FitOptions::default() }).unwrap();
        assert_eq!(f.pieces.len(), 2);
        assert!(f.pieces.iter().all(|p| p.points >= 3));
    }

    #[test]
    fn negative_slope_and_intercept_are_clamped() {
        // Decreasing: a constant with infinite bandwidth.
        let data: Vec<(u64, f64)> = (1..=10).map(|s| (s * 100, 1e-6 - s as f64 * 1e-9)).collect();
        let f = fit(&data, &FitOptions { max_segments: 1, ..FitOptions::default() }).unwrap();
        let seg = f.to_piecewise().segments[0];
        assert_eq!(seg.bandwidth_bytes_per_s, f64::INFINITY);
        assert!(seg.intercept_s > 9e-7 && seg.intercept_s < 1e-6);
        // Line through a negative intercept: refitted through the origin.
        let data: Vec<(u64, f64)> = (1..=10).map(|s| (s * 1000, s as f64 * 1e-6 - 1e-7)).collect();
        let f = fit(&data, &FitOptions { max_segments: 1, ..FitOptions::default() }).unwrap();
        let seg = f.to_piecewise().segments[0];
        assert_eq!(seg.intercept_s, 0.0);
        assert!(close(seg.bandwidth_bytes_per_s, 1e9, 0.1), "{seg:?}");
        assert!(f.to_piecewise().validate().is_ok());
    }

    #[test]
    fn piecewise_boundaries_are_the_next_pieces_first_size() {
        let data = synth(three_regimes, 3, 0.0, 0.0, 1);
        let f = fit(&data, &FitOptions::default()).unwrap();
        let pw = f.to_piecewise();
        assert_eq!(
            pw.segments.iter().map(|s| s.max_bytes).collect::<Vec<_>>(),
            vec![Some(f.breakpoints()[0]), Some(f.breakpoints()[1]), None]
        );
        assert!(pw.validate().is_ok());
        for s in sizes(80) {
            assert!(close(pw.eval(s), three_regimes(s), 1e-6), "size {s}: {} vs {}", pw.eval(s), three_regimes(s));
            assert!(close(f.eval(s), pw.eval(s), 1e-12));
        }
    }

    #[test]
    fn a_refined_switch_moves_the_boundary_that_straddles_it() {
        let data = synth(three_regimes, 3, 0.0, 0.0, 1);
        let f = fit(&data, &FitOptions::default()).unwrap();
        let b = f.breakpoints();
        // A switch between the last size of piece 0 and the first of piece 1.
        let t = f.pieces[0].last_bytes + 1;
        assert!(t < b[0]);
        let pw = f.to_piecewise_switching_at(Some(t));
        assert_eq!(pw.segments.iter().map(|s| s.max_bytes).collect::<Vec<_>>(), vec![Some(t), Some(b[1]), None]);
        assert!(pw.validate().is_ok());
        // Between the switch and the next measured size: the upper piece's cost.
        assert!(close(pw.eval(t), f.pieces[1].eval(t), 1e-12));
        // A switch inside a piece's measured sizes moves nothing.
        let inside = f.pieces[1].first_bytes + 1;
        assert_eq!(f.to_piecewise_switching_at(Some(inside)), f.to_piecewise());
    }

    #[test]
    fn medians_and_errors() {
        assert_eq!(median_by_size(&[(2, 3.0), (1, 5.0), (2, 1.0), (2, 100.0), (1, 7.0)]), vec![(1, 6.0), (2, 3.0)]);
        // The mean, without the sample 33x the median (a preemption); a slow
        // but not preempted one (2x) counts.
        assert_eq!(mean_by_size(&[(2, 3.0), (1, 5.0), (2, 6.0), (2, 100.0), (2, 3.0), (1, 7.0)]), vec![(1, 6.0), (2, 4.0)]);
        let e = fit(&[(1, 1.0), (2, 1.0)], &FitOptions::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Fit);
        assert!(e.to_string().contains("2 distinct sizes"), "{e}");
        let e = fit(&[(1, 1.0), (2, f64::NAN), (3, 1.0)], &FitOptions::default()).unwrap_err();
        assert!(e.to_string().contains("size 2"), "{e}");
        let e = fit(&[(1, 1.0)], &FitOptions { max_segments: 0, ..FitOptions::default() }).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
}

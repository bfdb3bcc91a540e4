//! Scaling laws fitted to a quantity measured at a few rank counts: a
//! message size or a compute block's mean time as a function of the
//! number of ranks N, or of one side of the 2-D grid `MPI_Dims_create`
//! makes of N (the halo of a block decomposition shrinks with the side,
//! not with N).
//!
//! The models are those of trace extrapolation (Wu & Mueller,
//! "ScalaExtrap", PPoPP 2011, §4: constant for weak scaling, a power law
//! for strong scaling): `y = c`, `y = a·X^−b`, `y = a·X^−b + c`. Our own
//! code: no kept crate fits a power law with an offset.

use super::rules::dims_2d;

/// What a law's variable is, as a function of the rank count N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// N itself.
    Ranks,
    /// The larger side of `MPI_Dims_create(N, 2)`.
    Dim0,
    /// The smaller side of `MPI_Dims_create(N, 2)`.
    Dim1,
}

impl Var {
    /// The variable's value at `n` ranks.
    pub fn at(self, n: u32) -> f64 {
        match self {
            Var::Ranks => n as f64,
            Var::Dim0 => dims_2d(n).0 as f64,
            Var::Dim1 => dims_2d(n).1 as f64,
        }
    }
}

/// A fitted law `y(N) = a·X(N)^−b + c`; `a = 0` is a constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Law {
    /// Coefficient of the power term.
    pub a: f64,
    /// Exponent (≥ 0: the term shrinks as X grows).
    pub b: f64,
    /// Constant term.
    pub c: f64,
    /// The variable.
    pub var: Var,
    /// Root-mean-square residual on the samples, relative to their mean
    /// magnitude (0 for an exact fit).
    pub rel_rms: f64,
}

impl Law {
    /// A constant law.
    pub fn constant(c: f64) -> Law {
        Law { a: 0.0, b: 0.0, c, var: Var::Ranks, rel_rms: 0.0 }
    }

    /// `y` at `n` ranks (never below 0).
    pub fn eval(&self, n: u32) -> f64 {
        let y = if self.a == 0.0 { self.c } else { self.a * self.var.at(n).powf(-self.b) + self.c };
        y.max(0.0)
    }

    fn with_residual(mut self, pts: &[(u32, f64)]) -> Law {
        let scale = pts.iter().map(|p| p.1.abs()).sum::<f64>() / pts.len().max(1) as f64;
        let sse: f64 = pts.iter().map(|&(n, y)| (self.eval(n) - y).powi(2)).sum();
        self.rel_rms = if scale > 0.0 { (sse / pts.len() as f64).sqrt() / scale } else { 0.0 };
        self
    }
}

/// Relative spread below which a quantity counts as constant.
const FLAT: f64 = 0.02;

/// Fits `pts` (rank count, value), at least one point, by the simplest law
/// that describes them: a constant when the values agree within 2 % or do
/// not fall with N, else `a·X^−b` ([`power_law_of`]: X is N or a side of
/// the 2-D grid, b in (0, 1]), else, when that leaves more than 5 %
/// relative residual and there are four or more rank counts,
/// `a·X^−b + c` (linear least squares in a and c for each b on a 0.01 grid
/// over (0, 3]) if it cuts the residual threefold. Per-rank work that grows
/// with N is taken for noise (oversubscribed runs share caches): a block's
/// time never grows in the extrapolation.
pub fn fit_time(pts: &[(u32, f64)]) -> Law {
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len().max(1) as f64;
    let spread = pts.iter().map(|p| (p.1 - mean).abs()).fold(0.0, f64::max);
    if pts.len() < 2 || spread <= FLAT * mean.abs() || distinct(pts) < 2 {
        return Law::constant(mean).with_residual(pts);
    }
    let Some(power) = power_law_of(pts) else {
        return Law::constant(mean).with_residual(pts);
    };
    // The offset term is fitted only with a degree of freedom left (four
    // or more rank counts), and kept when it cuts the residual threefold.
    if power.rel_rms <= 0.05 || distinct(pts) < 4 {
        return power;
    }
    match offset_law(pts, power.var).map(|l| l.with_residual(pts)) {
        Some(o) if o.rel_rms * 3.0 < power.rel_rms && o.a > 0.0 && o.c >= 0.0 => o,
        _ => power,
    }
}

/// The falling power law `a·X^−b` that describes `pts` best, with its
/// residual; `None` when the values do not fall with N.
///
/// - **The variable.** X is N, or a side of the 2-D grid
///   `MPI_Dims_create(N, 2)` makes: work over the rows or the columns of a
///   block decomposition (packing a halo, a boundary loop) shrinks with
///   one side, a step function of N that no power of N follows (between
///   2 and 4 ranks the larger side stays 2). A side is taken when it
///   leaves less than half the residual of N, so noise on a law in N
///   does not pick a side by chance.
/// - **The exponent** is at most 1. Strong scaling divides a fixed amount
///   of work: a rank's share falls as 1/N, and its time falls faster only
///   while its working set drops into a cache level, which happens once,
///   not at every doubling. An exponent above 1 fitted on the smallest
///   counts would carry that one step on to every larger N; at b = 1 the
///   coefficient is refitted (least squares on ln y − ln X^−1).
pub fn power_law_of(pts: &[(u32, f64)]) -> Option<Law> {
    let fit = |var: Var| power_law(pts, var).filter(|l| l.b > 0.0).map(|l| at_most_linear(l, pts).with_residual(pts));
    let by_ranks = fit(Var::Ranks)?;
    let by_side = [Var::Dim0, Var::Dim1].into_iter().filter_map(fit).min_by(|a, b| a.rel_rms.total_cmp(&b.rel_rms));
    match by_side {
        Some(side) if side.rel_rms * 2.0 < by_ranks.rel_rms => Some(side),
        _ => Some(by_ranks),
    }
}

/// `law` with its exponent capped at 1 and, when capped, `a` refitted in
/// log space for b = 1 (`pts` all positive, as [`power_law`] requires).
fn at_most_linear(law: Law, pts: &[(u32, f64)]) -> Law {
    if law.b <= 1.0 {
        return law;
    }
    let k = pts.len() as f64;
    let ln_a = pts.iter().map(|&(n, y)| y.ln() + law.var.at(n).ln()).sum::<f64>() / k;
    Law { a: ln_a.exp(), b: 1.0, ..law }
}

/// Fits message sizes `pts` (rank count, bytes): a constant, else an exact
/// `a / X` for X = N or a side of the 2-D grid (a block decomposition's
/// halo), else [`fit_time`]'s law. Returns the law and whether it
/// reproduces every sample exactly (after rounding to whole bytes).
pub fn fit_size(pts: &[(u32, f64)]) -> (Law, bool) {
    let exact = |l: &Law| pts.iter().all(|&(n, y)| l.eval(n).round() == y);
    if pts.iter().all(|p| p.1 == pts[0].1) {
        return (Law::constant(pts[0].1), true);
    }
    for var in [Var::Ranks, Var::Dim0, Var::Dim1] {
        let a = pts[0].1 * var.at(pts[0].0);
        let law = Law { a, b: 1.0, c: 0.0, var, rel_rms: 0.0 };
        if exact(&law) {
            return (law, true);
        }
    }
    let law = fit_time(pts);
    (law, exact(&law))
}

fn distinct(pts: &[(u32, f64)]) -> usize {
    let mut n: Vec<u32> = pts.iter().map(|p| p.0).collect();
    n.sort_unstable();
    n.dedup();
    n.len()
}

/// `y = a·X^−b` by least squares on (ln X, ln y); `None` when a value is
/// not positive.
fn power_law(pts: &[(u32, f64)], var: Var) -> Option<Law> {
    if pts.iter().any(|p| p.1 <= 0.0) {
        return None;
    }
    let xs: Vec<f64> = pts.iter().map(|p| var.at(p.0).ln()).collect();
    let ys: Vec<f64> = pts.iter().map(|p| p.1.ln()).collect();
    let (slope, intercept) = line(&xs, &ys)?;
    Some(Law { a: intercept.exp(), b: -slope, c: 0.0, var, rel_rms: 0.0 })
}

/// `y = a·X^−b + c`: for each b of the grid, (a, c) by linear least
/// squares in X^−b; the b with the smallest squared error.
fn offset_law(pts: &[(u32, f64)], var: Var) -> Option<Law> {
    let mut best: Option<(f64, Law)> = None;
    for step in 1..=300 {
        let b = step as f64 * 0.01;
        let xs: Vec<f64> = pts.iter().map(|p| var.at(p.0).powf(-b)).collect();
        let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let Some((a, c)) = line(&xs, &ys) else { continue };
        let law = Law { a, b, c, var, rel_rms: 0.0 };
        let sse: f64 = pts.iter().map(|&(n, y)| (law.eval(n) - y).powi(2)).sum();
        if best.as_ref().is_none_or(|(e, _)| sse < *e) {
            best = Some((sse, law));
        }
    }
    best.map(|(_, l)| l)
}

/// Least-squares line `y = s·x + i`; `None` when all x are equal.
fn line(xs: &[f64], ys: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    if sxx <= f64::EPSILON * n {
        return None;
    }
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let s = sxy / sxx;
    Some((s, my - s * mx))
}

/// A compute law's sample: rank count, mean block (seconds) and that
/// mean's noise (seconds, one standard deviation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noisy {
    /// Rank count.
    pub n: u32,
    /// Mean block, seconds.
    pub y: f64,
    /// Its noise, seconds: the spread of the traced ranks' own means in
    /// the run (rank-to-rank effects of the machine, which move a run's
    /// mean as much), and the standard error of the blocks' mean.
    pub sigma: f64,
}

/// One candidate form of a compute law.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `c`.
    Constant,
    /// `a / X`.
    Inverse,
    /// `a / X + c`.
    InverseOffset,
    /// `a·X^−b`, 0 < b ≤ 1.
    Power,
    /// `a·X^−b + c`, 0 < b ≤ 1.
    PowerOffset,
}

impl Form {
    /// Free parameters, the variable's choice counted when it is a side
    /// of the grid (a discrete choice fitted to the data).
    fn params(self, var: Var) -> f64 {
        let k = match self {
            Form::Constant => 1.0,
            Form::Inverse => 1.0,
            Form::InverseOffset | Form::Power => 2.0,
            Form::PowerOffset => 3.0,
        };
        if self != Form::Constant && var != Var::Ranks {
            k + 1.0
        } else {
            k
        }
    }
}

/// `pts`' χ² under `law`.
fn chi2(pts: &[Noisy], law: &Law) -> f64 {
    pts.iter().map(|p| ((law.eval(p.n) - p.y) / p.sigma).powi(2)).sum()
}

/// Weighted least squares of `y ≈ a·x + c` (`offset`) or `y ≈ a·x`, with
/// weights 1/σ²; `None` when degenerate.
fn wls(pts: &[Noisy], x: impl Fn(u32) -> f64, offset: bool) -> Option<(f64, f64)> {
    let w = |p: &Noisy| 1.0 / (p.sigma * p.sigma);
    let (sw, sx, sy) = pts.iter().fold((0.0, 0.0, 0.0), |(a, b, c), p| (a + w(p), b + w(p) * x(p.n), c + w(p) * p.y));
    let (sxx, sxy) = pts.iter().fold((0.0, 0.0), |(a, b), p| (a + w(p) * x(p.n).powi(2), b + w(p) * x(p.n) * p.y));
    if !offset {
        return (sxx > 0.0).then(|| (sxy / sxx, 0.0));
    }
    let det = sw * sxx - sx * sx;
    if det.abs() <= f64::EPSILON * sw * sxx {
        return None;
    }
    Some(((sw * sxy - sx * sy) / det, (sxx * sy - sx * sxy) / det))
}

/// The best law of `form` on `var` for `pts` (least χ²), among laws that
/// do not grow with N (a > 0, c ≥ 0); `None` when none is.
fn fit_form(pts: &[Noisy], form: Form, var: Var) -> Option<Law> {
    let make = |a: f64, b: f64, c: f64| Law { a, b, c, var, rel_rms: 0.0 };
    let ok = |l: &Law| l.a > 0.0 && l.c >= 0.0 && l.a.is_finite() && l.c.is_finite();
    match form {
        Form::Constant => wls(pts, |_| 1.0, false).map(|(c, _)| Law::constant(c)),
        Form::Inverse | Form::InverseOffset => {
            let (a, c) = wls(pts, |n| 1.0 / var.at(n), form == Form::InverseOffset)?;
            Some(make(a, 1.0, c)).filter(ok)
        }
        Form::Power | Form::PowerOffset => (1..=100)
            .filter_map(|step| {
                let b = step as f64 * 0.01;
                let (a, c) = wls(pts, |n| var.at(n).powf(-b), form == Form::PowerOffset)?;
                Some(make(a, b, c)).filter(ok)
            })
            .min_by(|x, y| chi2(pts, x).total_cmp(&chi2(pts, y))),
    }
}

/// Fits a compute law to `pts` (one per traced rank count, σ > 0) by
/// Akaike's criterion with the points' own noise: among a constant,
/// `a/X`, `a/X + c`, `a·X^−b` and `a·X^−b + c` (X = N or a side of the
/// 2-D grid; 0 < b ≤ 1; none growing with N), the law of least
/// χ² + 2k, k its free parameters, with at least one degree of freedom
/// left (k < the number of rank counts) except for the constant. With the
/// noise known, χ² + 2k is the criterion itself (Burnham & Anderson,
/// "Model Selection and Multimodel Inference", §2.2): differences within
/// the noise do not buy a parameter.
pub fn fit_noisy(pts: &[Noisy]) -> Law {
    let counts = distinct(&pts.iter().map(|p| (p.n, p.y)).collect::<Vec<_>>()) as f64;
    let forms = [Form::Constant, Form::Inverse, Form::InverseOffset, Form::Power, Form::PowerOffset];
    let mut best: Option<(f64, Law)> = None;
    for form in forms {
        for var in [Var::Ranks, Var::Dim0, Var::Dim1] {
            if form == Form::Constant && var != Var::Ranks {
                continue;
            }
            let k = form.params(var);
            if form != Form::Constant && k >= counts {
                continue;
            }
            let Some(law) = fit_form(pts, form, var) else { continue };
            let score = chi2(pts, &law) + 2.0 * k;
            if best.as_ref().is_none_or(|(s, _)| score < *s) {
                best = Some((score, law));
            }
        }
    }
    let law = best.map_or(Law::constant(0.0), |(_, l)| l);
    law.with_residual(&pts.iter().map(|p| (p.n, p.y)).collect::<Vec<_>>())
}

/// Bootstrap replicates behind [`interval`].
const REPLICATES: u64 = 200;

/// The 95 % interval of the law [`fit_noisy`] gives `pts`, at `n` ranks,
/// as factors of its value there (lower ≤ 1 ≤ upper): a parametric
/// bootstrap (each point redrawn about the fitted law with its noise,
/// widened by √(χ²/dof) when the law misses the points by more than
/// their noise), the law chosen again on every replicate, so that the
/// choice's own uncertainty is in the interval. Seeded: the same points
/// give the same interval.
pub fn interval(pts: &[Noisy], n: u32) -> (f64, f64) {
    let law = fit_noisy(pts);
    let at = law.eval(n);
    if at <= 0.0 || pts.is_empty() {
        return (1.0, 1.0);
    }
    let dof = (pts.len() as f64 - 1.0).max(1.0);
    let widen = (chi2(pts, &law) / dof).sqrt().max(1.0);
    let mut values: Vec<f64> = (0..REPLICATES)
        .map(|k| {
            let drawn: Vec<Noisy> = pts
                .iter()
                .enumerate()
                .map(|(i, p)| Noisy { y: (law.eval(p.n) + widen * p.sigma * normal(k, i as u64)).max(0.0), ..*p })
                .collect();
            fit_noisy(&drawn).eval(n) / at
        })
        .collect();
    values.sort_unstable_by(f64::total_cmp);
    let q = |f: f64| values[((values.len() - 1) as f64 * f).round() as usize];
    (q(0.025).min(1.0), q(0.975).max(1.0))
}

/// A standard normal draw for replicate `k`, point `i` (Box–Muller over
/// two SplitMix64 outputs).
fn normal(k: u64, i: u64) -> f64 {
    let mix = crate::rng::mix;
    let u = |z: u64| ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (u1, u2) = (u(mix(k << 32 ^ i << 1)), u(mix(k << 32 ^ i << 1 ^ 1)));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod noisy_tests {
    use super::{fit_noisy, interval, Noisy};

    fn pts(v: &[(u32, f64)], rel: f64) -> Vec<Noisy> {
        v.iter().map(|&(n, y)| Noisy { n, y, sigma: rel * y }).collect()
    }

    #[test]
    fn differences_within_the_noise_buy_no_parameter() {
        // A weak-scaled block whose means fall by 1.5 % with 2 % noise.
        let law = fit_noisy(&pts(&[(2, 52.0e-6), (4, 51.5e-6), (8, 51.2e-6)], 0.02));
        assert_eq!(law.a, 0.0, "{law:?}");
        // Strong scaling well beyond the noise.
        let law = fit_noisy(&pts(&[(2, 0.5), (4, 0.25), (8, 0.125)], 0.02));
        assert!(law.a > 0.0 && (law.b - 1.0).abs() < 1e-9, "{law:?}");
        assert!((law.eval(1024) - 1.0 / 1024.0).abs() < 1e-3 / 1024.0, "{law:?}");
    }

    #[test]
    fn the_interval_widens_away_from_the_data_and_holds_the_truth() {
        let p = pts(&[(2, 0.5 * 1.01), (4, 0.25 * 0.99), (8, 0.125 * 1.005)], 0.01);
        let (lo8, hi8) = interval(&p, 8);
        let (lo1k, hi1k) = interval(&p, 1024);
        assert!(hi1k - lo1k > hi8 - lo8, "{lo8} {hi8} / {lo1k} {hi1k}");
        let law = fit_noisy(&p);
        let truth = 1.0 / 1024.0 / law.eval(1024);
        assert!((lo1k..=hi1k).contains(&truth), "{lo1k} {truth} {hi1k}");
        // The same points give the same interval.
        assert_eq!(interval(&p, 1024), (lo1k, hi1k));
    }
}

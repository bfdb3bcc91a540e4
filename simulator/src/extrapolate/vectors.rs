//! The byte-count vectors of v- and w-collectives (`MPI_Gatherv`,
//! `MPI_Alltoallv`, …) as functions of the rank and the communicator's
//! size, so that a call at N ranks carries vectors of N entries.
//!
//! A vector's length is 0, 1, the communicator's size n, or n at the
//! root and 0 elsewhere; its entries follow one of:
//!
//! - one size for every entry, a law of n (a constant, or an exact
//!   `a / X`: a fixed total shared out, [`super::fit::fit_size`]);
//! - the same with the rank's own entry 0 (an exchange that sends
//!   nothing to itself);
//! - an affine function of the entry's index j and the rank's index r
//!   in the communicator, `α + β·j + γ·r` (block sizes that grow with
//!   the index, as `MPI_Gatherv` of rank-dependent blocks).
//!
//! Each rule must reproduce every traced vector of the call exactly; a
//! call whose vectors follow none is refused, so a vector of the wrong
//! length is never written.

use super::fit::{fit_size, Law};

/// How long a vector is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Len {
    Zero,
    One,
    All,
    AtRoot,
}

/// How a vector's entries are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Entries {
    /// Every entry `law(n)`; `own_zero`: the rank's own entry 0.
    Uniform { law: Law, own_zero: bool },
    /// `α + β·j + γ·r`.
    Affine { alpha: f64, beta: f64, gamma: f64 },
}

/// A vector's rule ([`fit_vector`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct VecRule {
    pub len: Len,
    pub entries: Entries,
}

/// One traced vector: the communicator's size, the rank's index in it,
/// whether the rank is the call's root, and the vector.
pub(super) struct VecSeen<'a> {
    pub n: u32,
    pub r: u32,
    pub is_root: bool,
    pub v: &'a [u64],
}

impl Len {
    fn at(self, n: u32, is_root: bool) -> usize {
        match self {
            Len::Zero => 0,
            Len::One => 1,
            Len::All => n as usize,
            Len::AtRoot if is_root => n as usize,
            Len::AtRoot => 0,
        }
    }
}

impl VecRule {
    /// The vector of rank index `r` in a communicator of `n`.
    pub fn eval(&self, n: u32, r: u32, is_root: bool) -> Vec<u64> {
        let len = self.len.at(n, is_root);
        (0..len).map(|j| self.entry(n, r, j as u32, len)).collect()
    }

    fn entry(&self, n: u32, r: u32, j: u32, len: usize) -> u64 {
        match self.entries {
            Entries::Uniform { law, own_zero } => {
                if own_zero && len > 1 && j == r {
                    0
                } else {
                    law.eval(n).round() as u64
                }
            }
            Entries::Affine { alpha, beta, gamma } => (alpha + beta * j as f64 + gamma * r as f64).round().max(0.0) as u64,
        }
    }
}

/// The rule every vector of `seen` follows (see the module docs); `None`
/// when no rule does.
pub(super) fn fit_vector(seen: &[VecSeen<'_>]) -> Option<VecRule> {
    let len = [Len::Zero, Len::One, Len::All, Len::AtRoot].into_iter().find(|l| seen.iter().all(|s| l.at(s.n, s.is_root) == s.v.len()))?;
    let holds = |rule: &VecRule| seen.iter().all(|s| rule.eval(s.n, s.r, s.is_root) == s.v);
    let nonempty: Vec<&VecSeen<'_>> = seen.iter().filter(|s| !s.v.is_empty()).collect();
    if nonempty.is_empty() {
        return Some(VecRule { len, entries: Entries::Uniform { law: Law::constant(0.0), own_zero: false } });
    }
    for own_zero in [false, true] {
        // One size per communicator size, from the entries that are not
        // the rank's own when those are 0.
        let mut per_n: Vec<(u32, f64)> = Vec::new();
        let mut consistent = true;
        for s in &nonempty {
            let others = s.v.iter().enumerate().filter(|&(j, _)| !(own_zero && s.v.len() > 1 && j == s.r as usize));
            for (_, &b) in others {
                match per_n.iter().find(|p| p.0 == s.n) {
                    Some(p) if p.1 != b as f64 => consistent = false,
                    Some(_) => {}
                    None => per_n.push((s.n, b as f64)),
                }
            }
        }
        if consistent && !per_n.is_empty() {
            let (law, exact) = fit_size(&per_n);
            let rule = VecRule { len, entries: Entries::Uniform { law, own_zero } };
            if exact && holds(&rule) {
                return Some(rule);
            }
        }
    }
    let rule = VecRule { len, entries: affine(&nonempty)? };
    holds(&rule).then_some(rule)
}

/// `α + β·j + γ·r` by least squares over every entry of `seen`; `None`
/// when the entries do not determine it.
fn affine(seen: &[&VecSeen<'_>]) -> Option<Entries> {
    // Normal equations of the three unknowns.
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for s in seen {
        for (j, &y) in s.v.iter().enumerate() {
            let x = [1.0, j as f64, s.r as f64];
            for p in 0..3 {
                for q in 0..3 {
                    a[p][q] += x[p] * x[q];
                }
                b[p] += x[p] * y as f64;
            }
        }
    }
    // Without variation in j or r their coefficient is 0 (Gauss–Jordan
    // on the columns that vary).
    let used: Vec<usize> =
        (0..3).filter(|&p| p == 0 || a[p][p] * a[0][0] - a[0][p] * a[0][p] > 1e-9 * a[0][0] * a[p][p].max(1.0)).collect();
    let k = used.len();
    let mut m: Vec<Vec<f64>> = used.iter().map(|&p| used.iter().map(|&q| a[p][q]).chain(std::iter::once(b[p])).collect()).collect();
    for c in 0..k {
        let piv = (c..k).max_by(|&x, &y| m[x][c].abs().total_cmp(&m[y][c].abs()))?;
        if m[piv][c].abs() < 1e-12 {
            return None;
        }
        m.swap(c, piv);
        let pivot = m[c].clone();
        for (row, line) in m.iter_mut().enumerate() {
            if row != c {
                let f = line[c] / pivot[c];
                line.iter_mut().zip(&pivot).skip(c).for_each(|(x, p)| *x -= f * p);
            }
        }
    }
    let mut coef = [0.0; 3];
    for (i, &p) in used.iter().enumerate() {
        coef[p] = m[i][k] / m[i][i];
    }
    Some(Entries::Affine { alpha: coef[0], beta: coef[1], gamma: coef[2] })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen<'a>(n: u32, r: u32, is_root: bool, v: &'a [u64]) -> VecSeen<'a> {
        VecSeen { n, r, is_root, v }
    }

    #[test]
    fn a_shared_total_and_an_exchange_without_self_reach_n_entries() {
        // 4096 bytes shared out to every member.
        let (a, b) = ([1024u64; 4], [512u64; 8]);
        let rule = fit_vector(&[seen(4, 1, false, &a), seen(8, 3, false, &b)]).unwrap();
        assert_eq!(rule.eval(64, 5, false), vec![64; 64]);
        // The same with nothing to oneself.
        let (a, b) = ([0u64, 100, 100, 100], [100u64, 100, 0, 100, 100, 100, 100, 100]);
        let rule = fit_vector(&[seen(4, 0, false, &a), seen(8, 2, false, &b)]).unwrap();
        let v = rule.eval(16, 9, false);
        assert_eq!(v.len(), 16);
        assert!(v.iter().enumerate().all(|(j, &x)| x == if j == 9 { 0 } else { 100 }), "{v:?}");
    }

    #[test]
    fn blocks_that_grow_with_the_index_and_the_root_s_vector() {
        // Gatherv of (j + 1) ints at the root (rank n − 1), nothing elsewhere.
        let g4: Vec<u64> = (0..4).map(|j| 4 * (j + 1)).collect();
        let g8: Vec<u64> = (0..8).map(|j| 4 * (j + 1)).collect();
        let rule = fit_vector(&[seen(4, 3, true, &g4), seen(4, 0, false, &[]), seen(8, 7, true, &g8), seen(8, 2, false, &[])]).unwrap();
        assert_eq!(rule.len, Len::AtRoot);
        assert_eq!(rule.eval(32, 31, true), (0..32).map(|j| 4 * (j + 1)).collect::<Vec<u64>>());
        assert!(rule.eval(32, 3, false).is_empty());
        // Alltoallv of (r + j + 1) ints.
        let v = |n: u64, r: u64| (0..n).map(|j| 4 * (r + j + 1)).collect::<Vec<u64>>();
        let (a, b, c) = (v(4, 1), v(8, 5), v(8, 2));
        let rule = fit_vector(&[seen(4, 1, false, &a), seen(8, 5, false, &b), seen(8, 2, false, &c)]).unwrap();
        assert_eq!(rule.eval(64, 40, false), v(64, 40));
    }

    #[test]
    fn vectors_no_rule_gives_are_refused() {
        let (a, b) = ([7u64, 300, 12, 5], [1u64, 2, 900, 4, 5, 6, 7, 80]);
        assert!(fit_vector(&[seen(4, 0, false, &a), seen(8, 0, false, &b)]).is_none());
        // A length that is neither 1 nor the communicator's size.
        assert!(fit_vector(&[seen(4, 0, false, &[1, 2]), seen(8, 0, false, &[1, 2])]).is_none());
    }
}

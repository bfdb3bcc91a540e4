//! When a flow that ends or starts leaves the other flows' max-min
//! rates as they are, so that no filling is needed.
//!
//! A feasible allocation is max-min fair exactly when every flow is at
//! its bound or has a bottleneck: a saturated link that it crosses with a
//! positive weight and on which no flow of positive weight has a higher
//! rate (Bertsekas & Gallager, "Data Networks", 2nd ed., §6.5.2, whose
//! proof holds with weights). So:
//!
//! - removing flows keeps the others' rates when every other flow that
//!   has a bottleneck among the removed flows' links (those links stop
//!   being saturated) is at its bound or has another bottleneck;
//! - a new flow, given the most its links leave free up to its bound,
//!   keeps the others' rates when it reaches its bound or is the fastest
//!   on one of the links that limit it (the others' bottlenecks were
//!   saturated, so a flow crossing one of them is left nothing there, and
//!   is refused).
//!
//! The tests are conservative where rounding could decide: a link counts
//! as saturated within [`SATURATED`] of its capacity, a flow counts as a
//! link's fastest, for being threatened by a removal, within [`NEAR`] of
//! the fastest rate there. The rates kept differ from a new filling's by
//! rounding and by the filling's own tolerance ([`TOL`] between levels).

use super::{Solver, TOL};

/// Relative slack under which a link counts as saturated.
const SATURATED: f64 = 1e-11;

/// Relative distance from a link's fastest rate under which a flow
/// counts as the fastest there when a removal could speed it up.
const NEAR: f64 = 1e-9;

impl Solver {
    /// The per-link sums behind the tests, from the members' rates.
    fn resum(&mut self, l: usize) {
        let (mut used, mut top) = (0.0, 0.0);
        for x in &self.members[l] {
            let r = self.rate[x.id as usize];
            used += x.w * r;
            if x.w > 0.0 && r > top {
                top = r;
            }
        }
        (self.used[l], self.top[l]) = (used, top);
    }

    fn saturated(&self, l: usize, base: &[f64]) -> bool {
        self.used[l] >= base[l] * (1.0 - SATURATED)
    }

    /// Whether removing flows `gone` (still in the solver) leaves every
    /// other flow's max-min rate as it is, on links of capacity `base`
    /// (bytes/s, indexed by link). Valid after a [`Solver::share`] that
    /// filled and the changes these tests allowed since; the caller then
    /// removes the flows and calls [`Solver::settle`].
    pub(in crate::replay::flows) fn keeps_rates_without(&mut self, gone: &[u32], base: &[f64]) -> bool {
        self.stamp += 1;
        let st = self.stamp;
        for &id in gone {
            self.gone_at[id as usize] = st;
            for &(l, _) in &self.links[id as usize] {
                self.touched_at[l as usize] = st;
            }
        }
        for &id in gone {
            for &(l, _) in &self.links[id as usize] {
                let l = l as usize;
                if !self.saturated(l, base) {
                    continue;
                }
                let near_top = self.top[l] * (1.0 - NEAR);
                for x in &self.members[l] {
                    let g = x.id as usize;
                    let r = self.rate[g];
                    if x.w > 0.0 && self.gone_at[g] != st && r >= near_top && r < self.bound[g] * (1.0 - TOL) {
                        let other = self.links[g].iter().any(|&(k, w)| {
                            let k = k as usize;
                            w > 0.0 && self.touched_at[k] != st && self.saturated(k, base) && r >= self.top[k] * (1.0 - TOL)
                        });
                        if !other {
                            return false;
                        }
                    }
                }
            }
        }
        true
    }

    /// After the flows passed to [`Solver::keeps_rates_without`] are
    /// removed: takes again the sums of the links they crossed.
    pub(in crate::replay::flows) fn settle(&mut self, gone: &[u32]) {
        for &id in gone {
            for k in 0..self.links[id as usize].len() {
                let l = self.links[id as usize][k].0 as usize;
                self.resum(l);
            }
        }
    }

    /// For flow `id`, just added: the most its links leave free, up to
    /// its bound, bytes/s, if at that rate every other flow keeps its
    /// max-min rate (then it is the flow's rate), on links of capacity
    /// `base` (bytes/s, indexed by link). `None`: the links need a new
    /// filling (also for a flow that crosses a link twice). Valid as
    /// [`Solver::keeps_rates_without`] is.
    pub(in crate::replay::flows) fn fit_alone(&mut self, id: u32, base: &[f64]) -> Option<f64> {
        let i = id as usize;
        let links = &self.links[i];
        let mut r = self.bound[i];
        for (k, &(l, w)) in links.iter().enumerate() {
            if links[..k].iter().any(|x| x.0 == l) {
                return None;
            }
            if w > 0.0 {
                r = super::least(r, (base[l as usize] - self.used[l as usize]) / w);
            }
        }
        if r.is_nan() || r <= 0.0 {
            return None;
        }
        if r < self.bound[i] * (1.0 - TOL) {
            // Fastest on a link that limits it (within rounding of `r`).
            let bottleneck = links.iter().any(|&(l, w)| {
                let l = l as usize;
                w > 0.0 && (base[l] - self.used[l]) / w <= r * (1.0 + NEAR) && self.top[l] <= r * (1.0 + TOL)
            });
            if !bottleneck {
                return None;
            }
        }
        self.rate[i] = r;
        for &(l, w) in &self.links[i] {
            super::credit(&mut self.used, &mut self.top, l as usize, w, r);
        }
        Some(r)
    }
}

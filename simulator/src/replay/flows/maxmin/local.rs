//! Solving only the flows a change can move: the flows of the links
//! that flows joined or left are filled again on what the other flows
//! leave of their links, and the result is checked against the
//! bottleneck condition; the flows that fail it join the set, which is
//! filled again. A set that no other flow's links meet is a union of
//! components, and its filling needs no check; a set whose links all fit
//! their flows at their bounds needs no filling (each flow of the set
//! takes its bound).
//!
//! A feasible allocation is max-min fair exactly when every flow is at
//! its bound or has a bottleneck: a saturated link that it crosses with a
//! positive weight and on which no flow of positive weight has a higher
//! rate (Bertsekas & Gallager, "Data Networks", 2nd ed., §6.5.2, whose
//! proof holds with weights). Only the links the set's flows cross
//! change their use, so only the flows on those links need checking;
//! every other flow keeps the bottleneck it had. A flow of the set
//! without a bottleneck is short of what a faster flow outside the set
//! holds on one of its links, and that flow joins the set.
//!
//! The checks are tolerant where rounding decides: a link counts as
//! saturated within [`SATURATED`] of its capacity, a flow as the fastest
//! on a link within [`NEAR`] of the fastest rate there, so the rates kept
//! differ from a filling of the whole component by about that much.

use super::{Solver, AT_BOUND, NONE, TOL};

/// Relative slack under which a link counts as saturated.
const SATURATED: f64 = 1e-11;

/// Relative distance from a link's fastest rate under which a flow
/// counts as the fastest there.
const NEAR: f64 = 1e-10;

/// The threshold of the fastest on a link of use `used` and capacity
/// `cap` (bytes/s) whose fastest flow of positive weight has rate `top`:
/// `top` less [`NEAR`] when the link is saturated (within [`SATURATED`]),
/// else NaN, which no rate reaches.
pub(super) fn fastest(used: f64, top: f64, cap: f64) -> f64 {
    if used >= cap * (1.0 - SATURATED) {
        top * (1.0 - NEAR)
    } else {
        f64::NAN
    }
}

/// Fillings of a growing set before the whole components are filled:
/// no limit, since the set grows at each round and the components it
/// reached hold every flow of it and more. The components are filled
/// only when a flow of the set has no bottleneck that a faster flow
/// explains (NaN, or rounding beyond the tolerances).
pub(super) const ROUNDS: usize = usize::MAX;

impl Solver {
    /// Solves the flows of the touched links, growing the set until every
    /// flow on the links it crosses has a bottleneck; returns whether it
    /// succeeded within `rounds` fillings ([`ROUNDS`]). The set's flows are then in
    /// `sub_flows`; otherwise `sub_links` holds the links it reached (for
    /// the caller to fill their components).
    pub(super) fn solve_local(&mut self, base: &[f64]) -> bool {
        self.stamp += 1;
        let st = self.stamp;
        self.sub_flows.clear();
        for k in 0..self.touched.len() {
            let s = self.touched[k] as usize;
            for j in 0..self.slots[s].members.len() {
                let id = self.slots[s].members[j].id;
                if self.seen[id as usize] != st {
                    self.seen[id as usize] = st;
                    self.sub_flows.push(id);
                }
            }
        }
        self.sub_links.clear();
        if self.sub_flows.is_empty() {
            return true;
        }
        for round in 0..self.rounds {
            self.collect_sub_links();
            if round == 0 && self.fits(base, &self.sub_links) {
                // Every link the set's flows cross fits them at their
                // bounds whatever the others' rates: they take their
                // bounds, which no other flow's bottleneck depends on.
                for k in 0..self.sub_flows.len() {
                    let i = self.sub_flows[k] as usize;
                    self.rate[i] = self.bound[i];
                    self.bneck[i] = AT_BOUND;
                }
                for k in 0..self.sub_links.len() {
                    self.take_usage(self.sub_links[k], base);
                }
                #[cfg(test)]
                {
                    self.fitted += 1;
                }
                return true;
            }
            let (links, flows) = (std::mem::take(&mut self.sub_links), std::mem::take(&mut self.sub_flows));
            let first = self.levels + 1;
            let closed = self.fill(base, &links, &flows, st);
            (self.sub_links, self.sub_flows) = (links, flows);
            if closed {
                // Whole components, filled as such.
                for k in 0..self.sub_links.len() {
                    self.take_usage(self.sub_links[k], base);
                }
                return true;
            }
            match self.grow(base, st, first) {
                Some(false) => return true,
                Some(true) => {}
                None => return false,
            }
        }
        self.collect_sub_links();
        false
    }

    /// The links that the flows of `sub_flows` cross, into `sub_links`
    /// (their `slot_seen` stamp is `sub_stamp` then).
    fn collect_sub_links(&mut self) {
        self.stamp += 1;
        let lst = self.stamp;
        self.sub_stamp = lst;
        let Solver { links, slot_seen, sub_flows, sub_links, .. } = self;
        sub_links.clear();
        for &id in sub_flows.iter() {
            for (s, _) in links[id as usize].iter() {
                if slot_seen[s as usize] != lst {
                    slot_seen[s as usize] = lst;
                    sub_links.push(s);
                }
            }
        }
    }

    /// Whether flow `id` is at its bound or has a bottleneck; records
    /// which in `bneck`. Valid where the links' thresholds are up to date
    /// ([`Solver::take_usage`]).
    fn bottlenecked(&mut self, id: u32) -> bool {
        let i = id as usize;
        let r = self.rate[i];
        let b = if r >= self.bound[i] * (1.0 - 2.0 * TOL) {
            AT_BOUND
        } else {
            self.links[i].iter().find(|&(s, w)| w > 0.0 && r >= self.fastest[s as usize]).map_or(NONE, |x| x.0)
        };
        self.bneck[i] = b;
        b != NONE
    }

    /// Whether flow `id`, outside the set, keeps the bottleneck it was
    /// last found with: at its bound, or a link that no flow of the set
    /// crosses (whose use and rates did not change).
    fn kept(&self, id: u32) -> bool {
        match self.bneck[id as usize] {
            NONE => false,
            AT_BOUND => true,
            b => self.slot_seen[b as usize] != self.sub_stamp,
        }
    }

    /// Checks every flow on the links of the set (flows with `seen` stamp
    /// `st`, filled at levels from `first` on), each once, and adds to
    /// the set the flows outside it faster than a flow of the set that
    /// has no bottleneck, on its links, and the flows outside it that
    /// have none. `Some(grew)`, or `None` when a flow of the set has no
    /// bottleneck and no faster flow outside the set explains it (NaN, or
    /// rounding beyond the tolerances). Flows that joined the set in this
    /// check are filled next, not checked.
    fn grow(&mut self, base: &[f64], st: u64, first: u64) -> Option<bool> {
        // Only the set's links changed their use.
        for k in 0..self.sub_links.len() {
            self.take_usage(self.sub_links[k], base);
        }
        let before = self.sub_flows.len();
        for k in 0..before {
            let id = self.sub_flows[k];
            let i = id as usize;
            if self.fixed_at[i] < first || self.bottlenecked(id) {
                continue;
            }
            // Faster flows outside the set on its links join it.
            let r = self.rate[i];
            let n = self.sub_flows.len();
            let mut explained = false;
            for m in 0..self.links[i].len() {
                let (l, w) = self.links[i].get(m);
                if w <= 0.0 {
                    continue;
                }
                for q in 0..self.slots[l as usize].members.len() {
                    let x = self.slots[l as usize].members[q];
                    let g = x.id as usize;
                    if x.w > 0.0 && self.rate[g] > r {
                        if self.seen[g] != st {
                            self.seen[g] = st;
                            self.sub_flows.push(x.id);
                        } else {
                            // Joined in this check: filled next.
                            explained |= self.fixed_at[g] < first;
                        }
                    }
                }
            }
            if self.sub_flows.len() == n && !explained {
                return None;
            }
        }
        // The other flows on the set's links.
        self.stamp += 1;
        let ck = self.stamp;
        for k in 0..self.sub_links.len() {
            let s = self.sub_links[k] as usize;
            for j in 0..self.slots[s].members.len() {
                let id = self.slots[s].members[j].id;
                let i = id as usize;
                if self.seen[i] == st || self.checked[i] == ck {
                    continue;
                }
                self.checked[i] = ck;
                if !self.kept(id) && !self.bottlenecked(id) {
                    self.seen[i] = st;
                    self.sub_flows.push(id);
                }
            }
        }
        Some(self.sub_flows.len() > before)
    }
}

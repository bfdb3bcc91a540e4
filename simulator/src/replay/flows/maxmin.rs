//! Max-min fair rates of the flows in their bandwidth phase, by
//! progressive filling with equal rates per level (Bertsekas & Gallager,
//! "Data Networks", 2nd ed., §6.5.2; SimGrid 3.32 `lmm::System::solve`
//! without its lazy update).
//!
//! Every level raises the open flows' rate together until a link
//! saturates (its remaining capacity over the weights of its open flows)
//! or a flow reaches its bound; the flows crossing a saturated link with a
//! positive weight, and those at their bound, are fixed at that level, and
//! their links give up weight × level. Values within 1e-12 relative of the
//! level count as reaching it.
//!
//! The work per level is kept to what the level changes: a link none of
//! whose flows was fixed keeps its open weight and remaining capacity, so
//! only the links of the flows just fixed have their weight summed again
//! (over their open flows, in start order) and their ratio divided again.
//! The arithmetic is otherwise the plain algorithm's, operation for
//! operation: sums in start order, capacities reduced in start order, so
//! the rates are the same to the bit.

use super::Flow;

/// Relative tolerance under which a link counts as saturated and a flow
/// as at its bound.
const TOL: f64 = 1e-12;

/// Scratch space of [`Solver::share`], kept between calls so that sharing
/// allocates nothing once the largest flow set has been seen.
#[derive(Debug, Default)]
pub(super) struct Solver {
    /// Per link of the network: `epoch` when it got a dense index this call.
    stamp: Vec<u64>,
    /// Per link of the network: its dense index (valid when stamped).
    dense: Vec<u32>,
    epoch: u64,
    /// Per dense link: the network's link.
    links: Vec<u32>,
    /// Per dense link: remaining capacity, bytes/s.
    cap: Vec<f64>,
    /// Per dense link: Σ weight × bound of all flows (the fit test), then
    /// Σ weight of the open flows.
    load: Vec<f64>,
    /// Per dense link: `cap / load` when `load > 0`.
    ratio: Vec<f64>,
    tight: Vec<bool>,
    /// Per dense link: crossed by a flow fixed at the current level.
    touched: Vec<bool>,
    /// Flow incidence lists in start order: `(dense link, weight)` per
    /// flow, from `by_flow_at[i]`.
    by_flow: Vec<(u32, f64)>,
    by_flow_at: Vec<u32>,
    /// Link incidence lists, in start order within a link: `(flow, weight)`
    /// per dense link, from `by_link_at[l]`.
    by_link: Vec<(u32, f64)>,
    by_link_at: Vec<u32>,
    /// Per dense link: where its next incidence goes while `by_link` fills.
    fill_at: Vec<u32>,
    /// Per flow: not fixed yet.
    open_flag: Vec<bool>,
    open: Vec<u32>,
    still: Vec<u32>,
}

impl Solver {
    /// Sets `rate` of every flow in `flows` (in start order) to its max-min
    /// fair rate on links of capacity `base` (bytes/s, indexed by link),
    /// and returns whether every flow got its bound because every link fits
    /// the flows at their bounds.
    pub(super) fn share(&mut self, base: &[f64], flows: &mut [Flow]) -> bool {
        if self.stamp.len() < base.len() {
            self.stamp.resize(base.len(), 0);
            self.dense.resize(base.len(), 0);
        }
        self.epoch += 1;
        let ep = self.epoch;
        self.links.clear();
        self.cap.clear();
        self.load.clear();
        self.by_flow.clear();
        self.by_flow_at.clear();
        // Dense link indices, incidence lists, and each link's demand at
        // the flows' bounds.
        for f in flows.iter() {
            self.by_flow_at.push(self.by_flow.len() as u32);
            for &(l, w) in &f.links {
                let li = l as usize;
                let d = if self.stamp[li] == ep {
                    self.dense[li]
                } else {
                    self.stamp[li] = ep;
                    let d = self.links.len() as u32;
                    self.dense[li] = d;
                    self.links.push(l);
                    self.cap.push(base[li]);
                    self.load.push(0.0);
                    d
                };
                self.load[d as usize] += w * f.bound;
                self.by_flow.push((d, w));
            }
        }
        self.by_flow_at.push(self.by_flow.len() as u32);
        let fits = self.load.iter().zip(&self.cap).all(|(&load, &cap)| load <= cap * (1.0 + TOL));
        if fits {
            for f in flows.iter_mut() {
                f.rate = f.bound;
            }
            return true;
        }
        self.fill(flows);
        false
    }

    /// Progressive filling of `flows`, whose incidence lists and dense
    /// links `share` has set up.
    fn fill(&mut self, flows: &mut [Flow]) {
        let (n, m) = (flows.len(), self.links.len());
        // Link incidence lists (counting sort of the flow lists by link).
        self.by_link_at.clear();
        self.by_link_at.resize(m + 1, 0);
        for &(d, _) in &self.by_flow {
            self.by_link_at[d as usize + 1] += 1;
        }
        for d in 0..m {
            self.by_link_at[d + 1] += self.by_link_at[d];
        }
        self.by_link.clear();
        self.by_link.resize(self.by_flow.len(), (0, 0.0));
        self.fill_at.clear();
        self.fill_at.extend_from_slice(&self.by_link_at[..m]);
        for i in 0..n {
            let (a, b) = (self.by_flow_at[i] as usize, self.by_flow_at[i + 1] as usize);
            for &(d, w) in &self.by_flow[a..b] {
                let k = &mut self.fill_at[d as usize];
                self.by_link[*k as usize] = (i as u32, w);
                *k += 1;
            }
        }
        self.open_flag.clear();
        self.open_flag.resize(n, true);
        self.open.clear();
        self.open.extend(0..n as u32);
        for f in flows.iter_mut() {
            f.rate = 0.0;
        }
        self.ratio.clear();
        self.ratio.resize(m, 0.0);
        self.tight.clear();
        self.tight.resize(m, false);
        self.touched.clear();
        self.touched.resize(m, true);
        let mut open = std::mem::take(&mut self.open);
        let mut still = std::mem::take(&mut self.still);
        while !open.is_empty() {
            // Open weight and ratio of the links whose open flows or
            // capacity changed.
            for d in 0..m {
                if self.touched[d] {
                    self.touched[d] = false;
                    let (a, b) = (self.by_link_at[d] as usize, self.by_link_at[d + 1] as usize);
                    let mut load = 0.0;
                    for &(i, w) in &self.by_link[a..b] {
                        if self.open_flag[i as usize] {
                            load += w;
                        }
                    }
                    self.load[d] = load;
                    if load > 0.0 {
                        self.ratio[d] = self.cap[d] / load;
                    }
                }
            }
            // The level at which the first link saturates or the first
            // bound binds (a negative capacity left by rounding counts as 0).
            let mut level = open.iter().map(|&i| flows[i as usize].bound).fold(f64::INFINITY, f64::min);
            for d in 0..m {
                if self.load[d] > 0.0 {
                    level = level.min(self.ratio[d].max(0.0));
                }
            }
            let at_level = level * (1.0 + TOL);
            for d in 0..m {
                self.tight[d] = self.load[d] > 0.0 && self.ratio[d] <= at_level;
            }
            still.clear();
            for &i in &open {
                let f = &mut flows[i as usize];
                let (a, b) = (self.by_flow_at[i as usize] as usize, self.by_flow_at[i as usize + 1] as usize);
                let on = &self.by_flow[a..b];
                if f.bound <= at_level || on.iter().any(|&(d, w)| w > 0.0 && self.tight[d as usize]) {
                    f.rate = level;
                    self.open_flag[i as usize] = false;
                    for &(d, w) in on {
                        if level > 0.0 {
                            self.cap[d as usize] -= w * level;
                        }
                        self.touched[d as usize] = true;
                    }
                } else {
                    still.push(i);
                }
            }
            if still.len() == open.len() {
                break; // cannot happen with positive bounds; avoids a loop on NaN
            }
            std::mem::swap(&mut open, &mut still);
        }
        self.open = open;
        self.still = still;
    }
}

#[cfg(test)]
mod tests;

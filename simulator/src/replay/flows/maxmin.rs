//! Max-min fair rates of the flows in their bandwidth phase, by
//! progressive filling with equal rates per level (Bertsekas & Gallager,
//! "Data Networks", 2nd ed., §6.5.2; SimGrid's `lmm::MaxMin` solver,
//! `src/kernel/lmm/maxmin.cpp`).
//!
//! Every level raises the open flows' rate together until a link
//! saturates (its remaining capacity over the weights of its open flows)
//! or a flow reaches its bound; the flows crossing a saturated link with a
//! positive weight, and those at their bound, are fixed at that level, and
//! their links give up weight × level. Values within 1e-12 relative of the
//! level count as reaching it.
//!
//! The solver keeps, between calls, each link's flows in start order and
//! what the first level needs (whether Σ weight × bound exceeds the
//! capacity, Σ weight, capacity / Σ weight); a flow that starts or ends
//! makes only its own links sum again. Within a call, a level re-sums
//! only the links of the flows it fixed, and finds the flows to fix from
//! the saturated links' flows. Every sum runs over a link's flows in
//! start order, and capacities are reduced in start order, so the rates
//! are those of the plain algorithm (all sums from scratch at every
//! level, kept in the tests as the reference) to the bit.
//!
//! Between fillings, [`Solver::keeps_rates_without`] and
//! [`Solver::fit_alone`] tell when a flow that ends or starts leaves
//! every other flow's rate as it is (module `keep`), so that the caller
//! need not fill again.

/// Relative tolerance under which a link counts as saturated and a flow
/// as at its bound.
const TOL: f64 = 1e-12;

/// A flow on a link: start order, the flow's id, its weight there and
/// weight × bound.
#[derive(Debug, Clone, Copy)]
struct Member {
    seq: u64,
    id: u32,
    w: f64,
    wb: f64,
}

/// The flows in their bandwidth phase, per link, and the max-min solver's
/// scratch space (reused between calls).
#[derive(Debug, Default)]
pub(super) struct Solver {
    // Per flow id.
    /// (link, weight) pairs.
    links: Vec<Vec<(u32, f64)>>,
    /// Upper bound of the rate, bytes/s.
    bound: Vec<f64>,
    /// Max-min fair rate as of the last [`Solver::share`], bytes/s.
    rate: Vec<f64>,
    /// Level count at which the flow was last fixed (levels are counted
    /// over all calls).
    fixed_at: Vec<u64>,
    /// Stamp of the last [`Solver::keeps_rates_without`] that removes the flow.
    gone_at: Vec<u64>,
    /// Ids of ended flows, for reuse.
    free: Vec<u32>,
    /// Ids of the flows in their bandwidth phase (in no particular order)
    /// and each id's place there.
    live: Vec<u32>,
    live_at: Vec<u32>,

    // Per link of the network.
    /// Its flows, in start order.
    members: Vec<Vec<Member>>,
    /// Place in `active` (`NONE`: the link has no flow).
    active_at: Vec<u32>,
    /// Members changed since the sums below were taken.
    dirty: Vec<bool>,
    /// Σ weight over the members, and capacity / that sum (∞ when it is 0).
    load0: Vec<f64>,
    ratio0: Vec<f64>,
    /// Σ weight × bound over the members exceeds the capacity (beyond
    /// the tolerance).
    over: Vec<bool>,
    /// Σ weight × rate over the members (bytes/s of the link used) and
    /// the largest rate of a member with a positive weight (0: none),
    /// bytes/s, as of the last [`Solver::share`] that filled, kept up to
    /// date by [`Solver::keeps_rates_without`] and [`Solver::fit_alone`].
    used: Vec<f64>,
    top: Vec<f64>,
    /// Stamp of the last [`Solver::keeps_rates_without`] whose removed
    /// flows cross the link.
    touched_at: Vec<u64>,
    /// Calls of [`Solver::keeps_rates_without`] so far.
    stamp: u64,
    /// Links with at least one flow (in no particular order).
    active: Vec<u32>,
    dirty_list: Vec<u32>,
    over_count: usize,

    // Per link, within a call: remaining capacity, Σ weight of the open
    // members and capacity / that sum (∞ when it is 0).
    cap: Vec<f64>,
    load: Vec<f64>,
    ratio: Vec<f64>,
    /// Level count at which the link was last queued in `affected`.
    queued: Vec<u64>,
    /// Levels filled so far, over all calls.
    levels: u64,
    open: Vec<u32>,
    still: Vec<u32>,
    affected: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl Solver {
    /// A solver for a network of `links` links.
    pub(super) fn new(links: usize) -> Solver {
        Solver {
            members: vec![Vec::new(); links],
            active_at: vec![NONE; links],
            dirty: vec![false; links],
            load0: vec![0.0; links],
            ratio0: vec![0.0; links],
            over: vec![false; links],
            cap: vec![0.0; links],
            load: vec![0.0; links],
            ratio: vec![0.0; links],
            queued: vec![0; links],
            used: vec![0.0; links],
            top: vec![0.0; links],
            touched_at: vec![0; links],
            ..Default::default()
        }
    }

    /// Adds a flow in its bandwidth phase, started `seq`-th, crossing
    /// `links` ((link, weight) pairs) with rate bound `bound` bytes/s;
    /// returns its id.
    pub(super) fn add(&mut self, seq: u64, links: &[(u32, f64)], bound: f64) -> u32 {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.links.push(Vec::new());
                self.bound.push(0.0);
                self.rate.push(0.0);
                self.fixed_at.push(0);
                self.gone_at.push(0);
                self.live_at.push(NONE);
                (self.links.len() - 1) as u32
            }
        };
        let i = id as usize;
        self.links[i].clear();
        self.links[i].extend_from_slice(links);
        self.bound[i] = bound;
        self.rate[i] = bound;
        self.live_at[i] = self.live.len() as u32;
        self.live.push(id);
        for &(l, w) in links {
            let li = l as usize;
            let m = &mut self.members[li];
            // After the members started no later: a link the flow crosses
            // twice keeps the flow's own order.
            let at = m.partition_point(|x| x.seq <= seq);
            m.insert(at, Member { seq, id, w, wb: w * bound });
            self.touch(li);
        }
        id
    }

    /// Removes flow `id`.
    pub(super) fn remove(&mut self, id: u32) {
        let i = id as usize;
        let links = std::mem::take(&mut self.links[i]);
        for &(l, _) in &links {
            self.members[l as usize].retain(|x| x.id != id);
            self.touch(l as usize);
        }
        self.links[i] = links;
        let at = self.live_at[i] as usize;
        self.live.swap_remove(at);
        if let Some(&moved) = self.live.get(at) {
            self.live_at[moved as usize] = at as u32;
        }
        self.live_at[i] = NONE;
        self.free.push(id);
    }

    /// Removes every flow.
    pub(super) fn clear(&mut self) {
        for k in 0..self.active.len() + self.dirty_list.len() {
            let l = if k < self.active.len() { self.active[k] } else { self.dirty_list[k - self.active.len()] } as usize;
            self.members[l].clear();
            (self.active_at[l], self.dirty[l], self.over[l]) = (NONE, false, false);
            (self.used[l], self.top[l]) = (0.0, 0.0);
        }
        self.active.clear();
        self.dirty_list.clear();
        self.over_count = 0;
        for &id in &self.live {
            self.live_at[id as usize] = NONE;
        }
        self.free.append(&mut self.live);
    }

    /// Rate of flow `id` as of the last [`Solver::share`], bytes/s.
    pub(super) fn rate(&self, id: u32) -> f64 {
        self.rate[id as usize]
    }

    fn touch(&mut self, l: usize) {
        if !self.dirty[l] {
            self.dirty[l] = true;
            self.dirty_list.push(l as u32);
        }
    }

    /// Takes again the sums of the links whose members changed.
    #[inline(never)]
    fn refresh(&mut self, base: &[f64]) {
        for k in 0..self.dirty_list.len() {
            let l = self.dirty_list[k] as usize;
            self.dirty[l] = false;
            let m = &self.members[l];
            let over = if m.is_empty() {
                let at = self.active_at[l];
                if at != NONE {
                    self.active.swap_remove(at as usize);
                    if let Some(&moved) = self.active.get(at as usize) {
                        self.active_at[moved as usize] = at;
                    }
                    self.active_at[l] = NONE;
                }
                (self.used[l], self.top[l]) = (0.0, 0.0);
                false
            } else {
                if self.active_at[l] == NONE {
                    self.active_at[l] = self.active.len() as u32;
                    self.active.push(l as u32);
                }
                let (mut fit, mut load) = (0.0, 0.0);
                for x in m {
                    fit += x.wb;
                    load += x.w;
                }
                self.load0[l] = load;
                self.ratio0[l] = if load > 0.0 { base[l] / load } else { f64::INFINITY };
                // A NaN sum does not fit.
                let fits = fit <= base[l] * (1.0 + TOL);
                !fits
            };
            if over != self.over[l] {
                self.over[l] = over;
                if over {
                    self.over_count += 1;
                } else {
                    self.over_count -= 1;
                }
            }
        }
        self.dirty_list.clear();
    }

    /// Sets every flow's max-min fair rate on links of capacity `base`
    /// (bytes/s, indexed by link), and returns whether every flow got its
    /// bound because every link fits the flows at their bounds.
    pub(super) fn share(&mut self, base: &[f64]) -> bool {
        self.refresh(base);
        if self.over_count == 0 {
            for &id in &self.live {
                self.rate[id as usize] = self.bound[id as usize];
            }
            return true;
        }
        self.fill(base);
        false
    }

    /// Progressive filling.
    #[inline(never)]
    fn fill(&mut self, base: &[f64]) {
        let Solver {
            links,
            bound,
            rate,
            fixed_at,
            live,
            members,
            active,
            load0,
            ratio0,
            cap,
            load,
            ratio,
            queued,
            levels,
            used,
            top,
            open,
            still,
            affected,
            ..
        } = self;
        open.clear();
        open.extend_from_slice(live);
        // Flows fixed in this call have `fixed_at >= first`.
        let first = *levels + 1;
        let mut least_bound = f64::INFINITY;
        for &id in open.iter() {
            rate[id as usize] = 0.0;
            least_bound = least(least_bound, bound[id as usize]);
        }
        for &l in active.iter() {
            let l = l as usize;
            (cap[l], load[l], ratio[l]) = (base[l], load0[l], ratio0[l]);
            (used[l], top[l]) = (0.0, 0.0);
        }
        while !open.is_empty() {
            *levels += 1;
            let lv = *levels;
            // The level at which the first link saturates or the first
            // bound binds (a negative capacity left by rounding counts as 0).
            let level = least_ratio(least_bound, active, ratio);
            let at_level = level * (1.0 + TOL);
            // Fixed: the open flows at their bound, and those crossing a
            // saturated link with a positive weight.
            affected.clear();
            // Fixes flow `i` at the level and queues its links.
            let mut fix = |i: usize, rate: &mut [f64], fixed_at: &mut [u64], queued: &mut [u64], affected: &mut Vec<u32>| {
                rate[i] = level;
                fixed_at[i] = lv;
                for &(l, w) in &links[i] {
                    credit(used, top, l as usize, w, level);
                    if queued[l as usize] != lv {
                        queued[l as usize] = lv;
                        affected.push(l);
                    }
                }
            };
            if least_bound <= at_level {
                for &id in open.iter() {
                    if bound[id as usize] <= at_level {
                        fix(id as usize, rate, fixed_at, queued, affected);
                    }
                }
            }
            for &l in active.iter() {
                let l = l as usize;
                if load[l] > 0.0 && ratio[l] <= at_level {
                    for x in &members[l] {
                        if x.w > 0.0 && fixed_at[x.id as usize] < first {
                            fix(x.id as usize, rate, fixed_at, queued, affected);
                        }
                    }
                }
            }
            still.clear();
            least_bound = f64::INFINITY;
            for &id in open.iter() {
                if fixed_at[id as usize] < first {
                    still.push(id);
                    least_bound = least(least_bound, bound[id as usize]);
                }
            }
            if still.len() == open.len() {
                break; // cannot happen with positive bounds; avoids a loop on NaN
            }
            // The fixed flows' links: open weight, then (when some flow is
            // still open there) remaining capacity and ratio.
            for &l in affected.iter() {
                let l = l as usize;
                let m = &members[l];
                let mut sum = 0.0;
                for x in m {
                    if fixed_at[x.id as usize] < first {
                        sum += x.w;
                    }
                }
                load[l] = sum;
                if sum > 0.0 {
                    if level > 0.0 {
                        let mut c = cap[l];
                        for x in m {
                            if fixed_at[x.id as usize] == lv {
                                c -= x.w * level;
                            }
                        }
                        cap[l] = c;
                    }
                    ratio[l] = cap[l] / sum;
                } else {
                    ratio[l] = f64::INFINITY;
                }
            }
            std::mem::swap(open, still);
        }
    }
}

/// A flow of weight `w` at `rate` on link `l`: adds `w × rate` to the
/// link's `used` bandwidth and raises its `top` rate (positive weights).
fn credit(used: &mut [f64], top: &mut [f64], l: usize, w: f64, rate: f64) {
    used[l] += w * rate;
    if w > 0.0 && rate > top[l] {
        top[l] = rate;
    }
}

/// The least of `level` and the ratios of the `active` links (∞ where
/// no open flow weighs), a negative ratio counting as 0; two running
/// minima, as the order does not change a minimum.
#[inline(never)]
fn least_ratio(level: f64, active: &[u32], ratio: &[f64]) -> f64 {
    let at_least_0 = |r: f64| if r > 0.0 { r } else { 0.0 };
    let (mut a, mut b) = (level, f64::INFINITY);
    let mut pairs = active.chunks_exact(2);
    for p in &mut pairs {
        a = least(a, at_least_0(ratio[p[0] as usize]));
        b = least(b, at_least_0(ratio[p[1] as usize]));
    }
    for &l in pairs.remainder() {
        a = least(a, at_least_0(ratio[l as usize]));
    }
    least(a, b)
}

/// The lesser of `a` and `b`, `a` when `b` is NaN (as `f64::min` for the
/// values met here, without its NaN handling on `a`).
#[inline]
pub(super) fn least(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

mod keep;
#[cfg(test)]
mod tests;

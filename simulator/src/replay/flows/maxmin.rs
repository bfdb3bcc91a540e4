//! Max-min fair rates of the flows in their bandwidth phase, solved
//! locally. After flows join or leave, the flows of the links they
//! touched are filled again on what the other flows leave of those
//! links, and grown until the bottleneck condition holds for every flow
//! on the links they cross (module `local`); when a flow of the set has
//! no bottleneck that a faster flow explains, the connected components
//! it reached (flows joined by the links they share) are filled whole,
//! as SimGrid's LMM does with
//! selective update (`src/kernel/lmm/System.cpp`,
//! `update_modified_cnst_set`). A flow outside the set keeps its rate.
//!
//! Each filling is progressive with equal rates per level (Bertsekas &
//! Gallager, "Data Networks", 2nd ed., §6.5.2; SimGrid's `lmm::MaxMin`,
//! `src/kernel/lmm/maxmin.cpp`): every level raises the open flows'
//! rate together until a link saturates (its remaining capacity over the
//! weights of its open flows) or a flow reaches its bound; the flows
//! crossing a saturated link with a positive weight, and those at their
//! bound, are fixed at that level, and their links give up weight ×
//! level. Values within 1e-12 relative of the level count as reaching
//! it. A level re-sums only the links of the flows it fixed, over each
//! link's flows in start order, so filling one component gives the
//! rates of the plain algorithm run on it alone (kept in the tests as
//! the reference) to the bit. Run on all flows at once, the plain
//! algorithm can merge levels of two components that lie within that
//! tolerance, and local fillings differ from it by the tolerances of
//! their checks: the rates agree with it to about 1e-10 relative.
//!
//! Links hold state only while a flow crosses them: a directed link id
//! maps to a slot (4 bytes per link of the platform), and the slots of
//! links left empty are reused, so idle hosts cost nothing more.

/// Relative tolerance under which a link counts as saturated and a flow
/// as at its bound.
const TOL: f64 = 1e-12;

const NONE: u32 = u32::MAX;

/// Member space a free slot keeps for its next link.
const KEPT_MEMBERS: usize = 8;

/// Links of a filling up to which each level scans them all
/// ([`Solver::fill_scan`]); larger fillings keep them in a heap.
const SMALL_FILL: usize = 32;

/// In `Solver::bneck`: the flow is at its bound.
const AT_BOUND: u32 = u32::MAX - 1;

/// A flow on a link: the flow's id and its weight there (its start
/// order is `Solver::seq_of`, its bound `Solver::bound`).
#[derive(Debug, Clone, Copy)]
struct Member {
    id: u32,
    w: f64,
}

/// A link that some flow in its bandwidth phase crosses.
#[derive(Debug, Default)]
struct Slot {
    /// Directed link id.
    link: u32,
    /// Its flows, in start order (a flow that leaves leaves at once).
    members: Vec<Member>,
    /// Within a filling: remaining capacity, bytes/s; Σ weight of the
    /// open members; capacity / that sum (∞ when it is 0).
    cap: f64,
    load: f64,
    ratio: f64,
    /// Level count at which the link was last queued in `affected`.
    queued: u64,
    /// Solve count at which the link was last queued in `touched`.
    touched_at: u64,
    /// Members that left since the last [`Solver::solve`].
    left: u32,
}

/// The flows in their bandwidth phase, per link, their max-min fair
/// rates, and the scratch space of the fillings (reused between calls).
#[derive(Debug, Default)]
pub(super) struct Solver {
    // Per flow id (ids are the caller's, dense from 0).
    /// (slot, weight) pairs of the links it crosses.
    links: Vec<pairs::Pairs>,
    /// Upper bound of the rate, bytes/s.
    bound: Vec<f64>,
    /// Max-min fair rate as of the last [`Solver::solve`], bytes/s.
    rate: Vec<f64>,
    /// Level count at which the flow was last fixed (levels are counted
    /// over all calls).
    fixed_at: Vec<u64>,
    /// Stamp of the last component search that reached the flow.
    seen: Vec<u64>,
    /// Stamp of the last bottleneck check of the flow outside a set.
    checked: Vec<u64>,
    /// The slot of a bottleneck the flow had at its current rate when it
    /// was last checked, [`AT_BOUND`] when it was at its bound, `NONE`
    /// when unknown.
    bneck: Vec<u32>,
    /// Start order of the flow in the solver (`u64::MAX`: none), the
    /// order of a link's members.
    seq_of: Vec<u64>,

    // Per directed link of the network: its slot (`NONE`: no flow).
    slot_of: Vec<u32>,
    slots: Vec<Slot>,
    /// Per slot: stamp of the last component search that reached it.
    slot_seen: Vec<u64>,
    free_slots: Vec<u32>,
    /// Slots whose members changed since the last [`Solver::solve`], each once.
    touched: Vec<u32>,
    /// Calls of [`Solver::solve`] that had touched slots, plus 1.
    epoch: u64,
    /// Component searches so far.
    stamp: u64,
    /// Levels filled so far, over all calls.
    levels: u64,

    // Scratch: the touched components' links and flows, one component
    // after the other, and where each component ends in both; the search
    // stack, and a filling's flows, heaps and affected links.
    comp_links: Vec<u32>,
    comp_flows: Vec<u32>,
    comp_ends: Vec<(u32, u32)>,
    /// The flows tried by [`Solver::solve_local`] and the links they cross.
    sub_flows: Vec<u32>,
    sub_links: Vec<u32>,
    /// Per slot, as of the last [`Solver::solve`]: when the link is
    /// saturated (its use, Σ weight × rate over its flows, within
    /// `local::SATURATED` of its capacity), the rate from which a flow of
    /// positive weight counts as the fastest there (within `local::NEAR`
    /// of the fastest, 0 when none has a positive weight), bytes/s; NaN
    /// when it is not saturated.
    fastest: Vec<f64>,
    /// Fillings of a growing set before the whole components are filled.
    rounds: usize,
    /// The `slot_seen` stamp of the links in `sub_links`.
    sub_stamp: u64,
    /// Calls of [`Solver::solve`] solved locally, and by whole components.
    #[cfg(test)]
    pub(super) solved: (u64, u64),
    /// Calls of [`Solver::solve`] whose local set fit at its bounds.
    #[cfg(test)]
    pub(super) fitted: u64,
    stack: Vec<u32>,
    /// Links of a filling up to which it scans them ([`SMALL_FILL`], or
    /// another count in tests).
    small: usize,
    /// A scanning filling's open and still-open flows.
    open: Vec<u32>,
    still: Vec<u32>,
    /// A filling's links with open flows by ratio (key [`ratio_key`], slot).
    by_ratio: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u32)>>,
    /// A filling's flows by bound (bytes/s, id).
    by_bound: Vec<(f64, u32)>,
    /// Links of NaN ratio met at a level, pushed back after it.
    deferred: Vec<u32>,
    affected: Vec<u32>,
}

impl Solver {
    /// A solver for a network of `links` directed links.
    pub(super) fn new(links: usize) -> Solver {
        Solver { slot_of: vec![NONE; links], rounds: local::ROUNDS, small: SMALL_FILL, epoch: 1, ..Default::default() }
    }

    /// Adds flow `id` (not in the solver) in its bandwidth phase, started
    /// `seq`-th, crossing `links` ((directed link, weight) pairs) with
    /// rate bound `bound` bytes/s. Its rate is set by the next
    /// [`Solver::solve`].
    pub(super) fn add(&mut self, id: u32, seq: u64, links: &[(u32, f64)], bound: f64) {
        let i = id as usize;
        if i >= self.links.len() {
            let n = i + 1;
            self.links.resize_with(n, Default::default);
            self.bound.resize(n, 0.0);
            self.rate.resize(n, 0.0);
            self.fixed_at.resize(n, 0);
            self.seen.resize(n, 0);
            self.checked.resize(n, 0);
            self.bneck.resize(n, NONE);
            self.seq_of.resize(n, u64::MAX);
        }
        self.bound[i] = bound;
        self.rate[i] = 0.0;
        self.bneck[i] = NONE;
        self.seq_of[i] = seq;
        let mut mine = std::mem::take(&mut self.links[i]);
        mine.clear();
        for &(l, w) in links {
            let s = self.slot(l);
            mine.push((s, w));
            let seq_of = &self.seq_of;
            let m = &mut self.slots[s as usize].members;
            // After the members started no later: a link the flow crosses
            // twice keeps the flow's own order.
            let at = m.partition_point(|x| seq_of[x.id as usize] <= seq);
            m.insert(at, Member { id, w });
            self.touch(s);
        }
        self.links[i] = mine;
    }

    /// Removes flow `id` from its links; the other flows of its
    /// components get their rates at the next [`Solver::solve`].
    pub(super) fn remove(&mut self, id: u32) {
        let i = id as usize;
        let seq = self.seq_of[i];
        for k in 0..self.links[i].len() {
            let s = self.links[i].get(k).0;
            let seq_of = &self.seq_of;
            let slot = &mut self.slots[s as usize];
            // Members are in start order and start orders are unique: the
            // first of `seq` is the flow's (a link crossed twice holds it
            // twice, one removal each).
            let at = slot.members.partition_point(|x| seq_of[x.id as usize] < seq);
            debug_assert!(slot.members.get(at).is_some_and(|x| x.id == id), "entry {id} on its link");
            slot.members.remove(at);
            slot.left += 1;
            self.touch(s);
        }
        self.seq_of[i] = u64::MAX;
        self.links[i].clear();
    }

    /// Makes entry `id` (in the solver) stand for `k` (≥ 1) flows of its
    /// links and bound: its weight on each link is k times the weight it
    /// was added with. Its rate, a flow's, is set by the next
    /// [`Solver::solve`].
    pub(super) fn set_count(&mut self, id: u32, k: u32) {
        let i = id as usize;
        let seq = self.seq_of[i];
        for m in 0..self.links[i].len() {
            let (s, w) = self.links[i].get(m);
            let seq_of = &self.seq_of;
            let members = &mut self.slots[s as usize].members;
            let at = members.partition_point(|x| seq_of[x.id as usize] < seq);
            let x = &mut members[at];
            debug_assert!(x.id == id, "entry {id} on its link");
            x.w = f64::from(k) * w;
            self.touch(s);
        }
    }

    /// Entries crossing directed link `l`, counting those that left
    /// since the last [`Solver::solve`].
    pub(super) fn members(&self, l: u32) -> usize {
        match self.slot_of[l as usize] {
            NONE => 0,
            s => {
                let slot = &self.slots[s as usize];
                slot.members.len() + slot.left as usize
            }
        }
    }

    /// Whether no flow in the solver crosses directed link `l`.
    pub(super) fn idle(&self, l: u32) -> bool {
        self.slot_of[l as usize] == NONE
    }

    /// Queues slot `s` in `touched` unless it is there.
    fn touch(&mut self, s: u32) {
        let slot = &mut self.slots[s as usize];
        if slot.touched_at != self.epoch {
            slot.touched_at = self.epoch;
            self.touched.push(s);
        }
    }

    /// Rate of flow `id` as of the last [`Solver::solve`], bytes/s.
    pub(super) fn rate(&self, id: u32) -> f64 {
        self.rate[id as usize]
    }

    /// The slot of directed link `l`, taken when it has none.
    fn slot(&mut self, l: u32) -> u32 {
        let s = self.slot_of[l as usize];
        if s != NONE {
            return s;
        }
        let s = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot::default());
                self.slot_seen.push(0);
                self.fastest.push(f64::NAN);
                (self.slots.len() - 1) as u32
            }
        };
        self.slots[s as usize].link = l;
        self.slot_seen[s as usize] = 0;
        self.slot_of[l as usize] = s;
        s
    }

    /// Sets the max-min fair rates after the flows added and removed
    /// since the last call, on links of capacity `base` (bytes/s, indexed
    /// by directed link), and appends the ids of the flows whose rate may
    /// have changed to `changed` (in no particular order); the other
    /// flows keep their rates. The flows of the touched links are solved
    /// first on their own ([`Solver::solve_local`]); when that cannot be
    /// shown to give every flow its max-min rate, their whole components.
    pub(super) fn solve(&mut self, base: &[f64], changed: &mut Vec<u32>) {
        if self.touched.is_empty() {
            return;
        }
        self.epoch += 1;
        for &s in &self.touched {
            self.slots[s as usize].left = 0;
        }
        let local = self.solve_local(base);
        #[cfg(test)]
        if local {
            self.solved.0 += 1;
        } else {
            self.solved.1 += 1;
        }
        // Links left without a flow give their slots back, and the
        // member space a crowd left beyond a few flows.
        for k in 0..self.touched.len() {
            let s = self.touched[k];
            let slot = &mut self.slots[s as usize];
            if slot.members.is_empty() && self.slot_of[slot.link as usize] == s {
                self.slot_of[slot.link as usize] = NONE;
                self.free_slots.push(s);
                if slot.members.capacity() > KEPT_MEMBERS {
                    slot.members = Vec::with_capacity(KEPT_MEMBERS);
                }
            }
        }
        self.touched.clear();
        if local {
            changed.extend_from_slice(&self.sub_flows);
            return;
        }
        // The components of the flows tried.
        self.touched.extend_from_slice(&self.sub_links);
        self.components();
        self.touched.clear();
        changed.extend_from_slice(&self.comp_flows);
        let (mut links0, mut flows0) = (0, 0);
        for k in 0..self.comp_ends.len() {
            let (links1, flows1) = self.comp_ends[k];
            let (links, flows) = (links0..links1 as usize, flows0..flows1 as usize);
            (links0, flows0) = (links1 as usize, flows1 as usize);
            if self.fits(base, &self.comp_links[links.clone()]) {
                for &id in &self.comp_flows[flows] {
                    self.rate[id as usize] = self.bound[id as usize];
                    self.bneck[id as usize] = AT_BOUND;
                }
            } else {
                let st = self.stamp;
                let Solver { comp_links, comp_flows, .. } = self;
                let (comp_links, comp_flows) = (std::mem::take(comp_links), std::mem::take(comp_flows));
                self.fill(base, &comp_links[links], &comp_flows[flows], st);
                (self.comp_links, self.comp_flows) = (comp_links, comp_flows);
            }
        }
        for k in 0..self.comp_links.len() {
            self.take_usage(self.comp_links[k], base);
        }
    }

    /// Whether every link of `links` (slots) fits all its flows at their
    /// bounds (Σ weight × bound within [`TOL`] of its capacity in `base`,
    /// bytes/s): a flow whose links all fit has its bound as its max-min
    /// rate, whatever the others' rates, and needs no filling.
    fn fits(&self, base: &[f64], links: &[u32]) -> bool {
        links.iter().all(|&s| {
            let slot = &self.slots[s as usize];
            let fit: f64 = slot.members.iter().map(|x| x.w * self.bound[x.id as usize]).sum();
            // A NaN sum does not fit.
            fit <= base[slot.link as usize] * (1.0 + TOL)
        })
    }

    /// Takes again slot `s`'s threshold of the fastest (`fastest`) from
    /// its flows' rates and its capacity in `base`.
    fn take_usage(&mut self, s: u32, base: &[f64]) {
        let (mut used, mut top) = (0.0, 0.0);
        let slot = &self.slots[s as usize];
        for x in &slot.members {
            let r = self.rate[x.id as usize];
            used += x.w * r;
            if x.w > 0.0 && r > top {
                top = r;
            }
        }
        self.fastest[s as usize] = local::fastest(used, top, base[slot.link as usize]);
    }

    /// The links and flows of the components that the touched slots
    /// belong to, into `comp_links` and `comp_flows` (depth first), and
    /// where each component ends there, into `comp_ends`.
    fn components(&mut self) {
        self.stamp += 1;
        let st = self.stamp;
        self.comp_links.clear();
        self.comp_flows.clear();
        self.comp_ends.clear();
        let Solver { links, seen, slots, slot_seen, touched, comp_links, comp_flows, comp_ends, stack, .. } = self;
        for &s in touched.iter() {
            if slot_seen[s as usize] == st || slots[s as usize].members.is_empty() {
                continue;
            }
            slot_seen[s as usize] = st;
            stack.push(s);
            while let Some(s) = stack.pop() {
                comp_links.push(s);
                for x in &slots[s as usize].members {
                    let i = x.id as usize;
                    if seen[i] == st {
                        continue;
                    }
                    seen[i] = st;
                    comp_flows.push(x.id);
                    for (s2, _) in links[i].iter() {
                        if slot_seen[s2 as usize] != st {
                            slot_seen[s2 as usize] = st;
                            stack.push(s2);
                        }
                    }
                }
            }
            comp_ends.push((comp_links.len() as u32, comp_flows.len() as u32));
        }
    }

    /// Progressive filling of the flows `flows` (those whose `seen`
    /// stamp is `st`) over the links `comp_links` they cross, each
    /// link's capacity less the use of its other flows at their rates;
    /// returns whether no other flow crosses those links (the flows are
    /// then whole components).
    ///
    /// On more than [`SMALL_FILL`] links, the links that some open flow
    /// weighs on wait in a min-heap of their ratios (`by_ratio`, a ratio
    /// kept only while it is the link's) and the open flows in order of
    /// their bounds (`by_bound`), so a level costs the links it
    /// saturates and the links of the flows it fixes, not every link and
    /// flow of the filling; on fewer, each level scans them. Both find
    /// the same levels, fix the same flows at each and sum in the same
    /// order, so they give the same rates to the bit.
    fn fill(&mut self, base: &[f64], comp_links: &[u32], flows: &[u32], st: u64) -> bool {
        if comp_links.len() <= self.small {
            self.fill_scan(base, comp_links, flows, st)
        } else {
            self.fill_heap(base, comp_links, flows, st)
        }
    }

    /// [`Solver::fill`] with its links in a heap of ratios.
    #[inline(never)]
    fn fill_heap(&mut self, base: &[f64], comp_links: &[u32], flows: &[u32], st: u64) -> bool {
        let Solver { links, bound, rate, fixed_at, seen, bneck, slots, levels, by_ratio, by_bound, deferred, affected, .. } = self;
        // Flows fixed in this call have `fixed_at >= first`.
        let first = *levels + 1;
        by_bound.clear();
        for &id in flows {
            rate[id as usize] = 0.0;
            bneck[id as usize] = NONE;
            // A NaN bound never binds.
            let b = bound[id as usize];
            if !b.is_nan() {
                by_bound.push((b, id));
            }
        }
        by_bound.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut next_bound = 0;
        let mut open = flows.len();
        by_ratio.clear();
        let closed = load_links(comp_links, slots, base, seen, rate, st, |s, slot| {
            if slot.load > 0.0 {
                by_ratio.push(std::cmp::Reverse((ratio_key(slot.ratio), s)));
            }
        });
        while open > 0 {
            *levels += 1;
            let lv = *levels;
            // The level at which the first link saturates or the first
            // bound binds (a negative capacity left by rounding, or a
            // NaN one, counts as 0).
            while next_bound < by_bound.len() && fixed_at[by_bound[next_bound].1 as usize] >= first {
                next_bound += 1;
            }
            let least_bound = by_bound.get(next_bound).map_or(f64::INFINITY, |x| x.0);
            // Entries whose key is no longer their link's ratio (or of a
            // link left without open weight) leave when they come to the top.
            while let Some(&std::cmp::Reverse((key, s))) = by_ratio.peek() {
                let slot = &slots[s as usize];
                if slot.load > 0.0 && ratio_key(slot.ratio) == key {
                    break;
                }
                by_ratio.pop();
            }
            let level = match by_ratio.peek() {
                Some(&std::cmp::Reverse((key, _))) => least(least_bound, f64::from_bits(key)),
                None => least_bound,
            };
            let at_level = level * (1.0 + TOL);
            // Fixed: the open flows at their bound, and those crossing a
            // saturated link with a positive weight.
            affected.clear();
            let mut fixed = 0;
            // Fixes flow `i` at the level and queues its links.
            let mut fix = |i: usize, rate: &mut [f64], fixed_at: &mut [u64], slots: &mut [Slot], affected: &mut Vec<u32>| {
                rate[i] = level;
                fixed_at[i] = lv;
                fixed += 1;
                for (s, _) in links[i].iter() {
                    let slot = &mut slots[s as usize];
                    if slot.queued != lv {
                        slot.queued = lv;
                        affected.push(s);
                    }
                }
            };
            let mut k = next_bound;
            while k < by_bound.len() && by_bound[k].0 <= at_level {
                let i = by_bound[k].1 as usize;
                if fixed_at[i] < first {
                    fix(i, rate, fixed_at, slots, affected);
                }
                k += 1;
            }
            deferred.clear();
            while let Some(&std::cmp::Reverse((key, s))) = by_ratio.peek() {
                if f64::from_bits(key) > at_level {
                    break;
                }
                by_ratio.pop();
                let su = s as usize;
                let r = slots[su].ratio;
                let current = slots[su].load > 0.0 && ratio_key(r) == key;
                if !current {
                    continue; // an older ratio of the link
                }
                if r.is_nan() {
                    // Holds the level at 0 while its flows are open.
                    deferred.push(s);
                    continue;
                }
                for j in 0..slots[su].members.len() {
                    let x = slots[su].members[j];
                    if x.w > 0.0 && fixed_at[x.id as usize] < first && seen[x.id as usize] == st {
                        fix(x.id as usize, rate, fixed_at, slots, affected);
                    }
                }
            }
            if fixed == 0 {
                break; // cannot happen with positive bounds; avoids a loop on NaN
            }
            open -= fixed;
            for &s in deferred.iter() {
                by_ratio.push(std::cmp::Reverse((ratio_key(f64::NAN), s)));
            }
            // The fixed flows' links: open weight, then (when some flow is
            // still open there) remaining capacity and ratio.
            for &s in affected.iter() {
                let slot = &mut slots[s as usize];
                let old = ratio_key(slot.ratio);
                if relevel(slot, fixed_at, seen, (first, lv), level, st) {
                    let key = ratio_key(slot.ratio);
                    // An entry of an equal key is still there, unless the
                    // link saturated at this level (its open flows
                    // all fixed, which leaves no open weight).
                    if key != old || slot.ratio.is_nan() && !deferred.contains(&s) {
                        by_ratio.push(std::cmp::Reverse((key, s)));
                    }
                }
            }
        }
        closed
    }

    /// [`Solver::fill`] by scans: each level reads every link and open
    /// flow of the filling, which on a few links costs less than the
    /// heaps' upkeep.
    #[inline(never)]
    fn fill_scan(&mut self, base: &[f64], comp_links: &[u32], flows: &[u32], st: u64) -> bool {
        let Solver { links, bound, rate, fixed_at, seen, bneck, slots, levels, open, still, affected, .. } = self;
        open.clear();
        open.extend_from_slice(flows);
        // Flows fixed in this call have `fixed_at >= first`.
        let first = *levels + 1;
        let mut least_bound = f64::INFINITY;
        for &id in open.iter() {
            rate[id as usize] = 0.0;
            bneck[id as usize] = NONE;
            least_bound = least(least_bound, bound[id as usize]);
        }
        let closed = load_links(comp_links, slots, base, seen, rate, st, |_, _| {});
        while !open.is_empty() {
            *levels += 1;
            let lv = *levels;
            // The level at which the first link saturates or the first
            // bound binds (a negative capacity left by rounding counts as 0).
            let level = least_ratio(least_bound, comp_links, slots);
            let at_level = level * (1.0 + TOL);
            // Fixed: the open flows at their bound, and those crossing a
            // saturated link with a positive weight.
            affected.clear();
            // Fixes flow `i` at the level and queues its links.
            let fix = |i: usize, rate: &mut [f64], fixed_at: &mut [u64], slots: &mut [Slot], affected: &mut Vec<u32>| {
                rate[i] = level;
                fixed_at[i] = lv;
                for (s, _) in links[i].iter() {
                    let slot = &mut slots[s as usize];
                    if slot.queued != lv {
                        slot.queued = lv;
                        affected.push(s);
                    }
                }
            };
            if least_bound <= at_level {
                for &id in open.iter() {
                    if bound[id as usize] <= at_level {
                        fix(id as usize, rate, fixed_at, slots, affected);
                    }
                }
            }
            for &s in comp_links {
                let s = s as usize;
                if slots[s].load > 0.0 && slots[s].ratio <= at_level {
                    for j in 0..slots[s].members.len() {
                        let x = slots[s].members[j];
                        if x.w > 0.0 && fixed_at[x.id as usize] < first && seen[x.id as usize] == st {
                            fix(x.id as usize, rate, fixed_at, slots, affected);
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
            for &s in affected.iter() {
                relevel(&mut slots[s as usize], fixed_at, seen, (first, lv), level, st);
            }
            std::mem::swap(open, still);
        }
        closed
    }
}

/// A link of flows fixed at level `lv` (rate `level`): its open weight
/// (the filling's flows, `seen == st`, not fixed since level `first`),
/// then, when some flow is still open there, its remaining capacity and
/// ratio (else an infinite ratio). True when a flow is still open there.
fn relevel(slot: &mut Slot, fixed_at: &[u64], seen: &[u64], (first, lv): (u64, u64), level: f64, st: u64) -> bool {
    let mut sum = 0.0;
    for x in &slot.members {
        if fixed_at[x.id as usize] < first && seen[x.id as usize] == st {
            sum += x.w;
        }
    }
    slot.load = sum;
    if sum > 0.0 {
        if level > 0.0 {
            let mut c = slot.cap;
            for x in &slot.members {
                if fixed_at[x.id as usize] == lv {
                    c -= x.w * level;
                }
            }
            slot.cap = c;
        }
        slot.ratio = slot.cap / sum;
        true
    } else {
        slot.ratio = f64::INFINITY;
        false
    }
}

/// Sets each link slot of `comp_links` to its capacity (`base`, bytes/s)
/// less what the flows outside the filling (`seen != st`) take at their
/// rates, its load (the weights of the filling's flows) and their ratio,
/// and shows it to `each`; false when a flow outside the filling crosses
/// one of the links (the filling is then not closed).
fn load_links(
    comp_links: &[u32],
    slots: &mut [Slot],
    base: &[f64],
    seen: &[u64],
    rate: &[f64],
    st: u64,
    mut each: impl FnMut(u32, &Slot),
) -> bool {
    let mut closed = true;
    for &s in comp_links {
        let slot = &mut slots[s as usize];
        let (mut load, mut cap) = (0.0, base[slot.link as usize]);
        for x in &slot.members {
            if seen[x.id as usize] == st {
                load += x.w;
            } else {
                cap -= x.w * rate[x.id as usize];
                closed = false;
            }
        }
        (slot.cap, slot.load) = (cap, load);
        slot.ratio = if load > 0.0 { cap / load } else { f64::INFINITY };
        each(s, slot);
    }
    closed
}

/// The least of `level` and the ratios of the links in `comp` (∞ where
/// no open flow weighs), a negative ratio counting as 0.
fn least_ratio(level: f64, comp: &[u32], slots: &[Slot]) -> f64 {
    let mut a = level;
    for &s in comp {
        let r = slots[s as usize].ratio;
        a = least(a, if r > 0.0 { r } else { 0.0 });
    }
    a
}

/// The heap key of a link's ratio: its bits, a negative ratio or a NaN
/// one counting as 0 (the bits of non-negative floats order as they do).
#[inline]
fn ratio_key(r: f64) -> u64 {
    if r > 0.0 {
        r.to_bits()
    } else {
        0
    }
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

mod local;
mod pairs;
#[cfg(test)]
pub(super) mod tests;

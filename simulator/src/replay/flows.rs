//! Flow-level link sharing for the replay: the transfers in flight
//! between hosts, their max-min fair rates, and when the next one ends
//! (semantics in [`crate::network::FlowSharing`]).

use crate::network::FlowSharing;

mod classes;
mod heap;
mod maxmin;
mod route;

use classes::NONE;

/// Entries on one of a flow's shared links from which the flow looks for
/// a class of its key to join.
const CROWD: usize = 16;

/// What to do when a transfer ends: complete these request slots.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Done {
    /// Receiving rank and its slot.
    pub(crate) dst: u32,
    pub(crate) recv_slot: u32,
    /// Receive posting time plus receive overhead: the receive completes
    /// no earlier, seconds.
    pub(crate) recv_ready: f64,
    /// Sending rank and its slot (`NO_SLOT` for an eager send).
    pub(crate) src: u32,
    pub(crate) send_slot: u32,
    /// Transfer start, seconds.
    pub(crate) start: f64,
}

/// A transfer: in its latency phase (waiting in `Net::pending`), then in
/// its bandwidth phase (in a class, whose first flow's end date waits in
/// `Net::dates`).
#[derive(Debug, Clone, Default)]
struct Flow {
    /// (link, weight) pairs: forward links weigh 1, reverse ones the crosstraffic.
    links: route::Links,
    /// Bound, in the sharing's units ([`Net::park`]).
    bound: f64,
    /// In its latency phase, the bytes left; in its bandwidth phase, the
    /// bytes served to its class's flows at which it ends; in the
    /// sharing's units.
    bytes: f64,
    /// Its class in its bandwidth phase (`classes::NONE`: none).
    class: u32,
    /// Bit k: `links[k]` is shared (not lone), for its first 64 links.
    shared: u64,
    /// Classes it has joined in its bandwidth phase.
    joins: u8,
    done: Done,
    /// Start order.
    seq: u64,
}

/// `(key, seq, id)` ordered for a min-heap by `(key, seq)`: a flow's end
/// of latency, or its target in its class.
#[derive(Debug, Clone, Copy)]
struct Entry(f64, u64, u32);

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed: `BinaryHeap` pops the least `(key, seq)`.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

/// The transfers in flight and the link capacities.
///
/// Flows in their bandwidth phase are grouped in classes of flows with
/// the same shared links and bound, which get the same rate (module
/// `classes`); the solver shares the links among classes. Bytes served
/// are brought up to date lazily, as SimGrid's `network/optim:Lazy`
/// does: only when a class's rate changes, a change that only the
/// classes of a component touched by an arrival or a departure can see
/// ([`maxmin::Solver::solve`]); each class's first end date waits in a
/// heap. An event costs the classes it touches, not the flows in flight.
#[derive(Debug)]
pub(crate) struct Net {
    model: FlowSharing,
    /// Every flow, by id, and the free ids.
    flows: Vec<Flow>,
    free: Vec<u32>,
    /// Flows in their latency phase (they use no bandwidth), by end of latency.
    pending: std::collections::BinaryHeap<Entry>,
    /// Classes of flows in their bandwidth phase, by the date their first
    /// flow ends at their current rate.
    dates: heap::Dates,
    classes: classes::Classes,
    /// Per directed link: the one flow crossing it, when it is lone
    /// (module `classes`), else `NONE`.
    lone: Vec<u32>,
    /// Scratch: a flow's shared links.
    key: Vec<(u32, f64)>,
    /// Flows started so far.
    seq: u64,
    // Scratch: ended flows with their start order; classes whose rate may
    // have changed.
    ended: Vec<(u64, Done)>,
    changed: Vec<u32>,
    /// Capacity of each directed link, bytes/s.
    base: Vec<f64>,
    solver: maxmin::Solver,
    // A route and its way back.
    route: (Vec<u32>, Vec<u32>),
    /// The next time a flow ends its latency or its transfer (∞: none), seconds.
    next_t: f64,
    /// [`CROWD`], or another count in tests.
    crowd: usize,
    /// The most flows a class has held, and how often a flow's lone link
    /// became shared.
    #[cfg(test)]
    most: (u32, u64),
}

impl Net {
    #[cfg(test)]
    pub(crate) fn new(model: FlowSharing, hosts: usize) -> Net {
        Net::with_links(model, hosts, &[])
    }

    /// The network of `hosts` hosts with `extra` more links after the
    /// topology's (their capacities, bytes/s, each way): the links of a
    /// file system's dedicated servers ([`Net::extra_link`]).
    pub(crate) fn with_links(model: FlowSharing, hosts: usize, extra: &[f64]) -> Net {
        let mut base: Vec<f64> = model.topology.link_weights(hosts).iter().flat_map(|w| [w * model.link_bw_bytes_per_s; 2]).collect();
        base.extend(extra.iter().flat_map(|&c| [c; 2]));
        let links = base.len();
        Net {
            flows: Vec::new(),
            free: Vec::new(),
            pending: Default::default(),
            dates: Default::default(),
            classes: Default::default(),
            lone: vec![NONE; links],
            key: Vec::new(),
            seq: 0,
            ended: Vec::new(),
            changed: Vec::new(),
            base,
            solver: maxmin::Solver::new(links),
            route: Default::default(),
            model,
            next_t: f64::INFINITY,
            crowd: CROWD,
            #[cfg(test)]
            most: (0, 0),
        }
    }

    /// The latency, seconds, and bound, bytes/s, of a flow whose model
    /// segment is `seg`: the segment's intercept less the time of the
    /// header bytes added to the payload (at least 0), and its bandwidth.
    pub(crate) fn phases(&self, seg: &crate::network::Segment) -> (f64, f64) {
        let bound = seg.bandwidth_bytes_per_s;
        ((seg.intercept_s - self.model.header_bytes as f64 / bound).max(0.0), bound)
    }

    /// Starts a transfer of `bytes` payload from host `a` to host `b` at
    /// `now`, with latency `lat_s` and bound `bound` bytes/s, and returns
    /// the end of its latency phase (`now + lat_s`), seconds: call
    /// [`Net::finish_until`] then at the latest (once for all the
    /// transfers whose latency ends at the same time).
    pub(crate) fn start(&mut self, now: f64, (a, b): (usize, usize), bytes: u64, (lat_s, bound): (f64, f64), done: Done) -> f64 {
        // The route, then the route back for the acknowledgements.
        let (mut route, mut back) = std::mem::take(&mut self.route);
        route.clear();
        back.clear();
        self.model.topology.route(a, b, &mut route);
        if self.model.crosstraffic > 0.0 {
            self.model.topology.route(b, a, &mut back);
        }
        let lat_end = now + self.route_latency(lat_s, route.len());
        self.start_on(lat_end, (&route, &back), bytes, bound, done);
        self.route = (route, back);
        lat_end
    }

    /// Appends the directed link ids from host `a` to host `b` (a ≠ b) to `out`.
    pub(crate) fn route(&self, a: usize, b: usize, out: &mut Vec<u32>) {
        self.model.topology.route(a, b, out);
    }

    /// The directed ids of extra link `k` ([`Net::with_links`]): toward
    /// its far end, and back, after `hosts` hosts' topology links.
    pub(crate) fn extra_link(&self, hosts: usize, k: usize) -> (u32, u32) {
        let l = self.model.topology.link_weights(hosts).len() + k;
        (2 * l as u32, 2 * l as u32 + 1)
    }

    /// Starts a transfer of `bytes` payload over the directed links
    /// `route` (and `back` for the acknowledgements, weighted by the
    /// crosstraffic), bound `bound` bytes/s, whose latency phase ends at
    /// `lat_end` (≥ now), seconds; returns `lat_end` (as [`Net::start`]).
    pub(crate) fn start_on(&mut self, lat_end: f64, (route, back): (&[u32], &[u32]), bytes: u64, bound: f64, done: Done) -> f64 {
        let id = self.take_id();
        let x = self.model.crosstraffic;
        let back = if x > 0.0 { back } else { &[] };
        self.flows[id as usize].links.set(route.iter().copied(), 1.0, back.iter().copied(), x);
        self.park(id, lat_end, bytes, (bound, route.len()), done)
    }

    /// Starts a transfer of `bytes` between two ranks of one host over
    /// `links` (directed ids of extra links of [`Net::with_links`]: the
    /// host's copy link and the receiving rank's, each when there is
    /// one), bound `bound` bytes/s, whose latency phase ends at `lat_end`
    /// (≥ now), seconds; returns `lat_end`. Each link's capacity caps the
    /// sum of its flows' data rates, whatever the model's bandwidth factor.
    pub(crate) fn start_local(&mut self, lat_end: f64, links: [Option<u32>; 2], bytes: u64, bound: f64, done: Done) -> f64 {
        let nominal = self.model.nominal_rate_bytes_per_s;
        let f = if nominal > 0.0 { bound / nominal } else { 1.0 };
        let id = self.take_id();
        self.flows[id as usize].links.set(links.into_iter().flatten(), f, [], f);
        self.park(id, lat_end, bytes, (bound, 1), done)
    }

    /// The latency of a transfer over `hops` links whose model latency is
    /// `lat_s` (scaled by hops / 2 when latencies add up per link), seconds.
    pub(crate) fn route_latency(&self, lat_s: f64, hops: usize) -> f64 {
        if self.model.latency_per_link {
            lat_s * hops as f64 / 2.0
        } else {
            lat_s
        }
    }

    /// A free flow id (its links are set by the caller).
    fn take_id(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.flows.push(Flow::default());
            (self.flows.len() - 1) as u32
        })
    }

    /// Parks flow `id` (its links set) of `bytes` payload and data-rate
    /// bound `bound` (bytes/s) over `hops` links (its route) until
    /// `lat_end`. Rates are shared as SimGrid's max-min solver shares
    /// them: over its variables (the flow's use of each link, at most the
    /// nominal rate, whose data rate is f times it, f = bound / nominal
    /// the bandwidth factor), and, when latencies add up per link,
    /// weighted by each flow's sharing penalty, its route's latency
    /// (SimGrid's CM02 model; with links of one latency, the hop count):
    /// on a common bottleneck a flow of twice the hops gets half the use.
    /// The flow's bytes, bound and weights count in those units (bytes
    /// and bound ÷ f × penalty, weights ÷ penalty), so the solver's plain
    /// max-min gives that sharing.
    fn park(&mut self, id: u32, lat_end: f64, bytes: u64, (bound, hops): (f64, usize), done: Done) -> f64 {
        let nominal = self.model.nominal_rate_bytes_per_s;
        let inv_f = if nominal > 0.0 { nominal / bound } else { 1.0 };
        let penalty = if self.model.latency_per_link { hops.max(1) as f64 } else { 1.0 };
        self.seq += 1;
        let f = &mut self.flows[id as usize];
        if penalty != 1.0 {
            f.links.divide(penalty);
        }
        f.bound = bound * inv_f * penalty;
        f.bytes = (bytes as f64 + self.model.header_bytes as f64) * inv_f * penalty;
        (f.class, f.done, f.seq) = (NONE, done, self.seq);
        self.pending.push(Entry(lat_end, self.seq, id));
        lat_end
    }

    /// Ends flow `id` (in no class): its lone links are free, its id is
    /// free and its completion is in `ended`.
    fn end(&mut self, id: u32) {
        let f = &mut self.flows[id as usize];
        for k in 0..f.links.len() {
            let l = f.links.id(k);
            if self.lone[l as usize] == id {
                self.lone[l as usize] = NONE;
            }
        }
        self.ended.push((f.seq, f.done));
        self.free.push(id);
    }

    /// Flow `id` enters its bandwidth phase at `now`: each of its links
    /// that no other flow crosses and that fits it at its bound becomes
    /// its lone link, the others are shared (and a flow that had one of
    /// them as its lone link shares it from now on), and it joins the
    /// class of its shared links.
    fn enter(&mut self, id: u32, now: f64) {
        let f = &self.flows[id as usize];
        let n = f.links.len();
        // A flow crossing a link twice, or with more links than `shared`
        // has bits, shares all of them.
        let all = n > 64 || (1..n).any(|k| (0..k).any(|j| f.links.id(j) == f.links.id(k)));
        let mut shared = 0u64;
        for k in 0..n {
            let (l, w) = self.flows[id as usize].links.get(k);
            let other = self.lone[l as usize];
            let fits = w * self.flows[id as usize].bound <= self.base[l as usize];
            if !all && other == NONE && fits && self.solver.idle(l) {
                self.lone[l as usize] = id;
                continue;
            }
            if k < 64 {
                shared |= 1 << k;
            }
            if other != NONE {
                self.lone[l as usize] = NONE;
                self.share(other, l, now);
            }
        }
        let f = &mut self.flows[id as usize];
        (f.shared, f.joins) = (if all { u64::MAX } else { shared }, 0);
        let left = f.bytes;
        self.join(id, left, now, !all);
    }

    /// Flow `id`, whose lone link `l` another flow now crosses, leaves
    /// its class at `now` for the class of its shared links with `l`.
    fn share(&mut self, id: u32, l: u32, now: f64) {
        let f = &mut self.flows[id as usize];
        let k = (0..f.links.len()).position(|k| f.links.id(k) == l).expect("a lone link of the flow");
        f.shared |= 1 << k;
        let c = std::mem::replace(&mut f.class, NONE);
        #[cfg(test)]
        {
            self.most.1 += 1;
        }
        let left = f.bytes - self.classes.list[c as usize].served_at(now);
        self.leave(c);
        self.join(id, left.max(0.0), now, true);
    }

    /// Flow `id`, with `left` bytes left (the sharing's units), joins at
    /// `now` the class of its shared links and bound (a class of its own
    /// unless `indexed`, or none of its shared links has [`CROWD`] solver
    /// entries): a class without shared links moves at its
    /// bound, the others get their rate at the next solve.
    fn join(&mut self, id: u32, left: f64, now: f64, indexed: bool) {
        let f = &self.flows[id as usize];
        self.key.clear();
        self.key.extend(f.links.iter().enumerate().filter(|&(k, _)| k >= 64 || f.shared >> k & 1 == 1).map(|(_, x)| x));
        // Only a crowded link makes a class of several flows likely: other
        // flows take a class of their own without a look-up.
        let indexed = indexed && self.key.iter().any(|x| self.solver.members(x.0) >= self.crowd);
        let (c, fresh) = self.classes.find_or_take(&self.key, f.bound, indexed, now);
        let cl = &mut self.classes.list[c as usize];
        if fresh {
            if cl.solved() {
                // Ordered by start, then by join, among a link's classes.
                let seq = f.seq << 6 | u64::from(f.joins.min(63));
                self.solver.add(c, seq, &self.key, cl.bound);
            } else {
                cl.rate = cl.bound;
            }
        }
        let target = cl.served_at(now) + left;
        cl.push(Entry(target, f.seq, id));
        cl.count += 1;
        #[cfg(test)]
        {
            self.most.0 = self.most.0.max(cl.count);
        }
        if cl.solved() && cl.count > 1 {
            self.solver.set_count(c, cl.count);
        }
        let f = &mut self.flows[id as usize];
        (f.class, f.bytes) = (c, target);
        f.joins = f.joins.saturating_add(1);
        self.date(c);
    }

    /// One flow has left class `c` (its entry in the class may stay, until
    /// [`classes::Class::drop_left`]): the class is given back when empty,
    /// else the solver sees its new count.
    fn leave(&mut self, c: u32) {
        let cl = &mut self.classes.list[c as usize];
        cl.count -= 1;
        if cl.count == 0 {
            if cl.solved() {
                self.solver.remove(c);
            }
            self.dates.remove(c);
            self.classes.free(c);
        } else {
            if cl.solved() {
                self.solver.set_count(c, cl.count);
            }
            let flows = &self.flows;
            cl.drop_left(|e| flows[e.2 as usize].class == c && flows[e.2 as usize].seq == e.1);
            self.date(c);
        }
    }

    /// The first flow of class `c` (entries of flows that left dropped):
    /// its target and id.
    fn head(&mut self, c: u32) -> Option<(f64, u32)> {
        let cl = &mut self.classes.list[c as usize];
        while let Some((Entry(target, seq, id), all_in)) = cl.first() {
            let f = &self.flows[id as usize];
            if all_in || f.class == c && f.seq == seq {
                return Some((target, id));
            }
            cl.pop();
        }
        None
    }

    /// Puts class `c`'s first end date at its current rate in `dates`.
    fn date(&mut self, c: u32) {
        let Some((target, id)) = self.head(c) else { return };
        let cl = &self.classes.list[c as usize];
        if cl.rate > 0.0 {
            let seq = self.flows[id as usize].seq;
            self.dates.set(c, seq, cl.t_last + (target - cl.served).max(0.0) / cl.rate);
        } else {
            self.dates.remove(c);
        }
    }

    /// The next time a flow ends its latency or its transfer, if any
    /// (as of the last [`Net::finish_until`]).
    pub(crate) fn next_event(&self) -> Option<f64> {
        self.next_t.is_finite().then_some(self.next_t)
    }

    /// Advances to `now`: removes the flows that have ended (appending
    /// them to `ended`, in start order; a flow ends when less than 1e-9
    /// of its bytes, or 1e-12 relative of `now` of its time, is left),
    /// moves the flows whose latency is over to their bandwidth phase,
    /// and gives the flows of the components those changes touched their
    /// max-min fair rates, bringing up to date the bytes left of those
    /// whose rate changed.
    pub(crate) fn finish_until(&mut self, now: f64, ended: &mut Vec<Done>) {
        let eps = 1e-12 * now.abs().max(1.0);
        self.ended.clear();
        while let Some((_, c)) = self.dates.peek() {
            let (target, id) = self.head(c).expect("a class with a date has flows");
            let cl = &self.classes.list[c as usize];
            let left = target - cl.served_at(now);
            if left > 1e-9 && left / cl.rate > eps {
                break;
            }
            self.classes.list[c as usize].pop();
            self.flows[id as usize].class = NONE;
            self.leave(c);
            self.end(id);
        }
        // Flows whose latency is over start using bandwidth.
        while self.pending.peek().is_some_and(|p| p.0 <= now) {
            let Entry(_, _, id) = self.pending.pop().expect("peeked");
            if self.flows[id as usize].bytes <= 1e-9 {
                self.end(id);
            } else {
                self.enter(id, now);
            }
        }
        self.changed.clear();
        self.solver.solve(&self.base, &mut self.changed);
        for k in 0..self.changed.len() {
            let c = self.changed[k];
            let r = self.solver.rate(c);
            let cl = &mut self.classes.list[c as usize];
            if r.to_bits() == cl.rate.to_bits() {
                continue;
            }
            cl.served = cl.served_at(now);
            (cl.t_last, cl.rate) = (now, r);
            self.date(c);
        }
        if !self.ended.is_empty() {
            self.ended.sort_unstable_by_key(|e| e.0);
            ended.extend(self.ended.iter().map(|e| e.1));
        }
        let lat = self.pending.peek().map_or(f64::INFINITY, |p| p.0);
        self.next_t = maxmin::least(lat, self.dates.peek().map_or(f64::INFINITY, |d| d.0));
    }
}

#[cfg(test)]
mod tests;

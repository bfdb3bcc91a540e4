//! Flow-level link sharing for the replay: the transfers in flight
//! between hosts, their max-min fair rates, and when the next one ends
//! (semantics in [`crate::network::FlowSharing`]).

use crate::network::FlowSharing;

mod maxmin;

/// What to do when a transfer ends: complete these request slots.
#[derive(Debug, Clone, Copy)]
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

#[derive(Debug, Clone)]
struct Flow {
    /// (link, weight) pairs: forward links weigh 1, reverse ones the crosstraffic.
    links: Vec<(u32, f64)>,
    /// Bound, bytes left and rate in the sharing's units ([`Net::park`]).
    bound: f64,
    lat_end: f64,
    remaining: f64,
    rate: f64,
    done: Done,
    /// Start order.
    seq: u64,
    /// Id in the solver (in the bandwidth phase).
    id: u32,
}

/// A flow in its latency phase: `(lat_end, seq)` and its slot in
/// `Net::parked`, ordered for a min-heap by `(lat_end, seq)`.
#[derive(Debug, Clone, Copy)]
struct Pending(f64, u64, u32);

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    /// Reversed: `BinaryHeap` pops the earliest `(lat_end, seq)`.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

/// The transfers in flight and the link capacities.
#[derive(Debug)]
pub(crate) struct Net {
    model: FlowSharing,
    /// Flows in their bandwidth phase, in start order.
    flows: Vec<Flow>,
    /// Flows in their latency phase (they use no bandwidth), by end of latency.
    pending: std::collections::BinaryHeap<Pending>,
    /// Where those flows are, and the free slots.
    parked: Vec<Flow>,
    parked_free: Vec<u32>,
    /// Flows started so far.
    seq: u64,
    // Scratch: ended flows with their start order, and their solver ids.
    ended: Vec<(u64, Done)>,
    gone: Vec<u32>,
    /// Per directed link, Σ weight × bound of the flows in their bandwidth
    /// phase (kept up to date as flows come and go), bytes/s.
    demand: Vec<f64>,
    /// Every flow runs at its bound (the last sharing found no link short).
    uncontended: bool,
    /// Simulated time up to which `remaining` is accounted, seconds.
    last: f64,
    /// Capacity of each directed link, bytes/s.
    base: Vec<f64>,
    solver: maxmin::Solver,
    /// The solver holds the flows in their bandwidth phase (it is
    /// emptied while at most one flow is there and the links need no
    /// sharing, and filled again, in start order, when they do).
    synced: bool,
    // Link lists of ended flows, for reuse; and a route and its way back.
    pool: Vec<Vec<(u32, f64)>>,
    route: (Vec<u32>, Vec<u32>),
    /// The next time a flow ends its latency or its transfer (∞: none), seconds.
    next_t: f64,
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
            pending: Default::default(),
            parked: Vec::new(),
            parked_free: Vec::new(),
            seq: 0,
            ended: Vec::new(),
            gone: Vec::new(),
            demand: vec![0.0; links],
            uncontended: true,
            base,
            pool: Vec::new(),
            route: Default::default(),
            model,
            flows: Vec::new(),
            last: 0.0,
            solver: maxmin::Solver::new(links),
            synced: true,
            next_t: f64::INFINITY,
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
        let mut links = self.pool.pop().unwrap_or_default();
        links.clear();
        links.extend(route.iter().map(|&l| (l, 1.0)));
        let x = self.model.crosstraffic;
        if x > 0.0 {
            links.extend(back.iter().map(|&l| (l, x)));
        }
        self.park(lat_end, bytes, (bound, route.len()), links, done)
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
        let mut list = self.pool.pop().unwrap_or_default();
        list.clear();
        list.extend(links.into_iter().flatten().map(|l| (l, f)));
        self.park(lat_end, bytes, (bound, 1), list, done)
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

    /// Parks a flow of `bytes` payload and data-rate bound `bound` (bytes/s)
    /// over `hops` links (its route) on `links` until `lat_end`. Rates are
    /// shared as SimGrid's max-min solver shares them: over its variables
    /// (the flow's use of each link, at most the nominal rate, whose data
    /// rate is f times it, f = bound / nominal the bandwidth factor), and,
    /// when latencies add up per link, weighted by each flow's sharing
    /// penalty, its route's latency (SimGrid's CM02 model; with links of
    /// one latency, the hop count): on a common bottleneck a flow of twice
    /// the hops gets half the use. The flow's bytes, bound and weights
    /// count in those units (bytes and bound ÷ f × penalty, weights ÷
    /// penalty), so the solver's plain max-min gives that sharing.
    fn park(&mut self, lat_end: f64, bytes: u64, (bound, hops): (f64, usize), mut links: Vec<(u32, f64)>, done: Done) -> f64 {
        let nominal = self.model.nominal_rate_bytes_per_s;
        let inv_f = if nominal > 0.0 { nominal / bound } else { 1.0 };
        let penalty = if self.model.latency_per_link { hops.max(1) as f64 } else { 1.0 };
        if penalty != 1.0 {
            links.iter_mut().for_each(|l| l.1 /= penalty);
        }
        let bound = bound * inv_f * penalty;
        let remaining = (bytes as f64 + self.model.header_bytes as f64) * inv_f * penalty;
        self.seq += 1;
        let seq = self.seq;
        let f = Flow { links, bound, lat_end, remaining, rate: 0.0, done, seq, id: 0 };
        let slot = match self.parked_free.pop() {
            Some(i) => {
                self.parked[i as usize] = f;
                i
            }
            None => {
                self.parked.push(f);
                (self.parked.len() - 1) as u32
            }
        };
        self.pending.push(Pending(lat_end, seq, slot));
        lat_end
    }

    /// Max-min fair rates of the flows in their bandwidth phase at `now`
    /// ([`maxmin::Solver::share`]), and the next event.
    fn share(&mut self, now: f64) {
        if !self.synced {
            for f in &mut self.flows {
                f.id = self.solver.add(f.seq, &f.links, f.bound);
            }
            self.synced = true;
        }
        self.uncontended = self.solver.share(&self.base);
        for f in &mut self.flows {
            f.rate = self.solver.rate(f.id);
        }
        self.next_t = self.next_end(now);
    }

    /// End of the earliest latency phase, seconds (∞: none).
    fn next_lat_end(&self) -> f64 {
        self.pending.peek().map_or(f64::INFINITY, |p| p.0)
    }

    /// The next time a flow ends its latency or (at its current rate) its
    /// transfer, seconds (∞: none).
    fn next_end(&self, now: f64) -> f64 {
        let mut t = self.next_lat_end();
        for f in &self.flows {
            if f.rate > 0.0 {
                t = maxmin::least(t, now + f.remaining.max(0.0) / f.rate);
            }
        }
        t
    }

    /// The next time a flow ends its latency or its transfer, if any
    /// (as of the last [`Net::finish_until`]).
    pub(crate) fn next_event(&self) -> Option<f64> {
        self.next_t.is_finite().then_some(self.next_t)
    }

    /// Advances to `now`, removes the flows that have ended (appending
    /// them to `ended`, in start order) and re-shares the links when a
    /// flow entered or left its bandwidth phase, unless the solver finds
    /// that the change leaves the other flows' rates as they are
    /// ([`maxmin::Solver::keeps_rates_without`],
    /// [`maxmin::Solver::fit_alone`]). Those rates then differ from a new
    /// filling's by rounding and the filling's tolerance (the tests bound
    /// the difference by 1e-9 relative), and so may the transfers' ends
    /// and the makespan.
    pub(crate) fn finish_until(&mut self, now: f64, ended: &mut Vec<Done>) {
        let eps = 1e-12 * now.abs().max(1.0);
        let last = self.last;
        // Re-share when a flow leaves a contended network or a new one does
        // not fit at its bound; otherwise every flow keeps its bound.
        let mut reshare = false;
        let mut changed = false;
        // The rates came from a filling, and the solver can tell whether a
        // change keeps them.
        let mut keep = self.synced && !self.uncontended;
        self.ended.clear();
        self.gone.clear();
        let Net { flows, ended: gone, gone: gone_ids, demand, pool, uncontended, synced, .. } = self;
        flows.retain_mut(|f| {
            let from = last.max(f.lat_end);
            if now > from {
                f.remaining -= f.rate * (now - from);
            }
            let left_s = if f.rate > 0.0 { f.remaining / f.rate } else { f64::INFINITY };
            if f.remaining <= 1e-9 || left_s <= eps {
                gone.push((f.seq, f.done));
                for &(l, w) in &f.links {
                    demand[l as usize] -= w * f.bound;
                }
                pool.push(std::mem::take(&mut f.links));
                if *synced {
                    gone_ids.push(f.id);
                }
                changed = true;
                reshare |= !*uncontended;
                false
            } else {
                true
            }
        });
        if !self.gone.is_empty() {
            keep = keep && self.solver.keeps_rates_without(&self.gone, &self.base);
            for &id in &self.gone {
                self.solver.remove(id);
            }
            if keep {
                self.solver.settle(&self.gone);
            }
        }
        // Flows whose latency is over start using bandwidth (kept in start order).
        while self.pending.peek().is_some_and(|p| p.0 <= now) {
            let Pending(_, _, slot) = self.pending.pop().expect("peeked");
            self.parked_free.push(slot);
            let f = &mut self.parked[slot as usize];
            let mut f = Flow { links: std::mem::take(&mut f.links), ..*f };
            changed = true;
            if f.remaining <= 1e-9 {
                self.ended.push((f.seq, f.done));
                self.pool.push(std::mem::take(&mut f.links));
            } else {
                for &(l, w) in &f.links {
                    let d = &mut self.demand[l as usize];
                    *d += w * f.bound;
                    reshare |= *d > self.base[l as usize] * (1.0 + 1e-12);
                }
                reshare |= !self.uncontended;
                f.rate = f.bound;
                if self.synced {
                    f.id = self.solver.add(f.seq, &f.links, f.bound);
                    if keep {
                        match self.solver.fit_alone(f.id, &self.base) {
                            Some(r) => f.rate = r,
                            None => keep = false,
                        }
                    }
                }
                let at = self.flows.partition_point(|g| g.seq < f.seq);
                self.flows.insert(at, f);
            }
        }
        if !self.ended.is_empty() {
            self.ended.sort_unstable_by_key(|e| e.0);
            ended.extend(self.ended.iter().map(|e| e.1));
        }
        self.last = last.max(now);
        if changed && reshare && !keep {
            self.share(now);
            return;
        }
        // Either the other flows keep their rates and the new ones got
        // theirs (`keep`; with every flow at its bound, no link is short),
        // or no flow is short of its bound: rates are the bounds.
        self.next_t = self.next_end(now);
        if keep && self.flows.iter().all(|f| f.rate >= f.bound * (1.0 - 1e-12)) {
            self.uncontended = true;
        }
        if self.synced && self.flows.len() <= 1 && (!keep || self.uncontended) {
            self.solver.clear();
            self.synced = false;
        }
    }
}

#[cfg(test)]
mod tests;

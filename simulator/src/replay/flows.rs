//! Flow-level link sharing for the replay: the transfers in flight
//! between hosts, their max-min fair rates, and when the next one ends
//! (semantics in [`crate::network::FlowSharing`]).

use crate::network::FlowSharing;

mod heap;
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

/// A transfer: in its latency phase (waiting in `Net::pending`), then in
/// its bandwidth phase (in the solver, its end date in `Net::dates`).
#[derive(Debug, Clone, Default)]
struct Flow {
    /// (link, weight) pairs: forward links weigh 1, reverse ones the crosstraffic.
    links: Vec<(u32, f64)>,
    /// Bound, bytes left as of `t_last`, and rate in the sharing's units
    /// ([`Net::park`]).
    bound: f64,
    remaining: f64,
    rate: f64,
    /// Simulated time up to which `remaining` is accounted, seconds.
    t_last: f64,
    done: Option<Done>,
    /// Start order.
    seq: u64,
}

/// A flow in its latency phase: `(lat_end, seq)` and its id, ordered for
/// a min-heap by `(lat_end, seq)`.
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
///
/// Bytes left are brought up to date lazily, as SimGrid's `network/optim:Lazy`
/// does: only when a flow's rate changes, a change that only the flows of
/// a component touched by an arrival or a departure can see
/// ([`maxmin::Solver::solve`]); each flow's end date waits in a heap.
/// An event costs the flows it ends, starts and touches, not the flows
/// in flight.
#[derive(Debug)]
pub(crate) struct Net {
    model: FlowSharing,
    /// Every flow, by id, and the free ids.
    flows: Vec<Flow>,
    free: Vec<u32>,
    /// Flows in their latency phase (they use no bandwidth), by end of latency.
    pending: std::collections::BinaryHeap<Pending>,
    /// Flows in their bandwidth phase, by the date their transfer ends
    /// at their current rate.
    dates: heap::Dates,
    /// Flows started so far.
    seq: u64,
    // Scratch: ended flows with their start order; flows whose rate may
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
            seq: 0,
            ended: Vec::new(),
            changed: Vec::new(),
            base,
            solver: maxmin::Solver::new(links),
            route: Default::default(),
            model,
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
        let id = self.take_id();
        let links = &mut self.flows[id as usize].links;
        links.extend(route.iter().map(|&l| (l, 1.0)));
        let x = self.model.crosstraffic;
        if x > 0.0 {
            links.extend(back.iter().map(|&l| (l, x)));
        }
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
        self.flows[id as usize].links.extend(links.into_iter().flatten().map(|l| (l, f)));
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

    /// A free flow id, its link list empty (kept from its last use).
    fn take_id(&mut self) -> u32 {
        let id = self.free.pop().unwrap_or_else(|| {
            self.flows.push(Flow::default());
            (self.flows.len() - 1) as u32
        });
        self.flows[id as usize].links.clear();
        id
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
            f.links.iter_mut().for_each(|l| l.1 /= penalty);
        }
        f.bound = bound * inv_f * penalty;
        f.remaining = (bytes as f64 + self.model.header_bytes as f64) * inv_f * penalty;
        (f.rate, f.t_last, f.done, f.seq) = (0.0, lat_end, Some(done), self.seq);
        self.pending.push(Pending(lat_end, self.seq, id));
        lat_end
    }

    /// Ends flow `id`: its id is free and its completion is in `ended`.
    fn end(&mut self, id: u32) {
        let f = &mut self.flows[id as usize];
        self.ended.push((f.seq, f.done.take().expect("a flow in flight")));
        self.free.push(id);
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
        while let Some((_, id)) = self.dates.peek() {
            let f = &self.flows[id as usize];
            let left = if now > f.t_last { f.remaining - f.rate * (now - f.t_last) } else { f.remaining };
            if left > 1e-9 && left / f.rate > eps {
                break;
            }
            self.dates.remove(id);
            self.solver.remove(id);
            self.end(id);
        }
        // Flows whose latency is over start using bandwidth.
        while self.pending.peek().is_some_and(|p| p.0 <= now) {
            let Pending(_, seq, id) = self.pending.pop().expect("peeked");
            let f = &mut self.flows[id as usize];
            if f.remaining <= 1e-9 {
                self.end(id);
            } else {
                f.t_last = now;
                self.solver.add(id, seq, &f.links, f.bound);
            }
        }
        self.changed.clear();
        self.solver.solve(&self.base, &mut self.changed);
        for &id in &self.changed {
            let r = self.solver.rate(id);
            let f = &mut self.flows[id as usize];
            if r.to_bits() == f.rate.to_bits() {
                continue;
            }
            if now > f.t_last {
                f.remaining -= f.rate * (now - f.t_last);
            }
            (f.t_last, f.rate) = (now, r);
            if r > 0.0 {
                self.dates.set(id, f.seq, now + f.remaining.max(0.0) / r);
            } else {
                self.dates.remove(id);
            }
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

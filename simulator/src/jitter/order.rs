//! A barrier's pass down its tree in trace order (jitSim §3.6), for tasks
//! that read whole traces.
//!
//! After the root's release at time `R`, a task whose parent's message
//! reaches it at `R + a_i` (`a_i`: the tree's message costs without
//! jitter) and whose receive and sends meet no event leaves at `R + d_i`.
//! Its trace position on the way down is then `(offset_i + a_i + R) mod
//! period`, so tasks sorted once by `(offset_i + a_i) mod period` stay
//! sorted, rotated by `R`, in every phase. One pass in that order over each
//! trace finds the tasks that leave on time and stretches their next
//! compute with event pointers that only move forward. The pass down the
//! tree in task order then takes those results for every task whose
//! parent's message arrives at `R + a_i`, and stretches the others block by
//! block (a task that meets jitter on the way down, and mostly its
//! subtree); a leaf then sends its message of the next barrier up, which
//! depends on nothing else. The results are those of [`collective::up`]
//! and [`collective::down`] followed by the compute, to the cycle.

use super::collective::{self, Exit, FixedLinks, MIN_LEN};
use super::engine::Tasks;
use super::par::*;
use super::track::{After, Quiet, Track};

/// Tasks per chunk of a pass in trace order.
const CHUNK: usize = 4096;
/// The pass in trace order is kept while at least 1/`WORTH` of the tasks
/// leave on time (with more jitter nearly every task is below one that met
/// some, and the pass only adds work); otherwise it is tried again after
/// `RETRY` phases.
const WORTH: u64 = 4;
const RETRY: u32 = 32;

/// A barrier or reduce-bcast tree with its tasks in trace order.
pub(crate) struct TreeOrder {
    /// Tree arity.
    k: u64,
    /// Message costs.
    links: FixedLinks,
    /// Per task: arrival of its parent's message after the root's release, cycles, without jitter (root: 0).
    a: Vec<u64>,
    /// Per task: its exit after the root's release, cycles, without jitter.
    d: Vec<u64>,
    /// Per track: its tasks in trace order.
    groups: Vec<Group>,
    /// Per task: its place in `out`.
    slot: Vec<u32>,
    /// Per place: the outcome of the pass in trace order.
    out: Vec<After>,
    /// Per task: its outcome, gathered from `out` in one tight pass (many loads in flight).
    by_task: Vec<After>,
    /// Whether the leaves have sent their message up for the current phase
    /// (they do so right after their compute in [`TreeOrder::down`]).
    leaves_sent: bool,
    /// Phases to go down the tree task by task before trying the trace order again.
    skip: u32,
}

/// The tasks of one track, sorted by `(offset + a) mod period`.
struct Group {
    /// The sorted keys, cycles.
    keys: Vec<u64>,
    /// `d − a` of each: receive and sends, cycles.
    chain: Vec<u64>,
    /// First place of the group in `out`.
    base: usize,
}

impl TreeOrder {
    /// Orders `offsets.len()` tasks (task `i` reads track `i mod tracks.len()`
    /// from `offsets[i]`, whole) in a `k`-ary tree with message costs `links`.
    pub(crate) fn new(tracks: &[Track], offsets: &[u64], links: FixedLinks, k: u64) -> TreeOrder {
        let n = offsets.len();
        let (mut a, mut d) = (vec![0u64; n], vec![0u64; n]);
        for i in 0..n {
            let iu = i as u64;
            let mut x = a[i] + if i > 0 { links.get((iu - 1) / k, iu).recv } else { 0 };
            for c in (k * iu + 1)..=(k * iu + k).min(n as u64 - 1) {
                let l = links.get(iu, c);
                x += l.send;
                a[c as usize] = x + l.wire;
            }
            d[i] = x;
        }
        let nt = tracks.len();
        let mut slot = vec![0u32; n];
        let mut groups = Vec::with_capacity(nt);
        let mut base = 0;
        for (g, track) in tracks.iter().enumerate() {
            let p = track.period();
            let mut v: Vec<(u64, u32)> = (g..n).step_by(nt).map(|i| ((offsets[i] % p + a[i] % p) % p, i as u32)).collect();
            v.par_sort_unstable();
            for (j, &(_, i)) in v.iter().enumerate() {
                slot[i as usize] = (base + j) as u32;
            }
            let keys = v.iter().map(|&(q, _)| q).collect();
            let chain = v.iter().map(|&(_, i)| d[i as usize] - a[i as usize]).collect();
            groups.push(Group { keys, chain, base });
            base += v.len();
        }
        TreeOrder {
            k,
            links,
            a,
            d,
            groups,
            slot,
            out: vec![After::default(); n],
            by_task: vec![After::default(); n],
            leaves_sent: false,
            skip: 0,
        }
    }

    /// One barrier over `ts` (see [`collective::run`]): up the tree, then
    /// down it; with `next_work` (cycles) each task then computes that much
    /// from its exit.
    pub(crate) fn run(&mut self, tracks: &[Track], ts: &mut Tasks<'_>, next_work: Option<u64>) -> Exit {
        let links = self.links;
        let done = if self.leaves_sent { collective::first_leaf(ts.n(), self.k) } else { ts.n() };
        collective::up(ts, self.k, |x, y| links.get(x, y), done);
        self.leaves_sent = false;
        let Some(work) = next_work.filter(|_| self.skip == 0) else {
            self.skip = self.skip.saturating_sub(1);
            let (end, longest) = collective::down(ts, self.k, |x, y| links.get(x, y), next_work);
            return Exit { end, next_compute_max: next_work.map(|_| longest) };
        };
        let release = ts.t[0];
        self.in_trace_order(tracks, release, work);
        let out = &self.out;
        self.by_task.par_iter_mut().zip(self.slot.par_iter()).with_min_len(MIN_LEN).for_each(|(b, &s)| *b = out[s as usize]);
        let (end, longest, on_time) = self.down(ts, release, work);
        if on_time * WORTH < ts.n() {
            self.skip = RETRY;
        }
        self.leaves_sent = true;
        Exit { end, next_compute_max: Some(longest) }
    }

    /// Fills `out`: each task's way down and next compute, assuming its
    /// ancestors left on time after a release at `release`.
    fn in_trace_order(&mut self, tracks: &[Track], release: u64, work: u64) {
        for (g, track) in self.groups.iter().zip(tracks) {
            let p = track.period();
            let r = release % p;
            // Keys at or past `p − r` wrap to the front: positions ascend from `split` on, then from 0.
            let split = g.keys.partition_point(|&q| q < p - r);
            let m = g.keys.len();
            let (front, back) = self.out[g.base..g.base + m].split_at_mut(split);
            back.par_chunks_mut(CHUNK)
                .zip(g.keys[split..].par_chunks(CHUNK))
                .zip(g.chain[split..].par_chunks(CHUNK))
                .for_each(|((o, q), c)| track.chain_then_compute(|j| q[j] - (p - r), c, work, o));
            front
                .par_chunks_mut(CHUNK)
                .zip(g.keys[..split].par_chunks(CHUNK))
                .zip(g.chain[..split].par_chunks(CHUNK))
                .for_each(|((o, q), c)| track.chain_then_compute(|j| q[j] + r, c, work, o));
        }
    }

    /// The pass down the tree after a release at `release`, then `work`
    /// cycles of compute per task: the results of the pass in trace order
    /// where they hold, block by block elsewhere. Those results hold for a
    /// task whose parent's message arrives at `release + a` (whether or not
    /// the parent left on time) and whose chain met no event. A leaf then
    /// sends its message of the next barrier up the tree (its part of
    /// [`collective::up`], which depends on nothing else). Returns the
    /// latest exit and the longest compute, cycles, and the number of tasks
    /// that took the results of the pass in trace order.
    fn down(&self, ts: &mut Tasks<'_>, release: u64, work: u64) -> (u64, u64, u64) {
        let (n, k, links) = (ts.n(), self.k, self.links);
        let (mut end, mut longest, mut on_time) = (0u64, 0u64, 0u64);
        for w in collective::levels(n, k).windows(2) {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            let (head, tail) = ts.arr.split_at_mut(hi);
            let own = &mut head[lo..];
            let env = ts.env;
            let nchild = tail.len().min((hi - lo) * k as usize);
            let with_children = nchild.div_ceil(k as usize);
            let (a, d) = (&self.a, &self.d);
            // Task `i` with clock `t`, cursor `h`, its parent's message at `arr`
            // and its children's slots `kids`; `s` from the pass in trace order.
            let task = |i: u64, t: &mut u64, h: &mut Quiet, arr: &mut u64, kids: &mut [u64], s: After| {
                let iu = i as usize;
                let (exit, c, on_time) = if (i == 0 || *arr == release + a[iu]) && !s.met() {
                    let first = (k * i + 1) as usize;
                    for (m, slot) in kids.iter_mut().enumerate() {
                        *slot = release + a[first + m];
                    }
                    let exit = release + d[iu];
                    *h = Quiet::ahead(exit + s.dur, s.ahead, s.k);
                    (exit, exit + s.dur, 1)
                } else {
                    let mut x = *t;
                    if i > 0 {
                        x = env.stretch(i, h, x.max(*arr), links.get(collective::parent(i, k), i).recv);
                    }
                    for (m, slot) in kids.iter_mut().enumerate() {
                        let l = links.get(i, k * i + 1 + m as u64);
                        x = env.stretch(i, h, x, l.send);
                        *slot = x + l.wire;
                    }
                    (x, env.stretch(i, h, x, work), 0)
                };
                *t = c;
                if kids.is_empty() && i > 0 {
                    let l = links.get(i, collective::parent(i, k));
                    *t = env.stretch(i, h, c, l.send);
                    *arr = *t + l.wire;
                }
                (exit, c - exit, on_time)
            };
            let inner = ts.t[lo..lo + with_children]
                .par_iter_mut()
                .zip(ts.cursors[lo..lo + with_children].par_iter_mut())
                .zip(own[..with_children].par_iter_mut())
                .zip(tail[..nchild].par_chunks_mut(k as usize))
                .zip(self.by_task[lo..lo + with_children].par_iter())
                .enumerate()
                .with_min_len(MIN_LEN / k as usize)
                .map(|(j, ((((t, h), arr), kids), &s))| task((lo + j) as u64, t, h, arr, kids, s));
            let inner = max_max_sum(inner);
            let leaves = ts.t[lo + with_children..hi]
                .par_iter_mut()
                .zip(ts.cursors[lo + with_children..hi].par_iter_mut())
                .zip(own[with_children..].par_iter_mut())
                .zip(self.by_task[lo + with_children..hi].par_iter())
                .enumerate()
                .with_min_len(MIN_LEN)
                .map(|(j, (((t, h), arr), &s))| task((lo + with_children + j) as u64, t, h, arr, &mut [], s));
            let leaves = max_max_sum(leaves);
            end = end.max(inner.0).max(leaves.0);
            longest = longest.max(inner.1).max(leaves.1);
            on_time += inner.2 + leaves.2;
        }
        (end, longest, on_time)
    }
}

#[cfg(test)]
mod tests {
    use super::super::collective::{latency_model, Net};
    use super::super::engine::splitmix;
    use super::super::reference::{random_trace, walk, HZ};
    use super::*;

    /// Every task the pass in trace order lets through, stretched block by
    /// block over the raw trace, leaves at `release + d` and computes for the
    /// duration it gives, and the quiet cycles it gives after the compute hold no event.
    #[test]
    fn trace_order_equals_block_by_block_stretches() {
        let (mut on_time, mut met) = (0, 0);
        for case in 0..300u64 {
            let seed = splitmix(0x0dd, case);
            let r = |i: u64| splitmix(seed ^ 0x5a, i);
            let traces: Vec<_> = (0..1 + r(0) % 3).map(|j| random_trace(splitmix(seed, j))).collect();
            let tracks: Vec<Track> = traces.iter().map(|t| Track::new("r", t, HZ, None).unwrap()).collect();
            let nt = tracks.len() as u64;
            let n = 1 + r(1) % 200;
            let k = 2 + r(2) % 3;
            let offsets: Vec<u64> = (0..n).map(|i| r(100 + i) % tracks[(i % nt) as usize].period()).collect();
            let net = Net {
                intra: latency_model((r(3) % 8) as f64 / HZ),
                inter: latency_model((r(4) % 20) as f64 / HZ),
                cores_per_node: 1 + r(5) % 3,
                hz: HZ,
            };
            let mut order = TreeOrder::new(&tracks, &offsets, net.fixed(0), k);
            // Each track's tasks, read in trace order, are sorted by key.
            for g in &order.groups {
                assert!(g.keys.windows(2).all(|w| w[0] <= w[1]), "case {case}");
            }
            for rep in 0..4 {
                let p0 = tracks[0].period();
                let release = r(10 + rep) % (3 * p0);
                let work = 1 + r(20 + rep) % (2 * p0);
                order.in_trace_order(&tracks, release, work);
                for i in 0..n {
                    let g = (i % nt) as usize;
                    let s = |t: u64, w: u64| walk(&traces[g], offsets[i as usize], tracks[g].period(), t, w);
                    let out = order.out[order.slot[i as usize] as usize];
                    if out.met() {
                        met += 1;
                        continue;
                    }
                    on_time += 1;
                    let links = order.links;
                    let mut x = release + order.a[i as usize];
                    if i > 0 {
                        x = s(x, links.get(collective::parent(i, k), i).recv);
                    }
                    for c in (k * i + 1)..=(k * i + k).min(n - 1) {
                        x = s(x, links.get(i, c).send);
                    }
                    let ctx = format!("case {case} rep {rep} task {i}");
                    assert_eq!(x, release + order.d[i as usize], "{ctx}");
                    let end = s(x, work);
                    assert_eq!(end - x, out.dur, "{ctx}");
                    let ahead = out.ahead as u64;
                    for w in [1, ahead / 2, ahead].into_iter().filter(|&w| w > 0 && w <= ahead) {
                        assert_eq!(s(end, w), end + w, "{ctx}: {w} quiet cycles");
                    }
                }
            }
        }
        assert!(on_time > 1000 && met > 1000, "both outcomes are exercised: {on_time} on time, {met} met");
    }
}

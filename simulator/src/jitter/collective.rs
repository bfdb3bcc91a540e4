//! The synchronization at the end of each phase (jitSim §3.6, and the
//! collectives its §6 leaves as future work), with every send and receive
//! stretched by the sending or receiving task's jitter.
//!
//! Trees are complete k-ary trees over task ids (root 0, children of `i` are
//! `k·i + 1 ..= k·i + k`), processed level by level in parallel.
//! Tasks are placed sequentially on cores, then nodes: task `i` is on node
//! `i / cores_per_node`.

use super::par::*;

use super::tasks::Tasks;
use super::track::Quiet;
use crate::network::P2pModel;

/// What ends each phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// No communication: the next phase starts when the slowest task finishes (jitSim Fig. 3).
    None,
    /// Pre-barrier up a k-ary tree, then post-barrier down it (jitSim §3.6, Fig. 6); 0-byte messages.
    Barrier,
    /// Recursive doubling (with the usual fold-in of the ranks above the largest power of two).
    Allreduce,
    /// Allreduce as a reduce up the k-ary tree then a bcast down it (the barrier's shape, with payload).
    ReduceBcast,
    /// Broadcast from task 0 down the k-ary tree. Not a synchronization: a
    /// task leaves once it has its message, so tasks drift apart.
    Bcast,
    /// Gather to task 0 up the k-ary tree; each message carries its sender's
    /// subtree (`bytes` × members). Not a synchronization: a task leaves after its send.
    Gather,
}

/// CPU and wire cost of one message, cycles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkCost {
    /// Sender CPU time, exposed to the sender's jitter.
    pub send: u64,
    /// Receiver CPU time, exposed to the receiver's jitter.
    pub recv: u64,
    /// Time on the wire, not exposed to jitter.
    pub wire: u64,
}

/// Message costs within and across nodes.
#[derive(Debug, Clone)]
pub struct Net {
    /// Model within a node (shared memory).
    pub intra: P2pModel,
    /// Model across nodes.
    pub inter: P2pModel,
    /// Tasks per node (≥ 1).
    pub cores_per_node: u64,
    /// Cycles per second of the simulation's time base.
    pub hz: f64,
}

/// A latency-only model: `transfer(bytes) = latency_s` (negative or NaN read as 0).
pub fn latency_model(latency_s: f64) -> P2pModel {
    // Built through serde so that fields added to the model later take their defaults.
    let lat = if latency_s.is_finite() && latency_s > 0.0 { latency_s } else { 0.0 };
    let text =
        format!("eager_threshold_bytes = {}\ntransfer = [{{ intercept_s = {lat:e}, bandwidth_bytes_per_s = inf }}]\n", u64::MAX >> 1);
    toml::from_str(&text).expect("a latency-only model is valid TOML")
}

impl Net {
    /// Cost of a `bytes`-byte message between tasks `a` and `b`. With the
    /// model's `send_overhead`/`recv_overhead` (SMPI `smpi/os`, `smpi/or`)
    /// those are the CPU parts and the rest of `transfer` is wire time;
    /// without them `transfer` is split evenly into send and receive CPU time,
    /// as jitSim §3.2 halves the MPI stack latency.
    pub fn link(&self, a: u64, b: u64, bytes: u64) -> LinkCost {
        let m = if a / self.cores_per_node == b / self.cores_per_node { &self.intra } else { &self.inter };
        let cyc = |s: f64| (s * self.hz).round().max(0.0) as u64;
        let total = m.transfer.eval(bytes);
        let (os, or) = (m.send_overhead.eval(bytes), m.recv_overhead.eval(bytes));
        if os + or <= 0.0 {
            LinkCost { send: cyc(total / 2.0), recv: cyc(total / 2.0), wire: 0 }
        } else {
            LinkCost { send: cyc(os), recv: cyc(or), wire: cyc((total - os - or).max(0.0)) }
        }
    }
}

/// [`Net::link`] at one message size, precomputed.
#[derive(Debug, Clone, Copy)]
pub struct FixedLinks {
    /// Cost within a node.
    pub intra: LinkCost,
    /// Cost across nodes.
    pub inter: LinkCost,
    /// Tasks per node.
    pub cores_per_node: u64,
    /// log₂ of `cores_per_node` when it is a power of two (node ids by shift, not division).
    shift: Option<u32>,
}

impl FixedLinks {
    /// Cost of a message from task `a` to task `b`.
    #[inline]
    pub fn get(&self, a: u64, b: u64) -> LinkCost {
        let same = match self.shift {
            Some(s) => a >> s == b >> s,
            None => a / self.cores_per_node == b / self.cores_per_node,
        };
        if same {
            self.intra
        } else {
            self.inter
        }
    }
}

impl Net {
    /// Costs of `bytes`-byte messages, precomputed for the hot loops.
    pub fn fixed(&self, bytes: u64) -> FixedLinks {
        let cpn = self.cores_per_node;
        let shift = cpn.is_power_of_two().then(|| cpn.ilog2());
        FixedLinks { intra: self.link(0, 0, bytes), inter: self.link(0, cpn, bytes), cores_per_node: cpn, shift }
    }
}

/// First task id of each level of a complete `k`-ary tree over `n` tasks, plus `n`.
pub(crate) fn levels(n: u64, k: u64) -> Vec<u64> {
    let mut v = vec![0];
    let (mut start, mut width) = (0u64, 1u64);
    while start < n {
        start = (start + width).min(n);
        width = width.saturating_mul(k);
        v.push(start);
    }
    v
}

/// Nodes in the subtree of `i` in a complete `k`-ary tree over `n` tasks.
fn subtree(i: u64, n: u64, k: u64) -> u64 {
    let (mut lo, mut hi, mut count) = (i, i, 0);
    while lo < n {
        count += hi.min(n - 1) - lo + 1;
        lo = lo * k + 1;
        hi = hi * k + k;
    }
    count
}

/// What [`run`] leaves behind.
pub(crate) struct Exit {
    /// Latest exit from the collective over tasks, cycles.
    pub end: u64,
    /// When `run` also did the next phase's compute: the longest compute part over tasks, cycles.
    pub next_compute_max: Option<u64>,
}

/// Runs `c` once: `ts.t[i]` enters as task `i`'s arrival, leaves as its exit, cycles.
/// `bytes` is the payload of each message (gather: per subtree member).
/// With `next_work` (cycles), a collective that ends with a pass down the
/// tree (barrier, reduce-bcast, bcast) also starts the next phase's compute
/// of every task at its exit in that pass, and `ts.t[i]` leaves as the end
/// of that compute; the others leave it to the caller.
pub(crate) fn run(c: Collective, ts: &mut Tasks<'_>, net: &Net, arity: u64, bytes: u64, next_work: Option<u64>) -> Exit {
    let zero = net.fixed(0);
    let fixed = net.fixed(bytes);
    let n = ts.n();
    let (end, next) = match c {
        Collective::Barrier => {
            up(ts, arity, |a, b| zero.get(a, b), n);
            down(ts, arity, |a, b| zero.get(a, b), next_work)
        }
        Collective::ReduceBcast => {
            up(ts, arity, |a, b| fixed.get(a, b), n);
            down(ts, arity, |a, b| fixed.get(a, b), next_work)
        }
        Collective::Bcast => down(ts, arity, |a, b| fixed.get(a, b), next_work),
        Collective::None | Collective::Gather | Collective::Allreduce => {
            match c {
                Collective::Gather => {
                    up(ts, arity, |a, b| net.link(a, b, bytes * subtree(a, n, arity)), n);
                }
                Collective::Allreduce => {
                    if let Some((end, longest)) = allreduce(ts, |a, b| fixed.get(a, b), next_work) {
                        return Exit { end, next_compute_max: Some(longest) };
                    }
                }
                _ => {}
            }
            let end = ts.t.par_iter().with_min_len(MIN_LEN).copied().max().unwrap_or(0);
            return Exit { end, next_compute_max: None };
        }
    };
    Exit { end, next_compute_max: next_work.map(|_| next) }
}

pub(crate) const MIN_LEN: usize = 2048;

/// Parent of task `i` (> 0) in a `k`-ary tree.
#[inline]
pub(crate) fn parent(i: u64, k: u64) -> u64 {
    if k.is_power_of_two() {
        (i - 1) >> k.trailing_zeros()
    } else {
        (i - 1) / k
    }
}

/// Pre-barrier / reduce: each task receives from its children in order,
/// then sends to its parent. Tasks from `done` on have already sent
/// (their `ts.t` and `ts.arr` hold the result); pass `ts.n()` for none.
pub(crate) fn up(ts: &mut Tasks<'_>, k: u64, link: impl Fn(u64, u64) -> LinkCost + Sync, done: u64) {
    let n = ts.n();
    let lv = levels(n, k);
    for w in lv.windows(2).rev() {
        let (a, b) = (w[0] as usize, w[1].min(done.max(w[0])) as usize);
        let (head, tail) = ts.arr.split_at_mut(b);
        let tail: &[u64] = tail;
        let env = ts.env;
        ts.t[a..b]
            .par_iter_mut()
            .zip(ts.cursors[a..b].par_iter_mut())
            .zip(head[a..b].par_iter_mut())
            .enumerate()
            .with_min_len(MIN_LEN)
            .for_each(|(j, ((t, h), arr))| {
                let i = (a + j) as u64;
                let mut x = *t;
                for c in (k * i + 1)..=(k * i + k).min(n - 1) {
                    let l = link(c, i);
                    x = env.stretch(i, h, x.max(tail[(c as usize) - b]), l.recv);
                }
                if i > 0 {
                    let l = link(i, parent(i, k));
                    x = env.stretch(i, h, x, l.send);
                    *arr = x + l.wire;
                }
                *t = x;
            });
    }
}

/// Post-barrier / bcast: each task receives from its parent, then sends to
/// its children in order; with `then` (cycles) it next computes that much
/// from its exit. Returns the latest exit and the longest compute part, cycles.
pub(crate) fn down(ts: &mut Tasks<'_>, k: u64, link: impl Fn(u64, u64) -> LinkCost + Sync, then: Option<u64>) -> (u64, u64) {
    let n = ts.n();
    let lv = levels(n, k);
    let (mut end, mut longest) = (0u64, 0u64);
    for w in lv.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        let (head, tail) = ts.arr.split_at_mut(b);
        let head: &[u64] = head;
        let env = ts.env;
        // Task `i` leaves at `x`: its compute, if any, starts there.
        let leave = |i: u64, x: u64, h: &mut Quiet, t: &mut u64| match then {
            Some(work) => {
                *t = env.stretch(i, h, x, work);
                (x, *t - x)
            }
            None => {
                *t = x;
                (x, 0)
            }
        };
        let nchild = tail.len().min((b - a) * k as usize);
        let with_children = nchild.div_ceil(k as usize);
        let recv = |i: u64, x: u64, h: &mut Quiet| {
            if i == 0 {
                return x;
            }
            let l = link(parent(i, k), i);
            env.stretch(i, h, x.max(head[i as usize]), l.recv)
        };
        let inner = ts.t[a..a + with_children]
            .par_iter_mut()
            .zip(ts.cursors[a..a + with_children].par_iter_mut())
            .zip(tail[..nchild].par_chunks_mut(k as usize))
            .enumerate()
            .with_min_len(MIN_LEN / k as usize)
            .map(|(j, ((t, h), kids))| {
                let i = (a + j) as u64;
                let mut x = recv(i, *t, h);
                for (m, slot) in kids.iter_mut().enumerate() {
                    let l = link(i, k * i + 1 + m as u64);
                    x = env.stretch(i, h, x, l.send);
                    *slot = x + l.wire;
                }
                leave(i, x, h, t)
            });
        let inner = max_pair(inner);
        let leaves = ts.t[a + with_children..b]
            .par_iter_mut()
            .zip(ts.cursors[a + with_children..b].par_iter_mut())
            .enumerate()
            .with_min_len(MIN_LEN)
            .map(|(j, (t, h))| {
                let i = (a + with_children + j) as u64;
                let x = recv(i, *t, h);
                leave(i, x, h, t)
            });
        let leaves = max_pair(leaves);
        end = end.max(inner.0).max(leaves.0);
        longest = longest.max(inner.1).max(leaves.1);
    }
    (end, longest)
}

/// What a task does after its receive in a round of [`allreduce`].
#[derive(Clone, Copy)]
enum Then {
    /// Send its message of the round with this mask.
    Send(u64),
    /// Leave the allreduce.
    Leave,
    /// Leave, compute this many cycles and send its first message of the next allreduce.
    Compute(u64),
}

/// Allreduce by recursive doubling; the `n − p2` tasks above the largest
/// power of two `p2` first fold into tasks `0..n − p2` and get the result
/// back at the end. In the round of mask `m` tasks `i` and `i ^ m` send to
/// each other, then receive; one pass over the pairs does a round's
/// receives and the next round's sends. If `ts.sent`, the first round's
/// sends are done. With `then` (cycles) and `n` a power of two, each task
/// computes `then` from its exit and sends its first message of the next
/// allreduce, `ts.sent` is set and the latest exit and the longest compute
/// (cycles) are returned.
fn allreduce(ts: &mut Tasks<'_>, link: impl Fn(u64, u64) -> LinkCost + Sync, then: Option<u64>) -> Option<(u64, u64)> {
    let n = ts.n();
    let p2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
    let extra = (n - p2) as usize;
    let env = ts.env;
    // Each pass: tasks in `senders` send to `partner(i)`; tasks in `receivers` receive from it.
    let send_pass = |ts: &mut Tasks<'_>, range: std::ops::Range<usize>, partner: &(dyn Fn(u64) -> u64 + Sync)| {
        ts.t[range.clone()]
            .par_iter_mut()
            .zip(ts.cursors[range.clone()].par_iter_mut())
            .zip(ts.arr[range.clone()].par_iter_mut())
            .enumerate()
            .with_min_len(MIN_LEN)
            .for_each(|(j, ((t, h), arr))| {
                let i = (range.start + j) as u64;
                let l = link(i, partner(i));
                *t = env.stretch(i, h, *t, l.send);
                *arr = *t + l.wire;
            });
    };
    let recv_pass = |ts: &mut Tasks<'_>, range: std::ops::Range<usize>, partner: &(dyn Fn(u64) -> u64 + Sync)| {
        let arr: &[u64] = ts.arr;
        ts.t[range.clone()].par_iter_mut().zip(ts.cursors[range.clone()].par_iter_mut()).enumerate().with_min_len(MIN_LEN).for_each(
            |(j, (t, h))| {
                let i = (range.start + j) as u64;
                let p = partner(i);
                let l = link(p, i);
                *t = env.stretch(i, h, (*t).max(arr[p as usize]), l.recv);
            },
        );
    };
    let p2u = p2 as usize;
    if extra > 0 {
        send_pass(ts, p2u..n as usize, &|i| i - p2);
        recv_pass(ts, 0..extra, &|i| i + p2);
    }
    if p2 > 1 && !ts.sent {
        send_pass(ts, 0..p2u, &|i| i ^ 1);
    }
    ts.sent = false;
    let mut out = None;
    let mut mask = 1u64;
    while mask < p2 {
        let step = match then {
            _ if mask << 1 < p2 => Then::Send(mask << 1),
            Some(work) if extra == 0 => Then::Compute(work),
            _ => Then::Leave,
        };
        let (end, longest) = round(ts, p2u, mask, step, &link);
        if let Then::Compute(_) = step {
            ts.sent = true;
            out = Some((end, longest));
        }
        mask <<= 1;
    }
    if extra > 0 {
        send_pass(ts, 0..extra, &|i| i + p2);
        recv_pass(ts, p2u..n as usize, &|i| i - p2);
    }
    out
}

/// One round of [`allreduce`] over tasks `0..p2`: each pair `(i, i + mask)`
/// receives from each other, then does `step`. Returns the latest exit and
/// the longest compute, cycles (0 unless `step` is [`Then::Compute`]).
fn round(ts: &mut Tasks<'_>, p2: usize, mask: u64, step: Then, link: &(impl Fn(u64, u64) -> LinkCost + Sync)) -> (u64, u64) {
    let env = ts.env;
    let (m, block) = (mask as usize, 2 * mask as usize);
    let chunk = block.max(MIN_LEN);
    let pairs = ts.t[..p2]
        .par_chunks_mut(chunk)
        .zip(ts.cursors[..p2].par_chunks_mut(chunk))
        .zip(ts.arr[..p2].par_chunks_mut(chunk))
        .enumerate()
        .map(|(c, ((t, h), arr))| {
            let base = (c * chunk) as u64;
            let (mut end, mut longest) = (0u64, 0u64);
            for b in (0..t.len()).step_by(block) {
                for x in b..b + m {
                    let y = x + m;
                    let (i, j) = (base + x as u64, base + y as u64);
                    let got = [(x, i, arr[y], link(j, i).recv), (y, j, arr[x], link(i, j).recv)];
                    for (z, id, from, recv) in got {
                        let q = &mut h[z];
                        let exit = env.stretch(id, q, t[z].max(from), recv);
                        let (at, to) = match step {
                            Then::Send(next) => (exit, id ^ next),
                            Then::Leave => {
                                t[z] = exit;
                                continue;
                            }
                            Then::Compute(work) => {
                                let done = env.stretch(id, q, exit, work);
                                end = end.max(exit);
                                longest = longest.max(done - exit);
                                (done, id ^ 1)
                            }
                        };
                        let l = link(id, to);
                        t[z] = env.stretch(id, q, at, l.send);
                        arr[z] = t[z] + l.wire;
                    }
                }
            }
            (end, longest)
        });
    max_pair(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_shape() {
        assert_eq!(levels(7, 2), vec![0, 1, 3, 7]);
        assert_eq!(levels(1, 2), vec![0, 1]);
        assert_eq!(levels(5, 3), vec![0, 1, 4, 5]);
        assert_eq!((subtree(0, 7, 2), subtree(1, 7, 2), subtree(3, 7, 2)), (7, 3, 1));
        assert_eq!((subtree(1, 5, 2), subtree(2, 5, 2)), (3, 1));
    }

    #[test]
    fn link_splits_latency_like_jitsim() {
        let net = Net { intra: latency_model(1e-6), inter: latency_model(4e-6), cores_per_node: 2, hz: 1e9 };
        assert_eq!(net.link(0, 1, 0), LinkCost { send: 500, recv: 500, wire: 0 });
        assert_eq!(net.link(1, 2, 0), LinkCost { send: 2000, recv: 2000, wire: 0 });
    }
}

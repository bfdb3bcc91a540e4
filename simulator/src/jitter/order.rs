//! A barrier's pass down its tree in trace order (jitSim §3.6), for tasks
//! that read whole traces.
//!
//! After the root's release at time `R`, a task whose parent's message
//! reaches it at `R + a_i` (`a_i`: the tree's message costs without
//! jitter) and whose receive and sends meet no event leaves at `R + d_i`.
//! Its trace position on the way down is then `(offset_i + a_i + R) mod
//! period`, so tasks sorted once by `(offset_i + a_i) mod period` stay
//! sorted, rotated by `R`, in every phase.
//!
//! The pass down the tree goes level by level, each level in chunks of
//! consecutive tasks (in parallel). A chunk's tasks of each trace are
//! sorted once by that key; each phase, one pass over them in trace order
//! (event pointers that only move forward) finds the tasks whose chain
//! meets no event and stretches their next compute, into a buffer the size
//! of the chunk; the pass down the chunk in task order then takes those
//! results for every task whose parent's message arrives at `R + a_i` (the
//! parent marks such a message). A task whose parent's message is late by
//! `δ` (the way down met jitter above it) takes the same results moved by
//! `δ` when its chain still ends before the next event and its compute's
//! end stays within the quiet cycles after it (no search: lateness is short
//! next to the gaps between events). Any other task starts its chain when
//! its parent's message arrives: if the chain meets no event there, it is
//! shifted as a whole (one search of the trace), else stretched block by
//! block. A leaf then sends its message of the next barrier up, which
//! depends on nothing else. The results are those of
//! [`collective::up`] and [`collective::down`] followed by the compute, to
//! the cycle.

use std::cell::RefCell;

use super::collective::{self, Exit, FixedLinks};
use super::engine::{Env, Tasks};
use super::par::*;
use super::track::{After, Quiet, Track};

/// Most tasks per chunk: a chunk's outcomes are read back from the cache by
/// its pass down the tree, and each track's event pointers move past few
/// events per task in its pass in trace order. Unit tests use small
/// chunks, so that their small trees have levels of several chunks.
const CHUNK: usize = if cfg!(test) { 16 } else { 65536 };
/// The pass in trace order is kept while at least 1/`WORTH` of the tasks
/// leave on time (with more jitter nearly every task is below one that met
/// some, and the pass only adds work); otherwise it is tried again after
/// `RETRY` phases.
const WORTH: u64 = 4;
const RETRY: u32 = 32;

/// Marks a parent's message that arrives at `release + a`: the top bit of
/// its time in cycles (times stay far below 2⁶³ cycles).
const IN_STEP: u64 = 1 << 63;

thread_local! {
    /// A chunk's outcomes of the pass in trace order, by task.
    static OUTCOMES: RefCell<Vec<After>> = const { RefCell::new(Vec::new()) };
}

/// A barrier or reduce-bcast tree with its tasks in trace order, chunk by chunk.
pub(crate) struct TreeOrder {
    /// Tree arity.
    k: u64,
    /// Message costs.
    links: FixedLinks,
    /// Number of tasks.
    n: u64,
    /// Chunks of consecutive tasks within one tree level, in task order.
    chunks: Vec<Chunk>,
    /// First chunk of each tree level, plus the number of chunks.
    level_chunks: Vec<usize>,
    /// Chunk by chunk, track by track: the tasks' keys `(offset + a) mod period`, ascending, cycles.
    keys: Vec<u64>,
    /// The task of each key, as its index in its chunk.
    idx: Vec<u32>,
    /// Per task, cycles from the root's release to its parent's message without jitter (`a`).
    a: Vec<u64>,
    /// Whether the leaves have sent their message up for the current phase
    /// (they do so right after their compute in [`TreeOrder::down`]).
    leaves_sent: bool,
    /// Phases to go down the tree without the pass in trace order before trying it again.
    skip: u32,
}

/// Consecutive tasks `lo..hi` of one tree level.
struct Chunk {
    /// First task.
    lo: usize,
    /// One past the last task.
    hi: usize,
    /// Where each track's tasks start in `keys`, plus their end.
    parts: Vec<usize>,
}

impl TreeOrder {
    /// Orders `offsets.len()` tasks (task `i` reads track `i mod tracks.len()`
    /// from `offsets[i]`, whole) in a `k`-ary tree with message costs `links`.
    pub(crate) fn new(tracks: &[Track], offsets: &[u64], links: FixedLinks, k: u64) -> TreeOrder {
        let n = offsets.len();
        let (a, _) = no_jitter_times(n, links, k);
        let (mut chunks, mut level_chunks) = (Vec::new(), Vec::new());
        for w in collective::levels(n as u64, k).windows(2) {
            level_chunks.push(chunks.len());
            for lo in (w[0] as usize..w[1] as usize).step_by(CHUNK) {
                chunks.push(Chunk { lo, hi: (lo + CHUNK).min(w[1] as usize), parts: Vec::new() });
            }
        }
        level_chunks.push(chunks.len());
        let nt = tracks.len();
        let sorted: Vec<Vec<(u64, u32)>> = chunks
            .par_iter()
            .map(|c| {
                let mut v = Vec::with_capacity(c.hi - c.lo);
                for (g, track) in tracks.iter().enumerate() {
                    let p = track.period();
                    let from = v.len();
                    let first = c.lo + (g + nt - c.lo % nt) % nt;
                    v.extend((first..c.hi).step_by(nt).map(|i| ((offsets[i] % p + a[i] % p) % p, (i - c.lo) as u32)));
                    v[from..].sort_unstable();
                }
                v
            })
            .collect();
        let (mut keys, mut idx) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (c, v) in chunks.iter_mut().zip(&sorted) {
            let base = keys.len();
            c.parts.push(base);
            // `v` holds track 0's tasks, then track 1's, ...: a run ends where the track changes.
            let mut g = 0;
            for (j, &(q, x)) in v.iter().enumerate() {
                while (c.lo + x as usize) % nt != g {
                    g += 1;
                    c.parts.push(base + j);
                }
                keys.push(q);
                idx.push(x);
            }
            while c.parts.len() <= nt {
                c.parts.push(keys.len());
            }
        }
        TreeOrder { k, links, n: n as u64, chunks, level_chunks, keys, idx, a, leaves_sent: false, skip: 0 }
    }

    /// One barrier over `ts` (see [`collective::run`]): up the tree, then
    /// down it; with `next_work` (cycles) each task then computes that much
    /// from its exit.
    pub(crate) fn run(&mut self, tracks: &[Track], ts: &mut Tasks<'_>, next_work: Option<u64>) -> Exit {
        let links = self.links;
        let done = if self.leaves_sent { collective::first_leaf(ts.n(), self.k) } else { ts.n() };
        collective::up(ts, self.k, |x, y| links.get(x, y), done);
        self.leaves_sent = false;
        let Some(work) = next_work else {
            let (end, _) = collective::down(ts, self.k, |x, y| links.get(x, y), None);
            return Exit { end, next_compute_max: None };
        };
        let swept = self.skip == 0;
        self.skip = self.skip.saturating_sub(1);
        let (end, longest, on_time) = self.down(tracks, ts, work, swept);
        if swept && on_time * WORTH < ts.n() {
            self.skip = RETRY;
        }
        self.leaves_sent = true;
        Exit { end, next_compute_max: Some(longest) }
    }

    /// The pass in trace order over chunk `c` after a release at
    /// `release`: `out[j]` is the way down and next compute of task
    /// `c.lo + j`, assuming its parent's message arrives at `release + a`
    /// (see [`Track::chain_then_compute`]).
    fn sweep(&self, tracks: &[Track], c: &Chunk, release: u64, work: u64, out: &mut [After]) {
        for (g, track) in tracks.iter().enumerate() {
            let part = c.parts[g]..c.parts[g + 1];
            let (keys, idx) = (&self.keys[part.clone()], &self.idx[part]);
            let chain = |j: usize| self.chain((c.lo + idx[j] as usize) as u64);
            let p = track.period();
            let r = release % p;
            // Keys at or past `p − r` wrap to the front: positions ascend from `split` on, then from 0.
            let split = keys.partition_point(|&q| q < p - r);
            let (kb, ib) = (&keys[split..], &idx[split..]);
            track.chain_then_compute(kb.len(), |j| kb[j] - (p - r), |j| chain(split + j), work, |j, o| out[ib[j] as usize] = o);
            let (kf, i_f) = (&keys[..split], &idx[..split]);
            track.chain_then_compute(kf.len(), |j| kf[j] + r, chain, work, |j, o| out[i_f[j] as usize] = o);
        }
    }

    /// The pass down the tree after the root's release (`ts.t[0]`), then
    /// `work` cycles of compute per task, with the results of the pass in
    /// trace order when `swept`. Those results hold for a task whose
    /// parent's message arrives at `release + a` (whether or not the parent
    /// left on time) and whose chain met no event. A leaf then sends its
    /// message of the next barrier up the tree (its part of
    /// [`collective::up`], which depends on nothing else). Returns the
    /// latest exit and the longest compute, cycles, and the number of tasks
    /// that took the results of the pass in trace order.
    fn down(&self, tracks: &[Track], ts: &mut Tasks<'_>, work: u64, swept: bool) -> (u64, u64, u64) {
        let (n, k) = (ts.n() as usize, self.k as usize);
        let release = ts.t[0];
        let env = ts.env;
        let (mut end, mut longest, mut on_time) = (0u64, 0u64, 0u64);
        for (l, w) in collective::levels(n as u64, k as u64).windows(2).enumerate() {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            let chunks = &self.chunks[self.level_chunks[l]..self.level_chunks[l + 1]];
            let (head, tail) = ts.arr.split_at_mut(hi);
            let nchild = tail.len().min((hi - lo) * k);
            // Each chunk's clocks, cursors, message slots and its children's message slots.
            let mut pieces = Vec::with_capacity(chunks.len());
            let (mut t, mut h, mut arr, mut kids) = (&mut ts.t[lo..hi], &mut ts.cursors[lo..hi], &mut head[lo..], &mut tail[..nchild]);
            for c in chunks {
                let m = c.hi - c.lo;
                let (t0, t1) = std::mem::take(&mut t).split_at_mut(m);
                let (h0, h1) = std::mem::take(&mut h).split_at_mut(m);
                let (a0, a1) = std::mem::take(&mut arr).split_at_mut(m);
                let mk = (m * k).min(kids.len());
                let (k0, k1) = std::mem::take(&mut kids).split_at_mut(mk);
                (t, h, arr, kids) = (t1, h1, a1, k1);
                pieces.push((c, t0, h0, a0, k0));
            }
            let per_chunk = pieces.par_iter_mut().map(|(c, t, h, arr, kids)| {
                OUTCOMES.with(|b| {
                    let mut out = b.borrow_mut();
                    if swept {
                        out.resize(c.hi - c.lo, After::MET);
                        self.sweep(tracks, c, release, work, &mut out);
                    }
                    let s = |j: usize| if swept { out[j] } else { After::MET };
                    self.down_chunk(env, c, release, work, swept, s, t, h, arr, kids)
                })
            });
            let (e, x, o) = max_max_sum(per_chunk);
            end = end.max(e);
            longest = longest.max(x);
            on_time += o;
        }
        (end, longest, on_time)
    }

    /// [`down`](Self::down) over chunk `c`: its tasks' clocks `t`, cursors
    /// `h`, the message slots `arr` of their parents' messages, and the
    /// slots `kids` of their children's (the chunk's leaves send up into
    /// `arr`); `s(j)`: the outcome of the pass in trace order for task `c.lo + j`.
    #[allow(clippy::too_many_arguments)]
    fn down_chunk(
        &self,
        env: Env<'_>,
        c: &Chunk,
        release: u64,
        work: u64,
        swept: bool,
        s: impl Fn(usize) -> After,
        t: &mut [u64],
        h: &mut [Quiet],
        arr: &mut [u64],
        kids: &mut [u64],
    ) -> (u64, u64, u64) {
        let (k, links) = (self.k, self.links);
        let (mut end, mut longest, mut on_time) = (0u64, 0u64, 0u64);
        for j in 0..c.hi - c.lo {
            let i = (c.lo + j) as u64;
            let nk = kids.len();
            let kj = &mut kids[(j * k as usize).min(nk)..((j + 1) * k as usize).min(nk)];
            let recv = if i > 0 { links.get(collective::parent(i, k), i).recv } else { 0 };
            // The parent's message, and whether it arrives at `release + a`.
            let (got, in_step) = match i {
                0 => (t[0], swept),
                _ => (arr[j] & !IN_STEP, arr[j] & IN_STEP != 0),
            };
            // A task's own clock is never later than its parent's message
            // (sent after the parent received this task's message up). A
            // late message (never earlier than `release + a`) reuses the
            // outcome of the pass in trace order when the lateness keeps the
            // chain and compute clear of other events. A chain that met an
            // event at its on-time position most likely meets it a little
            // later too, so it goes block by block at once; any other is
            // shifted as a whole when it meets no event at its own position
            // (one search of its trace). Searches start from the event index
            // the pass in trace order found.
            let on = s(j);
            let late = if in_step { None } else { got.checked_sub(release + self.a[c.lo + j]).and_then(|l| on.later(l)) };
            let (at, o, from_sweep) = match late {
                _ if in_step => (got, on, true),
                Some(o) => (got, o, true),
                None if swept && on.met() => (got, on, false),
                None => (got, env.chain_then_compute(i, got, self.chain(i), work, on.kc), false),
            };
            let leaf = kj.is_empty();
            let (exit, c, mut q) = if !o.met() {
                let mut x = at + recv;
                for (m, slot) in kj.iter_mut().enumerate() {
                    let l = links.get(i, k * i + 1 + m as u64);
                    x += l.send;
                    *slot = (x + l.wire) | if in_step { IN_STEP } else { 0 };
                }
                on_time += from_sweep as u64;
                (x, x + o.dur, Quiet::ahead(x + o.dur, o.ahead, o.k))
            } else {
                let mut q = Quiet::hint(o.kc);
                let mut x = at;
                if i > 0 {
                    x = env.stretch(i, &mut q, x, recv);
                }
                for (m, slot) in kj.iter_mut().enumerate() {
                    let l = links.get(i, k * i + 1 + m as u64);
                    x = env.stretch(i, &mut q, x, l.send);
                    *slot = x + l.wire;
                }
                let c = env.stretch(i, &mut q, x, work);
                (x, c, q)
            };
            end = end.max(exit);
            longest = longest.max(c - exit);
            if !leaf || i == 0 {
                // Inner tasks keep their clock and cursor for the way up.
                t[j] = c;
                h[j] = q;
            } else {
                // A leaf sends its message up now; its clock and cursor are not read again.
                let l = links.get(i, collective::parent(i, k));
                arr[j] = env.stretch(i, &mut q, c, l.send) + l.wire;
            }
        }
        (end, longest, on_time)
    }

    /// Receive and sends of task `i` on the way down without jitter, cycles: `d − a`.
    #[inline]
    fn chain(&self, i: u64) -> u64 {
        let (k, links) = (self.k, self.links);
        let mut x = if i > 0 { links.get(collective::parent(i, k), i).recv } else { 0 };
        for c in (k * i + 1)..(k * i + k + 1).min(self.n) {
            x += links.get(i, c).send;
        }
        x
    }

    /// Every task's outcome of the pass in trace order after a release at `release`.
    #[cfg(test)]
    fn sweep_all(&self, tracks: &[Track], release: u64, work: u64) -> Vec<After> {
        let mut out = vec![After::MET; self.n as usize];
        for c in &self.chunks {
            self.sweep(tracks, c, release, work, &mut out[c.lo..c.hi]);
        }
        out
    }
}

/// Per task of a `k`-ary tree over `n` tasks with message costs `links`,
/// without jitter and after the root's release: the arrival of its
/// parent's message (`a`, root 0) and its exit (`d`), cycles.
fn no_jitter_times(n: usize, links: FixedLinks, k: u64) -> (Vec<u64>, Vec<u64>) {
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
    (a, d)
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
        let (mut on_time, mut met, mut later) = (0, 0, 0);
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
            let order = TreeOrder::new(&tracks, &offsets, net.fixed(0), k);
            let ad = no_jitter_times(n as usize, order.links, k);
            // Each chunk holds each of its tasks once, every track's sorted by key.
            let mut seen = vec![0u32; n as usize];
            for c in &order.chunks {
                for g in 0..nt as usize {
                    let part = c.parts[g]..c.parts[g + 1];
                    assert!(order.keys[part.clone()].windows(2).all(|w| w[0] <= w[1]), "case {case}");
                    for &x in &order.idx[part] {
                        assert_eq!((c.lo + x as usize) % nt as usize, g, "case {case}");
                        seen[c.lo + x as usize] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "case {case}");
            let segments: Vec<u64> = tracks.iter().map(|t| t.period()).collect();
            let env = Env::new(&tracks, &offsets, &segments);
            for rep in 0..4 {
                let p0 = tracks[0].period();
                let release = r(10 + rep) % (3 * p0);
                let work = 1 + r(20 + rep) % (2 * p0);
                let all = order.sweep_all(&tracks, release, work);
                for i in 0..n {
                    let g = (i % nt) as usize;
                    let s = |t: u64, w: u64| walk(&traces[g], offsets[i as usize], tracks[g].period(), t, w);
                    let (a, d) = (ad.0[i as usize], ad.1[i as usize]);
                    // One task alone, late by up to a period: the same outcome as block by block.
                    let late = release + a + r(30 + rep * n + i) % p0;
                    // Searched from the on-time outcome's event index, or from any other.
                    let hint = if i % 2 == 0 { all[i as usize].kc } else { (r(50 + rep * n + i) % (tracks[g].events() as u64 + 2)) as u32 };
                    let one = env.chain_then_compute(i, late, d - a, work, hint);
                    if !one.met() {
                        let mut x = late;
                        if i > 0 {
                            x = s(x, order.links.get(collective::parent(i, k), i).recv);
                        }
                        for c in (k * i + 1)..=(k * i + k).min(n - 1) {
                            x = s(x, order.links.get(i, c).send);
                        }
                        assert_eq!((x, s(x, work) - x), (late + d - a, one.dur), "case {case} rep {rep} task {i} late");
                    }
                    let out = all[i as usize];
                    if out.met() {
                        met += 1;
                        continue;
                    }
                    on_time += 1;
                    let links = order.links;
                    let mut x = release + a;
                    if i > 0 {
                        x = s(x, links.get(collective::parent(i, k), i).recv);
                    }
                    for c in (k * i + 1)..=(k * i + k).min(n - 1) {
                        x = s(x, links.get(i, c).send);
                    }
                    let ctx = format!("case {case} rep {rep} task {i}");
                    assert_eq!(x, release + d, "{ctx}");
                    let end = s(x, work);
                    assert_eq!(end - x, out.dur, "{ctx}");
                    let ahead = out.ahead as u64;
                    for w in [1, ahead / 2, ahead].into_iter().filter(|&w| w > 0 && w <= ahead) {
                        assert_eq!(s(end, w), end + w, "{ctx}: {w} quiet cycles");
                    }
                    // The same chain and compute started later: `later` answers
                    // exactly when the lateness stays within both quiet spans.
                    let most = (out.room as u64).min(ahead);
                    for late in [1, most / 2, most, most + 1, most + 1 + r(40 + rep * n + i) % 64] {
                        let Some(moved) = out.later(late) else {
                            assert!(late > most, "{ctx}: {late} late within {most}");
                            continue;
                        };
                        later += 1;
                        let mut x = release + a + late;
                        if i > 0 {
                            x = s(x, links.get(collective::parent(i, k), i).recv);
                        }
                        for c in (k * i + 1)..=(k * i + k).min(n - 1) {
                            x = s(x, links.get(i, c).send);
                        }
                        assert_eq!(x, release + d + late, "{ctx}: {late} late");
                        let end = s(x, work);
                        assert_eq!((end - x, moved.ahead as u64), (out.dur, ahead - late), "{ctx}: {late} late");
                        if moved.ahead > 0 {
                            assert_eq!(s(end, moved.ahead as u64), end + moved.ahead as u64, "{ctx}: {late} late, quiet after");
                        }
                    }
                }
            }
        }
        assert!(on_time > 1000 && met > 1000, "both outcomes are exercised: {on_time} on time, {met} met");
        assert!(later > 1000, "late starts are exercised: {later}");
    }
}

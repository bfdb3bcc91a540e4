//! A barrier or reduce-bcast over tasks that read whole traces (jitSim
//! §3.6, Fig. 6), run in fused subtree blocks.
//!
//! The tree's top levels run serially. Below them, each subtree is a block,
//! and the blocks run in parallel. A block takes each of its tasks through
//! its receive from its parent and its sends to its children (the way down
//! of one barrier) and its compute of the next phase, level by level from
//! the block's root, then through its receives from its children and its
//! send to its parent (the way up of the next barrier), level by level
//! back to the root. A block thus carries one phase from the message its
//! root gets on the way down to the message its root sends up, while its
//! tasks' values stay in the cache, and nothing per task is kept between
//! phases: a task's clock after its send up is never later than its
//! parent's message down (sent after the parent received that send), so
//! the way down starts at the message. One parallel pass per phase. The
//! top levels go through the same kernel, their way down before the
//! blocks and their way up in the next phase, after them, so a top task
//! keeps its compute's end and the quiet span after it between the two.
//!
//! Per task and phase there is one position lookup: where the parent's
//! message lands in the task's trace, p. The rule is work-conserving
//! (jitSim §3.4): S(S(p, a), b) = S(p, a + b), and a block of w ≥ 1
//! cycles from p ends at C⁻¹(C(p) + w), C the busy cycles before a
//! position (a start inside a detour waits it out). So the points of the
//! chain of receive and sends, and the end of the next compute, are C⁻¹
//! of C(p) plus the work done so far: sums while they stay before the next
//! detour, else one inverse lookup each, near p for the chain and from the
//! bucket entry of the compute's expected end (its work times the trace's
//! period over its compute cycles) for the compute. Both bucket entries
//! are loaded together. The compute leaves a quiet span behind, and the
//! receives and the send on the way up that fall in it are sums too; a
//! block outside it is one C⁻¹ from the cursor's event. Only blocks that
//! reach past the trace's end are stretched through [`Env::stretch`].
//! Trace positions are taken relative to the phase's release, whose place
//! in each trace is computed once per phase.
//!
//! The results are those of [`collective::up`] and [`collective::down`]
//! followed by the compute, to the cycle, on any thread count (the
//! reductions are maxima of integers).

use std::cell::RefCell;

use super::collective::{self, FixedLinks, LinkCost};
use super::par::*;
use super::tasks::{Env, PhaseStat};
use super::track::Quiet;

/// Subtree blocks wanted below the top levels: enough to keep every
/// thread busy, each small enough for its tasks' scratch values to stay in
/// the cache. Unit tests use few, so that their small trees have a top part.
const BLOCKS: u64 = if cfg!(test) { 4 } else { 1024 };

/// Where each trace stands at the phase's reference time.
struct Frame {
    /// Reference time (the root's release), cycles; every time of the block is at or after it.
    at: u64,
    /// `at mod period`, per track, cycles.
    rm: Vec<u64>,
}

/// Maxima over the tasks of a block: exit from the collective and compute part, cycles.
#[derive(Clone, Copy, Default)]
struct Maxima {
    exit: u64,
    compute: u64,
}

impl Maxima {
    fn join(self, o: Maxima) -> Maxima {
        Maxima { exit: self.exit.max(o.exit), compute: self.compute.max(o.compute) }
    }
}

/// A `k`-ary barrier tree over the tasks of `env`, with message costs `links`.
pub(crate) struct Tree<'a> {
    env: Env<'a>,
    links: FixedLinks,
    k: u64,
    n: u64,
    /// Compute per phase, cycles.
    work: u64,
    /// The block roots are tasks `lo..hi` (one tree level); tasks `0..lo` are the top.
    lo: u64,
    hi: u64,
    /// Per track, the position span a compute takes on average, cycles.
    span: Vec<u64>,
    /// Every block task is on another node than its parent (and so than its children).
    inter: bool,
}

/// One block's per-task values, in level order (the block's levels one after the other).
#[derive(Default)]
struct Scratch {
    /// Parent's message down, cycles.
    a: Vec<u64>,
    /// Trace position at that message, cycles.
    pos: Vec<u64>,
    /// Where the search for that position starts (an event index).
    first: Vec<u32>,
    /// Where the search for the compute's end starts (an event index).
    guess: Vec<u32>,
    /// Compute end, cycles.
    e: Vec<u64>,
    /// Quiet span after the compute end.
    q: Vec<Quiet>,
    /// Message up, cycles.
    up: Vec<u64>,
}

impl Scratch {
    fn grow(&mut self, n: usize) {
        if self.a.len() < n {
            self.a.resize(n, 0);
            self.pos.resize(n, 0);
            self.first.resize(n, 0);
            self.guess.resize(n, 0);
            self.e.resize(n, 0);
            self.q.resize(n, Quiet::default());
            self.up.resize(n, 0);
        }
    }
}

/// Levels of a subtree, in level order: per level its tasks `lo..hi` and
/// the slot of its first task in a [`Scratch`].
struct Levels {
    lv: [(u64, u64, usize); 64],
    depth: usize,
    /// Slots of all the levels.
    total: usize,
    /// The last level's tasks have no children.
    leaves: bool,
    /// Every task is on another node than its parent.
    inter: bool,
}

thread_local! {
    /// Each thread's block scratch.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl<'a> Tree<'a> {
    /// The tree over the `offsets.len()` tasks of `env` (all reading whole
    /// traces), arity `k` (≥ 2), `work` (≥ 1) cycles of compute per phase.
    pub(crate) fn new(env: Env<'a>, links: FixedLinks, k: u64, work: u64) -> Tree<'a> {
        let n = env.tasks();
        let lv = collective::levels(n, k);
        let width = |d: usize| lv[d + 1] - lv[d];
        let mut d = (0..lv.len() - 1).find(|&d| width(d) >= BLOCKS).unwrap_or(lv.len() - 2);
        // A wide tree overshoots: its top would receive from all the roots serially.
        if d > 1 && width(d) > 16 * BLOCKS {
            d -= 1;
        }
        let span = env.tracks().iter().map(|t| t.span_of(work)).collect();
        // Tasks on one node are consecutive, so a task at least
        // `cores_per_node` ids after its parent is on another node; a block
        // task is more than its parent's id after it.
        let lo = lv[d];
        let inter = lo > 0 && collective::parent(lo, k) + 1 >= links.cores_per_node;
        Tree { env, links, k, n, work, lo, hi: lv[d + 1], span, inter }
    }

    /// Runs `phases` (≥ 1) phases: each task computes from time 0, then each
    /// phase ends with the barrier and the next compute starts at each
    /// task's exit. `on_phase(p)` is called after phase `p`.
    pub(crate) fn run(&self, phases: u32, on_phase: &dyn Fn(u32)) -> Vec<PhaseStat> {
        let (lo, hi) = (self.lo as usize, self.hi as usize);
        let roots: Vec<u64> = (self.lo..self.hi).collect();
        // The top tasks go through the block kernel too, in a scratch of
        // their own that holds their compute ends and cursors from their
        // way down to their way up in the next phase; the block roots'
        // messages down and up are its slots from `lo` on.
        let top = self.levels_from(0, self.lo);
        let mut top_sc = Scratch::default();
        top_sc.grow(lo + (hi - lo));
        // Block roots: their message up, and their parent's message down.
        let mut blk_up = vec![0u64; hi - lo];
        let mut blk_down = vec![0u64; hi - lo];
        let mut fr = self.frame(0);
        let mut m = Maxima::default();
        if lo > 0 {
            self.descend(&mut top_sc, &top, None, &fr, &mut m);
        }
        let mut compute_max = m.compute.max(self.blocks(&roots, &mut blk_up, |r, m| self.block(r, None, &fr, m)).compute);
        let mut out = Vec::with_capacity(phases as usize);
        let mut last_end = 0u64;
        for p in 0..phases {
            let release = if lo == 0 {
                blk_up[0]
            } else {
                top_sc.up[lo..].copy_from_slice(&blk_up);
                self.ascend(&mut top_sc, &top, &fr)
            };
            let next = p + 1 < phases;
            fr = self.frame(release);
            let mut m = Maxima::default();
            if lo == 0 {
                blk_down[0] = release;
            } else if next {
                self.descend(&mut top_sc, &top, Some(release), &fr, &mut m);
                blk_down.copy_from_slice(&top_sc.a[lo..]);
            } else {
                m = self.top_last(release, &mut top_sc.a[..], &mut blk_down);
            }
            let down = &blk_down;
            let fr = &fr;
            m = m.join(if next {
                self.blocks(&roots, &mut blk_up, |r, m| self.block(r, Some(down[(r - self.lo) as usize]), fr, m))
            } else {
                self.blocks(&roots, &mut blk_up, |r, m| {
                    self.last(r, down[(r - self.lo) as usize], m);
                    0
                })
            });
            out.push(PhaseStat { consumed_cycles: m.exit - last_end, compute_max_cycles: compute_max });
            last_end = m.exit;
            compute_max = m.compute;
            on_phase(p);
        }
        out
    }

    /// Runs `f(root, maxima)` for every block root in parallel; its result goes to `up[root − lo]`.
    fn blocks(&self, roots: &[u64], up: &mut [u64], f: impl Fn(u64, &mut Maxima) -> u64 + Sync) -> Maxima {
        let per_block = roots.par_iter().zip(up.par_iter_mut()).map(|(&r, u)| {
            let mut m = Maxima::default();
            *u = f(r, &mut m);
            (m.exit, m.compute)
        });
        let (exit, compute) = max_pair(per_block);
        Maxima { exit, compute }
    }

    /// The traces' places at reference time `at`.
    fn frame(&self, at: u64) -> Frame {
        Frame { at, rm: self.env.tracks().iter().map(|t| at % t.period()).collect() }
    }

    /// The last phase's way down through the top tasks after the root's
    /// `release`, without a compute after it; fills their messages down,
    /// `top_down` (at least `lo` slots) and `blk_down`.
    fn top_last(&self, release: u64, top_down: &mut [u64], blk_down: &mut [u64]) -> Maxima {
        let (env, links, lo) = (self.env, self.links, self.lo);
        let mut m = Maxima::default();
        for i in 0..lo {
            let mut q = Quiet::default();
            let mut x = release;
            if i > 0 {
                x = env.stretch(i, &mut q, top_down[i as usize], links.get(collective::parent(i, self.k), i).recv);
            }
            for c in self.children(i) {
                let l = links.get(i, c);
                x = env.stretch(i, &mut q, x, l.send);
                let slot = if c < lo { &mut top_down[c as usize] } else { &mut blk_down[(c - lo) as usize] };
                *slot = x + l.wire;
            }
            m.exit = m.exit.max(x);
        }
        m
    }

    /// Cost of a message between tasks `a` and `b`, parent and child;
    /// `inter`: they are known to be on different nodes.
    #[inline(always)]
    fn link_on(&self, inter: bool, a: u64, b: u64) -> LinkCost {
        if inter {
            self.links.inter
        } else {
            self.links.get(a, b)
        }
    }

    /// Cost of the message between task `i` and its parent; `inter`: they are known to be on different nodes.
    #[inline(always)]
    fn parent_link_on(&self, inter: bool, i: u64) -> LinkCost {
        if inter {
            self.links.inter
        } else {
            self.links.get(i, collective::parent(i, self.k))
        }
    }

    /// Children of task `i`.
    #[inline]
    fn children(&self, i: u64) -> std::ops::Range<u64> {
        let first = self.k * i + 1;
        first.min(self.n)..(first + self.k).min(self.n)
    }

    /// The block below task `r`: from its parent's message at `arrive`
    /// (`None`: every task from time 0, without the way down) down the
    /// block, each task's compute, and up the block; returns `r`'s message
    /// up (its arrival at the parent) or, for the tree's root, its release,
    /// cycles. Updates the block's maxima `m`.
    ///
    /// The block goes level by level. A task's position (and the loads of
    /// its two bucket entries) is found when its parent sends it its
    /// message; then each level takes two passes over its tasks: their
    /// first events and compute-end guesses (and the loads of the events),
    /// then the chains and computes. So the cache misses of a level's
    /// lookups overlap instead of following each other.
    fn block(&self, r: u64, arrive: Option<u64>, fr: &Frame, m: &mut Maxima) -> u64 {
        SCRATCH.with(|sc| self.block_in(&mut sc.borrow_mut(), r, arrive, fr, m))
    }

    fn block_in(&self, sc: &mut Scratch, r: u64, arrive: Option<u64>, fr: &Frame, m: &mut Maxima) -> u64 {
        let lv = self.levels_from(r, self.n);
        sc.grow(lv.total);
        self.descend(sc, &lv, arrive, fr, m);
        self.ascend(sc, &lv, fr)
    }

    /// The levels of the subtree of `r` up to (not including) task `limit`.
    fn levels_from(&self, r: u64, limit: u64) -> Levels {
        let k = self.k;
        let inter = r >= self.lo && self.inter;
        let mut lv = Levels { lv: [(0, 0, 0); 64], depth: 0, total: 0, leaves: limit == self.n, inter };
        let (mut lo, mut hi) = (r, (r + 1).min(limit));
        while lo < limit {
            lv.lv[lv.depth] = (lo, hi, lv.total);
            lv.total += (hi - lo) as usize;
            lv.depth += 1;
            (lo, hi) = (k * lo + 1, (k * hi + 1).min(limit));
        }
        lv
    }

    /// The way down through the tasks of `lv` from the parent's message
    /// `arrive` to their first task (`None`: every task from time 0,
    /// without the way down), and each task's compute: fills `sc.e` and
    /// `sc.q` of each task and `sc.a` of its children (the children of
    /// the last level at `lv.total` on; when they are leaves, their
    /// messages up go to `sc.up` at once). Updates the maxima `m`.
    fn descend(&self, sc: &mut Scratch, lv: &Levels, arrive: Option<u64>, fr: &Frame, m: &mut Maxima) {
        let (env, k, work) = (self.env, self.k, self.work);
        let (depth, total, inter, leaves) = (lv.depth, lv.total, lv.inter, lv.leaves);
        let lv = &lv.lv;
        let down = arrive.is_some();
        sc.a[0] = arrive.unwrap_or(0);
        for d in 0..depth {
            let (lo, hi, base) = lv[d];
            let next_base = if d + 1 < depth { lv[d + 1].2 } else { total };
            let next_lo = k * lo + 1;
            let w = (hi - lo) as usize;
            // On the way down, a level's positions were found as the level
            // above sent its messages.
            if d == 0 || !down {
                for j in 0..w {
                    let a = if down { sc.a[base + j] } else { 0 };
                    self.locate(sc, lo + j as u64, base + j, a, fr);
                }
            }
            for j in 0..w {
                let i = lo + j as u64;
                let g = env.track_index(i);
                let (first, guess) = env.tracks()[g].first_from_buckets(sc.pos[base + j], self.span[g]);
                sc.first[base + j] = first as u32;
                sc.guess[base + j] = guess as u32;
            }
            for j in 0..w {
                let i = lo + j as u64;
                let s = base + j;
                let a = if down { sc.a[s] } else { 0 };
                let kids = self.children(i);
                let recv = if i > 0 && down { self.parent_link_on(inter, i).recv } else { 0 };
                let sends: u64 = if down { kids.clone().map(|c| self.link_on(inter, i, c).send).sum() } else { 0 };
                let chain = recv + sends;
                let g = env.track_index(i);
                let track = &env.tracks()[g];
                let pos = sc.pos[s];
                let kc = track.scan_to(sc.first[s] as usize, pos);
                // C(pos), and event kc's compute-before and jitter-before.
                let (c0, cb_next, jb_next) = track.busy_at(kc, pos);
                let lo_ev = kc.saturating_sub(1);
                // Task time after `done` cycles of the chain: `a` after none
                // (an empty block does not wait), else C⁻¹(C(pos) + done),
                // a sum while that stays before event kc.
                let point = |done: u64| -> Option<u64> {
                    if done == 0 {
                        Some(a)
                    } else if c0 + done <= cb_next {
                        Some(a + (c0 + done + jb_next - pos))
                    } else {
                        track.busy_end(lo_ev, kc, c0 + done).map(|(_, x)| a + (x - pos))
                    }
                };
                let end = track.busy_end(lo_ev, sc.guess[s] as usize, c0 + chain + work);
                let exit = point(chain);
                let fits = match (end, exit) {
                    (Some((k2, x)), Some(exit)) => {
                        if down {
                            let mut done = recv;
                            for c in kids.clone() {
                                let l = self.link_on(inter, i, c);
                                done += l.send;
                                // Each point is at most the chain's end, inside the trace.
                                let slot = next_base + (c - next_lo) as usize;
                                sc.a[slot] = point(done).unwrap_or(exit) + l.wire;
                                self.locate(sc, c, slot, sc.a[slot], fr);
                            }
                        }
                        let e = a + (x - pos);
                        Some((exit, e, Quiet::ahead(e, track.quiet_after(k2, x), k2 as u32)))
                    }
                    _ => None,
                };
                // Past the trace's end: block by block through the prefix sums.
                let (exit, end, q) = fits.unwrap_or_else(|| {
                    let mut q = Quiet::hint(kc as u32);
                    let mut x = a;
                    if recv > 0 {
                        x = env.stretch(i, &mut q, x, recv);
                    }
                    if down {
                        for c in kids {
                            let l = self.link_on(inter, i, c);
                            x = env.stretch(i, &mut q, x, l.send);
                            let slot = next_base + (c - next_lo) as usize;
                            sc.a[slot] = x + l.wire;
                            self.locate(sc, c, slot, x + l.wire, fr);
                        }
                    }
                    let end = env.stretch(i, &mut q, x, work);
                    (x, end, q)
                });
                m.exit = m.exit.max(exit);
                m.compute = m.compute.max(end - exit);
                if leaves && d + 1 == depth {
                    // A leaf's way up is its send, right after its compute.
                    let mut q = q;
                    sc.up[s] = if i == 0 {
                        end
                    } else {
                        let l = self.parent_link_on(inter, i);
                        self.short(i, &mut q, end, l.send, fr) + l.wire
                    };
                } else {
                    sc.e[s] = end;
                    sc.q[s] = q;
                }
            }
        }
    }

    /// Task `i`'s trace position at its time `a` into its slot `s`, and the
    /// loads of the bucket entries its lookups read.
    #[inline(always)]
    fn locate(&self, sc: &mut Scratch, i: u64, s: usize, a: u64, fr: &Frame) {
        let (track, pos) = self.env.position(i, fr.at, &fr.rm, a);
        track.prefetch_buckets(pos, self.span[self.env.track_index(i)]);
        sc.pos[s] = pos;
    }

    /// The way up through the tasks of `lv` from their compute ends and
    /// cursors in `sc` and their children's messages up in `sc.up` (the
    /// last level's children at `lv.total` on; a last level of leaves is
    /// done, as [`descend`](Self::descend) left it); returns the first task's
    /// message up or, for the tree's root, its release, cycles.
    fn ascend(&self, sc: &mut Scratch, lv: &Levels, fr: &Frame) -> u64 {
        let k = self.k;
        let (depth, total, inter, leaves) = (lv.depth, lv.total, lv.inter, lv.leaves);
        let lv = &lv.lv;
        for d in (0..depth - leaves as usize).rev() {
            let (lo, hi, base) = lv[d];
            let next_base = if d + 1 < depth { lv[d + 1].2 } else { total };
            let next_lo = k * lo + 1;
            for j in 0..(hi - lo) as usize {
                let i = lo + j as u64;
                let (mut x, mut q) = (sc.e[base + j], sc.q[base + j]);
                for c in self.children(i) {
                    x = self.short(i, &mut q, x.max(sc.up[next_base + (c - next_lo) as usize]), self.link_on(inter, c, i).recv, fr);
                }
                sc.up[base + j] = if i == 0 {
                    x
                } else {
                    let l = self.parent_link_on(inter, i);
                    self.short(i, &mut q, x, l.send, fr) + l.wire
                };
            }
        }
        sc.up[0]
    }

    /// Task `i`, with cursor `q`, does a short block of `w` cycles at its
    /// time `t` (≥ `fr.at`); returns its end. A block outside the cursor's
    /// quiet span ends at C⁻¹(C(p) + w), p its position, found from the
    /// cursor's event, and the cursor moves to the quiet cycles after it;
    /// only a block reaching past the trace's end is stretched through the
    /// prefix sums.
    #[inline(always)]
    fn short(&self, i: u64, q: &mut Quiet, t: u64, w: u64, fr: &Frame) -> u64 {
        if t >= q.from() && t <= q.until() && w <= q.until() - t {
            return t + w;
        }
        self.short_slow(i, q, t, w, fr)
    }

    #[inline(never)]
    fn short_slow(&self, i: u64, q: &mut Quiet, t: u64, w: u64, fr: &Frame) -> u64 {
        if w == 0 {
            return t;
        }
        let (track, pos) = self.env.position(i, fr.at, &fr.rm, t);
        let kc = track.seek(q.k(), pos);
        let (c0, _, _) = track.busy_at(kc, pos);
        match track.busy_end(kc.saturating_sub(1), kc, c0 + w) {
            Some((k2, x)) => {
                let end = t + (x - pos);
                *q = Quiet::ahead(end, track.quiet_after(k2, x), k2 as u32);
                end
            }
            None => self.env.stretch(i, q, t, w),
        }
    }

    /// The last phase's way down through task `i`'s subtree from its
    /// parent's message at `arrive`, block by block; updates the exit maximum.
    fn last(&self, i: u64, arrive: u64, m: &mut Maxima) {
        let (env, links) = (self.env, self.links);
        let mut q = Quiet::default();
        let mut x = arrive;
        if i > 0 {
            x = env.stretch(i, &mut q, x, links.get(collective::parent(i, self.k), i).recv);
        }
        for c in self.children(i) {
            let l = links.get(i, c);
            x = env.stretch(i, &mut q, x, l.send);
            self.last(c, x + l.wire, m);
        }
        m.exit = m.exit.max(x);
    }
}

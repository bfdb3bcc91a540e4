//! A barrier or reduce-bcast over tasks that read whole traces (jitSim
//! §3.6, Fig. 6), run in fused subtree blocks.
//!
//! The tree's top levels run serially. Below them, each subtree is a block,
//! and the blocks run in parallel: a depth-first walk of the block takes
//! each task through its receive from its parent and its sends to its
//! children (the way down of one barrier), its compute of the next phase
//! and, once its children have answered, its receives from them and its
//! send to its parent (the way up of the next barrier). A block thus
//! carries one phase from the message its root gets on the way down to the
//! message its root sends up, while its tasks' data stays in the cache, and
//! nothing per task is kept between phases: a task's clock after its send
//! up is never later than its parent's message down (sent after the parent
//! received that send), so the way down starts at the message.
//!
//! Per task and phase there is one position lookup: where the parent's
//! message lands in the task's trace. When the receive and the sends that
//! follow fit in the quiet cycles before the next detour, their times are
//! sums; the compute's end is then one inverse lookup of the busy-time
//! function C, since the rule is work-conserving (jitSim §3.4):
//! S(S(p, a), b) = S(p, a + b), so the end is C⁻¹(C(p) + chain + work).
//! The compute leaves a quiet span behind, and the receives on the way up
//! that fall in it are sums too; only a block reaching past it, or a chain
//! that meets a detour, is stretched through the trace's prefix sums
//! ([`Env::stretch`]). Trace positions are taken relative to the phase's
//! release, whose place in each trace is computed once per phase.
//!
//! The results are those of [`collective::up`] and [`collective::down`]
//! followed by the compute, to the cycle, on any thread count (the
//! reductions are maxima of integers).

use super::collective::{self, FixedLinks};
use super::engine::{Env, PhaseStat};
use super::par::*;
use super::track::Quiet;

/// Subtree blocks wanted below the top levels: enough to keep every
/// thread busy, each small enough for its tasks' offsets to stay in the
/// cache. Unit tests use few, so that their small trees have a top part.
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
}

impl<'a> Tree<'a> {
    /// The tree over the `offsets.len()` tasks of `env` (all reading whole
    /// traces), arity `k` (≥ 2), `work` (≥ 1) cycles of compute per phase.
    pub(crate) fn new(env: Env<'a>, links: FixedLinks, k: u64, work: u64) -> Tree<'a> {
        let n = env.tasks();
        let lv = collective::levels(n, k);
        let d = (0..lv.len() - 1).find(|&d| lv[d + 1] - lv[d] >= BLOCKS).unwrap_or(lv.len() - 2);
        Tree { env, links, k, n, work, lo: lv[d], hi: lv[d + 1] }
    }

    /// Runs `phases` (≥ 1) phases: each task computes from time 0, then each
    /// phase ends with the barrier and the next compute starts at each
    /// task's exit. `on_phase(p)` is called after phase `p`.
    pub(crate) fn run(&self, phases: u32, on_phase: &dyn Fn(u32)) -> Vec<PhaseStat> {
        let (lo, hi, work) = (self.lo as usize, self.hi as usize, self.work);
        let env = self.env;
        let roots: Vec<u64> = (self.lo..self.hi).collect();
        // Top tasks: compute ends; messages up (to the parent) and down (from it).
        let mut top_t = vec![0u64; lo];
        let mut top_up = vec![0u64; lo];
        let mut top_down = vec![0u64; lo];
        // Block roots: their message up, and their parent's message down.
        let mut blk_up = vec![0u64; hi - lo];
        let mut blk_down = vec![0u64; hi - lo];
        let start = self.frame(0);
        let mut compute_max = 0u64;
        for (i, t) in top_t.iter_mut().enumerate() {
            *t = env.stretch(i as u64, &mut Quiet::default(), 0, work);
            compute_max = compute_max.max(*t);
        }
        let m = self.blocks(&roots, &mut blk_up, |r, m| self.task(r, None, &start, m));
        compute_max = compute_max.max(m.compute);
        let mut out = Vec::with_capacity(phases as usize);
        let mut last_end = 0u64;
        for p in 0..phases {
            let release = if lo == 0 { blk_up[0] } else { self.top_up(&top_t, &mut top_up, &blk_up) };
            let next = p + 1 < phases;
            let mut m = self.top_down(release, next, &mut top_t, &mut top_down, &mut blk_down);
            if lo == 0 {
                blk_down[0] = release;
            }
            let fr = self.frame(release);
            let down = &blk_down;
            m = m.join(if next {
                self.blocks(&roots, &mut blk_up, |r, m| self.task(r, Some(down[(r - self.lo) as usize]), &fr, m))
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

    /// The way up through the top tasks, from their compute ends `top_t`
    /// and the block roots' messages `blk_up`; fills `top_up` and returns
    /// the root's release, cycles.
    fn top_up(&self, top_t: &[u64], top_up: &mut [u64], blk_up: &[u64]) -> u64 {
        let (env, links, lo) = (self.env, self.links, self.lo);
        let mut release = 0;
        for i in (0..lo).rev() {
            let (mut x, mut q) = (top_t[i as usize], Quiet::default());
            for c in self.children(i) {
                let a = if c < lo { top_up[c as usize] } else { blk_up[(c - lo) as usize] };
                x = env.stretch(i, &mut q, x.max(a), links.get(c, i).recv);
            }
            if i > 0 {
                let l = links.get(i, collective::parent(i, self.k));
                top_up[i as usize] = env.stretch(i, &mut q, x, l.send) + l.wire;
            } else {
                release = x;
            }
        }
        release
    }

    /// The way down through the top tasks after the root's `release`, and
    /// with `next` their next compute (into `top_t`); fills their messages
    /// down, `top_down` and `blk_down`.
    fn top_down(&self, release: u64, next: bool, top_t: &mut [u64], top_down: &mut [u64], blk_down: &mut [u64]) -> Maxima {
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
            if next {
                let e = env.stretch(i, &mut q, x, self.work);
                m.compute = m.compute.max(e - x);
                top_t[i as usize] = e;
            }
        }
        m
    }

    /// Children of task `i`.
    #[inline]
    fn children(&self, i: u64) -> std::ops::Range<u64> {
        let first = self.k * i + 1;
        first.min(self.n)..(first + self.k).min(self.n)
    }

    /// Task `i` and its subtree: from its parent's message at `arrive`
    /// (`None`: from time 0, without the way down) down, the compute, and
    /// up; returns its message up (its arrival at the parent) or, for the
    /// tree's root, its release, cycles. Updates the block's maxima `m`.
    fn task(&self, i: u64, arrive: Option<u64>, fr: &Frame, m: &mut Maxima) -> u64 {
        let (env, links, k) = (self.env, self.links, self.k);
        let kids = self.children(i);
        let recv = if i > 0 && arrive.is_some() { links.get(collective::parent(i, k), i).recv } else { 0 };
        let sends: u64 = if arrive.is_some() { kids.clone().map(|c| links.get(i, c).send).sum() } else { 0 };
        let a = arrive.unwrap_or(0);
        let chain = recv + sends;
        let (track, pos) = env.position(i, fr.at, &fr.rm, a);
        let o = track.chain_then_compute_one(pos, 0, chain, self.work);
        // The task's clock on the way down and its cursor: sums while the chain is quiet.
        let (fast, mut xd, mut qd) = (!o.met(), a + recv, Quiet::hint(o.kc));
        let (exit, end, mut q) = if fast {
            let exit = a + chain;
            (exit, exit + o.dur, Quiet::ahead(exit + o.dur, o.ahead, o.k))
        } else {
            // S(a, chain), then the compute after it, through the trace.
            let mut q = qd;
            let exit = env.stretch(i, &mut q, a, chain);
            let end = env.stretch(i, &mut q, exit, self.work);
            if recv > 0 {
                xd = env.stretch(i, &mut qd, a, recv);
            } else {
                xd = a;
            }
            (exit, end, q)
        };
        m.exit = m.exit.max(exit);
        m.compute = m.compute.max(end - exit);
        let mut x = end;
        for c in kids {
            let down = match arrive {
                Some(_) => {
                    let l = links.get(i, c);
                    xd = if fast { xd + l.send } else { env.stretch(i, &mut qd, xd, l.send) };
                    Some(xd + l.wire)
                }
                None => None,
            };
            let up = self.task(c, down, fr, m);
            x = env.stretch(i, &mut q, x.max(up), links.get(c, i).recv);
        }
        if i == 0 {
            return x;
        }
        let l = links.get(i, collective::parent(i, k));
        env.stretch(i, &mut q, x, l.send) + l.wire
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

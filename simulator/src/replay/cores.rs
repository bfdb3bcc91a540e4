//! Cores shared among the ranks of an oversubscribed host: a fluid model
//! of CPU sharing, as SimGrid shares a host's cores among its actors
//! (Casanova et al., "Versatile, scalable, and accurate simulation of
//! distributed applications and platforms", JPDC 2014, §4: every action
//! on a resource progresses at its max-min fair share, recomputed when an
//! action starts or ends).
//!
//! On a host of `c` cores with `a` active ranks, every compute block in
//! progress runs at rate `min(1, c / a)` of the host's speed. Which ranks
//! are active is the [`WaitingRanks`] policy: with `Yield` only the ranks
//! inside a compute block; with `Poll` every rank not yet finalized, since
//! a rank waiting in MPI busy-polls and keeps its core busy (the default
//! progress of Open MPI and MPICH).
//!
//! All blocks of a host progress at the same rate, so the model keeps one
//! host-wide work counter `v(t) = ∫ rate dt` (seconds of work a block has
//! done since the host's start) and each block its end `v0 + work`: the
//! blocks end in the order of their ends, from a heap, and a start or end
//! costs O(log blocks) instead of updating every block.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::platform::WaitingRanks;

/// A compute block in progress: its end on the host's work counter.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    end_v: f64,
    seq: u64,
    rank: u32,
    start_s: f64,
}

impl PartialEq for InFlight {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InFlight {
    fn cmp(&self, o: &Self) -> Ordering {
        self.end_v.total_cmp(&o.end_v).then(self.seq.cmp(&o.seq))
    }
}

/// A compute block that ended: rank, start and end, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ended {
    /// World rank.
    pub(crate) rank: u32,
    /// When the block started, seconds.
    pub(crate) start_s: f64,
}

/// The cores of one oversubscribed host and the compute blocks sharing them.
#[derive(Debug)]
pub(crate) struct HostCores {
    cores: f64,
    policy: WaitingRanks,
    /// Ranks placed on the host and not finalized.
    alive: u32,
    blocks: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    /// Work counter at `last`, seconds of work per block.
    v: f64,
    /// Time of the last update, seconds.
    last: f64,
    /// Current rate of every block (work seconds per second).
    rate: f64,
    /// Earliest event queued for this host, seconds (`INFINITY`: none).
    pub(crate) next: f64,
}

impl HostCores {
    /// A host of `cores` cores on which `ranks` ranks are placed.
    pub(crate) fn new(cores: u32, ranks: u32, policy: WaitingRanks) -> HostCores {
        let mut h = HostCores {
            cores: cores as f64,
            policy,
            alive: ranks,
            blocks: BinaryHeap::new(),
            seq: 0,
            v: 0.0,
            last: 0.0,
            rate: 1.0,
            next: f64::INFINITY,
        };
        h.rate = h.share();
        h
    }

    /// `min(1, cores / active ranks)`.
    fn share(&self) -> f64 {
        let active = match self.policy {
            WaitingRanks::Yield => self.blocks.len() as u32,
            WaitingRanks::Poll => self.alive.max(self.blocks.len() as u32),
        };
        if active as f64 <= self.cores {
            1.0
        } else {
            self.cores / active as f64
        }
    }

    /// Moves the work counter to `now` at the current rate.
    fn advance(&mut self, now: f64) {
        if now > self.last {
            self.v += (now - self.last) * self.rate;
            self.last = now;
        }
    }

    /// Rank `rank` starts a block of `work_s` seconds (at full speed) at `now`.
    pub(crate) fn start(&mut self, now: f64, rank: u32, work_s: f64) {
        self.advance(now);
        self.blocks.push(Reverse(InFlight { end_v: self.v + work_s, seq: self.seq, rank, start_s: now }));
        self.seq += 1;
        self.rate = self.share();
    }

    /// A rank of the host finalized at `now` (it polls no more).
    pub(crate) fn rank_done(&mut self, now: f64) {
        self.advance(now);
        self.alive = self.alive.saturating_sub(1);
        self.rate = self.share();
    }

    /// When the next block ends at the current rate, seconds.
    pub(crate) fn next_end(&self) -> Option<f64> {
        self.blocks.peek().map(|Reverse(b)| self.last + ((b.end_v - self.v) / self.rate).max(0.0))
    }

    /// Ends the blocks done by `now` (into `ended`, in end order) and
    /// updates the rate.
    pub(crate) fn finish_until(&mut self, now: f64, ended: &mut Vec<Ended>) {
        self.advance(now);
        // Rounding of `v` may leave a block a few ulps short of its end.
        let tol = 1e-12 * self.v.abs().max(1.0);
        while let Some(Reverse(b)) = self.blocks.peek() {
            if b.end_v > self.v + tol {
                break;
            }
            ended.push(Ended { rank: b.rank, start_s: b.start_s });
            self.blocks.pop();
        }
        self.rate = self.share();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(h: &mut HostCores) -> Vec<(u32, f64)> {
        let mut out = Vec::new();
        while let Some(t) = h.next_end() {
            let mut e = Vec::new();
            h.finish_until(t, &mut e);
            out.extend(e.iter().map(|x| (x.rank, t)));
        }
        out
    }

    #[test]
    fn four_equal_blocks_on_two_cores_take_twice_as_long() {
        let mut h = HostCores::new(2, 4, WaitingRanks::Yield);
        for r in 0..4 {
            h.start(0.0, r, 1.0);
        }
        let ends = run(&mut h);
        assert_eq!(ends.len(), 4);
        assert!(ends.iter().all(|&(_, t)| (t - 2.0).abs() < 1e-12), "{ends:?}");
    }

    #[test]
    fn a_short_block_ending_speeds_up_the_others() {
        // 3 blocks on 1 core: 1 s, 2 s, 2 s of work. Rate 1/3 until the
        // short one ends at t = 3; the two others then have 1 s left at
        // rate 1/2: they end at t = 5.
        let mut h = HostCores::new(1, 3, WaitingRanks::Yield);
        h.start(0.0, 0, 1.0);
        h.start(0.0, 1, 2.0);
        h.start(0.0, 2, 2.0);
        let ends = run(&mut h);
        assert_eq!(ends[0].0, 0);
        assert!((ends[0].1 - 3.0).abs() < 1e-12, "{ends:?}");
        assert!((ends[1].1 - 5.0).abs() < 1e-12 && (ends[2].1 - 5.0).abs() < 1e-12, "{ends:?}");
    }

    #[test]
    fn polling_ranks_keep_their_share_until_they_finalize() {
        // 4 ranks on 2 cores, one computes 1 s while three wait: yield
        // gives it a whole core, poll half of one until two ranks finalize
        // at t = 1, then a whole core: 0.5 s done by t = 1, 0.5 s more.
        let mut y = HostCores::new(2, 4, WaitingRanks::Yield);
        y.start(0.0, 0, 1.0);
        assert_eq!(y.next_end(), Some(1.0));
        let mut p = HostCores::new(2, 4, WaitingRanks::Poll);
        p.start(0.0, 0, 1.0);
        assert_eq!(p.next_end(), Some(2.0));
        p.rank_done(1.0);
        p.rank_done(1.0);
        assert!((p.next_end().unwrap() - 1.5).abs() < 1e-12);
    }

    #[test]
    fn a_block_started_later_ends_in_its_own_order() {
        // 1 core, 2 ranks: rank 0 works 2 s from 0, rank 1 works 0.5 s
        // from 1. Alone until 1 (1 s done), then both at 1/2: rank 1 ends
        // at 2, rank 0 has 0.5 s left alone: ends at 2.5.
        let mut h = HostCores::new(1, 2, WaitingRanks::Yield);
        h.start(0.0, 0, 2.0);
        h.start(1.0, 1, 0.5);
        let ends = run(&mut h);
        assert_eq!(ends.iter().map(|e| e.0).collect::<Vec<_>>(), vec![1, 0]);
        assert!((ends[0].1 - 2.0).abs() < 1e-12 && (ends[1].1 - 2.5).abs() < 1e-12, "{ends:?}");
    }
}

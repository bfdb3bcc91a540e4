//! Chains of short blocks followed by compute, stretched in one search
//! (jitSim §§3.4, 3.6): a barrier task's receive and sends on the way down,
//! then its next compute, each task found by one pass over a track in
//! trace order or by one search near a known event index.

use super::Track;

impl Track {
    /// For `m` tasks at trace positions `pos(j)` (cycles, each < period,
    /// ascending over `j` in `0..m`), each doing a chain of short blocks of
    /// `chain(j)` cycles in all and then `work` (≥ 1) compute cycles,
    /// reading the whole trace: `out(j, ·)` gets the compute's duration
    /// and the quiet cycles after its end when the chain meets no event and
    /// the compute does not reach the trace's end, else [`After::MET`].
    /// Event pointers move forward only (a bucket lookup for the first
    /// task): O(tasks + events).
    pub(crate) fn chain_then_compute(
        &self,
        m: usize,
        pos: impl Fn(usize) -> u64,
        chain: impl Fn(usize) -> u64,
        work: u64,
        mut out: impl FnMut(usize, After),
    ) {
        if m == 0 {
            return;
        }
        let (mut k, mut k2) = (self.bucket_seek(pos(0)), 0usize);
        for j in 0..m {
            let x = pos(j);
            k = self.gallop(k, |e| e.start < x);
            out(j, self.chain_then_compute_at(x, k, &mut k2, chain(j), work));
        }
    }

    /// [`chain_then_compute`](Self::chain_then_compute) for one task at
    /// trace position `pos` (< period), searched from event index `hint`
    /// when the events before it all start before `pos` (O(log distance)),
    /// else through the bucket index (O(1) expected); plus O(log events met).
    pub(crate) fn chain_then_compute_one(&self, pos: u64, hint: usize, chain: u64, work: u64) -> After {
        let k = if hint > 0 && hint < self.ev.len() && self.ev[hint - 1].start < pos {
            self.gallop(hint, |e| e.start < pos)
        } else {
            self.bucket_seek(pos)
        };
        self.chain_then_compute_at(pos, k, &mut 0, chain, work)
    }

    /// One task of [`chain_then_compute`](Self::chain_then_compute) at
    /// position `x` with `k` events starting before it; `k2` is a lower
    /// bound of the compute end's event index when it exceeds `k`, and is
    /// left at that index.
    #[inline]
    fn chain_then_compute_at(&self, x: u64, k: usize, k2: &mut usize, w: u64, work: u64) -> After {
        let gap_start = if k > 0 { self.ev[k - 1].start + (self.jb(k) - self.jb(k - 1)) } else { 0 };
        let in_gap = x >= gap_start && x + w <= self.ev[k].start;
        if w > 0 && !in_gap {
            return After { kc: k as u32, ..After::MET };
        }
        // Quiet cycles between the chain's end and the next event: a later start by at most this much meets the same events.
        let room = if in_gap { (self.ev[k].start - x - w).min(u32::MAX as u64) as u32 } else { 0 };
        let at = x + w;
        let target = self.compute_before(k, at) + work;
        let from = if *k2 > k && self.ev[*k2 - 1].cb < target { *k2 } else { k.saturating_sub(1) };
        *k2 = self.gallop(from, |e| e.cb < target);
        let end = target + self.jb(*k2);
        if end > self.period {
            After { kc: k as u32, ..After::MET }
        } else {
            After { dur: end - at, ahead: (self.ev[*k2].start - end).min(u32::MAX as u64) as u32, k: *k2 as u32, room, kc: k as u32 }
        }
    }
}

/// One task's outcome in [`Track::chain_then_compute`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct After {
    /// Compute duration, cycles.
    pub dur: u64,
    /// Cycles from the compute's end to the next event (at most `u32::MAX`).
    pub ahead: u32,
    /// Index of that event.
    pub k: u32,
    /// Cycles from the chain's end to the next event when the chain starts
    /// in a gap (at most `u32::MAX`), else 0: see [`After::later`].
    pub room: u32,
    /// Number of events starting before the chain's start (also when the chain met one): where a search near it starts.
    pub kc: u32,
}

impl After {
    /// The chain met an event, or the compute reached the trace's end: the task is stretched block by block.
    pub const MET: After = After { dur: u64::MAX, ahead: 0, k: 0, room: 0, kc: 0 };

    /// Whether this is [`After::MET`].
    #[inline]
    pub fn met(&self) -> bool {
        self.dur == u64::MAX
    }

    /// The outcome of the same chain and compute started `late` cycles
    /// later, when that is known without a search of the trace: the chain
    /// still ends in its gap (`late ≤ room`) and the compute's end moves by
    /// `late` within its quiet cycles (`late ≤ ahead`), so the compute
    /// meets the same events, takes as long, and has `ahead − late` quiet
    /// cycles after its end. `None` otherwise, or for [`After::MET`].
    #[inline]
    pub fn later(&self, late: u64) -> Option<After> {
        if self.met() || late > self.room as u64 || late > self.ahead as u64 {
            return None;
        }
        let late = late as u32;
        Some(After { ahead: self.ahead - late, room: self.room - late, ..*self })
    }
}

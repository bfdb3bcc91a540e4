//! A chain of short blocks followed by compute, stretched with one
//! position lookup and one inverse lookup of the busy-time function
//! (jitSim §§3.4, 3.6): a barrier task's receive and sends on the way
//! down, then its next compute.

use super::Track;

impl Track {
    /// A task reading the whole trace at position `pos` (cycles, < period)
    /// does a chain of short blocks of `chain` cycles in all, then `work`
    /// (≥ 1) compute cycles. When the chain meets no event (or is empty)
    /// and the compute does not reach the trace's end, returns the
    /// compute's duration and the quiet cycles after its end (the
    /// work-conserving rule makes the end C⁻¹(C(pos) + chain + work), C the
    /// busy cycles before a position); else [`After::MET`]. The position is
    /// searched from event index `hint` when the events before it all start
    /// before `pos` (O(log distance)), else through the bucket index (O(1)
    /// expected); then O(log events met) to the end.
    pub(crate) fn chain_then_compute_one(&self, pos: u64, hint: usize, chain: u64, work: u64) -> After {
        let k = if hint > 0 && hint < self.ev.len() && self.ev[hint - 1].start < pos {
            self.gallop(hint, |e| e.start < pos)
        } else {
            self.bucket_seek(pos)
        };
        self.chain_then_compute_at(pos, k, chain, work)
    }

    /// [`chain_then_compute_one`](Self::chain_then_compute_one) at
    /// position `x` with `k` events starting before it.
    #[inline]
    fn chain_then_compute_at(&self, x: u64, k: usize, w: u64, work: u64) -> After {
        let gap_start = if k > 0 { self.ev[k - 1].start + (self.jb(k) - self.jb(k - 1)) } else { 0 };
        let in_gap = x >= gap_start && x + w <= self.ev[k].start;
        if w > 0 && !in_gap {
            return After { kc: k as u32, ..After::MET };
        }
        let at = x + w;
        let target = self.compute_before(k, at) + work;
        let k2 = self.gallop(k.saturating_sub(1), |e| e.cb < target);
        let end = target + self.jb(k2);
        if end > self.period {
            After { kc: k as u32, ..After::MET }
        } else {
            After { dur: end - at, ahead: (self.ev[k2].start - end).min(u32::MAX as u64) as u32, k: k2 as u32, kc: k as u32 }
        }
    }
}

/// Outcome of [`Track::chain_then_compute_one`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct After {
    /// Compute duration, cycles.
    pub dur: u64,
    /// Cycles from the compute's end to the next event (at most `u32::MAX`).
    pub ahead: u32,
    /// Index of that event.
    pub k: u32,
    /// Number of events starting before the chain's start (also when the chain met one): where a search near it starts.
    pub kc: u32,
}

impl After {
    /// The chain met an event, or the compute reached the trace's end: the task is stretched block by block.
    pub const MET: After = After { dur: u64::MAX, ahead: 0, k: 0, kc: 0 };

    /// Whether this is [`After::MET`].
    #[inline]
    pub fn met(&self) -> bool {
        self.dur == u64::MAX
    }
}

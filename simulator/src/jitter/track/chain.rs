//! A chain of short blocks followed by compute, stretched with one
//! position lookup and one inverse lookup of the busy-time function
//! (jitSim §§3.4, 3.6): a barrier task's receive and sends on the way
//! down, then its next compute.

use super::Track;

/// Asks the CPU to bring `x`'s cache line in (a hint: no effect on results).
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing; `x` is a valid reference.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((x as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

impl Track {
    /// Starts the load of the bucket entry [`first_from_bucket`](Self::first_from_bucket)
    /// reads for position `pos` (< period), so that a batch of lookups waits for memory once.
    #[inline]
    pub(crate) fn prefetch_bucket(&self, pos: u64) {
        prefetch(&self.bucket[((pos >> self.shift) as usize).min(self.bucket.len() - 1)]);
    }

    /// The bucket index's first event for position `pos` (< period): no
    /// event before it starts at or after `pos`. Also starts the loads of
    /// the events near it and of those about `ahead` events later.
    #[inline]
    pub(crate) fn first_from_bucket(&self, pos: u64, ahead: usize) -> usize {
        let b = self.bucket[((pos >> self.shift) as usize).min(self.bucket.len() - 1)] as usize;
        let last = self.ev.len() - 1;
        for j in [b, b + 4, b + ahead - ahead.min(8), b + ahead.saturating_sub(4), b + ahead, b + ahead + 4, b + ahead + 8] {
            prefetch(&self.ev[j.min(last)]);
        }
        b
    }

    /// First event index `j ≥ lo` with `cb ≥ target`, searched from `guess`
    /// outwards: O(log distance from the guess).
    #[inline]
    fn first_cb_at_least(&self, lo: usize, guess: usize, target: u64) -> usize {
        let n = self.ev.len() - 1;
        let g = guess.clamp(lo, n);
        if self.ev[g].cb < target {
            return self.gallop(g, |e| e.cb < target);
        }
        // ev[g] qualifies: step back while the one before does too.
        let mut j = g;
        while j > lo && self.ev[j - 1].cb >= target {
            j -= 1;
        }
        j
    }

    /// Events a compute of `work` cycles meets on average.
    pub(crate) fn events_per(&self, work: u64) -> usize {
        (work as u128 * (self.ev.len() - 1) as u128 / self.compute_per_period().max(1) as u128).min(1 << 20) as usize
    }

    /// A task reading the whole trace at position `pos` (cycles, < period)
    /// does a chain of short blocks of `chain` cycles in all, then `work`
    /// (≥ 1) compute cycles. When the chain meets no event once it has
    /// waited out those at its start (or is empty) and the compute does not
    /// reach the trace's end, returns that wait, the compute's duration and
    /// the quiet cycles after its end (the
    /// work-conserving rule makes the end C⁻¹(C(pos) + chain + work), C the
    /// busy cycles before a position); else [`After::MET`]. The search for
    /// `pos` starts at event `first`, which must not lie past it
    /// ([`first_from_bucket`](Self::first_from_bucket) gives one);
    /// O(log distance) to `pos`, then O(log events met) to the end.
    #[inline]
    pub(crate) fn chain_then_compute_from(&self, pos: u64, first: usize, chain: u64, work: u64, ahead: usize) -> After {
        let k = self.gallop(first, |e| e.start < pos);
        self.chain_then_compute_at(pos, k, chain, work, ahead)
    }

    /// [`chain_then_compute_from`](Self::chain_then_compute_from) at
    /// position `x` with `k` events starting before it; the compute's end
    /// is searched from about `ahead` events later.
    #[inline]
    fn chain_then_compute_at(&self, x: u64, k0: usize, w: u64, work: u64, ahead: usize) -> After {
        let n = self.ev.len() - 1;
        // A chain (w > 0) that starts inside an event, or where events
        // start, first waits them out: its first block starts at the end of
        // the last of them (jitSim Fig. 2). An empty chain does not wait.
        let (mut k, mut x0) = (k0, x);
        if w > 0 {
            if k > 0 {
                x0 = x0.max(self.event_end(k - 1));
            }
            while k < n && self.ev[k].start <= x0 {
                x0 = x0.max(self.event_end(k));
                k += 1;
            }
            if x0 + w > self.ev[k].start {
                return After { kc: k0 as u32, ..After::MET };
            }
        }
        let at = x0 + w;
        let target = self.compute_before(k, at) + work;
        let k2 = self.first_cb_at_least(k.saturating_sub(1), k + ahead, target);
        let end = target + self.jb(k2);
        if end > self.period {
            After { kc: k0 as u32, ..After::MET }
        } else {
            let ahead = (self.ev[k2].start - end).min(u32::MAX as u64) as u32;
            After { wait: x0 - x, dur: end - at, ahead, k: k2 as u32, kc: k0 as u32 }
        }
    }

    /// End of event `j` (< events), cycles from the trace start.
    #[inline]
    fn event_end(&self, j: usize) -> u64 {
        self.ev[j].start + (self.jb(j + 1) - self.jb(j))
    }
}

/// Outcome of [`Track::chain_then_compute_from`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct After {
    /// Cycles the chain waits before its first block: the rest of the events at its start.
    pub wait: u64,
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
    pub const MET: After = After { wait: 0, dur: u64::MAX, ahead: 0, k: 0, kc: 0 };

    /// Whether this is [`After::MET`].
    #[inline]
    pub fn met(&self) -> bool {
        self.dur == u64::MAX
    }
}

//! A chain of short blocks followed by compute, stretched with one
//! position lookup and one inverse lookup of the busy-time function
//! (jitSim §§3.4, 3.6): a barrier task's receive and sends on the way
//! down, then its next compute.

use super::{Track, NEAR};

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

/// [`prefetch`] of a raw address, which need not point into an allocation.
#[inline(always)]
fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and never faults, whatever the address.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
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
        // A prefetch of an address past the events is harmless; the pointer is never read.
        let ev = self.ev.as_ptr();
        for j in [b.wrapping_sub(1), b + 3, b + ahead - ahead.min(8), b + ahead.saturating_sub(4), b + ahead, b + ahead + 4, b + ahead + 8]
        {
            prefetch_ptr(ev.wrapping_add(j));
        }
        b
    }

    /// First event index `j ≥ lo` with `cb ≥ target`, searched from `guess`
    /// outwards: forwards it gallops ([`Track::gallop`]), backwards it
    /// counts [`NEAR`] events at a time without branches.
    #[inline]
    fn first_cb_at_least(&self, lo: usize, guess: usize, target: u64) -> usize {
        let n = self.ev.len() - 1;
        let mut g = guess.clamp(lo, n);
        if self.ev[g].cb < target {
            return self.gallop(g, |e| e.cb < target);
        }
        // ev[g] qualifies: count the qualifying events just before it.
        loop {
            let from = g.saturating_sub(NEAR).max(lo);
            let above = self.ev[from..g].iter().map(|e| (e.cb >= target) as usize).sum::<usize>();
            if above < g - from || from == lo {
                return g - above;
            }
            g = from;
        }
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
        self.chain_then_compute_at(pos, self.scan_to(first, pos), chain, work, ahead)
    }

    /// Number of events starting before `pos` (≤ period), scanned from
    /// event `first`, which must not lie past it (a bucket entry: the
    /// buckets are about as wide as the mean distance between events, so
    /// the scan is short).
    #[inline]
    pub(crate) fn scan_to(&self, first: usize, pos: u64) -> usize {
        let mut k = first;
        while self.ev[k].start < pos {
            k += 1;
        }
        k
    }

    /// [`chain_then_compute_from`](Self::chain_then_compute_from) at
    /// position `x` with `k` events starting before it; the compute's end
    /// is searched from about `ahead` events later.
    #[inline]
    fn chain_then_compute_at(&self, x: u64, k0: usize, w: u64, work: u64, ahead: usize) -> After {
        // A chain (w > 0) that starts inside an event, or where events
        // start, first waits them out: its first block starts at the end of
        // the last of them (jitSim Fig. 2). An empty chain does not wait.
        let (mut k, mut x0) = (k0, x);
        if w > 0 {
            (k, x0) = self.wait_out(k0, x);
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

    /// A block at position `pos` (< period) with `k` events starting
    /// before it waits out the events at its start (jitSim Fig. 2): returns
    /// the events starting at or before its first cycle and that cycle's
    /// position.
    #[inline]
    fn wait_out(&self, k: usize, pos: u64) -> (usize, u64) {
        let n = self.ev.len() - 1;
        let (mut k, mut x0) = (k, pos);
        if k > 0 {
            x0 = x0.max(self.event_end(k - 1));
        }
        while k < n && self.ev[k].start <= x0 {
            x0 = x0.max(self.event_end(k));
            k += 1;
        }
        (k, x0)
    }

    /// A block of `w` (≥ 1) cycles at position `pos` (< period), the
    /// search for it from event index `hint`: when, after waiting out the
    /// events at its start, it meets no event, returns that wait, the
    /// quiet cycles after its end (at most `u32::MAX`) and the index of the
    /// event that ends them; else `None`.
    #[inline]
    pub(crate) fn short_block(&self, pos: u64, hint: usize, w: u64) -> Option<(u64, u32, u32)> {
        let (k, x0) = self.wait_out(self.seek(hint, pos), pos);
        let next = self.ev[k].start;
        (x0 + w <= next).then(|| (x0 - pos, (next - x0 - w).min(u32::MAX as u64) as u32, k as u32))
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

#[cfg(test)]
mod tests {
    use super::super::super::engine::splitmix;
    use super::super::super::reference::{random_trace, walk, HZ};
    use super::super::super::synth::{synthetic_trace, SynthSpec};
    use super::*;
    use crate::jitter_trace::JitterTrace;

    /// Small random traces (events back to back, long gaps) and two
    /// synthetic ones of 20,000 and 300,000 detours per second.
    fn traces() -> Vec<JitterTrace> {
        let mut v: Vec<JitterTrace> = (0..300u64).map(|c| random_trace(splitmix(0xb0c, c))).collect();
        for (rate, seed) in [(2e4, 1), (3e5, 2)] {
            v.push(synthetic_trace(&SynthSpec {
                rate_per_s: rate,
                noise: 0.05,
                duration_s: 0.05,
                hz: HZ,
                cosched_window_cycles: None,
                seed,
            }));
        }
        v
    }

    fn tracks() -> Vec<Track> {
        traces().iter().map(|t| Track::new("r", t, HZ, None).unwrap()).collect()
    }

    #[test]
    fn lookups_equal_linear_searches() {
        for (c, t) in tracks().iter().enumerate() {
            let n = t.events();
            let total = t.compute_per_period();
            for x in 0..400u64 {
                let r = splitmix(c as u64, x);
                let pos = if x < 4 { x.min(t.period() - 1) } else { r % t.period() };
                let want = t.ev[..n].iter().take_while(|e| e.start < pos).count();
                let first = t.first_from_bucket(pos, 3);
                assert!(first <= want, "track {c}: bucket entry {first} past position {pos}'s event {want}");
                assert_eq!(t.scan_to(first, pos), want, "track {c} position {pos}");
                // The search for the compute's end, from any guess.
                let lo = want.saturating_sub(1);
                let target = t.ev[lo].cb + 1 + splitmix(c as u64, x + 1000) % (total - t.ev[lo].cb).max(1);
                let end = t.ev.iter().position(|e| e.cb >= target).unwrap_or(n).max(lo);
                let guess = lo + (splitmix(c as u64, x + 2000) % 40) as usize;
                assert_eq!(t.first_cb_at_least(lo, guess, target), end, "track {c} target {target} guess {guess}");
            }
        }
    }

    #[test]
    fn chain_then_compute_equals_the_walk() {
        for (c, trace) in traces().iter().enumerate() {
            let t = Track::new("r", trace, HZ, None).unwrap();
            let p = t.period();
            for x in 0..200u64 {
                let r = |i: u64| splitmix(c as u64 ^ 0x55, 4 * x + i);
                let pos = r(0) % p;
                let chain = if r(1) % 3 == 0 { 0 } else { r(1) % 20 };
                let work = 1 + r(2) % (p / 2 + 1);
                let o = t.chain_then_compute_from(pos, t.first_from_bucket(pos, 2), chain, work, t.events_per(work));
                if o.met() {
                    continue;
                }
                let ctx = format!("track {c} pos {pos} chain {chain} work {work}");
                let chain_end = walk(trace, pos, p, 0, chain);
                if chain > 0 {
                    assert_eq!(chain_end, o.wait + chain, "{ctx}");
                }
                let end = walk(trace, pos, p, 0, chain + work);
                assert_eq!(end, o.wait + chain + o.dur, "{ctx}");
                // No event starts in the quiet cycles after the end.
                assert_eq!(walk(trace, pos, p, end, o.ahead as u64), end + o.ahead as u64, "{ctx}");
            }
        }
    }

    #[test]
    fn short_blocks_equal_the_walk() {
        for (c, trace) in traces().iter().enumerate() {
            let t = Track::new("r", trace, HZ, None).unwrap();
            let p = t.period();
            for x in 0..200u64 {
                let r = |i: u64| splitmix(c as u64 ^ 0x77, 4 * x + i);
                let pos = r(0) % p;
                let w = 1 + r(1) % 30;
                let Some((wait, ahead, next)) = t.short_block(pos, (r(2) % (t.events() as u64 + 1)) as usize, w) else {
                    // Met an event: the walk takes longer than the wait plus the block.
                    continue;
                };
                let ctx = format!("track {c} pos {pos} w {w}");
                let end = walk(trace, pos, p, 0, w);
                assert_eq!(end, wait + w, "{ctx}");
                assert_eq!(walk(trace, pos, p, end, ahead as u64), end + ahead as u64, "{ctx}");
                assert_eq!(t.ev[next as usize].start, (pos + end + ahead as u64).min(p), "{ctx}");
            }
        }
    }
}

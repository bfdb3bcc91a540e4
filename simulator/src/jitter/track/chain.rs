//! The lookups of the fused barrier kernel (jitSim §§3.4, 3.6): where a
//! position lands among the events (through the bucket index, with
//! prefetches so that a batch of lookups waits for memory once), the busy
//! cycles C(p) before a position, and the inverse C⁻¹. Work conservation
//! makes a chain of blocks from `p` end at C⁻¹(C(p) + the chain's work):
//! a barrier task's receive, sends and next compute cost one position
//! lookup and one inverse lookup.

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
    /// Starts the loads of the bucket entries [`first_from_buckets`](Self::first_from_buckets)
    /// reads for positions `pos` and `pos + span` (< period; `span` is
    /// clamped), so that a batch of lookups waits for memory once.
    #[inline]
    pub(crate) fn prefetch_buckets(&self, pos: u64, span: u64) {
        let last = self.bucket.len() - 1;
        prefetch(&self.bucket[((pos >> self.shift) as usize).min(last)]);
        prefetch(&self.bucket[(((pos + span) >> self.shift) as usize).min(last)]);
    }

    /// The bucket index's first events for positions `pos` and `pos +
    /// span` (< period; `span` is clamped): no event before the first
    /// starts at or after `pos`, the second is where the search for a
    /// compute's end expected at `pos + span` starts. Also starts the
    /// loads of the events near each.
    #[inline]
    pub(crate) fn first_from_buckets(&self, pos: u64, span: u64) -> (usize, usize) {
        let last = self.bucket.len() - 1;
        let b = self.bucket[((pos >> self.shift) as usize).min(last)] as usize;
        let b2 = self.bucket[(((pos + span) >> self.shift) as usize).min(last)] as usize;
        // A prefetch of an address past the events is harmless; the pointer is never read.
        let ev = self.ev.as_ptr();
        for j in [b.wrapping_sub(1), b + 3, b2.wrapping_sub(2), b2 + 2] {
            prefetch_ptr(ev.wrapping_add(j));
        }
        (b, b2)
    }

    /// Position span, cycles, that `work` compute cycles take on average
    /// (the work plus the trace's mean jitter over it).
    pub(crate) fn span_of(&self, work: u64) -> u64 {
        (work as u128 * self.period as u128 / self.compute_per_period().max(1) as u128).min(self.period as u128) as u64
    }

    /// First event index `j ≥ lo` with `cb ≥ target`, searched from `guess`
    /// outwards: a few steps either way, then forwards it gallops
    /// ([`Track::gallop`]) and backwards it counts [`NEAR`] events at a
    /// time without branches.
    #[inline]
    fn first_cb_at_least(&self, lo: usize, guess: usize, target: u64) -> usize {
        let n = self.ev.len() - 1;
        let mut g = guess.clamp(lo, n);
        if self.ev[g].cb < target {
            for _ in 0..3 {
                g += 1;
                if g >= n || self.ev[g].cb >= target {
                    return g.min(n);
                }
            }
            return self.gallop(g, |e| e.cb < target);
        }
        // ev[g] qualifies: step back while the one before does too.
        for _ in 0..3 {
            if g == lo || self.ev[g - 1].cb < target {
                return g;
            }
            g -= 1;
        }
        loop {
            let from = g.saturating_sub(NEAR).max(lo);
            let above = self.ev[from..g].iter().map(|e| (e.cb >= target) as usize).sum::<usize>();
            if above < g - from || from == lo {
                return g - above;
            }
            g = from;
        }
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

    /// Compute cycles before position `pos` (< period), with `k` events
    /// starting before it (a start inside an event counts the event's
    /// compute-before), and the compute-before and jitter-before of event
    /// `k`, the next to start: C(pos), and what a block from `pos` needs
    /// to know whether it ends before that event.
    #[inline]
    pub(crate) fn busy_at(&self, k: usize, pos: u64) -> (u64, u64, u64) {
        let e = self.ev[k];
        (self.compute_before(k, pos), e.cb, e.start - e.cb)
    }

    /// C⁻¹: the position at which `target` compute cycles since the trace's
    /// start are done, cycles, and the index of the first event with at
    /// least `target` compute cycles before it (the next event there), or
    /// `None` when that lies past the trace's end. Every event before `lo`
    /// must have fewer than `target` compute cycles before it; the search
    /// starts at `guess`. An end at an event's start leaves the event, so a
    /// block of `w` ≥ 1 cycles from position `p` ends at C⁻¹(C(p) + w),
    /// waiting out first an event it starts in (jitSim §3.4, Fig. 2).
    #[inline]
    pub(crate) fn busy_end(&self, lo: usize, guess: usize, target: u64) -> Option<(usize, u64)> {
        let k2 = self.first_cb_at_least(lo, guess, target);
        let end = target + self.jb(k2);
        (end <= self.period).then_some((k2, end))
    }

    /// Cycles from position `end` (≤ period) to the start of event `k2`, at most `u32::MAX`.
    #[inline]
    pub(crate) fn quiet_after(&self, k2: usize, end: u64) -> u32 {
        (self.ev[k2].start - end).min(u32::MAX as u64) as u32
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
                let (first, _) = t.first_from_buckets(pos, splitmix(c as u64, x + 3000) % t.period());
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

    /// A block from any position, and a chain of two, against the walk:
    /// C⁻¹(C(p) + w) where it ends before the trace's end, a sum before the
    /// next event, no event in the quiet cycles after it.
    #[test]
    fn blocks_end_at_the_inverse_of_the_busy_time() {
        for (c, trace) in traces().iter().enumerate() {
            let t = Track::new("r", trace, HZ, None).unwrap();
            let p = t.period();
            for x in 0..200u64 {
                let r = |i: u64| splitmix(c as u64 ^ 0x55, 8 * x + i);
                let pos = r(0) % p;
                let (w1, w2) = match r(1) % 3 {
                    0 => (1 + r(2) % 20, 1 + r(3) % 20),
                    1 => (1 + r(2) % 3, 1 + r(3) % (p / 2 + 1)),
                    _ => (1 + r(2) % (p / 4 + 1), 1 + r(3) % (p / 4 + 1)),
                };
                let k = t.scan_to(t.first_from_buckets(pos, r(5) % p).0, pos);
                let (c0, cb_next, jb_next) = t.busy_at(k, pos);
                let guess = k + (r(4) % 30) as usize;
                let ctx = format!("track {c} pos {pos} w {w1} + {w2}");
                let t1 = walk(trace, pos, p, 0, w1);
                let t2 = walk(trace, pos, p, t1, w2);
                for (w, want) in [(w1, t1), (w1 + w2, t2)] {
                    match t.busy_end(k.saturating_sub(1), guess, c0 + w) {
                        Some((k2, end)) => {
                            assert_eq!(end - pos, want, "{ctx}: {w} cycles");
                            if c0 + w <= cb_next {
                                assert_eq!(end, c0 + w + jb_next, "{ctx}: {w} cycles before the next event");
                            }
                            let ahead = t.quiet_after(k2, end) as u64;
                            assert_eq!(walk(trace, pos, p, want, ahead), want + ahead, "{ctx}: quiet after {w} cycles");
                            assert!(k2 == t.events() || t.ev[k2].start >= end, "{ctx}");
                        }
                        None => assert!(want > p - pos, "{ctx}: {w} cycles end at {want}, inside the trace"),
                    }
                }
            }
        }
    }
}

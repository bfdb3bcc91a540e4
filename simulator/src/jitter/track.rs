//! A jitter trace prepared for fast, work-conserving stretching of compute
//! (jitSim §3.4), shared read-only by every task, and the per-task cursor.
//!
//! The trace is seen as a cyclic timeline of length `period` cycles: compute
//! runs in the gaps and stops during jitter events. A task doing `w` compute
//! cycles from time `t` ends at the first time `t'` at which the gaps in
//! `[t, t')` add up to `w`; every event met on the way is consumed in full.
//! A start inside an event waits out its remainder; an end exactly at an
//! event start leaves that event to the next call (jitSim Fig. 2).

use super::par::*;
use super::JitterError;

mod chain;
use crate::jitter_trace::JitterTrace;

/// Events [`Track::gallop`] counts before it gallops.
const NEAR: usize = 8;

/// One event in prepared form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ev {
    /// Event start, cycles from the trace start.
    start: u64,
    /// Compute (non-jitter) cycles before the event starts.
    cb: u64,
}

/// A jitter trace prepared for stretching: prefix sums over its events,
/// in cycles of a reference frequency.
#[derive(Debug, Clone)]
pub struct Track {
    /// File the trace came from (for messages).
    pub name: String,
    /// Events, plus a sentinel at `period` (start = period, cb = compute per period).
    ev: Vec<Ev>,
    /// Length of the cyclic timeline, cycles (the trace's duration).
    period: u64,
    /// High-priority window starts, cycles from the trace start (jitSim §3.5).
    windows: Vec<u64>,
    /// Longest stretch of back-to-back jitter, cycles.
    longest_run: u64,
    /// `bucket[b]`: first event starting at or after `b << shift`.
    bucket: Vec<u32>,
    /// log₂ of the bucket width, cycles.
    shift: u32,
}

impl Track {
    /// Prepares `trace`, rescaling its cycles by `ref_hz / trace.header.tsc_hz`
    /// so that several traces share one time base. `window_cycles`, when given,
    /// overrides the trace's co-scheduler window marks (in the trace's own cycles).
    ///
    /// # Errors
    /// [`JitterError::BadTrace`] naming `name` when the trace covers 0 cycles
    /// or is all jitter (no compute cycles).
    pub fn new(name: &str, trace: &JitterTrace, ref_hz: f64, window_cycles: Option<u64>) -> Result<Track, JitterError> {
        if trace.duration_cycles == 0 {
            return Err(JitterError::BadTrace { path: name.into(), why: "the trace covers 0 cycles".into() });
        }
        let scale = ref_hz / trace.header.tsc_hz;
        let conv = |c: u64| if (scale - 1.0).abs() < 1e-12 { c } else { (c as f64 * scale).round() as u64 };
        // Scale event starts and cumulative jitter separately, then keep
        // compute-before (start − jitter-before) non-decreasing.
        let mut ev: Vec<Ev> = Vec::with_capacity(trace.records.len() + 1);
        let (mut at, mut jcum) = (trace.lead_cycles, 0u64);
        let mut push = |at: u64, jcum: u64| {
            let jb = conv(jcum);
            let prev_cb = ev.last().map_or(0, |e| e.cb);
            let start = conv(at).max(prev_cb + jb);
            ev.push(Ev { start, cb: start - jb });
        };
        for r in &trace.records {
            push(at, jcum);
            at += r.jitter_cycles + r.cycles_to_next;
            jcum += r.jitter_cycles;
        }
        push(trace.duration_cycles, jcum);
        let period = ev[ev.len() - 1].start;
        let windows: Vec<u64> = match window_cycles {
            Some(w) if w > 0 => (0u64..).map(|k| k * w).take_while(|&t| t < trace.duration_cycles).map(conv).collect(),
            _ => trace.window_starts().map(conv).collect(),
        };
        if ev[ev.len() - 1].cb == 0 {
            return Err(JitterError::BadTrace { path: name.into(), why: "the trace is all jitter (no compute cycles)".into() });
        }
        let mut longest_run = 0;
        let mut run = 0;
        for r in trace.records.iter().chain(trace.records.iter()) {
            run += r.jitter_cycles;
            longest_run = longest_run.max(run);
            if r.cycles_to_next > 0 {
                run = 0;
            }
        }
        // Bucket index: bucket[b] = first event starting at or after b << shift,
        // with buckets about as wide as the mean distance between events.
        let shift = (period / ev.len() as u64).max(1).ilog2();
        let nb = (period >> shift) as usize + 2;
        let mut bucket = Vec::with_capacity(nb);
        let mut k = 0usize;
        for b in 0..nb as u64 {
            while k < ev.len() - 1 && ev[k].start < b << shift {
                k += 1;
            }
            bucket.push(k as u32);
        }
        Ok(Track { name: name.into(), ev, period, windows, longest_run: conv(longest_run), bucket, shift })
    }

    /// Length of the cyclic timeline, cycles.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// Compute cycles available per period (period minus all jitter).
    pub fn compute_per_period(&self) -> u64 {
        self.ev[self.ev.len() - 1].cb
    }

    /// Longest stretch of back-to-back jitter (events with no gap between
    /// them), cycles; a trace segment must be longer for compute to progress.
    pub fn longest_jitter_run(&self) -> u64 {
        self.longest_run
    }

    /// Number of jitter events.
    pub fn events(&self) -> usize {
        self.ev.len() - 1
    }

    /// Co-scheduler high-priority window starts, cycles (may be empty).
    pub fn windows(&self) -> &[u64] {
        &self.windows
    }

    /// Jitter cycles before event `k` (k ≤ events()).
    #[inline]
    fn jb(&self, k: usize) -> u64 {
        let e = self.ev[k];
        e.start - e.cb
    }

    /// First index `i` in `from..=n` (n = events) with `!lt(ev[i])`, or `n`;
    /// `lt` must hold on a prefix. The first [`NEAR`] events are counted
    /// without branches (most searches end a few events away), then it
    /// gallops: O(log distance).
    #[inline]
    fn gallop(&self, from: usize, lt: impl Fn(&Ev) -> bool) -> usize {
        let n = self.ev.len() - 1;
        if from >= n || !lt(&self.ev[from]) {
            return from.min(n);
        }
        let mut lo = from;
        if from + NEAR <= n {
            let near = self.ev[from..from + NEAR].iter().map(|e| lt(e) as usize).sum::<usize>();
            if near < NEAR {
                return from + near;
            }
            lo = from + NEAR - 1;
        }
        let mut step = 1;
        while lo + step < n && lt(&self.ev[lo + step]) {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step).min(n);
        lo + 1 + self.ev[lo + 1..hi].partition_point(&lt)
    }

    /// Number of events starting before `pos` (≤ period), searched from `hint`.
    #[inline]
    pub(crate) fn seek(&self, hint: usize, pos: u64) -> usize {
        let k = hint.min(self.ev.len() - 1);
        if k > 0 && self.ev[k - 1].start >= pos {
            return self.bucket_seek(pos);
        }
        // Near the hint (the common case) scan; far (a wait skipped many events) use the buckets.
        for j in k..(k + 4).min(self.ev.len()) {
            if self.ev[j].start >= pos {
                return j;
            }
        }
        self.bucket_seek(pos)
    }

    /// Number of events starting before `pos`, through the bucket index.
    #[inline]
    fn bucket_seek(&self, pos: u64) -> usize {
        let b = self.bucket[((pos >> self.shift) as usize).min(self.bucket.len() - 1)] as usize;
        self.gallop(b, |e| e.start < pos)
    }

    /// Compute cycles in `[0, pos)`, with `k` = events starting before `pos`.
    #[inline]
    fn compute_before(&self, k: usize, pos: u64) -> u64 {
        if k > 0 {
            let e = self.ev[k - 1];
            if pos < e.start + (self.jb(k) - (e.start - e.cb)) {
                return e.cb;
            }
        }
        pos - self.jb(k)
    }

    /// Does up to `work` (> 0) compute cycles from trace position `pos`, not
    /// going past position `lim` (`pos < lim ≤ period`). Returns `(end, done)`.
    #[inline]
    fn advance(&self, c: &mut Cur, pos: u64, work: u64, lim: u64) -> (u64, u64) {
        let k = self.seek(c.k, pos);
        let c0 = self.compute_before(k, pos);
        let target = c0 + work;
        // Events with cb < target are met in full; start from the end hint when it is safe.
        let mut from = k.saturating_sub(1);
        if c.k2 > from && c.k2 < self.ev.len() && self.ev[c.k2 - 1].cb < target {
            from = c.k2;
        }
        let k2 = self.gallop(from, |e| e.cb < target);
        let end = target + self.jb(k2);
        if end <= lim {
            *c = Cur { k, k2 };
            return (end, work);
        }
        let kl = self.seek(k, lim);
        let cl = self.compute_before(kl, lim);
        *c = Cur { k: kl, k2: kl };
        (lim, cl - c0)
    }

    /// Trace position of task time `t` for a task reading `[offset, offset + segment)`
    /// cyclically; returns `(pos, cycles to the segment end)`.
    #[inline]
    fn locate(&self, offset: u64, segment: u64, t: u64) -> (u64, u64) {
        let v = if t < segment { t } else { t % segment };
        let mut pos = offset + v;
        if pos >= self.period {
            pos -= self.period;
            if pos >= self.period {
                pos %= self.period;
            }
        }
        (pos, segment - v)
    }

    /// [`stretch`](Self::stretch) with a two-index cursor: `c.k` is left at
    /// the start position's event index and `c.k2` at the end's, so a sweep
    /// over tasks sorted by offset walks the trace once.
    #[inline]
    pub(crate) fn stretch_cur(&self, c: &mut Cur, offset: u64, segment: u64, t: u64, work: u64) -> u64 {
        let (mut t, mut work) = (t, work);
        while work > 0 {
            let (pos, to_seg_end) = self.locate(offset, segment, t);
            let lim = pos + to_seg_end.min(self.period - pos);
            let (end, done) = self.advance(c, pos, work, lim);
            t += end - pos;
            work -= done;
        }
        t
    }

    /// Work-conserving stretch (jitSim §3.4): a task whose trace segment is
    /// `[offset, offset + segment)` (cycles, read cyclically; `segment` ≤ period)
    /// starts `work` compute cycles at its own time `t` (cycles since its start);
    /// returns the time it finishes, cycles. `hint` is the task's cursor state
    /// (start it at 0). A start inside an event first waits out its remainder.
    /// Cost: O(1) expected to find the start (bucket index), O(log events met) to the end.
    ///
    /// # Panics
    /// If `segment` is 0. Never returns if the segment holds no compute
    /// cycles; [`validate`](super::engine::validate) rejects such a coverage.
    #[inline]
    pub fn stretch(&self, hint: &mut u32, offset: u64, segment: u64, t: u64, work: u64) -> u64 {
        let mut c = Cur { k: *hint as usize, k2: 0 };
        let end = self.stretch_cur(&mut c, offset, segment, t, work);
        *hint = c.k2.max(c.k) as u32;
        end
    }

    /// [`stretch`](Self::stretch) with a [`Quiet`] cursor: a block that
    /// fits in the cursor's quiet span takes exactly its work (two compares);
    /// any other is stretched through the prefix sums from the cursor's
    /// event index (a few events away) or the bucket index (farther), O(1)
    /// expected plus O(log events met), and leaves the cursor on the
    /// quiet span around its end. Same result as `stretch` for any `t`, in
    /// any call order.
    #[inline]
    pub fn stretch_quiet(&self, q: &mut Quiet, offset: u64, segment: u64, t: u64, work: u64) -> u64 {
        if t >= q.from && t <= q.until() && work <= q.until() - t {
            return t + work;
        }
        self.stretch_quiet_slow(q, offset, segment, t, work)
    }

    #[inline(never)]
    fn stretch_quiet_slow(&self, q: &mut Quiet, offset: u64, segment: u64, t: u64, work: u64) -> u64 {
        let mut c = Cur { k: q.k as usize, k2: 0 };
        let end = self.stretch_cur(&mut c, offset, segment, t, work);
        *q = self.quiet_at(c.k2, offset, segment, end);
        end
    }

    /// The longest span of task time around `t` (cycles) in which the task
    /// meets no event, segment end or trace wrap; empty when `t` falls in an event.
    fn quiet_at(&self, hint: usize, offset: u64, segment: u64, t: u64) -> Quiet {
        let (pos, to_seg_end) = self.locate(offset, segment, t);
        let into_seg = segment - to_seg_end;
        let k = self.seek(hint, pos);
        // End of the last event starting before `pos`.
        let gap_start = if k > 0 { self.ev[k - 1].start + (self.jb(k) - self.jb(k - 1)) } else { 0 };
        if gap_start > pos {
            return Quiet { from: t, len: 0, k: k as u32 };
        }
        // Each side at most 2^31 cycles, so the span's length fits its field.
        let half = (u32::MAX / 2) as u64;
        let back = (pos - gap_start).min(into_seg).min(half);
        let ahead = (self.ev[k].start - pos).min(to_seg_end).min(self.period - pos).min(half);
        Quiet { from: t - back, len: (back + ahead) as u32, k: k as u32 }
    }
}

impl Track {
    /// Latest finish time, cycles, of tasks reading the whole trace
    /// cyclically from `offsets` (sorted, each < period) that all start
    /// `work` (≥ 1) compute cycles at task time `now` (jitSim Fig. 3).
    ///
    /// Exact, without stretching every task: inside one gap between
    /// events a later start never finishes sooner after its start (the
    /// useful time `U(p) = p − jitter before p` grows at most as fast as
    /// `p`, so `U⁻¹(U(p) + work) − p` does not decrease), and inside an
    /// event an earlier start waits longer. So only the last task of each
    /// gap and the first of each event are stretched, the tasks between
    /// them skipped by galloping: O(min(tasks, events) · log) per call, in
    /// chunks over rayon. Before that, a block of 16 tasks whose bound —
    /// `work` plus the jitter from its first position to its last task's
    /// end — cannot beat the best finish seen is skipped whole.
    pub(crate) fn latest_finish(&self, offsets: &[u64], now: u64, work: u64) -> u64 {
        const CHUNK: usize = 16 * 1024;
        const BLOCK: usize = 16;
        let n = offsets.len();
        if n == 0 || work == 0 {
            return now;
        }
        let p = self.period;
        let shift = now % p;
        // Offsets at or past `p − shift` wrap to the front: positions ascend over j.
        let split = offsets.partition_point(|&o| o < p - shift);
        let off = |j: usize| offsets[if split + j < n { split + j } else { split + j - n }];
        let pos = |j: usize| {
            let o = off(j);
            if o >= p - shift {
                o + shift - p
            } else {
                o + shift
            }
        };
        // Finish of the task at `pc` (k: events starting at or before pc;
        // k2: a lower bound of the end's event index, advanced) and the
        // jitter before its end, cycles.
        let finish = |j: usize, pc: u64, k: usize, k2: &mut usize| -> (u64, u64) {
            let target = self.compute_before(k, pc) + work;
            *k2 = self.gallop((*k2).max(k.saturating_sub(1)), |e| e.cb < target);
            let end = target + self.jb(*k2);
            if end <= p {
                (now + (end - pc), end - target)
            } else {
                (self.stretch_cur(&mut Cur::default(), off(j), p, now, work), u64::MAX)
            }
        };
        (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (lo, hi) = (c * CHUNK, ((c + 1) * CHUNK).min(n));
                let mut best = now;
                // Pointers of the block probes (b: last task, a: first) and of the candidates.
                let (mut kb, mut k2b, mut ka, mut k, mut k2) = (0usize, 0usize, 0usize, 0usize, 0usize);
                for blo in (lo..hi).step_by(BLOCK) {
                    let bhi = (blo + BLOCK).min(hi);
                    // Every task of the block finishes by its start plus `work` plus the
                    // jitter between the block's first position and its last task's end.
                    let (pa, pb) = (pos(blo), pos(bhi - 1));
                    kb = self.gallop(kb, |e| e.start <= pb);
                    let (fb, jitter_to_end) = finish(bhi - 1, pb, kb, &mut k2b);
                    best = best.max(fb);
                    ka = self.gallop(ka, |e| e.start <= pa);
                    let jitter_before_a = pa - self.compute_before(ka, pa);
                    if jitter_to_end != u64::MAX && now + work + (jitter_to_end - jitter_before_a) <= best {
                        continue;
                    }
                    let mut j = blo;
                    while j < bhi {
                        let pj = pos(j);
                        k = self.gallop(k, |e| e.start <= pj);
                        let event_end = if k > 0 { self.ev[k - 1].start + (self.jb(k) - self.jb(k - 1)) } else { 0 };
                        let (cand, next) = if pj < event_end {
                            (j, first_at_or_after(&pos, j, bhi, event_end))
                        } else {
                            let next = first_at_or_after(&pos, j, bhi, self.ev[k].start);
                            (next - 1, next)
                        };
                        best = best.max(finish(cand, pos(cand), k, &mut k2).0);
                        j = next;
                    }
                }
                best
            })
            .max()
            .unwrap_or(now)
    }
}

/// First `j` in `from..hi` with `pos(j) ≥ bound`, or `hi`; `pos` ascends. Gallops.
#[inline]
fn first_at_or_after(pos: &impl Fn(usize) -> u64, from: usize, hi: usize, bound: u64) -> usize {
    if from >= hi || pos(from) >= bound {
        return from;
    }
    let (mut lo, mut step) = (from, 1);
    while lo + step < hi && pos(lo + step) < bound {
        lo += step;
        step *= 2;
    }
    let (mut l, mut h) = (lo + 1, (lo + step).min(hi));
    while l < h {
        let m = l + (h - l) / 2;
        if pos(m) < bound {
            l = m + 1;
        } else {
            h = m;
        }
    }
    l
}

/// A task's cursor for [`Track::stretch_quiet`]: a span `[from, until]` (under 2³² cycles) of
/// the task's own time, cycles, in which its trace slice holds no event, so
/// that a compute block inside it is not stretched, and the index of the
/// event that ends the span (where the next search in the trace starts).
/// Start it at `Quiet::default()`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quiet {
    from: u64,
    len: u32,
    k: u32,
}

impl Quiet {
    /// The span `[t, t + ahead]` ending at event `k`.
    #[inline]
    pub(crate) fn ahead(t: u64, ahead: u32, k: u32) -> Quiet {
        Quiet { from: t, len: ahead, k }
    }

    /// An empty span that only carries event index `k` as the start of the next search.
    #[inline]
    pub(crate) fn hint(k: u32) -> Quiet {
        Quiet { from: 0, len: 0, k }
    }

    /// Index of the event that ends the span: where a search near it starts.
    #[inline]
    pub(crate) fn k(&self) -> usize {
        self.k as usize
    }

    /// First task cycle of the span.
    #[inline]
    pub fn from(&self) -> u64 {
        self.from
    }

    /// Last task cycle of the span (a block may end here).
    #[inline]
    pub fn until(&self) -> u64 {
        self.from + self.len as u64
    }
}

/// Cursor of a sweep: event indices of the last start and end positions.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cur {
    pub k: usize,
    pub k2: usize,
}

/// A per-rank cursor over a shared [`Track`], for injecting jitter into
/// replays and online runs (DESIGN "Jitter" (b)): the rank's clock cycle 0
/// sits at `offset` in the trace, which is read cyclically.
#[derive(Debug, Clone)]
pub struct TraceCursor<'a> {
    track: &'a Track,
    offset: u64,
    quiet: Quiet,
}

impl<'a> TraceCursor<'a> {
    /// A cursor whose rank-time 0 is trace position `offset` (cycles, taken modulo the period).
    pub fn new(track: &'a Track, offset: u64) -> Self {
        TraceCursor { track, offset: offset % track.period, quiet: Quiet::default() }
    }

    /// Cycles consumed by a compute block of `work_cycles` that starts at
    /// rank time `start_cycle` (cycles since the rank's start), i.e. the
    /// block's work plus the jitter it meets (jitSim §3.4, work-conserving).
    /// A block meeting no event costs two compares; others O(1) expected
    /// plus O(log events met), in any call order.
    pub fn stretch(&mut self, start_cycle: u64, work_cycles: u64) -> u64 {
        let t = self.track;
        t.stretch_quiet(&mut self.quiet, self.offset, t.period, start_cycle, work_cycles) - start_cycle
    }
}

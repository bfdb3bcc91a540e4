//! The event queue of the replay: "rank r may run at time t" events and
//! the engine's own (network, nonblocking collectives), ordered by
//! `(time, seq)` with `f64::total_cmp` (as in dslab's simcore and
//! nexosim); scheduling into the past is an error.
//!
//! The queue is a radix heap (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster
//! algorithms for the shortest path problem", JACM 1990) over the 128-bit
//! key `(time, seq)`: a monotone priority queue, which is what a
//! simulation that never schedules into the past needs. Pushing appends
//! to a bucket; popping empties the lowest non-empty bucket into lower
//! ones, so every event moves a few times through memory in sequence
//! instead of along a heap path of cache misses. Buckets split keys by
//! 4-bit digits rather than bits: an event is filed by the highest digit
//! in which its key differs from the last key taken and by its value
//! there, so each move takes it down at least one digit (at most 32
//! moves, a few in practice, where one bucket per bit moves an event once
//! per bit of the spread of the queued keys). Keys are unique
//! (`seq` is), so the pop order is exactly the `(time, seq)` order.

use super::{ReplayError, ReplayErrorKind};

/// What an event is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Rank r may run.
    Rank(u32),
    /// A transfer of the shared network (link sharing) may have ended.
    Network,
    /// A step of rank r's nonblocking collectives may have ended.
    Nbc(u32),
    /// A compute block on oversubscribed host h may have ended.
    Cpu(u32),
    /// Requests of I/O call j under way may start.
    Io(u32),
}

impl Kind {
    /// The rank the event concerns, if any.
    fn rank(self) -> Option<u32> {
        match self {
            Kind::Rank(r) | Kind::Nbc(r) => Some(r),
            Kind::Network | Kind::Cpu(_) | Kind::Io(_) => None,
        }
    }
}

/// One event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    /// Simulated time, seconds.
    pub(crate) time: f64,
    /// What happens.
    pub(crate) kind: Kind,
}

/// An event in a bucket: its key `(time, seq)` in two halves (24 bytes,
/// where a `u128` would align the entry to 32) and its kind.
#[derive(Debug, Clone, Copy)]
struct Entry {
    time: u64,
    seq: u64,
    kind: Kind,
}

impl Entry {
    fn key(&self) -> u128 {
        (self.time as u128) << 64 | self.seq as u128
    }
}

/// `time` as an unsigned integer in the order of `f64::total_cmp`.
fn time_bits(time: f64) -> u64 {
    let b = time.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

fn key_time(key: u128) -> f64 {
    let b = (key >> 64) as u64;
    f64::from_bits(if b >> 63 == 1 { b & !(1 << 63) } else { !b })
}

/// Bits of a digit.
const DIGIT_BITS: u32 = 4;

/// Values of a digit.
const RADIX: usize = 1 << DIGIT_BITS;

/// Buckets of a radix heap over 128-bit keys: bucket 0 holds keys equal
/// to the last key taken; bucket `1 + p · RADIX + v` those whose highest
/// digit differing from it is digit `p` (bits `4p..4p + 4`), of value `v`.
/// Every key of a bucket is smaller than every key of a later one.
const BUCKETS: usize = 1 + (128 / DIGIT_BITS as usize) * RADIX;

/// Words of the bitmap of non-empty buckets.
const WORDS: usize = BUCKETS.div_ceil(64);

/// Entries of capacity a bucket keeps once emptied.
const KEEP: usize = 1 << 10;

/// Min-queue of events by `(time, seq)`; refuses to schedule into the past.
#[derive(Debug)]
pub(crate) struct EventQueue {
    buckets: Vec<Vec<Entry>>,
    /// Bit `i` set when bucket `i` holds entries.
    filled: [u64; WORDS],
    /// Per bucket holding entries: its smallest key and that event's kind.
    least: Vec<(u128, Kind)>,
    /// The last key moved to bucket 0 (no key in the queue is smaller).
    last: u128,
    /// Events queued.
    len: usize,
    /// The smallest key queued and its event's kind, when known.
    min: Option<(u128, Kind)>,
    seq: u64,
    /// Current simulated time, seconds.
    pub(crate) now: f64,
    /// Events popped so far.
    pub(crate) popped: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: vec![Vec::new(); BUCKETS],
            filled: [0; WORDS],
            least: vec![(0, Kind::Network); BUCKETS],
            last: 0,
            len: 0,
            min: None,
            seq: 0,
            now: 0.0,
            popped: 0,
        }
    }
}

impl EventQueue {
    /// Schedules event `kind` at `time` (seconds).
    pub(crate) fn schedule(&mut self, time: f64, kind: Kind) -> Result<(), ReplayError> {
        if time.is_nan() || time < self.now {
            let err = ReplayErrorKind::PastEvent { now_s: self.now, at_s: time };
            return Err(ReplayError { rank: kind.rank(), kind: err });
        }
        let e = Entry { time: time_bits(time), seq: self.seq, kind };
        let key = e.key();
        self.seq += 1;
        self.push(e);
        self.len += 1;
        if let Some(m) = self.min.as_mut() {
            if key < m.0 {
                *m = (key, kind);
            }
        }
        Ok(())
    }

    fn bucket(&self, key: u128) -> usize {
        let x = key ^ self.last;
        if x == 0 {
            return 0;
        }
        let p = (127 - x.leading_zeros()) / DIGIT_BITS;
        let v = (key >> (p * DIGIT_BITS)) as usize & (RADIX - 1);
        1 + p as usize * RADIX + v
    }

    fn push(&mut self, e: Entry) {
        let key = e.key();
        let b = self.bucket(key);
        let bit = 1 << (b % 64);
        if self.filled[b / 64] & bit == 0 || key < self.least[b].0 {
            self.least[b] = (key, e.kind);
        }
        self.buckets[b].push(e);
        self.filled[b / 64] |= bit;
    }

    /// The first non-empty bucket (the queue is not empty).
    fn first_filled(&self) -> usize {
        let w = self.filled.iter().position(|&w| w != 0).expect("queue not empty");
        w * 64 + self.filled[w].trailing_zeros() as usize
    }

    /// Moves the smallest key into bucket 0 (the queue is not empty).
    fn refill(&mut self) {
        let i = self.first_filled();
        if i == 0 {
            return;
        }
        let mut moved = std::mem::take(&mut self.buckets[i]);
        self.filled[i / 64] &= !(1 << (i % 64));
        self.last = self.least[i].0;
        // Each key agrees with the new last down to this bucket's digit,
        // so it lands in a lower bucket.
        for e in moved.drain(..) {
            self.push(e);
        }
        // Keep the emptied bucket's memory for its next fill, up to a
        // bound: the sum of every bucket's largest fill would otherwise stay.
        moved.shrink_to(KEEP);
        self.buckets[i] = moved;
    }

    pub(crate) fn pop(&mut self) -> Option<Event> {
        if self.len == 0 {
            return None;
        }
        self.refill();
        let e = self.buckets[0].pop().expect("refilled");
        if self.buckets[0].is_empty() {
            self.filled[0] &= !1;
        }
        self.len -= 1;
        self.min = None;
        let time = key_time(e.key());
        self.now = time;
        self.popped += 1;
        Some(Event { time, kind: e.kind })
    }

    /// The smallest key queued and its event's kind, if any.
    fn min_entry(&mut self) -> Option<(u128, Kind)> {
        if self.len == 0 {
            return None;
        }
        if self.min.is_none() {
            // Every key of a lower bucket is smaller than every key of a
            // higher one: the minimum is the first non-empty bucket's.
            self.min = Some(self.least[self.first_filled()]);
        }
        self.min
    }

    /// True when a rank at `time` is still strictly the earliest, so it may
    /// go on without a round trip through the queue.
    pub(crate) fn is_next(&mut self, time: f64) -> bool {
        self.min_entry().is_none_or(|(k, _)| time < key_time(k))
    }

    /// The kind of the event [`EventQueue::pop`] would give now, if any
    /// (events scheduled before that pop may come first). Finding it is
    /// work the next pop then skips.
    pub(crate) fn peek_kind(&mut self) -> Option<Kind> {
        self.min_entry().map(|(_, kind)| kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_orders_by_time_then_seq_and_refuses_the_past() {
        let mut q = EventQueue::default();
        q.schedule(2.0, Kind::Rank(0)).unwrap();
        q.schedule(1.0, Kind::Network).unwrap();
        q.schedule(1.0, Kind::Nbc(2)).unwrap();
        let order: Vec<Kind> = std::iter::from_fn(|| q.pop().map(|e| e.kind)).collect();
        assert_eq!(order, [Kind::Network, Kind::Nbc(2), Kind::Rank(0)]);
        assert_eq!(q.now, 2.0);
        let e = q.schedule(1.5, Kind::Rank(7)).unwrap_err();
        assert!(matches!(e.kind, ReplayErrorKind::PastEvent { .. }) && e.rank == Some(7), "{e}");
        assert!(q.schedule(f64::NAN, Kind::Network).unwrap_err().rank.is_none());
        assert!(q.schedule(2.0, Kind::Rank(7)).is_ok());
    }

    #[test]
    fn time_keys_follow_total_cmp() {
        let xs = [0.0, -0.0, 1e-300, 5e-324, 1.0, 1.5, 2.0, 1e300, f64::INFINITY, -1.0, f64::NEG_INFINITY];
        for &a in &xs {
            assert_eq!(key_time((time_bits(a) as u128) << 64).to_bits(), a.to_bits());
            for &b in &xs {
                assert_eq!(time_bits(a).cmp(&time_bits(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
    }

    /// Pops in `(time, seq)` order, against a sorted reference, with
    /// schedules interleaved with pops and peeks as the engine does them.
    #[test]
    fn queue_matches_a_sorted_reference_under_interleaving() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut q = EventQueue::default();
        // Reference: (time, seq, rank) still queued.
        let mut reference: Vec<(f64, u64, u32)> = Vec::new();
        let mut seq = 0u64;
        for step in 0..20_000u32 {
            let r = next();
            if r % 3 != 0 || reference.is_empty() {
                // Some ties on purpose: times on a coarse grid.
                let dt = match r % 7 {
                    0 => 0.0,
                    1 => ((r >> 8) % 4) as f64 * 0.25,
                    2 => ((r >> 8) % 50) as f64 * 1e3,
                    _ => ((r >> 8) % 1000) as f64 * 1e-6,
                };
                let t = q.now + dt;
                q.schedule(t, Kind::Rank(step)).unwrap();
                reference.push((t, seq, step));
                seq += 1;
            } else {
                reference.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let probe = q.now + ((r >> 8) % 1000) as f64 * 1e-6;
                assert_eq!(q.is_next(probe), probe < reference[0].0);
                assert_eq!(q.peek_kind(), Some(Kind::Rank(reference[0].2)));
                let (t, _, rank) = reference.remove(0);
                let e = q.pop().unwrap();
                assert_eq!((e.time.to_bits(), e.kind), (t.to_bits(), Kind::Rank(rank)));
            }
        }
        reference.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (t, _, rank) in reference {
            let e = q.pop().unwrap();
            assert_eq!((e.time, e.kind), (t, Kind::Rank(rank)));
        }
        assert!(q.pop().is_none() && q.is_next(0.0));
    }
}

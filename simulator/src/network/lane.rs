//! A rank's receive copy lane (`[network] serial_receives`): the
//! rendezvous transfers a rank receives from its own host move their data
//! one at a time at the intra-host model's largest-size bandwidth, as a
//! single-copy transport (CMA, XPMEM) has the receiver copy each in turn.
//!
//! **The rule** (the offline replay and online mode both apply it, so it
//! never depends on the order in which real time brings the facts):
//!
//! - A transfer's data may move from `from = max(send post, receive post)
//!   + latency` ([`Turn`]); it needs `bytes / rate` of the lane.
//! - The receiver's lane is allocated at the MPI call that completes the
//!   receive (a wait, a successful test, a blocking receive), once every
//!   transfer that call completes has matched: those transfers take their
//!   turns in order of `from`, ties in the order the call lists its
//!   requests ([`RecvLane::take_turns`]). Each takes the lane's first free
//!   time from its `from` on (gaps left by earlier calls' turns included)
//!   until its bytes are through, and never ends before its pair model
//!   alone would end it.
//! - The sender's request completes when the pair model's transfer ends
//!   (`max(posts) + transfer(bytes)`), whatever the receiver's turns: the
//!   sender needs no fact that only the receiver's later calls settle.
//!
//! A receive freed before it is waited takes no turn. Transfers below
//! `serial_receives_min_bytes`, eager ones and those between hosts move
//! without a turn.

use super::Segment;

/// A matched transfer waiting for its turn in the receiver's lane:
/// times in seconds of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Turn {
    /// When both sides had posted, `max(send post, receive post)`.
    pub start: f64,
    /// When its data may move: `start` + the segment's latency phase.
    pub from: f64,
    /// Bytes to copy.
    pub bytes: u64,
    /// When it would end alone at its segment's rate bound.
    pub alone_end: f64,
}

impl Turn {
    /// The turn of a transfer of `bytes` on segment `seg` of its pair
    /// model whose two sides have posted by `start` (seconds), with the
    /// latency phase and rate bound of [`Segment::alone_phases`].
    pub fn new(seg: &Segment, start: f64, bytes: u64) -> Self {
        let (lat, bound) = seg.alone_phases(bytes);
        Turn { start, from: start + lat, bytes, alone_end: start + lat + bytes as f64 / bound }
    }
}

/// Busy intervals of one rank's receive copy lane, seconds of virtual time.
#[derive(Debug, Clone)]
pub struct RecvLane {
    /// The lane's rate, bytes/s.
    rate: f64,
    /// Disjoint busy intervals `(from, to)`, in time order.
    busy: Vec<(f64, f64)>,
}

/// Intervals kept; the earliest go first. A transfer that starts before
/// the earliest interval kept is no longer delayed by the ones dropped.
const KEPT: usize = 64;

impl RecvLane {
    /// An idle lane copying `rate` bytes/s.
    pub fn new(rate: f64) -> Self {
        RecvLane { rate, busy: Vec::new() }
    }

    /// A transfer of `bytes` whose data may move from `from` (seconds)
    /// takes the lane's free time from then on until its bytes are copied;
    /// returns when they are.
    fn copy(&mut self, from: f64, bytes: u64) -> f64 {
        let mut left = bytes as f64 / self.rate;
        if left.is_nan() || left <= 0.0 {
            // Nothing to copy (or a lane of infinite rate): no turn to wait for.
            return from;
        }
        let mut t = from;
        for &(a, b) in &self.busy {
            if b <= t {
                continue;
            }
            if a > t {
                let gap = a - t;
                if gap >= left {
                    break;
                }
                left -= gap;
            }
            t = b;
        }
        let end = t + left;
        // Every gap between `from` and `end` is now filled: the busy set
        // becomes its union with [from, end], merged in place.
        let first = self.busy.partition_point(|&(_, b)| b < from);
        let last = self.busy.partition_point(|&(a, _)| a <= end);
        let merged = match first < last {
            true => (self.busy[first].0.min(from), self.busy[last - 1].1.max(end)),
            false => (from, end),
        };
        self.busy.splice(first..last, std::iter::once(merged));
        let over = self.busy.len().saturating_sub(KEPT);
        self.busy.drain(..over);
        end
    }

    /// The turns of the transfers one MPI call completes, `turns` as
    /// `(position in the call's request list, turn, key)`: they take the
    /// lane in order of `from`, ties by position (module docs), and
    /// `done(key, end_s, d_s)` is called for each in that order with its
    /// end and its model duration `end − start`, seconds. Reorders `turns`.
    pub fn take_turns<K: Copy>(&mut self, turns: &mut [(u32, Turn, K)], mut done: impl FnMut(K, f64, f64)) {
        turns.sort_by(|a, b| a.1.from.total_cmp(&b.1.from).then(a.0.cmp(&b.0)));
        for &(_, t, key) in turns.iter() {
            let end = self.copy(t.from, t.bytes).max(t.alone_end);
            done(key, end, end - t.start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_fill_the_free_time_after_their_start_in_either_order() {
        // 1 byte/s: bytes are seconds.
        let mut a = RecvLane::new(1.0);
        assert_eq!(a.copy(0.0, 2), 2.0);
        assert_eq!(a.copy(1.0, 2), 4.0);
        let mut b = RecvLane::new(1.0);
        assert_eq!(b.copy(1.0, 2), 3.0);
        // Into the gap before, then after the first transfer.
        assert_eq!(b.copy(0.0, 2), 4.0);
        assert_eq!(a.busy, vec![(0.0, 4.0)]);
        assert_eq!(b.busy, a.busy);
        // A transfer that fits in a gap leaves the later ones alone.
        let mut c = RecvLane::new(1.0);
        c.copy(5.0, 1);
        assert_eq!(c.copy(1.0, 2), 3.0);
        assert_eq!(c.busy, vec![(1.0, 3.0), (5.0, 6.0)]);
        assert_eq!(c.copy(2.0, 3), 7.0);
        assert_eq!(c.busy, vec![(1.0, 7.0)]);
        // Nothing to copy: done at once, even inside a busy interval.
        assert_eq!(c.copy(2.0, 0), 2.0);
        assert_eq!(RecvLane::new(f64::INFINITY).copy(2.0, 5), 2.0);
        assert_eq!(c.busy, vec![(1.0, 7.0)]);
    }

    /// Three transfers one call completes, listed in every order (as real
    /// time may bring their facts online): the same ends.
    #[test]
    fn a_calls_turns_are_the_same_in_any_order() {
        let seg = Segment { max_bytes: None, intercept_s: 1.0, bandwidth_bytes_per_s: 1.0 };
        // From 1, 2 and 2 (a tie, kept in the call's order): 4 bytes each.
        let turns = [(0, Turn::new(&seg, 1.0, 4), 'a'), (1, Turn::new(&seg, 0.0, 4), 'b'), (2, Turn::new(&seg, 1.0, 4), 'c')];
        let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
        for order in orders {
            let mut lane = RecvLane::new(1.0);
            let mut given: Vec<_> = order.iter().map(|&i| turns[i]).collect();
            let mut ends = Vec::new();
            lane.take_turns(&mut given, |k, end, d| ends.push((k, end, d)));
            assert_eq!(ends, vec![('b', 5.0, 5.0), ('a', 9.0, 8.0), ('c', 13.0, 12.0)], "{order:?}");
        }
        // A turn never ends before its pair model alone would end it.
        let slow = Segment { max_bytes: None, intercept_s: 0.0, bandwidth_bytes_per_s: 0.5 };
        let mut lane = RecvLane::new(1.0);
        lane.take_turns(&mut [(0, Turn::new(&slow, 0.0, 4), ())], |_, end, _| assert_eq!(end, 8.0));
        assert_eq!(lane.busy, vec![(0.0, 4.0)]);
    }

    #[test]
    fn the_lane_keeps_a_bounded_history() {
        let mut l = RecvLane::new(1.0);
        for i in 0..200 {
            l.copy(2.0 * i as f64, 1);
        }
        assert_eq!(l.busy.len(), KEPT);
        assert_eq!(l.busy[KEPT - 1], (398.0, 399.0));
    }
}

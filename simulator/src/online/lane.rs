//! A rank's receive copy lane online (`[network] serial_receives`): the
//! rendezvous transfers a rank receives from its own host move their data
//! one at a time at the intra-host model's largest-size bandwidth.
//!
//! The offline replay shares the lane max-min among the transfers moving
//! at once, which needs every transfer's start before any ends. Online, a
//! rank learns a transfer's start when its companion arrives, in an order
//! real time decides, so each transfer instead takes the lane's first free
//! time after its data phase may start (its latency over), as much as its
//! bytes need. The lane's busy time is then the same in either order and
//! the same as the replay's for transfers that move at the lane's rate, so
//! the last of a set of concurrent transfers ends when the replay's does;
//! the earlier ones end sooner than under max-min sharing.

/// Busy intervals of one rank's receive copy lane, seconds of virtual time.
#[derive(Debug, Clone)]
pub(super) struct RecvLane {
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
    pub(super) fn new(rate: f64) -> Self {
        RecvLane { rate, busy: Vec::new() }
    }

    /// A transfer of `bytes` whose data may move from `from` (seconds)
    /// takes the lane's free time from then on until its bytes are copied;
    /// returns when they are.
    pub(super) fn copy(&mut self, from: f64, bytes: u64) -> f64 {
        let mut left = bytes as f64 / self.rate;
        if left.is_nan() || left <= 0.0 {
            // Nothing to copy (or a lane of infinite rate): no turn to wait for.
            return from;
        }
        let mut t = from;
        let mut pieces = Vec::new();
        for &(a, b) in &self.busy {
            if b <= t {
                continue;
            }
            if a > t {
                let gap = a - t;
                if gap >= left {
                    break;
                }
                pieces.push((t, a));
                left -= gap;
            }
            t = b;
        }
        let end = t + left;
        pieces.push((t, end));
        self.busy.extend(pieces);
        self.busy.sort_by(|x, y| x.0.total_cmp(&y.0));
        self.busy.dedup_by(|next, prev| {
            let touch = next.0 <= prev.1;
            if touch {
                prev.1 = prev.1.max(next.1);
            }
            touch
        });
        let over = self.busy.len().saturating_sub(KEPT);
        self.busy.drain(..over);
        end
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

//! The event queue of the replay: "rank r may run at time t" events,
//! ordered by `(time, seq)` with `f64::total_cmp` (as in dslab's simcore
//! and nexosim); scheduling into the past is an error.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{ReplayError, ReplayErrorKind};

/// One "rank may run" event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    /// Simulated time, seconds.
    pub(crate) time: f64,
    seq: u64,
    /// The rank that may run.
    pub(crate) rank: u32,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    /// Reversed, so that `BinaryHeap` pops the earliest `(time, seq)`.
    fn cmp(&self, other: &Self) -> Ordering {
        other.time.total_cmp(&self.time).then(other.seq.cmp(&self.seq))
    }
}

/// Min-queue of events by `(time, seq)`; refuses to schedule into the past.
#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Event>,
    seq: u64,
    /// Current simulated time, seconds.
    pub(crate) now: f64,
    /// Events popped so far.
    pub(crate) popped: u64,
}

impl EventQueue {
    /// Schedules `rank` to run at `time` (seconds).
    pub(crate) fn schedule(&mut self, time: f64, rank: u32) -> Result<(), ReplayError> {
        if time.is_nan() || time < self.now {
            let kind = ReplayErrorKind::PastEvent { now_s: self.now, at_s: time };
            return Err(ReplayError { rank: Some(rank), kind });
        }
        self.heap.push(Event { time, seq: self.seq, rank });
        self.seq += 1;
        Ok(())
    }

    pub(crate) fn pop(&mut self) -> Option<Event> {
        let e = self.heap.pop()?;
        self.now = e.time;
        self.popped += 1;
        Some(e)
    }

    /// True when a rank at `time` is still strictly the earliest, so it may
    /// go on without a round trip through the heap.
    pub(crate) fn is_next(&self, time: f64) -> bool {
        self.heap.peek().is_none_or(|e| time < e.time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_orders_by_time_then_seq_and_refuses_the_past() {
        let mut q = EventQueue::default();
        q.schedule(2.0, 0).unwrap();
        q.schedule(1.0, 1).unwrap();
        q.schedule(1.0, 2).unwrap();
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|e| e.rank)).collect();
        assert_eq!(order, [1, 2, 0]);
        assert_eq!(q.now, 2.0);
        let e = q.schedule(1.5, 7).unwrap_err();
        assert!(matches!(e.kind, ReplayErrorKind::PastEvent { .. }), "{e}");
        assert!(q.schedule(f64::NAN, 7).is_err());
        assert!(q.schedule(2.0, 7).is_ok());
    }
}

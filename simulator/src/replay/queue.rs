//! The event queue of the replay: "rank r may run at time t" events and
//! the engine's own (network, nonblocking collectives), ordered by `(time, seq)` with `f64::total_cmp` (as in dslab's simcore
//! and nexosim); scheduling into the past is an error.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

impl Kind {
    /// The rank the event concerns, if any.
    fn rank(self) -> Option<u32> {
        match self {
            Kind::Rank(r) | Kind::Nbc(r) => Some(r),
            Kind::Network => None,
        }
    }
}

/// One event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    /// Simulated time, seconds.
    pub(crate) time: f64,
    seq: u64,
    /// What happens.
    pub(crate) kind: Kind,
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
    /// Schedules event `kind` at `time` (seconds).
    pub(crate) fn schedule(&mut self, time: f64, kind: Kind) -> Result<(), ReplayError> {
        if time.is_nan() || time < self.now {
            let err = ReplayErrorKind::PastEvent { now_s: self.now, at_s: time };
            return Err(ReplayError { rank: kind.rank(), kind: err });
        }
        self.heap.push(Event { time, seq: self.seq, kind });
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
}

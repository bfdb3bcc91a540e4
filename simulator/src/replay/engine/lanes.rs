//! Serial receives in the engine (`[network] serial_receives` without a
//! host copy rate): each rank's copy lane, and the matched transfers that
//! wait for the call completing them to take their turns, by the rule of
//! [`crate::network::lane`] that online mode applies too.

use rustc_hash::FxHashMap;

use super::wait::resolve;
use super::{Engine, Kind, ReplayError};
use crate::network::lane::{RecvLane, Turn};
use crate::replay::matching::SlotState;

/// The lanes of every rank and the turns not yet taken.
pub(super) struct Lanes {
    /// Each lane's copy rate, bytes/s.
    rate: f64,
    /// By rank, from its first turn on.
    lanes: FxHashMap<u32, RecvLane>,
    /// `(rank, slot)` of a receive matched before a call waits for it.
    matched: FxHashMap<(u32, u32), Turn>,
    /// `(rank, slot)` of a receive a call waited for before it matched:
    /// its position in the call.
    positions: FxHashMap<(u32, u32), u32>,
    /// By rank, the turns of its call in progress: `(position, turn, ())`.
    call: FxHashMap<u32, Vec<(u32, Turn, ())>>,
}

impl Lanes {
    /// Lanes copying `rate` bytes/s.
    pub(super) fn new(rate: f64) -> Self {
        Lanes {
            rate,
            lanes: FxHashMap::default(),
            matched: FxHashMap::default(),
            positions: FxHashMap::default(),
            call: FxHashMap::default(),
        }
    }

    fn lane(&mut self, r: u32) -> &mut RecvLane {
        let rate = self.rate;
        self.lanes.entry(r).or_insert_with(|| RecvLane::new(rate))
    }
}

impl<'a, E: std::error::Error + Send + Sync + 'static> Engine<'a, '_, E> {
    /// Slot `slot` of rank `r`, a receive, matched a transfer that takes
    /// `turn` in `r`'s lane: at once for a nonblocking collective's step
    /// (no call of the application completes it), at the end of `r`'s
    /// call in progress if it waits for the slot, else when a call does.
    pub(super) fn turn_matched(&mut self, r: usize, slot: u32, turn: Turn) -> Result<(), ReplayError> {
        let lanes = self.lanes.as_mut().expect("turns only with lanes");
        let s = &mut self.ranks[r].reqs.slots[slot as usize];
        if s.nbc {
            let mut done = (0.0, 0.0);
            lanes.lane(r as u32).take_turns(&mut [(0, turn, ())], |(), at, d| done = (at, d));
            return self.complete(r, slot, done.0, done.1);
        }
        if s.orphan {
            self.ranks[r].reqs.release(slot);
        } else if s.waited {
            let pos = lanes.positions.remove(&(r as u32, slot)).unwrap_or(u32::MAX);
            lanes.call.entry(r as u32).or_default().push((pos, turn, ()));
            let rk = &mut self.ranks[r];
            rk.reqs.release(slot);
            rk.block.pending -= 1;
            if rk.block.pending == 0 {
                self.take_turns(r);
                let rk = &mut self.ranks[r];
                resolve(rk);
                return self.queue.schedule(rk.clock, Kind::Rank(r as u32));
            }
        } else {
            s.set_state(SlotState::Queued);
            lanes.matched.insert((r as u32, slot), turn);
        }
        Ok(())
    }

    /// Rank `r`'s call in progress waits for slot `slot` at position
    /// `pos` of its request list: a queued receive joins the call's turns;
    /// a pending one will when it matches.
    pub(super) fn turn_waited(&mut self, r: usize, slot: u32, pos: u32, queued: bool) {
        let lanes = self.lanes.as_mut().expect("queued slots only with lanes");
        let key = (r as u32, slot);
        match queued {
            true => {
                let turn = lanes.matched.remove(&key).expect("a queued slot has its turn");
                lanes.call.entry(r as u32).or_default().push((pos, turn, ()));
                self.ranks[r].reqs.release(slot);
            }
            false => _ = lanes.positions.insert(key, pos),
        }
    }

    /// Rank `r`'s call in progress has every transfer it completes
    /// matched: their turns are taken and its wait's resume time and
    /// model duration follow.
    pub(super) fn take_turns(&mut self, r: usize) {
        let Some(lanes) = self.lanes.as_mut() else { return };
        let Some(mut turns) = lanes.call.remove(&(r as u32)).filter(|t| !t.is_empty()) else { return };
        let b = &mut self.ranks[r].block;
        lanes.lane(r as u32).take_turns(&mut turns, |(), at, d| {
            b.wait.add(at, d);
        });
        turns.clear();
        lanes.call.insert(r as u32, turns);
    }
}

//! A rank's blocking waits: the requests it waits for, and the split of
//! the time blocked into communication and waiting (rule on [`Block`]).

use super::{Block, Engine, Flow, Kind, Rank, ReplayError, Status, Wait};
use crate::replay::matching::{SlotState, NO_SLOT};

impl<'a, E: std::error::Error + Send + Sync + 'static> Engine<'a, '_, E> {
    pub(super) fn wait_on(&mut self, r: usize, slots: &[u32]) -> Flow {
        self.wait_begin(r);
        for &s in slots.iter().filter(|&&s| s != NO_SLOT) {
            self.wait_add(r, s);
        }
        self.wait_end(r)
    }

    pub(super) fn wait_begin(&mut self, r: usize) {
        let rk = &mut self.ranks[r];
        rk.block = Block { wait: Wait::at(rk.clock), pending: 0, adds: 0, extra: 0.0 };
    }

    /// [`Self::wait_add`] for a request of the application's
    /// `MPI_Wait`/`MPI_Waitall`, which also costs `[smpi] wait_s`.
    pub(super) fn wait_user(&mut self, r: usize, slot: u32) {
        self.ranks[r].block.extra += self.platform.smpi.wait_s;
        self.wait_add(r, slot);
    }

    /// Rank `r` posted an `MPI_Irecv`: it is busy `[smpi] irecv_s`.
    pub(super) fn irecv_posted(&mut self, r: usize) {
        self.busy_in_call(r, self.platform.smpi.irecv_s);
    }

    /// Rank `r` is busy `s` seconds in an MPI call that waits for nothing
    /// (communication time): an `MPI_Irecv`'s post, a poll, a one-sided call.
    pub(super) fn busy_in_call(&mut self, r: usize, s: f64) {
        let rk = &mut self.ranks[r];
        rk.clock += s;
        rk.stats.comm_s += s;
    }

    pub(super) fn wait_add(&mut self, r: usize, slot: u32) {
        let rk = &mut self.ranks[r];
        let pos = rk.block.adds;
        rk.block.adds += 1;
        match rk.reqs.slots[slot as usize].state() {
            SlotState::Done { at, d } => {
                rk.block.wait.add(at, d);
                rk.reqs.release(slot);
            }
            SlotState::Pending => {
                rk.reqs.slots[slot as usize].waited = true;
                rk.block.pending += 1;
                if self.lanes.is_some() {
                    self.turn_waited(r, slot, pos, false);
                }
            }
            SlotState::Queued => self.turn_waited(r, slot, pos, true),
            SlotState::Free => unreachable!("user map and internal slots point at live slots"),
        }
    }

    pub(super) fn wait_end(&mut self, r: usize) -> Flow {
        if self.ranks[r].block.pending == 0 {
            self.take_turns(r);
        }
        let rk = &mut self.ranks[r];
        if rk.block.pending == 0 {
            resolve(rk);
            Flow::Continue
        } else {
            rk.status = Status::Blocked;
            Flow::Blocked
        }
    }

    /// Slot `slot` of rank `r` completes at `at` with model duration `d`;
    /// wakes `r` if that was the last thing its wait needed.
    pub(super) fn complete(&mut self, r: usize, slot: u32, at: f64, d: f64) -> Result<(), ReplayError> {
        if self.ranks[r].reqs.slots[slot as usize].nbc {
            return self.nbc_step_done(r, slot, at);
        }
        let rk = &mut self.ranks[r];
        let s = &mut rk.reqs.slots[slot as usize];
        if s.waited {
            rk.reqs.release(slot);
            let b = &mut rk.block;
            b.wait.add(at, d);
            b.pending -= 1;
            if b.pending == 0 {
                self.take_turns(r);
                let rk = &mut self.ranks[r];
                resolve(rk);
                return self.queue.schedule(rk.clock, Kind::Rank(r as u32));
            }
        } else if s.orphan {
            rk.reqs.release(slot);
        } else {
            s.set_state(SlotState::Done { at, d });
        }
        Ok(())
    }
}

/// Ends rank `rk`'s wait at its resume time and splits the time between
/// `comm_s` and `wait_s` ([`Wait::split`]); then the rank is
/// busy `block.extra` (communication). The wait is recorded for DVFS and
/// energy when the rank tracks its waits.
pub(super) fn resolve<E>(rk: &mut Rank<'_, E>) {
    if rk.track_waits {
        rk.waits.push((rk.block.wait.since, rk.block.wait.resume));
    }
    settle(&rk.block, &mut rk.clock, &mut rk.stats.comm_s, &mut rk.stats.wait_s);
    rk.status = Status::Runnable;
}

/// [`resolve`]'s arithmetic on a clock and two counters, seconds.
pub(super) fn settle(b: &Block, clock: &mut f64, comm_s: &mut f64, wait_s: &mut f64) {
    let (comm, wait) = b.wait.split();
    *comm_s += comm;
    *wait_s += wait;
    *comm_s += b.extra;
    *clock = b.wait.resume + b.extra;
}

//! Each action's span of simulated time, from the moment its rank takes
//! it to the moment the rank takes the next: to the action log
//! ([`crate::replay::Replay::action_log`]) and, for MPI calls, to the
//! timeline. A call's span holds all of it (its CPU overheads, its
//! rounds, its waiting); the local work a collective does inside it (a
//! reduction) is also its own `compute` span, nested in the call's.

use super::Engine;
use crate::action::Action;

impl<'a, E: std::error::Error + Send + Sync + 'static> Engine<'a, '_, E> {
    /// Rank `r` takes `action` at its clock.
    pub(super) fn action_begins(&mut self, r: usize, action: &Action) {
        let now = self.ranks[r].clock;
        if self.log.is_some() {
            self.logged.resize(self.ranks.len(), None);
            self.logged[r] = Some((action.clone(), now));
        }
        if self.timeline.is_some() {
            self.open_calls.resize(self.ranks.len(), None);
            self.open_calls[r] = action.mpi_name().map(|name| (name, now));
        }
    }

    /// Ends rank `r`'s running action at its clock.
    pub(super) fn action_ends(&mut self, r: usize) {
        let now = self.ranks[r].clock;
        if let (Some(log), Some((a, start))) = (self.log.as_mut(), self.logged.get_mut(r).and_then(Option::take)) {
            log(r, &a, start, now);
        }
        if let (Some(tl), Some((name, start))) = (self.timeline.as_mut(), self.open_calls.get_mut(r).and_then(Option::take)) {
            tl.span(r, name, start, now);
        }
    }
}

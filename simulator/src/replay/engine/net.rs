//! The engine's side of link sharing: network events ([`Net`]).

use super::*;

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Queues the network's next event unless an earlier one is queued.
    pub(super) fn net_schedule(&mut self) -> Result<(), ReplayError> {
        match self.net.as_ref().and_then(Net::next_event) {
            Some(t) => self.net_wake(t),
            None => Ok(()),
        }
    }

    /// Queues a network event at `t` (a flow's end of latency or of its
    /// transfer) unless an earlier one is queued.
    pub(super) fn net_wake(&mut self, t: f64) -> Result<(), ReplayError> {
        if t < self.net_next {
            self.net_next = t;
            self.queue.schedule(t, Kind::Network)?;
        }
        Ok(())
    }

    /// Ends the transfers done by `now` and completes their requests.
    pub(super) fn net_event(&mut self, now: f64) -> Result<(), ReplayError> {
        if now != self.net_next {
            return Ok(()); // superseded by an earlier network event
        }
        self.net_next = f64::INFINITY;
        let mut ended = std::mem::take(&mut self.net_ended);
        if let Some(net) = self.net.as_mut() {
            net.finish_until(now, &mut ended);
        }
        for &d in &ended {
            if d.src == super::io_jobs::IO_FLOW {
                self.io_piece_done(d.recv_slot, now)?;
                continue;
            }
            let took = now - d.start;
            self.complete(d.dst as usize, d.recv_slot, now.max(d.recv_ready), took)?;
            if d.send_slot != NO_SLOT {
                self.complete(d.src as usize, d.send_slot, now, took)?;
            }
        }
        ended.clear();
        self.net_ended = ended;
        self.net_schedule()
    }
}

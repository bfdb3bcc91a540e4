//! The engine's side of CPU sharing on oversubscribed hosts
//! ([`HostCores`]): a compute block there is an activity that ends by an
//! event, not a jump of the rank's clock.

use super::*;
use crate::replay::cores::{Ended, HostCores};

/// A host with more ranks placed on it than it has cores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Oversubscribed {
    /// Host index in the platform.
    pub(crate) host: usize,
    /// Ranks placed on it.
    pub(crate) ranks: u32,
}

/// The hosts of `placement` (host index per rank) that get more ranks
/// than `cores[h]`, in host order.
pub(super) fn oversubscribed(placement: &[u32], cores: &[u32]) -> Vec<Oversubscribed> {
    let mut count = vec![0u32; cores.len()];
    for &h in placement {
        count[h as usize] += 1;
    }
    (0..cores.len()).filter(|&h| count[h] > cores[h]).map(|h| Oversubscribed { host: h, ranks: count[h] }).collect()
}

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Rank `r` computes `seconds` (at its host's full speed; stretched
    /// by OS jitter when `jitter` and injected): at once when it has a
    /// core of its own, else as an activity sharing its host's cores,
    /// which blocks the rank until the block's end event.
    pub(super) fn compute_block(&mut self, r: usize, seconds: f64, jitter: bool) -> Result<Flow, ReplayError> {
        let host = self.hosts[r] as usize;
        if self.cores.get(host).is_none_or(Option::is_none) {
            match jitter {
                true => self.local_compute(r, seconds),
                false => self.computed(r, seconds),
            }
            return Ok(Flow::Continue);
        }
        let now = self.ranks[r].clock;
        let work = match self.jitter.as_mut().filter(|_| jitter) {
            Some(stretch) => stretch(r, now, seconds),
            None => seconds,
        };
        if work <= 0.0 {
            self.block_done(r, now, 0.0);
            return Ok(Flow::Continue);
        }
        let hc = self.cores[host].as_mut().expect("checked above");
        hc.start(now, r as u32, work);
        let rk = &mut self.ranks[r];
        rk.status = Status::Blocked;
        rk.doing = Doing::Compute;
        self.cpu_schedule(host)?;
        Ok(Flow::Blocked)
    }

    /// Queues host `h`'s next block end unless an earlier event is queued.
    fn cpu_schedule(&mut self, h: usize) -> Result<(), ReplayError> {
        let Some(hc) = self.cores[h].as_mut() else { return Ok(()) };
        if let Some(t) = hc.next_end() {
            let t = t.max(self.queue.now);
            if t < hc.next {
                hc.next = t;
                self.queue.schedule(t, Kind::Cpu(h as u32))?;
            }
        }
        Ok(())
    }

    /// Ends host `h`'s blocks done by `now` and lets their ranks run.
    pub(super) fn cpu_event(&mut self, h: usize, now: f64) -> Result<(), ReplayError> {
        let Some(hc) = self.cores[h].as_mut() else { return Ok(()) };
        if now != hc.next {
            return Ok(()); // superseded by an earlier event
        }
        hc.next = f64::INFINITY;
        let mut ended = Vec::new();
        hc.finish_until(now, &mut ended);
        for Ended { rank, start_s } in ended {
            let r = rank as usize;
            let dt = now - start_s;
            self.block_done(r, start_s, dt);
            let rk = &mut self.ranks[r];
            rk.clock = now;
            rk.stats.compute_s += dt;
            rk.status = Status::Runnable;
            if let Some(t) = self.timeline.as_mut() {
                t.span(r, "compute", start_s, now);
            }
            self.queue.schedule(now, Kind::Rank(rank))?;
        }
        self.cpu_schedule(h)
    }

    /// Rank `r` finalized: with polling ranks, its host's blocks speed up.
    pub(super) fn cpu_rank_done(&mut self, r: usize) -> Result<(), ReplayError> {
        let h = self.hosts[r] as usize;
        let now = self.ranks[r].clock;
        let Some(hc) = self.cores.get_mut(h).and_then(Option::as_mut) else { return Ok(()) };
        hc.rank_done(now);
        // An end that moves earlier needs an earlier event.
        self.cpu_schedule(h)
    }

    /// Per-host cores for the oversubscribed hosts of the placement
    /// (empty when none is: compute blocks then never wait for a core).
    pub(super) fn cores_for(platform: &Platform, over: &[Oversubscribed]) -> Vec<Option<HostCores>> {
        if over.is_empty() {
            return Vec::new();
        }
        let mut v: Vec<Option<HostCores>> = (0..platform.hosts.len()).map(|_| None).collect();
        for o in over {
            v[o.host] = Some(HostCores::new(platform.hosts[o.host].cores, o.ranks, platform.waiting_ranks));
        }
        v
    }
}

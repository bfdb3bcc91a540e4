//! The engine's side of DVFS and energy ([`crate::dvfs`],
//! [`crate::energy`]): the pstate and duration of each rank's compute
//! blocks, the waits its blocking calls report (a blocking collective as
//! one wait from entry to exit), and the energy meter they feed.

use super::*;
use crate::dvfs::RankDvfs;

/// Per-rank DVFS state, when a policy changes pstates or energy is metered.
#[derive(Debug)]
pub(super) struct Power {
    /// Per rank: its pstate and switch in progress (`None` under a static
    /// policy or on a host without pstates).
    ranks: Vec<Option<RankDvfs>>,
    /// Per rank: entry time of the blocking collective it is in (NaN: none).
    coll_entry: Vec<f64>,
    /// Per rank: the pstate of its compute block in progress.
    block_pstate: Vec<usize>,
}

impl Power {
    /// The state of the ranks of `placement` on `platform`; `None` when
    /// the policy is static and no energy is metered.
    pub(super) fn new(platform: &Platform, placement: &[u32], metered: bool) -> Option<Power> {
        let dvfs = !platform.dvfs.is_static();
        if !dvfs && !metered {
            return None;
        }
        let host = |h: u32| &platform.hosts[h as usize];
        let ranks = placement.iter().map(|&h| (dvfs && !host(h).pstates.is_empty()).then(|| RankDvfs::new(host(h)))).collect();
        let block_pstate = placement.iter().map(|&h| host(h).pstate).collect();
        Some(Power { ranks, coll_entry: vec![f64::NAN; placement.len()], block_pstate })
    }
}

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Duration of rank `r`'s compute block of `base_s` seconds at its
    /// host's pstate, in `region` when the block has one, under the
    /// policy; `base_s` when no policy applies.
    pub(super) fn block_time(&mut self, r: usize, base_s: f64, region: Option<u64>) -> f64 {
        let platform = self.platform;
        let Some(p) = self.power.as_mut() else { return base_s };
        let host = &platform.hosts[self.hosts[r] as usize];
        let Some(d) = p.ranks[r].as_mut() else { return base_s };
        let q = platform.dvfs.block_pstate(host, region);
        p.block_pstate[r] = q;
        d.compute(host, q, self.ranks[r].clock, base_s)
    }

    /// Rank `r` computed from `start_s` for `dt_s` seconds (0 for a block
    /// of no work): the block goes to the energy meter and the rank back
    /// to its host's pstate.
    pub(super) fn block_done(&mut self, r: usize, start_s: f64, dt_s: f64) {
        let platform = self.platform;
        let h = self.hosts[r] as usize;
        let Some(p) = self.power.as_mut() else { return };
        let q = std::mem::replace(&mut p.block_pstate[r], platform.hosts[h].pstate);
        if let Some(d) = p.ranks[r].as_mut() {
            d.block_ended(&platform.hosts[h], start_s + dt_s);
        }
        if let Some(m) = self.energy.as_mut() {
            m.compute(h, r, start_s, dt_s, q);
            self.meter_flush(h);
        }
    }

    /// Rank `r` enters a blocking collective at its clock.
    pub(super) fn coll_entered(&mut self, r: usize) {
        if let Some(p) = self.power.as_mut() {
            p.coll_entry[r] = self.ranks[r].clock;
        }
    }

    /// Before rank `r` takes its next step: the waits it resolved since
    /// its last one (those inside a blocking collective are not its own),
    /// then the blocking collective it has left, as one wait.
    pub(super) fn power_step(&mut self, r: usize) {
        let Some(p) = self.power.as_mut() else { return };
        let rk = &mut self.ranks[r];
        let in_coll = !p.coll_entry[r].is_nan();
        let mut waits = std::mem::take(&mut rk.waits);
        if in_coll {
            waits.clear();
        }
        if in_coll && !rk.coll.active {
            waits.push((p.coll_entry[r], rk.clock));
            p.coll_entry[r] = f64::NAN;
        }
        let platform = self.platform;
        let h = self.hosts[r] as usize;
        for &(since, resume) in &waits {
            if let Some(d) = p.ranks[r].as_mut() {
                d.wait(&platform.hosts[h], &platform.dvfs, since, resume);
            }
            if let Some(m) = self.energy.as_mut() {
                m.wait(h, r, since, resume);
            }
        }
        waits.clear();
        self.ranks[r].waits = waits;
        self.meter_flush(h);
    }

    /// Rank `r` finalized at its clock.
    pub(super) fn power_done(&mut self, r: usize) {
        let t = self.ranks[r].clock;
        let h = self.hosts[r] as usize;
        if let Some(m) = self.energy.as_mut() {
            m.done(h, r, t);
            self.meter_flush(h);
        }
    }

    /// Integrates host `h`'s energy up to where its ranks may still report
    /// activities, when its meter holds many events: a rank reports
    /// nothing before its clock, the start of the blocking collective it
    /// is in, or the start of a wait it resolved and has not reported.
    fn meter_flush(&mut self, h: usize) {
        let Some(m) = self.energy.as_ref() else { return };
        let Some(members) = m.full(h) else { return };
        let entry = |r: usize| self.power.as_ref().map_or(f64::INFINITY, |p| p.coll_entry[r]);
        let horizon = members
            .iter()
            .map(|&r| r as usize)
            .filter(|&r| self.ranks[r].status != Status::Done)
            .map(|r| {
                let rk = &self.ranks[r];
                let waits = rk.waits.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
                let e = entry(r);
                rk.clock.min(waits).min(if e.is_nan() { f64::INFINITY } else { e })
            })
            .fold(f64::INFINITY, f64::min);
        if let Some(m) = self.energy.as_mut() {
            m.flush(h, horizon);
        }
    }
}

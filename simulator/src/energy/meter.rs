//! A replay's energy meter: the activities of each host's ranks (compute
//! blocks at a pstate, waits in MPI, finalize), integrated into joules per
//! host with the rules of [`crate::dvfs`] (the host's pstate follows its
//! ranks; a switch draws the larger of two powers) and of
//! [`crate::energy`] (power by busy cores).
//!
//! Activities are reported as the replay learns them, not in time order
//! (a wait is known when it ends): each host keeps its ranks' events and
//! integrates them in time order up to a horizon before which no event
//! can still come ([`EnergyMeter::flush`], when [`FLUSH_EVENTS`] wait),
//! and the rest at the end. Memory: per host, the events not yet
//! integrated and a state per rank.

use crate::energy::{PowerRange, Pstate};
use crate::platform::Platform;

/// What one metered host is: its pstates, cores and policy.
#[derive(Debug, Clone)]
pub(crate) struct HostSetup {
    pstates: Vec<Pstate>,
    /// The host's own pstate.
    base: usize,
    cores: u32,
    switch_s: f64,
    wait_pstate: Option<usize>,
    waiting_busy: bool,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    ComputeStart(usize),
    ComputeEnd,
    WaitStart,
    WaitEnd,
    Done,
}

#[derive(Debug, Clone, Copy)]
struct Ev {
    t: f64,
    /// Index of the rank among its host's ranks.
    rank: u32,
    kind: Kind,
}

/// Events a host keeps before the engine should flush it.
pub(crate) const FLUSH_EVENTS: usize = 1 << 16;

#[cfg(test)]
thread_local! {
    /// [`FLUSH_EVENTS`] in this thread's tests.
    pub(crate) static TEST_FLUSH_EVENTS: std::cell::Cell<usize> = const { std::cell::Cell::new(FLUSH_EVENTS) };
}

fn flush_events() -> usize {
    #[cfg(test)]
    return TEST_FLUSH_EVENTS.with(|c| c.get());
    #[cfg(not(test))]
    FLUSH_EVENTS
}

#[derive(Debug)]
struct HostMeter {
    setup: HostSetup,
    /// Events not yet integrated.
    events: Vec<Ev>,
    /// Events at which the engine should flush next: twice those a flush
    /// leaves (a rank long blocked holds the horizon back), at least
    /// [`FLUSH_EVENTS`].
    next_flush: usize,
    sweep: Sweep,
}

/// A host's integration so far.
#[derive(Debug)]
struct Sweep {
    ranks: Vec<RankState>,
    pstate: usize,
    busy: u32,
    /// A switch in progress: its end and power.
    switch: Option<(f64, PowerRange)>,
    /// Time integrated up to, seconds.
    last: f64,
    joules: f64,
    /// A pstate without power was met: no energy for the host.
    unknown: bool,
}

/// Joules per host of one replay (see the module docs).
#[derive(Debug)]
pub(crate) struct EnergyMeter {
    /// `None` for a host without power at its pstate.
    hosts: Vec<Option<HostMeter>>,
    /// Index of each world rank among its host's ranks.
    local: Vec<u32>,
    /// World ranks of each metered host, by local index (empty for the others).
    members: Vec<Vec<u32>>,
}

impl EnergyMeter {
    /// A meter for the ranks of `placement` (host index per world rank) on
    /// `platform`, under `platform.dvfs`; `None` when no host has a power
    /// range at its pstate.
    pub(crate) fn new(platform: &Platform, placement: &[u32]) -> Option<EnergyMeter> {
        if platform.hosts.iter().all(|h| h.watts().is_none()) {
            return None;
        }
        let mut count = vec![0u32; platform.hosts.len()];
        let local = placement
            .iter()
            .map(|&h| {
                count[h as usize] += 1;
                count[h as usize] - 1
            })
            .collect();
        let d = &platform.dvfs;
        let mut members: Vec<Vec<u32>> = platform.hosts.iter().map(|_| Vec::new()).collect();
        for (r, &h) in placement.iter().enumerate() {
            if platform.hosts[h as usize].watts().is_some() {
                members[h as usize].push(r as u32);
            }
        }
        let hosts = platform
            .hosts
            .iter()
            .zip(&count)
            .map(|(h, &ranks)| {
                h.watts().map(|_| HostMeter {
                    next_flush: flush_events(),
                    sweep: Sweep {
                        ranks: vec![RankState::default(); ranks as usize],
                        pstate: h.pstate,
                        busy: 0,
                        switch: None,
                        last: 0.0,
                        joules: 0.0,
                        unknown: false,
                    },
                    setup: HostSetup {
                        pstates: h.pstates.clone(),
                        base: h.pstate,
                        cores: h.cores,
                        switch_s: h.pstate_switch_s,
                        wait_pstate: d.wait_pstate,
                        waiting_busy: d.waiting_busy,
                    },
                    events: Vec::new(),
                })
            })
            .collect();
        Some(EnergyMeter { hosts, local, members })
    }

    /// The world ranks of `host` when it holds enough events to flush
    /// (the engine then calls [`EnergyMeter::flush`]), else `None`.
    pub(crate) fn full(&self, host: usize) -> Option<&[u32]> {
        self.hosts[host].as_ref().filter(|h| h.events.len() >= h.next_flush).map(|_| &self.members[host][..])
    }

    /// Integrates `host`'s events before `horizon_s`: the caller knows
    /// that none of its ranks will report an activity earlier.
    pub(crate) fn flush(&mut self, host: usize, horizon_s: f64) {
        if let Some(h) = self.hosts[host].as_mut() {
            h.sweep.run(&h.setup, &mut h.events, horizon_s);
            h.next_flush = flush_events().max(2 * h.events.len());
        }
    }

    fn push(&mut self, host: usize, rank: usize, t: f64, kind: Kind) {
        if let Some(h) = self.hosts[host].as_mut() {
            h.events.push(Ev { t, rank: self.local[rank], kind });
        }
    }

    /// World rank `rank` of `host` computes at `pstate` from `start_s` for `dt_s` seconds.
    pub(crate) fn compute(&mut self, host: usize, rank: usize, start_s: f64, dt_s: f64, pstate: usize) {
        if dt_s > 0.0 {
            self.push(host, rank, start_s, Kind::ComputeStart(pstate));
            self.push(host, rank, start_s + dt_s, Kind::ComputeEnd);
        }
    }

    /// World rank `rank` of `host` waits in MPI from `since_s` to `resume_s`.
    pub(crate) fn wait(&mut self, host: usize, rank: usize, since_s: f64, resume_s: f64) {
        if resume_s > since_s {
            self.push(host, rank, since_s, Kind::WaitStart);
            self.push(host, rank, resume_s, Kind::WaitEnd);
        }
    }

    /// World rank `rank` of `host` finalized at `t_s`.
    pub(crate) fn done(&mut self, host: usize, rank: usize, t_s: f64) {
        self.push(host, rank, t_s, Kind::Done);
    }

    /// Joules per host integrated over `[0, end_s]` (`None` for a host
    /// without a power range at a pstate it ran at).
    pub(crate) fn finish(self, end_s: f64) -> Vec<Option<f64>> {
        self.hosts
            .into_iter()
            .map(|h| {
                h.and_then(|mut h| {
                    h.sweep.run(&h.setup, &mut h.events, end_s);
                    let s = &mut h.sweep;
                    if end_s > s.last {
                        s.step(&h.setup, end_s);
                    }
                    (!s.unknown).then_some(s.joules)
                })
            })
            .collect()
    }
}

/// A rank's state in the sweep.
#[derive(Debug, Clone, Copy, Default)]
struct RankState {
    computing: u32,
    pstate: usize,
    waiting: u32,
    done: bool,
}

/// The larger of two power ranges, component by component.
fn larger(a: PowerRange, b: PowerRange) -> PowerRange {
    PowerRange { idle_w: a.idle_w.max(b.idle_w), epsilon_w: a.epsilon_w.max(b.epsilon_w), all_cores_w: a.all_cores_w.max(b.all_cores_w) }
}

impl Sweep {
    fn range(s: &HostSetup, p: usize) -> Option<PowerRange> {
        s.pstates.get(p).and_then(|x| x.watts)
    }

    /// Integrates the current state from `last` to `to`.
    fn step(&mut self, s: &HostSetup, to: f64) {
        let mut from = self.last;
        if let Some((until, r)) = self.switch.filter(|w| w.0 > from) {
            let m = until.min(to);
            self.joules += r.watts(s.cores, self.busy) * (m - from);
            from = m;
        }
        if to > from {
            match Sweep::range(s, self.pstate) {
                Some(r) => self.joules += r.watts(s.cores, self.busy) * (to - from),
                None => self.unknown = true,
            }
        }
        self.last = to;
    }

    /// Integrates the events of `events` before `horizon_s` in time order
    /// (those at one time together) and drops them.
    fn run(&mut self, s: &HostSetup, events: &mut Vec<Ev>, horizon_s: f64) {
        events.sort_by(|a, b| a.t.total_cmp(&b.t));
        let mut i = 0;
        while i < events.len() && events[i].t < horizon_s {
            let t = events[i].t;
            if t > self.last {
                self.step(s, t);
            }
            while i < events.len() && events[i].t == t {
                let e = events[i];
                let r = &mut self.ranks[e.rank as usize];
                match e.kind {
                    Kind::ComputeStart(p) => {
                        r.computing += 1;
                        r.pstate = p;
                    }
                    Kind::ComputeEnd => r.computing = r.computing.saturating_sub(1),
                    Kind::WaitStart => r.waiting += 1,
                    Kind::WaitEnd => r.waiting = r.waiting.saturating_sub(1),
                    Kind::Done => r.done = true,
                }
                i += 1;
            }
            self.settle(s, t);
        }
        events.drain(..i);
    }

    /// The host's pstate and busy cores after the events at `t`.
    fn settle(&mut self, s: &HostSetup, t: f64) {
        let demand = |r: &RankState| match (r.computing > 0, r.waiting > 0, s.wait_pstate) {
            (true, _, _) => r.pstate,
            (false, true, Some(k)) => k,
            _ => s.base,
        };
        let speed = |p: usize| s.pstates.get(p).map_or(0.0, |x| x.speed_flops);
        let next = self
            .ranks
            .iter()
            .filter(|r| !r.done)
            .map(demand)
            .reduce(|a, b| if speed(b) > speed(a) || (speed(b) == speed(a) && b < a) { b } else { a })
            .unwrap_or(s.base);
        if next != self.pstate {
            if s.switch_s > 0.0 {
                match (Sweep::range(s, self.pstate), Sweep::range(s, next)) {
                    (Some(a), Some(b)) => self.switch = Some((t + s.switch_s, larger(a, b))),
                    _ => self.unknown = true,
                }
            }
            self.pstate = next;
        }
        self.busy = self.ranks.iter().filter(|r| r.computing > 0 || (s.waiting_busy && r.waiting > 0 && !r.done)).count() as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Host;

    fn platform(hosts: Vec<Host>) -> Platform {
        use crate::network::{P2pModel, Piecewise};
        let none = Piecewise { segments: Vec::new() };
        let model =
            P2pModel { eager_threshold_bytes: 0, transfer: none.clone(), send_overhead: none.clone(), recv_overhead: none, rma: None };
        Platform::new("t", hosts, model)
    }

    fn host(cores: u32, watts: &[&str]) -> Host {
        let pstates = watts
            .iter()
            .enumerate()
            .map(|(i, w)| Pstate { speed_flops: 1e9 / (i + 1) as f64, watts: Some(PowerRange::parse(w).unwrap()) })
            .collect();
        Host { pstates, ..Host::new("h", cores) }
    }

    #[test]
    fn meter_integrates_overlapping_blocks() {
        // 2 cores, 100:120:200: blocks [0,2] and [1,3], end at 4:
        // 0–1 one core (160 W), 1–2 two (200 W), 2–3 one (160 W), 3–4 idle (100 W).
        let p = platform(vec![host(2, &["100:120:200"]), Host::new("b", 1)]);
        let mut m = EnergyMeter::new(&p, &[0, 0, 1]).unwrap();
        m.compute(0, 0, 0.0, 2.0, 0);
        m.compute(0, 1, 1.0, 2.0, 0);
        m.compute(1, 2, 0.0, 1.0, 0);
        assert_eq!(m.finish(4.0), [Some(160.0 + 200.0 + 160.0 + 100.0), None]);
    }

    #[test]
    fn a_host_goes_to_the_wait_pstate_only_while_every_running_rank_waits() {
        // 2 ranks on 2 cores, pstates 100:120:200 and 50:60:80, wait=1.
        // Rank 0 waits 0–4; rank 1 computes 0–1, waits 1–3, finalizes at 3.
        // 0–1: one core at pstate 0 (160 W); 1–3 both wait: idle at 1 (50 W);
        // 3–4 rank 1 done, rank 0 waits: still 1 (50 W); 4–5: idle at 0 (100 W).
        let mut p = platform(vec![host(2, &["100:120:200", "50:60:80"])]);
        p.dvfs.wait_pstate = Some(1);
        let mut m = EnergyMeter::new(&p, &[0, 0]).unwrap();
        m.wait(0, 0, 0.0, 4.0);
        m.compute(0, 1, 0.0, 1.0, 0);
        m.wait(0, 1, 1.0, 3.0);
        m.done(0, 1, 3.0);
        let e = m.finish(5.0).remove(0).unwrap();
        assert!((e - (160.0 + 2.0 * 50.0 + 50.0 + 100.0)).abs() < 1e-12, "{e}");
        // Polling waits keep a core busy: 1–4 at pstate 1 with 2, 2, then 1 busy cores.
        p.dvfs.waiting_busy = true;
        let mut m = EnergyMeter::new(&p, &[0, 0]).unwrap();
        m.wait(0, 0, 0.0, 4.0);
        m.compute(0, 1, 0.0, 1.0, 0);
        m.wait(0, 1, 1.0, 3.0);
        m.done(0, 1, 3.0);
        let e = m.finish(5.0).remove(0).unwrap();
        // 0–1: two busy at 0 (200 W); 1–3 two busy at 1 (80 W); 3–4 one (70 W); 4–5 idle (100 W).
        assert!((e - (200.0 + 160.0 + 70.0 + 100.0)).abs() < 1e-12, "{e}");
    }

    #[test]
    fn a_switch_draws_the_larger_power_for_its_duration() {
        // One rank waits 1–3 at wait=1 with 0.5 s switches: 0–1 idle at 0
        // (100 W); 1–1.5 switching (max idle 100 W); 1.5–3 idle at 1 (50 W);
        // 3–3.5 switching back (100 W); 3.5–4 at 0 (100 W).
        let mut h = host(1, &["100:120:200", "50:60:80"]);
        h.pstate_switch_s = 0.5;
        let mut p = platform(vec![h]);
        p.dvfs.wait_pstate = Some(1);
        let mut m = EnergyMeter::new(&p, &[0]).unwrap();
        m.wait(0, 0, 1.0, 3.0);
        let e = m.finish(4.0).remove(0).unwrap();
        assert!((e - (100.0 + 50.0 + 75.0 + 50.0 + 50.0)).abs() < 1e-12, "{e}");
    }
}

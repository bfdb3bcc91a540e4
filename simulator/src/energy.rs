//! Pstates and host energy, as SimGrid's `host_energy` plugin (SimGrid
//! 3.32, `src/plugins/host_energy.cpp`; Heinrich et al., "Predicting the
//! energy consumption of MPI applications at scale using a single node",
//! Cluster 2017; Heinrich et al., "Predicting the performance and power consumption of MPI applications with SimGrid", 2017, §6.1).
//!
//! A host has one or more pstates, each a core speed (flop/s) and a power
//! range `Idle:Epsilon:AllCores` (watts; SimGrid's `wattage_per_state`).
//! With `k` of its `n` cores computing, the host draws
//! - `Idle` when `k = 0`;
//! - `Epsilon + min(k / n, 1) · (AllCores − Epsilon)` otherwise.
//!
//! This is the rule of SimGrid 3.32's `HostEnergy::get_current_watts_value`
//! (load = k / n, power = epsilon + load · slope, slope = max − epsilon),
//! checked against the debug strings of the installed libsimgrid 3.32. It
//! differs from the rule of older releases (`Epsilon + (k − 1)/(n − 1) ·
//! (AllCores − Epsilon)`) for `k < n`. A core counts as busy while a rank
//! on the host runs a compute block (recorded seconds or TI flops); MPI
//! overheads and waits leave it idle, as in SMPI where `smpi/os` and
//! `smpi/or` are sleeps. Energy is ∫ P dt from 0 to the makespan.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

/// Power of a host at one pstate, watts (SimGrid's `PowerRange`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PowerRange {
    /// Power with no core busy, watts.
    pub idle_w: f64,
    /// Power when the host is not idle but its load is ~0, watts.
    pub epsilon_w: f64,
    /// Power with every core busy, watts.
    pub all_cores_w: f64,
}

impl PowerRange {
    /// Parses SimGrid's `Idle:Epsilon:AllCores` (or `Idle:AllCores`, where
    /// Epsilon = Idle, as SimGrid does), watts.
    ///
    /// # Errors
    /// A message quoting `spec` when it has not 2 or 3 finite numbers ≥ 0.
    pub fn parse(spec: &str) -> Result<PowerRange, crate::error::Invalid> {
        let v: Result<Vec<f64>, _> = spec.split(':').map(|x| x.trim().parse::<f64>()).collect();
        let bad = || format!("power `{spec}` is not Idle:Epsilon:AllCores (watts)");
        let v = v.map_err(|_| bad())?;
        if v.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(bad().into());
        }
        match v[..] {
            [idle_w, all_cores_w] => Ok(PowerRange { idle_w, epsilon_w: idle_w, all_cores_w }),
            [idle_w, epsilon_w, all_cores_w] => Ok(PowerRange { idle_w, epsilon_w, all_cores_w }),
            _ => Err(bad().into()),
        }
    }

    /// Power with `busy` of `cores` cores computing, watts (rule in the
    /// module docs; `busy > cores` counts as all cores).
    pub fn watts(&self, cores: u32, busy: u32) -> f64 {
        if busy == 0 {
            return self.idle_w;
        }
        let load = (busy as f64 / cores.max(1) as f64).min(1.0);
        self.epsilon_w + load * (self.all_cores_w - self.epsilon_w)
    }
}

/// One pstate of a host: its core speed and power.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pstate {
    /// Core speed at this pstate, flop/s (one value of SimGrid's `speed` list).
    pub speed_flops: f64,
    /// Power range (one entry of SimGrid's `wattage_per_state`); `None`
    /// when unknown (no energy is then reported for the host).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_range")]
    pub watts: Option<PowerRange>,
}

/// Serde of `watts` as the `"Idle:Epsilon:AllCores"` string.
mod opt_range {
    use super::PowerRange;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<PowerRange>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(p) => s.serialize_str(&format!("{}:{}:{}", p.idle_w, p.epsilon_w, p.all_cores_w)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PowerRange>, D::Error> {
        let s = String::deserialize(d)?;
        PowerRange::parse(&s).map(Some).map_err(serde::de::Error::custom)
    }
}

/// Integrates each host's power over simulated time from the compute
/// blocks of its ranks. Blocks must be reported in nondecreasing start
/// order (the replay engine runs actions in simulated-time order).
/// Memory: one pending end time per busy core.
#[derive(Debug)]
pub(crate) struct EnergyMeter {
    hosts: Vec<HostMeter>,
}

#[derive(Debug)]
struct HostMeter {
    range: Option<PowerRange>,
    cores: u32,
    /// End times of the blocks in progress (min-heap by `total_cmp`).
    ends: BinaryHeap<Reverse<Time>>,
    /// Time up to which `joules` is integrated, seconds.
    last: f64,
    joules: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Time(f64);
impl Eq for Time {}
impl PartialOrd for Time {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Time {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

impl HostMeter {
    /// Integrates up to `t`, ending the blocks that end by then.
    fn advance(&mut self, t: f64) {
        let Some(range) = self.range else { return };
        while let Some(&Reverse(Time(end))) = self.ends.peek() {
            if end > t {
                break;
            }
            if end > self.last {
                self.joules += range.watts(self.cores, self.ends.len() as u32) * (end - self.last);
                self.last = end;
            }
            self.ends.pop();
        }
        if t > self.last {
            self.joules += range.watts(self.cores, self.ends.len() as u32) * (t - self.last);
            self.last = t;
        }
    }
}

impl EnergyMeter {
    /// One meter per host: `(power range at the running pstate, cores)`.
    pub(crate) fn new(hosts: impl IntoIterator<Item = (Option<PowerRange>, u32)>) -> EnergyMeter {
        let hosts =
            hosts.into_iter().map(|(range, cores)| HostMeter { range, cores, ends: BinaryHeap::new(), last: 0.0, joules: 0.0 }).collect();
        EnergyMeter { hosts }
    }

    /// A core of `host` computes from `start_s` for `dt_s` seconds.
    pub(crate) fn busy(&mut self, host: usize, start_s: f64, dt_s: f64) {
        let h = &mut self.hosts[host];
        if h.range.is_none() || dt_s <= 0.0 {
            return;
        }
        h.advance(start_s);
        h.ends.push(Reverse(Time(start_s + dt_s)));
    }

    /// Joules per host integrated over `[0, end_s]` (`None` for a host
    /// without a power range).
    pub(crate) fn finish(mut self, end_s: f64) -> Vec<Option<f64>> {
        self.hosts
            .iter_mut()
            .map(|h| {
                h.advance(end_s);
                h.range.map(|_| h.joules)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simgrid_doc_table_of_four_cores() {
        // SimGrid's host_energy doc: 100:120:200 on 4 cores gives 100 W idle,
        // then 140, 160, 180, 200 W with 1..4 cores loaded.
        let p = PowerRange::parse("100.0:120.0:200.0").unwrap();
        let w: Vec<f64> = (0..=5).map(|k| p.watts(4, k)).collect();
        assert_eq!(w, [100.0, 140.0, 160.0, 180.0, 200.0, 200.0]);
        assert_eq!(PowerRange::parse("90:150").unwrap(), PowerRange { idle_w: 90.0, epsilon_w: 90.0, all_cores_w: 150.0 });
        for bad in ["1", "1:2:3:4", "a:1", "-1:2:3"] {
            assert!(PowerRange::parse(bad).unwrap_err().0.contains(bad), "{bad}");
        }
    }

    #[test]
    fn meter_integrates_overlapping_blocks() {
        // 2 cores, 100:120:200: blocks [0,2] and [1,3], end at 4:
        // 0–1 one core (160 W), 1–2 two (200 W), 2–3 one (160 W), 3–4 idle (100 W).
        let p = PowerRange::parse("100:120:200").unwrap();
        let mut m = EnergyMeter::new([(Some(p), 2), (None, 1)]);
        m.busy(0, 0.0, 2.0);
        m.busy(0, 1.0, 2.0);
        m.busy(1, 0.0, 1.0);
        let e = m.finish(4.0);
        assert_eq!(e, [Some(160.0 + 200.0 + 160.0 + 100.0), None]);
    }
}

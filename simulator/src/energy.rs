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
//! `smpi/or` are sleeps. Energy is ∫ P dt from 0 to the makespan, with
//! the host's pstate changing during the run under a DVFS policy
//! ([`crate::dvfs`]).

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

pub(crate) mod meter;
pub(crate) use meter::EnergyMeter;

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
}

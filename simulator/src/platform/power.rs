//! Hosts' pstates and their power (SimGrid's `speed` list and
//! `wattage_per_state`); the energy model that uses them is
//! [`crate::energy`].

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

    /// Power with `busy` of `cores` cores computing, watts (rule of
    /// [`crate::energy`]; `busy > cores` counts as all cores).
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

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

pub use crate::platform::power::{PowerRange, Pstate};

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

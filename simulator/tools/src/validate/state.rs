//! The machine's latency state, checked before every case.
//!
//! On a shared VM the core-to-core latency switches between a fast and a
//! slow state for tens of seconds at a time (the user guide, section 7,
//! gives the figures; `calibrate network` says so when it sees both, and
//! fits the fast one). A calibration made wholly in the slow state
//! predicts a latency-bound program about 2.5 times slower than a plain
//! run made after the machine switched back, and a case measured in the slow state is
//! compared with a model of the fast one. So before each case a short
//! probe (`calibrate network` on three sizes up to 64 B, 0.6 s) measures
//! the 8-byte transfer time:
//! - while it is at least [`STATE_RATIO`] times the fastest calibration
//!   made so far, the case waits for the machine to leave its slow state
//!   (probing every [`PROBE_PERIOD`], like the wait for a quiet machine);
//! - then the case is predicted on the calibration within [`STATE_RATIO`]
//!   of the probe; when none is (the first calibration ran in the slow
//!   state, or the slow state outlasted the wait), `validate` calibrates
//!   the machine in its present state (when it calibrated itself), so that
//!   measurement and model always meet the machine in one state. The row's
//!   note says which calibration it used and how long it waited;
//! - after the case the probe runs again: a machine that changed state
//!   during the case (it switches every few tens of seconds here) had the
//!   case measured in another state than its model's, and the case is
//!   made once more.
//!
//! The probe needs the platform's intra-node model and no hostfile
//! (between hosts the network path's own latency dominates). It runs on a
//! quiet machine, as the cases do ([`super::quiet`]): CPU contention
//! slows a probe as the slow state does.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use simulator::platform::Platform;

/// Ratio of the probe's 8-byte transfer time to the platform's beyond
/// which the machine is in another state (dimensionless; the states are
/// 2-2.5 times apart here, one state's probes within ±10 %).
pub const STATE_RATIO: f64 = 1.5;
/// Time between probes while waiting for the fast state.
pub const PROBE_PERIOD: Duration = Duration::from_secs(2);
/// Message size of the comparison, bytes.
pub const PROBE_BYTES: u64 = 8;

/// How the machine's state compares with the platform's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum State {
    /// Within [`STATE_RATIO`] of the platform.
    Same,
    /// The probe is this many times slower than the platform.
    Slower(f64),
    /// The probe is this many times faster than the platform.
    Faster(f64),
}

/// Classifies a probe of `probe_s` against the platform's `platform_s`
/// (seconds).
pub fn classify(probe_s: f64, platform_s: f64) -> State {
    let r = probe_s / platform_s;
    if r >= STATE_RATIO {
        State::Slower(r)
    } else if r <= 1.0 / STATE_RATIO {
        State::Faster(1.0 / r)
    } else {
        State::Same
    }
}

/// The intra-node 8-byte transfer time of `platform`, seconds.
pub fn platform_latency_s(platform: &Platform) -> f64 {
    platform.network.intra.transfer.eval(PROBE_BYTES)
}

/// The probe: runs `calibrate network` (`exe`) on three sizes up to 64 B
/// into `dir` with the launcher's `mpirun` and arguments; returns the
/// fitted 8-byte transfer time, seconds.
///
/// # Errors
/// A one-line message when the calibration fails or its platform does
/// not load.
pub fn probe(exe: &Path, mpirun: &str, mpirun_args: &[String], dir: &Path) -> Result<f64, String> {
    let out = dir.join("probe.toml");
    let log = dir.join("probe.log");
    let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
    let mut cmd = Command::new(exe);
    cmd.args(["network", "--sizes", "3", "--reps", "5", "--max-bytes", "64", "--refine-rounds", "0", "--loggp-n", "0"]);
    cmd.args(["--max-extra-passes", "0", "--holdout", "0", "--out"]).arg(&out);
    for a in mpirun_args {
        cmd.arg(format!("--mpirun-arg={a}"));
    }
    let status = cmd.env("MPIRUN", mpirun).env_remove("RUST_BACKTRACE").stdin(Stdio::null()).stdout(file).stderr(err).status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => return Err(format!("state probe failed ({s}); log in {}", log.display())),
        Err(e) => return Err(format!("state probe: cannot run {}: {e}", exe.display())),
    }
    let platform = Platform::load(&out).map_err(|e| e.to_string())?;
    Ok(platform_latency_s(&platform))
}

/// The probe repeated every `period` ([`PROBE_PERIOD`] in `validate`)
/// while the machine is slower than `platform_s`, for at most `max_wait`;
/// returns what the probes found.
///
/// # Errors
/// As [`probe`].
pub fn await_fast(
    mut probe: impl FnMut() -> Result<f64, String>,
    platform_s: f64,
    max_wait: Duration,
    period: Duration,
) -> Result<Probed, String> {
    let start = Instant::now();
    let mut probes = Vec::new();
    loop {
        let p = probe()?;
        probes.push(p);
        let state = classify(p, platform_s);
        if !matches!(state, State::Slower(_)) || start.elapsed() >= max_wait {
            return Ok(Probed { state, probes_s: probes, waited: start.elapsed() });
        }
        std::thread::sleep(period);
    }
}

/// What [`await_fast`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Probed {
    /// The state at the last probe.
    pub state: State,
    /// Every probe's 8-byte transfer time, seconds, in order (at least one).
    pub probes_s: Vec<f64>,
    /// Time from the first probe's start to the last one's end.
    pub waited: Duration,
}

impl Probed {
    /// The last probe, seconds.
    pub fn last_s(&self) -> f64 {
        *self.probes_s.last().expect("at least one probe")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_told_apart_by_the_ratio() {
        assert_eq!(classify(0.17e-6, 0.16e-6), State::Same);
        assert!(matches!(classify(0.38e-6, 0.16e-6), State::Slower(r) if (r - 2.375).abs() < 1e-9));
        assert!(matches!(classify(0.16e-6, 0.40e-6), State::Faster(r) if (r - 2.5).abs() < 1e-9));
    }

    #[test]
    fn waiting_stops_at_the_fast_state_or_the_limit() {
        let mut probes = [0.4e-6, 0.39e-6, 0.16e-6].into_iter();
        let p = await_fast(|| Ok(probes.next().unwrap()), 0.16e-6, Duration::from_secs(60), Duration::ZERO).unwrap();
        assert_eq!((p.state, p.last_s(), p.probes_s.len()), (State::Same, 0.16e-6, 3));
        let p = await_fast(|| Ok(0.4e-6), 0.16e-6, Duration::ZERO, Duration::ZERO).unwrap();
        assert!(matches!(p.state, State::Slower(_)));
        assert_eq!(p.probes_s.len(), 1);
        assert!(await_fast(|| Err("no mpirun".into()), 0.16e-6, Duration::ZERO, Duration::ZERO).is_err());
    }
}

//! Whole runs in the machine's slow state.
//!
//! On a shared VM a whole run can land in a slow state: here about one
//! `ring 1500 65536` run in five takes 1.9-2.2 times as long as the others
//! (0.058-0.067 s against 0.029-0.031 s, same core binding, with or
//! without address randomization, no CPU contention), the memory the
//! ranks copy between them being slower for the whole run. The median
//! of five runs then moves by up to 10 % with the number of slow ones.
//! `calibrate network` fits the fast state (its `modes` module); the
//! measurement it is compared with is the fast state's too: a plain run
//! at least [`SLOW_RATIO`] times the fastest is in a slow state, left
//! out of the median and named in the row's note, and more plain runs
//! are made until the fast state has the suite's count
//! ([`FastRuns::wanted`]). The traced runs are judged by their own
//! replays, which leave out tracing's cost ([`FastRuns::fast_replays`]):
//! when every one is slow, they are made again, as their compute blocks
//! are the slow state's; the prediction is made of those in the fast
//! state; when none is and most plain runs were slow, the slow plain runs
//! become the measurement. The online runs are judged by their
//! predictions the same way: the prediction is the median of those in the
//! fast state, and they are made again when they all met the slow state
//! and the traced runs did not.

/// A run taking at least this many times the fastest plain run of its
/// case is in a slow state (dimensionless). Within one state, plain runs
/// here spread by up to 1.22x (pingpong 0.038-0.046 s); the slow states
/// are 1.35-1.8x for compute (jacobi2d 0.092 s against 0.125-0.163 s when
/// the host's other tenants took a share of the cores, which neither the
/// guest's CPU pressure nor its steal time shows) and 1.9-2.5x for
/// copies and latency.
pub const SLOW_RATIO: f64 = 1.3;

/// A case's plain runs split by state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FastRuns {
    /// `wall_s` of the runs in the fast state, seconds, in run order.
    pub fast: Vec<f64>,
    /// `wall_s` of the runs in the slow state, seconds, in run order.
    pub slow: Vec<f64>,
}

impl FastRuns {
    /// Splits `runs` (seconds, run order): slow are those at least
    /// [`SLOW_RATIO`] times the fastest.
    pub fn split(runs: &[f64]) -> FastRuns {
        let min = runs.iter().copied().filter(|w| *w > 0.0).fold(f64::INFINITY, f64::min);
        let (slow, fast) = runs.iter().partition(|&&w| w >= SLOW_RATIO * min);
        FastRuns { fast, slow }
    }

    /// Whether another plain run is wanted: fewer than `reps` in the fast
    /// state while fewer than `2 · reps` were made.
    pub fn wanted(&self, reps: usize) -> bool {
        !self.slow.is_empty() && self.fast.len() < reps && self.fast.len() + self.slow.len() < 2 * reps
    }

    /// Which traced runs are in the fast state, judged by their own
    /// predictions `replays` (seconds, each run replayed alone: its time
    /// without tracing's cost, in the state it met): below
    /// [`SLOW_RATIO`] times the fastest plain run. `None` without plain
    /// runs.
    pub fn fast_replays(&self, replays: &[f64]) -> Option<Vec<bool>> {
        let fastest = self.fast.iter().copied().filter(|w| *w > 0.0).reduce(f64::min)?;
        Some(replays.iter().map(|&p| p < SLOW_RATIO * fastest).collect())
    }

    /// The row note naming the slow runs, if any.
    pub fn note(&self) -> Option<String> {
        if self.slow.is_empty() {
            return None;
        }
        let list = self.slow.iter().map(|w| format!("{w:.4}")).collect::<Vec<_>>().join(", ");
        Some(format!(
            "{} of {} plain runs in a slow state of the machine (>= {SLOW_RATIO}x the fastest: {list} s), out of the median as calibrate leaves the slow state out of its fit",
            self.slow.len(),
            self.slow.len() + self.fast.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_twice_as_slow_are_the_slow_state_and_ask_for_more_runs() {
        let r = FastRuns::split(&[0.0655, 0.0316, 0.0328, 0.0297, 0.0586]);
        assert_eq!(r.fast, vec![0.0316, 0.0328, 0.0297]);
        assert_eq!(r.slow, vec![0.0655, 0.0586]);
        assert!(r.wanted(5));
        assert!(r.note().unwrap().starts_with("2 of 5 plain runs"));
    }

    #[test]
    fn ordinary_spread_is_one_state() {
        let r = FastRuns::split(&[0.0391, 0.0393, 0.0384, 0.0379, 0.0462]);
        assert!(r.slow.is_empty());
        assert!(!r.wanted(5));
        assert_eq!(r.note(), None);
    }

    #[test]
    fn traced_runs_are_judged_by_their_replays_against_the_fastest_plain_run() {
        let r = FastRuns::split(&[0.2832, 0.2590, 0.3580, 0.2710, 0.3699]);
        assert_eq!(r.fast, vec![0.2832, 0.2590, 0.2710]);
        // 1.3 x 0.2590 = 0.3367 s.
        assert_eq!(r.fast_replays(&[0.3405, 0.2650, 0.3366, 0.3151]), Some(vec![false, true, true, true]));
        assert_eq!(FastRuns::split(&[]).fast_replays(&[0.3]), None);
    }

    #[test]
    fn extra_runs_stop_at_twice_the_count() {
        let r = FastRuns::split(&[0.03, 0.06, 0.06, 0.06, 0.06, 0.03, 0.06, 0.06, 0.06, 0.06]);
        assert_eq!(r.fast.len(), 2);
        assert!(!r.wanted(5));
    }
}

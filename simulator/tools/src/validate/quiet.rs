//! Runs on a quiet machine: every validation run waits for the CPUs to be
//! free of other work, its CPU contention is measured, and a run that
//! other tasks disturbed is repeated.
//!
//! The measure is Linux's pressure stall information for the CPU
//! (`/proc/pressure/cpu`, the `some` line's `total`, microseconds): the time
//! during which at least one runnable task waited for a CPU. Two
//! busy-polling ranks on two cores leave no CPU to spare, so any other
//! task that runs takes one from a rank, and a rank that loses its core
//! waits a scheduler time slice (milliseconds) for a message that takes a
//! microsecond: no network model predicts that, and the run measures the
//! other work, not the program. Undisturbed runs stall a little (the
//! launch itself: `mpirun` and the starting ranks share the cores);
//! disturbed ones stall many times more, and their `wall_s` is several
//! times longer (the user guide gives the figures of a 2-core VM).
//!
//! The rule does not look at the run's time, only at the contention, so
//! it keeps the measurement a median of plain runs on the machine the
//! user guide asks for (otherwise idle), not a selection of fast runs.

use std::time::{Duration, Instant};

/// Time during which some task waited for a CPU since boot,
/// microseconds (`/proc/pressure/cpu`, `some ... total=`); `None` without
/// PSI (kernel before 4.20, or `psi=0`).
pub fn cpu_stall_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    parse_some_total(&text)
}

/// The `total=` of the `some` line of a PSI file's text.
pub fn parse_some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace().find_map(|f| f.strip_prefix("total="))?.parse().ok()
}

/// The contention rule of the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Quiet {
    /// A run is disturbed when tasks waited for a CPU longer than this
    /// share of its duration (dimensionless, 0..1).
    pub max_stall_share: f64,
    /// Repeats of a disturbed run before its last attempt is kept.
    pub retries: usize,
    /// Longest wait for a quiet window before a run, then it runs anyway.
    pub max_wait: Duration,
    /// Length of the window that must be quiet before a run.
    pub window: Duration,
}

impl Default for Quiet {
    /// 10 % stall, 3 retries, 20 s wait, 0.3 s window.
    fn default() -> Quiet {
        Quiet { max_stall_share: 0.10, retries: 3, max_wait: Duration::from_secs(20), window: Duration::from_millis(300) }
    }
}

/// How one run met the machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contention {
    /// Time tasks waited for a CPU during the run, seconds.
    pub stall_s: f64,
    /// The run's duration (launcher start to exit), seconds.
    pub elapsed_s: f64,
}

impl Contention {
    /// `stall_s / elapsed_s` (0 for an empty run).
    pub fn share(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.stall_s / self.elapsed_s
        } else {
            0.0
        }
    }
}

impl Quiet {
    /// True when `c` is over the rule's stall share; never with a share
    /// of 1 or more (the stall, summed over the tasks waiting, can pass
    /// the run's own time).
    pub fn disturbed(&self, c: &Contention) -> bool {
        self.max_stall_share < 1.0 && c.share() > self.max_stall_share
    }

    /// Waits until one window of [`Quiet::window`] has a stall share of at
    /// most half the rule's, or [`Quiet::max_wait`] has passed; returns
    /// how long it waited. Returns at once without PSI.
    pub fn wait(&self) -> Duration {
        let started = Instant::now();
        while started.elapsed() < self.max_wait {
            let Some(a) = cpu_stall_us() else { break };
            let t = Instant::now();
            std::thread::sleep(self.window);
            let Some(b) = cpu_stall_us() else { break };
            let share = b.saturating_sub(a) as f64 * 1e-6 / t.elapsed().as_secs_f64();
            if share <= 0.5 * self.max_stall_share {
                break;
            }
        }
        started.elapsed()
    }

    /// Runs `run` on a quiet machine: waits ([`Quiet::wait`]), runs it
    /// while measuring the contention, and repeats a disturbed run up to
    /// [`Quiet::retries`] times, calling `discard(attempt, &contention)`
    /// before each repeat (to keep its log). Returns the last attempt's
    /// result and contention (`None` without PSI).
    pub fn run<T>(&self, mut run: impl FnMut() -> T, mut discard: impl FnMut(usize, &T, &Contention)) -> (T, Option<Contention>) {
        let mut attempt = 0;
        loop {
            self.wait();
            let before = cpu_stall_us();
            let t = Instant::now();
            let out = run();
            let elapsed_s = t.elapsed().as_secs_f64();
            let c = match (before, cpu_stall_us()) {
                (Some(a), Some(b)) => Some(Contention { stall_s: b.saturating_sub(a) as f64 * 1e-6, elapsed_s }),
                _ => None,
            };
            match c {
                Some(c) if attempt < self.retries && self.disturbed(&c) => {
                    discard(attempt, &out, &c);
                    attempt += 1;
                }
                _ => return (out, c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_some_total_is_read_from_a_psi_file() {
        let text = "some avg10=53.24 avg60=46.76 avg300=50.70 total=863749899\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_some_total(text), Some(863_749_899));
        assert_eq!(parse_some_total("full avg10=0 total=5\n"), None);
        assert_eq!(parse_some_total("some total=x\n"), None);
    }

    #[test]
    fn a_disturbed_run_is_repeated_until_the_retries_are_spent() {
        let q = Quiet { max_wait: Duration::ZERO, window: Duration::ZERO, retries: 2, ..Quiet::default() };
        assert!(q.disturbed(&Contention { stall_s: 0.2, elapsed_s: 0.5 }));
        assert!(!q.disturbed(&Contention { stall_s: 0.02, elapsed_s: 0.4 }));
        assert!(!q.disturbed(&Contention { stall_s: 0.0, elapsed_s: 0.0 }));
        // --max-stall-pct 100 keeps every run, even one stalled longer than it ran.
        let all = Quiet { max_stall_share: 1.0, ..q };
        assert!(!all.disturbed(&Contention { stall_s: 0.6, elapsed_s: 0.5 }));
        // Whatever the machine does, the run is made at least once and at
        // most 1 + retries times, and every repeat is reported first.
        let (mut runs, mut discarded) = (0, 0);
        let (out, _) = q.run(
            || {
                runs += 1;
                runs
            },
            |_, _, c| {
                assert!(q.disturbed(c));
                discarded += 1;
            },
        );
        assert_eq!(out, runs);
        assert!((1..=3).contains(&runs) && discarded == runs - 1, "{runs} runs, {discarded} discarded");
    }
}

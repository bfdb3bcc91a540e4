//! Pstates that change during the run (DVFS): a host lowered while its
//! ranks wait in MPI, regions run at pstates of their own, and what a
//! switch costs (Heinrich et al. 2017, §3 and §7: the simulated code calls
//! SimGrid's `sg_host_set_pstate`; the policies of Etinski et al. and
//! Peraza et al. lower the frequency in communication phases).
//!
//! # Policies (`simulator replay --dvfs`, `INTERPOSER_DVFS`)
//! - `wait=K`: a host runs at pstate `K` while every rank on it that has
//!   not finalized waits in MPI, and returns to its pstate when one
//!   resumes.
//! - `regions=FILE.csv`: the compute blocks of each listed region run at
//!   its pstate ([`RegionPstates`]); other blocks at the host's pstate.
//!
//! Both may be given (`wait=2,regions=r.csv`, or the option twice).
//!
//! # What a rank waits in
//! A blocking wait of point-to-point requests (`Recv`, a rendezvous
//! `Send`, `Wait`, `Waitall`, `Sendrecv`, a wait on a nonblocking
//! collective) or a one-sided synchronization waits from the moment the
//! rank blocks, past its call's overheads, until it resumes. A blocking
//! collective counts as one wait from its entry to its exit: online mode
//! learns only the exit of a collective, and both drivers use this rule.
//! MPI-IO calls and compute are no waits.
//!
//! # Time (per rank, [`RankDvfs`]; the same in the replay and online)
//! A rank's pstate is its block's pstate while it computes, `K` while it
//! waits (with `wait=K`), else its host's pstate. When it changes at `t`
//! on a host with `pstate_switch_s = s > 0`, the rank computes at the
//! slower of the two pstates' speeds during `[t, t + s)`. A compute block
//! of `d` seconds at the host's pstate `p` takes `d · speed(p) /
//! speed(q)` at pstate `q`, less during a switch. Each rank decides its
//! time on its own, as if its pstate were its core's (online mode sees
//! one rank's clock and not when the other ranks of its host wait):
//! with one rank per host this is exactly the host's pstate. MPI
//! overheads and transfers do not depend on the pstate (SMPI models them
//! as sleeps), and neither do a collective's reductions.
//!
//! # Energy (per host, [`crate::energy`]; SimGrid's `host_energy` rule)
//! A host's pstate at time `t` is the fastest pstate its running ranks
//! are at (a finalized rank no longer counts; once all have, the host is
//! back at its own pstate). Its power is that pstate's `Idle` with no
//! core busy, else `Epsilon + load · (AllCores − Epsilon)`. A core is
//! busy while a rank computes on it, and also while it waits when
//! [`Dvfs::waiting_busy`] (`--waiting-ranks poll` given: a polling MPI).
//! During a switch of `s` seconds the host draws, at its load, the larger
//! of the two pstates' powers (component by component).

pub use crate::platform::dvfs::{Dvfs, RegionPstates};
use crate::platform::Host;

/// One rank's pstate and switch in progress: the time rule of the module
/// docs, shared by the replay engine and online mode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankDvfs {
    /// The pstate the rank is at.
    pstate: usize,
    /// End of the switch in progress, seconds (`-inf`: none).
    until: f64,
    /// Speed during that switch, flop/s.
    slow_flops: f64,
}

impl RankDvfs {
    /// A rank at `host`'s pstate, no switch in progress.
    pub fn new(host: &Host) -> RankDvfs {
        RankDvfs { pstate: host.pstate, until: f64::NEG_INFINITY, slow_flops: 0.0 }
    }

    /// The pstate the rank is at.
    pub fn pstate(&self) -> usize {
        self.pstate
    }

    /// The rank moves to pstate `to` at `t_s`: a switch of
    /// `host.pstate_switch_s` starts when `to` differs.
    fn switch(&mut self, host: &Host, t_s: f64, to: usize) {
        if to == self.pstate {
            return;
        }
        if host.pstate_switch_s > 0.0 {
            self.until = t_s + host.pstate_switch_s;
            self.slow_flops = host.pstates[self.pstate].speed_flops.min(host.pstates[to].speed_flops);
        }
        self.pstate = to;
    }

    /// Duration, seconds, of a compute block that starts at `start_s`,
    /// takes `base_s` seconds at `host`'s pstate, and runs at `pstate`
    /// (the rank is at `pstate` until [`RankDvfs::block_ended`]).
    ///
    /// # Panics
    /// When `pstate` or the host's pstate is not one of `host.pstates`.
    pub fn compute(&mut self, host: &Host, pstate: usize, start_s: f64, base_s: f64) -> f64 {
        self.switch(host, start_s, pstate);
        let base = host.pstates[host.pstate].speed_flops;
        let mut left = base_s;
        let mut dt = 0.0;
        if self.until > start_s && left > 0.0 {
            let rate = self.slow_flops / base;
            let cap = (self.until - start_s) * rate;
            if left <= cap {
                dt = left / rate;
                left = 0.0;
            } else {
                left -= cap;
                dt = self.until - start_s;
            }
        }
        if left > 0.0 {
            dt += left * (base / host.pstates[pstate].speed_flops);
        }
        dt
    }

    /// The rank's compute block ended at `end_s`: it is back at the host's pstate.
    pub fn block_ended(&mut self, host: &Host, end_s: f64) {
        self.switch(host, end_s, host.pstate);
    }

    /// The rank waited in MPI from `since_s` to `resume_s`: with
    /// `wait=K`, it was at `K` meanwhile and switches back at `resume_s`.
    pub fn wait(&mut self, host: &Host, dvfs: &Dvfs, since_s: f64, resume_s: f64) {
        if let Some(k) = dvfs.wait_pstate.filter(|_| resume_s > since_s) {
            self.switch(host, since_s, k);
            self.switch(host, resume_s, host.pstate);
        }
    }
}

#[cfg(test)]
mod tests;

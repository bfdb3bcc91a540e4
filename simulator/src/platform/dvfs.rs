//! A DVFS policy (`simulator replay --dvfs`, `INTERPOSER_DVFS`): which
//! pstate a host takes while its ranks wait and which regions run at
//! pstates of their own. What the policy does to times and energy is
//! [`crate::dvfs`].

use super::{Host, Platform};

mod regions;
pub use regions::RegionPstates;

/// A DVFS policy and the energy rule for waiting ranks; the default
/// changes nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dvfs {
    /// Pstate a host runs at while every rank on it waits (`wait=K`).
    pub wait_pstate: Option<usize>,
    /// Pstates of listed regions (`regions=FILE.csv`).
    pub regions: RegionPstates,
    /// A waiting rank keeps its core busy in the energy accounting (a
    /// polling MPI); it does not change times.
    pub waiting_busy: bool,
}

impl Dvfs {
    /// True when the policy changes no pstate during the run.
    pub fn is_static(&self) -> bool {
        self.wait_pstate.is_none() && self.regions.is_empty()
    }

    /// A policy from `spec`: comma-separated items `wait=K` and
    /// `regions=FILE.csv` (the file is read now).
    ///
    /// # Errors
    /// A one-line message quoting the bad item, or naming the file and
    /// line of a bad region file ([`RegionPstates::load`]).
    pub fn parse(spec: &str) -> Result<Dvfs, crate::error::Invalid> {
        let mut d = Dvfs::default();
        d.add(spec)?;
        Ok(d)
    }

    /// Adds the items of `spec` ([`Dvfs::parse`]) to this policy; a later
    /// `wait=K` or region wins.
    ///
    /// # Errors
    /// As [`Dvfs::parse`].
    pub fn add(&mut self, spec: &str) -> Result<(), crate::error::Invalid> {
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item.split_once('=') {
                Some(("wait", k)) => {
                    let k = k.trim().parse().map_err(|_| format!("`{item}`: the pstate must be an integer >= 0"))?;
                    self.wait_pstate = Some(k);
                }
                Some(("regions", path)) => {
                    let r = RegionPstates::load(std::path::Path::new(path.trim()))?;
                    self.regions.extend(r);
                }
                _ => return Err(format!("`{item}`: expected wait=<pstate> or regions=<file.csv>").into()),
            }
        }
        Ok(())
    }

    /// Checks the policy's pstates against every host of `platform` that
    /// has pstates.
    ///
    /// # Errors
    /// A one-line message when no host has pstates while the policy
    /// changes some, or naming the host (and the region file's line) of a
    /// pstate it does not have.
    pub fn check(&self, platform: &Platform) -> Result<(), crate::error::Invalid> {
        if self.is_static() {
            return Ok(());
        }
        let hosts: Vec<&Host> = platform.hosts.iter().filter(|h| !h.pstates.is_empty()).collect();
        if hosts.is_empty() {
            return Err("the platform's hosts have no pstates to switch between".into());
        }
        for h in hosts {
            let n = h.pstates.len();
            if let Some(k) = self.wait_pstate.filter(|&k| k >= n) {
                return Err(format!("wait={k}: host {} has {n} pstates (0..{n})", h.name).into());
            }
            self.regions.check(n).map_err(|w| format!("{w}: host {} has {n} pstates (0..{n})", h.name))?;
        }
        Ok(())
    }

    /// The pstate a compute block of `region` runs at on `host` (the
    /// host's pstate unless the region is listed).
    pub fn block_pstate(&self, host: &Host, region: Option<u64>) -> usize {
        region.and_then(|r| self.regions.get(r)).unwrap_or(host.pstate)
    }
}

//! `simulator replay --otf2 DIR`: the simulated run as an OTF2 archive
//! ([`crate::otf2_out`]), from the replay's action log
//! ([`simulator::replay::Replay::action_log`]): simulated timestamps in
//! nanoseconds, one region per action named after the MPI call it
//! stands for.

use std::collections::HashMap;
use std::path::Path;

use simulator::action::Action;

use crate::otf2_out::ArchiveOut;

/// The simulated run's archive being written.
pub struct SimArchive {
    out: ArchiveOut,
    names: HashMap<u64, String>,
    err: Option<otf2::Error>,
}

impl SimArchive {
    /// Creates `<dir>/traces.otf2` for `ranks` ranks; `names` gives the
    /// compute regions' call-site names by id.
    ///
    /// # Errors
    /// The archive exists already or cannot be created (naming it).
    pub fn create(dir: &Path, ranks: u32, names: HashMap<u64, String>) -> Result<SimArchive, otf2::Error> {
        Ok(SimArchive { out: ArchiveOut::create(dir, ranks)?, names, err: None })
    }

    /// Writes `rank`'s `action` over `[start_s, end_s]` of simulated time;
    /// the first error is kept for [`SimArchive::finish`].
    pub fn log(&mut self, rank: usize, action: &Action, start_s: f64, end_s: f64) {
        if self.err.is_some() {
            return;
        }
        let ns = |s: f64| (s * 1e9).round().max(0.0) as u64;
        let (start, end, r) = (ns(start_s), ns(end_s), rank as u32);
        let res = match (action.mpi_name(), action) {
            (Some(name), _) => self.out.call(r, r as u64, name, start, end, std::slice::from_ref(action)),
            (None, Action::Compute { region, .. }) if end > start => {
                let name = self.names.get(region).cloned().unwrap_or_else(|| {
                    if *region == 0 {
                        "compute".into()
                    } else {
                        format!("region {region:#x}")
                    }
                });
                self.out.compute(r as u64, &name, start, end)
            }
            (None, Action::Flops { .. }) if end > start => self.out.compute(r as u64, "compute (flops)", start, end),
            _ => Ok(()),
        };
        if let Err(e) = res {
            self.err = Some(e);
        }
    }

    /// Closes the archive.
    ///
    /// # Errors
    /// The first error met while writing, or closing fails.
    pub fn finish(self) -> Result<(), otf2::Error> {
        match self.err {
            Some(e) => Err(e),
            None => self.out.finish(),
        }
    }
}

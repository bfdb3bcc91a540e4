//! Per-region speed ratios in online mode (`INTERPOSER_SPEED_RATIOS`):
//! each compute block's thread CPU time is multiplied by the ratio of its
//! region before it advances the virtual clock, as `simulator replay
//! --speed-ratios` does offline (Heinrich et al. 2017, §5: SimGrid's
//! `smpi/comp-adjustment-file`).
//!
//! A region is named from the live process exactly as offline tools name
//! it from the trace: `file:line:file:line` where the binary has debug
//! information, else `module+0xoffset:module+0xoffset`
//! ([`simulator::trace::symbols`]). Each (previous call site, next call
//! site) pair is named once and cached.

use std::collections::HashMap;
use std::path::Path;

use simulator::speed::SpeedRatios;
use simulator::trace::symbols::{region_key_in, Symbolizer};
use simulator::trace::Module;

/// Most times the module table is re-read for an address outside it (a
/// library loaded after `MPI_Init`).
const MAX_REFRESH: u32 = 16;

/// The ratios of one rank, with the names of the regions met so far.
#[derive(Debug)]
pub struct RegionRatios {
    ratios: SpeedRatios,
    modules: Vec<Module>,
    sym: Symbolizer,
    /// Ratio and region id per (previous, next) call site.
    cache: HashMap<(u64, u64), (f64, u64)>,
    refreshes: u32,
}

impl RegionRatios {
    /// Reads a ratio file (`"start-stop","ratio"` CSV).
    ///
    /// # Errors
    /// [`simulator::speed::SpeedError`]: one line naming the file (and
    /// line) at fault.
    pub fn load(path: &Path) -> Result<RegionRatios, simulator::speed::SpeedError> {
        let ratios = SpeedRatios::load(path)?;
        Ok(RegionRatios::with(ratios))
    }

    /// No ratios (every region keeps ratio 1): only the regions' names,
    /// for a DVFS policy's per-region pstates (`INTERPOSER_DVFS`).
    pub fn names() -> RegionRatios {
        RegionRatios::with(SpeedRatios::new())
    }

    fn with(ratios: SpeedRatios) -> RegionRatios {
        RegionRatios { ratios, modules: Vec::new(), sym: Symbolizer::new(), cache: HashMap::new(), refreshes: 0 }
    }

    fn known(&self, addr: u64) -> bool {
        addr == 0 || self.modules.iter().any(|m| m.start <= addr && addr < m.end)
    }

    /// The ratio of the block between the calls whose return addresses
    /// are `prev` (0: `MPI_Init`) and `next` (1 for a region the file does
    /// not name), and the region's id
    /// ([`simulator::trace::region_key_id`] of its name).
    pub fn lookup(&mut self, prev: u64, next: u64) -> (f64, u64) {
        if let Some(&r) = self.cache.get(&(prev, next)) {
            return r;
        }
        if (!self.known(prev) || !self.known(next)) && self.refreshes < MAX_REFRESH {
            self.modules = crate::modules::current();
            self.refreshes += 1;
        }
        let key = region_key_in(&mut self.sym, &self.modules, prev, next);
        let r = (self.ratios.get_key(&key).unwrap_or(1.0), simulator::trace::region_key_id(&key));
        self.cache.insert((prev, next), r);
        r
    }
}

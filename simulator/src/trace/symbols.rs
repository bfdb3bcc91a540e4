//! Offline symbolization of call sites to `file:line`, from the DWARF
//! debug information of the traced binaries (programs built with `-g`).
//!
//! A call site is a return address inside a module; the trace's module
//! table gives the module's file and the file offset of the address. The
//! ELF load segments turn that offset into the module's virtual address,
//! and `addr2line` looks up the line of the call instruction (the return
//! address minus one). Sites without debug information keep their stable
//! `module+0xoffset` name.

use std::collections::HashMap;
use std::path::Path;

use super::{CallSite, Module, RankTrace};

struct Debug {
    loader: addr2line::Loader,
    /// Load segments: (file offset, file size, virtual address).
    segments: Vec<(u64, u64, u64)>,
}

impl Debug {
    fn open(path: &Path) -> Option<Debug> {
        use object::{Object, ObjectSegment};
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let segments = file
            .segments()
            .filter_map(|s| {
                let (off, size) = s.file_range();
                (size > 0).then_some((off, size, s.address()))
            })
            .collect();
        let loader = addr2line::Loader::new(path).ok()?;
        Some(Debug { loader, segments })
    }

    fn line(&self, file_offset: u64) -> Option<String> {
        let &(off, _, vaddr) = self.segments.iter().find(|(o, s, _)| *o <= file_offset && file_offset < o + s)?;
        let probe = vaddr + (file_offset - off);
        let loc = self.loader.find_location(probe.checked_sub(1)?).ok()??;
        let file = Path::new(loc.file?).file_name()?.to_string_lossy().into_owned();
        Some(format!("{file}:{}", loc.line?))
    }
}

/// Resolves call sites to `file:line`, caching each module's debug data.
#[derive(Default)]
pub struct Symbolizer {
    modules: HashMap<String, Option<Debug>>,
    names: HashMap<(String, u64), String>,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Symbolizer({} modules)", self.modules.len())
    }
}

impl Symbolizer {
    /// A symbolizer with empty caches.
    pub fn new() -> Self {
        Self::default()
    }

    /// `file:line` of the call whose return address is `addr` in `trace`,
    /// or the site's stable `module+0xoffset` name without debug info.
    /// The `init` pseudo-site (address 0) is named `init`.
    pub fn name(&mut self, trace: &RankTrace, addr: u64) -> String {
        self.name_in(&trace.modules, addr)
    }

    /// As [`Symbolizer::name`], with the module table `modules` (a live
    /// process's, for online mode).
    pub fn name_in(&mut self, modules: &[Module], addr: u64) -> String {
        if addr == 0 {
            return "init".into();
        }
        let Some(m) = module_of(modules, addr) else { return super::call_site_in(modules, addr).to_string() };
        let offset = addr - m.start + m.file_offset;
        let key = (m.path.clone(), offset);
        if let Some(n) = self.names.get(&key) {
            return n.clone();
        }
        let debug = self.modules.entry(m.path.clone()).or_insert_with(|| Debug::open(Path::new(&m.path)));
        let name = debug.as_ref().and_then(|d| d.line(offset)).unwrap_or_else(|| super::call_site_in(modules, addr).to_string());
        self.names.insert(key, name.clone());
        name
    }
}

fn module_of(modules: &[Module], addr: u64) -> Option<&Module> {
    modules.iter().find(|m| m.start <= addr && addr < m.end)
}

/// Names the compute-block regions of one rank, as [`region_key`]s with
/// their ids ([`region_key_id`]), caching both per
/// (previous call site, next call site) pair.
#[derive(Debug, Default)]
pub struct RegionNames {
    sym: Symbolizer,
    keys: HashMap<(u64, u64), (std::rc::Rc<str>, u64)>,
}

impl RegionNames {
    /// Empty caches; use one per rank (addresses differ between processes).
    pub fn new() -> Self {
        Self::default()
    }

    /// Key and id of the region between the calls whose return addresses
    /// are `prev` (0 for the start of the trace) and `next` in `trace`.
    pub fn region(&mut self, trace: &RankTrace, prev: u64, next: u64) -> (std::rc::Rc<str>, u64) {
        if let Some(k) = self.keys.get(&(prev, next)) {
            return k.clone();
        }
        let key: std::rc::Rc<str> = region_key(&mut self.sym, trace, prev, next).into();
        let v = (key.clone(), region_key_id(&key));
        self.keys.insert((prev, next), v.clone());
        v
    }
}

/// The region key `prev:next`: each call site as `file:line` when its
/// binary has debug information, else `module+0xoffset`; the trace start
/// (address 0) is `init`. The same key names a region in the per-region
/// report, in speed-ratio files (SimGrid's "file:line:file:line",
/// Heinrich et al. 2017, Fig. 7) and in replay.
pub fn region_key(sym: &mut Symbolizer, trace: &RankTrace, prev: u64, next: u64) -> String {
    region_key_in(sym, &trace.modules, prev, next)
}

/// As [`region_key`], with the module table `modules` (a live process's,
/// for online mode).
pub fn region_key_in(sym: &mut Symbolizer, modules: &[Module], prev: u64, next: u64) -> String {
    format!("{}:{}", sym.name_in(modules, prev), sym.name_in(modules, next))
}

/// Stable 64-bit id of the region `prev:next` between two unsymbolized
/// call sites (FNV-1a of `"<module>+<offset>:<module>+<offset>"`): the id
/// replay gives a region whose binaries carry no debug information (see
/// [`region_key`] for the general key).
pub fn region_id(prev: &CallSite, next: &CallSite) -> u64 {
    region_key_id(&format!("{prev}:{next}"))
}

/// Stable 64-bit id of a region key string (FNV-1a 64 of its UTF-8 bytes),
/// e.g. `"jacobi2d+0x1234:jacobi2d+0x1280"`; the id [`region_id`] gives the
/// same region, so region keys read from a file (a speed-ratio CSV) match
/// [`Action::Compute`](crate::action::Action::Compute)'s `region`.
pub fn region_key_id(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Region key of the compute blocks MPI-IO calls replay as.
pub const IO_REGION: &str = "MPI-IO";

//! The pstate of each listed region (`--dvfs regions=FILE.csv`).
//!
//! The file is CSV with the header `region,pstate`, then one line per
//! region: its key as `calibrate speed` and SimGrid's
//! `smpi/comp-adjustment-file` write it (`file:line:file:line` once
//! symbolized, else `module+0xoffset:module+0xoffset`; quoted or bare)
//! and a pstate index. Lookup is by region id, the FNV-1a hash of the key
//! ([`crate::trace::region_key_id`]), as for speed ratios.

use std::collections::HashMap;
use std::path::Path;

use crate::trace::region_key_id;

/// Pstates by region, with the file and line each came from (for errors).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegionPstates {
    by_id: HashMap<u64, usize>,
    /// `(file:line, key, pstate)` in file order.
    rows: Vec<(String, String, usize)>,
}

impl RegionPstates {
    /// True when no region is listed.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The pstate of the region with id `region`, if listed.
    pub fn get(&self, region: u64) -> Option<usize> {
        self.by_id.get(&region).copied()
    }

    /// `(key, pstate)` in file order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, usize)> {
        self.rows.iter().map(|(_, k, p)| (k.as_str(), *p))
    }

    /// Adds the regions of `other`; its pstates win.
    pub fn extend(&mut self, other: RegionPstates) {
        for (at, key, p) in other.rows {
            self.by_id.insert(region_key_id(&key), p);
            self.rows.retain(|(_, k, _)| *k != key);
            self.rows.push((at, key, p));
        }
    }

    /// Parses the text of a region file; `path` only names it in errors.
    ///
    /// # Errors
    /// A one-line message `path:line: what` for a missing or wrong header,
    /// a row without two fields, an empty key, a pstate that is not an
    /// integer ≥ 0, or a key given twice.
    pub fn parse(text: &str, path: &Path) -> Result<RegionPstates, crate::error::Invalid> {
        let at = |line: u64| format!("{}:{line}", path.display());
        let mut rows = crate::csv_text::records(text).map(|r| {
            r.map_err(|(line, what)| match line {
                Some(l) => format!("{}: {what}", at(l)),
                None => format!("{}: {what}", path.display()),
            })
        });
        match rows.next().transpose()? {
            Some((_, h)) if h.iter().map(str::trim).eq(["region", "pstate"]) => {}
            Some((n, _)) => return Err(format!("{}: expected the header `region,pstate`", at(n)).into()),
            None => return Err(format!("{}: empty file; expected the header `region,pstate`", path.display()).into()),
        }
        let mut out = RegionPstates::default();
        for row in rows {
            let (n, f) = row?;
            if f.len() != 2 {
                return Err(format!("{}: expected 2 fields (region,pstate), found {}", at(n), f.len()).into());
            }
            let key = f[0].trim();
            if key.is_empty() {
                return Err(format!("{}: empty region key", at(n)).into());
            }
            let p: usize = f[1].trim().parse().map_err(|_| format!("{}: pstate `{}` is not an integer >= 0", at(n), &f[1]))?;
            let id = region_key_id(key);
            if out.by_id.insert(id, p).is_some() {
                return Err(format!("{}: region `{key}` given twice", at(n)).into());
            }
            out.rows.push((at(n), key.to_string(), p));
        }
        Ok(out)
    }

    /// Reads the region file at `path` ([`RegionPstates::parse`]).
    ///
    /// # Errors
    /// A one-line message naming `path` when it cannot be read or is malformed.
    pub fn load(path: &Path) -> Result<RegionPstates, crate::error::Invalid> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        RegionPstates::parse(&text, path)
    }

    /// Checks every pstate against a host of `count` pstates.
    ///
    /// # Errors
    /// `file:line: pstate N` of the first pstate out of range.
    pub fn check(&self, count: usize) -> Result<(), crate::error::Invalid> {
        match self.rows.iter().find(|r| r.2 >= count) {
            Some((at, _, p)) => Err(format!("{at}: pstate {p}").into()),
            None => Ok(()),
        }
    }
}

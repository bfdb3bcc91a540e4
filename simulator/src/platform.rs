//! The target platform: hosts, rank placement and network models, read
//! from our TOML format.
//!
//! ```toml
//! name = "calibrated-localhost"
//! [[hosts]]
//! name = "node0"
//! cores = 2
//! [mapping]
//! kind = "block"            # or "round-robin"
//! [network.intra]           # shared memory, within a host
//! eager_threshold_bytes = 4096
//! transfer = [ { max_bytes = 4096, intercept_s = 4e-7, bandwidth_bytes_per_s = 3e9 },
//!              { intercept_s = 2e-6, bandwidth_bytes_per_s = 6e9 } ]
//! [network.inter]           # optional: between hosts; defaults to intra
//! ...
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::network::P2pModel;

/// One host (node).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// Host name.
    pub name: String,
    /// Number of cores; the block mapping places this many ranks per host.
    pub cores: u32,
    /// Compute speed relative to the traced machine (1.0 = same): a
    /// recorded compute block of t seconds takes t / speed_ratio here.
    #[serde(default = "one")]
    pub speed_ratio: f64,
}

fn one() -> f64 {
    1.0
}

/// How ranks are placed on hosts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Mapping {
    /// Ranks fill each host's cores in order (rank r on host ⌊r / cores⌋),
    /// wrapping around when ranks outnumber cores.
    #[default]
    Block,
    /// Rank r on host r mod hosts.
    RoundRobin,
    /// `hosts[r]` is the host index of rank r.
    Explicit {
        /// Host index per rank.
        hosts: Vec<u32>,
    },
}

/// Network models of the platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// Model for ranks on the same host (shared memory).
    pub intra: P2pModel,
    /// Model for ranks on different hosts; `None` uses `intra`.
    #[serde(default)]
    pub inter: Option<P2pModel>,
}

/// A whole platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Platform {
    /// Free-form name.
    #[serde(default)]
    pub name: String,
    /// Hosts, at least one.
    pub hosts: Vec<Host>,
    /// Rank placement.
    #[serde(default)]
    pub mapping: Mapping,
    /// Network models.
    pub network: Network,
}

/// Error loading a platform; the message names the file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {what}")]
pub struct PlatformError {
    /// The platform file.
    pub path: PathBuf,
    /// What is wrong (I/O, TOML syntax with line, or an invalid value).
    pub what: String,
}

impl Platform {
    /// Reads and validates a TOML platform file.
    ///
    /// # Errors
    /// [`PlatformError`] naming `path` when it is missing, does not parse
    /// (the TOML error gives line and column) or fails [`Platform::validate`].
    pub fn load(path: &Path) -> Result<Platform, PlatformError> {
        let e = |what: String| PlatformError { path: path.to_path_buf(), what };
        let text = std::fs::read_to_string(path).map_err(|x| e(x.to_string()))?;
        let p: Platform = toml::from_str(&text).map_err(|x| e(x.to_string().replace('\n', " ")))?;
        p.validate().map_err(e)?;
        Ok(p)
    }

    /// Writes the platform as TOML.
    ///
    /// # Errors
    /// The I/O error, as text naming `path`.
    pub fn save(&self, path: &Path) -> Result<(), PlatformError> {
        let e = |what: String| PlatformError { path: path.to_path_buf(), what };
        let text = toml::to_string_pretty(self).map_err(|x| e(x.to_string()))?;
        std::fs::write(path, text).map_err(|x| e(x.to_string()))
    }

    /// Checks hosts, mapping and models.
    ///
    /// # Errors
    /// A message naming the first bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.hosts.is_empty() {
            return Err("at least one [[hosts]] entry is required".into());
        }
        for (i, h) in self.hosts.iter().enumerate() {
            if h.cores == 0 {
                return Err(format!("hosts[{i}].cores must be >= 1"));
            }
            if !(h.speed_ratio.is_finite() && h.speed_ratio > 0.0) {
                return Err(format!("hosts[{i}].speed_ratio must be > 0"));
            }
        }
        if let Mapping::Explicit { hosts } = &self.mapping {
            if let Some(bad) = hosts.iter().find(|&&h| h as usize >= self.hosts.len()) {
                return Err(format!("mapping.hosts: host index {bad} out of range"));
            }
        }
        self.network.intra.validate().map_err(|e| format!("network.intra.{e}"))?;
        if let Some(inter) = &self.network.inter {
            inter.validate().map_err(|e| format!("network.inter.{e}"))?;
        }
        Ok(())
    }

    /// Host index of world rank `rank` among `ranks`.
    ///
    /// # Panics
    /// With an explicit mapping shorter than `rank`.
    pub fn host_of(&self, rank: u32) -> usize {
        let n = self.hosts.len() as u32;
        match &self.mapping {
            Mapping::Block => {
                let total: u32 = self.hosts.iter().map(|h| h.cores).sum();
                let slot = rank % total;
                let mut acc = 0;
                for (i, h) in self.hosts.iter().enumerate() {
                    acc += h.cores;
                    if slot < acc {
                        return i;
                    }
                }
                unreachable!("slot < total cores")
            }
            Mapping::RoundRobin => (rank % n) as usize,
            Mapping::Explicit { hosts } => hosts[rank as usize] as usize,
        }
    }

    /// The model for a message from `a` to `b` (world ranks).
    pub fn p2p(&self, a: u32, b: u32) -> &P2pModel {
        if self.host_of(a) == self.host_of(b) {
            &self.network.intra
        } else {
            self.network.inter.as_ref().unwrap_or(&self.network.intra)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Piecewise, Segment};

    pub(crate) fn sample() -> Platform {
        let model = P2pModel {
            eager_threshold_bytes: 4096,
            transfer: Piecewise {
                segments: vec![Segment { max_bytes: None, intercept_s: 1e-6, bandwidth_bytes_per_s: 1e9 }],
            },
            send_overhead: Piecewise::default(),
            recv_overhead: Piecewise::default(),
        };
        Platform {
            name: "t".into(),
            hosts: vec![Host { name: "a".into(), cores: 2, speed_ratio: 1.0 }, Host { name: "b".into(), cores: 2, speed_ratio: 1.0 }],
            mapping: Mapping::Block,
            network: Network { intra: model, inter: None },
        }
    }

    #[test]
    fn toml_round_trip_and_block_mapping() {
        let p = sample();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        p.save(&f).unwrap();
        let q = Platform::load(&f).unwrap();
        assert_eq!(p, q);
        assert_eq!((q.host_of(0), q.host_of(1), q.host_of(2), q.host_of(4)), (0, 0, 1, 0));
    }

    #[test]
    fn missing_and_bad_files_name_the_path() {
        let e = Platform::load(Path::new("/nonexistent/x.toml")).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/x.toml:"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.toml");
        std::fs::write(&f, "hosts = []\n[network.intra]\neager_threshold_bytes = 1\ntransfer = []\n").unwrap();
        let e = Platform::load(&f).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("hosts"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }
}

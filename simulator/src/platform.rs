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

use crate::collectives::{CollAlgs, ReduceCost};
use crate::energy::{HostPstates, Pstate};
use crate::network::P2pModel;

pub mod simgrid;

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

/// Platform properties beyond [`Platform`] (kept apart so that code
/// building a `Platform` literally keeps compiling). Read from the same
/// TOML file (`speed_flops` in `[[hosts]]`, an optional `[smpi]` table) or
/// from a SimGrid platform XML ([`simgrid`]).
///
/// ```toml
/// [[hosts]]
/// name = "node0"
/// cores = 1
/// speed_flops = 1e9            # optional
/// [[hosts]]
/// name = "node1"
/// cores = 4
/// pstate = 1                   # running pstate (default 0; --pstate node1=N)
/// recorded_pstate = 0          # pstate the trace was recorded at (default 0)
/// pstates = [ { speed_flops = 2e9, watts = "95:120:200" },   # Idle:Epsilon:AllCores
///             { speed_flops = 1e9, watts = "93:110:150" } ]
/// [smpi]
/// async_small_thresh_bytes = 0 # optional
/// [links]                      # optional: link sharing between hosts
/// bw_bytes_per_s = 1.25e9      # every link (x count for fat-tree levels)
/// crosstraffic = 0.0           # optional (SimGrid: 0.05)
/// topology = { kind = "torus", dims = [4, 4] }   # or "crossbar" (default),
///            # { kind = "fat-tree", down = [4, 4], up = [1, 2], count = [1, 2] }
/// [collectives]                # optional (what `calibrate network` writes)
/// selector = "ompi"            # as --coll-selector (default "mpich")
/// reduce_intercept_s = 2e-7    # per reduction step (default 0)
/// reduce_s_per_byte = 1.5e-10  # γ (default 0)
/// reduce_min_bytes = 4041      # steps below this size cost nothing (default 0)
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Extras {
    /// Core speed of each host, flop/s, in `Platform::hosts` order (mirrors
    /// the `speed` of a SimGrid host); times TI `compute <flops>`. `None`
    /// (or a missing entry) when unknown.
    #[serde(default)]
    pub speed_flops: Vec<Option<f64>>,
    /// Mirrors SMPI's `smpi/async-small-thresh`: an eager message of at
    /// least this many bytes starts its transfer only once the receive is
    /// posted (SMPI's default 0: every message). `None` (our default): an
    /// eager message starts at its send.
    #[serde(default)]
    pub async_small_thresh_bytes: Option<u64>,
    /// Link sharing among concurrent inter-host transfers; `None`: every
    /// transfer gets its model's full bandwidth.
    #[serde(default)]
    pub flows: Option<crate::network::FlowSharing>,
    /// Collective algorithms: MPICH's by default; SimGrid's default
    /// selector for a SimGrid XML platform (mirroring `smpirun`), changed
    /// by `smpi/coll-selector` and `smpi/<collective>` settings.
    #[serde(default)]
    pub coll: crate::collectives::CollAlgs,
    /// Time of each reduction step of a collective (the γ term of Thakur,
    /// Rabenseifner & Gropp, IJHPCA 2005); zero (SimGrid's behaviour) by
    /// default.
    #[serde(default)]
    pub reduce: crate::collectives::ReduceCost,
    /// Refuse a trace with more ranks than the platform has cores (set for
    /// SimGrid XML platforms); otherwise ranks wrap around the hosts.
    #[serde(default)]
    pub no_oversubscription: bool,
    /// Pstates of each host, in `Platform::hosts` order (a missing or
    /// empty entry: no pstates). The running pstate's speed replaces
    /// `speed_flops`, scales recorded compute seconds
    /// ([`HostPstates::time_scale`]) and its power range gives the host's
    /// energy ([`crate::energy`]).
    #[serde(default)]
    pub pstates: Vec<HostPstates>,
}

#[derive(Deserialize)]
struct ExtrasToml {
    #[serde(default)]
    hosts: Vec<HostExtra>,
    #[serde(default)]
    smpi: SmpiToml,
    links: Option<LinksToml>,
    #[serde(default)]
    collectives: CollectivesToml,
}

/// `[collectives]`: the selector (mirrors SimGrid's `smpi/coll-selector`)
/// and the reduction cost.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CollectivesToml {
    selector: Option<String>,
    #[serde(default)]
    reduce_intercept_s: f64,
    #[serde(default)]
    reduce_s_per_byte: f64,
    #[serde(default)]
    reduce_min_bytes: u64,
}

/// `[links]`: link sharing over a topology.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinksToml {
    bw_bytes_per_s: f64,
    #[serde(default)]
    crosstraffic: f64,
    #[serde(default)]
    topology: crate::network::topology::Topology,
}

#[derive(Deserialize)]
struct HostExtra {
    #[serde(default)]
    speed_flops: Option<f64>,
    #[serde(default)]
    pstates: Vec<Pstate>,
    #[serde(default)]
    pstate: usize,
    #[serde(default)]
    recorded_pstate: usize,
}

#[derive(Deserialize, Default)]
struct SmpiToml {
    #[serde(default)]
    async_small_thresh_bytes: Option<u64>,
}

impl Extras {
    /// Speed of host `host`, flop/s, if known: its running pstate's speed
    /// when it has pstates, else its `speed_flops`.
    pub fn host_speed_flops(&self, host: usize) -> Option<f64> {
        self.host_pstates(host).and_then(HostPstates::speed_flops).or(self.speed_flops.get(host).copied().flatten())
    }

    /// The pstates of host `host`, if it has any.
    pub fn host_pstates(&self, host: usize) -> Option<&HostPstates> {
        self.pstates.get(host).filter(|p| !p.pstates.is_empty())
    }

    /// Sets the running pstate, as `simulator replay --pstate`: `spec` is
    /// `N` (every host with pstates) or `HOST=N` (one host, by name or
    /// index); repeatable, later settings win.
    ///
    /// # Errors
    /// A message quoting `spec` when it does not parse, names no host, or
    /// the pstate is out of range for a host.
    pub fn set_pstate(&mut self, platform: &Platform, spec: &str) -> Result<(), String> {
        let (who, n) = match spec.split_once('=') {
            Some((h, n)) => (Some(h.trim()), n),
            None => (None, spec),
        };
        let n: usize = n.trim().parse().map_err(|_| format!("`{spec}`: the pstate must be an integer >= 0"))?;
        self.pstates.resize(platform.hosts.len(), HostPstates::default());
        let hosts: Vec<usize> = match who {
            None => (0..platform.hosts.len()).filter(|&h| self.host_pstates(h).is_some()).collect(),
            Some(h) => {
                let i = platform.hosts.iter().position(|x| x.name == h).or(h.parse().ok().filter(|&i: &usize| i < platform.hosts.len()));
                vec![i.ok_or_else(|| format!("`{spec}`: no host named {h}"))?]
            }
        };
        if hosts.is_empty() {
            return Err(format!("`{spec}`: no host of the platform has pstates"));
        }
        for h in hosts {
            let p = &mut self.pstates[h];
            let count = p.pstates.len();
            if n >= count {
                return Err(format!("`{spec}`: host {} has {count} pstates (0..{count})", platform.hosts[h].name));
            }
            p.pstate = n;
        }
        Ok(())
    }
}

/// Loads a platform of either kind: a SimGrid platform XML (the file
/// starts with `<`, after blanks) via [`simgrid::parse`], else our TOML.
/// `smpi_options` are `--cfg`-style `name:value` pairs (`smpi/os:…`)
/// applied over an XML platform's `<config>`/`<prop>` settings; a TOML
/// platform accepts none.
///
/// # Errors
/// [`PlatformError`] naming the file (and line for XML) at fault.
pub fn load_any(path: &Path, smpi_options: &[String]) -> Result<(Platform, Extras), PlatformError> {
    let e = |what: String| PlatformError { path: path.to_path_buf(), what };
    let text = std::fs::read_to_string(path).map_err(|x| e(x.to_string()))?;
    if text.trim_start().starts_with('<') {
        return simgrid::parse(&text, path, smpi_options);
    }
    if let Some(o) = smpi_options.first() {
        return Err(e(format!("--smpi option {o} applies to SimGrid XML platforms only")));
    }
    let p = Platform::load(path)?;
    let x: ExtrasToml = toml::from_str(&text).map_err(|x| e(x.to_string().replace('\n', " ")))?;
    let extras = Extras {
        speed_flops: x.hosts.iter().map(|h| h.speed_flops).collect(),
        async_small_thresh_bytes: x.smpi.async_small_thresh_bytes,
        flows: x.links.map(|l| crate::network::FlowSharing {
            link_bw_bytes_per_s: l.bw_bytes_per_s,
            nominal_rate_bytes_per_s: 0.0,
            crosstraffic: l.crosstraffic,
            header_bytes: 0,
            topology: l.topology,
            latency_per_link: false,
        }),
        coll: match &x.collectives.selector {
            Some(name) => CollAlgs::preset(name).map_err(|w| e(format!("collectives.selector: {w}")))?,
            None => CollAlgs::default(),
        },
        reduce: ReduceCost {
            intercept_s: x.collectives.reduce_intercept_s,
            s_per_byte: x.collectives.reduce_s_per_byte,
            min_bytes: x.collectives.reduce_min_bytes,
        },
        no_oversubscription: false,
        pstates: x
            .hosts
            .iter()
            .map(|h| HostPstates { pstates: h.pstates.clone(), pstate: h.pstate, recorded_pstate: h.recorded_pstate })
            .collect(),
    };
    if let Some(i) = extras.speed_flops.iter().position(|s| s.is_some_and(|s| !(s.is_finite() && s > 0.0))) {
        return Err(e(format!("hosts[{i}].speed_flops must be > 0")));
    }
    extras.reduce.validate().map_err(|w| e(format!("collectives.{w}")))?;
    if let Some(f) = &extras.flows {
        if !(f.link_bw_bytes_per_s.is_finite() && f.link_bw_bytes_per_s > 0.0) {
            return Err(e("links.bw_bytes_per_s must be > 0".into()));
        }
        if !(f.crosstraffic.is_finite() && f.crosstraffic >= 0.0) {
            return Err(e("links.crosstraffic must be >= 0".into()));
        }
        f.topology.validate(p.hosts.len()).map_err(|w| e(format!("links.topology: {w}")))?;
    }
    for (i, (h, p)) in x.hosts.iter().zip(&extras.pstates).enumerate() {
        p.validate().map_err(|w| e(format!("hosts[{i}].{w}")))?;
        if h.speed_flops.is_some() && !p.pstates.is_empty() {
            return Err(e(format!("hosts[{i}]: give speed_flops or pstates, not both")));
        }
    }
    Ok((p, extras))
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

    /// Writes the platform as TOML followed by the `[collectives]` table
    /// of `extras` (its selector and reduction cost; per-collective
    /// overrides are not written), which [`load_any`] reads back.
    ///
    /// # Errors
    /// The I/O error, as text naming `path`.
    pub fn save_with(&self, path: &Path, extras: &Extras) -> Result<(), PlatformError> {
        let e = |what: String| PlatformError { path: path.to_path_buf(), what };
        let mut text = toml::to_string_pretty(self).map_err(|x| e(x.to_string()))?;
        text.push_str(&format!(
            "\n[collectives]\nselector = \"{}\"\nreduce_intercept_s = {:e}\nreduce_s_per_byte = {:e}\nreduce_min_bytes = {}\n",
            extras.coll.selector.name(),
            extras.reduce.intercept_s,
            extras.reduce.s_per_byte,
            extras.reduce.min_bytes
        ));
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
            transfer: Piecewise { segments: vec![Segment { max_bytes: None, intercept_s: 1e-6, bandwidth_bytes_per_s: 1e9 }] },
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
    fn toml_extras_give_host_speeds_and_smpi_threshold() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        let mut text = toml::to_string_pretty(&sample()).unwrap();
        text = text.replacen("speed_ratio = 1.0", "speed_ratio = 1.0\nspeed_flops = 2e9", 1);
        text.push_str("\n[smpi]\nasync_small_thresh_bytes = 0\n");
        std::fs::write(&f, text).unwrap();
        let (p, x) = load_any(&f, &[]).unwrap();
        assert_eq!(p, sample());
        assert_eq!((x.host_speed_flops(0), x.host_speed_flops(1), x.async_small_thresh_bytes), (Some(2e9), None, Some(0)));
        assert!(load_any(&f, &["smpi/os:0:1:0".into()]).unwrap_err().to_string().contains("XML"));
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

    #[test]
    fn toml_pstates_load_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        let mut text = toml::to_string_pretty(&sample()).unwrap();
        let ps = "pstate = 1\npstates = [{ speed_flops = 2e9, watts = \"95:120:200\" }, { speed_flops = 1e9, watts = \"93:150\" }]";
        text = text.replacen("speed_ratio = 1.0", &format!("speed_ratio = 1.0\n{ps}"), 1);
        std::fs::write(&f, &text).unwrap();
        let (_, x) = load_any(&f, &[]).unwrap();
        assert_eq!(x.host_speed_flops(0), Some(1e9));
        assert_eq!(x.host_pstates(0).unwrap().watts().unwrap().epsilon_w, 93.0);
        assert!(x.host_pstates(1).is_none());
        std::fs::write(&f, text.replace("pstate = 1", "pstate = 5")).unwrap();
        let e = load_any(&f, &[]).unwrap_err().to_string();
        assert!(e.contains("hosts[0].pstate 5 is out of range"), "{e}");
        std::fs::write(&f, text.replace("93:150", "93")).unwrap();
        let e = load_any(&f, &[]).unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("Idle:Epsilon:AllCores") && e.lines().count() == 1, "{e}");
    }

    #[test]
    fn the_collectives_table_sets_the_selector_and_the_reduction_cost() {
        use crate::collectives::Selector;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        let (_, x) = {
            sample().save(&f).unwrap();
            load_any(&f, &[]).unwrap()
        };
        assert_eq!((x.coll, x.reduce), (CollAlgs::mpich(), ReduceCost::default()));
        let ompi = Extras {
            coll: CollAlgs::preset("ompi").unwrap(),
            reduce: ReduceCost { intercept_s: 2e-7, s_per_byte: 1.5e-10, min_bytes: 0 },
            ..Extras::default()
        };
        sample().save_with(&f, &ompi).unwrap();
        let (p, x) = load_any(&f, &[]).unwrap();
        assert_eq!((p, x.coll.selector, x.reduce), (sample(), Selector::Ompi, ompi.reduce));
        let text = std::fs::read_to_string(&f).unwrap();
        std::fs::write(&f, text.replace("\"ompi\"", "\"openmpi\"")).unwrap();
        let e = load_any(&f, &[]).unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("collectives.selector") && e.contains("`openmpi`") && e.lines().count() == 1, "{e}");
        std::fs::write(&f, text.replace("reduce_s_per_byte = 1.5e-10", "reduce_s_per_byte = -1.0")).unwrap();
        let e = load_any(&f, &[]).unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("collectives.reduce_s_per_byte") && e.lines().count() == 1, "{e}");
        std::fs::write(&f, text.replace("selector", "selektor")).unwrap();
        let e = load_any(&f, &[]).unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("selektor") && e.lines().count() == 1, "{e}");
    }
}

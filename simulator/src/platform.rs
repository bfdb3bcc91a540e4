//! The target platform: hosts, rank placement, network, link sharing,
//! collectives and pstates, in one schema read from our TOML format (by
//! serde; unknown keys are refused) or imported from a SimGrid platform
//! XML ([`simgrid`]).
//!
//! ```toml
//! name = "calibrated-localhost"
//! waiting_ranks = "poll"       # optional, or "yield": ranks beyond a host's cores ([`WaitingRanks`])
//! [[hosts]]
//! name = "node0"
//! cores = 2
//! speed_ratio = 1.0            # optional (default 1)
//! speed_flops = 1e9            # optional: times TI `compute <flops>`
//! [[hosts]]
//! name = "node1"
//! cores = 4
//! pstate = 1                   # running pstate (default 0; --pstate node1=N)
//! recorded_pstate = 0          # pstate the trace was recorded at (default 0)
//! pstate_switch_s = 1e-5       # time a pstate switch takes (default 0; [`crate::dvfs`])
//! pstates = [ { speed_flops = 2e9, watts = "95:120:200" },   # Idle:Epsilon:AllCores
//!             { speed_flops = 1e9, watts = "93:110:150" } ]
//! [mapping]
//! kind = "block"               # or "round-robin", or "explicit" with hosts = [...]
//! [network]
//! host_copy_bytes_per_s = 1.2e10 # optional: concurrent transfers within a host share this
//! serial_receives = true        # optional: a rank copies the transfers it receives one at a time
//! serial_receives_min_bytes = 600000 # optional: ... those of at least this size (default 0)
//! [network.intra]              # shared memory, within a host
//! eager_threshold_bytes = 4096
//! transfer = [ { max_bytes = 4096, intercept_s = 4e-7, bandwidth_bytes_per_s = 3e9 },
//!              { intercept_s = 2e-6, bandwidth_bytes_per_s = 6e9 } ]
//! [network.intra.rma]          # optional: measured one-sided movements ([`crate::network::rma::RmaCosts`])
//! put = [ { intercept_s = 1.3e-6, bandwidth_bytes_per_s = 1.2e10 } ]
//! get = [ { intercept_s = 1.4e-6, bandwidth_bytes_per_s = 1.2e10 } ]
//! accumulate = [ { intercept_s = 2.8e-6, bandwidth_bytes_per_s = 2e9 } ]
//! [network.inter]              # optional: between hosts; defaults to intra
//! ...
//! [smpi]
//! async_small_thresh_bytes = 0 # optional
//! irecv_s = 1.2e-7             # optional: cost of posting an MPI_Irecv (default 0)
//! wait_s = 6e-8                # optional: per request an MPI_Wait/Waitall completes (default 0)
//! rma_call_s = 1e-6            # optional: per one-sided call (put, get, lock, fence, ...; default 0)
//! rma_calls = { lock_s = 3e-7, unlock_s = 4e-7, create_s = 2e-4 } # optional: those calls' own costs ([`RmaCalls`])
//! [links]                      # optional: link sharing between hosts
//! bw_bytes_per_s = 1.25e9      # every link (x count for fat-tree levels)
//! crosstraffic = 0.0           # optional (SimGrid: 0.05)
//! topology = { kind = "torus", dims = [4, 4] }   # or "crossbar" (default),
//!            # { kind = "fat-tree", down = [4, 4], up = [1, 2], count = [1, 2] }
//! [collectives]                # optional (what `calibrate network` writes)
//! selector = "ompi"            # as --coll-selector (default "mpich")
//! reduce_intercept_s = 2e-7    # per reduction step (default 0)
//! reduce_s_per_byte = 1.5e-10  # γ (default 0)
//! shm_call_s = 6e-7            # optional: MPICH's shared-memory collectives ([`crate::collectives::shm`]),
//! shm_flag_s = 1.2e-7          # all three or none
//! shm_s_per_byte = 8e-11
//! [[fs]]                       # optional: file systems for MPI-IO ([`fs::FileSystem`])
//! name = "scratch"
//! servers = 4
//! stripe_size_bytes = 1048576
//! mpi_io = "ompio"             # collective I/O as "romio" (default) or "ompio" runs it
//! disk = { latency_s = 1e-4, read_bytes_per_s = 5e8, write_bytes_per_s = 3e8 }
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::collectives::Collectives;
use crate::network::lane::Turn;
use crate::network::{FlowSharing, P2pModel};
use power::{PowerRange, Pstate};

pub mod cluster;
pub mod dvfs;
pub mod fs;
pub mod power;
mod rma_calls;
pub mod simgrid;
mod smpi;

pub use rma_calls::{RmaCallKind, RmaCalls};
pub use smpi::Smpi;

/// One host (node).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// Host name.
    pub name: String,
    /// Number of cores; the block mapping places this many ranks per host.
    pub cores: u32,
    /// Compute speed relative to the traced machine (1.0 = same): a
    /// recorded compute block of t seconds takes t / speed_ratio here.
    #[serde(default = "one")]
    pub speed_ratio: f64,
    /// Core speed, flop/s (mirrors the `speed` of a SimGrid host); times
    /// TI `compute <flops>`. `None` when unknown; a host with pstates
    /// takes its running pstate's speed instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_flops: Option<f64>,
    /// Pstates, fastest first by SimGrid's convention (not required);
    /// empty: the host has none (and no energy is reported for it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pstates: Vec<Pstate>,
    /// The pstate the host runs at (SimGrid's `pstate` host property;
    /// `simulator replay --pstate`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pstate: usize,
    /// The pstate at which the trace's compute seconds were recorded: a
    /// block of t recorded seconds takes t · speed(recorded_pstate) /
    /// speed(pstate) (before `speed_ratio`). TI flops ignore it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub recorded_pstate: usize,
    /// Time a pstate switch takes, seconds (default 0): during it the host
    /// computes at the slower of the two pstates' speeds and draws the
    /// larger of their powers ([`crate::dvfs`]). SimGrid switches at once
    /// and has no such property: 0 for a SimGrid XML platform.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub pstate_switch_s: f64,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn one() -> f64 {
    1.0
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

impl Host {
    /// A host of `cores` cores at the traced machine's speed, without
    /// flop rate or pstates.
    pub fn new(name: impl Into<String>, cores: u32) -> Host {
        Host {
            name: name.into(),
            cores,
            speed_ratio: 1.0,
            speed_flops: None,
            pstates: Vec::new(),
            pstate: 0,
            recorded_pstate: 0,
            pstate_switch_s: 0.0,
        }
    }

    /// Speed, flop/s, if known: the running pstate's speed when the host
    /// has pstates, else `speed_flops`.
    pub fn running_speed_flops(&self) -> Option<f64> {
        self.pstates.get(self.pstate).map(|p| p.speed_flops).or(self.speed_flops)
    }

    /// Factor applied to recorded compute seconds:
    /// speed(recorded_pstate) / speed(pstate); 1 without pstates.
    pub fn pstate_time_scale(&self) -> f64 {
        match (self.pstates.get(self.recorded_pstate), self.pstates.get(self.pstate)) {
            (Some(a), Some(b)) => a.speed_flops / b.speed_flops,
            _ => 1.0,
        }
    }

    /// Power range at the running pstate, watts, if known.
    pub fn watts(&self) -> Option<PowerRange> {
        self.pstates.get(self.pstate).and_then(|p| p.watts)
    }

    /// Checks cores, speeds and pstate indices.
    ///
    /// # Errors
    /// A message naming the bad field (relative to the host).
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        if self.cores == 0 {
            return Err("cores must be >= 1".into());
        }
        if !(self.speed_ratio.is_finite() && self.speed_ratio > 0.0) {
            return Err("speed_ratio must be > 0".into());
        }
        if self.speed_flops.is_some_and(|s| !(s.is_finite() && s > 0.0)) {
            return Err("speed_flops must be > 0".into());
        }
        if let Some(i) = self.pstates.iter().position(|p| !(p.speed_flops.is_finite() && p.speed_flops > 0.0)) {
            return Err(format!("pstates[{i}].speed_flops must be > 0").into());
        }
        let n = self.pstates.len();
        if self.speed_flops.is_some() && n > 0 {
            return Err("give speed_flops or pstates, not both".into());
        }
        if !(self.pstate_switch_s.is_finite() && self.pstate_switch_s >= 0.0) {
            return Err("pstate_switch_s must be finite and >= 0".into());
        }
        for (name, v) in [("pstate", self.pstate), ("recorded_pstate", self.recorded_pstate)] {
            if n > 0 && v >= n {
                return Err(format!("{name} {v} is out of range (the host has {n} pstates)").into());
            }
            if n == 0 && v > 0 {
                return Err(format!("{name} {v} given but the host has no pstates").into());
            }
        }
        Ok(())
    }
}

/// How ranks are placed on hosts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Model for ranks on the same host (shared memory).
    pub intra: P2pModel,
    /// Model for ranks on different hosts; `None` uses `intra`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inter: Option<P2pModel>,
    /// Aggregate rate at which one host moves the data of the rendezvous
    /// transfers between its own ranks that are in progress at once,
    /// bytes/s. Concurrent transfers on a host share it max-min fairly,
    /// each also at most its `intra` transfer segment's bandwidth: two
    /// ranks exchanging large messages both ways at once (`MPI_Sendrecv`,
    /// a halo exchange) copy through the same memory system, and each
    /// direction is slower than a one-way transfer. Measured by
    /// `calibrate network` (its `exchange` samples); `None`: each
    /// transfer at its own bandwidth, as if alone. The offline replay
    /// models it; online mode, which sees no other rank's transfers, does
    /// not (as for [`Platform::links`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_copy_bytes_per_s: Option<f64>,
    /// Rendezvous transfers between ranks of one host that arrive at one
    /// rank at the same time share that rank's copy rate (the `intra`
    /// model's largest-size bandwidth, bytes/s, max-min fairly): with a
    /// single-copy shared-memory transport (Open MPI's CMA, KNEM or
    /// XPMEM) the receiving process copies each message itself, one
    /// after another. Default false: each transfer at its own bandwidth.
    /// The offline replay shares the copy rate max-min; online mode gives
    /// each transfer the rate's first free time ([`crate::online`]).
    /// Measured by `calibrate network` (its `pair` samples).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub serial_receives: bool,
    /// With `serial_receives`, the smallest transfer that takes its turn,
    /// bytes (default 0: all). Smaller ones move in parallel, as a
    /// transport that pipelines them through shared buffers (both
    /// processes copying) moves them, where larger ones are copied by the
    /// receiving process alone. Measured by `calibrate network`.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub serial_receives_min_bytes: u64,
}

impl Network {
    /// Whether a rendezvous transfer of `bytes` between ranks of one host
    /// takes its turn in the receiving rank's copy rate
    /// (`serial_receives`, `serial_receives_min_bytes`).
    pub fn serial_receive(&self, bytes: u64) -> bool {
        self.serial_receives && bytes >= self.serial_receives_min_bytes
    }

    /// With `serial_receives`, each rank's copy rate, bytes/s: the
    /// `intra` model's largest-size bandwidth (`None` without the field or
    /// without an `intra` transfer segment).
    pub fn recv_copy_bytes_per_s(&self) -> Option<f64> {
        self.serial_receives.then(|| self.intra.transfer.segments.last().map(|s| s.bandwidth_bytes_per_s)).flatten()
    }

    /// The turn in its receiver's copy lane ([`crate::network::lane`])
    /// of a rendezvous transfer of `bytes` on pair model `model` whose
    /// sides have both posted by `start` (seconds); `None` when it moves
    /// without one (another host, below `serial_receives_min_bytes`, no
    /// lane, no segment for the size).
    pub fn receive_turn(&self, model: &P2pModel, same_host: bool, bytes: u64, start: f64) -> Option<Turn> {
        if !same_host || !self.serial_receive(bytes) || self.recv_copy_bytes_per_s().is_none() {
            return None;
        }
        model.transfer.segment(bytes).map(|seg| Turn::new(seg, start, bytes))
    }
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// What the ranks of an oversubscribed host (more ranks than cores) do
/// while they wait in MPI; decides how many ranks share its cores
/// (`waiting_ranks` in the platform, `simulator replay --waiting-ranks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitingRanks {
    /// A waiting rank busy-polls and keeps its core busy, as Open MPI and
    /// MPICH progress by default: every rank not yet finalized shares the
    /// host's cores with the compute blocks.
    #[default]
    Poll,
    /// A waiting rank leaves its core: only ranks inside a compute block
    /// share the cores (SimGrid's actors, which use no CPU while they
    /// wait for a communication).
    Yield,
}

/// A whole platform (schema in the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// What waiting ranks do on a host with more ranks than cores
    /// ([`crate::replay`]'s CPU sharing): they poll (default) or yield.
    #[serde(default, skip_serializing_if = "is_default")]
    pub waiting_ranks: WaitingRanks,
    /// SMPI settings.
    #[serde(default, skip_serializing_if = "is_default")]
    pub smpi: Smpi,
    /// Link sharing among concurrent inter-host transfers (`[links]`);
    /// `None`: every transfer gets its model's full bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<FlowSharing>,
    /// Collective algorithms (MPICH's by default; SimGrid's default
    /// selector for a SimGrid XML platform, as `smpirun`) and reduction cost.
    #[serde(default)]
    pub collectives: Collectives,
    /// Refuse a trace with more ranks than the platform has cores (set for
    /// SimGrid XML platforms); otherwise ranks wrap around the hosts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_oversubscription: bool,
    /// File systems for MPI-IO (`[[fs]]`); the first is where the trace's
    /// files live. Empty: I/O calls replay as their recorded durations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fs: Vec<fs::FileSystem>,
    /// Pstate changes during the run (`simulator replay --dvfs`,
    /// `INTERPOSER_DVFS`); not part of the file: none by default.
    #[serde(skip)]
    pub dvfs: dvfs::Dvfs,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Error loading or saving a platform; the message names the file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {what}")]
pub struct PlatformError {
    /// The platform file.
    pub path: PathBuf,
    /// What is wrong (I/O, TOML syntax with line, or an invalid value).
    pub what: String,
}

impl Platform {
    /// A platform of `hosts` with the network model `intra` within and
    /// between hosts, block mapping and every optional part at its default.
    pub fn new(name: impl Into<String>, hosts: Vec<Host>, intra: P2pModel) -> Platform {
        Platform {
            name: name.into(),
            hosts,
            mapping: Mapping::Block,
            network: Network { intra, inter: None, host_copy_bytes_per_s: None, serial_receives: false, serial_receives_min_bytes: 0 },
            waiting_ranks: WaitingRanks::default(),
            smpi: Smpi::default(),
            links: None,
            collectives: Collectives::default(),
            no_oversubscription: false,
            fs: Vec::new(),
            dvfs: dvfs::Dvfs::default(),
        }
    }

    /// Loads a platform of either kind: a SimGrid platform XML (the file
    /// starts with `<`, after blanks) via [`simgrid::parse`], else our TOML.
    ///
    /// # Errors
    /// [`PlatformError`] naming `path` when it is missing, does not parse
    /// (TOML errors give line and column, XML errors the line) or fails
    /// [`Platform::validate`].
    pub fn load(path: &Path) -> Result<Platform, PlatformError> {
        Platform::load_with(path, &[])
    }

    /// [`Platform::load`] with `smpi_options`: `--cfg`-style `name:value`
    /// pairs (`smpi/os:…`) applied over an XML platform's `<config>` and
    /// `<prop>` settings; a TOML platform accepts none.
    ///
    /// # Errors
    /// As [`Platform::load`]; also an option given for a TOML platform.
    pub fn load_with(path: &Path, smpi_options: &[String]) -> Result<Platform, PlatformError> {
        Platform::load_limited(path, smpi_options, crate::limits::MAX_HOSTS)
    }

    /// [`Platform::load_with`] with at most `max_hosts` hosts (`--max-hosts`;
    /// [`crate::limits::MAX_HOSTS`] by default): an XML `radical` is
    /// counted before any host is made.
    ///
    /// # Errors
    /// As [`Platform::load_with`]; also more hosts than `max_hosts`.
    pub fn load_limited(path: &Path, smpi_options: &[String], max_hosts: usize) -> Result<Platform, PlatformError> {
        let e = |what: String| PlatformError { path: path.to_path_buf(), what };
        let meta = std::fs::metadata(path).map_err(|x| e(x.to_string()))?;
        if !meta.is_file() {
            return Err(e("not a regular file (a directory?)".into()));
        }
        let text = std::fs::read_to_string(path).map_err(|x| e(x.to_string()))?;
        if text.trim_start().starts_with('<') {
            return simgrid::parse_limited(&text, path, smpi_options, max_hosts as u64);
        }
        if let Some(o) = smpi_options.first() {
            return Err(e(format!("--smpi option {o} applies to SimGrid XML platforms only")));
        }
        let p: Platform = toml::from_str(&text).map_err(|x| e(x.to_string().replace('\n', " ")))?;
        p.validate().map_err(|w| e(w.0))?;
        if p.hosts.len() > max_hosts {
            return Err(e(format!("{} [[hosts]]; at most {max_hosts} (--max-hosts)", p.hosts.len())));
        }
        Ok(p)
    }

    /// The platform cut to the hosts `ranks` ranks are placed on, when the
    /// others cannot change the prediction: a crossbar or a backbone (or no
    /// link sharing), block or round-robin placement, no power model and no
    /// file system. `None` when every host is used or the cut is not exact.
    /// Keeps the replay's memory in proportion to the trace, not to a
    /// cluster's `radical`.
    pub fn used_by(&self, ranks: usize) -> Option<Platform> {
        use crate::network::topology::Topology;
        let crossbar = self.links.as_ref().is_none_or(|l| matches!(l.topology, Topology::Crossbar | Topology::Backbone { .. }));
        let watts = self.hosts.iter().any(|h| h.pstates.iter().any(|p| p.watts.is_some()));
        if !crossbar || watts || !self.fs.is_empty() {
            return None;
        }
        let used = match self.mapping {
            Mapping::RoundRobin => ranks.min(self.hosts.len()),
            Mapping::Block => {
                let mut cores = 0usize;
                self.hosts.iter().position(|h| {
                    cores += h.cores as usize;
                    cores >= ranks
                })? + 1
            }
            Mapping::Explicit { .. } => return None,
        };
        (used > 0 && used < self.hosts.len()).then(|| Platform { hosts: self.hosts[..used].to_vec(), ..self.clone_without_hosts() })
    }

    /// A copy of every part but the host list (left empty).
    fn clone_without_hosts(&self) -> Platform {
        Platform {
            name: self.name.clone(),
            hosts: Vec::new(),
            mapping: self.mapping.clone(),
            network: self.network.clone(),
            smpi: self.smpi,
            links: self.links.clone(),
            collectives: self.collectives,
            no_oversubscription: self.no_oversubscription,
            waiting_ranks: self.waiting_ranks,
            fs: self.fs.clone(),
            dvfs: self.dvfs.clone(),
        }
    }

    /// Writes the platform as TOML (every part of the schema, by serde).
    ///
    /// # Errors
    /// [`PlatformError`] naming `path` on an I/O error.
    pub fn save(&self, path: &Path) -> Result<(), PlatformError> {
        let e = |what: String| PlatformError { path: path.to_path_buf(), what };
        let text = toml::to_string_pretty(self).map_err(|x| e(x.to_string()))?;
        std::fs::write(path, text).map_err(|x| e(x.to_string()))
    }

    /// Checks hosts, mapping, models and link sharing.
    ///
    /// # Errors
    /// A message naming the first bad field by its TOML path.
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        if self.hosts.is_empty() {
            return Err("at least one [[hosts]] entry is required".into());
        }
        for (i, h) in self.hosts.iter().enumerate() {
            h.validate().map_err(|w| format!("hosts[{i}].{w}"))?;
        }
        if self.hosts.iter().map(|h| h.cores as u64).sum::<u64>() > u32::MAX as u64 {
            return Err("the hosts' cores add up to more than 2^32 - 1".into());
        }
        if let Mapping::Explicit { hosts } = &self.mapping {
            if let Some(bad) = hosts.iter().find(|&&h| h as usize >= self.hosts.len()) {
                return Err(format!("mapping.hosts: host index {bad} out of range").into());
            }
        }
        self.network.intra.validate().map_err(|e| format!("network.intra.{e}"))?;
        if let Some(inter) = &self.network.inter {
            inter.validate().map_err(|e| format!("network.inter.{e}"))?;
        }
        if let Some(c) = self.network.host_copy_bytes_per_s.filter(|c| !(c.is_finite() && *c > 0.0)) {
            return Err(format!("network.host_copy_bytes_per_s: must be finite and > 0, got {c}").into());
        }
        self.smpi.validate().map_err(|w| format!("smpi.{w}"))?;
        let names: Vec<&str> = self.hosts.iter().map(|h| h.name.as_str()).collect();
        for (i, f) in self.fs.iter().enumerate() {
            f.validate(&names).map_err(|w| w.within(&format!("fs[{i}].")))?;
        }
        if let Some(l) = &self.links {
            l.validate(self.hosts.len()).map_err(|w| format!("links.{w}"))?;
        }
        if let Some(shm) = &self.collectives.shm {
            shm.validate().map_err(|w| w.within("collectives."))?;
        }
        self.collectives.reduce.validate().map_err(|w| w.within("collectives."))
    }

    /// Sets the running pstate, as `simulator replay --pstate`: `spec` is
    /// `N` (every host with pstates) or `HOST=N` (one host, by name or
    /// index); repeatable, later settings win.
    ///
    /// # Errors
    /// A message quoting `spec` when it does not parse, names no host, or
    /// the pstate is out of range for a host.
    pub fn set_pstate(&mut self, spec: &str) -> Result<(), crate::error::Invalid> {
        let (who, n) = match spec.split_once('=') {
            Some((h, n)) => (Some(h.trim()), n),
            None => (None, spec),
        };
        let n: usize = n.trim().parse().map_err(|_| format!("`{spec}`: the pstate must be an integer >= 0"))?;
        let hosts: Vec<usize> = match who {
            None => (0..self.hosts.len()).filter(|&h| !self.hosts[h].pstates.is_empty()).collect(),
            Some(h) => {
                let i = self.hosts.iter().position(|x| x.name == h).or(h.parse().ok().filter(|&i: &usize| i < self.hosts.len()));
                vec![i.ok_or_else(|| format!("`{spec}`: no host named {h}"))?]
            }
        };
        if hosts.is_empty() {
            return Err(format!("`{spec}`: no host of the platform has pstates").into());
        }
        for h in hosts {
            let host = &mut self.hosts[h];
            let count = host.pstates.len();
            if n >= count {
                return Err(format!("`{spec}`: host {} has {count} pstates (0..{count})", host.name).into());
            }
            host.pstate = n;
        }
        Ok(())
    }

    /// Host index of world rank `rank`.
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

    /// Host index of every world rank `0..ranks`, in rank order: the
    /// [`Platform::host_of`] of each, in O(ranks + hosts) time.
    ///
    /// # Panics
    /// With an explicit mapping shorter than `ranks`.
    pub fn placement(&self, ranks: u32) -> Vec<u32> {
        match &self.mapping {
            Mapping::Block => {
                // One host index per core, repeated as the ranks wrap around.
                let cores: Vec<u32> =
                    self.hosts.iter().enumerate().flat_map(|(i, h)| std::iter::repeat_n(i as u32, h.cores as usize)).collect();
                cores.iter().copied().cycle().take(ranks as usize).collect()
            }
            _ => (0..ranks).map(|r| self.host_of(r) as u32).collect(),
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
mod tests;

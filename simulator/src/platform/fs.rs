//! File systems of a platform (`[[fs]]`): servers, disks and caches, and
//! the MPI-IO implementation that times collective accesses; the model
//! that runs them is [`crate::io`].

use serde::{Deserialize, Serialize};

use crate::error::Invalid;
use crate::network::Piecewise;

/// ROMIO's default collective buffer (`cb_buffer_size`), bytes.
pub const DEFAULT_CB_BUFFER_BYTES: u64 = 16 * 1024 * 1024;

/// The MPI-IO implementation whose algorithms time collective accesses
/// and strided independent ones (`[[fs]] mpi_io`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MpiIo {
    /// ROMIO (MPICH, Intel MPI, MVAPICH, Open MPI's `romio` io
    /// component): two-phase collective I/O ([`two_phase_plan`](crate::io::two_phase_plan)) and data
    /// sieving of strided accesses.
    #[default]
    Romio,
    /// Open MPI's OMPIO (its default io component since 2.0): the `fcoll`
    /// components `individual` and `vulcan` ([`ompio`](crate::io::ompio)) and the posix
    /// `fbtl`'s data sieving of strided accesses.
    Ompio,
}

fn is_romio(m: &MpiIo) -> bool {
    *m == MpiIo::Romio
}

impl MpiIo {
    /// Its name in a platform file: `romio` or `ompio`.
    pub fn name(self) -> &'static str {
        match self {
            MpiIo::Romio => "romio",
            MpiIo::Ompio => "ompio",
        }
    }
}

impl std::str::FromStr for MpiIo {
    type Err = String;

    /// `romio` or `ompio`.
    ///
    /// # Errors
    /// A message naming the other text.
    fn from_str(s: &str) -> Result<MpiIo, String> {
        match s {
            "romio" => Ok(MpiIo::Romio),
            "ompio" => Ok(MpiIo::Ompio),
            _ => Err(format!("`{s}`: expected `romio` or `ompio`")),
        }
    }
}

/// A file system of the platform (`[[fs]]`).
///
/// ```toml
/// [[fs]]
/// name = "scratch"
/// servers = 4                  # dedicated servers (or server_hosts = ["n0", "n1"])
/// stripe_size_bytes = 1048576
/// stripe_count = 4             # default: every server
/// metadata_latency_s = 2e-4    # open, close, set_size, delete
/// sync_latency_s = 1e-3        # a sync beyond the drain (default metadata_latency_s)
/// link_bytes_per_s = 1.25e9    # each server's link to the clients (default: unlimited)
/// mpi_io = "ompio"             # "romio" (default) or "ompio": its collective algorithm
/// [fs.disk]
/// latency_s = 1e-4             # per request
/// read_bytes_per_s = 5e8
/// write_bytes_per_s = 3e8
/// cache_bytes = 0              # write-back cache per server (default none)
/// cache_bytes_per_s = 5e9      # speed of a write into the cache
/// cache_latency_s = 5e-6       # per write into the cache (default 0)
/// cache_read_bytes_per_s = 2e10  # read of cached data (default cache_bytes_per_s)
/// cache_read_latency_s = 2e-6  # per read of cached data (default cache_latency_s)
/// # Or, in place of a latency and a bandwidth, piecewise-linear costs by
/// # request size (as the network's `transfer`; the last segment is unbounded):
/// # cache_write = [{ max_bytes = 65536, intercept_s = 1e-6, bandwidth_bytes_per_s = 8e9 },
/// #                { intercept_s = 2e-5, bandwidth_bytes_per_s = 2e9 }]
/// # cache_read = [...]
/// drain_after_bytes = 0        # dirty bytes held before the write-back starts (default 0)
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSystem {
    /// Name, for messages and reports.
    pub name: String,
    /// Number of dedicated servers (not hosts of the platform); added to
    /// `server_hosts`. Servers are numbered `server_hosts` first, then the
    /// dedicated ones.
    #[serde(default)]
    pub servers: u32,
    /// Hosts of the platform that also serve this file system, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_hosts: Vec<String>,
    /// Stripe unit, bytes (ROMIO's `striping_unit`).
    pub stripe_size_bytes: u64,
    /// Servers a file is striped over (ROMIO's `striping_factor`);
    /// `None`: every server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_count: Option<u32>,
    /// Time of a metadata operation (open, close, set_size, preallocate,
    /// delete), seconds.
    #[serde(default)]
    pub metadata_latency_s: f64,
    /// Fixed cost of `MPI_File_sync` once the caches have drained (a
    /// journal commit, a device cache flush), seconds (default:
    /// `metadata_latency_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_latency_s: Option<f64>,
    /// Each server's link to the clients, bytes/s; `None`: the link never
    /// limits (only the disk does). With link sharing, the link of each
    /// dedicated server (a server on a host uses the host's links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bytes_per_s: Option<f64>,
    /// Each server's disk.
    pub disk: Disk,
    /// Collective buffer per aggregator, bytes (the `cb_buffer_size`
    /// hint; default: ROMIO's [`DEFAULT_CB_BUFFER_BYTES`], OMPIO's
    /// [`ompio::DEFAULT_BYTES_PER_AGG`](crate::io::ompio::DEFAULT_BYTES_PER_AGG)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cb_buffer_bytes: Option<u64>,
    /// Aggregators of a collective access (the `cb_nodes` hint); `None`:
    /// ROMIO's one per host of the communicator, OMPIO's
    /// [`ompio::default_aggregators`](crate::io::ompio::default_aggregators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cb_nodes: Option<u32>,
    /// The MPI-IO implementation the application runs on (default
    /// `romio`); `calibrate io` sets it from the MPI library it ran.
    #[serde(default, skip_serializing_if = "is_romio")]
    pub mpi_io: MpiIo,
}

/// The disk of each server of a [`FileSystem`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disk {
    /// Time per request before data moves, seconds.
    pub latency_s: f64,
    /// Read bandwidth, bytes/s.
    pub read_bytes_per_s: f64,
    /// Write bandwidth, bytes/s (also the cache's drain rate).
    pub write_bytes_per_s: f64,
    /// Write-back cache, bytes (0: none).
    #[serde(default)]
    pub cache_bytes: u64,
    /// Speed of a write into the cache, bytes/s (default: 10 × the write
    /// bandwidth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bytes_per_s: Option<f64>,
    /// Written data the server keeps for reads (a page cache: clean data
    /// stays after the write-back), bytes; reads of the last this many
    /// bytes written skip the disk (default: `cache_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_cache_bytes: Option<u64>,
    /// Time per write the cache takes, before data moves (a page cache's
    /// system call and page allocation), seconds (default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_latency_s: f64,
    /// Speed of a read the cache holds, bytes/s (default:
    /// `cache_bytes_per_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_bytes_per_s: Option<f64>,
    /// Time per read the cache holds, before data moves, seconds (default:
    /// `cache_latency_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_latency_s: Option<f64>,
    /// Time of a write into the cache by request size, seconds: a
    /// piecewise-linear function (the network's [`Piecewise`], SimGrid's
    /// `smpi/os` form) that replaces `cache_latency_s + b /
    /// cache_bytes_per_s` when it has segments. A page cache's cost per
    /// byte changes with the size (a small write copies from the CPU's
    /// caches, a large one allocates pages and meets the dirty-page
    /// throttling): `calibrate io` interpolates it between the sizes it measures.
    #[serde(default, skip_serializing_if = "Piecewise::is_empty")]
    pub cache_write: Piecewise,
    /// Time of a read the cache holds by request size, seconds; replaces
    /// `cache_read_latency_s + b / cache_read_bytes_per_s` when it has
    /// segments (as `cache_write`).
    #[serde(default, skip_serializing_if = "Piecewise::is_empty")]
    pub cache_read: Piecewise,
    /// Cached bytes not yet on the disk the server holds before it starts
    /// writing them back (Linux's `dirty_background_bytes`); below it, data
    /// waits for `MPI_File_sync`. Default 0: the write-back starts as soon
    /// as data arrives (a storage server's cache, as in PIOsimHD).
    #[serde(default, skip_serializing_if = "is_zero_bytes")]
    pub drain_after_bytes: u64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_bytes(v: &u64) -> bool {
    *v == 0
}

impl Disk {
    /// A disk of `latency_s` per request and the given bandwidths
    /// (bytes/s), without a cache.
    pub fn new(latency_s: f64, read_bytes_per_s: f64, write_bytes_per_s: f64) -> Disk {
        Disk {
            latency_s,
            read_bytes_per_s,
            write_bytes_per_s,
            cache_bytes: 0,
            cache_bytes_per_s: None,
            read_cache_bytes: None,
            cache_latency_s: 0.0,
            cache_read_bytes_per_s: None,
            cache_read_latency_s: None,
            cache_write: Piecewise::default(),
            cache_read: Piecewise::default(),
            drain_after_bytes: 0,
        }
    }

    /// Speed of a write into the cache, bytes/s.
    pub fn cache_write_bw(&self) -> f64 {
        self.cache_bytes_per_s.unwrap_or(10.0 * self.write_bytes_per_s)
    }

    /// Time a write of `b` bytes into the cache takes, seconds:
    /// `cache_write` when it has segments, else `cache_latency_s + b /
    /// cache_bytes_per_s`.
    pub fn cache_write_s(&self, b: u64) -> f64 {
        if self.cache_write.is_empty() {
            self.cache_latency_s + b as f64 / self.cache_write_bw()
        } else {
            self.cache_write.eval(b)
        }
    }

    /// Time a read of `b` bytes the cache holds takes, seconds:
    /// `cache_read` when it has segments, else `cache_read_latency_s + b /
    /// cache_read_bytes_per_s`.
    pub fn cached_read_s(&self, b: u64) -> f64 {
        if self.cache_read.is_empty() {
            self.cache_read_latency_s.unwrap_or(self.cache_latency_s)
                + b as f64 / self.cache_read_bytes_per_s.unwrap_or(self.cache_write_bw())
        } else {
            self.cache_read.eval(b)
        }
    }
}

fn positive(name: &str, v: f64) -> Result<(), Invalid> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number > 0, got {v}").into())
    }
}

fn non_negative(name: &str, v: f64) -> Result<(), Invalid> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number >= 0, got {v}").into())
    }
}

impl FileSystem {
    /// Total number of servers.
    pub fn server_count(&self) -> u32 {
        self.servers + self.server_hosts.len() as u32
    }

    /// Servers a file is striped over.
    pub fn stripes_over(&self) -> u32 {
        self.stripe_count.unwrap_or(self.server_count()).min(self.server_count()).max(1)
    }

    /// Multiplies every disk, cache and link bandwidth by `factor`
    /// (`simulator replay --io-scale`).
    pub fn scale_bandwidth(&mut self, factor: f64) {
        self.disk.read_bytes_per_s *= factor;
        self.disk.write_bytes_per_s *= factor;
        self.disk.cache_bytes_per_s = self.disk.cache_bytes_per_s.map(|b| b * factor);
        self.disk.cache_read_bytes_per_s = self.disk.cache_read_bytes_per_s.map(|b| b * factor);
        for s in self.disk.cache_write.segments.iter_mut().chain(self.disk.cache_read.segments.iter_mut()) {
            s.bandwidth_bytes_per_s *= factor;
        }
        self.link_bytes_per_s = self.link_bytes_per_s.map(|b| b * factor);
    }

    /// Checks the numbers and that `server_hosts` are among `hosts`.
    ///
    /// # Errors
    /// [`Invalid`] naming the field (relative to the file system).
    pub fn validate(&self, hosts: &[&str]) -> Result<(), Invalid> {
        if let Some(h) = self.server_hosts.iter().find(|h| !hosts.contains(&h.as_str())) {
            return Err(format!("server_hosts: `{h}` is not a host of the platform").into());
        }
        if self.server_count() == 0 {
            return Err("servers: a file system needs at least one server (servers or server_hosts)".into());
        }
        if self.stripe_size_bytes == 0 {
            return Err("stripe_size_bytes must be >= 1".into());
        }
        if self.stripe_count == Some(0) {
            return Err("stripe_count must be >= 1".into());
        }
        non_negative("metadata_latency_s", self.metadata_latency_s)?;
        if let Some(s) = self.sync_latency_s {
            non_negative("sync_latency_s", s)?;
        }
        if let Some(b) = self.link_bytes_per_s {
            positive("link_bytes_per_s", b)?;
        }
        if self.cb_buffer_bytes == Some(0) || self.cb_nodes == Some(0) {
            return Err("cb_buffer_bytes and cb_nodes must be >= 1".into());
        }
        let d = &self.disk;
        non_negative("disk.latency_s", d.latency_s)?;
        positive("disk.read_bytes_per_s", d.read_bytes_per_s)?;
        positive("disk.write_bytes_per_s", d.write_bytes_per_s)?;
        if let Some(c) = d.cache_bytes_per_s {
            positive("disk.cache_bytes_per_s", c)?;
        }
        if let Some(c) = d.cache_read_bytes_per_s {
            positive("disk.cache_read_bytes_per_s", c)?;
        }
        non_negative("disk.cache_latency_s", d.cache_latency_s)?;
        if let Some(c) = d.cache_read_latency_s {
            non_negative("disk.cache_read_latency_s", c)?;
        }
        d.cache_write.validate().map_err(|e| e.within("disk.cache_write: "))?;
        d.cache_read.validate().map_err(|e| e.within("disk.cache_read: "))?;
        Ok(())
    }
}

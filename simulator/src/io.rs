//! Parallel I/O on a modelled file system, after PIOsimHD (Kunkel,
//! "Simulating parallel programs on application and system level",
//! Computer Science – Research and Development 2013, §3: servers with
//! disks and caches, striping, client–server flows, collective I/O as
//! ROMIO's two-phase protocol).
//!
//! A file system (the `[[fs]]` table of a platform, [`FileSystem`]) stripes
//! each file round-robin over `stripe_count` of its servers in units of
//! `stripe_size_bytes`. Each server has a link to the clients and a disk,
//! both first-in first-out:
//!
//! - a request of b bytes to one server (the part of a client's request
//!   on that server's stripes) crosses the link in `b / link_bytes_per_s`
//!   after the network model's latency part, and is then served by the
//!   disk in `latency_s + b / bandwidth` (read or write bandwidth);
//! - a write-back cache of `cache_bytes` takes a write in
//!   `cache_latency_s + b / cache_bytes_per_s` (or the piecewise-linear
//!   `cache_write`) while it has room; once it
//!   holds more than `drain_after_bytes` not yet on the disk it drains
//!   them at the disk's write bandwidth in the background, and
//!   `MPI_File_sync` drains the rest and waits for the drain; a read of
//!   data among the last `read_cache_bytes` (default `cache_bytes`) ×
//!   servers bytes written comes from the cache in
//!   `cache_read_latency_s + b / cache_read_bytes_per_s` (or the
//!   piecewise-linear `cache_read`), without the disk (a page cache);
//! - a client's request completes when its last piece completes (a read
//!   piece then crosses the link back);
//! - open, close, set_size, preallocate and delete pay
//!   `metadata_latency_s`, a sync `sync_latency_s` after the drain.
//!
//! With link sharing (a platform's `[links]`, [`crate::network::FlowSharing`])
//! the replay moves the pieces as flows of the platform's network instead
//! of through the FIFO links: each call's schedule ([`Plan`]) runs step by
//! step, a write piece flowing from its client's host to its server, a
//! read's request flowing there and its data back once the server served
//! it, so I/O shares the links with MPI messages and many clients share a
//! server's link max-min fairly. A server named in `server_hosts` is
//! reached by the topology's route (a client on its host moves no data);
//! a dedicated server through the client host's first link toward the
//! other hosts, then its own link of `link_bytes_per_s` (no link of its
//! own without). Online mode, which has no link sharing, keeps the FIFO
//! links.
//!
//! Collective I/O follows the MPI-IO implementation the file system's
//! `mpi_io` names ([`MpiIo`]):
//!
//! - `romio` ([`two_phase_plan`]): ROMIO's generic two-phase algorithm
//!   (Thakur, Gropp & Lusk, "Data sieving and collective I/O in ROMIO",
//!   Frontiers 1999, §3): one aggregator per host by default (`cb_nodes`),
//!   the accessed range split into contiguous file domains, one per
//!   aggregator, processed in rounds of `cb_buffer_bytes`; each round
//!   exchanges data between ranks and aggregators through the network
//!   model, then the aggregators access the file;
//! - `ompio` ([`ompio`]): Open MPI's OMPIO, whose `fcoll` framework picks
//!   `individual` (each rank's own independent access, no exchange, no
//!   synchronisation) for a communicator of at most 2 ranks, and `vulcan`
//!   (even file domains, cycles of half the aggregator buffer, the write
//!   of one cycle overlapping the exchange of the next) above.

pub mod client;
pub mod ompio;
pub mod plan;
mod recent;
mod state;
pub mod summary;
mod twophase;

#[cfg(test)]
pub(crate) mod tests;

pub use crate::action::{FileInfo, FileView, Hints};
pub use plan::{Plan, Step};
pub use state::{FsState, IoKind, ServerStats};
pub use summary::{io_summary, IoSummary};
pub use twophase::{aggregators, two_phase_plan, Member};

pub use crate::platform::fs::{Disk, FileSystem, MpiIo, DEFAULT_CB_BUFFER_BYTES};

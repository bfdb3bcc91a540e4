//! What one client rank's MPI-IO call costs on a file system: the model
//! code the replay engine and the online clock share.
//!
//! An access through a strided view ([`FileView`]) is, as ROMIO does it
//! (Thakur, Gropp & Lusk, "Data sieving and collective I/O in ROMIO",
//! Frontiers 1999, §2): with data sieving (`romio_ds_read`/`write` not
//! `disable`) the covered range read in buffers of `ind_rd_buffer_size`
//! (a write: read, then written back, per buffer of `ind_wr_buffer_size`);
//! without, one request per contiguous block. A collective access whose
//! `romio_cb_read`/`write` is `disable` is an independent one.
//!
//! On a file system whose `mpi_io` is `ompio` ([`MpiIo::Ompio`]), a
//! strided independent access is one request per contiguous block (the
//! posix `fbtl` sieves only an aggregator's writes), and collective
//! accesses follow [`super::ompio`]: independent ones up to
//! [`super::ompio::INDIVIDUAL_MAX_RANKS`] ranks.

use super::plan::{Plan, Step};
use super::{ompio, two_phase_plan, FileInfo, FileView, FsState, Hints, IoKind, Member, MpiIo};
use crate::action::file::{DEFAULT_IND_RD_BUFFER_BYTES, DEFAULT_IND_WR_BUFFER_BYTES};
use crate::action::IoCall;
use crate::platform::Platform;

/// One-way latency between a client and the servers (the platform's
/// inter-host model at 0 bytes, its intra-host one without), seconds.
pub fn server_latency_s(platform: &Platform) -> f64 {
    platform.network.inter.as_ref().unwrap_or(&platform.network.intra).transfer.eval(0)
}

/// What a rank knows of one of its open files: the view and hints given.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OpenFile {
    /// The strided view set, if any.
    pub view: Option<FileView>,
    /// The hints given so far (later ones replace earlier ones).
    pub hints: Hints,
    /// Bytes this rank wrote independently (collective writes that ran as
    /// independent ones included) since its last sync of the file (the
    /// online clock's part of a collective sync: data written collectively
    /// is in every member's view already).
    pub unsynced_bytes: u64,
}

impl OpenFile {
    /// The file after `info` (an open, a view or hints).
    pub fn apply(&mut self, info: &FileInfo) {
        if info.sets_view || info.open_comm.is_some() {
            self.view = info.view;
        }
        self.hints = self.hints.merged(info.hints);
    }

    /// File bytes that `bytes` of data from `offset` cover.
    pub fn span(&self, bytes: u64) -> u64 {
        self.view.map_or(bytes, |v| v.span(bytes))
    }

    /// Whether a collective access of this kind by a communicator of
    /// `ranks` ranks runs collectively under `mpi_io` (its members wait
    /// for one another, [`collective`]) rather than as each rank's
    /// independent access ([`independent`]): with ROMIO, unless
    /// `romio_cb_read`/`romio_cb_write` is `disable`; with OMPIO, above
    /// [`ompio::INDIVIDUAL_MAX_RANKS`] ranks.
    pub fn collective(&self, write: bool, mpi_io: MpiIo, ranks: usize) -> bool {
        match mpi_io {
            MpiIo::Romio => {
                let cb = if write { self.hints.cb_write } else { self.hints.cb_read };
                cb != Some(false)
            }
            MpiIo::Ompio => !ompio::individual(ranks),
        }
    }
}

/// One MPI-IO call of a rank: what it does, on which file, where, how much.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Access {
    /// The call.
    pub call: IoCall,
    /// The rank's file id.
    pub file: u32,
    /// First byte, from the start of the file.
    pub offset: u64,
    /// Data bytes.
    pub bytes: u64,
}

/// When the independent call `a` (with the rank's state of its file,
/// `open`), issued at `t` seconds over a network of `lat` one-way
/// latency, completes (for `Iread`/`Iwrite`: when its request does);
/// [`independent_plan`] run on the servers' FIFO links.
pub fn independent(fs: &mut FsState, open: &OpenFile, t: f64, lat: f64, a: Access) -> f64 {
    independent_plan(fs, open, t, a).run(fs, lat)[0]
}

/// The schedule of the independent call `a` issued at `t` seconds (a
/// collective access runs as independent here, for one whose two-phase
/// is off), one party: a metadata step, a sync, or its requests one after
/// another (a strided view's blocks, or its sieved buffers: each read,
/// then written back for a write).
pub fn independent_plan(fs: &FsState, open: &OpenFile, t: f64, a: Access) -> Plan {
    let Access { call, file, offset, bytes } = a;
    let kind = match call {
        IoCall::Open { .. } | IoCall::Close | IoCall::Meta => return Plan::single(Step::Metadata, t),
        IoCall::Sync => return Plan::single(Step::Sync, t),
        IoCall::Read | IoCall::Iread { .. } | IoCall::ReadAll => IoKind::Read,
        IoCall::Write | IoCall::Iwrite { .. } | IoCall::WriteAll => IoKind::Write,
    };
    let Some(v) = open.view.filter(|_| bytes > 0) else { return Plan::single(Step::Request { by: 0, file, offset, bytes, kind }, t) };
    let h = &open.hints;
    let sieve = fs.fs().mpi_io == MpiIo::Romio
        && match kind {
            IoKind::Read => h.ds_read != Some(false),
            IoKind::Write => h.ds_write != Some(false),
        };
    let mut p = Plan::default();
    let mut last = p.add(Step::Join, t, &[]);
    if sieve {
        let span = v.span(bytes);
        let buf = match kind {
            IoKind::Read => h.ind_rd_buffer_bytes.unwrap_or(DEFAULT_IND_RD_BUFFER_BYTES),
            IoKind::Write => h.ind_wr_buffer_bytes.unwrap_or(DEFAULT_IND_WR_BUFFER_BYTES),
        }
        .max(1);
        for k in 0..span.div_ceil(buf) {
            let (at, len) = (offset + k * buf, buf.min(span - k * buf));
            last = p.request((t, 0), &[last], file, at, len, IoKind::Read);
            if kind == IoKind::Write {
                last = p.request((t, 0), &[last], file, at, len, IoKind::Write);
            }
        }
    } else {
        let (block, stride) = (v.block_bytes, v.stride());
        for j in 0..bytes.div_ceil(block) {
            let len = block.min(bytes - j * block);
            last = p.request((t, 0), &[last], file, offset + j * stride, len, kind);
        }
    }
    p.outputs.push(last);
    p
}

/// A collective access (`ReadAll` or `WriteAll`) of `file` by `members`
/// (in communicator rank order, each with its host, part, span and entry
/// time) on `platform` with the file's `hints`: [`schedule`] with the
/// exchange timed by the platform's intra- or inter-host transfer model.
/// Returns each member's completion, seconds.
pub fn collective(fs: &mut FsState, platform: &Platform, file: u32, members: &[Member], write: bool, hints: &Hints, lat: f64) -> Vec<f64> {
    collective_plan(fs, platform, file, members, write, hints).run(fs, lat)
}

/// The schedule of [`collective`], one party per member.
pub fn collective_plan(fs: &FsState, platform: &Platform, file: u32, members: &[Member], write: bool, hints: &Hints) -> Plan {
    let net = &platform.network;
    let exchange = |a: usize, b: usize, bytes: u64| {
        let model = if members[a].host == members[b].host { &net.intra } else { net.inter.as_ref().unwrap_or(&net.intra) };
        model.transfer.eval(bytes)
    };
    schedule_plan(fs, file, members, write, hints, exchange)
}

/// Each member's completion of a collective access of `file` by
/// `members` (seconds): [`schedule_plan`] run on the servers' FIFO links
/// over a network of `lat` one-way latency (seconds).
pub fn schedule(
    fs: &mut FsState,
    file: u32,
    members: &[Member],
    write: bool,
    hints: &Hints,
    lat: f64,
    exchange: impl Fn(usize, usize, u64) -> f64,
) -> Vec<f64> {
    schedule_plan(fs, file, members, write, hints, exchange).run(fs, lat)
}

/// The schedule of a collective access of `file` by `members` under the
/// file system's `mpi_io`, one party per member, `exchange(from, to,
/// bytes)` timing a transfer between two members (seconds).
///
/// ROMIO: its two-phase schedule ([`super::two_phase_plan`]); with
/// `romio_cb_write`/`romio_cb_read` left `automatic` (ROMIO's default)
/// and parts that do not interleave (each member's contiguous range ends
/// before the next one's starts), ROMIO skips the two phases: once the
/// last member entered (the offsets are exchanged), each accesses its own
/// part independently. OMPIO: [`ompio::plan`].
pub fn schedule_plan(
    fs: &FsState,
    file: u32,
    members: &[Member],
    write: bool,
    hints: &Hints,
    exchange: impl Fn(usize, usize, u64) -> f64,
) -> Plan {
    let kind = if write { IoKind::Write } else { IoKind::Read };
    if fs.fs().mpi_io == MpiIo::Ompio {
        return ompio::plan(fs, file, members, kind, hints, exchange);
    }
    let automatic = if write { hints.cb_write } else { hints.cb_read }.is_none();
    if automatic && !interleaved(members) {
        let t0 = members.iter().map(|m| m.entry_s).fold(0.0, f64::max);
        let mut p = Plan::default();
        for (i, m) in members.iter().enumerate() {
            let s = p.request((t0, i as u32), &[], file, m.offset, m.bytes, kind);
            p.outputs.push(s);
        }
        return p;
    }
    two_phase_plan(fs, file, members, kind, hints, exchange)
}

/// Whether the members' parts interleave (ROMIO's test before choosing
/// two-phase under `automatic`): a part through a strided view, or a
/// part starting before the end of the one below it.
fn interleaved(members: &[Member]) -> bool {
    if members.iter().any(|m| m.span > m.bytes) {
        return true;
    }
    let mut parts: Vec<(u64, u64)> = members.iter().filter(|m| m.bytes > 0).map(|m| (m.offset, m.bytes)).collect();
    parts.sort_unstable();
    parts.windows(2).any(|w| w[1].0 < w[0].0.saturating_add(w[0].1))
}

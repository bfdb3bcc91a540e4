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

use super::hints::{DEFAULT_IND_RD_BUFFER_BYTES, DEFAULT_IND_WR_BUFFER_BYTES};
use super::{ompio, two_phase, FileInfo, FileView, FsState, Hints, IoKind, Member, MpiIo};
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
/// latency, completes (for `Iread`/`Iwrite`: when its request does); a
/// collective access (`ReadAll`/`WriteAll`) runs as independent here (for
/// one whose two-phase is off).
pub fn independent(fs: &mut FsState, open: &OpenFile, t: f64, lat: f64, a: Access) -> f64 {
    let Access { call, file, offset, bytes } = a;
    let kind = match call {
        IoCall::Open { .. } | IoCall::Close | IoCall::Meta => return fs.metadata(t),
        IoCall::Sync => return fs.sync(t),
        IoCall::Read | IoCall::Iread { .. } | IoCall::ReadAll => IoKind::Read,
        IoCall::Write | IoCall::Iwrite { .. } | IoCall::WriteAll => IoKind::Write,
    };
    let Some(v) = open.view.filter(|_| bytes > 0) else { return fs.request(t, lat, file, offset, bytes, kind) };
    let h = &open.hints;
    let sieve = fs.fs().mpi_io == MpiIo::Romio
        && match kind {
            IoKind::Read => h.ds_read != Some(false),
            IoKind::Write => h.ds_write != Some(false),
        };
    if sieve {
        let span = v.span(bytes);
        let buf = match kind {
            IoKind::Read => h.ind_rd_buffer_bytes.unwrap_or(DEFAULT_IND_RD_BUFFER_BYTES),
            IoKind::Write => h.ind_wr_buffer_bytes.unwrap_or(DEFAULT_IND_WR_BUFFER_BYTES),
        }
        .max(1);
        let mut done = t;
        for k in 0..span.div_ceil(buf) {
            let (at, len) = (offset + k * buf, buf.min(span - k * buf));
            done = fs.request(done, lat, file, at, len, IoKind::Read);
            if kind == IoKind::Write {
                done = fs.request(done, lat, file, at, len, IoKind::Write);
            }
        }
        return done;
    }
    let (block, stride) = (v.block_bytes, v.stride());
    let mut done = t;
    for j in 0..bytes.div_ceil(block) {
        let len = block.min(bytes - j * block);
        done = fs.request(done, lat, file, offset + j * stride, len, kind);
    }
    done
}

/// A collective access (`ReadAll` or `WriteAll`) of `file` by `members`
/// (in communicator rank order, each with its host, part, span and entry
/// time) on `platform` with the file's `hints`: [`schedule`] with the
/// exchange timed by the platform's intra- or inter-host transfer model.
/// Returns each member's completion, seconds.
pub fn collective(fs: &mut FsState, platform: &Platform, file: u32, members: &[Member], write: bool, hints: &Hints, lat: f64) -> Vec<f64> {
    let net = &platform.network;
    let exchange = |a: usize, b: usize, bytes: u64| {
        let model = if members[a].host == members[b].host { &net.intra } else { net.inter.as_ref().unwrap_or(&net.intra) };
        model.transfer.eval(bytes)
    };
    schedule(fs, file, members, write, hints, lat, exchange)
}

/// The schedule of a collective access of `file` by `members` under the
/// file system's `mpi_io`, `exchange(from, to, bytes)` timing a transfer
/// between two members (seconds), `lat` the one-way latency to the
/// servers (seconds); returns each member's completion, seconds.
///
/// ROMIO: its two-phase schedule ([`two_phase`]); with
/// `romio_cb_write`/`romio_cb_read` left `automatic` (ROMIO's default)
/// and parts that do not interleave (each member's contiguous range ends
/// before the next one's starts), ROMIO skips the two phases: once the
/// last member entered (the offsets are exchanged), each accesses its own
/// part independently. OMPIO: [`ompio::collective`].
pub fn schedule(
    fs: &mut FsState,
    file: u32,
    members: &[Member],
    write: bool,
    hints: &Hints,
    lat: f64,
    exchange: impl Fn(usize, usize, u64) -> f64,
) -> Vec<f64> {
    let kind = if write { IoKind::Write } else { IoKind::Read };
    if fs.fs().mpi_io == MpiIo::Ompio {
        return ompio::collective(fs, file, members, kind, hints, lat, exchange);
    }
    let automatic = if write { hints.cb_write } else { hints.cb_read }.is_none();
    if automatic && !interleaved(members) {
        let t0 = members.iter().map(|m| m.entry_s).fold(0.0, f64::max);
        return members.iter().map(|m| fs.request(t0, lat, file, m.offset, m.bytes, kind)).collect();
    }
    two_phase(fs, file, members, kind, hints, lat, exchange)
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

//! What one client rank's MPI-IO call costs on a file system: the model
//! code the replay engine and the online clock share.

use super::{two_phase, FsState, IoKind, Member};
use crate::action::IoCall;
use crate::platform::Platform;

/// One-way latency between a client and the servers (the platform's
/// inter-host model at 0 bytes, its intra-host one without), seconds.
pub fn server_latency_s(platform: &Platform) -> f64 {
    platform.network.inter.as_ref().unwrap_or(&platform.network.intra).transfer.eval(0)
}

/// When the independent call `call` on `bytes` at `offset` of `file`,
/// issued at `t` seconds, completes (for `Iread`/`Iwrite`: when its
/// request does); `None` for the collective calls ([`collective`]).
pub fn independent(fs: &mut FsState, t: f64, lat: f64, call: IoCall, file: u32, offset: u64, bytes: u64) -> Option<f64> {
    Some(match call {
        IoCall::Open { .. } | IoCall::Close | IoCall::Meta => fs.metadata(t),
        IoCall::Sync => fs.sync(t),
        IoCall::Read | IoCall::Iread { .. } => fs.request(t, lat, file, offset, bytes, IoKind::Read),
        IoCall::Write | IoCall::Iwrite { .. } => fs.request(t, lat, file, offset, bytes, IoKind::Write),
        IoCall::ReadAll | IoCall::WriteAll => return None,
    })
}

/// A collective access (`ReadAll` or `WriteAll`) of `file` by `members`
/// (in communicator rank order, each with its host, part and entry time)
/// on `platform`: ROMIO's two-phase schedule ([`two_phase`]), the
/// exchange timed by the platform's intra- or inter-host transfer model.
/// Returns each member's completion, seconds.
pub fn collective(fs: &mut FsState, platform: &Platform, file: u32, members: &[Member], write: bool, lat: f64) -> Vec<f64> {
    let net = &platform.network;
    let exchange = |a: usize, b: usize, bytes: u64| {
        let model = if members[a].host == members[b].host { &net.intra } else { net.inter.as_ref().unwrap_or(&net.intra) };
        model.transfer.eval(bytes)
    };
    let kind = if write { IoKind::Write } else { IoKind::Read };
    two_phase(fs, file, members, kind, lat, exchange)
}

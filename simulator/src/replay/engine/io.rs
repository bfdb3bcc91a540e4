//! MPI-IO in the replay: each [`Action::Io`] on the platform's first file
//! system ([`crate::io`]). Independent accesses queue on the servers at the
//! rank's clock; a collective access waits for every member of the file's
//! communicator, then runs ROMIO's two-phase schedule
//! ([`crate::io::two_phase`]) with the members' exchanges timed by the
//! network model, and releases each member at its completion. Time spent
//! in I/O counts in the rank's `io_s`. Without a file system, a call takes
//! its recorded duration as compute.

use std::collections::HashMap;

use super::{Engine, Flow, Kind, Status};
use crate::action::{Action, IoCall};
use crate::io::{two_phase, FsState, IoKind, Member};
use crate::replay::ReplayError;

/// The file system and the collective accesses under way.
#[derive(Debug, Default)]
pub(crate) struct IoState {
    fs: Option<FsState>,
    /// Global communicator of each rank's open file.
    files: HashMap<(u32, u32), u32>,
    /// Collective accesses by (communicator, sequence number): the members
    /// arrived so far, (world rank, its part).
    pending: HashMap<(u32, u64), Vec<(usize, Member)>>,
    /// Collective accesses each rank made per communicator.
    seq: HashMap<(u32, u32), u64>,
    /// I/O calls replayed as their recorded duration (no file system).
    pub(crate) recorded: u64,
}

impl IoState {
    /// The state for `platform`'s first file system, if any.
    pub(crate) fn new(platform: &crate::platform::Platform) -> IoState {
        IoState { fs: platform.fs.first().cloned().map(FsState::new), ..IoState::default() }
    }

    /// Each server's bytes and busy times; empty without a file system.
    pub(crate) fn server_stats(&self) -> Vec<crate::io::ServerStats> {
        self.fs.as_ref().map_or_else(Vec::new, FsState::server_stats)
    }
}

impl<'a, E: std::error::Error + Send + Sync + 'static> Engine<'a, '_, E> {
    /// Runs rank `r`'s MPI-IO call `action`.
    pub(super) fn io(&mut self, r: usize, action: &Action) -> Result<Flow, ReplayError> {
        let Action::Io { call, file, offset, bytes, recorded_s } = *action else { unreachable!("called on Io actions") };
        if !(recorded_s.is_finite() && recorded_s >= 0.0) {
            return Err(self.err(r, action, "recorded duration must be finite and >= 0", false));
        }
        let clock = self.ranks[r].clock;
        let Some(fs) = self.io.fs.as_mut() else {
            self.io.recorded += 1;
            let speed = self.ranks[r].speed;
            self.local_compute(r, recorded_s / speed);
            return Ok(Flow::Continue);
        };
        fs.keep_spans(self.timeline.as_ref().is_some_and(|t| t.writes()));
        let lat = self.platform.network.inter.as_ref().unwrap_or(&self.platform.network.intra).transfer.eval(0);
        let done = match call {
            IoCall::Open { comm } => {
                let g = self.comms.global(r, comm).unwrap_or(0);
                self.io.files.insert((r as u32, file), g);
                fs.metadata(clock)
            }
            IoCall::Close | IoCall::Meta => fs.metadata(clock),
            IoCall::Sync => fs.sync(clock),
            IoCall::Read => fs.request(clock, lat, file, offset, bytes, IoKind::Read),
            IoCall::Write => fs.request(clock, lat, file, offset, bytes, IoKind::Write),
            IoCall::Iread { req } | IoCall::Iwrite { req } => {
                let kind = if matches!(call, IoCall::Iread { .. }) { IoKind::Read } else { IoKind::Write };
                let done = fs.request(clock, lat, file, offset, bytes, kind);
                self.server_spans();
                let slot = self.ranks[r].reqs.alloc_user(req);
                self.complete(r, slot, done, done - clock)?;
                return Ok(Flow::Continue);
            }
            IoCall::ReadAll | IoCall::WriteAll => {
                let kind = if call == IoCall::ReadAll { IoKind::Read } else { IoKind::Write };
                return self.collective_io(r, file, Member { host: self.ranks[r].host, offset, bytes, entry_s: clock }, kind, lat);
            }
        };
        self.server_spans();
        self.ranks[r].stats.io_s += done - clock;
        self.ranks[r].clock = done;
        Ok(Flow::Continue)
    }

    /// Moves the file system's busy spans to the timeline's server lanes.
    fn server_spans(&mut self) {
        let (Some(fs), Some(tl)) = (self.io.fs.as_mut(), self.timeline.as_mut()) else { return };
        for s in fs.take_spans() {
            tl.server_span(s.server, s.what, s.start_s, s.end_s);
        }
    }

    /// Rank `r` enters a collective access of `file`: it blocks until the
    /// last member of the file's communicator enters, which times the
    /// access and releases everyone.
    fn collective_io(&mut self, r: usize, file: u32, me: Member, kind: IoKind, lat: f64) -> Result<Flow, ReplayError> {
        let g = self.io.files.get(&(r as u32, file)).copied().unwrap_or(0);
        let n = self.comms.size(g) as usize;
        let seq = self.io.seq.entry((r as u32, g)).or_default();
        let key = (g, *seq);
        *seq += 1;
        let arrived = self.io.pending.entry(key).or_default();
        arrived.push((r, me));
        if arrived.len() < n {
            self.ranks[r].status = Status::Blocked;
            return Ok(Flow::Blocked);
        }
        let mut arrived = self.io.pending.remove(&key).unwrap_or_default();
        arrived.sort_by_key(|&(w, _)| self.comms.comm_rank(g, w as u32).unwrap_or(u32::MAX));
        let members: Vec<Member> = arrived.iter().map(|a| a.1).collect();
        let ranks: Vec<usize> = arrived.iter().map(|a| a.0).collect();
        let (net, hosts) = (&self.platform.network, members.iter().map(|m| m.host).collect::<Vec<_>>());
        let exchange = |a: usize, b: usize, bytes: u64| {
            let model = if hosts[a] == hosts[b] { &net.intra } else { net.inter.as_ref().unwrap_or(&net.intra) };
            model.transfer.eval(bytes)
        };
        let fs = self.io.fs.as_mut().expect("collective I/O runs with a file system");
        let done = two_phase(fs, file, &members, kind, lat, exchange);
        self.server_spans();
        for (i, &w) in ranks.iter().enumerate() {
            let rk = &mut self.ranks[w];
            rk.stats.io_s += done[i] - members[i].entry_s;
            rk.clock = done[i];
            if w != r {
                rk.status = Status::Runnable;
                self.queue.schedule(done[i], Kind::Rank(w as u32))?;
            }
        }
        Ok(Flow::Continue)
    }
}

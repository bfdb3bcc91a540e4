//! MPI-IO on the online clock: the replay's file-system model
//! ([`crate::io::client`]) applied to one rank's view of the servers.

use super::{Req, VirtualRank};
use crate::action::{Action, IoCall};
use crate::io::client::{self, Access, OpenFile};
use crate::io::Member;
use crate::rank::Wait;
use crate::replay::{ReplayError, ReplayErrorKind};

impl VirtualRank<'_> {
    fn io_error(&self, action: &Action, why: &str) -> ReplayError {
        ReplayError { rank: Some(self.rank), kind: ReplayErrorKind::Invalid { action: format!("{action:?}"), why: why.into() } }
    }

    /// The part a collective access `action` of a communicator of `ranks`
    /// ranks brings to its members' exchange: `(offset, bytes, span)` (the
    /// file bytes its data covers through the file's view); `None` when it
    /// is not a collective access or runs as an independent one
    /// ([`crate::io::client::OpenFile::collective`]: `romio_cb_*`
    /// disabled, or OMPIO's `individual`), for [`VirtualRank::io`] then.
    ///
    /// `MPI_File_sync`, collective over the file's communicator, brings
    /// `(0, bytes, 0)`: the bytes this rank wrote independently since its
    /// last sync of the file, which only its own view of the caches holds
    /// and the first member's sync writes back for everyone.
    pub fn io_part(&self, action: &Action, ranks: usize) -> Option<(u64, u64, u64)> {
        let fs = self.fs.as_ref()?;
        if let &Action::Io { call: IoCall::Sync, file, .. } = action {
            return Some((0, self.open.get(&file).map_or(0, |o| o.unsynced_bytes), 0));
        }
        let Action::Io { call: call @ (IoCall::ReadAll | IoCall::WriteAll), file, offset, bytes, .. } = *action else { return None };
        let open = self.open.get(&file).copied().unwrap_or_default();
        open.collective(call == IoCall::WriteAll, fs.fs().mpi_io, ranks).then(|| (offset, bytes, open.span(bytes)))
    }

    /// An MPI-IO call `action` ([`Action::IoInfo`], or an [`Action::Io`]
    /// other than `MPI_File_sync` with a file system) at the clock: the
    /// clock moves to its completion (a nonblocking one creates its
    /// request, complete then). A collective access given here runs as an
    /// independent one (for when [`VirtualRank::io_part`] returns `None`).
    /// Without a file system in the
    /// platform the call costs its recorded duration, as in the replay.
    /// Returns the clock, seconds.
    ///
    /// # Errors
    /// [`ReplayError`] for another action, or a sync with a file system
    /// (it needs its members' parts: [`VirtualRank::collective_io`]).
    pub fn io(&mut self, action: &Action) -> Result<f64, ReplayError> {
        if self.fs.is_some() && matches!(action, Action::Io { call: IoCall::Sync, .. }) {
            return Err(self.io_error(action, "a collective access needs its members' parts"));
        }
        let (call, file, offset, bytes, recorded_s) = match action {
            &Action::Io { call, file, offset, bytes, recorded_s } => (Some(call), file, offset, bytes, recorded_s),
            Action::IoInfo { file, recorded_s, .. } => (None, *file, 0, 0, *recorded_s),
            _ => return Err(self.io_error(action, "not an MPI-IO call")),
        };
        let lat = client::server_latency_s(&self.platform);
        let t = self.clock;
        let Some(fs) = self.fs.as_mut() else {
            self.compute(recorded_s.max(0.0) * self.speed);
            return Ok(self.clock);
        };
        let done = match (call, action) {
            (None, Action::IoInfo { info, .. }) => {
                self.open.entry(file).or_default().apply(info);
                if info.open_comm.is_none() {
                    return Ok(t);
                }
                fs.set_striping(file, info.hints.striping_unit, info.hints.striping_factor);
                fs.metadata(t)
            }
            (Some(call), _) => {
                if matches!(call, IoCall::Open { .. }) {
                    self.open.insert(file, OpenFile::default());
                }
                let open = self.open.get(&file).copied().unwrap_or_default();
                let done = client::independent(fs, &open, t, lat, Access { call, file, offset, bytes });
                if let (IoCall::Write | IoCall::Iwrite { .. } | IoCall::WriteAll, Some(o)) = (call, self.open.get_mut(&file)) {
                    o.unsynced_bytes += bytes;
                }
                if call == IoCall::Close {
                    self.open.remove(&file);
                }
                if let IoCall::Iread { req } | IoCall::Iwrite { req } = call {
                    self.reqs.insert(req, Req::Done { at: done, d: done - t });
                    return Ok(t);
                }
                done
            }
            (None, _) => unreachable!("IoInfo above"),
        };
        self.stats.io_s += done - t;
        self.settle(Wait { since: t, resume: done, d: done - t });
        Ok(self.clock)
    }

    /// A collective access `action` (`ReadAll`/`WriteAll` with
    /// [`VirtualRank::io_part`]) of the communicator `members` (world
    /// ranks, in communicator rank order), which entered at virtual times
    /// `entries_s` with parts `(offset, bytes, span)` (same order): the
    /// schedule of the file system's MPI-IO implementation
    /// ([`crate::io::client::schedule`]) on this rank's view of the servers; the clock
    /// moves to this rank's completion. Without a file system the call
    /// costs its recorded duration. Returns the clock, seconds.
    ///
    /// # Errors
    /// [`ReplayError`] when this rank is not a member, the lengths
    /// differ, or `action` is not a collective access.
    pub fn collective_io(
        &mut self,
        action: &Action,
        members: &[u32],
        entries_s: &[f64],
        parts: &[(u64, u64, u64)],
    ) -> Result<f64, ReplayError> {
        let Action::Io { call: call @ (IoCall::ReadAll | IoCall::WriteAll | IoCall::Sync), file, recorded_s, .. } = *action else {
            return Err(self.io_error(action, "not a collective MPI-IO access"));
        };
        if members.len() != entries_s.len() || members.len() != parts.len() {
            return Err(self.io_error(action, "members, entry times and parts differ in number"));
        }
        let me = members.iter().position(|&m| m == self.rank).ok_or_else(|| self.io_error(action, "this rank is not a member"))?;
        if call == IoCall::Sync {
            if let Some(o) = self.open.get_mut(&file) {
                o.unsynced_bytes = 0;
            }
            return Ok(self.shared_sync(me, entries_s, parts));
        }
        let hints = self.open.get(&file).map(|o| o.hints).unwrap_or_default();
        let Some(fs) = self.fs.as_mut() else {
            self.compute(recorded_s.max(0.0) * self.speed);
            return Ok(self.clock);
        };
        let group: Vec<Member> = members
            .iter()
            .zip(entries_s)
            .zip(parts)
            .map(|((&w, &entry_s), &(offset, bytes, span))| Member { host: self.platform.host_of(w), offset, bytes, span, entry_s })
            .collect();
        let lat = client::server_latency_s(&self.platform);
        let done = client::collective(fs, &self.platform, file, &group, call == IoCall::WriteAll, &hints, lat)[me];
        let t = self.clock;
        let entry = entries_s[me];
        self.stats.io_s += (done - entry).max(0.0);
        // Waiting for the last member is waiting; the schedule after it, I/O.
        let last = entries_s.iter().copied().fold(entry, f64::max);
        self.settle(Wait { since: t, resume: done.max(t), d: (done - last).max(0.0) });
        Ok(self.clock)
    }

    /// `MPI_File_sync` of member `me`: the other members' cached bytes
    /// (`parts[k].1`) join this rank's view and the write-back starts at
    /// the first member's entry; the clock moves to the sync's completion.
    fn shared_sync(&mut self, me: usize, entries_s: &[f64], parts: &[(u64, u64, u64)]) -> f64 {
        let t = self.clock;
        let others: u64 = parts.iter().enumerate().filter(|&(k, _)| k != me).map(|(_, p)| p.1).sum();
        let first = entries_s.iter().copied().fold(f64::INFINITY, f64::min);
        let Some(fs) = self.fs.as_mut() else { return t };
        let done = fs.sync_shared(t, first, others);
        self.stats.io_s += done - t;
        self.settle(Wait { since: t, resume: done, d: done - t });
        self.clock
    }
}

//! MPI-IO in the replay: each [`Action::Io`] on the platform's first file
//! system ([`crate::io`]), through the file's view and hints
//! ([`Action::IoInfo`], [`crate::io::client`]). Independent accesses queue on the servers at the
//! rank's clock; a collective access waits for every member of the file's
//! communicator, then runs the schedule of the file system's MPI-IO
//! implementation ([`crate::io::client::schedule`]: ROMIO's two-phase,
//! OMPIO's `vulcan`) with the members' exchanges timed by the network
//! model, and releases each member at its completion (one that runs as
//! independent accesses, [`crate::io::client::OpenFile::collective`],
//! does not wait). Time spent
//! in I/O counts in the rank's `io_s`, and as communication (waiting, for
//! a collective access's wait for its last member). Without a file system, a call takes
//! its recorded duration as compute. With link sharing the same schedules
//! run step by step, their server traffic as flows ([`super::io_jobs`]);
//! a rank waits in a blocking call until its schedule ends.

use std::collections::HashMap;

use super::io_jobs::Party;
use super::{Engine, Flow, Kind, Net, Status};
use crate::action::{Action, IoCall};
use crate::io::client::{self, Access, OpenFile};
use crate::io::{FsState, Hints, Member};
use crate::replay::ReplayError;

/// The file system and the collective accesses under way.
#[derive(Debug, Default)]
pub(crate) struct IoState {
    fs: Option<FsState>,
    /// Global communicator of each rank's open file.
    files: HashMap<(u32, u32), u32>,
    /// View and hints of each rank's open file.
    open: HashMap<(u32, u32), OpenFile>,
    /// Collective accesses by (communicator, sequence number): the members
    /// arrived so far, (world rank, its part).
    pending: HashMap<(u32, u64), Vec<(usize, Member)>>,
    /// Collective accesses each rank made per communicator.
    seq: HashMap<(u32, u32), u64>,
    /// I/O calls replayed as their recorded duration (no file system).
    pub(crate) recorded: u64,
    /// Calls under way over the shared network ([`super::io_jobs`]).
    pub(super) jobs: super::io_jobs::Jobs,
    /// Host of each server on a host of the platform (`None`: a dedicated server).
    server_host: Vec<Option<usize>>,
    /// Hosts of the platform.
    hosts: usize,
}

impl IoState {
    /// The state for `platform`'s first file system, if any.
    pub(crate) fn new(platform: &crate::platform::Platform) -> IoState {
        let fs = platform.fs.first();
        let server_host = fs.map_or_else(Vec::new, |fs| {
            let on_hosts = fs.server_hosts.iter().map(|n| platform.hosts.iter().position(|h| &h.name == n));
            on_hosts.chain(std::iter::repeat_n(None, fs.servers as usize)).collect()
        });
        IoState { fs: fs.cloned().map(FsState::new), server_host, hosts: platform.hosts.len(), ..IoState::default() }
    }

    /// Capacities of the dedicated servers' links (bytes/s), one per
    /// dedicated server with a `link_bytes_per_s`: the extra links of the
    /// shared network ([`Net::with_links`]).
    pub(crate) fn server_links(platform: &crate::platform::Platform) -> Vec<f64> {
        platform.fs.first().and_then(|fs| fs.link_bytes_per_s.map(|bw| vec![bw; fs.servers as usize])).unwrap_or_default()
    }

    pub(super) fn fs_mut(&mut self) -> &mut FsState {
        self.fs.as_mut().expect("I/O plans run with a file system")
    }

    /// Whether server `s` runs on host `client` (its pieces move no data
    /// over the network).
    pub(super) fn local(&self, client: usize, s: usize) -> bool {
        self.server_host.get(s).copied().flatten() == Some(client)
    }

    /// The directed links from host `client` to server `s` and back, on
    /// `net`; `None` when the server runs on the client's host. A server
    /// on a host: the topology's routes. A dedicated server: the client
    /// host's first link toward another host (its way out) and the
    /// server's own link, if it has one.
    pub(super) fn route(&self, net: &Net, client: usize, s: usize) -> Option<(Vec<u32>, Vec<u32>)> {
        let (mut there, mut back) = (Vec::new(), Vec::new());
        if self.local(client, s) {
            return None;
        }
        match self.server_host.get(s).copied().flatten() {
            Some(h) => {
                net.route(client, h, &mut there);
                net.route(h, client, &mut back);
            }
            None => {
                if self.hosts > 1 {
                    let other = (client + 1) % self.hosts;
                    net.route(client, other, &mut there);
                    there.truncate(1);
                    net.route(other, client, &mut back);
                    back.drain(..back.len().saturating_sub(1));
                }
                let dedicated = s - self.server_host.iter().filter(|h| h.is_some()).count();
                if self.fs.as_ref().is_some_and(|f| f.fs().link_bytes_per_s.is_some()) {
                    let (to, from) = net.extra_link(self.hosts, dedicated);
                    there.push(to);
                    back.insert(0, from);
                }
            }
        }
        Some((there, back))
    }

    /// Each server's bytes and busy times; empty without a file system.
    pub(crate) fn server_stats(&self) -> Vec<crate::io::ServerStats> {
        self.fs.as_ref().map_or_else(Vec::new, FsState::server_stats)
    }
}

impl<'a, E: std::error::Error + Send + Sync + 'static> Engine<'a, '_, E> {
    /// Runs rank `r`'s MPI-IO call `action` ([`Action::Io`] or [`Action::IoInfo`]).
    pub(super) fn io(&mut self, r: usize, action: &Action) -> Result<Flow, ReplayError> {
        let (call, file, offset, bytes, recorded_s) = match action {
            &Action::Io { call, file, offset, bytes, recorded_s } => (Some(call), file, offset, bytes, recorded_s),
            Action::IoInfo { file, recorded_s, .. } => (None, *file, 0, 0, *recorded_s),
            _ => unreachable!("called on I/O actions"),
        };
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
        let lat = client::server_latency_s(self.platform);
        let key = (r as u32, file);
        let Some(call) = call else {
            let Action::IoInfo { info, .. } = action else { unreachable!("matched above") };
            self.io.open.entry(key).or_default().apply(info);
            let Some(comm) = info.open_comm else { return Ok(Flow::Continue) };
            fs.set_striping(file, info.hints.striping_unit, info.hints.striping_factor);
            let g = self.comms.global(r, comm).unwrap_or(0);
            self.io.files.insert(key, g);
            let done = fs.metadata(clock);
            return Ok(self.io_done(r, clock, done));
        };
        if let IoCall::Open { comm } = call {
            let g = self.comms.global(r, comm).unwrap_or(0);
            self.io.files.insert(key, g);
            self.io.open.insert(key, OpenFile::default());
        }
        let open = self.io.open.get(&key).copied().unwrap_or_default();
        let ranks = self.comms.size(self.io.files.get(&key).copied().unwrap_or(0)) as usize;
        let access = Access { call, file, offset, bytes };
        let done = match call {
            IoCall::ReadAll | IoCall::WriteAll if open.collective(call == IoCall::WriteAll, fs.fs().mpi_io, ranks) => {
                let me = Member { host: self.hosts[r] as usize, offset, bytes, span: open.span(bytes), entry_s: clock };
                return self.collective_io(r, file, me, call == IoCall::WriteAll, &open.hints, lat);
            }
            _ if self.links
                && matches!(
                    call,
                    IoCall::Read | IoCall::Write | IoCall::ReadAll | IoCall::WriteAll | IoCall::Iread { .. } | IoCall::Iwrite { .. }
                ) =>
            {
                let plan = client::independent_plan(fs, &open, clock, access);
                let party = match call {
                    IoCall::Iread { req } | IoCall::Iwrite { req } => {
                        Party::Request { rank: r, slot: self.ranks[r].reqs.alloc_user(req), since: clock }
                    }
                    _ => Party::Blocking { rank: r, since: clock },
                };
                // A blocking call's rank waits until the job wakes it (at its end, maybe now).
                let blocking = matches!(party, Party::Blocking { .. });
                if blocking {
                    self.ranks[r].status = Status::Blocked;
                }
                self.io_job(plan, vec![self.hosts[r] as usize], vec![party])?;
                return Ok(if blocking { Flow::Blocked } else { Flow::Continue });
            }
            IoCall::Iread { req } | IoCall::Iwrite { req } => {
                let done = client::independent(fs, &open, clock, lat, access);
                self.server_spans();
                let slot = self.ranks[r].reqs.alloc_user(req);
                self.complete(r, slot, done, done - clock)?;
                return Ok(Flow::Continue);
            }
            _ => client::independent(fs, &open, clock, lat, access),
        };
        if call == IoCall::Close {
            self.io.open.remove(&key);
        }
        Ok(self.io_done(r, clock, done))
    }

    /// Rank `r`'s blocking I/O call issued at `clock` completes at `done`.
    fn io_done(&mut self, r: usize, clock: f64, done: f64) -> Flow {
        self.server_spans();
        let s = &mut self.ranks[r].stats;
        s.io_s += done - clock;
        s.comm_s += done - clock;
        self.ranks[r].clock = done;
        Flow::Continue
    }

    /// Moves the file system's busy spans to the timeline's server lanes.
    pub(super) fn server_spans(&mut self) {
        let (Some(fs), Some(tl)) = (self.io.fs.as_mut(), self.timeline.as_mut()) else { return };
        for s in fs.take_spans() {
            tl.server_span(s.server, s.what, s.start_s, s.end_s);
        }
    }

    /// Rank `r` enters a collective access of `file`: it blocks until the
    /// last member of the file's communicator enters, which times the
    /// access and releases everyone.
    fn collective_io(&mut self, r: usize, file: u32, me: Member, write: bool, hints: &Hints, lat: f64) -> Result<Flow, ReplayError> {
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
        let fs = self.io.fs.as_mut().expect("collective I/O runs with a file system");
        let last = members.iter().map(|m| m.entry_s).fold(0.0, f64::max);
        if self.links {
            let plan = client::collective_plan(fs, self.platform, file, &members, write, hints);
            let parties = ranks.iter().zip(&members).map(|(&w, m)| Party::Member { rank: w, since: m.entry_s, last }).collect();
            self.ranks[r].status = Status::Blocked;
            self.io_job(plan, members.iter().map(|m| m.host).collect(), parties)?;
            return Ok(Flow::Blocked);
        }
        let done = client::collective(fs, self.platform, file, &members, write, hints, lat);
        self.server_spans();
        // Waiting for the last member is waiting; the schedule after it, communication.
        for (i, &w) in ranks.iter().enumerate() {
            let rk = &mut self.ranks[w];
            rk.stats.io_s += done[i] - members[i].entry_s;
            rk.stats.wait_s += last - members[i].entry_s;
            rk.stats.comm_s += done[i] - last;
            rk.clock = done[i];
            if w != r {
                rk.status = Status::Runnable;
                self.queue.schedule(done[i], Kind::Rank(w as u32))?;
            }
        }
        Ok(Flow::Continue)
    }
}

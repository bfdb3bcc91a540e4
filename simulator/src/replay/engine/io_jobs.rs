//! MPI-IO calls over the shared network (link sharing): each call's plan
//! ([`crate::io::Plan`]) runs step by step, every piece of a request
//! moving between its client's host and its server as a flow.
//!
//! A write piece crosses the network from the client to the server, which
//! then takes it ([`crate::io::FsState::write_arrived`]: cache or disk); a read's
//! request reaches the server after the network's latency, the server
//! serves it ([`crate::io::FsState::read_served`]) and the data flows back. A server
//! on one of the platform's hosts (`server_hosts`) is reached by the
//! topology's route; a dedicated one through the client host's first link
//! toward the rest of the network and the server's own link
//! (`link_bytes_per_s`; without it, the server adds no link). A piece
//! whose server runs on the client's host moves no data over the network.
//! Flows are bound by the inter-host model's bandwidth for their size and
//! start after its latency, as messages do. Steps that are not requests
//! (an exchange between members, a synchronisation) are timed as
//! [`crate::io::Plan::run`] times them.

use super::{Engine, Kind, Status};
use crate::io::{IoKind, Plan, Step};
use crate::replay::flows::Done;
use crate::replay::ReplayError;

/// `Done::src` of a flow that carries a piece of an I/O request.
pub(super) const IO_FLOW: u32 = u32::MAX;

/// Who a plan's party is and what its completion does.
#[derive(Debug, Clone, Copy)]
pub(super) enum Party {
    /// A blocking call of `rank` issued at `since`: the rank resumes.
    Blocking { rank: usize, since: f64 },
    /// A nonblocking call's request `slot` of `rank`, issued at `since`.
    Request { rank: usize, slot: u32, since: f64 },
    /// A member of a collective access that entered at `since`; the last
    /// member entered at `last`.
    Member { rank: usize, since: f64, last: f64 },
}

/// One call's plan under way.
#[derive(Debug)]
pub(super) struct Job {
    plan: Plan,
    /// Host of each party.
    hosts: Vec<usize>,
    parties: Vec<Party>,
    /// End of each step (NaN until known), seconds.
    ends: Vec<f64>,
    /// Per step: the steps it still waits for.
    waiting: Vec<u32>,
    /// Per step: the steps waiting for it.
    next: Vec<Vec<u32>>,
    /// Per request step: pieces not yet done, and the latest piece's end.
    left: Vec<u32>,
    latest: Vec<f64>,
    /// Request steps due later: (start, step).
    due: Vec<(f64, u32)>,
    /// Per step: the parties its end completes.
    completes: Vec<Vec<u32>>,
    /// Parties not yet complete.
    open: usize,
    /// Steps not yet ended.
    unended: usize,
}

/// A piece of a request in flight: its job and step, its client's host
/// and server, its bytes, whether it reads, whether a read's data is
/// cached at the server, and whether its flow carries the data back to
/// the client (a read's second flow; the first carries its request).
#[derive(Debug, Clone, Copy)]
pub(super) struct Piece {
    job: u32,
    step: u32,
    client: u32,
    server: u32,
    bytes: u64,
    kind: IoKind,
    hit: bool,
    back: bool,
    /// When its flow's latency ends, seconds.
    from: f64,
}

/// The calls and pieces under way.
#[derive(Debug, Default)]
pub(super) struct Jobs {
    jobs: Vec<Option<Job>>,
    free: Vec<u32>,
    pieces: Vec<Piece>,
    free_pieces: Vec<u32>,
}

impl Jobs {
    fn piece(&mut self, p: Piece) -> u32 {
        match self.free_pieces.pop() {
            Some(i) => {
                self.pieces[i as usize] = p;
                i
            }
            None => {
                self.pieces.push(p);
                (self.pieces.len() - 1) as u32
            }
        }
    }
}

impl<'a, E: std::error::Error + Send + Sync + 'static> Engine<'a, '_, E> {
    /// Starts `plan`, its parties on `hosts` completing as `parties` say.
    pub(super) fn io_job(&mut self, plan: Plan, hosts: Vec<usize>, parties: Vec<Party>) -> Result<(), ReplayError> {
        let n = plan.steps.len();
        let mut next = vec![Vec::new(); n];
        let mut waiting = vec![0; n];
        for (i, s) in plan.steps.iter().enumerate() {
            waiting[i] = s.after.len() as u32;
            for &a in &s.after {
                next[a as usize].push(i as u32);
            }
        }
        let mut completes = vec![Vec::new(); n];
        for (p, &o) in plan.outputs.iter().enumerate() {
            completes[o as usize].push(p as u32);
        }
        let open = parties.len();
        let job = Job {
            plan,
            hosts,
            parties,
            ends: vec![f64::NAN; n],
            waiting,
            next,
            left: vec![0; n],
            latest: vec![0.0; n],
            due: Vec::new(),
            completes,
            open,
            unended: n,
        };
        let id = match self.io.jobs.free.pop() {
            Some(i) => {
                self.io.jobs.jobs[i as usize] = Some(job);
                i
            }
            None => {
                self.io.jobs.jobs.push(Some(job));
                (self.io.jobs.jobs.len() - 1) as u32
            }
        };
        let roots: Vec<u32> = (0..n as u32).filter(|&i| self.job(id).waiting[i as usize] == 0).collect();
        for i in roots {
            let t = self.job(id).plan.start_of(i as usize, &self.job(id).ends);
            self.io_ready(id, i, t)?;
        }
        self.io_release(id);
        Ok(())
    }

    fn job(&self, id: u32) -> &Job {
        self.io.jobs.jobs[id as usize].as_ref().expect("a job under way")
    }

    fn job_mut(&mut self, id: u32) -> &mut Job {
        self.io.jobs.jobs[id as usize].as_mut().expect("a job under way")
    }

    /// Frees job `id` once every party completed and no piece is in flight.
    fn io_release(&mut self, id: u32) {
        let j = self.job(id);
        if j.open == 0 && j.unended == 0 {
            self.io.jobs.jobs[id as usize] = None;
            self.io.jobs.free.push(id);
        }
    }

    /// Step `i` of job `id` may start at `t`: a request starts when the
    /// clock reaches `t` (its flows start then); other steps end at once.
    fn io_ready(&mut self, id: u32, i: u32, t: f64) -> Result<(), ReplayError> {
        match self.job(id).plan.steps[i as usize].step {
            Step::Request { .. } if t > self.queue.now => {
                self.job_mut(id).due.push((t, i));
                self.queue.schedule(t, Kind::Io(id))
            }
            Step::Request { by, file, offset, bytes, kind } => self.io_request(id, i, t, (by, file, offset, bytes, kind)),
            step => {
                let end = self.io_end_at_once(step, t);
                self.io_step_end(id, i, end)
            }
        }
    }

    /// The end of a step that is not a request, started at `t`, seconds
    /// (as [`crate::io::Plan::run`] times it).
    fn io_end_at_once(&mut self, step: Step, t: f64) -> f64 {
        step.end_at_once(self.io.fs_mut(), t).expect("requests start on the clock")
    }

    /// Runs the requests of job `id` due by now.
    pub(super) fn io_event(&mut self, id: u32, now: f64) -> Result<(), ReplayError> {
        let Some(Some(j)) = self.io.jobs.jobs.get_mut(id as usize) else { return Ok(()) };
        let mut now_due = Vec::new();
        j.due.retain(|&(t, i)| {
            let due = t <= now;
            if due {
                now_due.push(i);
            }
            !due
        });
        for i in now_due {
            let t = self.job(id).plan.start_of(i as usize, &self.job(id).ends);
            self.io_request(id, i, t.max(now), self.request_of(id, i))?;
        }
        self.io_release(id);
        Ok(())
    }

    fn request_of(&self, id: u32, i: u32) -> (u32, u32, u64, u64, IoKind) {
        match self.job(id).plan.steps[i as usize].step {
            Step::Request { by, file, offset, bytes, kind } => (by, file, offset, bytes, kind),
            _ => unreachable!("only requests are due"),
        }
    }

    /// Starts request step `i` of job `id` at `t` (the clock): its pieces'
    /// flows (a write's data, a read's request), or their server work at
    /// once for a server on the client's host.
    fn io_request(
        &mut self,
        id: u32,
        i: u32,
        t: f64,
        (by, file, offset, bytes, kind): (u32, u32, u64, u64, IoKind),
    ) -> Result<(), ReplayError> {
        let fs = self.io.fs_mut();
        let hit = fs.begin(file, offset, bytes, kind);
        let pieces = if bytes == 0 { Vec::new() } else { fs.pieces(file, offset, bytes) };
        let client = self.job(id).hosts[by as usize];
        let mut end = t;
        let mut left = 0;
        for (s, b) in pieces {
            if self.io.local(client, s) {
                let fs = self.io.fs_mut();
                end = end.max(match kind {
                    IoKind::Write => fs.write_arrived(s, t, b),
                    IoKind::Read => fs.read_served(s, t, b, hit),
                });
                continue;
            }
            let p = Piece { job: id, step: i, client: client as u32, server: s as u32, bytes: b, kind, hit, back: false, from: t };
            self.io_flow(p, t)?;
            left += 1;
        }
        self.server_spans();
        let j = self.job_mut(id);
        j.latest[i as usize] = end;
        j.left[i as usize] = left;
        if left == 0 {
            return self.io_step_end(id, i, end);
        }
        Ok(())
    }

    /// Starts piece `p`'s flow, its latency from `t` (seconds): a write's
    /// data or a read's request (no payload) toward the server, or a read's
    /// data back. Bound and latency are the inter-host model's for the
    /// payload, as for a message.
    fn io_flow(&mut self, p: Piece, t: f64) -> Result<(), ReplayError> {
        let net = self.net.as_ref().expect("flows run with link sharing");
        let (route, back) = self.io.route(net, p.client as usize, p.server as usize).expect("a piece in flight has a route");
        let payload = if p.kind == IoKind::Write || p.back { p.bytes } else { 0 };
        let model = self.platform.network.inter.as_ref().unwrap_or(&self.platform.network.intra);
        let (lat, bound) = match model.transfer.segment(payload) {
            Some(seg) => net.phases(seg),
            None => (model.transfer.eval(payload), f64::INFINITY),
        };
        let lat_end = t + net.route_latency(lat, route.len());
        let (route, back) = if p.back { (back, route) } else { (route, back) };
        let piece = self.io.jobs.piece(Piece { from: lat_end, ..p });
        let done = Done { dst: p.job, recv_slot: piece, recv_ready: 0.0, src: IO_FLOW, send_slot: 0, start: t };
        let net = self.net.as_mut().expect("checked above");
        net.start_on(lat_end, (&route, &back), payload, bound, done);
        self.net_wake(lat_end)
    }

    /// A piece's flow ended at `now`: a write reaches its server; a read's
    /// request reaches its server, which serves it and sends the data
    /// back; a read's data reaches its client.
    pub(super) fn io_piece_done(&mut self, piece: u32, now: f64) -> Result<(), ReplayError> {
        let p = self.io.jobs.pieces[piece as usize];
        self.io.jobs.free_pieces.push(piece);
        let s = p.server as usize;
        let fs = self.io.fs_mut();
        let end = match (p.kind, p.back) {
            (IoKind::Write, _) => {
                fs.link_used(s, p.bytes, (p.from, now));
                fs.write_arrived(s, now, p.bytes)
            }
            (IoKind::Read, false) => {
                let served = fs.read_served(s, now, p.bytes, p.hit);
                self.server_spans();
                return self.io_flow(Piece { back: true, ..p }, served);
            }
            (IoKind::Read, true) => {
                fs.link_used(s, p.bytes, (p.from, now));
                now
            }
        };
        self.server_spans();
        let j = self.job_mut(p.job);
        let i = p.step as usize;
        j.latest[i] = j.latest[i].max(end);
        j.left[i] -= 1;
        if j.left[i] == 0 {
            let end = j.latest[i];
            self.io_step_end(p.job, p.step, end)?;
        }
        self.io_release(p.job);
        Ok(())
    }

    /// Step `i` of job `id` ended at `end`: the steps waiting for it may
    /// start, and the parties it completes complete.
    fn io_step_end(&mut self, id: u32, i: u32, end: f64) -> Result<(), ReplayError> {
        let mut ended = vec![(i, end)];
        while let Some((i, end)) = ended.pop() {
            let j = self.job_mut(id);
            j.ends[i as usize] = end;
            j.unended -= 1;
            let next = std::mem::take(&mut j.next[i as usize]);
            for &n in &next {
                let j = self.job_mut(id);
                j.waiting[n as usize] -= 1;
                if j.waiting[n as usize] == 0 {
                    let (t, step) = (j.plan.start_of(n as usize, &j.ends), j.plan.steps[n as usize].step);
                    if matches!(step, Step::Request { .. }) {
                        self.io_ready(id, n, t)?;
                    } else {
                        // Timed at once, as `io_ready` would; walked here to keep the stack flat.
                        let end = self.io_end_at_once(step, t);
                        ended.push((n, end));
                    }
                }
            }
            let completed = std::mem::take(&mut self.job_mut(id).completes[i as usize]);
            for p in completed {
                let party = self.job(id).parties[p as usize];
                self.job_mut(id).open -= 1;
                self.io_party_done(party, end)?;
            }
        }
        Ok(())
    }

    /// A party's call completed at `end`.
    fn io_party_done(&mut self, party: Party, end: f64) -> Result<(), ReplayError> {
        match party {
            Party::Request { rank, slot, since } => self.complete(rank, slot, end, end - since),
            Party::Blocking { rank, since } => {
                let rk = &mut self.ranks[rank];
                rk.stats.io_s += end - since;
                rk.stats.comm_s += end - since;
                self.io_wake(rank, end)
            }
            Party::Member { rank, since, last } => {
                let rk = &mut self.ranks[rank];
                rk.stats.io_s += end - since;
                rk.stats.wait_s += last - since;
                rk.stats.comm_s += end - last;
                self.io_wake(rank, end)
            }
        }
    }

    fn io_wake(&mut self, rank: usize, end: f64) -> Result<(), ReplayError> {
        let rk = &mut self.ranks[rank];
        rk.clock = end;
        rk.status = Status::Runnable;
        self.queue.schedule(end, Kind::Rank(rank as u32))
    }
}

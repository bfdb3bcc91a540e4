//! The discrete-event core: event queue, rank cursors, point-to-point
//! matching, requests and per-rank accounting.
//!
//! The only event is "rank r may run at time t". A rank runs its actions
//! while it is the earliest thing in the queue, so actions of all ranks
//! execute in global simulated-time order (ties by sequence number) and
//! `MPI_ANY_SOURCE` matches follow simulated time. Completion times are
//! computed when two operations match, so a blocked rank is woken exactly
//! once, at the time its wait ends.

use super::flows::{Done, Net};
use super::matching::{coll_ctx, ctx_name, Mail, MailSet, RecvPost, Requests, SendMsg, SlotState, NO_SLOT};
use super::queue::{EventQueue, Kind};
use super::timeline::Timeline;
use super::{ActionStream, ReplayError, ReplayErrorKind};
use crate::action::Action;
use crate::collectives::{self, Step};
use crate::network::{FlowSharing, P2pModel};
use crate::platform::Platform;
use crate::rank::Wait;
use crate::trace::record::{ANY_SOURCE, ANY_TAG, PROC_NULL};

/// A blocking wait in progress: its times ([`Wait`], with the accounting
/// rule) and the engine's bookkeeping.
#[derive(Debug, Clone, Copy, Default)]
struct Block {
    wait: Wait,
    pending: u32,
    /// Requests added so far: the next one's position in the call.
    adds: u32,
    /// CPU time charged once the wait ends (`[smpi] wait_s` per request), seconds.
    extra: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Runnable,
    Blocked,
    Done,
}

/// `MPI_PROC_NULL` as a destination (`Action` stores destinations as `u32`).
const NULL_DST: u32 = PROC_NULL as u32;

mod bulk;
mod coll;
mod comms;
mod cpu;
mod deadlock;
mod dvfs;
mod wait;

mod io;
mod io_jobs;
mod lanes;
mod nbc;
mod net;
mod p2p;
mod prefetch;
mod rma;
mod shm;
mod spans;

mod doing;
use doing::Doing;
mod hugepages;
mod outcome;
pub(crate) use outcome::{Outcome, RankStats};

/// A collective in progress on one rank.
#[derive(Debug, Default)]
struct Coll {
    active: bool,
    steps: Vec<Step>,
    pos: usize,
    round: u32,
    tag: i32,
    ctx: u64,
    /// Global communicator id ([`comms::Comms`]).
    comm: u32,
    name: &'static str,
    /// The schedule when generated round by round (`steps` is then empty).
    lazy: Option<collectives::Lazy>,
    /// Reductions of the round in flight, charged when it completes, seconds.
    reduce_s: f64,
}

struct Rank<'a, E> {
    stream: ActionStream<'a, E>,
    speed: f64,
    clock: f64,
    status: Status,
    doing: Doing,
    stats: RankStats,
    reqs: Requests,
    block: Block,
    coll: Coll,
    /// Mailboxes where this rank receives, one per context used.
    mail: MailSet,
    /// Nonblocking collectives in progress.
    nbc: Vec<nbc::Nbc>,
    /// Record the waits this rank resolves in `waits` ([`dvfs`]).
    track_waits: bool,
    /// Waits `(since, resume)` resolved since the rank's last step.
    waits: Vec<(f64, f64)>,
}

enum Flow {
    Continue,
    Blocked,
    Done,
}

/// The replay state of all ranks.
pub(crate) struct Engine<'a, 'p, E> {
    platform: &'p Platform,
    /// Transfers in flight when links are shared ([`Platform::links`]) or
    /// a host's concurrent transfers share its copy rate
    /// ([`crate::platform::Network::host_copy_bytes_per_s`]).
    net: Option<Net>,
    /// Links between hosts are shared ([`Platform::links`]): inter-host
    /// transfers and I/O traffic are flows of `net`.
    links: bool,
    /// Index among `net`'s extra links of host 0's copy link (host h's is
    /// this + h), when hosts share a copy rate.
    copy_links: Option<usize>,
    /// With `serial_receives` and a host copy rate: the first of one
    /// extra link per rank, its copy rate.
    recv_links: Option<usize>,
    /// With `serial_receives` and no host copy rate: each rank's copy
    /// lane ([`crate::network::lane`]).
    lanes: Option<lanes::Lanes>,
    /// Earliest network event already in the queue, seconds.
    net_next: f64,
    /// The transfers a network event ended (reused between events).
    net_ended: Vec<Done>,
    /// Where spans go, if a timeline is asked for.
    pub(crate) timeline: Option<Timeline>,
    /// OS-jitter injection: `(rank, start_s, duration_s)` → the compute
    /// block's stretched duration (jitSim's work-conserving rule).
    pub(crate) jitter: Option<super::Stretch<'a>>,
    ranks: Vec<Rank<'a, E>>,
    /// Host index of each rank, beside the ranks' state: a message's
    /// model needs both ends' hosts, and the receiver's state is
    /// otherwise not in cache yet.
    hosts: Vec<u32>,
    /// Address and size of each rank's stream state ([`prefetch`]).
    stream_at: Vec<(usize, u32)>,
    /// Communicators and their members.
    comms: comms::Comms,
    /// The unmatched sends and receives of every mailbox.
    mail: Mail,
    queue: EventQueue,
    actions: u64,
    /// Collectives evaluated for all members at once ([`bulk`]), when
    /// nothing watches single transfers (set by [`Engine::run`]; `None`:
    /// every collective runs as events).
    bulk: Option<bulk::Bulk>,
    /// [`Engine::run`] may evaluate collectives in bulk.
    pub(crate) allow_bulk: bool,
    /// The streams make no call whose outcome depends on the order in
    /// which ranks are replayed ([`super::Replay::order_free`]): a rank
    /// then goes on past the queue's next event instead of waiting for
    /// its turn, where nothing else watches single transfers either.
    pub(crate) order_free: bool,
    /// Ranks go on past the queue's next event (set by [`Engine::run`]).
    run_ahead: bool,
    /// Scratch: the steps of the collective round being posted.
    round: Vec<Step>,
    /// Scratch: their request slots.
    round_slots: Vec<u32>,
    /// Host energy, when some host has a power range ([`crate::energy`]).
    energy: Option<crate::energy::EnergyMeter>,
    /// Pstates of the ranks' blocks and their waits, under a DVFS policy
    /// or with energy metered ([`dvfs`]).
    power: Option<dvfs::Power>,
    /// The file system and collective accesses under way.
    io: io::IoState,
    /// One-sided communication: windows, locks, epochs.
    rma: rma::RmaState,
    /// Ranks left waiting at the end finish there ([`super::Replay::salvage`]).
    pub(crate) salvage: bool,
    /// Where each action and its span go ([`super::Replay::action_log`]).
    pub(crate) log: Option<super::ActionLog<'a>>,
    /// With an action log, per rank: the action running and its start (empty without).
    logged: Vec<Option<(Action, f64)>>,
    /// With a timeline, per rank: the MPI call running and its start (empty without).
    open_calls: Vec<Option<(&'static str, f64)>>,
    /// Cores of each oversubscribed host (`None` for others; empty if none is).
    cores: Vec<Option<super::cores::HostCores>>,
    oversubscribed: Vec<cpu::Oversubscribed>,
    /// MPICH's shared-memory collectives: call counts and the ones in progress.
    pub(crate) shm: shm::ShmState,
}

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Places the ranks of `streams` (rank r = index r) on `platform`.
    pub(crate) fn new(platform: &'p Platform, streams: Vec<ActionStream<'a, E>>) -> Self {
        let placement = platform.placement(streams.len() as u32);
        let cores: Vec<u32> = platform.hosts.iter().map(|h| h.cores).collect();
        let oversubscribed = cpu::oversubscribed(&placement, &cores);
        let mut ranks: Vec<Rank<'a, E>> = Vec::with_capacity(streams.len());
        hugepages::advise(ranks.as_ptr() as usize, ranks.capacity() * std::mem::size_of::<Rank<'a, E>>(), false);
        ranks.extend(streams.into_iter().zip(&placement).map(|(stream, &host)| {
            let host = host as usize;
            Rank {
                stream,
                speed: platform.hosts[host].speed_ratio / platform.hosts[host].pstate_time_scale(),
                clock: 0.0,
                status: Status::Runnable,
                doing: Doing::Start,
                stats: RankStats::default(),
                reqs: Requests::default(),
                block: Block::default(),
                coll: Coll::default(),
                mail: MailSet::default(),
                nbc: Vec::new(),
                track_waits: false,
                waits: Vec::new(),
            }
        }));
        let comms = comms::Comms::new(ranks.len());
        let stream_at: Vec<_> = ranks.iter().map(|r| prefetch::extent(&*r.stream)).collect();
        if let Some((start, bytes)) = hugepages::dense_span(&stream_at) {
            hugepages::advise(start, bytes, true);
        }
        let n_ranks = ranks.len();
        let mut extra = io::IoState::server_links(platform);
        let copy = platform.network.host_copy_bytes_per_s;
        let copy_links = copy.map(|_| extra.len());
        extra.extend(copy.into_iter().flat_map(|c| std::iter::repeat_n(c, platform.hosts.len())));
        // A rank's serial receives are a link of its own beside its host's
        // copy link when the host has one (max-min sharing among both),
        // else a lane whose turns the receiver's calls take.
        let recv_copy = platform.network.recv_copy_bytes_per_s();
        let recv_links = recv_copy.filter(|_| copy.is_some()).map(|_| extra.len());
        extra.extend(recv_copy.filter(|_| copy.is_some()).into_iter().flat_map(|c| std::iter::repeat_n(c, n_ranks)));
        let lanes = recv_copy.filter(|_| copy.is_none()).map(lanes::Lanes::new);
        let local = copy.is_some();
        let model = platform.links.clone().or_else(|| local.then(FlowSharing::unshared));
        let net = model.map(|m| Net::with_links(m, platform.hosts.len(), &extra));
        let energy = crate::energy::EnergyMeter::new(platform, &placement);
        let power = dvfs::Power::new(platform, &placement, energy.is_some());
        ranks.iter_mut().for_each(|r| r.track_waits = power.is_some());
        Engine {
            energy,
            power,
            platform,
            jitter: None,
            net,
            links: platform.links.is_some(),
            copy_links,
            recv_links,
            lanes,
            net_next: f64::INFINITY,
            net_ended: Vec::new(),
            timeline: None,
            ranks,
            hosts: placement,
            stream_at,
            comms,
            mail: Mail::default(),
            queue: EventQueue::default(),
            actions: 0,
            io: io::IoState::new(platform),
            rma: rma::RmaState::new(),
            salvage: false,
            log: None,
            logged: Vec::new(),
            open_calls: Vec::new(),
            cores: Self::cores_for(platform, &oversubscribed),
            oversubscribed,
            bulk: None,
            allow_bulk: true,
            order_free: false,
            run_ahead: false,
            round: Vec::new(),
            round_slots: Vec::new(),
            shm: shm::ShmState::default(),
        }
    }

    /// Runs every rank to its end.
    pub(crate) fn run(mut self) -> Result<Outcome, ReplayError> {
        // A salvaged replay reports where ranks wait: in the rounds the
        // event order reaches, not at a parked collective's entry.
        // Copy lanes take turns per transfer, which bulk collectives do not.
        let watched = self.net.is_some()
            || self.lanes.is_some()
            || self.jitter.is_some()
            || self.timeline.is_some()
            || self.log.is_some()
            || self.energy.is_some()
            || self.power.is_some()
            || self.salvage;
        if self.allow_bulk && !watched {
            self.bulk = Some(bulk::Bulk::default());
        }
        let shared = !self.oversubscribed.is_empty() || self.platform.collectives.shm.is_some() || !self.platform.fs.is_empty();
        self.run_ahead = self.order_free && !watched && !shared;
        for r in 0..self.ranks.len() {
            self.queue.schedule(0.0, Kind::Rank(r as u32))?;
        }
        while let Some(ev) = self.queue.pop() {
            self.prefetch_next();
            let r = match ev.kind {
                Kind::Network => {
                    self.net_event(ev.time)?;
                    continue;
                }
                Kind::Nbc(r) => {
                    self.nbc_event(r as usize, ev.time)?;
                    continue;
                }
                Kind::Cpu(h) => {
                    self.cpu_event(h as usize, ev.time)?;
                    continue;
                }
                Kind::Io(j) => {
                    self.io_event(j, ev.time)?;
                    continue;
                }
                Kind::Rank(r) => r as usize,
            };
            loop {
                match self.step(r)? {
                    Flow::Blocked | Flow::Done => break,
                    Flow::Continue => {
                        let t = self.ranks[r].clock;
                        if self.queue.is_next(t) {
                            self.queue.now = t;
                        } else if !self.run_ahead {
                            self.queue.schedule(t, Kind::Rank(r as u32))?;
                            break;
                        }
                    }
                }
            }
        }
        for r in 0..self.ranks.len() {
            self.action_ends(r);
        }
        let mut stuck = None;
        let blocked = self.ranks.iter().any(|r| r.status != Status::Done);
        if let Some(e) = (!blocked).then(|| self.unmatched()).flatten() {
            if !self.salvage {
                return Err(e);
            }
            stuck = Some(e.kind.to_string());
        }
        if blocked {
            let e = self.deadlock();
            if !self.salvage {
                return Err(e);
            }
            for rk in self.ranks.iter_mut().filter(|r| r.status != Status::Done) {
                rk.stats.end_s = rk.clock;
            }
            stuck = Some(match e.kind {
                ReplayErrorKind::Deadlock { detail, blocked, .. } => format!("{blocked} ranks: {detail}"),
                other => other.to_string(),
            });
        }
        let ranks = self.ranks.iter().zip(&self.hosts).map(|(r, &h)| (h as usize, r.stats)).collect();
        let makespan = self.ranks.iter().map(|r| r.stats.end_s).fold(0.0, f64::max);
        let energy_j = self.energy.take().map(|m| m.finish(makespan));
        let io_recorded = self.io.recorded;
        let io_servers = self.io.server_stats();
        Ok(Outcome {
            ranks,
            actions: self.actions,
            events: self.queue.popped,
            timeline: self.timeline.take(),
            energy_j,
            io_recorded,
            io_servers,
            stuck,
            oversubscribed: std::mem::take(&mut self.oversubscribed),
        })
    }

    /// The network model between world ranks `a` and `b`: [`Platform::p2p`]
    /// with the placement cached.
    fn model(&self, a: usize, b: usize) -> &'p P2pModel {
        let net = &self.platform.network;
        if self.hosts[a] == self.hosts[b] {
            &net.intra
        } else {
            net.inter.as_ref().unwrap_or(&net.intra)
        }
    }

    fn err(&self, r: usize, action: &Action, why: impl Into<String>, unsupported: bool) -> ReplayError {
        let (action, why) = (format!("{action:?}"), why.into());
        let kind = if unsupported { ReplayErrorKind::Unsupported { action, why } } else { ReplayErrorKind::Invalid { action, why } };
        ReplayError { rank: Some(r as u32), kind }
    }

    fn dst(&self, r: usize, action: &Action, dst: u32) -> Result<usize, ReplayError> {
        let n = self.ranks.len();
        if (dst as usize) < n {
            Ok(dst as usize)
        } else {
            Err(self.err(r, action, format!("destination rank {dst} is not among the {n} ranks"), false))
        }
    }

    fn src(&self, r: usize, action: &Action, src: i32) -> Result<i32, ReplayError> {
        let n = self.ranks.len();
        if src == ANY_SOURCE || (0..n as i64).contains(&(src as i64)) {
            Ok(src)
        } else {
            Err(self.err(r, action, format!("source rank {src} is not among the {n} ranks"), false))
        }
    }

    /// Runs rank `r`'s next round of a collective, or its next action.
    fn step(&mut self, r: usize) -> Result<Flow, ReplayError> {
        self.power_step(r);
        if self.ranks[r].coll.active {
            return self.coll_round(r);
        }
        self.action_ends(r);
        let action = match self.ranks[r].stream.next() {
            None => return self.finish(r),
            Some(Ok(a)) => a,
            Some(Err(e)) => return Err(ReplayError { rank: Some(r as u32), kind: ReplayErrorKind::Stream(Box::new(e)) }),
        };
        self.action_begins(r, &action);
        self.actions += 1;
        self.ranks[r].stats.actions += 1;
        if self.run_ahead && action.order_sensitive() {
            let why = "the streams were declared free of calls that depend on the replay's order (Replay::order_free)";
            return Err(self.err(r, &action, why, false));
        }
        self.act(r, &action)
    }

    fn act(&mut self, r: usize, action: &Action) -> Result<Flow, ReplayError> {
        match *action {
            Action::Compute { seconds, region } => {
                if !(seconds.is_finite() && seconds >= 0.0) {
                    return Err(self.err(r, action, "compute time must be finite and >= 0", false));
                }
                let speed = self.ranks[r].speed;
                let dt = self.block_time(r, seconds / speed, Some(region));
                return self.compute_block(r, dt, true);
            }
            // MPI_PROC_NULL peers: nothing to transfer, requests complete at once.
            Action::Send { dst: NULL_DST, .. } | Action::Recv { src: PROC_NULL, .. } => {}
            Action::Isend { dst: NULL_DST, req, .. } | Action::Irecv { src: PROC_NULL, req, .. } => {
                let slot = self.ranks[r].reqs.alloc_user(req);
                let now = self.ranks[r].clock;
                self.complete(r, slot, now, 0.0)?;
            }
            Action::Send { dst, tag, bytes, comm } => {
                let d = self.dst(r, action, dst)?;
                self.ranks[r].doing = Doing::Send { dst, tag, bytes, comm };
                if self.model(r, d).is_eager(bytes) {
                    self.isend(r, d, self.comms.user_ctx(r, comm), tag, bytes, NO_SLOT)?;
                } else {
                    let slot = self.ranks[r].reqs.alloc();
                    self.isend(r, d, self.comms.user_ctx(r, comm), tag, bytes, slot)?;
                    return Ok(self.wait_on(r, &[slot]));
                }
            }
            Action::Isend { dst, tag, bytes, comm, req } => {
                let d = self.dst(r, action, dst)?;
                let slot = self.ranks[r].reqs.alloc_user(req);
                self.isend(r, d, self.comms.user_ctx(r, comm), tag, bytes, slot)?;
            }
            Action::Buffered(ref send) => match **send {
                Action::Send { dst: NULL_DST, .. } => {}
                Action::Isend { dst: NULL_DST, req, .. } => {
                    let slot = self.ranks[r].reqs.alloc_user(req);
                    let now = self.ranks[r].clock;
                    self.complete(r, slot, now, 0.0)?;
                }
                Action::Send { dst, tag, bytes, comm } => {
                    let d = self.dst(r, action, dst)?;
                    self.ranks[r].doing = Doing::Send { dst, tag, bytes, comm };
                    self.post_send(r, d, self.comms.user_ctx(r, comm), tag, bytes, NO_SLOT, true)?;
                }
                Action::Isend { dst, tag, bytes, comm, req } => {
                    let d = self.dst(r, action, dst)?;
                    let slot = self.ranks[r].reqs.alloc_user(req);
                    self.post_send(r, d, self.comms.user_ctx(r, comm), tag, bytes, slot, true)?;
                }
                _ => return Err(self.err(r, action, "only a send can be buffered", false)),
            },
            Action::Recv { src, tag, comm, .. } => {
                let src = self.src(r, action, src)?;
                self.ranks[r].doing = Doing::Recv { src, tag, comm };
                let slot = self.ranks[r].reqs.alloc();
                self.irecv(r, src, self.comms.user_ctx(r, comm), tag, slot)?;
                return Ok(self.wait_on(r, &[slot]));
            }
            Action::Irecv { src, tag, comm, req, .. } => {
                let src = self.src(r, action, src)?;
                let slot = self.ranks[r].reqs.alloc_user(req);
                self.irecv(r, src, self.comms.user_ctx(r, comm), tag, slot)?;
                self.irecv_posted(r);
            }
            Action::Wait { req } => {
                self.ranks[r].doing = Doing::Wait { req };
                self.wait_begin(r);
                if let Some(slot) = self.ranks[r].reqs.take_user(req) {
                    self.wait_user(r, slot);
                }
                return Ok(self.wait_end(r));
            }
            Action::Waitall { ref reqs } => {
                self.ranks[r].doing = Doing::Waitall { n: reqs.len() };
                self.wait_begin(r);
                for req in reqs {
                    if let Some(slot) = self.ranks[r].reqs.take_user(*req) {
                        self.wait_user(r, slot);
                    }
                }
                return Ok(self.wait_end(r));
            }
            Action::Sendrecv { dst, send_tag, send_bytes, src, recv_tag, comm, .. } => {
                self.ranks[r].doing = Doing::Sendrecv { dst, src, comm };
                let mut slots = [NO_SLOT; 2];
                if dst != NULL_DST {
                    let d = self.dst(r, action, dst)?;
                    slots[0] = self.ranks[r].reqs.alloc();
                    self.isend(r, d, self.comms.user_ctx(r, comm), send_tag, send_bytes, slots[0])?;
                }
                if src != PROC_NULL {
                    let s = self.src(r, action, src)?;
                    slots[1] = self.ranks[r].reqs.alloc();
                    self.irecv(r, s, self.comms.user_ctx(r, comm), recv_tag, slots[1])?;
                }
                return Ok(self.wait_on(r, &slots));
            }
            Action::Barrier { .. }
            | Action::Bcast { .. }
            | Action::Reduce { .. }
            | Action::Allreduce { .. }
            | Action::Alltoall { .. }
            | Action::Alltoallv { .. }
            | Action::Allgather { .. }
            | Action::Allgatherv { .. }
            | Action::Gather { .. }
            | Action::Scatter { .. }
            | Action::Scatterv { .. }
            | Action::ReduceScatter { .. }
            | Action::Neighbor { .. }
            | Action::Scan { .. } => {
                self.coll_entered(r);
                return self.start_coll(r, action);
            }
            Action::Icoll { req, ref coll } => self.start_icoll(r, req, coll)?,
            Action::Cancel { req } => self.cancel(r, req)?,
            Action::Poll => self.busy_in_call(r, self.platform.smpi.poll_s),
            Action::RequestFree { req } => {
                let rk = &mut self.ranks[r];
                if let Some(slot) = rk.reqs.take_user(req) {
                    match rk.reqs.slots[slot as usize].state() {
                        SlotState::Pending => rk.reqs.slots[slot as usize].orphan = true,
                        _ => rk.reqs.release(slot),
                    }
                }
            }
            Action::Flops { flops } => {
                let Some(speed) = self.platform.hosts[self.hosts[r] as usize].running_speed_flops() else {
                    let host = &self.platform.hosts[self.hosts[r] as usize].name;
                    let why = format!("host {host} has no speed_flops to time TI `compute <flops>`");
                    return Err(self.err(r, action, why, false));
                };
                if !(flops.is_finite() && flops >= 0.0) {
                    return Err(self.err(r, action, "flops must be finite and >= 0", false));
                }
                let dt = self.block_time(r, flops / speed, None);
                return self.compute_block(r, dt, false);
            }
            Action::CommCreate { comm, ref members } => {
                if let Some(&m) = members.iter().find(|&&m| m as usize >= self.ranks.len()) {
                    let why = format!("member {m} is not among the {} ranks", self.ranks.len());
                    return Err(self.err(r, action, why, false));
                }
                self.comms.create(r, comm, members);
            }
            Action::Io { .. } | Action::IoInfo { .. } => return self.io(r, action),
            Action::Rma { .. } => return self.rma(r, action),
            Action::Init => {}
            Action::Finalize => return self.finish(r),
        }
        Ok(Flow::Continue)
    }

    /// Rank `r` computes for `seconds` (on its host) from its clock,
    /// stretched by OS jitter when injected.
    fn local_compute(&mut self, r: usize, seconds: f64) {
        let clock = self.ranks[r].clock;
        let dt = match self.jitter.as_mut() {
            Some(stretch) => stretch(r, clock, seconds),
            None => seconds,
        };
        self.computed(r, dt);
    }

    /// Rank `r` computes for `dt` seconds from its clock.
    fn computed(&mut self, r: usize, dt: f64) {
        self.block_done(r, self.ranks[r].clock, dt);
        let rk = &mut self.ranks[r];
        rk.clock += dt;
        rk.stats.compute_s += dt;
        if let Some(t) = self.timeline.as_mut() {
            t.span(r, "compute", rk.clock - dt, rk.clock);
        }
    }

    fn finish(&mut self, r: usize) -> Result<Flow, ReplayError> {
        let rk = &mut self.ranks[r];
        rk.status = Status::Done;
        rk.stats.end_s = rk.clock;
        rk.stream = Box::new(std::iter::empty());
        self.power_done(r);
        self.cpu_rank_done(r)?;
        Ok(Flow::Done)
    }
}

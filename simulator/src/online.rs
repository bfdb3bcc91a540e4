//! Virtual clocks for online prediction: one rank's view of the replay
//! model, advanced call by call while the application runs (DESIGN.md
//! "Online mode"; Heinrich et al. 2017, SMPI online, and Sterling et al., HPX-5's simulation
//! modality; xSim's PMPI virtual time).
//!
//! A [`VirtualRank`] holds one rank's virtual clock and applies, to the
//! facts the interposer learns at run time (its measured compute blocks,
//! the virtual send time a companion message brings, the receive post
//! time an acknowledgement brings, the entry times of a collective's
//! members), exactly the rules of the offline replay ([`crate::replay`]):
//!
//! - **Compute** `s` seconds of thread CPU time advance the clock by
//!   `s / speed_ratio` of the rank's host (stretched by OS jitter when a
//!   [`Stretch`] is given, as [`crate::replay::Replay::jitter`] does).
//!   On a host given more ranks than cores ([`VirtualRank::with_world`])
//!   whose ranks poll while they wait ([`WaitingRanks::Poll`]), a block
//!   takes `ranks_on_host / cores` times longer: the replay's fluid share
//!   while every rank of the host is alive (the replay speeds the others
//!   up once ranks finalize; online mode does not). With
//!   [`WaitingRanks::Yield`] the share depends on which ranks compute at
//!   the same time, a global view online mode lacks: each block gets a
//!   whole core.
//! - **DVFS** ([`Platform::dvfs`]): the replay's per-rank model
//!   ([`crate::dvfs::RankDvfs`]): a block runs at its region's pstate
//!   ([`VirtualRank::compute_in`]), a wait (of requests, a one-sided
//!   synchronization, a blocking collective from entry to exit) lowers
//!   the rank to the wait pstate, and each switch costs the host's
//!   `pstate_switch_s` at the slower speed. No energy online.
//! - **Nonblocking point-to-point costs**: posting an `MPI_Irecv` costs
//!   `[smpi] irecv_s`, a wait `[smpi] wait_s` per request it completes,
//!   a poll ([`Action::Poll`](crate::action::Action::Poll)) `[smpi] poll_s`, as in the replay.
//! - **Eager** (`bytes < eager_threshold_bytes` of the pair's
//!   [`P2pModel`]): the sender is busy `send_overhead(bytes)`; the receive
//!   completes at `max(send_post + transfer(bytes), recv_post +
//!   recv_overhead(bytes))` (with SMPI's `async-small-thresh`, an eager
//!   message of at least that size starts at `max(send_post, recv_post)`).
//! - **Rendezvous**: both sides complete at `max(send_post, recv_post) +
//!   transfer(bytes)`; the sender learns `recv_post` from the receiver.
//! - **Collectives** run the replay engine itself on a synthetic action
//!   set (member i: `compute(entry_i)`, the collective, `finalize`) on the
//!   communicator's members, so the very same algorithms and selector
//!   ([`crate::collectives::CollAlgs`]) decide the exit times.
//! - **Nonblocking collectives** cost nothing at their post
//!   ([`VirtualRank::icoll`]); once the members' post times are known
//!   ([`VirtualRank::icoll_matched`]) the replay engine runs the same
//!   synthetic set with the collective as [`Action::Icoll`](crate::action::Action::Icoll) followed by
//!   its wait, which gives the request's completion `c` under the replay's
//!   asynchronous progress; the wait that completes the request then
//!   moves the clock to `max(clock, c)`, communication up to the
//!   collective's span `c − post`, waiting beyond (as the replay's wait).
//! - **Accounting** splits each blocking wait of `w` seconds into
//!   `min(w, d)` communication and the rest waiting, `d` the longest model
//!   duration awaited (the rule documented in [`crate::replay`]).
//! - **MPI-IO** on the platform's file system ([`crate::io`]) with the
//!   replay's model code ([`crate::io::client`]), on this rank's own view
//!   of the servers: independent calls queue behind this rank's earlier
//!   requests only; a collective access runs ROMIO's two-phase schedule
//!   on every member's entry time, offset and bytes (gathered like a
//!   collective's entry times), so members that only make collective
//!   accesses see the same servers.
//!
//! - **Serial receives** ([`crate::platform::Network::serial_receives`]):
//!   the rendezvous transfers a rank receives from its own host (of at
//!   least `serial_receives_min_bytes`) take turns in the rank's copy
//!   lane at the call that completes them, by the rule of
//!   [`crate::network::lane`] that the replay applies too; the sender's
//!   request completes when the pair model's transfer ends.
//!
//! - **Cores shared to the end**: the replay gives the remaining ranks
//!   of a polling host more of its cores as ranks finalize, which a
//!   rank's clock cannot know while it runs. A rank's final compute block
//!   (the one before `MPI_Finalize`, with no MPI time after it) is what
//!   that speed-up reaches when every rank of the host finalizes after
//!   the others' earlier blocks have ended; at finalize, the ranks' final
//!   blocks ([`FinalBlock`]) are shared out by the replay's own fluid
//!   model ([`final_ends`]), which makes the run's ends the replay's.
//!
//! Not modelled online: link sharing among concurrent transfers
//! ([`Platform::links`]) and a host's copy rate shared by its concurrent
//! transfers ([`crate::platform::Network::host_copy_bytes_per_s`]), which
//! need a global view (each transfer gets its model's full bandwidth, as
//! in a TOML platform without them), and the servers' queues shared with
//! other ranks' independent I/O.

use std::collections::HashMap;

use serde::Serialize;

use crate::dvfs::RankDvfs;
use crate::io::FsState;
use crate::network::lane::{RecvLane, Turn};
use crate::network::rma::{RmaMove, RmaPeer};
use crate::network::P2pModel;
use crate::platform::{Platform, RmaCallKind, WaitingRanks};
use crate::rank::{arrival_after, Wait};
use crate::replay::Stretch;

mod coll;
mod cores;
mod io;
#[cfg(test)]
mod tests;

pub use coll::member_sizes;
pub use cores::final_ends;

/// One rank's virtual time so far, seconds; serialized per rank in the
/// interposer's `online.json`. `compute_s + comm_s + wait_s = end_s`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct VirtualStats {
    /// Virtual time of the rank's `MPI_Finalize` (or now), seconds.
    pub end_s: f64,
    /// Compute blocks, scaled by the host's speed ratio, seconds.
    pub compute_s: f64,
    /// Modelled communication, seconds.
    pub comm_s: f64,
    /// Blocked waiting for a late partner, seconds.
    pub wait_s: f64,
    /// Point-to-point messages sent (not counting collectives' steps).
    pub messages: u64,
    /// Bytes of those messages.
    pub bytes_sent: u64,
    /// Time in MPI-IO calls, seconds (part of `comm_s` and `wait_s`).
    pub io_s: f64,
}

/// A rank's last compute block so far, seconds of virtual time: what
/// [`final_ends`] needs to share the final blocks of a host's ranks as
/// the replay does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct FinalBlock {
    /// When the block started.
    pub start_s: f64,
    /// Its work at a whole core (after the speed ratio, DVFS and jitter), seconds.
    pub work_s: f64,
    /// When it ended, at the rank's core share.
    pub end_s: f64,
    /// When the rank's block before it ended (0: none).
    pub before_s: f64,
}

/// What a send posted: the virtual time its companion carries, and whether
/// it is eager (else the sender needs the receiver's post time, [`VirtualRank::send_matched`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SendPost {
    /// Virtual post time of the send, seconds.
    pub post_s: f64,
    /// Eager under the pair's model.
    pub eager: bool,
}

/// A nonblocking request's state.
#[derive(Debug, Clone, Copy)]
enum Req {
    /// Completes at `at` with model duration `d`.
    Done { at: f64, d: f64 },
    /// A rendezvous send waiting for the receiver's post time.
    Send { dst: u32, bytes: u64, post: f64 },
    /// A receive posted at `post`.
    Recv { post: f64 },
    /// A matched receive whose transfer takes its turn in the copy lane
    /// at the call that completes it.
    Turn(Turn),
    /// A nonblocking collective posted at `post`, waiting for its members' post times.
    Coll { post: f64 },
}

/// The kind of a pending request, for the interposer to know which
/// message (companion or acknowledgement) completes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// Unknown handle, or one already complete: nothing to exchange.
    None,
    /// A receive: needs the sender's companion ([`VirtualRank::recv_matched`]).
    Recv,
    /// A rendezvous send: needs the receiver's post time ([`VirtualRank::send_matched`]).
    RendezvousSend,
    /// A nonblocking collective: needs its members' post times ([`VirtualRank::icoll_matched`]).
    Collective,
}

/// One rank's virtual clock on a target platform.
pub struct VirtualRank<'a> {
    rank: u32,
    platform: Platform,
    speed: f64,
    /// Share of a core of a compute block: `min(1, cores / ranks)` on a host of polling ranks, else 1.
    share: f64,
    clock: f64,
    stats: VirtualStats,
    reqs: HashMap<u64, Req>,
    jitter: Option<Stretch<'a>>,
    /// This rank's view of the platform's first file system.
    fs: Option<FsState>,
    /// View and hints of this rank's open files, by file id.
    open: HashMap<u32, crate::io::client::OpenFile>,
    /// One-sided operations: per target world rank, when this rank's
    /// operations issued since its last synchronization complete, seconds.
    rma_pending: HashMap<u32, f64>,
    /// MPICH's count of shared-memory eligible collectives per
    /// communicator (this rank's ids), as the replay keeps it.
    shm_counts: HashMap<u32, crate::collectives::ShmCounter>,
    /// With `serial_receives`: the copy lane of the transfers this rank
    /// receives from its own host.
    lane: Option<RecvLane>,
    /// This rank's pstate under the platform's DVFS policy, when it
    /// changes pstates and the host has some ([`crate::dvfs`]).
    dvfs: Option<RankDvfs>,
    /// The last compute block (start 0, end 0 before the first).
    last_block: FinalBlock,
}

impl std::fmt::Debug for VirtualRank<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualRank").field("rank", &self.rank).field("clock", &self.clock).finish()
    }
}

impl<'a> VirtualRank<'a> {
    /// World rank `rank` at virtual time 0 on `platform`. Link sharing
    /// (`platform.links`) and the hosts' shared copy rate are dropped: see
    /// the module docs.
    ///
    /// # Panics
    /// With an explicit mapping that does not place `rank`.
    pub fn new(mut platform: Platform, rank: u32) -> Self {
        platform.links = None;
        platform.network.host_copy_bytes_per_s = None;
        let speed = platform.hosts[platform.host_of(rank)].speed_ratio;
        let fs = platform.fs.first().cloned().map(FsState::new);
        let lane = platform.network.recv_copy_bytes_per_s().map(RecvLane::new);
        let host = &platform.hosts[platform.host_of(rank)];
        let dvfs = (!platform.dvfs.is_static() && !host.pstates.is_empty()).then(|| RankDvfs::new(host));
        VirtualRank {
            dvfs,
            rank,
            platform,
            speed,
            share: 1.0,
            clock: 0.0,
            stats: VirtualStats::default(),
            reqs: HashMap::new(),
            jitter: None,
            fs,
            open: HashMap::new(),
            rma_pending: HashMap::new(),
            shm_counts: HashMap::new(),
            lane,
            last_block: FinalBlock::default(),
        }
    }

    /// The run has `size` ranks (default: as many as the rank's host has
    /// cores): when the placement gives the rank's host more ranks than
    /// cores and its ranks poll ([`Platform::waiting_ranks`]), compute
    /// blocks get `cores / ranks_on_host` of a core (module docs).
    ///
    /// # Panics
    /// With an explicit mapping that does not place `size` ranks.
    pub fn with_world(mut self, size: u32) -> Self {
        let host = self.platform.host_of(self.rank);
        let on_host = self.platform.placement(size).iter().filter(|&&h| h as usize == host).count() as f64;
        let cores = self.platform.hosts[host].cores as f64;
        self.share = match self.platform.waiting_ranks {
            WaitingRanks::Poll if on_host > cores => cores / on_host,
            _ => 1.0,
        };
        self
    }

    /// Share of a core the rank's compute blocks get (1: a core of its own).
    pub fn core_share(&self) -> f64 {
        self.share
    }

    /// Exposes compute blocks and eager-send overheads to OS jitter
    /// (default: none), as [`crate::replay::Replay::jitter`]; the stretcher
    /// is called with this rank's world rank.
    pub fn with_jitter(mut self, jitter: Stretch<'a>) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// The virtual clock, seconds.
    pub fn now(&self) -> f64 {
        self.clock
    }

    /// Totals so far, with `end_s` = now.
    pub fn stats(&self) -> VirtualStats {
        VirtualStats { end_s: self.clock, ..self.stats }
    }

    /// The rank's last compute block, when nothing was charged after it
    /// (the clock is at its end): at `MPI_Finalize`, its final block.
    pub fn final_block(&self) -> Option<FinalBlock> {
        (self.last_block.end_s == self.clock).then_some(self.last_block)
    }

    /// The platform the clock runs on (link sharing and the hosts' shared
    /// copy rate dropped, [`VirtualRank::new`]).
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// The host speed ratio compute blocks are divided by.
    pub fn speed_ratio(&self) -> f64 {
        self.speed
    }

    fn model(&self, a: u32, b: u32) -> &P2pModel {
        self.platform.p2p(a, b)
    }

    fn stretch(&mut self, start: f64, d: f64) -> f64 {
        match self.jitter.as_mut() {
            Some(s) => s(self.rank as usize, start, d),
            None => d,
        }
    }

    /// A compute block of `seconds` of measured thread CPU time; divided
    /// by the speed ratio and the core share ([`VirtualRank::with_world`]).
    pub fn compute(&mut self, seconds: f64) {
        self.compute_in(seconds, None);
    }

    /// [`VirtualRank::compute`] of a block of region id `region` (as
    /// `Action::Compute { region, .. }`), which a DVFS policy may run at a
    /// pstate of its own, as in the replay ([`crate::dvfs`]).
    pub fn compute_in(&mut self, seconds: f64, region: Option<u64>) {
        let mut base = seconds.max(0.0) / self.speed;
        let h = self.platform.host_of(self.rank);
        if let Some(d) = self.dvfs.as_mut() {
            let host = &self.platform.hosts[h];
            base = d.compute(host, self.platform.dvfs.block_pstate(host, region), self.clock, base);
        }
        let work = self.stretch(self.clock, base);
        let dt = work / self.share;
        let before_s = self.last_block.end_s;
        self.last_block = FinalBlock { start_s: self.clock, work_s: work, end_s: self.clock + dt, before_s };
        self.clock += dt;
        self.stats.compute_s += dt;
        if let Some(d) = self.dvfs.as_mut() {
            d.block_ended(&self.platform.hosts[h], self.clock);
        }
    }

    /// The rank waited in MPI from `since_s` to `resume_s` ([`crate::dvfs`]).
    fn waited(&mut self, since_s: f64, resume_s: f64) {
        if let Some(d) = self.dvfs.as_mut() {
            let host = &self.platform.hosts[self.platform.host_of(self.rank)];
            d.wait(host, &self.platform.dvfs, since_s, resume_s);
        }
    }

    /// Posts a send of `bytes` to world rank `dst` at the clock; an eager
    /// one then charges the send overhead.
    pub fn send(&mut self, dst: u32, bytes: u64) -> SendPost {
        self.send_with(dst, bytes, false)
    }

    /// [`VirtualRank::send`]; `buffered` (`MPI_Bsend`): eager at any size,
    /// as the replay's [`Action::Buffered`](crate::action::Action::Buffered).
    fn send_with(&mut self, dst: u32, bytes: u64, buffered: bool) -> SendPost {
        let model = self.model(self.rank, dst);
        let (eager, o) = (buffered || model.is_eager(bytes), model.send_overhead.eval(bytes));
        let post = self.clock;
        self.stats.messages += 1;
        self.stats.bytes_sent += bytes;
        if eager {
            let o = self.stretch(post, o);
            self.busy(o);
        }
        SendPost { post_s: post, eager }
    }

    /// [`VirtualRank::send`] creating request `req`: an eager one is
    /// complete after its overhead, a rendezvous one when
    /// [`VirtualRank::send_matched`] gives the receiver's post time.
    pub fn isend(&mut self, req: u64, dst: u32, bytes: u64) -> SendPost {
        self.isend_with(req, dst, bytes, false)
    }

    /// [`VirtualRank::isend`] of a buffered send (`MPI_Bsend`, `MPI_Ibsend`,
    /// a started `MPI_Bsend_init`): eager at any size.
    pub fn isend_buffered(&mut self, req: u64, dst: u32, bytes: u64) -> SendPost {
        self.isend_with(req, dst, bytes, true)
    }

    fn isend_with(&mut self, req: u64, dst: u32, bytes: u64, buffered: bool) -> SendPost {
        let s = self.send_with(dst, bytes, buffered);
        let state = if s.eager { Req::Done { at: self.clock, d: 0.0 } } else { Req::Send { dst, bytes, post: s.post_s } };
        self.reqs.insert(req, state);
        s
    }

    /// Posts a receive creating request `req` at the clock; returns its
    /// virtual post time. The rank is then busy `[smpi] irecv_s`, as in
    /// the replay.
    pub fn irecv(&mut self, req: u64) -> f64 {
        let post = self.recv_post(req);
        self.busy(self.platform.smpi.irecv_s);
        post
    }

    /// Posts the receive of a blocking call (`MPI_Recv`, the receive half
    /// of `MPI_Sendrecv`) as request `req`; returns its virtual post time.
    /// Costs nothing here: the receive overhead is the model's.
    pub fn recv_post(&mut self, req: u64) -> f64 {
        self.reqs.insert(req, Req::Recv { post: self.clock });
        self.clock
    }

    /// What request `req` still needs (see [`Pending`]).
    pub fn pending(&self, req: u64) -> Pending {
        match self.reqs.get(&req) {
            Some(Req::Recv { .. }) => Pending::Recv,
            Some(Req::Send { .. }) => Pending::RendezvousSend,
            Some(Req::Coll { .. }) => Pending::Collective,
            _ => Pending::None,
        }
    }

    /// The state a receive posted at `recv_post` reaches when it matches
    /// a message of `bytes` from `src` sent at `send_post`: done at its
    /// completion, or a turn in the copy lane ([`Req::Turn`]). An eager
    /// receive's overhead `o_r` meets the OS jitter of its interval from
    /// `recv_post`, as in the offline replay's `recv_overhead`.
    fn recv_done(&mut self, src: u32, bytes: u64, send_post: f64, recv_post: f64, buffered: bool) -> Req {
        let model = self.model(src, self.rank);
        let t = model.transfer.eval(bytes);
        let eager = buffered || model.is_eager(bytes);
        let mut o_r = 0.0;
        if eager {
            o_r = model.recv_overhead.eval(bytes);
            if o_r > 0.0 {
                o_r = self.stretch(recv_post, o_r);
            }
        } else if self.lane.is_some() {
            let same_host = self.platform.host_of(src) == self.platform.host_of(self.rank);
            if let Some(turn) = self.platform.network.receive_turn(model, same_host, bytes, send_post.max(recv_post)) {
                return Req::Turn(turn);
            }
        }
        let (at, d) = arrival_after(t, self.platform.smpi.async_small_thresh_bytes, (bytes, send_post, eager), recv_post, o_r);
        Req::Done { at, d }
    }

    /// Request `req`, a receive, matched a message of `bytes` from world
    /// rank `src` sent at virtual time `send_post_s`. Returns the
    /// receive's post time (for the sender, when the message is
    /// rendezvous) and whether it is eager; `None` for an unknown request.
    pub fn recv_matched(&mut self, req: u64, src: u32, bytes: u64, send_post_s: f64) -> Option<(f64, bool)> {
        self.recv_matched_with(req, src, bytes, send_post_s, false)
    }

    /// [`VirtualRank::recv_matched`] of a message sent `buffered`
    /// ([`VirtualRank::isend_buffered`]: eager at any size).
    pub fn recv_matched_with(&mut self, req: u64, src: u32, bytes: u64, send_post_s: f64, buffered: bool) -> Option<(f64, bool)> {
        let Some(&Req::Recv { post }) = self.reqs.get(&req) else { return None };
        let state = self.recv_done(src, bytes, send_post_s, post, buffered);
        self.reqs.insert(req, state);
        Some((post, buffered || self.model(src, self.rank).is_eager(bytes)))
    }

    /// Request `req`, a rendezvous send, was received by a receive posted
    /// at virtual time `recv_post_s`: it completes when the pair model's
    /// transfer ends. False for an unknown request.
    pub fn send_matched(&mut self, req: u64, recv_post_s: f64) -> bool {
        let Some(&Req::Send { dst, bytes, post }) = self.reqs.get(&req) else { return false };
        let t = self.model(self.rank, dst).transfer.eval(bytes);
        let (at, d) = arrival_after(t, None, (bytes, post, false), recv_post_s, 0.0);
        self.reqs.insert(req, Req::Done { at, d });
        true
    }

    /// Blocks until every request of `reqs` completed (`MPI_Wait`,
    /// `MPI_Waitall`, a successful `MPI_Test*`): the clock moves to the
    /// latest completion, and the requests are forgotten. Unknown
    /// handles (`MPI_REQUEST_NULL`, `MPI_PROC_NULL` peers) complete at once;
    /// a request still pending (its companion never came) counts as
    /// complete now. Then the rank is busy `[smpi] wait_s` per request of
    /// `reqs`, as the replay charges each request of the application's
    /// wait it knows (a cancelled one included).
    pub fn wait(&mut self, reqs: &[u64]) {
        self.complete(reqs);
        self.busy(reqs.len() as f64 * self.platform.smpi.wait_s);
    }

    /// Requests `reqs` completed in a blocking call (`MPI_Send`,
    /// `MPI_Recv`, `MPI_Sendrecv`) or were freed: [`VirtualRank::wait`]
    /// without its per-request cost. Returns the number of known requests.
    pub fn complete(&mut self, reqs: &[u64]) -> usize {
        let mut b = Wait::at(self.clock);
        let mut known = 0;
        let mut turns = Vec::new();
        for (pos, r) in reqs.iter().enumerate() {
            let state = self.reqs.remove(r);
            known += state.is_some() as usize;
            match state {
                Some(Req::Done { at, d }) => b.add(at, d),
                Some(Req::Turn(t)) => turns.push((pos as u32, t, ())),
                _ => {}
            }
        }
        if let Some(lane) = self.lane.as_mut() {
            lane.take_turns(&mut turns, |(), at, d| b.add(at, d));
        }
        self.resolve(b);
        known
    }

    fn resolve(&mut self, b: Wait) {
        self.waited(b.since, b.resume);
        self.settle(b);
    }

    /// [`VirtualRank::resolve`]'s accounting, without the DVFS wait.
    fn settle(&mut self, b: Wait) {
        let (comm, wait) = b.split();
        self.stats.comm_s += comm;
        self.stats.wait_s += wait;
        self.clock = b.resume;
    }

    /// A blocking receive posted now matched a message of `bytes` from
    /// `src` sent at `send_post_s`; the clock moves to its completion.
    /// Returns the post time and eagerness as [`VirtualRank::recv_matched`].
    pub fn recv(&mut self, src: u32, bytes: u64, send_post_s: f64) -> (f64, bool) {
        const TMP: u64 = u64::MAX;
        self.recv_post(TMP);
        let out = self.recv_matched(TMP, src, bytes, send_post_s).expect("posted above");
        self.complete(&[TMP]);
        out
    }

    /// A blocking rendezvous send posted at `s` (from [`VirtualRank::send`])
    /// was received by a receive posted at `recv_post_s`; the clock moves
    /// to its completion.
    pub fn send_done(&mut self, dst: u32, bytes: u64, s: SendPost, recv_post_s: f64) {
        if s.eager {
            return;
        }
        let t = self.model(self.rank, dst).transfer.eval(bytes);
        let mut b = Wait::at(self.clock);
        let (at, d) = arrival_after(t, None, (bytes, s.post_s, false), recv_post_s, 0.0);
        b.add(at, d);
        self.resolve(b);
    }

    /// A one-sided call of `kind`: the rank is busy its CPU time
    /// ([`Smpi::rma_call_cost`](crate::platform::Smpi::rma_call_cost)), as
    /// in the replay ([`VirtualRank::rma_move`] and
    /// [`VirtualRank::rma_settle`] include it).
    pub fn rma_call(&mut self, kind: RmaCallKind) {
        self.busy(self.platform.smpi.rma_call_cost(kind));
    }

    /// A poll ([`Action::Poll`](crate::action::Action::Poll)): the rank is busy `[smpi] poll_s`, as in
    /// the replay.
    pub fn poll(&mut self) {
        self.busy(self.platform.smpi.poll_s);
    }

    /// The rank is busy `s` seconds in MPI (communication time).
    fn busy(&mut self, s: f64) {
        self.clock += s;
        self.stats.comm_s += s;
    }

    /// A one-sided data movement of `bytes` to world rank `target` at the
    /// clock, as the offline replay charges it ([`RmaMove::cost`]); it
    /// completes at the next [`VirtualRank::rma_settle`] covering `target`.
    pub fn rma_move(&mut self, target: u32, kind: RmaMove, bytes: u64) {
        self.rma_call(RmaCallKind::Other);
        let peer = RmaPeer::of(self.rank, target, self.platform.host_of(self.rank) == self.platform.host_of(target));
        let cost = kind.cost(self.model(self.rank, target), bytes, peer);
        let done = self.clock + cost.done_after_s;
        self.busy(cost.busy_s);
        let sent = u64::from(peer != RmaPeer::Itself);
        self.stats.messages += sent;
        self.stats.bytes_sent += sent * kind.bytes_sent(bytes);
        let p = self.rma_pending.entry(target).or_insert(done);
        *p = p.max(done);
    }

    /// A synchronization of `kind` that completes this rank's one-sided
    /// operations to `target` (all targets for `None`): the clock moves to
    /// their completion, as communication time.
    pub fn rma_settle(&mut self, target: Option<u32>, kind: RmaCallKind) {
        self.rma_call(kind);
        let until = match target {
            Some(t) => self.rma_pending.remove(&t).unwrap_or(0.0),
            None => self.rma_pending.drain().map(|(_, at)| at).fold(0.0, f64::max),
        };
        if until > self.clock {
            self.waited(self.clock, until);
            self.stats.comm_s += until - self.clock;
            self.clock = until;
        }
    }
}

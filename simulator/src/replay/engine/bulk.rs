//! Blocking collectives evaluated for all members at once. A collective
//! whose rounds line up ([`collectives::Aligned`]: the recursive-doubling
//! all-reduce, with MPICH's fold on a communicator that is not a power of
//! two, and the dissemination barrier) parks each member as it enters;
//! when the last one enters, every member's rounds are evaluated together, round by
//! round over a compact copy of their clocks and counters, with the
//! point-to-point rules of the event path
//! ([`crate::network::P2pModel`]'s semantics, as `post_send`, `irecv`,
//! `matched` and the wait apply them), and each member is woken at its
//! exit. No member can leave before the last one enters (every member's
//! result depends on every member's entry), so nothing is lost by
//! waiting; the events of the rounds are not queued at all.
//!
//! Only when nothing else watches a transfer or a rank's time: no shared
//! links or copy rates, OS jitter, timeline, action log or energy meter,
//! and not in a salvaged replay (whose ranks end where they wait).

use std::collections::HashMap;

use super::*;
use crate::collectives::Aligned;

/// Members parked per global communicator, and scratch arrays.
#[derive(Default)]
pub(super) struct Bulk {
    entered: HashMap<u32, u32>,
    members: Vec<Member>,
    /// Per round member: send post time, receive post time (= wait
    /// start), whether its send is eager.
    post: Vec<f64>,
    recv_post: Vec<f64>,
    eager: Vec<bool>,
}

/// A member's host, clock and the counters a collective changes (a
/// copy of its rank's, written back at the end).
#[derive(Debug, Clone, Copy)]
struct Member {
    host: u32,
    clock: f64,
    compute_s: f64,
    comm_s: f64,
    wait_s: f64,
    messages: u64,
    bytes_sent: u64,
}

/// The point-to-point rules of the event path, for the members' copies.
struct Rules {
    /// The costs of one message within a host and between hosts.
    intra: Priced,
    inter: Priced,
    async_small_thresh: Option<u64>,
    /// The reduction after each round that receives data, seconds.
    reduce: f64,
    bytes: u64,
}

/// A [`P2pModel`] at the collective's message size: whether the message
/// is eager, the send and receive overheads and the transfer time, seconds.
#[derive(Debug, Clone, Copy)]
struct Priced {
    eager: bool,
    o_s: f64,
    o_r: f64,
    transfer: f64,
}

impl Priced {
    fn new(model: &P2pModel, bytes: u64) -> Priced {
        Priced {
            eager: model.is_eager(bytes),
            o_s: model.send_overhead.eval(bytes),
            o_r: model.recv_overhead.eval(bytes),
            transfer: model.transfer.eval(bytes),
        }
    }
}

impl Rules {
    fn model(&self, a: &Member, b: &Member) -> &Priced {
        if a.host == b.host {
            &self.intra
        } else {
            &self.inter
        }
    }

    /// A reduction as local compute.
    fn reduced(&self, m: &mut Member) {
        if self.reduce > 0.0 {
            m.clock += self.reduce;
            m.compute_s += self.reduce;
        }
    }

    /// `post_send` of a message from `m` to `to` at `m`'s clock: its post
    /// time and whether it is eager (its overhead then moves the clock).
    fn send(&self, m: &mut Member, to: &Member) -> (f64, bool) {
        let model = self.model(m, to);
        let eager = model.eager;
        m.messages += 1;
        m.bytes_sent = m.bytes_sent.saturating_add(self.bytes);
        let post = m.clock;
        if eager {
            let o = model.o_s;
            m.clock += o;
            m.comm_s += o;
        }
        (post, eager)
    }

    /// `matched`'s completion of the receive on `to` (posted at
    /// `recv_post`) of a message from `from` sent as `sent`, and its
    /// transfer part.
    fn arrival(&self, from: &Member, to: &Member, (post, eager): (f64, bool), recv_post: f64) -> (f64, f64) {
        let model = self.model(from, to);
        let o_r = if eager { model.o_r } else { 0.0 };
        crate::rank::arrival_after(model.transfer, self.async_small_thresh, (self.bytes, post, eager), recv_post, o_r)
    }

    /// One message from `a` to `b`, whose receive was posted at
    /// `recv_post`, as the only step of a round on both: `a` waits for its
    /// send, `b` for the message.
    fn one_message(&self, a: &mut Member, b: &mut Member, recv_post: f64) {
        let sent = self.send(a, b);
        let since = a.clock;
        let send_end = self.sent(a, b, sent, since, recv_post);
        resolved(a, since, [send_end, NONE]);
        let arrival = self.arrival(a, b, sent, recv_post);
        resolved(b, recv_post, [arrival, NONE]);
    }

    /// The completion of the send from `from` (posted as `sent`; its
    /// clock after posting `since`) to `to`, whose receive was posted at
    /// `recv_post`, and its transfer part.
    fn sent(&self, from: &Member, to: &Member, (post, eager): (f64, bool), since: f64, recv_post: f64) -> (f64, f64) {
        if eager {
            return (since, 0.0);
        }
        crate::rank::arrival_after(self.model(from, to).transfer, None, (self.bytes, post, false), recv_post, 0.0)
    }
}

/// `resolve` of a wait begun at `since` that ends at the latest of `ends`
/// (completion times and their transfer parts).
fn resolved(m: &mut Member, since: f64, ends: [(f64, f64); 2]) {
    let resume = ends.iter().fold(since, |r, e| r.max(e.0));
    let d = ends.iter().fold(0.0f64, |d, e| d.max(e.1));
    let block = Block { wait: Wait { since, resume, d }, pending: 0, adds: 0, extra: 0.0 };
    wait::settle(&block, &mut m.clock, &mut m.comm_s, &mut m.wait_s);
}

/// No completion: an entry of `ends` that never binds.
const NONE: (f64, f64) = (f64::NEG_INFINITY, 0.0);

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Whether rank `r`'s collective, just set up, is evaluated in bulk.
    pub(super) fn bulk_eligible(&self, r: usize) -> bool {
        self.bulk.is_some() && self.ranks[r].coll.lazy.and_then(|l| l.aligned()).is_some()
    }

    /// Parks rank `r` in its collective; the last member to enter runs
    /// every member's rounds ([`Self::bulk_run`]).
    pub(super) fn bulk_enter(&mut self, r: usize) -> Result<Flow, ReplayError> {
        let c = &self.ranks[r].coll;
        let (g, name) = (c.comm, c.name);
        self.ranks[r].status = Status::Blocked;
        self.ranks[r].doing = Doing::Coll { name, round: 1 };
        let bulk = self.bulk.as_mut().expect("eligible");
        let count = bulk.entered.entry(g).or_insert(0);
        *count += 1;
        if *count < self.comms.size(g) {
            return Ok(Flow::Blocked);
        }
        bulk.entered.remove(&g);
        self.bulk_run(g)?;
        Ok(Flow::Blocked)
    }

    /// Evaluates the rounds of communicator `g`'s collective, which every
    /// member has entered, and wakes each member at its exit.
    fn bulk_run(&mut self, g: u32) -> Result<(), ReplayError> {
        let n = self.comms.size(g);
        let world: Vec<usize> = (0..n).map(|i| self.comms.world_rank(g, i) as usize).collect();
        let first = &self.ranks[world[0]].coll;
        let plan = first.lazy.and_then(|l| l.aligned()).expect("eligible");
        if let Some(&w) = world.iter().find(|&&w| self.ranks[w].coll.lazy.and_then(|l| l.aligned()) != Some(plan)) {
            let (a, b) = (first.name, self.ranks[w].coll.name);
            let why = format!("entered {b} while rank {} entered {a} on the same communicator, with other sizes or algorithms", world[0]);
            return Err(ReplayError { rank: Some(w as u32), kind: ReplayErrorKind::Invalid { action: b.to_string(), why } });
        }
        let net = &self.platform.network;
        let rules = Rules {
            intra: Priced::new(&net.intra, plan.bytes),
            inter: Priced::new(net.inter.as_ref().unwrap_or(&net.intra), plan.bytes),
            async_small_thresh: self.platform.smpi.async_small_thresh_bytes,
            reduce: self.platform.collectives.reduce.eval(plan.reduce_bytes),
            bytes: plan.bytes,
        };
        let mut bulk = self.bulk.take().expect("eligible");
        bulk.members.clear();
        bulk.members.extend(world.iter().map(|&w| {
            let rk = &self.ranks[w];
            let s = &rk.stats;
            Member {
                host: self.hosts[w],
                clock: rk.clock,
                compute_s: s.compute_s,
                comm_s: s.comm_s,
                wait_s: s.wait_s,
                messages: s.messages,
                bytes_sent: s.bytes_sent,
            }
        }));
        evaluate(&rules, &plan, &mut bulk);
        for (m, &w) in bulk.members.iter().zip(&world) {
            let rk = &mut self.ranks[w];
            rk.clock = m.clock;
            let s = &mut rk.stats;
            (s.compute_s, s.comm_s, s.wait_s, s.messages, s.bytes_sent) = (m.compute_s, m.comm_s, m.wait_s, m.messages, m.bytes_sent);
            rk.coll.active = false;
            rk.coll.lazy = None;
            rk.status = Status::Runnable;
        }
        self.bulk = Some(bulk);
        for &w in &world {
            self.queue.schedule(self.ranks[w].clock, Kind::Rank(w as u32))?;
        }
        Ok(())
    }
}

/// Every member's part of the collective, on `bulk.members` (by
/// communicator rank): the fold's first messages, the rounds, the fold's
/// last messages, and the reduction of the last round.
fn evaluate(rules: &Rules, plan: &Aligned, bulk: &mut Bulk) {
    let rem = plan.rem as usize;
    let Bulk { members, post, recv_post, eager, .. } = bulk;
    let index = |nu: u32| plan.member(nu) as usize;
    // The fold's first messages: the even rank of each pair sends its
    // buffer to the odd one, then posts its receive of the result.
    let mut result_posts = Vec::with_capacity(rem);
    for j in 0..rem {
        let (e, o) = (2 * j, 2 * j + 1);
        let (mut me, mut mo) = (members[e], members[o]);
        let recv_post = mo.clock;
        rules.one_message(&mut me, &mut mo, recv_post);
        result_posts.push(me.clock);
        (members[e], members[o]) = (me, mo);
    }
    // The rounds, among the round members (the odd rank of a pair
    // reduces the pair's first message before its first round).
    let count = plan.round_members();
    for k in 0..plan.rounds {
        post.clear();
        recv_post.clear();
        eager.clear();
        for nu in 0..count {
            let i = index(nu);
            if k > 0 || (nu as usize) < rem {
                rules.reduced(&mut members[i]);
            }
            let to = members[index(plan.peers(nu, k).0)];
            let (p, e) = rules.send(&mut members[i], &to);
            post.push(p);
            recv_post.push(members[i].clock);
            eager.push(e);
        }
        for nu in 0..count {
            let (to, from) = plan.peers(nu, k);
            let i = index(nu);
            let (me, mt, mf) = (members[i], members[index(to)], members[index(from)]);
            let (nu, to, from) = (nu as usize, to as usize, from as usize);
            let since = recv_post[nu];
            let send_end = rules.sent(&me, &mt, (post[nu], eager[nu]), since, recv_post[to]);
            let arrival = rules.arrival(&mf, &me, (post[from], eager[from]), since);
            resolved(&mut members[i], since, [send_end, arrival]);
        }
    }
    // The fold's last messages: the odd rank, after its last reduction,
    // sends the result to the even one.
    for (j, &recv_post_e) in result_posts.iter().enumerate() {
        let (e, o) = (2 * j, 2 * j + 1);
        let (mut me, mut mo) = (members[e], members[o]);
        rules.reduced(&mut mo);
        rules.one_message(&mut mo, &mut me, recv_post_e);
        (members[e], members[o]) = (me, mo);
    }
    // The reduction of the last round, on members that received in it.
    if plan.rounds > 0 {
        for nu in rem as u32..count {
            rules.reduced(&mut members[index(nu)]);
        }
    }
}

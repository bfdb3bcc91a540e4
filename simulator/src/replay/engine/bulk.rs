//! Blocking collectives evaluated for all members at once. A collective
//! whose rounds line up ([`collectives::Aligned`]: the recursive-doubling
//! all-reduce, with MPICH's fold on a communicator that is not a power of
//! two, and the dissemination barrier) parks each member as it enters; when the last
//! one enters, every member's rounds are evaluated together, round by
//! round over arrays, with the point-to-point rules of the event path
//! ([`crate::network::P2pModel`]'s semantics, as `post_send`, `irecv`,
//! `matched` and the wait apply them), and each member is woken at its
//! exit. No member can leave before the last one enters (every member's
//! result depends on every member's entry), so nothing is lost by
//! waiting; the events of the rounds are not queued at all.
//!
//! Only when nothing else watches a transfer or a rank's time: no shared
//! links or copy rates, OS jitter, timeline, action log or energy meter.

use std::collections::HashMap;

use super::*;
use crate::collectives::Aligned;

/// Members parked per global communicator, and scratch arrays.
#[derive(Default)]
pub(super) struct Bulk {
    entered: HashMap<u32, u32>,
    /// Per member: send post time, receive post time (= wait start),
    /// whether its send is eager.
    post: Vec<f64>,
    recv_post: Vec<f64>,
    eager: Vec<bool>,
}

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
        let members: Vec<usize> = (0..n).map(|i| self.comms.world_rank(g, i) as usize).collect();
        let first = &self.ranks[members[0]].coll;
        let plan = first.lazy.and_then(|l| l.aligned()).expect("eligible");
        if let Some(&w) = members.iter().find(|&&w| self.ranks[w].coll.lazy.and_then(|l| l.aligned()) != Some(plan)) {
            let (a, b) = (first.name, self.ranks[w].coll.name);
            let why = format!("entered {b} while rank {} entered {a} on the same communicator, with other sizes or algorithms", members[0]);
            return Err(ReplayError { rank: Some(w as u32), kind: ReplayErrorKind::Invalid { action: b.to_string(), why } });
        }
        let mut bulk = self.bulk.take().expect("eligible");
        let reduce = self.platform.collectives.reduce.eval(plan.reduce_bytes);
        // Round member ν is world rank round[ν]; the pairs of the fold are
        // (even, odd) = (pairs[j], round[j]).
        let round: Vec<usize> = (0..plan.round_members()).map(|nu| members[plan.member(nu) as usize]).collect();
        let pairs: Vec<usize> = (0..plan.rem as usize).map(|j| members[2 * j]).collect();
        let folded = self.bulk_fold_in(&pairs, &round, &plan);
        for k in 0..plan.rounds {
            self.bulk_posts(&round, &plan, k, reduce, &mut bulk);
            self.bulk_waits(&round, &plan, k, &bulk);
        }
        self.bulk_fold_out(&pairs, &round, &folded, reduce, &plan);
        self.bulk = Some(bulk);
        for (nu, &w) in round.iter().enumerate() {
            if plan.rounds > 0 && reduce > 0.0 && nu >= pairs.len() {
                self.computed(w, reduce);
            }
        }
        for &w in &members {
            let rk = &mut self.ranks[w];
            rk.coll.active = false;
            rk.coll.lazy = None;
            rk.status = Status::Runnable;
            let t = rk.clock;
            self.queue.schedule(t, Kind::Rank(w as u32))?;
        }
        Ok(())
    }

    /// Posts a send of `bytes` from `w` to `to` at `w`'s clock; returns
    /// its post time and whether it is eager (its overhead then moves the
    /// clock).
    fn bulk_send(&mut self, w: usize, to: usize, bytes: u64) -> (f64, bool) {
        let model = self.model(w, to);
        let eager = model.is_eager(bytes);
        let rk = &mut self.ranks[w];
        rk.stats.messages += 1;
        rk.stats.bytes_sent = rk.stats.bytes_sent.saturating_add(bytes);
        let post = rk.clock;
        if eager {
            let o = model.send_overhead.eval(bytes);
            rk.clock += o;
            rk.stats.comm_s += o;
        }
        (post, eager)
    }

    /// When a message of `bytes` from `from` (posted at `post`, eager or
    /// not) to `w`, whose receive was posted at `recv_post`, completes the
    /// receive, and its transfer part (`matched`'s rules).
    fn bulk_arrival(&self, from: usize, w: usize, bytes: u64, (post, eager): (f64, bool), recv_post: f64) -> (f64, f64) {
        let model = self.model(from, w);
        let t = model.transfer.eval(bytes);
        if !eager {
            return (post.max(recv_post) + t, t);
        }
        let o_r = model.recv_overhead.eval(bytes);
        let start = match self.platform.smpi.async_small_thresh_bytes {
            Some(th) if bytes >= th => post.max(recv_post),
            _ => post,
        };
        ((start + t).max(recv_post + o_r), t.max(o_r))
    }

    /// When a send of `bytes` from `w` to `to` (posted at `post`, eager or
    /// not; `since`: `w`'s clock after posting) completes, given the
    /// receive's post time, and its transfer part.
    fn bulk_sent(&self, w: usize, to: usize, bytes: u64, (post, eager): (f64, bool), since: f64, recv_post: f64) -> (f64, f64) {
        if eager {
            return (since, 0.0);
        }
        let t = self.model(w, to).transfer.eval(bytes);
        (post.max(recv_post) + t, t)
    }

    /// Ends `w`'s wait, begun at `since`, at the latest of `ends` (each a
    /// completion time and its transfer part), as the event path's wait.
    fn bulk_resolve(&mut self, w: usize, since: f64, ends: &[(f64, f64)]) {
        let resume = ends.iter().fold(since, |r, e| r.max(e.0));
        let d = ends.iter().fold(0.0f64, |d, e| d.max(e.1));
        let rk = &mut self.ranks[w];
        rk.block = Block { since, resume, d, pending: 0, extra: 0.0 };
        resolve(rk);
    }

    /// The fold's first messages: the even rank of each pair sends its
    /// buffer to the odd one, which receives it. Returns, per pair, the
    /// even rank's send and the post time of its receive of the result
    /// (posted as soon as its send completed).
    fn bulk_fold_in(&mut self, pairs: &[usize], round: &[usize], plan: &Aligned) -> Vec<f64> {
        let bytes = plan.bytes;
        let mut result_posts = Vec::with_capacity(pairs.len());
        for (&e, &o) in pairs.iter().zip(round) {
            let sent = self.bulk_send(e, o, bytes);
            let since = self.ranks[e].clock;
            let recv_post = self.ranks[o].clock;
            let send_end = self.bulk_sent(e, o, bytes, sent, since, recv_post);
            self.bulk_resolve(e, since, &[send_end]);
            let arrival = self.bulk_arrival(e, o, bytes, sent, recv_post);
            self.bulk_resolve(o, recv_post, &[arrival]);
            result_posts.push(self.ranks[e].clock);
        }
        result_posts
    }

    /// The fold's last messages: the odd rank of each pair, after the
    /// reduction of its last round, sends the result to the even one,
    /// whose receive was posted at `result_posts`.
    fn bulk_fold_out(&mut self, pairs: &[usize], round: &[usize], result_posts: &[f64], reduce: f64, plan: &Aligned) {
        let bytes = plan.bytes;
        for ((&e, &o), &recv_post) in pairs.iter().zip(round).zip(result_posts) {
            if reduce > 0.0 {
                self.computed(o, reduce);
            }
            let sent = self.bulk_send(o, e, bytes);
            let since = self.ranks[o].clock;
            let send_end = self.bulk_sent(o, e, bytes, sent, since, recv_post);
            self.bulk_resolve(o, since, &[send_end]);
            let arrival = self.bulk_arrival(o, e, bytes, sent, recv_post);
            self.bulk_resolve(e, recv_post, &[arrival]);
        }
    }

    /// Round `k`'s posts: each round member charges the reduction of its
    /// previous round (the first round's too for the odd rank of a pair),
    /// posts its send (an eager send's overhead moves its clock) and then
    /// its receive.
    fn bulk_posts(&mut self, round: &[usize], plan: &Aligned, k: u32, reduce: f64, bulk: &mut Bulk) {
        bulk.post.clear();
        bulk.recv_post.clear();
        bulk.eager.clear();
        for (nu, &w) in round.iter().enumerate() {
            if (k > 0 || nu < plan.rem as usize) && reduce > 0.0 {
                self.computed(w, reduce);
            }
            let to = round[plan.peers(nu as u32, k).0 as usize];
            let (post, eager) = self.bulk_send(w, to, plan.bytes);
            bulk.post.push(post);
            bulk.recv_post.push(self.ranks[w].clock);
            bulk.eager.push(eager);
        }
    }

    /// Round `k`'s completions: each round member's send and receive end
    /// as `matched` ends them, and its wait resolves as the event path's.
    fn bulk_waits(&mut self, round: &[usize], plan: &Aligned, k: u32, bulk: &Bulk) {
        let bytes = plan.bytes;
        for (nu, &w) in round.iter().enumerate() {
            let (to, from) = plan.peers(nu as u32, k);
            let (to, from) = (to as usize, from as usize);
            let since = bulk.recv_post[nu];
            let send_end = self.bulk_sent(w, round[to], bytes, (bulk.post[nu], bulk.eager[nu]), since, bulk.recv_post[to]);
            let arrival = self.bulk_arrival(round[from], w, bytes, (bulk.post[from], bulk.eager[from]), since);
            self.bulk_resolve(w, since, &[send_end, arrival]);
        }
    }
}

//! Blocking collectives evaluated for all members at once. A collective
//! whose rounds line up on every member ([`collectives::Aligned`]:
//! recursive-doubling all-reduce on a power-of-two communicator, the
//! dissemination barrier) parks each member as it enters; when the last
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
        for k in 0..plan.rounds {
            self.bulk_posts(&members, &plan, k, reduce, &mut bulk);
            self.bulk_waits(&members, &plan, k, &bulk);
        }
        self.bulk = Some(bulk);
        for &w in &members {
            if plan.rounds > 0 && reduce > 0.0 {
                self.computed(w, reduce);
            }
            let rk = &mut self.ranks[w];
            rk.coll.active = false;
            rk.coll.lazy = None;
            rk.status = Status::Runnable;
            let t = rk.clock;
            self.queue.schedule(t, Kind::Rank(w as u32))?;
        }
        Ok(())
    }

    /// Round `k`'s posts: each member charges the previous round's
    /// reduction, posts its send (an eager send's overhead moves its
    /// clock) and then its receive.
    fn bulk_posts(&mut self, members: &[usize], plan: &Aligned, k: u32, reduce: f64, bulk: &mut Bulk) {
        let bytes = plan.bytes;
        bulk.post.clear();
        bulk.recv_post.clear();
        bulk.eager.clear();
        for (i, &w) in members.iter().enumerate() {
            if k > 0 && reduce > 0.0 {
                self.computed(w, reduce);
            }
            let to = members[plan.peers(i as u32, k).0 as usize];
            let model = self.model(w, to);
            let eager = model.is_eager(bytes);
            let rk = &mut self.ranks[w];
            rk.stats.messages += 1;
            rk.stats.bytes_sent = rk.stats.bytes_sent.saturating_add(bytes);
            bulk.post.push(rk.clock);
            if eager {
                let o = model.send_overhead.eval(bytes);
                rk.clock += o;
                rk.stats.comm_s += o;
            }
            bulk.recv_post.push(rk.clock);
            bulk.eager.push(eager);
        }
    }

    /// Round `k`'s completions: each member's send and receive end as
    /// `matched` ends them, and its wait resolves as the event path's.
    fn bulk_waits(&mut self, members: &[usize], plan: &Aligned, k: u32, bulk: &Bulk) {
        let bytes = plan.bytes;
        let async_th = self.platform.smpi.async_small_thresh_bytes;
        for (i, &w) in members.iter().enumerate() {
            let (to, from) = plan.peers(i as u32, k);
            let (to, from) = (to as usize, from as usize);
            let since = bulk.recv_post[i];
            let (send_at, send_d) = if bulk.eager[i] {
                (since, 0.0)
            } else {
                let t = self.model(w, members[to]).transfer.eval(bytes);
                (bulk.post[i].max(bulk.recv_post[to]) + t, t)
            };
            let model = self.model(members[from], w);
            let t = model.transfer.eval(bytes);
            let (recv_at, recv_d) = if bulk.eager[from] {
                let o_r = model.recv_overhead.eval(bytes);
                let start = match async_th {
                    Some(th) if bytes >= th => bulk.post[from].max(since),
                    _ => bulk.post[from],
                };
                ((start + t).max(since + o_r), t.max(o_r))
            } else {
                (bulk.post[from].max(since) + t, t)
            };
            let rk = &mut self.ranks[w];
            rk.block = Block { since, resume: since.max(send_at).max(recv_at), d: 0.0f64.max(send_d).max(recv_d), pending: 0, extra: 0.0 };
            resolve(rk);
        }
    }
}

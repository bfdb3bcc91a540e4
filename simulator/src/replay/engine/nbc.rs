//! Nonblocking collectives and `MPI_Cancel` in the engine.
//!
//! Progress model: a nonblocking collective runs the blocking
//! collective's schedule ([`super::coll`], same algorithms, context and
//! tag sequence) on its own, as if an asynchronous progress engine (a
//! progress thread or NIC offload) drove it: round k + 1 is posted the
//! moment round k completes (plus its reduction steps,
//! [`crate::collectives::Collectives::reduce`], also off the rank's CPU),
//! whatever the rank is doing, and the rank's
//! request completes when the last round does. Posting costs the rank
//! nothing (the sends' overheads delay the schedule, not the rank's
//! compute). This is the best case for overlap; an MPI library without
//! asynchronous progress advances the schedule only inside MPI calls.
//! SimGrid 3.32 aborts on these calls.

use super::*;

/// One nonblocking collective in progress on one rank.
#[derive(Debug)]
pub(super) struct Nbc {
    /// The user request's slot.
    user: u32,
    steps: Vec<Step>,
    pos: usize,
    /// Global communicator index (its members map schedule peers to world ranks).
    comm: u32,
    ctx: u64,
    tag: i32,
    /// Slots of the round in flight.
    round: Vec<u32>,
    /// Steps of that round not completed yet.
    pending: u32,
    /// Latest completion among the round's steps, seconds.
    at: f64,
    /// When the collective started, seconds.
    start: f64,
    /// The round completed; the next one is posted at `at` (an event).
    ready: bool,
    /// Reductions of the round in flight, seconds: they delay the next
    /// round (on the progress engine, not the rank's CPU).
    reduce_s: f64,
}

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Starts `coll` on rank `r` as a nonblocking collective with request `req`.
    pub(super) fn start_icoll(&mut self, r: usize, req: u64, coll: &Action) -> Result<(), ReplayError> {
        if matches!(coll, Action::Icoll { .. }) || !coll_action(coll) {
            return Err(self.err(r, coll, "a nonblocking collective must wrap a blocking collective", false));
        }
        self.coll_setup(r, coll, false)?;
        let now = self.ranks[r].clock;
        let rk = &mut self.ranks[r];
        let user = rk.reqs.alloc_user(req);
        let c = &mut rk.coll;
        c.active = false;
        let nbc = Nbc {
            user,
            steps: std::mem::take(&mut c.steps),
            pos: 0,
            comm: c.comm,
            ctx: c.ctx,
            tag: c.tag,
            round: Vec::new(),
            pending: 0,
            at: now,
            start: now,
            ready: false,
            reduce_s: 0.0,
        };
        rk.nbc.push(nbc);
        let i = rk.nbc.len() - 1;
        self.nbc_advance(r, i, now)
    }

    /// Posts the next round of rank `r`'s collective `i` at time `t`, or
    /// completes its request when no round is left.
    fn nbc_advance(&mut self, r: usize, i: usize, t: f64) -> Result<(), ReplayError> {
        let rk = &mut self.ranks[r];
        let n = &mut rk.nbc[i];
        n.ready = false;
        if n.pos == n.steps.len() {
            let nbc = rk.nbc.swap_remove(i);
            return self.complete(r, nbc.user, t, t - nbc.start);
        }
        let len = n.steps[n.pos..].iter().position(|s| s.end_round).map_or(n.steps.len() - n.pos, |k| k + 1);
        let round: Vec<Step> = n.steps[n.pos..n.pos + len].to_vec();
        n.pos += len;
        n.pending = len as u32;
        n.at = t;
        n.reduce_s = round.iter().map(|s| self.platform.collectives.reduce.eval(s.reduce_bytes)).sum();
        let (ctx, tag, g) = (n.ctx, n.tag, n.comm);
        for _ in 0..len {
            let s = rk.reqs.alloc();
            rk.reqs.slots[s as usize].nbc = true;
            rk.nbc[i].round.push(s);
        }
        let slots = rk.nbc[i].round.clone();
        // Post on the progress engine's timeline, out of the rank's CPU:
        // its clock and communication time are put back afterwards, and
        // OS jitter does not touch these overheads.
        let saved = (rk.clock, rk.stats.comm_s);
        rk.clock = t;
        let jitter = self.jitter.take();
        let mut posted = Ok(());
        for (st, slot) in round.iter().zip(slots) {
            let peer = self.comms.world_rank(g, st.peer);
            posted =
                if st.send { self.isend(r, peer as usize, ctx, tag, st.bytes, slot) } else { self.irecv(r, peer as i32, ctx, tag, slot) };
            if posted.is_err() {
                break;
            }
        }
        self.jitter = jitter;
        let rk = &mut self.ranks[r];
        (rk.clock, rk.stats.comm_s) = saved;
        posted
    }

    /// Step slot `slot` of one of rank `r`'s collectives completed at `at`;
    /// the round's last step queues the collective's next move at the
    /// round's latest completion.
    pub(super) fn nbc_step_done(&mut self, r: usize, slot: u32, at: f64) -> Result<(), ReplayError> {
        let rk = &mut self.ranks[r];
        rk.reqs.slots[slot as usize].nbc = false;
        rk.reqs.release(slot);
        let Some(n) = rk.nbc.iter_mut().find(|n| n.round.contains(&slot)) else { return Ok(()) };
        n.round.retain(|&s| s != slot);
        n.at = n.at.max(at);
        n.pending -= 1;
        if n.pending == 0 {
            n.ready = true;
            n.at += n.reduce_s;
            let at = n.at.max(self.queue.now);
            self.queue.schedule(at, Kind::Nbc(r as u32))?;
        }
        Ok(())
    }

    /// Advances every collective of rank `r` whose round completed by `now`.
    pub(super) fn nbc_event(&mut self, r: usize, now: f64) -> Result<(), ReplayError> {
        while let Some(i) = self.ranks[r].nbc.iter().position(|n| n.ready && n.at <= now) {
            self.nbc_advance(r, i, now)?;
        }
        Ok(())
    }

    /// `MPI_Cancel`: withdraws rank `r`'s receive `req` if no send matched
    /// it yet (its request completes now); otherwise nothing changes, as
    /// when MPI's cancel fails. Sends are never cancelled.
    pub(super) fn cancel(&mut self, r: usize, req: u64) -> Result<(), ReplayError> {
        let Some(slot) = self.ranks[r].reqs.user_slot(req) else { return Ok(()) };
        let rk = &mut self.ranks[r];
        let mail = &mut self.mail;
        let posted = rk.mail.iter_mut().find_map(|mb| mail.withdraw(r as u32, mb, slot));
        if posted.is_some() {
            let now = rk.clock;
            self.complete(r, slot, now, 0.0)?;
        }
        Ok(())
    }
}

/// True for the blocking collective actions [`Engine::start_coll`] runs.
fn coll_action(a: &Action) -> bool {
    matches!(
        a,
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
            | Action::Scan { .. }
    )
}

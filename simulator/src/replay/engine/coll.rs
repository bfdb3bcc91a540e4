//! Collectives in the engine: a rank's part of a collective as rounds of
//! point-to-point steps ([`crate::collectives`]), among the members
//! of the collective's communicator.

use super::*;
use crate::collectives::{Coll as C, CollCall, ShmColl};

/// Steps of capacity a rank keeps between its collectives.
const KEEP_STEPS: usize = 16;

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    pub(super) fn start_coll(&mut self, r: usize, action: &Action) -> Result<Flow, ReplayError> {
        if let Some((g, me, coll, bytes)) = self.coll_setup(r, action, true)? {
            return self.shm_enter(r, g, me, coll, bytes);
        }
        if self.bulk_eligible(r) {
            return self.bulk_enter(r);
        }
        self.coll_round(r)
    }

    /// Fills rank `r`'s collective state (schedule among the communicator's
    /// members, context, tag) for `action` and marks it active; nothing is
    /// posted yet. A `blocking` collective's schedule is generated round
    /// by round where it can be ([`collectives::Lazy`]; `steps` stays
    /// empty), and one MPICH runs in shared memory
    /// ([`crate::collectives::shm`]) has none: it is returned as (global
    /// communicator, communicator rank, collective, bytes) for
    /// [`Self::shm_enter`], and the state stays inactive.
    pub(super) fn coll_setup(
        &mut self,
        r: usize,
        action: &Action,
        blocking: bool,
    ) -> Result<Option<(u32, u32, ShmColl, u64)>, ReplayError> {
        if let Action::Neighbor { sends, srcs, comm } = action {
            return self.neighbor_setup(r, action, sends, srcs, *comm).map(|()| None);
        }
        let empty: &[u64] = &[];
        let (name, coll, comm, root, bytes, sizes) = match action {
            Action::Barrier { comm } => ("MPI_Barrier", C::Barrier, *comm, 0, 0, empty),
            Action::Bcast { root, comm, bytes } => ("MPI_Bcast", C::Bcast, *comm, *root, *bytes, empty),
            Action::Reduce { root, comm, bytes } => ("MPI_Reduce", C::Reduce, *comm, *root, *bytes, empty),
            Action::Allreduce { comm, bytes } => ("MPI_Allreduce", C::Allreduce, *comm, 0, *bytes, empty),
            Action::Alltoall { comm, bytes } => ("MPI_Alltoall", C::Alltoall, *comm, 0, *bytes, empty),
            Action::Alltoallv { comm, send_bytes } => ("MPI_Alltoallv", C::Alltoallv, *comm, 0, 0, &send_bytes[..]),
            Action::Allgather { comm, bytes } => ("MPI_Allgather", C::Allgather, *comm, 0, *bytes, empty),
            Action::Allgatherv { comm, recv_bytes } => ("MPI_Allgatherv", C::Allgatherv, *comm, 0, 0, &recv_bytes[..]),
            Action::Gather { root, comm, bytes } => ("MPI_Gather", C::Gather, *comm, *root, *bytes, empty),
            Action::Scatter { root, comm, bytes } => ("MPI_Scatter", C::Scatter, *comm, *root, *bytes, empty),
            Action::Scatterv { root, comm, send_bytes } => ("MPI_Scatterv", C::Scatter, *comm, *root, 0, &send_bytes[..]),
            Action::ReduceScatter { comm, recv_bytes } => ("MPI_Reduce_scatter", C::ReduceScatter, *comm, 0, 0, &recv_bytes[..]),
            Action::Scan { comm, exclusive: false, bytes } => ("MPI_Scan", C::Scan, *comm, 0, *bytes, empty),
            Action::Scan { comm, exclusive: true, bytes } => ("MPI_Exscan", C::Exscan, *comm, 0, *bytes, empty),
            _ => unreachable!("start_coll is called on collectives"),
        };
        let Some(g) = self.comms.global(r, comm) else {
            let why = format!("communicator {comm} of rank {r} was never created in its trace");
            return Err(self.err(r, action, why, true));
        };
        let n = self.comms.size(g);
        let Some(me) = self.comms.comm_rank(g, r as u32) else {
            return Err(self.err(r, action, format!("rank {r} is not a member of communicator {comm}"), false));
        };
        let rooted = matches!(coll, C::Bcast | C::Reduce | C::Gather | C::Scatter);
        let root = match self.comms.comm_rank(g, root) {
            Some(c) => c,
            None if !rooted => 0,
            None => {
                let why = format!("root {root} is not among the {n} ranks of communicator {comm}");
                return Err(self.err(r, action, why, false));
            }
        };
        let per_rank = sizes.len() == n as usize;
        let needs = match action {
            Action::Alltoallv { .. } | Action::Allgatherv { .. } | Action::ReduceScatter { .. } => Some("needs"),
            Action::Scatterv { .. } if me == root => Some("the root needs"),
            _ => None,
        };
        if let (Some(who), false) = (needs, per_rank) {
            let why = format!("{who} one size per rank ({n}), got {}", sizes.len());
            return Err(self.err(r, action, why, false));
        }
        // Sizes are at most 2^53 each where they are read; the per-rank
        // total of blocks the schedules sum must stay within it too.
        let total = sizes.iter().fold(bytes.checked_mul(n as u64), |t, &b| t.and_then(|t| t.checked_add(b)));
        if total.is_none_or(|t| t > crate::limits::MAX_BYTES) {
            let why = format!("{n} ranks × the sizes given exceed the limit of 2^53 bytes per rank");
            return Err(self.err(r, action, why, false));
        }
        let call = CollCall { coll, root, bytes, sizes, vector: !sizes.is_empty() || matches!(action, Action::Scatterv { .. }) };
        let tag = self.comms.next_tag(r, g);
        if let Some(shm) = blocking.then(|| self.shm_note(g, me, n, coll, bytes)).flatten() {
            self.ranks[r].coll.active = false;
            return Ok(Some((g, me, shm, bytes)));
        }
        let c = &mut self.ranks[r].coll;
        c.steps.clear();
        let algs = &self.platform.collectives.algs;
        c.lazy = if blocking { collectives::Lazy::plan(algs, &call, me, n) } else { None };
        if c.lazy.is_none() {
            collectives::schedule(algs, &call, me, n, &mut c.steps);
        }
        c.active = true;
        c.pos = 0;
        c.round = 0;
        c.reduce_s = 0.0;
        c.name = name;
        c.comm = g;
        c.ctx = coll_ctx(g);
        c.tag = tag;
        Ok(None)
    }

    /// A neighbourhood collective as one round: every send and receive
    /// with the listed neighbours (world ranks) posted together.
    fn neighbor_setup(&mut self, r: usize, action: &Action, sends: &[(u32, u64)], srcs: &[u32], comm: u32) -> Result<(), ReplayError> {
        let Some(g) = self.comms.global(r, comm) else {
            let why = format!("communicator {comm} of rank {r} was never created in its trace");
            return Err(self.err(r, action, why, true));
        };
        let n = self.comms.size(g);
        let peers = sends.iter().map(|&(w, b)| (w, b, true)).chain(srcs.iter().map(|&w| (w, 0, false)));
        let mut steps = std::mem::take(&mut self.ranks[r].coll.steps);
        steps.clear();
        for (w, bytes, send) in peers.filter(|&(w, ..)| w as usize != r) {
            let Some(peer) = self.comms.comm_rank(g, w) else {
                self.ranks[r].coll.steps = steps;
                let why = format!("neighbour {w} is not among the {n} ranks of communicator {comm}");
                return Err(self.err(r, action, why, false));
            };
            steps.push(collectives::Step { peer, bytes, send, end_round: false, reduce_bytes: 0 });
        }
        if let Some(last) = steps.last_mut() {
            last.end_round = true;
        }
        let tag = self.comms.next_tag(r, g);
        let c = &mut self.ranks[r].coll;
        c.steps = steps;
        c.lazy = None;
        c.active = true;
        c.pos = 0;
        c.round = 0;
        c.name = "MPI_Neighbor_*";
        c.comm = g;
        c.ctx = coll_ctx(g);
        c.tag = tag;
        Ok(())
    }

    /// Charges the reductions of rank `r`'s completed round as local
    /// compute, then posts the next round of its collective and waits for it.
    pub(super) fn coll_round(&mut self, r: usize) -> Result<Flow, ReplayError> {
        let reduce_s = std::mem::take(&mut self.ranks[r].coll.reduce_s);
        if reduce_s > 0.0 {
            self.local_compute(r, reduce_s);
        }
        // The round's steps, into the engine's scratch buffer.
        let mut round = std::mem::take(&mut self.round);
        round.clear();
        let c = &mut self.ranks[r].coll;
        match c.lazy.as_mut() {
            Some(lazy) => {
                lazy.next_round(&mut round);
            }
            None => {
                let len = c.steps[c.pos..].iter().position(|s| s.end_round).map_or(c.steps.len() - c.pos, |k| k + 1);
                round.extend_from_slice(&c.steps[c.pos..c.pos + len]);
                c.pos += len;
            }
        }
        if round.is_empty() {
            c.active = false;
            // A long schedule's buffer is not kept for the rank's next collective.
            if c.steps.capacity() > KEEP_STEPS {
                c.steps = Vec::new();
            }
            self.round = round;
            return Ok(Flow::Continue);
        }
        c.round += 1;
        let (ctx, tag, g) = (c.ctx, c.tag, c.comm);
        self.ranks[r].doing = Doing::Coll { name: c.name, round: c.round };
        let mut slots = std::mem::take(&mut self.round_slots);
        slots.clear();
        let posted = self.post_round(r, &round, (ctx, tag, g), &mut slots);
        self.round = round;
        if let Err(e) = posted {
            self.round_slots = slots;
            return Err(e);
        }
        self.wait_begin(r);
        for &s in &slots {
            self.wait_add(r, s);
        }
        self.round_slots = slots;
        Ok(self.wait_end(r))
    }

    /// Posts the steps of one round of rank `r` on `(context, tag, global
    /// communicator)`, appending their request slots to `slots`.
    fn post_round(&mut self, r: usize, round: &[collectives::Step], on: (u64, i32, u32), slots: &mut Vec<u32>) -> Result<(), ReplayError> {
        let (ctx, tag, g) = on;
        for st in round {
            let rk = &mut self.ranks[r];
            let slot = rk.reqs.alloc();
            slots.push(slot);
            rk.coll.reduce_s += self.platform.collectives.reduce.eval(st.reduce_bytes);
            let peer = self.comms.world_rank(g, st.peer);
            if st.send {
                self.isend(r, peer as usize, ctx, tag, st.bytes, slot)?;
            } else {
                self.irecv(r, peer as i32, ctx, tag, slot)?;
            }
        }
        Ok(())
    }
}

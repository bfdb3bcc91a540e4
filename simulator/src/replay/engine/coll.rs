//! Collectives in the engine: a rank's part of a collective as rounds of
//! point-to-point steps ([`crate::replay::collectives`]).

use super::*;
use crate::replay::collectives::{AllreduceAlg, BarrierAlg, ReduceAlg};

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    pub(super) fn start_coll(&mut self, r: usize, action: &Action) -> Result<Flow, ReplayError> {
        self.coll_setup(r, action)?;
        self.coll_round(r)
    }

    /// Fills rank `r`'s collective state (schedule, context, tag) for
    /// `action` and marks it active; nothing is posted yet.
    pub(super) fn coll_setup(&mut self, r: usize, action: &Action) -> Result<(), ReplayError> {
        let n = self.ranks.len() as u32;
        let (name, comm, root) = match *action {
            Action::Barrier { comm } => ("MPI_Barrier", comm, 0),
            Action::Bcast { root, comm, .. } => ("MPI_Bcast", comm, root),
            Action::Reduce { root, comm, .. } => ("MPI_Reduce", comm, root),
            Action::Allreduce { comm, .. } => ("MPI_Allreduce", comm, 0),
            Action::Alltoall { comm, .. } => ("MPI_Alltoall", comm, 0),
            Action::Alltoallv { comm, .. } => ("MPI_Alltoallv", comm, 0),
            Action::Allgather { comm, .. } => ("MPI_Allgather", comm, 0),
            Action::Allgatherv { comm, .. } => ("MPI_Allgatherv", comm, 0),
            Action::Gather { root, comm, .. } => ("MPI_Gather", comm, root),
            Action::Scatter { root, comm, .. } => ("MPI_Scatter", comm, root),
            Action::Scatterv { root, comm, .. } => ("MPI_Scatterv", comm, root),
            Action::ReduceScatter { comm, .. } => ("MPI_Reduce_scatter", comm, 0),
            Action::Scan { comm, exclusive: false, .. } => ("MPI_Scan", comm, 0),
            Action::Scan { comm, exclusive: true, .. } => ("MPI_Exscan", comm, 0),
            _ => unreachable!("start_coll is called on collectives"),
        };
        if comm != COMM_WORLD {
            let why = format!("collectives on communicator {comm} are not supported yet (only MPI_COMM_WORLD = 0)");
            return Err(self.err(r, action, why, true));
        }
        if root >= n {
            return Err(self.err(r, action, format!("root {root} is not among the {n} ranks"), false));
        }
        let per_rank = |v: &Vec<u64>| v.len() == n as usize;
        match action {
            Action::Alltoallv { send_bytes: v, .. }
            | Action::Allgatherv { recv_bytes: v, .. }
            | Action::ReduceScatter { recv_bytes: v, .. }
                if !per_rank(v) =>
            {
                return Err(self.err(r, action, format!("needs one size per rank ({n}), got {}", v.len()), false));
            }
            Action::Scatterv { root, send_bytes: v, .. } if *root as usize == r && !per_rank(v) => {
                return Err(self.err(
                    r,
                    action,
                    format!("the root needs one size per rank ({n}), got {}", v.len()),
                    false,
                ));
            }
            _ => {}
        }
        let algs = self.extras.coll;
        let c = &mut self.ranks[r].coll;
        c.steps.clear();
        let me = r as u32;
        let out = &mut c.steps;
        match action {
            Action::Barrier { .. } => match algs.barrier {
                BarrierAlg::Dissemination => collectives::barrier(me, n, out),
                BarrierAlg::Linear => collectives::linear_barrier(me, n, out),
            },
            Action::Bcast { bytes, .. } => collectives::bcast(me, n, root, *bytes, out),
            Action::Reduce { bytes, .. } => match algs.reduce {
                ReduceAlg::Binomial => collectives::reduce(me, n, root, *bytes, out),
                ReduceAlg::Linear => collectives::linear_gather(me, n, root, *bytes, out),
            },
            Action::Allreduce { bytes, .. } => match (algs.allreduce, algs.reduce) {
                (AllreduceAlg::RecursiveDoubling, _) => collectives::allreduce(me, n, *bytes, out),
                (AllreduceAlg::ReduceBcast, ReduceAlg::Binomial) => {
                    collectives::reduce(me, n, 0, *bytes, out);
                    collectives::bcast(me, n, 0, *bytes, out);
                }
                (AllreduceAlg::ReduceBcast, ReduceAlg::Linear) => {
                    collectives::linear_gather(me, n, 0, *bytes, out);
                    collectives::bcast(me, n, 0, *bytes, out);
                }
            },
            Action::Alltoall { bytes, .. } => collectives::pairwise(me, n, |_| *bytes, out),
            Action::Alltoallv { send_bytes, .. } => collectives::pairwise(me, n, |p| send_bytes[p as usize], out),
            Action::Allgather { bytes, .. } => collectives::ring_allgather(me, n, |_| *bytes, out),
            Action::Allgatherv { recv_bytes, .. } => {
                collectives::ring_allgather(me, n, |b| recv_bytes[b as usize], out)
            }
            Action::Gather { bytes, .. } => collectives::linear_gather(me, n, root, *bytes, out),
            Action::Scatter { bytes, .. } => collectives::linear_scatter(me, n, root, |_| *bytes, out),
            Action::Scatterv { send_bytes, .. } => {
                collectives::linear_scatter(me, n, root, |p| send_bytes.get(p as usize).copied().unwrap_or(0), out)
            }
            Action::ReduceScatter { recv_bytes, .. } => {
                collectives::reduce(me, n, 0, recv_bytes.iter().sum(), out);
                collectives::linear_scatter(me, n, 0, |p| recv_bytes[p as usize], out);
            }
            Action::Scan { bytes, .. } => collectives::chain_scan(me, n, *bytes, out),
            _ => unreachable!("matched above"),
        }
        c.active = true;
        c.pos = 0;
        c.round = 0;
        c.name = name;
        c.ctx = coll_ctx(comm);
        c.tag = (c.seq & 0x7fff_ffff) as i32;
        c.seq = c.seq.wrapping_add(1);
        Ok(())
    }

    /// Posts the next round of rank `r`'s collective and waits for it.
    pub(super) fn coll_round(&mut self, r: usize) -> Result<Flow, ReplayError> {
        let c = &mut self.ranks[r].coll;
        if c.pos == c.steps.len() {
            c.active = false;
            return Ok(Flow::Continue);
        }
        c.round += 1;
        c.round_slots.clear();
        let (ctx, tag) = (c.ctx, c.tag);
        self.ranks[r].doing = Doing::Coll { name: c.name, round: c.round };
        loop {
            let rk = &mut self.ranks[r];
            let st = rk.coll.steps[rk.coll.pos];
            rk.coll.pos += 1;
            let slot = rk.reqs.alloc();
            rk.coll.round_slots.push(slot);
            if st.send {
                self.isend(r, st.peer as usize, ctx, tag, st.bytes, slot)?;
            } else {
                self.irecv(r, st.peer as i32, ctx, tag, slot)?;
            }
            if st.end_round {
                break;
            }
        }
        self.wait_begin(r);
        for i in 0..self.ranks[r].coll.round_slots.len() {
            let s = self.ranks[r].coll.round_slots[i];
            self.wait_add(r, s);
        }
        Ok(self.wait_end(r))
    }
}

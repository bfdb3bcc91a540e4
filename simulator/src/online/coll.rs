//! Collectives on the online clock: the replay engine runs each
//! collective on its members' entry times, with the algorithms and models
//! of the offline replay.

use super::{Req, VirtualRank};
use crate::action::Action;
use crate::collectives::{Coll, ShmCounter};
use crate::platform::{Mapping, Platform};
use crate::rank::Wait;
use crate::replay::{ActionStream, Replay, ReplayError, ReplayErrorKind};

impl VirtualRank<'_> {
    /// A collective `action` (its root as a world rank, per-rank sizes in
    /// communicator rank order, its communicator ignored) over `members` (world ranks, in communicator
    /// rank order), which entered at virtual times `entries_s` (same
    /// order). Moves the clock to this rank's exit time and returns it.
    ///
    /// # Errors
    /// [`ReplayError`]: this rank or the root is not a member, the lengths
    /// differ, or the replay rejects the action.
    pub fn collective(&mut self, action: &Action, members: &[u32], entries_s: &[f64]) -> Result<f64, ReplayError> {
        self.collective_sized(action, members, entries_s, &[])
    }

    /// [`VirtualRank::collective`] of a collective whose sizes differ
    /// between members: `sizes[i]` is member i's [`member_sizes`] (empty:
    /// every member runs `action` as this rank has it), so that each
    /// member runs the action it has offline.
    ///
    /// # Errors
    /// As [`VirtualRank::collective`], and when `sizes` is neither empty
    /// nor one entry per member.
    pub fn collective_sized(
        &mut self,
        action: &Action,
        members: &[u32],
        entries_s: &[f64],
        sizes: &[Vec<u64>],
    ) -> Result<f64, ReplayError> {
        // MPICH's count of shared-memory eligible calls on the communicator
        // before this one; the replay counts this one as it does offline.
        let before = match shm_call(action) {
            Some((comm, coll, bytes)) => {
                let k = self.shm_counts.entry(comm).or_default();
                let before = *k;
                k.note(coll, bytes);
                before
            }
            None => ShmCounter::default(),
        };
        let (exit, comm, reduce_s) = self.run_collective(action, members, entries_s, sizes, false, before)?;
        let resume = exit.max(self.clock);
        // The reduction steps are local compute, as in the replay.
        let reduce_s = reduce_s.min(resume - self.clock);
        self.stats.compute_s += reduce_s;
        let entry = self.clock;
        let b = Wait { since: self.clock + reduce_s, resume, d: comm };
        self.settle(b);
        // One wait from entry to exit, as the replay counts a collective.
        self.waited(entry, resume);
        Ok(self.clock)
    }

    /// Posts a nonblocking collective creating request `req` at the clock
    /// (posting costs nothing, as in the replay); returns its virtual post
    /// time, which the members exchange for [`VirtualRank::icoll_matched`].
    pub fn icoll(&mut self, req: u64) -> f64 {
        self.reqs.insert(req, Req::Coll { post: self.clock });
        self.clock
    }

    /// Request `req`, a nonblocking collective `action` (the blocking
    /// collective it stands for, as [`VirtualRank::collective`] takes it)
    /// over `members`, which posted it at virtual times `entries_s`:
    /// fixes the request's completion, which the replay engine gives for
    /// [`Action::Icoll`] (the blocking schedule under asynchronous
    /// progress, see [`crate::replay`]), with the collective's span as
    /// its model duration. Returns the completion, seconds; `Ok(None)`
    /// for an unknown request.
    ///
    /// # Errors
    /// As [`VirtualRank::collective`].
    pub fn icoll_matched(&mut self, req: u64, action: &Action, members: &[u32], entries_s: &[f64]) -> Result<Option<f64>, ReplayError> {
        self.icoll_matched_sized(req, action, members, entries_s, &[])
    }

    /// [`VirtualRank::icoll_matched`] with each member's [`member_sizes`],
    /// as [`VirtualRank::collective_sized`].
    ///
    /// # Errors
    /// As [`VirtualRank::collective_sized`].
    pub fn icoll_matched_sized(
        &mut self,
        req: u64,
        action: &Action,
        members: &[u32],
        entries_s: &[f64],
        sizes: &[Vec<u64>],
    ) -> Result<Option<f64>, ReplayError> {
        let Some(&Req::Coll { post }) = self.reqs.get(&req) else { return Ok(None) };
        let (at, span, _) = self.run_collective(action, members, entries_s, sizes, true, ShmCounter::default())?;
        self.reqs.insert(req, Req::Done { at, d: span });
        Ok(Some(at.max(post)))
    }

    /// Runs `action` on `members` entering at `entries_s` in the replay
    /// engine; returns this rank's exit time (the request's completion
    /// when `nonblocking`) and its model duration (communication time of
    /// the blocking collective; the span from post to completion of the
    /// nonblocking one) and the reduction steps' local compute, seconds
    /// ([`crate::collectives::Collectives::reduce`]; 0 for a nonblocking one, whose progress engine
    /// reduces off the rank's CPU). `shm` is MPICH's count of earlier
    /// calls on the communicator ([`crate::collectives::shm`]). `sizes`:
    /// as [`VirtualRank::collective_sized`].
    fn run_collective(
        &self,
        action: &Action,
        members: &[u32],
        entries_s: &[f64],
        sizes: &[Vec<u64>],
        nonblocking: bool,
        shm: ShmCounter,
    ) -> Result<(f64, f64, f64), ReplayError> {
        let bad =
            |why: String| ReplayError { rank: Some(self.rank), kind: ReplayErrorKind::Invalid { action: format!("{action:?}"), why } };
        if members.len() != entries_s.len() {
            return Err(bad(format!("{} members but {} entry times", members.len(), entries_s.len())));
        }
        if !sizes.is_empty() && sizes.len() != members.len() {
            return Err(bad(format!("{} members but sizes of {}", members.len(), sizes.len())));
        }
        let me = members.iter().position(|&m| m == self.rank).ok_or_else(|| bad("this rank is not a member".into()))?;
        let local = |w: u32| members.iter().position(|&m| m == w).map(|i| i as u32);
        let mut act = action.clone();
        match &mut act {
            Action::Bcast { root, comm, .. }
            | Action::Reduce { root, comm, .. }
            | Action::Gather { root, comm, .. }
            | Action::Scatter { root, comm, .. }
            | Action::Scatterv { root, comm, .. } => {
                *root = local(*root).ok_or_else(|| bad(format!("root {root} is not a member")))?;
                *comm = 0;
            }
            Action::Barrier { comm }
            | Action::Allreduce { comm, .. }
            | Action::Alltoall { comm, .. }
            | Action::Alltoallv { comm, .. }
            | Action::Allgather { comm, .. }
            | Action::Allgatherv { comm, .. }
            | Action::ReduceScatter { comm, .. }
            | Action::Scan { comm, .. } => *comm = 0,
            other => return Err(bad(format!("{other:?} is not a collective"))),
        }
        let ops = |i: usize| {
            let act = if sizes.is_empty() { act.clone() } else { sized(&act, i, sizes) };
            match nonblocking {
                false => vec![act],
                true => vec![Action::Icoll { req: 1, coll: Box::new(act) }, Action::Wait { req: 1 }],
            }
        };
        let hosts = members.iter().map(|&m| self.platform.host_of(m) as u32).collect();
        let mut platform = Platform { mapping: Mapping::Explicit { hosts }, ..self.platform.clone() };
        // The entry blocks stand for time already elapsed, not CPU work
        // to share; the wait's per-request cost is the caller's.
        platform.hosts.iter_mut().for_each(|h| h.cores = h.cores.max(members.len() as u32));
        platform.smpi.wait_s = 0.0;
        // Exit times do not depend on pstates: the rank's own model
        // counts the collective as one wait ([`crate::dvfs`]).
        platform.dvfs = Default::default();
        let base = entries_s.iter().copied().fold(f64::INFINITY, f64::min);
        let streams: Vec<ActionStream<'_, std::convert::Infallible>> = members
            .iter()
            .zip(entries_s)
            .enumerate()
            .map(|(i, (&m, &t))| {
                let speed = platform.hosts[self.platform.host_of(m)].speed_ratio;
                let start = Action::Compute { seconds: (t - base) * speed, region: 0 };
                let all = std::iter::once(start).chain(ops(i)).chain([Action::Finalize]);
                Box::new(all.map(Ok)) as ActionStream<'_, _>
            })
            .collect();
        let report = Replay::new(&platform).shm_counter(shm).run(streams)?;
        let mine = &report.ranks[me];
        let exit = base + mine.end_s;
        // Compute beyond the synthetic entry block: the reduction steps.
        let reduce_s = if self.platform.collectives.reduce.is_zero() { 0.0 } else { (mine.compute_s - (entries_s[me] - base)).max(0.0) };
        Ok(match nonblocking {
            false => (exit, mine.comm_s, reduce_s),
            true => (exit, (exit - entries_s[me]).max(0.0), 0.0),
        })
    }
}

/// What differs between the members of collective `action` (as
/// [`VirtualRank::collective`] takes it) on `n` members and so must come
/// from each, bytes: its own contribution to a gather (one value), the
/// root's send sizes of a scatterv (`n` values, zeros on the other
/// members), its send sizes of an all-to-all-v (`n` values); empty for
/// the others, whose action is the same on every member.
pub fn member_sizes(action: &Action, n: usize) -> Vec<u64> {
    let mut v = match action {
        Action::Gather { bytes, .. } => return vec![*bytes],
        Action::Scatterv { send_bytes, .. } | Action::Alltoallv { send_bytes, .. } => send_bytes.clone(),
        _ => return Vec::new(),
    };
    v.resize(n, 0);
    v
}

/// Member `i`'s action of `act` (root local, communicator 0) from the
/// members' [`member_sizes`].
fn sized(act: &Action, i: usize, sizes: &[Vec<u64>]) -> Action {
    let first = |v: &[u64]| v.first().copied().unwrap_or(0);
    match act {
        &Action::Gather { root, comm, .. } => Action::Gather { root, bytes: first(&sizes[i]), comm },
        &Action::Scatterv { root, comm, .. } => {
            let send_bytes = if i == root as usize { sizes[i].clone() } else { Vec::new() };
            Action::Scatterv { root, send_bytes, comm }
        }
        &Action::Alltoallv { comm, .. } => Action::Alltoallv { send_bytes: sizes[i].clone(), comm },
        other => other.clone(),
    }
}

/// The communicator (the rank's own id), collective and payload of a
/// blocking collective MPICH counts towards its shared-memory algorithms
/// ([`ShmCounter::note`]); `None` for other actions.
fn shm_call(action: &Action) -> Option<(u32, Coll, u64)> {
    match *action {
        Action::Barrier { comm } => Some((comm, Coll::Barrier, 0)),
        Action::Bcast { comm, bytes, .. } => Some((comm, Coll::Bcast, bytes)),
        Action::Reduce { comm, bytes, .. } => Some((comm, Coll::Reduce, bytes)),
        Action::Allreduce { comm, bytes } => Some((comm, Coll::Allreduce, bytes)),
        _ => None,
    }
}

//! From interposer call records to replay [`Action`]s: compute blocks with
//! their call-site region ids, then each call's action.

use std::collections::{HashMap, VecDeque};

use crate::action::{Action, IoCall};
use crate::trace::record::{COMM_SELF, COMM_UNKNOWN, PROC_NULL};
use crate::trace::region_key_id;
use crate::trace::symbols::RegionNames;
use crate::trace::{CallRecord, ComputeTime, Op, Params, RankTrace, TraceError, TraceErrorKind, IO_REGION};

mod rma;

/// Turns a rank's call records into actions, streaming.
#[derive(Debug)]
pub struct TraceActions {
    trace: RankTrace,
    records: crate::trace::Records,
    /// Return address of the previous call; 0 before the first.
    prev_caller: u64,
    /// Region keys and ids, cached per (previous, current) return address,
    /// so that the common case neither formats nor allocates.
    regions: RegionNames,
    compute: ComputeTime,
    convert: RecordConverter,
}

impl TraceActions {
    /// Streams the actions of `trace`.
    ///
    /// # Errors
    /// [`TraceError`] naming the file when it cannot be reopened.
    pub fn new(trace: RankTrace, compute: ComputeTime) -> Result<Self, TraceError> {
        let records = trace.records()?;
        let convert = RecordConverter::new(trace.header.ranks).for_rank(trace.header.rank);
        Ok(TraceActions { trace, records, prev_caller: 0, regions: RegionNames::new(), compute, convert })
    }
}

/// Turns one rank's call records, in order, into replay actions: the
/// compute block before each call, then the call's own actions (with the
/// rank's request state, [`RequestBook`], and the sizes of the
/// communicators it created, which `MPI_Reduce_scatter_block` needs).
#[derive(Debug)]
pub struct RecordConverter {
    pending: ActionQueue,
    requests: RequestBook,
    /// Size of each communicator this rank created (by its id).
    comm_sizes: Vec<(u32, u32)>,
    /// Ranks of the world.
    ranks: u32,
    /// This rank, once [`RecordConverter::for_rank`] said it, and whether
    /// its `MPI_COMM_SELF` was introduced to the replay.
    me: Option<(u32, bool)>,
}

impl RecordConverter {
    /// A converter for one rank of a world of `ranks`.
    pub fn new(ranks: u32) -> Self {
        RecordConverter { pending: ActionQueue::default(), requests: RequestBook::default(), comm_sizes: Vec::new(), ranks, me: None }
    }

    /// The converter of world rank `me`: calls on `MPI_COMM_SELF`
    /// ([`COMM_SELF`]) then replay on a communicator of `me` alone, which
    /// it introduces with an [`Action::CommCreate`] before its first use.
    pub fn for_rank(mut self, me: u32) -> Self {
        self.me = Some((me, false));
        self
    }

    /// The next action of a record converted before, if any is left.
    pub fn pop(&mut self) -> Option<Action> {
        self.pending.pop_front()
    }

    /// Converts `rec`, whose compute block before it took `seconds` in
    /// region `region`: returns that block's action and queues the call's
    /// own ([`RecordConverter::pop`]).
    ///
    /// # Errors
    /// `Err(op)` for a call the replay cannot represent ([`op_action`]).
    pub fn convert(&mut self, rec: &CallRecord, seconds: f64, region: u64) -> Result<Action, Op> {
        let compute = Action::Compute { seconds, region };
        if let Some((me, false)) = self.me {
            if params_comm(&rec.params) == Some(COMM_SELF) {
                self.me = Some((me, true));
                self.comm_sizes.push((COMM_SELF, 1));
                self.pending.push_back(Action::CommCreate { comm: COMM_SELF, members: vec![me] });
            }
        }
        if let (op, Params::CommCreate { comm, members, .. }) = (rec.op, &rec.params) {
            if op != Op::IntercommCreate {
                self.comm_sizes.retain(|(c, _)| c != comm);
                self.comm_sizes.push((*comm, members.len() as u32));
            }
        }
        match (rec.op, &rec.params) {
            // Equal blocks: one per rank of the communicator (request 0:
            // the blocking form).
            (Op::ReduceScatterBlock, &Params::Coll { bytes, comm, .. }) | (Op::IreduceScatterBlock, &Params::Icoll { bytes, comm, .. }) => {
                let n = match comm {
                    0 => Some(self.ranks),
                    c => self.comm_sizes.iter().find(|(id, _)| *id == c).map(|&(_, n)| n),
                };
                let coll = n.map(|n| Action::ReduceScatter { recv_bytes: vec![bytes; n as usize], comm });
                match (coll, &rec.params) {
                    (Some(coll), &Params::Icoll { request, .. }) => {
                        self.pending.push_back(Action::Icoll { req: request, coll: Box::new(coll) })
                    }
                    (Some(coll), _) => self.pending.push_back(coll),
                    (None, _) => return Err(rec.op),
                }
            }
            _ => self.requests.push_actions(rec, &mut self.pending)?,
        }
        Ok(compute)
    }
}

/// A FIFO of actions whose first one is held inline: a call converts to
/// one action almost always, and a stream generated per rank at scale
/// then keeps it in the rank's own state rather than in a heap buffer.
#[derive(Debug, Default)]
struct ActionQueue {
    /// The front, when one is queued and `rest` came after it.
    first: Option<Action>,
    rest: VecDeque<Action>,
}

impl ActionQueue {
    fn push_back(&mut self, a: Action) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(a);
        } else {
            self.rest.push_back(a);
        }
    }

    fn pop_front(&mut self) -> Option<Action> {
        self.first.take().or_else(|| self.rest.pop_front())
    }
}

impl Extend<Action> for ActionQueue {
    fn extend<I: IntoIterator<Item = Action>>(&mut self, iter: I) {
        iter.into_iter().for_each(|a| self.push_back(a));
    }
}

/// The communicator a record's call runs on, for the shapes that name one.
fn params_comm(p: &Params) -> Option<u32> {
    match *p {
        Params::P2p { comm, .. }
        | Params::Coll { comm, .. }
        | Params::Icoll { comm, .. }
        | Params::Vcoll { comm, .. }
        | Params::Neighbor { comm, .. }
        | Params::Sendrecv { comm, .. }
        | Params::Probe { comm, .. }
        | Params::CommCreate { parent: comm, .. } => Some(comm),
        _ => None,
    }
}

/// The action of one record: `Ok(None)` for calls replay ignores (rank,
/// size, probes, tests that found nothing, `MPI_Comm_free`, communicators
/// this rank is not in, sends to or receives from `MPI_PROC_NULL`);
/// `Err(op)` for calls the replay cannot represent yet
/// (v-collectives other than gatherv in traces written before their
/// per-member counts were recorded, and `MPI_Reduce_scatter_block` and
/// `MPI_Ireduce_scatter_block`, which [`TraceActions`] completes with the
/// communicator's size). `MPI_Intercomm_create` creates a communicator
/// of both groups (point-to-point on it matches across them; its peers
/// are world ranks already). `MPI_Gatherv` costs as a gather of this rank's contribution, `MPI_Alltoallw` as an
/// alltoallv of its byte counts, a neighbourhood collective as
/// [`Action::Neighbor`] with its recorded neighbours. Nonblocking collectives become
/// [`Action::Icoll`] around their blocking action; MPI-IO calls become
/// [`Action::Io`] (which keeps their measured duration for platforms
/// without a file system), but for `MPI_File_seek` and `set_view`, local
/// calls that stay compute blocks of their measured duration in region
/// [`IO_REGION`]. One-sided calls become [`Action::Rma`] (accumulates as
/// puts; calls on an unknown window or to `MPI_PROC_NULL`: `Ok(None)`).
/// Persistent requests and matched probes need the stream's state:
/// [`RequestBook`].
///
/// Send modes map onto the standard ones (`Ssend`/`Rsend` → `Send`,
/// `Issend`/`Irsend` → `Isend`): the model's eager/rendezvous switch then
/// decides, which is exact for `Rsend` and for large `Ssend`s, and
/// under-costs a small `Ssend` by one handshake. A buffered send
/// (`Bsend`, `Ibsend`, `Bsend_init`) becomes [`Action::Buffered`]: eager
/// at any size.
pub fn op_action(rec: &CallRecord) -> Result<Option<Action>, Op> {
    use Op::*;
    let root = |r: i32| r.max(0) as u32;
    Ok(Some(match (rec.op, &rec.params) {
        (Init | InitThread, _) => Action::Init,
        (Finalize, _) => Action::Finalize,
        (
            CommDup
            | CommSplit
            | CommCreate
            | CartCreate
            | CartSub
            | CommCreateGroup
            | IntercommMerge
            | CommIdup
            | CommSplitType
            | DistGraphCreateAdjacent
            | GraphCreate,
            Params::CommCreate { comm, members, .. },
        ) => match *comm {
            COMM_UNKNOWN => return Ok(None),
            comm => Action::CommCreate { comm, members: members.clone() },
        },
        // Both groups of an intercommunicator call `MPI_Intercomm_create`,
        // each naming its own group first: the two groups, the one holding
        // the lower world rank first, give every member the same list, so
        // point-to-point traffic on it matches across the groups whatever
        // id each rank's interposer gave it.
        (IntercommCreate, Params::Intercomm { comm, local, remote, .. }) => match *comm {
            COMM_UNKNOWN => return Ok(None),
            comm => {
                let (a, b) = if local.iter().min() <= remote.iter().min() { (local, remote) } else { (remote, local) };
                Action::CommCreate { comm, members: a.iter().chain(b).copied().collect() }
            }
        },
        (Iprobe, _) => Action::Poll,
        (CommRank | CommSize | Probe | CommDup | CommSplit | CommCreate | CommFree, _) => return Ok(None),
        (CartCreate | CartSub | CommCreateGroup | IntercommCreate | IntercommMerge, _) => return Ok(None),
        (CommIdup | CommSplitType | DistGraphCreateAdjacent | GraphCreate, _) => return Ok(None),
        (_, &Params::P2p { peer, .. }) if peer == PROC_NULL => return Ok(None),
        (Bsend, &Params::P2p { peer, tag, bytes, comm, .. }) => {
            Action::Buffered(Box::new(Action::Send { dst: peer as u32, tag, bytes, comm }))
        }
        (Ibsend, &Params::P2p { peer, tag, bytes, comm, request }) => {
            Action::Buffered(Box::new(Action::Isend { dst: peer as u32, tag, bytes, comm, req: request }))
        }
        (Send | Ssend | Rsend, &Params::P2p { peer, tag, bytes, comm, .. }) => Action::Send { dst: peer as u32, tag, bytes, comm },
        (Isend | Issend | Irsend, &Params::P2p { peer, tag, bytes, comm, request }) => {
            Action::Isend { dst: peer as u32, tag, bytes, comm, req: request }
        }
        (Recv, &Params::P2p { peer, tag, bytes, comm, .. }) => Action::Recv { src: peer, tag, bytes, comm },
        (Irecv, &Params::P2p { peer, tag, bytes, comm, request }) => Action::Irecv { src: peer, tag, bytes, comm, req: request },
        (Wait, &Params::Wait { request, .. }) => Action::Wait { req: request },
        (Test, &Params::Test { request, completed }) => match completed {
            true => Action::Wait { req: request },
            false => Action::Poll,
        },
        (Waitall, Params::Waitall { requests }) => Action::Waitall { reqs: requests.clone() },
        (Testall, Params::RequestSet { requests, result }) => match result {
            1 => Action::Waitall { reqs: requests.clone() },
            _ => Action::Poll,
        },
        (Waitany | Testany, Params::RequestSet { requests, result }) => match requests.get(*result as usize) {
            Some(&req) if *result >= 0 => Action::Wait { req },
            _ if rec.op == Testany => Action::Poll,
            _ => return Ok(None),
        },
        (Sendrecv | SendrecvReplace, &Params::Sendrecv { dst, send_tag, send_bytes, src, recv_tag, recv_bytes, comm }) => {
            Action::Sendrecv { dst: dst as u32, send_tag, send_bytes, src, recv_tag, recv_bytes, comm }
        }
        (Barrier, &Params::Coll { comm, .. }) => Action::Barrier { comm },
        (Bcast, &Params::Coll { root: r, bytes, comm }) => Action::Bcast { root: root(r), bytes, comm },
        (Reduce, &Params::Coll { root: r, bytes, comm }) => Action::Reduce { root: root(r), bytes, comm },
        (Allreduce, &Params::Coll { bytes, comm, .. }) => Action::Allreduce { bytes, comm },
        (Gather | GathervTotal, &Params::Coll { root: r, bytes, comm }) => Action::Gather { root: root(r), bytes, comm },
        (Gatherv, Params::Vcoll { root: r, comm, send, .. }) => {
            Action::Gather { root: root(*r), bytes: send.first().copied().unwrap_or(0), comm: *comm }
        }
        (Scatterv, Params::Vcoll { root: r, comm, send, .. }) => Action::Scatterv { root: root(*r), send_bytes: send.clone(), comm: *comm },
        (Allgatherv, Params::Vcoll { comm, recv, .. }) => Action::Allgatherv { recv_bytes: recv.clone(), comm: *comm },
        (Alltoallv | Alltoallw, Params::Vcoll { comm, send, .. }) => Action::Alltoallv { send_bytes: send.clone(), comm: *comm },
        (ReduceScatter, Params::Vcoll { comm, recv, .. }) => Action::ReduceScatter { recv_bytes: recv.clone(), comm: *comm },
        (op, Params::Vcoll { root, comm, request, send, recv }) if *request != 0 => {
            let Some(blocking) = blocking_of(op) else { return Err(op) };
            let params = Params::Vcoll { root: *root, comm: *comm, request: 0, send: send.clone(), recv: recv.clone() };
            match op_action(&CallRecord { op: blocking, params, ..rec.clone() }) {
                Ok(Some(coll)) => Action::Icoll { req: *request, coll: Box::new(coll) },
                Ok(None) => return Ok(None),
                Err(_) => return Err(op),
            }
        }
        (_, Params::Neighbor { comm, request, dsts, send, srcs, .. }) => {
            let sends = dsts.iter().zip(send).filter(|(&w, _)| w >= 0).map(|(&w, &b)| (w as u32, b)).collect();
            let srcs = srcs.iter().filter(|&&w| w >= 0).map(|&w| w as u32).collect();
            let coll = Action::Neighbor { sends, srcs, comm: *comm };
            match *request {
                0 => coll,
                req => Action::Icoll { req, coll: Box::new(coll) },
            }
        }
        (Scatter, &Params::Coll { root: r, bytes, comm }) => Action::Scatter { root: root(r), bytes, comm },
        (Allgather, &Params::Coll { bytes, comm, .. }) => Action::Allgather { bytes, comm },
        (Alltoall, &Params::Coll { bytes, comm, .. }) => Action::Alltoall { bytes, comm },
        (Scan, &Params::Coll { bytes, comm, .. }) => Action::Scan { bytes, exclusive: false, comm },
        (Exscan, &Params::Coll { bytes, comm, .. }) => Action::Scan { bytes, exclusive: true, comm },
        (op, &Params::Icoll { root, bytes, comm, request }) => {
            let Some(blocking) = blocking_of(op) else { return Err(op) };
            let rec = CallRecord { op: blocking, params: Params::Coll { root, bytes, comm }, ..rec.clone() };
            match op_action(&rec) {
                Ok(Some(coll)) => Action::Icoll { req: request, coll: Box::new(coll) },
                Ok(None) => return Ok(None),
                Err(_) => return Err(op),
            }
        }
        (Cancel, &Params::Request { request }) => Action::Cancel { req: request },
        (Waitsome | Testsome, Params::RequestSome { requests, completed }) => {
            let reqs: Vec<u64> = completed.iter().filter_map(|&i| requests.get(i as usize).copied()).collect();
            match (reqs.is_empty(), rec.op) {
                (true, Testsome) => Action::Poll,
                (true, _) => return Ok(None),
                (false, _) => Action::Waitall { reqs },
            }
        }
        (op, &Params::Io { file, offset, bytes, comm, request }) => {
            let recorded_s = rec.t_end_ns.saturating_sub(rec.t_start_ns) as f64 * 1e-9;
            let call = match op {
                FileOpenIo => IoCall::Open { comm },
                FileClose => IoCall::Close,
                FileSync => IoCall::Sync,
                FileSetSize | FilePreallocate | FileDelete => IoCall::Meta,
                FileRead | FileReadAt => IoCall::Read,
                FileWrite | FileWriteAt => IoCall::Write,
                FileReadAll | FileReadAtAll => IoCall::ReadAll,
                FileWriteAll | FileWriteAtAll => IoCall::WriteAll,
                FileIread | FileIreadAt => IoCall::Iread { req: request },
                FileIwrite | FileIwriteAt => IoCall::Iwrite { req: request },
                _ => return Ok(Some(Action::Compute { seconds: recorded_s, region: region_key_id(IO_REGION) })),
            };
            Action::Io { call, file, offset, bytes, recorded_s }
        }
        (op, Params::IoInfo { file, comm, disp: _, view_bytes, view_extent, block_bytes, hints, .. }) => {
            let info = crate::action::FileInfo {
                open_comm: (op == FileOpen).then_some(*comm),
                view: crate::action::FileView::strided(*view_bytes, *view_extent, *block_bytes),
                sets_view: op == FileSetView,
                hints: crate::action::Hints::from_pairs(hints),
            };
            Action::IoInfo { file: *file, info: Box::new(info), recorded_s: rec.t_end_ns.saturating_sub(rec.t_start_ns) as f64 * 1e-9 }
        }
        (op, Params::Rma { .. }) => return rma::rma_action(op, &rec.params),
        (op, _) => return Err(op),
    }))
}

impl Iterator for TraceActions {
    type Item = Result<Action, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(a) = self.convert.pop() {
            return Some(Ok(a));
        }
        let rec = match self.records.next()? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let (_, region) = self.regions.region(&self.trace, self.prev_caller, rec.caller);
        self.prev_caller = rec.caller;
        let ns = match self.compute {
            ComputeTime::Cpu => rec.compute_cpu_ns,
            ComputeTime::Wall => rec.compute_wall_ns,
        };
        match self.convert.convert(&rec, ns as f64 * 1e-9, region) {
            Ok(compute) => Some(Ok(compute)),
            Err(op) => {
                let kind = TraceErrorKind::NotReplayable { call: op.mpi_name() };
                Some(Err(TraceError { path: self.trace.path.clone(), kind }))
            }
        }
    }
}

/// The blocking collective a nonblocking one stands for.
pub fn blocking_of(op: Op) -> Option<Op> {
    use Op::*;
    Some(match op {
        Ibarrier => Barrier,
        Ibcast => Bcast,
        Ireduce => Reduce,
        Iallreduce => Allreduce,
        Igather => Gather,
        IgathervTotal => GathervTotal,
        Iscatter => Scatter,
        IscattervTotal => ScattervTotal,
        Iallgather => Allgather,
        IallgathervTotal => AllgathervTotal,
        Ialltoall => Alltoall,
        IalltoallvTotal => AlltoallvTotal,
        IreduceScatterTotal => ReduceScatterTotal,
        Igatherv => Gatherv,
        Iscatterv => Scatterv,
        Iallgatherv => Allgatherv,
        Ialltoallv => Alltoallv,
        IreduceScatter => ReduceScatter,
        Ialltoallw => Alltoallw,
        IreduceScatterBlock => ReduceScatterBlock,
        Iscan => Scan,
        Iexscan => Exscan,
        _ => return None,
    })
}

/// Per-rank request state the records alone do not carry: what each
/// persistent request posts when started, and the message each matched
/// probe found.
#[derive(Debug, Default)]
pub struct RequestBook {
    /// Persistent request → the `Isend`/`Irecv` a start posts (`None`:
    /// `MPI_PROC_NULL`, nothing to post).
    persistent: HashMap<u64, Option<Action>>,
    /// Message handle of an `Mprobe`/`Improbe` → (source, tag, comm).
    messages: HashMap<u64, (i32, i32, u32)>,
}

impl RequestBook {
    /// Appends the actions of `rec` (none, one or several) to `out`.
    ///
    /// # Errors
    /// `Err(op)` for a call replay cannot represent ([`op_action`]).
    pub fn push_actions(&mut self, rec: &CallRecord, out: &mut impl Extend<Action>) -> Result<(), Op> {
        if !self.actions(rec, out) {
            out.extend(op_action(rec)?);
        }
        Ok(())
    }

    /// Appends the actions of `rec` to `out` when it is one of the calls
    /// this book handles (persistent requests, `Request_free`, matched
    /// probes and receives, nonblocking MPI-IO); false for the others,
    /// which [`op_action`] converts.
    ///
    /// `MPI_Start` posts what the init call described, under the same
    /// request, which a wait completes and a later start reuses;
    /// `MPI_Mrecv` receives from the source and tag its probe matched.
    fn actions(&mut self, rec: &CallRecord, out: &mut impl Extend<Action>) -> bool {
        use Op::*;
        match (rec.op, &rec.params) {
            (SendInit | SsendInit | BsendInit | RsendInit, &Params::P2p { peer, tag, bytes, comm, request }) => {
                let post = (peer != PROC_NULL).then_some(Action::Isend { dst: peer as u32, tag, bytes, comm, req: request });
                let post = match rec.op {
                    BsendInit => post.map(|p| Action::Buffered(Box::new(p))),
                    _ => post,
                };
                self.persistent.insert(request, post);
            }
            (RecvInit, &Params::P2p { peer, tag, bytes, comm, request }) => {
                let post = (peer != PROC_NULL).then_some(Action::Irecv { src: peer, tag, bytes, comm, req: request });
                self.persistent.insert(request, post);
            }
            (Start, &Params::Request { request }) => out.extend(self.start(request)),
            (Startall, Params::Waitall { requests }) => {
                for &r in requests {
                    out.extend(self.start(r));
                }
            }
            (RequestFree, &Params::Request { request }) => {
                self.persistent.remove(&request);
                out.extend([Action::RequestFree { req: request }]);
            }
            (Mprobe | Improbe, &Params::P2p { peer, tag, comm, request, .. }) => {
                if request != 0 && peer >= 0 {
                    self.messages.insert(request, (peer, tag, comm));
                }
            }
            (Mrecv | Imrecv, &Params::Mrecv { message, bytes, request }) => {
                if let Some((src, tag, comm)) = self.messages.remove(&message) {
                    out.extend([match rec.op {
                        Mrecv => Action::Recv { src, tag, bytes, comm },
                        _ => Action::Irecv { src, tag, bytes, comm, req: request },
                    }]);
                }
            }
            _ => return false,
        }
        true
    }

    fn start(&self, request: u64) -> Option<Action> {
        self.persistent.get(&request).cloned().flatten()
    }
}

#[cfg(test)]
mod tests;

//! Replay actions: the closed set of things a rank does, named after
//! SimGrid's time-independent trace verbs (`compute`, `send`, `isend`,
//! `recv`, `irecv`, `wait`, `waitall`, `barrier`, `bcast`, `reduce`,
//! `allreduce`, `sendrecv`, `alltoall`, …), and their derivation from
//! interposer traces ([`TraceActions`]) and SimGrid TI traces
//! ([`crate::ti`]).

mod convert;
pub mod file;
mod names;

use crate::network::rma::RmaMove;

/// A rank's actions, streamed: rank r of a replay is the r-th stream.
pub type ActionStream<'a, E> = Box<dyn Iterator<Item = Result<Action, E>> + 'a>;

/// One step of one rank. Peers and roots are world ranks; sizes are bytes;
/// request ids are opaque and unique among a rank's pending requests.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A compute block of `seconds` in call-site region `region`
    /// (see [`region_id`]; 0 when unknown).
    Compute {
        /// Duration on the traced machine, seconds.
        seconds: f64,
        /// Region id.
        region: u64,
    },
    /// Blocking standard-mode send.
    Send {
        /// Destination world rank.
        dst: u32,
        /// Tag.
        tag: i32,
        /// Size, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// Nonblocking send creating request `req`.
    Isend {
        /// Destination world rank.
        dst: u32,
        /// Tag.
        tag: i32,
        /// Size, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
        /// Request id.
        req: u64,
    },
    /// A buffered send (`MPI_Bsend`, `MPI_Ibsend`, a started
    /// `MPI_Bsend_init`): the [`Action::Send`] or [`Action::Isend`] it
    /// holds, sent eagerly whatever its size (the library copies it to the
    /// attached buffer and returns; MPI-4.0 §3.6).
    Buffered(Box<Action>),
    /// Blocking receive; `src` may be [`ANY_SOURCE`](crate::trace::record::ANY_SOURCE), `tag` may be `ANY_TAG` (-1).
    Recv {
        /// Source world rank or [`ANY_SOURCE`](crate::trace::record::ANY_SOURCE).
        src: i32,
        /// Tag or -1.
        tag: i32,
        /// Size, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// Nonblocking receive creating request `req`.
    Irecv {
        /// Source world rank or [`ANY_SOURCE`](crate::trace::record::ANY_SOURCE).
        src: i32,
        /// Tag or -1.
        tag: i32,
        /// Size, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
        /// Request id.
        req: u64,
    },
    /// Wait for one request (unknown or null ids complete at once).
    Wait {
        /// Request id.
        req: u64,
    },
    /// Wait for all listed requests.
    Waitall {
        /// Request ids.
        reqs: Vec<u64>,
    },
    /// `MPI_Sendrecv`: a send and a receive that progress together.
    Sendrecv {
        /// Destination world rank.
        dst: u32,
        /// Send tag.
        send_tag: i32,
        /// Bytes sent.
        send_bytes: u64,
        /// Source world rank or [`ANY_SOURCE`](crate::trace::record::ANY_SOURCE).
        src: i32,
        /// Receive tag.
        recv_tag: i32,
        /// Bytes received.
        recv_bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// Barrier over `comm`.
    Barrier {
        /// Communicator id.
        comm: u32,
    },
    /// Broadcast of `bytes` from world rank `root`.
    Bcast {
        /// Root world rank.
        root: u32,
        /// Payload, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// Reduction of `bytes` per rank to world rank `root`.
    Reduce {
        /// Root world rank.
        root: u32,
        /// Payload per rank, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// All-reduction of `bytes` per rank.
    Allreduce {
        /// Payload per rank, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// All-to-all: `bytes` to and from every rank (SimGrid `alltoall`).
    Alltoall {
        /// Payload sent to each rank, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// All-to-all with per-peer sizes (SimGrid `alltoallv`).
    Alltoallv {
        /// Bytes sent to each rank, len = communicator size.
        send_bytes: Vec<u64>,
        /// Communicator id.
        comm: u32,
    },
    /// All-gather of `bytes` per rank (SimGrid `allgather`).
    Allgather {
        /// Contribution of each rank, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// All-gather with per-rank contributions (SimGrid `allgatherv`).
    Allgatherv {
        /// Contribution of each rank, bytes, len = communicator size.
        recv_bytes: Vec<u64>,
        /// Communicator id.
        comm: u32,
    },
    /// Gather (or gatherv: the sender's size is what costs) to `root`.
    Gather {
        /// Root world rank.
        root: u32,
        /// This rank's contribution, bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// Scatter of `bytes` to each rank from `root`.
    Scatter {
        /// Root world rank.
        root: u32,
        /// Bytes each rank receives.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// Scatter with per-rank sizes from `root` (only the root's sizes matter).
    Scatterv {
        /// Root world rank.
        root: u32,
        /// Bytes sent to each rank (root's view; empty on other ranks).
        send_bytes: Vec<u64>,
        /// Communicator id.
        comm: u32,
    },
    /// Reduce-scatter: rank i ends with `recv_bytes[i]` of the reduction.
    ReduceScatter {
        /// Bytes each rank receives, len = communicator size.
        recv_bytes: Vec<u64>,
        /// Communicator id.
        comm: u32,
    },
    /// A neighbourhood collective (`MPI_Neighbor_*`): this rank sends to
    /// each listed destination and receives from each listed source, all
    /// posted at once on the collective's context, then waits for them
    /// all. Neighbours are world ranks; `MPI_PROC_NULL` neighbours and
    /// this rank itself (a local copy) are left out.
    Neighbor {
        /// Destination world rank and bytes sent to it, in MPI's neighbour order.
        sends: Vec<(u32, u64)>,
        /// Source world ranks, in MPI's neighbour order.
        srcs: Vec<u32>,
        /// Communicator id (of a communicator with a topology).
        comm: u32,
    },
    /// Inclusive (`exclusive = false`) or exclusive prefix reduction.
    Scan {
        /// Payload per rank, bytes.
        bytes: u64,
        /// `MPI_Exscan` rather than `MPI_Scan`.
        exclusive: bool,
        /// Communicator id.
        comm: u32,
    },
    /// `MPI_File_open`, `MPI_File_set_view` or `MPI_File_set_info` on
    /// `file`: a metadata operation for an open (which also names the
    /// file's communicator), and the view and hints the file's later
    /// accesses follow ([`FileInfo`]); without a file system it
    /// takes `recorded_s` as compute, as [`Action::Io`].
    IoInfo {
        /// The rank's id of the file.
        file: u32,
        /// What the call says (boxed: rare, and larger than other actions).
        info: Box<FileInfo>,
        /// The call's measured duration, seconds.
        recorded_s: f64,
    },
    /// An MPI-IO call on `file` (the rank's own file id), timed by the
    /// platform's first file system ([`crate::io`]); without one it takes
    /// `recorded_s`, its measured duration, as compute of region `MPI-IO`.
    Io {
        /// What the call does.
        call: IoCall,
        /// The rank's id of the file.
        file: u32,
        /// First byte accessed.
        offset: u64,
        /// Bytes read or written.
        bytes: u64,
        /// The call's measured duration, seconds.
        recorded_s: f64,
    },
    /// A SimGrid TI `compute <flops>`: work timed at the host's
    /// `speed_flops` (flop/s).
    Flops {
        /// Floating-point operations.
        flops: f64,
    },
    /// A nonblocking collective (`MPI_Ibarrier`, `MPI_Iallreduce`, …):
    /// `coll` is the blocking collective it stands for, run on the same
    /// schedule, and `req` the request a later wait completes. The
    /// schedule progresses on its own while the rank goes on (see
    /// `replay`'s "Nonblocking collectives").
    Icoll {
        /// Request id.
        req: u64,
        /// The collective (one of the blocking collective actions).
        coll: Box<Action>,
    },
    /// `MPI_Cancel`: a receive not matched yet is withdrawn and its
    /// request completes at once; anything else is left to complete.
    Cancel {
        /// Request id.
        req: u64,
    },
    /// `MPI_Request_free`: the handle is forgotten; an active operation
    /// still completes, with no one waiting for it.
    RequestFree {
        /// Request id.
        req: u64,
    },
    /// A poll of the MPI library: an `MPI_Test`, `MPI_Testany`,
    /// `MPI_Testall` or `MPI_Testsome` that completed no request, or an
    /// `MPI_Iprobe`. The rank is busy `[smpi] poll_s` (one pass of the
    /// library's progress engine); a polling loop costs its polls.
    Poll,
    /// A new communicator (`MPI_Comm_dup`/`split`/`create`) this rank is
    /// a member of. `comm` is the rank's own id for it (ids are per rank);
    /// ranks whose member lists are equal, and who created such a list
    /// equally often before, name the same communicator.
    CommCreate {
        /// This rank's id of the new communicator.
        comm: u32,
        /// World rank of each member, in communicator rank order.
        members: Vec<u32>,
    },
    /// `MPI_Init`: the start of the replayed span.
    Init,
    /// `MPI_Finalize`: the end of the rank's replayed span.
    Finalize,
    /// A one-sided communication call (MPI RMA) on the rank's window `win`
    /// (its own id, as the interposer numbered it); the model is in
    /// [`crate::replay`]'s RMA engine (fence and PSCW epochs, passive
    /// target locks, transfers without the target's participation).
    Rma {
        /// The rank's window id.
        win: u32,
        /// What the call does.
        call: RmaCall,
    },
}

impl Action {
    /// Whether the action's outcome can depend on the order in which the
    /// replay takes ranks whose clocks are close, rather than on the
    /// ranks' times alone: an `MPI_ANY_SOURCE` receive (which message it
    /// takes), `MPI_Cancel` (whether the receive was matched yet), a
    /// nonblocking collective, one-sided communication and MPI-IO (queues
    /// shared with other ranks). See [`crate::replay::Replay::order_free`].
    pub fn order_sensitive(&self) -> bool {
        match self {
            Action::Recv { src, .. } | Action::Irecv { src, .. } | Action::Sendrecv { src, .. } => *src == crate::trace::record::ANY_SOURCE,
            Action::Buffered(a) => a.order_sensitive(),
            Action::Cancel { .. } | Action::Icoll { .. } | Action::Rma { .. } | Action::Io { .. } | Action::IoInfo { .. } => true,
            _ => false,
        }
    }
}

/// What an [`Action::Rma`] does. Targets and group members are world ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RmaCall {
    /// `MPI_Win_create`/`allocate`/`allocate_shared`/`create_dynamic`:
    /// collective over the rank's communicator `comm`.
    Create {
        /// The rank's communicator id.
        comm: u32,
    },
    /// `MPI_Win_free`: collective over the window's communicator.
    Free,
    /// `MPI_Put` (and `MPI_Rput` with its request): `bytes` move origin →
    /// target.
    Put {
        /// World rank of the target.
        target: u32,
        /// Bytes moved.
        bytes: u64,
        /// Request id of the `MPI_R*` form; 0 otherwise.
        req: u64,
    },
    /// `MPI_Accumulate` (and `MPI_Raccumulate` with its request): `bytes`
    /// move origin → target and are combined with the target's.
    Accumulate {
        /// World rank of the target.
        target: u32,
        /// Bytes moved.
        bytes: u64,
        /// Request id of the `MPI_R*` form; 0 otherwise.
        req: u64,
    },
    /// `MPI_Get` (`MPI_Rget`): a request to the target, `bytes` back.
    Get {
        /// World rank of the target.
        target: u32,
        /// Bytes fetched.
        bytes: u64,
        /// Request id of the `MPI_R*` form; 0 otherwise.
        req: u64,
    },
    /// `MPI_Get_accumulate`, `MPI_Fetch_and_op`, `MPI_Compare_and_swap`
    /// (`MPI_Rget_accumulate`): `bytes` to the target and `bytes` back.
    GetAccumulate {
        /// World rank of the target.
        target: u32,
        /// Bytes of the result buffer.
        bytes: u64,
        /// Request id of the `MPI_R*` form; 0 otherwise.
        req: u64,
    },
    /// `MPI_Win_fence`.
    Fence,
    /// `MPI_Win_lock`.
    Lock {
        /// World rank of the target.
        target: u32,
        /// `MPI_LOCK_EXCLUSIVE` (else shared).
        exclusive: bool,
    },
    /// `MPI_Win_unlock`.
    Unlock {
        /// World rank of the target.
        target: u32,
    },
    /// `MPI_Win_lock_all`.
    LockAll,
    /// `MPI_Win_unlock_all`.
    UnlockAll,
    /// `MPI_Win_flush`, `flush_local` (one target) and `flush_all`,
    /// `flush_local_all` (`None`).
    Flush {
        /// World rank of the target; `None` for all.
        target: Option<u32>,
    },
    /// `MPI_Win_post`: exposes the window to the `origins`.
    Post {
        /// World ranks of the origin group.
        origins: Vec<u32>,
    },
    /// `MPI_Win_start`: an access epoch on the `targets`.
    Start {
        /// World ranks of the target group.
        targets: Vec<u32>,
    },
    /// `MPI_Win_complete`: ends the access epoch.
    Complete,
    /// `MPI_Win_wait`: ends the exposure epoch.
    Wait,
}

impl RmaCall {
    /// The data movement of a put, accumulate, get or get-accumulate: what
    /// it moves ([`RmaMove`], whose cost model it takes), to which target
    /// (world rank), how many bytes, and its request handle (0 for none);
    /// `None` for every other call.
    pub fn movement(&self) -> Option<(RmaMove, u32, u64, u64)> {
        match *self {
            RmaCall::Put { target, bytes, req } => Some((RmaMove::Put, target, bytes, req)),
            RmaCall::Accumulate { target, bytes, req } => Some((RmaMove::Accumulate, target, bytes, req)),
            RmaCall::Get { target, bytes, req } => Some((RmaMove::Get, target, bytes, req)),
            RmaCall::GetAccumulate { target, bytes, req } => Some((RmaMove::GetAccumulate, target, bytes, req)),
            _ => None,
        }
    }

    /// Which of the platform's one-sided call costs this call takes
    /// ([`crate::platform::Smpi::rma_call_cost`]).
    pub fn cost_kind(&self) -> RmaCallKind {
        use RmaCallKind as K;
        match self {
            RmaCall::Create { .. } => K::Create,
            RmaCall::Free => K::Free,
            RmaCall::Lock { .. } => K::Lock,
            RmaCall::Unlock { .. } => K::Unlock,
            RmaCall::Post { .. } => K::Post,
            RmaCall::Complete => K::Complete,
            _ => K::Other,
        }
    }
}

pub use crate::trace::{is_any_source, region_id, ComputeTime};
pub use convert::{op_action, RecordConverter, RequestBook, TraceActions};
pub use file::{FileInfo, FileView, Hints};

/// The one-sided calls as their cost goes ([`Smpi::rma_call_cost`](crate::platform::Smpi::rma_call_cost)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmaCallKind {
    /// `MPI_Win_create`, `MPI_Win_allocate`, `MPI_Win_allocate_shared`, `MPI_Win_create_dynamic`.
    Create,
    /// `MPI_Win_free`.
    Free,
    /// `MPI_Win_lock`.
    Lock,
    /// `MPI_Win_unlock`.
    Unlock,
    /// `MPI_Win_post`.
    Post,
    /// `MPI_Win_complete`.
    Complete,
    /// Any other one-sided call: the data movements, fence, start, wait,
    /// the flushes, `lock_all` and `unlock_all`.
    Other,
}

/// What an [`Action::Io`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoCall {
    /// `MPI_File_open` on the rank's communicator `comm` (a metadata
    /// operation; later collective accesses of the file run among its members).
    Open {
        /// The rank's communicator id.
        comm: u32,
    },
    /// `MPI_File_close` (metadata).
    Close,
    /// `MPI_File_sync`: waits for the servers' caches to drain.
    Sync,
    /// `MPI_File_set_size`, `preallocate` or `delete` (metadata).
    Meta,
    /// An independent read (`MPI_File_read`, `read_at`).
    Read,
    /// An independent write (`MPI_File_write`, `write_at`).
    Write,
    /// A collective read (`MPI_File_read_all`, `read_at_all`): two-phase.
    ReadAll,
    /// A collective write (`MPI_File_write_all`, `write_at_all`): two-phase.
    WriteAll,
    /// A nonblocking read creating request `req` (`MPI_File_iread`, `iread_at`).
    Iread {
        /// Request id.
        req: u64,
    },
    /// A nonblocking write creating request `req` (`MPI_File_iwrite`, `iwrite_at`).
    Iwrite {
        /// Request id.
        req: u64,
    },
}

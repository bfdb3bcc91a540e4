//! Binary call records of the interposer's per-rank traces.
//!
//! One record per intercepted MPI call. It carries the compute block that
//! ended when the call began (thread CPU time and wall time, nanoseconds),
//! the caller's return address, the call's own start and end (nanoseconds
//! since the rank's trace epoch, taken at `MPI_Init` exit) and the call's
//! parameters, already normalized by the interposer: peers and roots as
//! world ranks, sizes in bytes, requests as opaque 64-bit handles.
//!
//! Their encoding is in [`super::codec`].

use std::fmt;

/// Wildcard peer (`MPI_ANY_SOURCE`) as stored in records.
pub const ANY_SOURCE: i32 = -1;
/// Wildcard tag (`MPI_ANY_TAG`) as stored in records.
pub const ANY_TAG: i32 = -1;
/// Peer value stored for `MPI_PROC_NULL`.
pub const PROC_NULL: i32 = -2;
/// Communicator id of `MPI_COMM_WORLD`.
pub const COMM_WORLD: u32 = 0;
/// Communicator id stored when the interposer could not name the communicator.
pub const COMM_UNKNOWN: u32 = u32::MAX;

macro_rules! ops {
    ($($(#[$doc:meta])* $name:ident = $code:expr, $mpi:expr;)*) => {
        /// The MPI operation a record describes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Op { $($(#[$doc])* $name = $code,)* }

        impl Op {
            /// Decodes an op code; `None` for codes this reader does not know.
            #[inline]
            pub fn from_code(code: u8) -> Option<Op> {
                match code { $($code => Some(Op::$name),)* _ => None }
            }
            /// The MPI function name, e.g. `"MPI_Send"`.
            pub fn mpi_name(self) -> &'static str {
                match self { $(Op::$name => $mpi,)* }
            }
            /// Every op, in code order.
            pub const ALL: &'static [Op] = &[$(Op::$name,)*];
        }
    };
}

ops! {
    /// `MPI_Init`.
    Init = 1, "MPI_Init";
    /// `MPI_Init_thread`.
    InitThread = 2, "MPI_Init_thread";
    /// `MPI_Finalize`.
    Finalize = 3, "MPI_Finalize";
    /// `MPI_Comm_rank`.
    CommRank = 4, "MPI_Comm_rank";
    /// `MPI_Comm_size`.
    CommSize = 5, "MPI_Comm_size";
    /// `MPI_Send` (blocking standard send).
    Send = 10, "MPI_Send";
    /// `MPI_Recv` (blocking receive; peer is the status source).
    Recv = 11, "MPI_Recv";
    /// `MPI_Isend`.
    Isend = 12, "MPI_Isend";
    /// `MPI_Irecv` (peer may be [`ANY_SOURCE`]).
    Irecv = 13, "MPI_Irecv";
    /// `MPI_Wait`.
    Wait = 14, "MPI_Wait";
    /// `MPI_Waitall`.
    Waitall = 15, "MPI_Waitall";
    /// `MPI_Sendrecv`.
    Sendrecv = 16, "MPI_Sendrecv";
    /// `MPI_Ssend` (synchronous send).
    Ssend = 17, "MPI_Ssend";
    /// `MPI_Bsend` (buffered send).
    Bsend = 18, "MPI_Bsend";
    /// `MPI_Rsend` (ready send).
    Rsend = 19, "MPI_Rsend";
    /// `MPI_Issend`.
    Issend = 20, "MPI_Issend";
    /// `MPI_Ibsend`.
    Ibsend = 21, "MPI_Ibsend";
    /// `MPI_Irsend`.
    Irsend = 22, "MPI_Irsend";
    /// `MPI_Probe` (peer, tag and bytes of the probed message).
    Probe = 23, "MPI_Probe";
    /// `MPI_Iprobe` (found or not).
    Iprobe = 24, "MPI_Iprobe";
    /// `MPI_Test`.
    Test = 25, "MPI_Test";
    /// `MPI_Testall`.
    Testall = 26, "MPI_Testall";
    /// `MPI_Waitany`.
    Waitany = 27, "MPI_Waitany";
    /// `MPI_Testany`.
    Testany = 28, "MPI_Testany";
    /// `MPI_Sendrecv_replace`.
    SendrecvReplace = 29, "MPI_Sendrecv_replace";
    /// `MPI_Barrier`.
    Barrier = 30, "MPI_Barrier";
    /// `MPI_Bcast`.
    Bcast = 31, "MPI_Bcast";
    /// `MPI_Reduce`.
    Reduce = 32, "MPI_Reduce";
    /// `MPI_Allreduce`.
    Allreduce = 33, "MPI_Allreduce";
    /// `MPI_Gather` (bytes sent per rank).
    Gather = 34, "MPI_Gather";
    /// `MPI_Gatherv` in traces written before the per-member counts (bytes sent by this rank).
    GathervTotal = 35, "MPI_Gatherv";
    /// `MPI_Scatter` (bytes received per rank).
    Scatter = 36, "MPI_Scatter";
    /// `MPI_Scatterv` in traces written before the per-member counts (bytes received by this rank).
    ScattervTotal = 37, "MPI_Scatterv";
    /// `MPI_Allgather` (bytes sent per rank).
    Allgather = 38, "MPI_Allgather";
    /// `MPI_Allgatherv` in traces written before the per-member counts (bytes sent by this rank).
    AllgathervTotal = 39, "MPI_Allgatherv";
    /// `MPI_Alltoall` (bytes sent to each rank).
    Alltoall = 40, "MPI_Alltoall";
    /// `MPI_Alltoallv` in traces written before the per-member counts (bytes sent by this rank in all).
    AlltoallvTotal = 41, "MPI_Alltoallv";
    /// `MPI_Reduce_scatter` in traces written before the per-member counts (bytes of the whole vector).
    ReduceScatterTotal = 42, "MPI_Reduce_scatter";
    /// `MPI_Reduce_scatter_block` (bytes per rank block).
    ReduceScatterBlock = 43, "MPI_Reduce_scatter_block";
    /// `MPI_Scan`.
    Scan = 44, "MPI_Scan";
    /// `MPI_Exscan`.
    Exscan = 45, "MPI_Exscan";
    /// `MPI_Waitsome` (the requests and the indices that completed).
    Waitsome = 46, "MPI_Waitsome";
    /// `MPI_Testsome` (the requests and the indices that completed).
    Testsome = 47, "MPI_Testsome";
    /// `MPI_Cancel`.
    Cancel = 48, "MPI_Cancel";
    /// `MPI_Request_free`.
    RequestFree = 49, "MPI_Request_free";
    /// `MPI_Send_init` (a persistent send: peer, tag, bytes, comm, request).
    SendInit = 50, "MPI_Send_init";
    /// `MPI_Ssend_init`.
    SsendInit = 51, "MPI_Ssend_init";
    /// `MPI_Bsend_init`.
    BsendInit = 52, "MPI_Bsend_init";
    /// `MPI_Rsend_init`.
    RsendInit = 53, "MPI_Rsend_init";
    /// `MPI_Recv_init` (a persistent receive).
    RecvInit = 54, "MPI_Recv_init";
    /// `MPI_Start` (a persistent request).
    Start = 55, "MPI_Start";
    /// `MPI_Startall` (persistent requests, in argument order).
    Startall = 56, "MPI_Startall";
    /// `MPI_Mprobe` (the matched message and its handle).
    Mprobe = 57, "MPI_Mprobe";
    /// `MPI_Improbe` (message handle 0 when nothing was found).
    Improbe = 58, "MPI_Improbe";
    /// `MPI_Mrecv` (receives the message of an earlier `Mprobe`).
    Mrecv = 59, "MPI_Mrecv";
    /// `MPI_Comm_dup` (new communicator and its members).
    CommDup = 60, "MPI_Comm_dup";
    /// `MPI_Comm_split`.
    CommSplit = 61, "MPI_Comm_split";
    /// `MPI_Comm_create`.
    CommCreate = 62, "MPI_Comm_create";
    /// `MPI_Comm_free`.
    CommFree = 63, "MPI_Comm_free";
    /// `MPI_Cart_create` (new communicator and its members).
    CartCreate = 64, "MPI_Cart_create";
    /// `MPI_Cart_sub`.
    CartSub = 65, "MPI_Cart_sub";
    /// `MPI_Intercomm_create` (local and remote group members).
    IntercommCreate = 66, "MPI_Intercomm_create";
    /// `MPI_Intercomm_merge` (the new intracommunicator's members).
    IntercommMerge = 67, "MPI_Intercomm_merge";
    /// `MPI_Imrecv` (message handle and the new request).
    Imrecv = 68, "MPI_Imrecv";
    /// `MPI_Comm_create_group`.
    CommCreateGroup = 69, "MPI_Comm_create_group";
    /// `MPI_Ibarrier`.
    Ibarrier = 70, "MPI_Ibarrier";
    /// `MPI_Ibcast`.
    Ibcast = 71, "MPI_Ibcast";
    /// `MPI_Ireduce`.
    Ireduce = 72, "MPI_Ireduce";
    /// `MPI_Iallreduce`.
    Iallreduce = 73, "MPI_Iallreduce";
    /// `MPI_Igather` (bytes sent per rank).
    Igather = 74, "MPI_Igather";
    /// `MPI_Igatherv` in traces written before the per-member counts.
    IgathervTotal = 75, "MPI_Igatherv";
    /// `MPI_Iscatter` (bytes received per rank).
    Iscatter = 76, "MPI_Iscatter";
    /// `MPI_Iscatterv` in traces written before the per-member counts.
    IscattervTotal = 77, "MPI_Iscatterv";
    /// `MPI_Iallgather` (bytes sent per rank).
    Iallgather = 78, "MPI_Iallgather";
    /// `MPI_Iallgatherv` in traces written before the per-member counts.
    IallgathervTotal = 79, "MPI_Iallgatherv";
    /// `MPI_Ialltoall` (bytes sent to each rank).
    Ialltoall = 80, "MPI_Ialltoall";
    /// `MPI_Ialltoallv` in traces written before the per-member counts.
    IalltoallvTotal = 81, "MPI_Ialltoallv";
    /// `MPI_Ireduce_scatter` in traces written before the per-member counts.
    IreduceScatterTotal = 82, "MPI_Ireduce_scatter";
    /// `MPI_Ireduce_scatter_block` (bytes per rank block).
    IreduceScatterBlock = 83, "MPI_Ireduce_scatter_block";
    /// `MPI_Iscan`.
    Iscan = 84, "MPI_Iscan";
    /// `MPI_Iexscan`.
    Iexscan = 85, "MPI_Iexscan";
    /// `MPI_Gatherv` with its byte counts ([`Params::Vcoll`]).
    Gatherv = 86, "MPI_Gatherv";
    /// `MPI_Scatterv` with its byte counts.
    Scatterv = 87, "MPI_Scatterv";
    /// `MPI_Allgatherv` with its byte counts.
    Allgatherv = 88, "MPI_Allgatherv";
    /// `MPI_Alltoallv` with its byte counts.
    Alltoallv = 89, "MPI_Alltoallv";
    /// `MPI_Reduce_scatter` with its byte counts.
    ReduceScatter = 90, "MPI_Reduce_scatter";
    /// `MPI_Alltoallw` (byte counts from each peer's own datatype).
    Alltoallw = 91, "MPI_Alltoallw";
    /// `MPI_Igatherv` with its byte counts.
    Igatherv = 92, "MPI_Igatherv";
    /// `MPI_Iscatterv` with its byte counts.
    Iscatterv = 93, "MPI_Iscatterv";
    /// `MPI_Iallgatherv` with its byte counts.
    Iallgatherv = 94, "MPI_Iallgatherv";
    /// `MPI_Ialltoallv` with its byte counts.
    Ialltoallv = 95, "MPI_Ialltoallv";
    /// `MPI_Ireduce_scatter` with its byte counts.
    IreduceScatter = 96, "MPI_Ireduce_scatter";
    /// `MPI_Ialltoallw`.
    Ialltoallw = 97, "MPI_Ialltoallw";
    /// `MPI_File_open` (file id, communicator).
    FileOpen = 100, "MPI_File_open";
    /// `MPI_File_close`.
    FileClose = 101, "MPI_File_close";
    /// `MPI_File_seek` (the individual file pointer after it, as a byte offset).
    FileSeek = 102, "MPI_File_seek";
    /// `MPI_File_set_view` (the view's displacement, bytes).
    FileSetView = 103, "MPI_File_set_view";
    /// `MPI_File_read` (bytes read, at the byte offset of the individual pointer).
    FileRead = 104, "MPI_File_read";
    /// `MPI_File_read_all`.
    FileReadAll = 105, "MPI_File_read_all";
    /// `MPI_File_read_at` (explicit offset, converted to bytes).
    FileReadAt = 106, "MPI_File_read_at";
    /// `MPI_File_read_at_all`.
    FileReadAtAll = 107, "MPI_File_read_at_all";
    /// `MPI_File_write`.
    FileWrite = 108, "MPI_File_write";
    /// `MPI_File_write_all`.
    FileWriteAll = 109, "MPI_File_write_all";
    /// `MPI_File_write_at`.
    FileWriteAt = 110, "MPI_File_write_at";
    /// `MPI_File_write_at_all`.
    FileWriteAtAll = 111, "MPI_File_write_at_all";
    /// `MPI_File_iread` (bytes asked for; the request completes it).
    FileIread = 112, "MPI_File_iread";
    /// `MPI_File_iwrite`.
    FileIwrite = 113, "MPI_File_iwrite";
    /// `MPI_File_iread_at`.
    FileIreadAt = 114, "MPI_File_iread_at";
    /// `MPI_File_iwrite_at`.
    FileIwriteAt = 115, "MPI_File_iwrite_at";
    /// `MPI_Comm_idup` (the new communicator has its parent's members).
    CommIdup = 116, "MPI_Comm_idup";
    /// `MPI_Comm_split_type`.
    CommSplitType = 117, "MPI_Comm_split_type";
    /// `MPI_Dist_graph_create_adjacent`.
    DistGraphCreateAdjacent = 118, "MPI_Dist_graph_create_adjacent";
    /// `MPI_Graph_create`.
    GraphCreate = 119, "MPI_Graph_create";
    /// `MPI_Neighbor_allgather` ([`Params::Neighbor`]).
    NeighborAllgather = 120, "MPI_Neighbor_allgather";
    /// `MPI_Neighbor_allgatherv`.
    NeighborAllgatherv = 121, "MPI_Neighbor_allgatherv";
    /// `MPI_Neighbor_alltoall`.
    NeighborAlltoall = 122, "MPI_Neighbor_alltoall";
    /// `MPI_Neighbor_alltoallv`.
    NeighborAlltoallv = 123, "MPI_Neighbor_alltoallv";
    /// `MPI_Neighbor_alltoallw`.
    NeighborAlltoallw = 124, "MPI_Neighbor_alltoallw";
    /// `MPI_Ineighbor_allgather`.
    IneighborAllgather = 125, "MPI_Ineighbor_allgather";
    /// `MPI_Ineighbor_allgatherv`.
    IneighborAllgatherv = 126, "MPI_Ineighbor_allgatherv";
    /// `MPI_Ineighbor_alltoall`.
    IneighborAlltoall = 127, "MPI_Ineighbor_alltoall";
    /// `MPI_Ineighbor_alltoallv`.
    IneighborAlltoallv = 128, "MPI_Ineighbor_alltoallv";
    /// `MPI_Ineighbor_alltoallw`.
    IneighborAlltoallw = 129, "MPI_Ineighbor_alltoallw";
}

/// Per-op parameters, normalized by the interposer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Params {
    /// Calls without parameters the replay needs (init, finalize, rank, size).
    None,
    /// Point-to-point: `peer` is a world rank (or [`ANY_SOURCE`] /
    /// [`PROC_NULL`]), `bytes` = count × type size, `request` is the
    /// request handle (0 for blocking calls). Also the persistent
    /// `MPI_*_init` calls (their request) and `MPI_Mprobe`/`MPI_Improbe`
    /// (the matched message as for `MPI_Probe`; `request` is the message
    /// handle, 0 when `Improbe` found nothing).
    P2p {
        /// World rank of the destination or source.
        peer: i32,
        /// Message tag, or [`ANY_TAG`].
        tag: i32,
        /// Message size in bytes.
        bytes: u64,
        /// Communicator id ([`COMM_WORLD`] = 0).
        comm: u32,
        /// Request handle; 0 for blocking calls.
        request: u64,
    },
    /// `MPI_Sendrecv`: one send and one receive, both world ranks.
    Sendrecv {
        /// World rank of the destination.
        dst: i32,
        /// Send tag.
        send_tag: i32,
        /// Bytes sent.
        send_bytes: u64,
        /// World rank of the source (resolved from the status).
        src: i32,
        /// Receive tag.
        recv_tag: i32,
        /// Bytes received (buffer size).
        recv_bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// `MPI_Wait`: the request handle and, for receives, the status source.
    Wait {
        /// Request handle waited on (0 = `MPI_REQUEST_NULL`).
        request: u64,
        /// World rank from the status, or [`ANY_SOURCE`] when not a receive.
        source: i32,
    },
    /// `MPI_Waitall` and `MPI_Startall`: the request handles, in argument order.
    Waitall {
        /// Request handles (0 = `MPI_REQUEST_NULL`).
        requests: Vec<u64>,
    },
    /// `MPI_Test`: the request handle and whether it completed.
    Test {
        /// Request handle.
        request: u64,
        /// True when the test found it complete.
        completed: bool,
    },
    /// `MPI_Testall`, `MPI_Waitany`, `MPI_Testany`: the handles and the
    /// outcome (Testall: 1 when all completed, else 0; any-variants: the
    /// index that completed, or -1).
    RequestSet {
        /// Request handles, in argument order.
        requests: Vec<u64>,
        /// Outcome, as above.
        result: i32,
    },
    /// `MPI_Probe`/`MPI_Iprobe`: the matched message, when found.
    Probe {
        /// World rank of the message's source (or the probed source when not found).
        peer: i32,
        /// Tag.
        tag: i32,
        /// Size of the matched message, bytes (0 when not found).
        bytes: u64,
        /// Communicator id.
        comm: u32,
        /// True when a message was found.
        found: bool,
    },
    /// A new communicator (`MPI_Comm_dup`/`split`/`create`): its parent,
    /// its id ([`COMM_UNKNOWN`] for `MPI_COMM_NULL`) and its members as
    /// world ranks in communicator rank order.
    CommCreate {
        /// Parent communicator id.
        parent: u32,
        /// New communicator id.
        comm: u32,
        /// World rank of each member.
        members: Vec<u32>,
    },
    /// Collectives: `root` is a world rank (-1 for rootless), `bytes` the
    /// per-rank payload (count × type size).
    Coll {
        /// World rank of the root, or -1.
        root: i32,
        /// Payload in bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
    },
    /// `MPI_Start`, `MPI_Cancel`, `MPI_Request_free`: one request handle.
    Request {
        /// Request handle.
        request: u64,
    },
    /// `MPI_Waitsome`/`MPI_Testsome`: the handles and the indices (into
    /// `requests`) that completed, in the order MPI returned them; empty
    /// when none did or all were inactive (`MPI_UNDEFINED`).
    RequestSome {
        /// Request handles, in argument order.
        requests: Vec<u64>,
        /// Indices of the completed requests.
        completed: Vec<u32>,
    },
    /// `MPI_Mrecv`/`MPI_Imrecv`: the message handle of the earlier
    /// `MPI_Mprobe`/`MPI_Improbe` (whose record names peer, tag and
    /// communicator), the bytes received and, for `Imrecv`, the request.
    Mrecv {
        /// Message handle (as the probe recorded it).
        message: u64,
        /// Bytes received (from the status; the buffer size for `Imrecv`).
        bytes: u64,
        /// Request handle; 0 for `MPI_Mrecv`.
        request: u64,
    },
    /// `MPI_Intercomm_create`: the local communicator, the new
    /// intercommunicator's id and both groups as world ranks.
    Intercomm {
        /// Local intracommunicator id.
        parent: u32,
        /// New intercommunicator id ([`COMM_UNKNOWN`] on failure).
        comm: u32,
        /// World rank of each local group member, in group rank order.
        local: Vec<u32>,
        /// World rank of each remote group member, in group rank order.
        remote: Vec<u32>,
    },
    /// Nonblocking collectives: as [`Params::Coll`] plus the request.
    Icoll {
        /// World rank of the root, or -1.
        root: i32,
        /// Payload in bytes.
        bytes: u64,
        /// Communicator id.
        comm: u32,
        /// Request handle.
        request: u64,
    },
    /// MPI-IO: the file (an id, not a handle), the absolute byte offset the
    /// access starts at (`MPI_File_get_byte_offset` of the explicit offset
    /// or of the individual pointer; `File_seek`: the pointer after it;
    /// `File_set_view`: the displacement), the bytes moved (from the status
    /// where there is one), the communicator (`File_open` only, else
    /// [`COMM_WORLD`]) and the request (`File_i*`, else 0).
    Io {
        /// File id (ids are shared with communicators, never equal to one).
        file: u32,
        /// Byte offset from the start of the file.
        offset: u64,
        /// Bytes read or written.
        bytes: u64,
        /// Communicator id (`File_open`).
        comm: u32,
        /// Request handle; 0 for blocking calls.
        request: u64,
    },
    /// The v- and w-collectives (`MPI_Gatherv`, `Scatterv`, `Allgatherv`,
    /// `Alltoallv`, `Alltoallw`, `Reduce_scatter` and their nonblocking
    /// forms): byte counts as MPI defines them on this rank, indexed by
    /// communicator rank (of the remote group on an intercommunicator).
    ///
    /// | op | `send` | `recv` |
    /// |---|---|---|
    /// | `Gatherv` | `[this rank's block]` | root: each member's block (len n); others: `[]` |
    /// | `Scatterv` | root: each member's block (len n); others: `[]` | `[this rank's block]` |
    /// | `Allgatherv` | `[this rank's block]` | each member's block (len n) |
    /// | `Alltoallv`/`Alltoallw` | bytes to each member (len n) | bytes from each member (len n) |
    /// | `Reduce_scatter` | `[]` | each member's block of the result (len n) |
    ///
    /// With `MPI_IN_PLACE` the side MPI ignores takes the in-place block
    /// (its counterpart on this rank), so `send` still says what this rank
    /// contributes. Empty lists also stand for a call that failed.
    Vcoll {
        /// World rank of the root, or -1 for rootless collectives.
        root: i32,
        /// Communicator id.
        comm: u32,
        /// Request handle; 0 for blocking calls.
        request: u64,
        /// Bytes sent, as above.
        send: Vec<u64>,
        /// Bytes received, as above.
        recv: Vec<u64>,
    },
    /// Neighbourhood collectives (`MPI_Neighbor_*`, `MPI_Ineighbor_*`):
    /// the topology's neighbours as world ranks ([`PROC_NULL`] for a
    /// Cartesian shift off a non-periodic edge), in MPI's neighbour order
    /// (Cartesian: per dimension the negative then the positive
    /// direction; graphs: `MPI_Graph_neighbors`; distributed graphs:
    /// `MPI_Dist_graph_neighbors`), and the bytes sent to or received
    /// from each. `dsts.len() == send.len()`, `srcs.len() == recv.len()`;
    /// all empty when the call failed or the communicator has no topology.
    Neighbor {
        /// Communicator id.
        comm: u32,
        /// Request handle; 0 for blocking calls.
        request: u64,
        /// World rank of each destination neighbour.
        dsts: Vec<i32>,
        /// Bytes sent to each destination.
        send: Vec<u64>,
        /// World rank of each source neighbour.
        srcs: Vec<i32>,
        /// Bytes received from each source.
        recv: Vec<u64>,
    },
}

/// One intercepted MPI call and the compute block before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// Which MPI function.
    pub op: Op,
    /// True when PMPI returned an error code.
    pub failed: bool,
    /// Return address of the call site (absolute; see the trace's module table).
    pub caller: u64,
    /// Thread CPU time of the compute block ending at this call, nanoseconds.
    pub compute_cpu_ns: u64,
    /// Wall time of the compute block ending at this call, nanoseconds.
    pub compute_wall_ns: u64,
    /// Hardware counters of the compute block, when the trace was taken
    /// with them (`INTERPOSER_COUNTERS=hw`, or `auto` where they exist).
    pub counters: Option<BlockCounters>,
    /// Call entry, nanoseconds since the trace epoch.
    pub t_start_ns: u64,
    /// Call exit, nanoseconds since the trace epoch.
    pub t_end_ns: u64,
    /// Normalized parameters.
    pub params: Params,
}

/// User-space hardware counts of one compute block (a perf_event group:
/// `PERF_COUNT_HW_CPU_CYCLES` and `PERF_COUNT_HW_INSTRUCTIONS`, kernel and
/// hypervisor excluded), as dPerf times blocks with PAPI (Cornea &
/// Bourgeois, §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockCounters {
    /// CPU cycles at the core's running frequency (so they scale with the pstate).
    pub cycles: u64,
    /// Retired instructions.
    pub instructions: u64,
}

/// Why a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The buffer ended inside a record.
    Short,
    /// The op code is not one this reader knows.
    UnknownOp(u8),
    /// A call-site index that no earlier record defined.
    BadSite(u64),
    /// A repeat marker that is malformed or starts inside another repeat.
    BadRepeat(&'static str),
    /// A recent-request index beyond the handles seen so far.
    BadRequest(u64),
    /// A record that takes its op from its call site (format 4) at a new site.
    NoOp,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Short => write!(f, "record cut short"),
            DecodeError::UnknownOp(c) => write!(f, "unknown op code {c}"),
            DecodeError::BadSite(i) => write!(f, "call-site index {i} was never defined"),
            DecodeError::BadRepeat(why) => write!(f, "bad repeat marker: {why}"),
            DecodeError::BadRequest(i) => write!(f, "recent-request index {i} was never defined"),
            DecodeError::NoOp => write!(f, "a record at a new call site without an op code"),
        }
    }
}

/// The parameter layout of each op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    None,
    P2p,
    Sendrecv,
    Wait,
    Test,
    Waitall,
    RequestSet,
    Probe,
    CommCreate,
    Coll,
    Request,
    RequestSome,
    Mrecv,
    Intercomm,
    Icoll,
    Io,
    Vcoll,
    Neighbor,
}

/// The shape of every op code, looked up once per encoded record: the
/// `match` below compiles to a chain of about 20 compares.
const SHAPES: [Shape; 256] = {
    let mut t = [Shape::None; 256];
    let mut i = 0;
    while i < Op::ALL.len() {
        t[Op::ALL[i] as usize] = shape_of(Op::ALL[i]);
        i += 1;
    }
    t
};

/// The parameter layout of `op`.
#[inline]
pub(crate) fn shape(op: Op) -> Shape {
    SHAPES[op as usize]
}

const fn shape_of(op: Op) -> Shape {
    use Op::*;
    match op {
        Send | Recv | Isend | Irecv | Ssend | Bsend | Rsend | Issend | Ibsend | Irsend => Shape::P2p,
        SendInit | SsendInit | BsendInit | RsendInit | RecvInit | Mprobe | Improbe => Shape::P2p,
        Start | Cancel | RequestFree => Shape::Request,
        Startall => Shape::Waitall,
        Waitsome | Testsome => Shape::RequestSome,
        Mrecv | Imrecv => Shape::Mrecv,
        CartCreate | CartSub | IntercommMerge | CommCreateGroup => Shape::CommCreate,
        IntercommCreate => Shape::Intercomm,
        Ibarrier | Ibcast | Ireduce | Iallreduce | Igather | IgathervTotal | Iscatter | IscattervTotal | Iallgather | IallgathervTotal
        | Ialltoall | IalltoallvTotal | IreduceScatterTotal | IreduceScatterBlock | Iscan | Iexscan => Shape::Icoll,
        Gatherv | Scatterv | Allgatherv | Alltoallv | ReduceScatter | Alltoallw | Igatherv | Iscatterv | Iallgatherv | Ialltoallv
        | IreduceScatter | Ialltoallw => Shape::Vcoll,
        NeighborAllgather | NeighborAllgatherv | NeighborAlltoall | NeighborAlltoallv | NeighborAlltoallw | IneighborAllgather
        | IneighborAllgatherv | IneighborAlltoall | IneighborAlltoallv | IneighborAlltoallw => Shape::Neighbor,
        CommIdup | CommSplitType | DistGraphCreateAdjacent | GraphCreate => Shape::CommCreate,
        FileOpen | FileClose | FileSeek | FileSetView | FileRead | FileReadAll | FileReadAt | FileReadAtAll | FileWrite | FileWriteAll
        | FileWriteAt | FileWriteAtAll | FileIread | FileIwrite | FileIreadAt | FileIwriteAt => Shape::Io,
        Sendrecv | SendrecvReplace => Shape::Sendrecv,
        Wait => Shape::Wait,
        Test => Shape::Test,
        Waitall => Shape::Waitall,
        Testall | Waitany | Testany => Shape::RequestSet,
        Probe | Iprobe => Shape::Probe,
        CommDup | CommSplit | CommCreate => Shape::CommCreate,
        Barrier | Bcast | Reduce | Allreduce | Gather | GathervTotal | Scatter | ScattervTotal | Allgather | AllgathervTotal | Alltoall
        | AlltoallvTotal | ReduceScatterTotal | ReduceScatterBlock | Scan | Exscan | CommFree => Shape::Coll,
        Init | InitThread | Finalize | CommRank | CommSize => Shape::None,
    }
}

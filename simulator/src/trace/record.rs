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
/// Communicator id of `MPI_COMM_SELF` (the rank alone; no record creates it).
pub const COMM_SELF: u32 = u32::MAX - 1;

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

include!(concat!(env!("OUT_DIR"), "/ops.rs"));

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
    /// MPI-IO open, view and hints (`MPI_File_open`, `MPI_File_set_view`,
    /// `MPI_File_set_info`): the file id, the communicator (`File_open`,
    /// else [`COMM_WORLD`]), the access mode (`File_open`), the view
    /// (`File_set_view`, else zeros: the byte displacement, the etype's
    /// size, the filetype's size and extent, and its contiguous block,
    /// bytes) and the hints given, as `(key, value)` pairs ([`hint`]).
    IoInfo {
        /// File id (ids are shared with communicators, never equal to one).
        file: u32,
        /// Communicator id (`File_open`).
        comm: u32,
        /// `MPI_MODE_*` bits of `File_open`, as the MPI library defines them.
        amode: u32,
        /// View displacement, bytes.
        disp: u64,
        /// Size of the view's etype, bytes.
        etype_bytes: u64,
        /// Data bytes in one instance of the filetype (its size).
        view_bytes: u64,
        /// Extent of the filetype, bytes (≥ `view_bytes`; larger for a strided view).
        view_extent: u64,
        /// Contiguous run of data in the filetype, bytes.
        block_bytes: u64,
        /// The hints given, `(key, value)`, keys and values as in [`hint`].
        hints: Vec<(u32, u64)>,
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
    /// One-sided communication (MPI RMA): window creation and freeing,
    /// the data-movement calls and the epoch synchronizations.
    ///
    /// | op | fields used besides `win` |
    /// |---|---|
    /// | `Win_create`, `Win_allocate`, `Win_allocate_shared`, `Win_create_dynamic` | `bytes` = this rank's window size (0 when dynamic) |
    /// | `Put`, `Accumulate`, `Rput`, `Raccumulate` | `target`, `disp`, `bytes` = origin count × type size, `op`, `request` |
    /// | `Get`, `Rget` | `target`, `disp`, `bytes` = origin count × type size, `request` |
    /// | `Get_accumulate`, `Fetch_and_op`, `Compare_and_swap`, `Rget_accumulate` | `target`, `disp`, `bytes` = result count × type size, `op`, `request` |
    /// | `Win_fence` | `assert` |
    /// | `Win_lock`, `Win_unlock`, `Win_flush`, `Win_flush_local` | `target`; `Win_lock`: `op` = [`LOCK_EXCLUSIVE`] or [`LOCK_SHARED`], `assert` |
    /// | `Win_post`, `Win_start` | `group` = the origins (post) or targets (start) as world ranks, `assert` |
    /// | `Win_lock_all`, `Win_unlock_all`, `Win_flush_all`, `Win_flush_local_all`, `Win_complete`, `Win_wait`, `Win_free` | — |
    Rma {
        /// Window id (windows share the numbering of communicators and
        /// files, never equal to one; [`COMM_UNKNOWN`] when the table of
        /// ids is full or the creation failed).
        win: u32,
        /// Id of the window's communicator ([`COMM_WORLD`] when the
        /// window is unknown).
        comm: u32,
        /// World rank of the target, -1 when the call has none.
        target: i32,
        /// Target displacement, in units of the target's `disp_unit`.
        disp: u64,
        /// Bytes, as in the table above.
        bytes: u64,
        /// Accumulate operation ([`rma_op`] codes) or lock type; 0 for none.
        op: u32,
        /// The `assert` argument (`MPI_MODE_*` bits as the MPI library
        /// defines them), 0 for none.
        assert: u32,
        /// Request handle of `MPI_R*` calls; 0 otherwise.
        request: u64,
        /// `Win_post`/`Win_start`: the group's members as world ranks.
        group: Vec<i32>,
    },
}

/// `Params::Rma::op` of `MPI_Win_lock(MPI_LOCK_EXCLUSIVE, ...)`.
pub const LOCK_EXCLUSIVE: u32 = 1;
/// `Params::Rma::op` of `MPI_Win_lock(MPI_LOCK_SHARED, ...)`.
pub const LOCK_SHARED: u32 = 2;

/// Codes of the reduction operations of accumulate calls
/// (`Params::Rma::op`), independent of the MPI library's handles.
pub mod rma_op {
    /// `MPI_SUM`.
    pub const SUM: u32 = 1;
    /// `MPI_PROD`.
    pub const PROD: u32 = 2;
    /// `MPI_MAX`.
    pub const MAX: u32 = 3;
    /// `MPI_MIN`.
    pub const MIN: u32 = 4;
    /// `MPI_LAND`.
    pub const LAND: u32 = 5;
    /// `MPI_BAND`.
    pub const BAND: u32 = 6;
    /// `MPI_LOR`.
    pub const LOR: u32 = 7;
    /// `MPI_BOR`.
    pub const BOR: u32 = 8;
    /// `MPI_LXOR`.
    pub const LXOR: u32 = 9;
    /// `MPI_BXOR`.
    pub const BXOR: u32 = 10;
    /// `MPI_MAXLOC`.
    pub const MAXLOC: u32 = 11;
    /// `MPI_MINLOC`.
    pub const MINLOC: u32 = 12;
    /// `MPI_REPLACE`.
    pub const REPLACE: u32 = 13;
    /// `MPI_NO_OP`.
    pub const NO_OP: u32 = 14;
    /// Any other (user-defined) operation.
    pub const USER: u32 = 15;
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

impl CallRecord {
    /// A record of `op` with `params` and nothing else: no call site, no
    /// compute block before it, no times (all 0), no counters.
    pub const fn bare(op: Op, params: Params) -> CallRecord {
        CallRecord {
            op,
            failed: false,
            caller: 0,
            compute_cpu_ns: 0,
            compute_wall_ns: 0,
            counters: None,
            t_start_ns: 0,
            t_end_ns: 0,
            params,
        }
    }
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
    /// A value beyond what a trace can hold: what it is, and the value
    /// read (a size over 2^53 bytes, a time that overflows).
    OutOfRange(&'static str, u64),
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
            DecodeError::OutOfRange(what, v) => write!(f, "{what} out of range (read {v})"),
        }
    }
}

/// The parameter layout of each op: which [`Params`] variant its records
/// hold (`shape` in `ops.tbl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// [`Params::None`].
    None,
    /// [`Params::P2p`].
    P2p,
    /// [`Params::Sendrecv`].
    Sendrecv,
    /// [`Params::Wait`].
    Wait,
    /// [`Params::Test`].
    Test,
    /// [`Params::Waitall`].
    Waitall,
    /// [`Params::RequestSet`].
    RequestSet,
    /// [`Params::Probe`].
    Probe,
    /// [`Params::CommCreate`].
    CommCreate,
    /// [`Params::Coll`].
    Coll,
    /// [`Params::Request`].
    Request,
    /// [`Params::RequestSome`].
    RequestSome,
    /// [`Params::Mrecv`].
    Mrecv,
    /// [`Params::Intercomm`].
    Intercomm,
    /// [`Params::Icoll`].
    Icoll,
    /// [`Params::Io`].
    Io,
    /// [`Params::IoInfo`].
    IoInfo,
    /// [`Params::Vcoll`].
    Vcoll,
    /// [`Params::Neighbor`].
    Neighbor,
    /// [`Params::Rma`].
    Rma,
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
pub fn shape(op: Op) -> Shape {
    SHAPES[op as usize]
}

/// Keys of the MPI-IO hints an [`Params::IoInfo`] record keeps (ROMIO's
/// names, "Data sieving and collective I/O in ROMIO", Thakur, Gropp &
/// Lusk, Frontiers 1999, and the MPI standard's reserved `cb_*` and
/// `striping_*` keys). Numbers are the values given; the
/// `romio_cb_*`/`romio_ds_*` switches are [`hint::ENABLE`],
/// [`hint::DISABLE`] or [`hint::AUTOMATIC`].
pub mod hint {
    /// `cb_nodes`: the number of aggregators of collective accesses.
    pub const CB_NODES: u32 = 1;
    /// `cb_buffer_size`: bytes an aggregator moves per round.
    pub const CB_BUFFER_SIZE: u32 = 2;
    /// `striping_unit`: the stripe size of a new file, bytes.
    pub const STRIPING_UNIT: u32 = 3;
    /// `striping_factor`: how many servers a new file is striped over.
    pub const STRIPING_FACTOR: u32 = 4;
    /// `romio_cb_write`: two-phase for collective writes.
    pub const CB_WRITE: u32 = 5;
    /// `romio_cb_read`: two-phase for collective reads.
    pub const CB_READ: u32 = 6;
    /// `romio_ds_write`: data sieving for strided independent writes.
    pub const DS_WRITE: u32 = 7;
    /// `romio_ds_read`: data sieving for strided independent reads.
    pub const DS_READ: u32 = 8;
    /// `ind_wr_buffer_size`: the data-sieving buffer of writes, bytes.
    pub const IND_WR_BUFFER_SIZE: u32 = 9;
    /// `ind_rd_buffer_size`: the data-sieving buffer of reads, bytes.
    pub const IND_RD_BUFFER_SIZE: u32 = 10;
    /// The names of keys 1 to 10, in key order.
    pub const NAMES: [&str; 10] = [
        "cb_nodes",
        "cb_buffer_size",
        "striping_unit",
        "striping_factor",
        "romio_cb_write",
        "romio_cb_read",
        "romio_ds_write",
        "romio_ds_read",
        "ind_wr_buffer_size",
        "ind_rd_buffer_size",
    ];
    /// A switch set to `enable`.
    pub const ENABLE: u64 = 1;
    /// A switch set to `disable`.
    pub const DISABLE: u64 = 2;
    /// A switch set to `automatic`.
    pub const AUTOMATIC: u64 = 3;
}

/// True when `src` is the wildcard source.
pub fn is_any_source(src: i32) -> bool {
    src == ANY_SOURCE
}

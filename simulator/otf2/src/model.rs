//! The definitions and events of an archive, with names resolved.

/// A code region (an MPI function, a compute block, a user function).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Its name, e.g. `MPI_Send`.
    pub name: String,
    /// `OTF2_RegionRole` (e.g. [`crate::consts::ROLE_POINT2POINT`]).
    pub role: u8,
    /// `OTF2_Paradigm` (e.g. [`crate::consts::PARADIGM_MPI`]).
    pub paradigm: u8,
    /// Its description (empty when none).
    pub description: String,
}

/// A location (an execution stream: here a rank's thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Its name.
    pub name: String,
    /// Its location group (a process) reference.
    pub group: u32,
}

/// A group of locations or of ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Its name.
    pub name: String,
    /// `OTF2_GroupType`: [`crate::consts::GROUP_COMM_LOCATIONS`] (members
    /// are location ids, in rank order) or [`crate::consts::GROUP_COMM_GROUP`]
    /// (members are ranks, indices into the former), among others.
    pub kind: u8,
    /// `OTF2_Paradigm` of the group.
    pub paradigm: u8,
    /// The members, as above.
    pub members: Vec<u64>,
}

/// A communicator: a group of ranks (a `COMM_GROUP` [`Group`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comm {
    /// Its name, e.g. `MPI_COMM_WORLD`.
    pub name: String,
    /// Its group's reference.
    pub group: u32,
    /// The communicator it was created from, if any.
    pub parent: Option<u32>,
}

/// An I/O handle (an open MPI file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoHandle {
    /// Its name.
    pub name: String,
    /// The file's name.
    pub file: String,
    /// The communicator that opened it, if any.
    pub comm: Option<u32>,
}

/// The events the simulator maps (OTF2 records of the same name). Ranks
/// in MPI events (`receiver`, `sender`, `root`) are ranks in `comm`;
/// `request` ids pair a nonblocking call with its completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Entered region `region`.
    Enter {
        /// Region reference.
        region: u32,
    },
    /// Left region `region`.
    Leave {
        /// Region reference.
        region: u32,
    },
    /// A blocking send was posted.
    MpiSend {
        /// Destination rank in `comm`.
        receiver: u32,
        /// Communicator reference.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
    },
    /// A nonblocking send was posted.
    MpiIsend {
        /// Destination rank in `comm`.
        receiver: u32,
        /// Communicator reference.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
        /// Request id.
        request: u64,
    },
    /// A nonblocking send completed.
    MpiIsendComplete {
        /// Request id.
        request: u64,
    },
    /// A nonblocking receive was posted.
    MpiIrecvRequest {
        /// Request id.
        request: u64,
        /// What it was posted for, when the archive says ([`Posted`]).
        posted: Option<Posted>,
    },
    /// A request was cancelled (`MPI_Cancel`).
    MpiRequestCancelled {
        /// Request id.
        request: u64,
    },
    /// A blocking receive completed.
    MpiRecv {
        /// Source rank in `comm`.
        sender: u32,
        /// Communicator reference.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
    },
    /// A nonblocking receive completed.
    MpiIrecv {
        /// Source rank in `comm`.
        sender: u32,
        /// Communicator reference.
        comm: u32,
        /// Tag.
        tag: u32,
        /// Bytes.
        bytes: u64,
        /// Request id.
        request: u64,
    },
    /// A collective operation began.
    MpiCollectiveBegin,
    /// A collective operation ended.
    MpiCollectiveEnd {
        /// `OTF2_CollectiveOp` (e.g. [`crate::consts::ALLREDUCE`]).
        op: u8,
        /// Communicator reference.
        comm: u32,
        /// Root rank in `comm`, or [`crate::consts::UNDEFINED_UINT32`].
        root: u32,
        /// Bytes this rank sent.
        sent: u64,
        /// Bytes this rank received.
        received: u64,
        /// Per-member byte counts of a v-collective ([`COUNTS_ATTRIBUTE`]); empty when none.
        counts: Vec<u64>,
    },
    /// A nonblocking collective was posted.
    NbcRequest {
        /// Request id.
        request: u64,
    },
    /// A nonblocking collective completed (fields as in [`Event::MpiCollectiveEnd`]).
    NbcComplete {
        /// `OTF2_CollectiveOp`.
        op: u8,
        /// Communicator reference.
        comm: u32,
        /// Root rank in `comm`, or [`crate::consts::UNDEFINED_UINT32`].
        root: u32,
        /// Bytes this rank sent.
        sent: u64,
        /// Bytes this rank received.
        received: u64,
        /// Per-member byte counts of a v-collective ([`COUNTS_ATTRIBUTE`]); empty when none.
        counts: Vec<u64>,
        /// Request id.
        request: u64,
    },
    /// An I/O handle was created (a file opened).
    IoCreateHandle {
        /// I/O handle reference.
        handle: u32,
    },
    /// An I/O handle was destroyed (a file closed).
    IoDestroyHandle {
        /// I/O handle reference.
        handle: u32,
    },
    /// An I/O operation was issued on `handle`.
    IoOperationBegin {
        /// I/O handle reference.
        handle: u32,
        /// `OTF2_IoOperationMode` (read, write, flush).
        mode: u8,
        /// `OTF2_IoOperationFlag` (non-blocking, collective).
        flags: u32,
        /// Bytes requested.
        bytes: u64,
        /// Pairs the begin with its completion.
        matching_id: u64,
        /// The byte offset in the file, when the archive says (attribute
        /// [`OFFSET_ATTRIBUTE`]; OTF2 has no offset field).
        offset: Option<u64>,
    },
    /// An I/O operation on `handle` completed.
    IoOperationComplete {
        /// I/O handle reference.
        handle: u32,
        /// Bytes moved.
        bytes: u64,
        /// As in the begin.
        matching_id: u64,
    },
}

/// The source, communicator, tag and size a nonblocking receive was
/// posted for: OTF2 gives them only at its completion (`MpiIrecv`), so
/// our archives attach them to `MpiIrecvRequest` as attributes named
/// [`IRECV_ATTRIBUTES`] (a receive that is cancelled, or never completes,
/// keeps them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posted {
    /// Source rank in `comm`, or [`crate::consts::UNDEFINED_UINT32`] for `MPI_ANY_SOURCE`.
    pub sender: u32,
    /// Communicator reference.
    pub comm: u32,
    /// Tag (`MPI_ANY_TAG` as `u32::MAX`).
    pub tag: u32,
    /// Buffer size, bytes.
    pub bytes: u64,
}

/// Names of the attributes carrying [`Posted`]'s fields, in field order
/// (types `UINT32`, `UINT32`, `UINT32`, `UINT64`).
pub const IRECV_ATTRIBUTES: [&str; 4] = ["MPI_Irecv source", "MPI_Irecv communicator", "MPI_Irecv tag", "MPI_Irecv bytes"];

/// Name of the attribute (type `STRING`: decimal numbers separated by
/// commas) carrying a v-collective's per-member byte counts on
/// `MpiCollectiveEnd` and `NonBlockingCollectiveComplete`, which OTF2
/// gives only as totals.
pub const COUNTS_ATTRIBUTE: &str = "MPI per-member bytes";

/// Name of the attribute (type `UINT64`) carrying an MPI-IO access's
/// byte offset on `IoOperationBegin`.
pub const OFFSET_ATTRIBUTE: &str = "MPI-IO offset";

/// The MPI name of a collective operation (`OTF2_CollectiveOp`), e.g. `MPI_Allreduce`.
pub fn coll_op_name(op: u8) -> Option<&'static str> {
    use crate::consts as c;
    Some(match op as u32 {
        c::BARRIER => "MPI_Barrier",
        c::BCAST => "MPI_Bcast",
        c::GATHER => "MPI_Gather",
        c::GATHERV => "MPI_Gatherv",
        c::SCATTER => "MPI_Scatter",
        c::SCATTERV => "MPI_Scatterv",
        c::ALLGATHER => "MPI_Allgather",
        c::ALLGATHERV => "MPI_Allgatherv",
        c::ALLTOALL => "MPI_Alltoall",
        c::ALLTOALLV => "MPI_Alltoallv",
        c::ALLTOALLW => "MPI_Alltoallw",
        c::ALLREDUCE => "MPI_Allreduce",
        c::REDUCE => "MPI_Reduce",
        c::REDUCE_SCATTER => "MPI_Reduce_scatter",
        c::SCAN => "MPI_Scan",
        c::EXSCAN => "MPI_Exscan",
        c::REDUCE_SCATTER_BLOCK => "MPI_Reduce_scatter_block",
        _ => return None,
    })
}

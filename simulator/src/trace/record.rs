//! Binary call records of the interposer's per-rank traces.
//!
//! One record per intercepted MPI call. It carries the compute block that
//! ended when the call began (thread CPU time and wall time, nanoseconds),
//! the caller's return address, the call's own start and end (nanoseconds
//! since the rank's trace epoch, taken at `MPI_Init` exit) and the call's
//! parameters, already normalized by the interposer: peers and roots as
//! world ranks, sizes in bytes, requests as opaque 64-bit handles.
//!
//! Layout (little-endian): a fixed 48-byte head, then per-op parameters.
//! `MPI_Waitall` carries a variable list of request handles.

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

/// Size in bytes of the fixed record head.
pub const HEAD_BYTES: usize = 48;

macro_rules! ops {
    ($($(#[$doc:meta])* $name:ident = $code:expr, $mpi:expr;)*) => {
        /// The MPI operation a record describes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Op { $($(#[$doc])* $name = $code,)* }

        impl Op {
            /// Decodes an op code; `None` for codes this reader does not know.
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
    /// `MPI_Gatherv` (bytes sent by this rank).
    Gatherv = 35, "MPI_Gatherv";
    /// `MPI_Scatter` (bytes received per rank).
    Scatter = 36, "MPI_Scatter";
    /// `MPI_Scatterv` (bytes received by this rank).
    Scatterv = 37, "MPI_Scatterv";
    /// `MPI_Allgather` (bytes sent per rank).
    Allgather = 38, "MPI_Allgather";
    /// `MPI_Allgatherv` (bytes sent by this rank).
    Allgatherv = 39, "MPI_Allgatherv";
    /// `MPI_Alltoall` (bytes sent to each rank).
    Alltoall = 40, "MPI_Alltoall";
    /// `MPI_Alltoallv` (bytes sent by this rank in all).
    Alltoallv = 41, "MPI_Alltoallv";
    /// `MPI_Reduce_scatter` (bytes of the whole vector).
    ReduceScatter = 42, "MPI_Reduce_scatter";
    /// `MPI_Reduce_scatter_block` (bytes per rank block).
    ReduceScatterBlock = 43, "MPI_Reduce_scatter_block";
    /// `MPI_Scan`.
    Scan = 44, "MPI_Scan";
    /// `MPI_Exscan`.
    Exscan = 45, "MPI_Exscan";
    /// `MPI_Comm_dup` (new communicator and its members).
    CommDup = 60, "MPI_Comm_dup";
    /// `MPI_Comm_split`.
    CommSplit = 61, "MPI_Comm_split";
    /// `MPI_Comm_create`.
    CommCreate = 62, "MPI_Comm_create";
    /// `MPI_Comm_free`.
    CommFree = 63, "MPI_Comm_free";
}

/// Per-op parameters, normalized by the interposer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Params {
    /// Calls without parameters the replay needs (init, finalize, rank, size).
    None,
    /// Point-to-point: `peer` is a world rank (or [`ANY_SOURCE`] /
    /// [`PROC_NULL`]), `bytes` = count × type size, `request` is the
    /// request handle (0 for blocking calls).
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
    /// `MPI_Waitall`: the request handles, in argument order.
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
    /// Call entry, nanoseconds since the trace epoch.
    pub t_start_ns: u64,
    /// Call exit, nanoseconds since the trace epoch.
    pub t_end_ns: u64,
    /// Normalized parameters.
    pub params: Params,
}

/// Why a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The buffer ended inside a record.
    Short,
    /// The op code is not one this reader knows.
    UnknownOp(u8),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Short => write!(f, "record cut short"),
            DecodeError::UnknownOp(c) => write!(f, "unknown op code {c}"),
        }
    }
}

/// Appends little-endian fields to a fixed buffer; never allocates.
struct Put<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Put<'_> {
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes())
    }
    fn i32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes())
    }
    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes())
    }
}

/// Reads little-endian fields, failing with [`DecodeError::Short`].
struct Get<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Get<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self.buf.get(self.pos..self.pos + N).ok_or(DecodeError::Short)?;
        self.pos += N;
        Ok(s.try_into().expect("slice of length N"))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        self.take::<8>().map(u64::from_le_bytes)
    }
    fn i32(&mut self) -> Result<i32, DecodeError> {
        self.take::<4>().map(i32::from_le_bytes)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.take::<4>().map(u32::from_le_bytes)
    }
}

/// Bytes of the parameter part for `op`, excluding Waitall's handle list.
fn params_len(op: Op) -> usize {
    match shape(op) {
        Shape::P2p => 28,
        Shape::Sendrecv => 36,
        Shape::Wait => 12,
        Shape::Test => 9,
        Shape::Waitall => 4,
        Shape::RequestSet => 8,
        Shape::Probe => 21,
        Shape::CommCreate => 12,
        Shape::Coll => 16,
        Shape::None => 0,
    }
}

/// The parameter layout of each op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
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
}

fn shape(op: Op) -> Shape {
    use Op::*;
    match op {
        Send | Recv | Isend | Irecv | Ssend | Bsend | Rsend | Issend | Ibsend | Irsend => Shape::P2p,
        Sendrecv | SendrecvReplace => Shape::Sendrecv,
        Wait => Shape::Wait,
        Test => Shape::Test,
        Waitall => Shape::Waitall,
        Testall | Waitany | Testany => Shape::RequestSet,
        Probe | Iprobe => Shape::Probe,
        CommDup | CommSplit | CommCreate => Shape::CommCreate,
        Barrier | Bcast | Reduce | Allreduce | Gather | Gatherv | Scatter | Scatterv | Allgather | Allgatherv
        | Alltoall | Alltoallv | ReduceScatter | ReduceScatterBlock | Scan | Exscan | CommFree => Shape::Coll,
        Init | InitThread | Finalize | CommRank | CommSize => Shape::None,
    }
}

impl CallRecord {
    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        let extra = match &self.params {
            Params::Waitall { requests } | Params::RequestSet { requests, .. } => 8 * requests.len(),
            Params::CommCreate { members, .. } => 4 * members.len(),
            _ => 0,
        };
        HEAD_BYTES + params_len(self.op) + extra
    }

    /// Encodes into `out`, returning the bytes written.
    ///
    /// # Panics
    /// If `out` is shorter than [`CallRecord::encoded_len`], or if `params`
    /// does not match the shape `op` requires.
    pub fn encode(&self, out: &mut [u8]) -> usize {
        let mut p = Put { buf: out, pos: 0 };
        p.bytes(&[self.op as u8, self.failed as u8, 0, 0, 0, 0, 0, 0]);
        for v in [self.caller, self.compute_cpu_ns, self.compute_wall_ns, self.t_start_ns, self.t_end_ns] {
            p.u64(v);
        }
        match (&self.params, shape(self.op)) {
            (Params::None, Shape::None) => {}
            (&Params::P2p { peer, tag, bytes, comm, request }, Shape::P2p) => {
                p.i32(peer);
                p.i32(tag);
                p.u64(bytes);
                p.u32(comm);
                p.u64(request);
            }
            (&Params::Sendrecv { dst, send_tag, send_bytes, src, recv_tag, recv_bytes, comm }, Shape::Sendrecv) => {
                p.i32(dst);
                p.i32(send_tag);
                p.u64(send_bytes);
                p.i32(src);
                p.i32(recv_tag);
                p.u64(recv_bytes);
                p.u32(comm);
            }
            (&Params::Wait { request, source }, Shape::Wait) => {
                p.u64(request);
                p.i32(source);
            }
            (&Params::Test { request, completed }, Shape::Test) => {
                p.u64(request);
                p.bytes(&[completed as u8]);
            }
            (Params::Waitall { requests }, Shape::Waitall) => {
                p.u32(requests.len() as u32);
                requests.iter().for_each(|&r| p.u64(r));
            }
            (Params::RequestSet { requests, result }, Shape::RequestSet) => {
                p.u32(requests.len() as u32);
                p.i32(*result);
                requests.iter().for_each(|&r| p.u64(r));
            }
            (&Params::Probe { peer, tag, bytes, comm, found }, Shape::Probe) => {
                p.i32(peer);
                p.i32(tag);
                p.u64(bytes);
                p.u32(comm);
                p.bytes(&[found as u8]);
            }
            (Params::CommCreate { parent, comm, members }, Shape::CommCreate) => {
                p.u32(*parent);
                p.u32(*comm);
                p.u32(members.len() as u32);
                members.iter().for_each(|&m| p.u32(m));
            }
            (&Params::Coll { root, bytes, comm }, Shape::Coll) => {
                p.i32(root);
                p.u64(bytes);
                p.u32(comm);
            }
            (params, _) => panic!("params {params:?} do not fit {:?}", self.op),
        }
        p.pos
    }

    /// Decodes one record from the front of `buf`; returns it and its length.
    ///
    /// # Errors
    /// [`DecodeError::Short`] when `buf` ends inside the record,
    /// [`DecodeError::UnknownOp`] for an op code this reader does not know.
    pub fn decode(buf: &[u8]) -> Result<(CallRecord, usize), DecodeError> {
        let mut g = Get { buf, pos: 0 };
        let head = g.take::<8>()?;
        let op = Op::from_code(head[0]).ok_or(DecodeError::UnknownOp(head[0]))?;
        let failed = head[1] != 0;
        let caller = g.u64()?;
        let compute_cpu_ns = g.u64()?;
        let compute_wall_ns = g.u64()?;
        let t_start_ns = g.u64()?;
        let t_end_ns = g.u64()?;
        let list = |g: &mut Get, n: usize, width: usize| {
            if buf.len() < g.pos + width * n { Err(DecodeError::Short) } else { Ok(()) }
        };
        let params = match shape(op) {
            Shape::P2p => Params::P2p { peer: g.i32()?, tag: g.i32()?, bytes: g.u64()?, comm: g.u32()?, request: g.u64()? },
            Shape::Sendrecv => Params::Sendrecv {
                dst: g.i32()?,
                send_tag: g.i32()?,
                send_bytes: g.u64()?,
                src: g.i32()?,
                recv_tag: g.i32()?,
                recv_bytes: g.u64()?,
                comm: g.u32()?,
            },
            Shape::Wait => Params::Wait { request: g.u64()?, source: g.i32()? },
            Shape::Test => Params::Test { request: g.u64()?, completed: g.take::<1>()?[0] != 0 },
            Shape::Waitall => {
                let n = g.u32()? as usize;
                list(&mut g, n, 8)?;
                Params::Waitall { requests: (0..n).map(|_| g.u64()).collect::<Result<_, _>>()? }
            }
            Shape::RequestSet => {
                let n = g.u32()? as usize;
                let result = g.i32()?;
                list(&mut g, n, 8)?;
                Params::RequestSet { requests: (0..n).map(|_| g.u64()).collect::<Result<_, _>>()?, result }
            }
            Shape::Probe => Params::Probe {
                peer: g.i32()?,
                tag: g.i32()?,
                bytes: g.u64()?,
                comm: g.u32()?,
                found: g.take::<1>()?[0] != 0,
            },
            Shape::CommCreate => {
                let (parent, comm, n) = (g.u32()?, g.u32()?, g.u32()? as usize);
                list(&mut g, n, 4)?;
                Params::CommCreate { parent, comm, members: (0..n).map(|_| g.u32()).collect::<Result<_, _>>()? }
            }
            Shape::Coll => Params::Coll { root: g.i32()?, bytes: g.u64()?, comm: g.u32()? },
            Shape::None => Params::None,
        };
        let rec = CallRecord { op, failed, caller, compute_cpu_ns, compute_wall_ns, t_start_ns, t_end_ns, params };
        Ok((rec, g.pos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(op: Op, params: Params) -> CallRecord {
        CallRecord {
            op,
            failed: false,
            caller: 0x7f00_1234,
            compute_cpu_ns: 1500,
            compute_wall_ns: 1700,
            t_start_ns: 10,
            t_end_ns: 20,
            params,
        }
    }

    #[test]
    fn every_shape_round_trips() {
        let cases = vec![
            rec(Op::Init, Params::None),
            rec(Op::Send, Params::P2p { peer: 3, tag: 7, bytes: 4096, comm: 0, request: 0 }),
            rec(Op::Irecv, Params::P2p { peer: ANY_SOURCE, tag: ANY_TAG, bytes: 8, comm: 2, request: 0xdead }),
            rec(Op::Wait, Params::Wait { request: 0xdead, source: 1 }),
            rec(Op::Waitall, Params::Waitall { requests: vec![1, 2, 3] }),
            rec(
                Op::Sendrecv,
                Params::Sendrecv { dst: 1, send_tag: 0, send_bytes: 8, src: 1, recv_tag: 0, recv_bytes: 8, comm: 0 },
            ),
            rec(Op::Allreduce, Params::Coll { root: -1, bytes: 8, comm: 0 }),
            rec(Op::Test, Params::Test { request: 9, completed: true }),
            rec(Op::Waitany, Params::RequestSet { requests: vec![4, 5], result: 1 }),
            rec(Op::Iprobe, Params::Probe { peer: 2, tag: 3, bytes: 64, comm: 1, found: true }),
            rec(Op::CommSplit, Params::CommCreate { parent: 0, comm: 3, members: vec![0, 2, 4] }),
            rec(Op::Alltoallv, Params::Coll { root: -1, bytes: 4096, comm: 3 }),
        ];
        let mut buf = vec![0u8; 4096];
        let mut pos = 0;
        for c in &cases {
            assert_eq!(c.encode(&mut buf[pos..]), c.encoded_len());
            pos += c.encoded_len();
        }
        let mut at = 0;
        for c in &cases {
            let (d, n) = CallRecord::decode(&buf[at..pos]).unwrap();
            assert_eq!(&d, c);
            at += n;
        }
        assert_eq!(at, pos);
    }

    #[test]
    fn short_and_unknown_are_errors() {
        let r = rec(Op::Send, Params::P2p { peer: 1, tag: 0, bytes: 1, comm: 0, request: 0 });
        let mut buf = vec![0u8; 128];
        let n = r.encode(&mut buf);
        assert_eq!(CallRecord::decode(&buf[..n - 1]), Err(DecodeError::Short));
        buf[0] = 250;
        assert_eq!(CallRecord::decode(&buf[..n]), Err(DecodeError::UnknownOp(250)));
    }
}

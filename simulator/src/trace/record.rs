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
    /// `MPI_Barrier`.
    Barrier = 30, "MPI_Barrier";
    /// `MPI_Bcast`.
    Bcast = 31, "MPI_Bcast";
    /// `MPI_Reduce`.
    Reduce = 32, "MPI_Reduce";
    /// `MPI_Allreduce`.
    Allreduce = 33, "MPI_Allreduce";
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
    match op {
        Op::Send | Op::Recv | Op::Isend | Op::Irecv => 28,
        Op::Sendrecv => 36,
        Op::Wait => 12,
        Op::Waitall => 4,
        Op::Barrier | Op::Bcast | Op::Reduce | Op::Allreduce => 16,
        Op::Init | Op::InitThread | Op::Finalize | Op::CommRank | Op::CommSize => 0,
    }
}

impl CallRecord {
    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        let extra = match &self.params {
            Params::Waitall { requests } => 8 * requests.len(),
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
        match (&self.params, self.op) {
            (Params::None, _) if params_len(self.op) == 0 => {}
            (&Params::P2p { peer, tag, bytes, comm, request }, Op::Send | Op::Recv | Op::Isend | Op::Irecv) => {
                p.i32(peer);
                p.i32(tag);
                p.u64(bytes);
                p.u32(comm);
                p.u64(request);
            }
            (&Params::Sendrecv { dst, send_tag, send_bytes, src, recv_tag, recv_bytes, comm }, Op::Sendrecv) => {
                p.i32(dst);
                p.i32(send_tag);
                p.u64(send_bytes);
                p.i32(src);
                p.i32(recv_tag);
                p.u64(recv_bytes);
                p.u32(comm);
            }
            (&Params::Wait { request, source }, Op::Wait) => {
                p.u64(request);
                p.i32(source);
            }
            (Params::Waitall { requests }, Op::Waitall) => {
                p.u32(requests.len() as u32);
                for &r in requests {
                    p.u64(r);
                }
            }
            (&Params::Coll { root, bytes, comm }, Op::Barrier | Op::Bcast | Op::Reduce | Op::Allreduce) => {
                p.i32(root);
                p.u64(bytes);
                p.u32(comm);
            }
            (params, op) => panic!("params {params:?} do not fit {op:?}"),
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
        let params = match op {
            Op::Send | Op::Recv | Op::Isend | Op::Irecv => Params::P2p {
                peer: g.i32()?,
                tag: g.i32()?,
                bytes: g.u64()?,
                comm: g.u32()?,
                request: g.u64()?,
            },
            Op::Sendrecv => Params::Sendrecv {
                dst: g.i32()?,
                send_tag: g.i32()?,
                send_bytes: g.u64()?,
                src: g.i32()?,
                recv_tag: g.i32()?,
                recv_bytes: g.u64()?,
                comm: g.u32()?,
            },
            Op::Wait => Params::Wait { request: g.u64()?, source: g.i32()? },
            Op::Waitall => {
                let n = g.u32()? as usize;
                if buf.len() < g.pos + 8 * n {
                    return Err(DecodeError::Short);
                }
                let requests = (0..n).map(|_| g.u64()).collect::<Result<Vec<_>, _>>()?;
                Params::Waitall { requests }
            }
            Op::Barrier | Op::Bcast | Op::Reduce | Op::Allreduce => {
                Params::Coll { root: g.i32()?, bytes: g.u64()?, comm: g.u32()? }
            }
            Op::Init | Op::InitThread | Op::Finalize | Op::CommRank | Op::CommSize => Params::None,
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

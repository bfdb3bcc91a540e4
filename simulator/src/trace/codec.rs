//! The compact encoding of call records (trace format 4): LEB128 varints,
//! zigzag for signed values, and deltas against the stream's state, so a
//! typical record takes about ten bytes.
//!
//! ```text
//! record := flags:u8 [op:u8] site compute_wall [compute_cpu] [counters] gap duration params
//! flags  := bit0 failed | bit1 cpu == wall | bit2 new call site
//!         | bit3 request present (P2p, Mrecv, Io, Vcoll, Neighbor) | bit4 completed/found (Test, Probe)
//!         | bit5 communicator is MPI_COMM_WORLD (P2p, Coll, Icoll, Io, Vcoll, Neighbor: comm omitted)
//!         | bit6 hardware counters follow the compute times
//!         | bit7 op omitted: the op of the previous record at this (known) call site
//! counters := varint(cycles) varint(instructions)      (of the compute block)
//! site   := new ? zigzag(return address − previous new site's) : varint(site index)
//! gap    := zigzag(g − previous record's g), g = t_start − previous t_end − compute_wall
//! ```
//! Bits 2 and 7 never go together, so `flags` is never `0xFF` (a repeat
//! marker). Request handles are stored as their position in the
//! stream's table of the [`RECENT`] most recently used distinct handles
//! (`varint(i)`, moved to the front), or, for a handle not in it, as
//! `varint(RECENT + zigzag(handle − previous handle))`, which enters it at
//! the front. A compute block's CPU time, when it differs from its wall
//! time, is stored as `zigzag(wall − cpu)`.
//!
//! Older layouts, which [`Decoder::new`] reads by [`Version`]: format 3
//! wrote `op:u8 flags:u8` first (always the op) and a new site as
//! `varint(return address)`; format 2 also stored `gap` as `zigzag(g)`, the
//! CPU time as is and every handle as a zigzag delta. The state (call-site
//! table, previous end, previous handle) runs across chunks, so a file
//! decodes from its start; a cut file still decodes up to its last whole
//! chunk.
//!
//! Repeat markers, run-length records of a loop body, come from the
//! interposer (runs of identical failed polls, `interposer::fast`) and
//! from `calibrate blocks --compress`:
//! ```text
//! repeat := 0xFF:u8 k:varint n:varint
//! ```
//! The next `k` records (the body, 1 ≤ k ≤ [`MAX_REPEAT_BODY`]) are
//! decoded as usual and then read `n` ≥ 1 more times: each copy has its
//! body record's op, flags, call site, compute times and parameters, and
//! its body record's gap and call duration, so its start is the previous
//! record's end + compute wall time + gap. Copies leave the call-site
//! table and the request state as the body left them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::record::{shape, CallRecord, DecodeError, Params, Shape, COMM_WORLD};

const FAILED: u8 = 1;
const CPU_IS_WALL: u8 = 2;
const NEW_SITE: u8 = 4;
const HAS_REQUEST: u8 = 8;
const YES: u8 = 16;
const WORLD: u8 = 32;
const COUNTERS: u8 = 64;
const SAME_OP: u8 = 128;

/// The record layout of a file format ([`super::chunk`]'s magic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Version {
    /// `MPITRC02`: plain gaps, CPU times and handle deltas.
    V2,
    /// `MPITRC03`: op code first, new sites as absolute addresses.
    V3,
    /// `MPITRC04`, written today.
    #[default]
    V4,
}

/// First byte of a repeat marker (no op has this code).
pub const REPEAT: u8 = 0xFF;
/// Most records in the body of a repeat marker.
pub const MAX_REPEAT_BODY: usize = 4096;
/// Upper bound of an encoded repeat marker, bytes.
pub const MAX_REPEAT_LEN: usize = 1 + 2 * 10;

/// Upper bound of one encoded record, bytes, for a list of `list_len` values.
#[inline]
pub fn max_encoded_len(list_len: usize) -> usize {
    // Flags and op, then at most 7 varints of the record's head (site,
    // compute, CPU delta, cycles, instructions, gap, duration) and 7 of
    // its parameters (Sendrecv's), of at most 10 bytes each.
    2 + 14 * 10 + 10 * list_len
}

/// Number of list values (request handles, members) `rec` carries.
#[inline]
pub fn list_len(rec: &CallRecord) -> usize {
    // The shapes without a list first, from the op alone.
    if !matches!(
        shape(rec.op),
        Shape::Waitall
            | Shape::RequestSet
            | Shape::CommCreate
            | Shape::RequestSome
            | Shape::Intercomm
            | Shape::Vcoll
            | Shape::Neighbor
            | Shape::Rma
    ) {
        return 0;
    }
    match &rec.params {
        Params::Waitall { requests } | Params::RequestSet { requests, .. } => requests.len(),
        Params::CommCreate { members, .. } => members.len(),
        Params::RequestSome { requests, completed } => requests.len() + completed.len(),
        Params::Intercomm { local, remote, .. } => local.len() + remote.len(),
        Params::Vcoll { send, recv, .. } => send.len() + recv.len(),
        Params::Neighbor { dsts, send, srcs, recv, .. } => dsts.len() + send.len() + srcs.len() + recv.len(),
        Params::Rma { group, .. } => group.len(),
        _ => 0,
    }
}

/// A multiply-shift hasher for 64-bit return addresses (the interposer's
/// per-call lookup: no SipHash cost, no allocation).
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// An encoding in progress. Whoever makes one has checked that `buf`
/// holds the longest encoding of what is written ([`max_encoded_len`],
/// [`MAX_REPEAT_LEN`]), so bytes go in without a bounds check each (that
/// check was a sixth of the interposer's encoding work per record).
struct Out<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Out<'_> {
    #[inline(always)]
    fn u8(&mut self, b: u8) {
        debug_assert!(self.pos < self.buf.len(), "encoding past its bound");
        // SAFETY: `pos` stays below the bound checked when `self` was made
        // (above): `max_encoded_len` covers every record shape.
        unsafe { *self.buf.get_unchecked_mut(self.pos) = b };
        self.pos += 1;
    }
    fn v(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.u8(v as u8);
    }
    fn z(&mut self, v: i64) {
        self.v(zigzag(v))
    }
}

struct In<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl In<'_> {
    fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = *self.buf.get(self.pos).ok_or(DecodeError::Short)?;
        self.pos += 1;
        Ok(b)
    }
    fn v(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::Short)
    }
    fn z(&mut self) -> Result<i64, DecodeError> {
        self.v().map(unzigzag)
    }
    /// A message or I/O size: at most [`crate::limits::MAX_BYTES`].
    fn bytes(&mut self) -> Result<u64, DecodeError> {
        let v = self.v()?;
        if v > crate::limits::MAX_BYTES {
            return Err(DecodeError::OutOfRange("size in bytes", v));
        }
        Ok(v)
    }
    fn i32(&mut self) -> Result<i32, DecodeError> {
        self.z().map(|v| v as i32)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.v().map(|v| v as u32)
    }
}

/// Length of the table of recent request handles.
pub const RECENT: usize = 8;

/// The stream's request-handle state, the same on both sides: the last
/// handle and the most recently used distinct ones, most recent first.
#[derive(Debug, Clone, Copy, Default)]
struct Handles {
    prev: u64,
    recent: [u64; RECENT],
    /// Entries of `recent` in use.
    len: usize,
}

impl Handles {
    /// Makes `r` the most recent handle (at `at` in the table, or new).
    fn touch(&mut self, r: u64, at: Option<usize>) {
        let from = at.unwrap_or_else(|| {
            self.len = (self.len + 1).min(RECENT);
            self.len - 1
        });
        self.recent.copy_within(0..from, 1);
        self.recent[0] = r;
        self.prev = r;
    }

    #[inline(always)]
    fn put(&mut self, o: &mut Out, r: u64) {
        let at = self.recent[..self.len].iter().position(|&h| h == r);
        match at {
            Some(i) => o.v(i as u64),
            None => o.v(RECENT as u64 + zigzag(r.wrapping_sub(self.prev) as i64)),
        }
        self.touch(r, at);
    }

    fn get(&mut self, i: &mut In, version: Version) -> Result<u64, DecodeError> {
        if version == Version::V2 {
            self.prev = self.prev.wrapping_add(i.z()? as u64);
            return Ok(self.prev);
        }
        let v = i.v()?;
        if v < RECENT as u64 {
            let at = v as usize;
            let r = *self.recent[..self.len].get(at).ok_or(DecodeError::BadRequest(v))?;
            self.touch(r, Some(at));
            return Ok(r);
        }
        let r = self.prev.wrapping_add(unzigzag(v - RECENT as u64) as u64);
        self.touch(r, None);
        Ok(r)
    }
}

/// Encoder state of one rank's stream.
#[derive(Default)]
pub struct Encoder {
    /// Call-site index and the op of the site's last record, by return address.
    sites: HashMap<u64, (u32, u8), BuildHasherDefault<AddrHasher>>,
    /// Return address of the last new call site.
    last_site: u64,
    prev_end: u64,
    /// The previous record's gap, ns.
    prev_gap: i64,
    handles: Handles,
    /// Body records of an open repeat still to encode, and its copies.
    repeat: (usize, u64),
    /// Nanoseconds one copy of the open repeat's body advances the clock.
    repeat_ns: i64,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Encoder({} sites)", self.sites.len())
    }
}

impl Encoder {
    /// Return addresses of the call sites seen so far.
    pub fn sites(&self) -> impl Iterator<Item = u64> + '_ {
        self.sites.keys().copied()
    }

    /// Encodes a repeat marker into `out`: the next `body` records encoded
    /// are read `copies` more times. Returns the bytes written; `None` when
    /// `out` is shorter than [`MAX_REPEAT_LEN`] (nothing changes).
    ///
    /// # Panics
    /// When `body` is 0 or above [`MAX_REPEAT_BODY`], `copies` is 0, or the
    /// previous repeat's body is not complete.
    pub fn encode_repeat(&mut self, body: usize, copies: u64, out: &mut [u8]) -> Option<usize> {
        assert!((1..=MAX_REPEAT_BODY).contains(&body) && copies > 0, "repeat of {body} records × {copies}");
        assert_eq!(self.repeat.0, 0, "a repeat inside a repeat body");
        if out.len() < MAX_REPEAT_LEN {
            return None;
        }
        let mut o = Out { buf: out, pos: 0 };
        o.u8(REPEAT);
        o.v(body as u64);
        o.v(copies);
        (self.repeat, self.repeat_ns) = ((body, copies), 0);
        Some(o.pos)
    }

    /// Encodes `rec` into `out`, returning the bytes written; `None` when
    /// `out` is shorter than [`max_encoded_len`] requires (nothing changes).
    ///
    /// # Panics
    /// When `rec.params` does not fit `rec.op`'s shape, or a
    /// [`Params::Neighbor`]'s peer and byte lists differ in length.
    pub fn encode(&mut self, rec: &CallRecord, out: &mut [u8]) -> Option<usize> {
        if out.len() < max_encoded_len(list_len(rec)) {
            return None;
        }
        let mut o = Out { buf: out, pos: 1 };
        let mut flags = if rec.failed { FAILED } else { 0 };
        let op = rec.op as u8;
        match self.sites.get_mut(&rec.caller) {
            Some((i, last_op)) => {
                if *last_op == op {
                    flags |= SAME_OP;
                } else {
                    *last_op = op;
                    o.u8(op);
                }
                o.v(*i as u64);
            }
            None => {
                flags |= NEW_SITE;
                o.u8(op);
                o.z(rec.caller.wrapping_sub(self.last_site) as i64);
                self.sites.insert(rec.caller, (self.sites.len() as u32, op));
                self.last_site = rec.caller;
            }
        }
        o.v(rec.compute_wall_ns);
        if rec.compute_cpu_ns == rec.compute_wall_ns {
            flags |= CPU_IS_WALL;
        } else {
            o.z(rec.compute_wall_ns as i64 - rec.compute_cpu_ns as i64);
        }
        if let Some(c) = rec.counters {
            flags |= COUNTERS;
            o.v(c.cycles);
            o.v(c.instructions);
        }
        let gap = rec.t_start_ns as i64 - self.prev_end as i64 - rec.compute_wall_ns as i64;
        let duration = rec.t_end_ns.saturating_sub(rec.t_start_ns);
        o.z(gap - self.prev_gap);
        self.prev_gap = gap;
        o.v(duration);
        self.prev_end = rec.t_end_ns;
        if self.repeat.0 > 0 {
            // Copies of the body advance the decoder's clock by this much each.
            self.repeat_ns += rec.compute_wall_ns as i64 + gap + duration as i64;
            self.repeat.0 -= 1;
            if self.repeat.0 == 0 {
                self.prev_end = (self.prev_end as i64 + self.repeat_ns * self.repeat.1 as i64) as u64;
            }
        }
        let mut req = |o: &mut Out, r: u64| self.handles.put(o, r);
        match (&rec.params, shape(rec.op)) {
            (Params::None, Shape::None) => {}
            (&Params::P2p { peer, tag, bytes, comm, request }, Shape::P2p) => {
                o.z(peer as i64);
                o.z(tag as i64);
                o.v(bytes);
                flags |= world(&mut o, comm);
                if request != 0 {
                    flags |= HAS_REQUEST;
                    req(&mut o, request);
                }
            }
            (&Params::Sendrecv { dst, send_tag, send_bytes, src, recv_tag, recv_bytes, comm }, Shape::Sendrecv) => {
                o.z(dst as i64);
                o.z(send_tag as i64);
                o.v(send_bytes);
                o.z(src as i64);
                o.z(recv_tag as i64);
                o.v(recv_bytes);
                o.v(comm as u64);
            }
            (&Params::Wait { request, source }, Shape::Wait) => {
                req(&mut o, request);
                o.z(source as i64);
            }
            (&Params::Test { request, completed }, Shape::Test) => {
                req(&mut o, request);
                flags |= if completed { YES } else { 0 };
            }
            (Params::Waitall { requests }, Shape::Waitall) => {
                o.v(requests.len() as u64);
                requests.iter().for_each(|&r| req(&mut o, r));
            }
            (Params::RequestSet { requests, result }, Shape::RequestSet) => {
                o.v(requests.len() as u64);
                o.z(*result as i64);
                requests.iter().for_each(|&r| req(&mut o, r));
            }
            (&Params::Probe { peer, tag, bytes, comm, found }, Shape::Probe) => {
                o.z(peer as i64);
                o.z(tag as i64);
                o.v(bytes);
                o.v(comm as u64);
                flags |= if found { YES } else { 0 };
            }
            (Params::CommCreate { parent, comm, members }, Shape::CommCreate) => {
                o.v(*parent as u64);
                o.v(*comm as u64);
                o.v(members.len() as u64);
                members.iter().for_each(|&m| o.v(m as u64));
            }
            (&Params::Coll { root, bytes, comm }, Shape::Coll) => {
                o.z(root as i64);
                o.v(bytes);
                flags |= world(&mut o, comm);
            }
            (&Params::Request { request }, Shape::Request) => req(&mut o, request),
            (Params::RequestSome { requests, completed }, Shape::RequestSome) => {
                o.v(requests.len() as u64);
                requests.iter().for_each(|&r| req(&mut o, r));
                o.v(completed.len() as u64);
                completed.iter().for_each(|&i| o.v(i as u64));
            }
            (&Params::Mrecv { message, bytes, request }, Shape::Mrecv) => {
                req(&mut o, message);
                o.v(bytes);
                if request != 0 {
                    flags |= HAS_REQUEST;
                    req(&mut o, request);
                }
            }
            (Params::Intercomm { parent, comm, local, remote }, Shape::Intercomm) => {
                o.v(*parent as u64);
                o.v(*comm as u64);
                for group in [local, remote] {
                    o.v(group.len() as u64);
                    group.iter().for_each(|&m| o.v(m as u64));
                }
            }
            (&Params::Icoll { root, bytes, comm, request }, Shape::Icoll) => {
                o.z(root as i64);
                o.v(bytes);
                flags |= world(&mut o, comm);
                req(&mut o, request);
            }
            (&Params::Io { file, offset, bytes, comm, request }, Shape::Io) => {
                o.v(file as u64);
                o.v(offset);
                o.v(bytes);
                flags |= world(&mut o, comm);
                if request != 0 {
                    flags |= HAS_REQUEST;
                    req(&mut o, request);
                }
            }
            (Params::IoInfo { file, comm, amode, disp, etype_bytes, view_bytes, view_extent, block_bytes, hints }, Shape::IoInfo) => {
                o.v(*file as u64);
                flags |= world(&mut o, *comm);
                for v in [*amode as u64, *disp, *etype_bytes, *view_bytes, *view_extent, *block_bytes] {
                    o.v(v);
                }
                o.v(hints.len() as u64);
                for &(k, v) in hints {
                    o.v(k as u64);
                    o.v(v);
                }
            }
            (Params::Vcoll { root, comm, request, send, recv }, Shape::Vcoll) => {
                o.z(*root as i64);
                flags |= world(&mut o, *comm);
                if *request != 0 {
                    flags |= HAS_REQUEST;
                    req(&mut o, *request);
                }
                for side in [send, recv] {
                    o.v(side.len() as u64);
                    side.iter().for_each(|&b| o.v(b));
                }
            }
            (Params::Neighbor { comm, request, dsts, send, srcs, recv }, Shape::Neighbor) => {
                flags |= world(&mut o, *comm);
                if *request != 0 {
                    flags |= HAS_REQUEST;
                    req(&mut o, *request);
                }
                assert!(dsts.len() == send.len() && srcs.len() == recv.len(), "neighbour lists of unequal lengths");
                for (peers, bytes) in [(dsts, send), (srcs, recv)] {
                    o.v(peers.len() as u64);
                    for (&p, &b) in peers.iter().zip(bytes) {
                        o.z(p as i64);
                        o.v(b);
                    }
                }
            }
            (Params::Rma { win, comm, target, disp, bytes, op, assert, request, group }, Shape::Rma) => {
                o.v(*win as u64);
                flags |= world(&mut o, *comm);
                o.z(*target as i64);
                o.v(*disp);
                o.v(*bytes);
                o.v(*op as u64);
                o.v(*assert as u64);
                if *request != 0 {
                    flags |= HAS_REQUEST;
                    req(&mut o, *request);
                }
                o.v(group.len() as u64);
                group.iter().for_each(|&m| o.z(m as i64));
            }
            (params, _) => panic!("params {params:?} do not fit {:?}", rec.op),
        }
        o.buf[0] = flags;
        Some(o.pos)
    }
}

/// Writes `comm` unless it is `MPI_COMM_WORLD`; returns the flag to set.
#[inline(always)]
fn world(o: &mut Out, comm: u32) -> u8 {
    if comm == COMM_WORLD {
        WORLD
    } else {
        o.v(comm as u64);
        0
    }
}

mod decoder;
pub use decoder::Decoder;

#[cfg(test)]
mod tests;

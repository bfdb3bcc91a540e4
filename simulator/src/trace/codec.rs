//! The compact encoding of call records (trace format 3): LEB128 varints,
//! zigzag for signed values, and deltas against the stream's state, so a
//! typical record takes about a dozen bytes.
//!
//! ```text
//! record := op:u8 flags:u8 site compute_wall [compute_cpu] [counters] gap duration params
//! flags  := bit0 failed | bit1 cpu == wall | bit2 new call site
//!         | bit3 request present (P2p, Mrecv, Io, Vcoll, Neighbor) | bit4 completed/found (Test, Probe)
//!         | bit5 communicator is MPI_COMM_WORLD (P2p, Coll, Icoll, Io, Vcoll, Neighbor: comm omitted)
//!         | bit6 hardware counters follow the compute times
//! counters := varint(cycles) varint(instructions)      (of the compute block)
//! site   := new ? varint(return address) : varint(site index)
//! gap    := zigzag(g − previous record's g), g = t_start − previous t_end − compute_wall
//!           (format 2: zigzag(g); g is the recorder's constant share plus noise)
//! ```
//! Request handles (format 3) are stored as their position in the
//! stream's table of the [`RECENT`] most recently used distinct handles
//! (`varint(i)`, moved to the front), or, for a handle not in it, as
//! `varint(RECENT + zigzag(handle − previous handle))`, which enters it at
//! the front. A compute block's CPU time, when it differs from its wall
//! time, is stored as `zigzag(wall − cpu)`. Format 2 stored every handle
//! as a zigzag delta and the CPU time as is; [`Decoder::v2`] reads it. The state (call-site table, previous end, previous
//! handle) runs across chunks, so a file decodes from its start; a cut file
//! still decodes up to its last whole chunk.
//!
//! A compressed trace (`calibrate blocks --compress`) also holds repeat
//! markers, run-length records of a loop body:
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

use super::record::{shape, BlockCounters, CallRecord, DecodeError, Op, Params, Shape, COMM_WORLD};

const FAILED: u8 = 1;
const CPU_IS_WALL: u8 = 2;
const NEW_SITE: u8 = 4;
const HAS_REQUEST: u8 = 8;
const YES: u8 = 16;
const WORLD: u8 = 32;
const COUNTERS: u8 = 64;

/// First byte of a repeat marker (no op has this code).
pub const REPEAT: u8 = 0xFF;
/// Most records in the body of a repeat marker.
pub const MAX_REPEAT_BODY: usize = 4096;
/// Upper bound of an encoded repeat marker, bytes.
pub const MAX_REPEAT_LEN: usize = 1 + 2 * 10;

/// Upper bound of one encoded record, bytes, for a list of `list_len` values.
#[inline]
pub fn max_encoded_len(list_len: usize) -> usize {
    2 + 12 * 10 + 10 * list_len
}

/// Number of list values (request handles, members) `rec` carries.
#[inline]
pub fn list_len(rec: &CallRecord) -> usize {
    match &rec.params {
        Params::Waitall { requests } | Params::RequestSet { requests, .. } => requests.len(),
        Params::CommCreate { members, .. } => members.len(),
        Params::RequestSome { requests, completed } => requests.len() + completed.len(),
        Params::Intercomm { local, remote, .. } => local.len() + remote.len(),
        Params::Vcoll { send, recv, .. } => send.len() + recv.len(),
        Params::Neighbor { dsts, send, srcs, recv, .. } => dsts.len() + send.len() + srcs.len() + recv.len(),
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

struct Out<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Out<'_> {
    fn u8(&mut self, b: u8) {
        self.buf[self.pos] = b;
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

    fn put(&mut self, o: &mut Out, r: u64) {
        let at = self.recent[..self.len].iter().position(|&h| h == r);
        match at {
            Some(i) => o.v(i as u64),
            None => o.v(RECENT as u64 + zigzag(r.wrapping_sub(self.prev) as i64)),
        }
        self.touch(r, at);
    }

    fn get(&mut self, i: &mut In, v2: bool) -> Result<u64, DecodeError> {
        if v2 {
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
pub struct Encoder {
    sites: HashMap<u64, u32, BuildHasherDefault<AddrHasher>>,
    /// Recently used entries of `sites`, direct-mapped by address: a loop's
    /// few call sites are found without hashing.
    site_cache: [(u64, u32); SITE_CACHE],
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

/// Entries of [`Encoder`]'s call-site cache (a power of two).
const SITE_CACHE: usize = 16;
/// An unused entry of that cache.
const EMPTY_SITE: (u64, u32) = (0, u32::MAX);

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            sites: HashMap::default(),
            site_cache: [EMPTY_SITE; SITE_CACHE],
            prev_end: 0,
            prev_gap: 0,
            handles: Handles::default(),
            repeat: (0, 0),
            repeat_ns: 0,
        }
    }
}

impl Encoder {
    /// The index of call site `caller` in the stream's table, or `None`
    /// when it is new (it is added: the next lookup finds it).
    #[inline]
    fn site(&mut self, caller: u64) -> Option<u32> {
        let slot = &mut self.site_cache[(caller as usize ^ (caller as usize >> 7)) % SITE_CACHE];
        if slot.0 == caller && slot.1 != EMPTY_SITE.1 {
            return Some(slot.1);
        }
        let found = self.sites.get(&caller).copied();
        let index = found.unwrap_or_else(|| {
            let i = self.sites.len() as u32;
            self.sites.insert(caller, i);
            i
        });
        *slot = (caller, index);
        found
    }

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
        let mut o = Out { buf: out, pos: 2 };
        let mut flags = if rec.failed { FAILED } else { 0 };
        match self.site(rec.caller) {
            Some(i) => o.v(i as u64),
            None => {
                flags |= NEW_SITE;
                o.v(rec.caller);
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
            (params, _) => panic!("params {params:?} do not fit {:?}", rec.op),
        }
        o.buf[0] = rec.op as u8;
        o.buf[1] = flags;
        Some(o.pos)
    }
}

/// Writes `comm` unless it is `MPI_COMM_WORLD`; returns the flag to set.
fn world(o: &mut Out, comm: u32) -> u8 {
    if comm == COMM_WORLD {
        WORLD
    } else {
        o.v(comm as u64);
        0
    }
}

/// Decoder state of one rank's stream.
#[derive(Debug, Default)]
pub struct Decoder {
    sites: Vec<u64>,
    prev_end: u64,
    prev_gap: i64,
    handles: Handles,
    /// Reads format 2 (plain handle deltas, CPU time as is).
    v2: bool,
    /// The open repeat: body records with their gaps, records of it still
    /// to read, copies still to give, next body record to copy.
    body: Vec<(CallRecord, i64)>,
    capture: usize,
    copies: u64,
    next: usize,
}

impl Decoder {
    /// A decoder of format 2 streams (files starting `MPITRC02`); the
    /// default one reads format 3.
    pub fn v2() -> Decoder {
        Decoder { v2: true, ..Decoder::default() }
    }

    /// Decodes one record from the front of `buf`; returns it and its
    /// length. Repeat markers are read through (they must be followed by
    /// a record in `buf`); their copies come from [`Decoder::next_copy`].
    ///
    /// # Errors
    /// As [`Decoder::decode_item`].
    pub fn decode(&mut self, buf: &[u8]) -> Result<(CallRecord, usize), DecodeError> {
        let mut at = 0;
        loop {
            match self.decode_item(&buf[at..])? {
                (Some(rec), n) => return Ok((rec, at + n)),
                (None, n) => at += n,
            }
        }
    }

    /// The next copy of an open repeat's body, once the body was read;
    /// call it before decoding further bytes.
    pub fn next_copy(&mut self) -> Option<CallRecord> {
        if self.capture > 0 || self.copies == 0 {
            return None;
        }
        let (body, gap) = &self.body[self.next];
        let mut rec = body.clone();
        rec.t_start_ns = (self.prev_end as i64 + rec.compute_wall_ns as i64 + gap) as u64;
        rec.t_end_ns = rec.t_start_ns + (body.t_end_ns - body.t_start_ns);
        self.prev_end = rec.t_end_ns;
        self.next += 1;
        if self.next == self.body.len() {
            self.next = 0;
            self.copies -= 1;
        }
        Some(rec)
    }

    /// Decodes one item from the front of `buf`: a record (`Some`) or a
    /// repeat marker (`None`); returns it and its length.
    ///
    /// # Errors
    /// [`DecodeError::Short`] when `buf` ends inside the item,
    /// [`DecodeError::UnknownOp`] for an op code this reader does not know,
    /// [`DecodeError::BadSite`] for a call-site index never defined,
    /// [`DecodeError::BadRepeat`] for a repeat marker out of bounds or
    /// inside an open repeat.
    pub fn decode_item(&mut self, buf: &[u8]) -> Result<(Option<CallRecord>, usize), DecodeError> {
        if buf.first() == Some(&REPEAT) {
            let mut i = In { buf, pos: 1 };
            let (k, n) = (i.v()?, i.v()?);
            if self.capture > 0 || self.copies > 0 {
                return Err(DecodeError::BadRepeat("inside another repeat"));
            }
            if k == 0 || k > MAX_REPEAT_BODY as u64 || n == 0 {
                return Err(DecodeError::BadRepeat("body length or count out of range"));
            }
            (self.capture, self.copies, self.next) = (k as usize, n, 0);
            self.body.clear();
            return Ok((None, i.pos));
        }
        let (rec, n, gap) = self.decode_record(buf)?;
        if self.capture > 0 {
            self.body.push((rec.clone(), gap));
            self.capture -= 1;
        }
        Ok((Some(rec), n))
    }

    fn decode_record(&mut self, buf: &[u8]) -> Result<(CallRecord, usize, i64), DecodeError> {
        let mut i = In { buf, pos: 0 };
        let code = i.u8()?;
        let op = Op::from_code(code).ok_or(DecodeError::UnknownOp(code))?;
        let flags = i.u8()?;
        let site = i.v()?;
        let caller = if flags & NEW_SITE != 0 {
            site
        } else {
            *self.sites.get(site as usize).ok_or(DecodeError::BadSite(site))?
        };
        let compute_wall_ns = i.v()?;
        let compute_cpu_ns = match flags & CPU_IS_WALL != 0 {
            true => compute_wall_ns,
            false if self.v2 => i.v()?,
            false => (compute_wall_ns as i64 - i.z()?) as u64,
        };
        let counters =
            if flags & COUNTERS != 0 { Some(BlockCounters { cycles: i.v()?, instructions: i.v()? }) } else { None };
        let gap = if self.v2 { i.z()? } else { self.prev_gap + i.z()? };
        let t_start_ns = (self.prev_end as i64 + compute_wall_ns as i64 + gap) as u64;
        let t_end_ns = t_start_ns + i.v()?;
        let mut handles = self.handles;
        let v2 = self.v2;
        let mut req = |i: &mut In| handles.get(i, v2);
        let yes = flags & YES != 0;
        let params = match shape(op) {
            Shape::None => Params::None,
            Shape::P2p => {
                let (peer, tag, bytes) = (i.i32()?, i.i32()?, i.v()?);
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                Params::P2p { peer, tag, bytes, comm, request }
            }
            Shape::Sendrecv => Params::Sendrecv {
                dst: i.i32()?,
                send_tag: i.i32()?,
                send_bytes: i.v()?,
                src: i.i32()?,
                recv_tag: i.i32()?,
                recv_bytes: i.v()?,
                comm: i.u32()?,
            },
            Shape::Wait => Params::Wait { request: req(&mut i)?, source: i.i32()? },
            Shape::Test => Params::Test { request: req(&mut i)?, completed: yes },
            Shape::Waitall => {
                let n = bounded(i.v()?, buf)?;
                Params::Waitall { requests: (0..n).map(|_| req(&mut i)).collect::<Result<_, _>>()? }
            }
            Shape::RequestSet => {
                let n = bounded(i.v()?, buf)?;
                let result = i.i32()?;
                Params::RequestSet { requests: (0..n).map(|_| req(&mut i)).collect::<Result<_, _>>()?, result }
            }
            Shape::Probe => Params::Probe { peer: i.i32()?, tag: i.i32()?, bytes: i.v()?, comm: i.u32()?, found: yes },
            Shape::CommCreate => {
                let (parent, comm, n) = (i.u32()?, i.u32()?, bounded(i.v()?, buf)?);
                Params::CommCreate { parent, comm, members: (0..n).map(|_| i.u32()).collect::<Result<_, _>>()? }
            }
            Shape::Coll => {
                let (root, bytes) = (i.i32()?, i.v()?);
                Params::Coll { root, bytes, comm: if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? } }
            }
            Shape::Request => Params::Request { request: req(&mut i)? },
            Shape::RequestSome => {
                let n = bounded(i.v()?, buf)?;
                let requests = (0..n).map(|_| req(&mut i)).collect::<Result<_, _>>()?;
                let m = bounded(i.v()?, buf)?;
                Params::RequestSome { requests, completed: (0..m).map(|_| i.u32()).collect::<Result<_, _>>()? }
            }
            Shape::Mrecv => {
                let (message, bytes) = (req(&mut i)?, i.v()?);
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                Params::Mrecv { message, bytes, request }
            }
            Shape::Intercomm => {
                let (parent, comm) = (i.u32()?, i.u32()?);
                let group = |i: &mut In| -> Result<Vec<u32>, DecodeError> {
                    let n = bounded(i.v()?, buf)?;
                    (0..n).map(|_| i.u32()).collect()
                };
                let local = group(&mut i)?;
                Params::Intercomm { parent, comm, local, remote: group(&mut i)? }
            }
            Shape::Icoll => {
                let (root, bytes) = (i.i32()?, i.v()?);
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                Params::Icoll { root, bytes, comm, request: req(&mut i)? }
            }
            Shape::Io => {
                let (file, offset, bytes) = (i.u32()?, i.v()?, i.v()?);
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                Params::Io { file, offset, bytes, comm, request }
            }
            Shape::Vcoll => {
                let root = i.i32()?;
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                let side = |i: &mut In| -> Result<Vec<u64>, DecodeError> {
                    let n = bounded(i.v()?, buf)?;
                    (0..n).map(|_| i.v()).collect()
                };
                let send = side(&mut i)?;
                Params::Vcoll { root, comm, request, send, recv: side(&mut i)? }
            }
            Shape::Neighbor => {
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                let side = |i: &mut In| -> Result<(Vec<i32>, Vec<u64>), DecodeError> {
                    let n = bounded(i.v()?, buf)?;
                    (0..n).map(|_| Ok((i.i32()?, i.v()?))).collect::<Result<Vec<_>, _>>().map(|v| v.into_iter().unzip())
                };
                let (dsts, send) = side(&mut i)?;
                let (srcs, recv) = side(&mut i)?;
                Params::Neighbor { comm, request, dsts, send, srcs, recv }
            }
        };
        // Commit the state only for a whole record.
        if flags & NEW_SITE != 0 {
            self.sites.push(caller);
        }
        self.handles = handles;
        self.prev_end = t_end_ns;
        self.prev_gap = gap;
        let failed = flags & FAILED != 0;
        let rec = CallRecord { op, failed, caller, compute_cpu_ns, compute_wall_ns, counters, t_start_ns, t_end_ns, params };
        Ok((rec, i.pos, gap))
    }
}

/// A list length that cannot exceed the bytes left (each entry ≥ 1 byte).
fn bounded(n: u64, buf: &[u8]) -> Result<usize, DecodeError> {
    if n as usize > buf.len() {
        Err(DecodeError::Short)
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::record::{ANY_SOURCE, ANY_TAG, PROC_NULL};

    fn rec(op: Op, params: Params, t: u64) -> CallRecord {
        CallRecord {
            op,
            failed: t.is_multiple_of(3),
            caller: 0x7f00_1234 + (t % 2) * 8,
            compute_cpu_ns: 1500 + t % 2,
            compute_wall_ns: 1500,
            // Every third record carries hardware counts (bit 6).
            counters: (t % 3 == 1).then_some(BlockCounters { cycles: 3900 + t, instructions: 1 << (20 + t % 7) }),
            t_start_ns: 10 + 3000 * t,
            t_end_ns: 20 + 3000 * t,
            params,
        }
    }

    fn cases() -> Vec<CallRecord> {
        let shapes = vec![
            (Op::Init, Params::None),
            (Op::Send, Params::P2p { peer: 3, tag: 7, bytes: 4096, comm: 0, request: 0 }),
            (Op::Irecv, Params::P2p { peer: ANY_SOURCE, tag: ANY_TAG, bytes: 8, comm: 2, request: 0x5600_dead }),
            (Op::Wait, Params::Wait { request: 0x5600_dead, source: 1 }),
            (Op::Waitall, Params::Waitall { requests: vec![0x5600_0010, 0, 0x5600_0090] }),
            (Op::Sendrecv, Params::Sendrecv { dst: 1, send_tag: 0, send_bytes: 8, src: 1, recv_tag: 0, recv_bytes: 8, comm: 0 }),
            (Op::Allreduce, Params::Coll { root: -1, bytes: 8, comm: 0 }),
            (Op::Test, Params::Test { request: 9, completed: true }),
            (Op::Waitany, Params::RequestSet { requests: vec![4, 5], result: 1 }),
            (Op::Iprobe, Params::Probe { peer: 2, tag: 3, bytes: 64, comm: 1, found: true }),
            (Op::CommSplit, Params::CommCreate { parent: 0, comm: 3, members: vec![0, 2, 4] }),
            (Op::AlltoallvTotal, Params::Coll { root: -1, bytes: 4096, comm: 3 }),
            (Op::SendInit, Params::P2p { peer: 1, tag: 4, bytes: 64, comm: 0, request: 0x5600_0200 }),
            (Op::Start, Params::Request { request: 0x5600_0200 }),
            (Op::Startall, Params::Waitall { requests: vec![0x5600_0200, 0x5600_0300] }),
            (Op::Waitsome, Params::RequestSome { requests: vec![7, 0, 9], completed: vec![2, 0] }),
            (Op::Testsome, Params::RequestSome { requests: vec![7], completed: vec![] }),
            (Op::Improbe, Params::P2p { peer: 1, tag: 4, bytes: 64, comm: 2, request: 0 }),
            (Op::Mrecv, Params::Mrecv { message: 0x5600_0400, bytes: 64, request: 0 }),
            (Op::Imrecv, Params::Mrecv { message: 0x5600_0400, bytes: 64, request: 0x5600_0500 }),
            (Op::CartSub, Params::CommCreate { parent: 4, comm: 5, members: vec![1, 3] }),
            (Op::IntercommCreate, Params::Intercomm { parent: 3, comm: 6, local: vec![0, 2], remote: vec![1, 3] }),
            (Op::Iallreduce, Params::Icoll { root: -1, bytes: 8, comm: 0, request: 0x5600_0600 }),
            (Op::Ibcast, Params::Icoll { root: 2, bytes: 80, comm: 5, request: 0x5600_0700 }),
            (Op::FileOpen, Params::Io { file: 7, offset: 0, bytes: 0, comm: 0, request: 0 }),
            (Op::FileWriteAt, Params::Io { file: 7, offset: 1 << 33, bytes: 4096, comm: 0, request: 0 }),
            (Op::FileIread, Params::Io { file: 7, offset: 64, bytes: 32, comm: 0, request: 0x5600_0800 }),
            (Op::Cancel, Params::Request { request: 0x5600_0800 }),
            (Op::RequestFree, Params::Request { request: 0x5600_0200 }),
            (Op::Allgatherv, Params::Vcoll { root: -1, comm: 0, request: 0, send: vec![8], recv: vec![8, 16, 0, 300] }),
            (Op::Gatherv, Params::Vcoll { root: 2, comm: 4, request: 0, send: vec![12], recv: vec![] }),
            (Op::Iscatterv, Params::Vcoll { root: 1, comm: 0, request: 0x5600_0900, send: vec![1 << 40, 0], recv: vec![7] }),
            (Op::Ialltoallw, Params::Vcoll { root: -1, comm: 3, request: 0x5600_0a00, send: vec![4, 8], recv: vec![8, 4] }),
            (Op::ReduceScatter, Params::Vcoll { root: -1, comm: 0, request: 0, send: vec![], recv: vec![] }),
            (
                Op::NeighborAlltoallv,
                Params::Neighbor { comm: 6, request: 0, dsts: vec![PROC_NULL, 3], send: vec![0, 24], srcs: vec![1], recv: vec![40] },
            ),
            (
                Op::IneighborAllgather,
                Params::Neighbor { comm: 0, request: 0x5600_0b00, dsts: vec![], send: vec![], srcs: vec![2, 2], recv: vec![8, 8] },
            ),
            (Op::CommIdup, Params::CommCreate { parent: 0, comm: 7, members: vec![0, 1, 2, 3] }),
        ];
        shapes.into_iter().enumerate().map(|(t, (op, p))| rec(op, p, t as u64)).collect()
    }

    #[test]
    fn format_2_streams_still_decode() {
        // Two MPI_Wait records as format 2 wrote them: plain CPU time, the
        // request as a zigzag delta from the previous handle.
        let v2 = [14, NEW_SITE, 0x40, 100, 90, 0, 7, 10, 2, 14, 0, 0, 100, 90, 0, 7, 0, 2];
        let mut d = Decoder::v2();
        let (a, n) = d.decode(&v2).unwrap();
        let (b, m) = d.decode(&v2[n..]).unwrap();
        assert_eq!(n + m, v2.len());
        for (r, start) in [(&a, 100), (&b, 207)] {
            assert_eq!((r.caller, r.compute_wall_ns, r.compute_cpu_ns, r.t_start_ns), (0x40, 100, 90, start));
            assert_eq!(r.params, Params::Wait { request: 5, source: 1 });
        }
    }

    #[test]
    fn recent_requests_take_one_byte_and_the_table_evicts_the_oldest() {
        let mut enc = Encoder::default();
        let mut buf = vec![0u8; 4096];
        let handles: Vec<u64> = (0..RECENT as u64 + 1).map(|k| 0x7f00_0000_0000 + k * 0x1_0000_0000).collect();
        let waitall = |requests: Vec<u64>| rec(Op::Waitall, Params::Waitall { requests }, 0);
        let first = enc.encode(&waitall(handles.clone()), &mut buf).unwrap();
        let again = enc.encode(&waitall(handles[1..].to_vec()), &mut buf[first..]).unwrap();
        // The second list: its fixed fields, then one byte per handle.
        let fixed = enc.encode(&waitall(vec![]), &mut buf[first + again..]).unwrap();
        assert_eq!(again, fixed + RECENT);
        // handles[0] was evicted: it comes back as a delta.
        let back = enc.encode(&waitall(vec![handles[0]]), &mut buf[first + again + fixed..]).unwrap();
        assert!(back > fixed + 1);
        let mut dec = Decoder::default();
        let mut at = 0;
        for want in [handles.clone(), handles[1..].to_vec(), vec![], vec![handles[0]]] {
            let (r, n) = dec.decode(&buf[at..]).unwrap();
            assert_eq!(r.params, Params::Waitall { requests: want });
            at += n;
        }
        // An index past the handles seen so far is an error, not a guess.
        let bad = [15, NEW_SITE | CPU_IS_WALL, 1, 0, 0, 1, 1, 0];
        assert_eq!(Decoder::default().decode(&bad), Err(DecodeError::BadRequest(0)));
    }

    #[test]
    fn every_shape_round_trips_through_the_stream_state() {
        let (mut enc, mut dec) = (Encoder::default(), Decoder::default());
        let mut buf = vec![0u8; 8192];
        let mut pos = 0;
        for c in cases().iter().chain(cases().iter()) {
            pos += enc.encode(c, &mut buf[pos..]).unwrap();
        }
        let mut at = 0;
        for c in cases().iter().chain(cases().iter()) {
            let (d, n) = dec.decode(&buf[at..pos]).unwrap();
            assert_eq!(&d, c);
            at += n;
        }
        assert_eq!(at, pos);
    }

    /// Ops that predate the per-member counts keep their bytes: a legacy
    /// `MPI_Gatherv` (code 35) record is still `root bytes [comm]`.
    #[test]
    fn legacy_v_collective_records_keep_their_encoding() {
        let r = CallRecord {
            op: Op::GathervTotal,
            failed: false,
            caller: 0x10,
            compute_cpu_ns: 0,
            compute_wall_ns: 0,
            counters: None,
            t_start_ns: 0,
            t_end_ns: 0,
            params: Params::Coll { root: -1, bytes: 100, comm: 0 },
        };
        let mut buf = [0u8; 256];
        let n = Encoder::default().encode(&r, &mut buf).unwrap();
        assert_eq!(&buf[..n], &[35, NEW_SITE | CPU_IS_WALL | WORLD, 0x10, 0, 0, 0, 1, 100]);
        assert_eq!(Decoder::default().decode(&buf[..n]).unwrap(), (r, n));
    }

    #[test]
    fn a_ring_send_takes_at_most_twelve_bytes() {
        let mut enc = Encoder::default();
        let mut buf = [0u8; 256];
        let first = rec(Op::Send, Params::P2p { peer: 1, tag: 0, bytes: 8, comm: 0, request: 0 }, 0);
        enc.encode(&first, &mut buf).unwrap();
        let mut next = first.clone();
        (next.t_start_ns, next.t_end_ns, next.compute_wall_ns, next.compute_cpu_ns) = (first.t_end_ns + 60, first.t_end_ns + 300, 40, 40);
        let n = enc.encode(&next, &mut buf).unwrap();
        assert!(n <= 11, "{n} bytes");
    }

    #[test]
    fn a_repeat_marker_reads_its_body_again_on_the_clock() {
        // Two plain records, then a 3-record body read 1 + 2 times, then one more.
        let all = cases();
        let body = &all[1..4];
        let (mut enc, mut dec) = (Encoder::default(), Decoder::default());
        let mut buf = vec![0u8; 8192];
        let mut pos = enc.encode(&all[0], &mut buf).unwrap();
        pos += enc.encode_repeat(3, 2, &mut buf[pos..]).unwrap();
        for r in body {
            pos += enc.encode(r, &mut buf[pos..]).unwrap();
        }
        pos += enc.encode(&all[4], &mut buf[pos..]).unwrap();
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            if let Some(c) = dec.next_copy() {
                out.push(c);
                continue;
            }
            if at == pos {
                break;
            }
            let (rec, n) = dec.decode_item(&buf[at..pos]).unwrap();
            out.extend(rec);
            at += n;
        }
        assert_eq!(out.len(), 1 + 3 * 3 + 1);
        assert_eq!(out[0], all[0]);
        for (j, r) in out[1..10].iter().enumerate() {
            let b = &body[j % 3];
            assert_eq!((r.op, &r.params, r.caller, r.compute_cpu_ns), (b.op, &b.params, b.caller, b.compute_cpu_ns));
            assert_eq!(r.t_end_ns - r.t_start_ns, b.t_end_ns - b.t_start_ns);
            // Each copy starts one compute block plus the body's gap after the previous end.
            let gap = b.t_start_ns as i64 - b.compute_wall_ns as i64 - all[j % 3].t_end_ns as i64;
            assert_eq!(r.t_start_ns as i64, out[j].t_end_ns as i64 + r.compute_wall_ns as i64 + gap, "{j}");
        }
        // The record after the copies decodes on the encoder's clock, which
        // counted the copies: it keeps its own times.
        assert_eq!(out[10], all[4]);
        // A marker inside a body is an error; so is a zero count.
        let mut d = Decoder::default();
        assert_eq!(d.decode_item(&[REPEAT, 2, 1]).unwrap(), (None, 3));
        assert_eq!(d.decode_item(&[REPEAT, 2, 1]), Err(DecodeError::BadRepeat("inside another repeat")));
        assert!(matches!(Decoder::default().decode_item(&[REPEAT, 2, 0]), Err(DecodeError::BadRepeat(_))));
    }

    #[test]
    fn short_unknown_and_undefined_sites_are_errors() {
        let mut enc = Encoder::default();
        let mut buf = [0u8; 256];
        let r = rec(Op::Send, Params::P2p { peer: 1, tag: 0, bytes: 1, comm: 0, request: 0 }, 1);
        let n = enc.encode(&r, &mut buf).unwrap();
        assert_eq!(Decoder::default().decode(&buf[..n - 1]), Err(DecodeError::Short));
        let n2 = enc.encode(&r, &mut buf).unwrap(); // now refers to site 0
        assert_eq!(Decoder::default().decode(&buf[..n2]), Err(DecodeError::BadSite(0)));
        buf[0] = 250;
        assert_eq!(Decoder::default().decode(&buf[..n2]), Err(DecodeError::UnknownOp(250)));
        assert!(enc.encode(&r, &mut buf[..10]).is_none());
    }
}

//! Reading the [`super`] encoding back, in each format's layout.

use super::{
    unzigzag, Handles, In, Version, COUNTERS, CPU_IS_WALL, FAILED, HAS_REQUEST, MAX_REPEAT_BODY, NEW_SITE, REPEAT, SAME_OP, WORLD, YES,
};
use crate::trace::record::{shape, BlockCounters, CallRecord, DecodeError, Op, Params, Shape, COMM_WORLD};

/// Decoder state of one rank's stream.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Return address and last op code of each call site, by index.
    sites: Vec<(u64, u8)>,
    /// Return address of the last new call site.
    last_site: u64,
    prev_end: u64,
    prev_gap: i64,
    handles: Handles,
    /// The layout read.
    version: Version,
    /// The open repeat: body records with their gaps, records of it still
    /// to read, copies still to give, next body record to copy.
    body: Vec<(CallRecord, i64)>,
    capture: usize,
    copies: u64,
    next: usize,
}

impl Decoder {
    /// A decoder of `version` streams; the default one reads format 4.
    pub fn new(version: Version) -> Decoder {
        Decoder { version, ..Decoder::default() }
    }

    /// A decoder of format 2 streams (files starting `MPITRC02`).
    pub fn v2() -> Decoder {
        Decoder::new(Version::V2)
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
        // Timestamps of copies wrap rather than fail: the body's were read.
        rec.t_start_ns = (self.prev_end as i64).wrapping_add(rec.compute_wall_ns as i64).wrapping_add(*gap) as u64;
        rec.t_end_ns = rec.t_start_ns.wrapping_add(body.t_end_ns.wrapping_sub(body.t_start_ns));
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
        let (version, v2) = (self.version, self.version == Version::V2);
        let (flags, code) = if version >= Version::V4 {
            let flags = i.u8()?;
            (flags, if flags & SAME_OP == 0 { Some(i.u8()?) } else { None })
        } else {
            let code = i.u8()?;
            (i.u8()? & !SAME_OP, Some(code))
        };
        let site = i.v()?;
        let (caller, known) = match flags & NEW_SITE != 0 {
            true if version >= Version::V4 => (self.last_site.wrapping_add(unzigzag(site) as u64), None),
            true => (site, None),
            false => (self.sites.get(site as usize).ok_or(DecodeError::BadSite(site))?.0, Some(site as usize)),
        };
        let code = match (code, known) {
            (Some(c), _) => c,
            (None, Some(k)) => self.sites[k].1,
            (None, None) => return Err(DecodeError::NoOp),
        };
        let op = Op::from_code(code).ok_or(DecodeError::UnknownOp(code))?;
        let compute_wall_ns = i.v()?;
        let compute_cpu_ns = match flags & CPU_IS_WALL != 0 {
            true => compute_wall_ns,
            false if v2 => i.v()?,
            false => {
                (compute_wall_ns as i64).checked_sub(i.z()?).ok_or(DecodeError::OutOfRange("compute CPU time, ns", compute_wall_ns))? as u64
            }
        };
        let counters = if flags & COUNTERS != 0 { Some(BlockCounters { cycles: i.v()?, instructions: i.v()? }) } else { None };
        let time = |t: Option<i64>| t.ok_or(DecodeError::OutOfRange("timestamp, ns", compute_wall_ns));
        let gap = if v2 { i.z()? } else { time(self.prev_gap.checked_add(i.z()?))? };
        let t_start_ns = time((self.prev_end as i64).checked_add(compute_wall_ns as i64).and_then(|t| t.checked_add(gap)))? as u64;
        let t_end_ns = time(t_start_ns.checked_add(i.v()?).map(|t| t as i64))? as u64;
        let mut handles = self.handles;
        let mut req = |i: &mut In| handles.get(i, version);
        let yes = flags & YES != 0;
        let params = match shape(op) {
            Shape::None => Params::None,
            Shape::P2p => {
                let (peer, tag, bytes) = (i.i32()?, i.i32()?, i.bytes()?);
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                Params::P2p { peer, tag, bytes, comm, request }
            }
            Shape::Sendrecv => Params::Sendrecv {
                dst: i.i32()?,
                send_tag: i.i32()?,
                send_bytes: i.bytes()?,
                src: i.i32()?,
                recv_tag: i.i32()?,
                recv_bytes: i.bytes()?,
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
            Shape::Probe => Params::Probe { peer: i.i32()?, tag: i.i32()?, bytes: i.bytes()?, comm: i.u32()?, found: yes },
            Shape::CommCreate => {
                let (parent, comm, n) = (i.u32()?, i.u32()?, bounded(i.v()?, buf)?);
                Params::CommCreate { parent, comm, members: (0..n).map(|_| i.u32()).collect::<Result<_, _>>()? }
            }
            Shape::Coll => {
                let (root, bytes) = (i.i32()?, i.bytes()?);
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
                let (message, bytes) = (req(&mut i)?, i.bytes()?);
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
                let (root, bytes) = (i.i32()?, i.bytes()?);
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                Params::Icoll { root, bytes, comm, request: req(&mut i)? }
            }
            Shape::Io => {
                let (file, offset, bytes) = (i.u32()?, i.v()?, i.bytes()?);
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                Params::Io { file, offset, bytes, comm, request }
            }
            Shape::IoInfo => {
                let file = i.u32()?;
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let (amode, disp, etype_bytes, view_bytes, view_extent, block_bytes) = (i.u32()?, i.v()?, i.v()?, i.v()?, i.v()?, i.v()?);
                let n = bounded(i.v()?, buf)?;
                let hints = (0..n).map(|_| Ok((i.u32()?, i.v()?))).collect::<Result<_, DecodeError>>()?;
                Params::IoInfo { file, comm, amode, disp, etype_bytes, view_bytes, view_extent, block_bytes, hints }
            }
            Shape::Vcoll => {
                let root = i.i32()?;
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                let side = |i: &mut In| -> Result<Vec<u64>, DecodeError> {
                    let n = bounded(i.v()?, buf)?;
                    (0..n).map(|_| i.bytes()).collect()
                };
                let send = side(&mut i)?;
                Params::Vcoll { root, comm, request, send, recv: side(&mut i)? }
            }
            Shape::Neighbor => {
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                let side = |i: &mut In| -> Result<(Vec<i32>, Vec<u64>), DecodeError> {
                    let n = bounded(i.v()?, buf)?;
                    (0..n).map(|_| Ok((i.i32()?, i.bytes()?))).collect::<Result<Vec<_>, _>>().map(|v| v.into_iter().unzip())
                };
                let (dsts, send) = side(&mut i)?;
                let (srcs, recv) = side(&mut i)?;
                Params::Neighbor { comm, request, dsts, send, srcs, recv }
            }
            Shape::Rma => {
                let win = i.u32()?;
                let comm = if flags & WORLD != 0 { COMM_WORLD } else { i.u32()? };
                let (target, disp, bytes, op, assert) = (i.i32()?, i.v()?, i.v()?, i.u32()?, i.u32()?);
                let request = if flags & HAS_REQUEST != 0 { req(&mut i)? } else { 0 };
                let n = bounded(i.v()?, buf)?;
                let group = (0..n).map(|_| i.i32()).collect::<Result<_, _>>()?;
                Params::Rma { win, comm, target, disp, bytes, op, assert, request, group }
            }
        };
        // Commit the state only for a whole record.
        match known {
            Some(k) => self.sites[k].1 = code,
            None => {
                self.sites.push((caller, code));
                self.last_site = caller;
            }
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

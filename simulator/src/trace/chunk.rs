//! The chunked, append-only container of a per-rank trace file.
//!
//! ```text
//! file   := MAGIC (8 bytes) chunk*
//! chunk  := "CHNK" kind:u8 0:u8 stream:u16 len:u32 crc32:u32 payload[len]
//! ```
//! Each chunk is self-describing and at most [`MAX_CHUNK_PAYLOAD`] bytes of
//! payload, so a file cut short by a crash still reads up to its last whole
//! chunk. A complete file has a [`ChunkKind::End`] chunk. Record chunks
//! carry the stream (thread) they belong to: 0 for the thread that called
//! `MPI_Init`, 1, 2, … for other threads that made MPI calls; each stream
//! decodes on its own.

use std::io::{self, Write};

use super::codec::Version;

/// First 8 bytes of every per-rank trace file (format 4).
pub const MAGIC: &[u8; 8] = b"MPITRC04";
/// First 8 bytes of a format-3 file, which readers still accept.
pub const MAGIC_V3: &[u8; 8] = b"MPITRC03";
/// First 8 bytes of a format-2 file, which readers still accept.
pub const MAGIC_V2: &[u8; 8] = b"MPITRC02";

/// The format a file's first 8 bytes announce; `None` for anything else.
pub fn version_of(magic: &[u8; 8]) -> Option<Version> {
    match magic {
        m if m == MAGIC => Some(Version::V4),
        m if m == MAGIC_V3 => Some(Version::V3),
        m if m == MAGIC_V2 => Some(Version::V2),
        _ => None,
    }
}
/// Bytes in a chunk header.
pub const CHUNK_HEADER_BYTES: usize = 16;
/// Largest record payload a writer puts in one chunk, bytes (64 KiB less the header).
pub const MAX_CHUNK_PAYLOAD: usize = 64 * 1024 - CHUNK_HEADER_BYTES;
const CHUNK_TAG: &[u8; 4] = b"CHNK";

/// What a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ChunkKind {
    /// The [`super::RankHeader`]: [`super::fields`] (format 4) or JSON.
    Header = 1,
    /// Concatenated [`super::CallRecord`]s in the [`super::codec`] encoding.
    Records = 2,
    /// JSON list of [`super::Module`]s (formats 2 and 3; format 4 puts
    /// them in the end chunk).
    Modules = 3,
    /// The [`super::RankFooter`] and, in format 4, the [`super::Module`]s
    /// ([`super::fields`]; JSON footer before); its presence marks a
    /// complete file.
    End = 4,
    /// The writer stopped: a write failed (disk full, I/O error, quota);
    /// the payload is the reason, UTF-8. The chunks before it are whole,
    /// the records after the failure are lost.
    Stop = 5,
}

impl ChunkKind {
    /// Decodes a kind byte.
    pub fn from_code(c: u8) -> Option<ChunkKind> {
        match c {
            1 => Some(ChunkKind::Header),
            2 => Some(ChunkKind::Records),
            3 => Some(ChunkKind::Modules),
            4 => Some(ChunkKind::End),
            5 => Some(ChunkKind::Stop),
            _ => None,
        }
    }
}

/// Builds the 16-byte header of a chunk of `stream` holding `payload`.
pub fn chunk_header(kind: ChunkKind, stream: u16, payload: &[u8]) -> [u8; CHUNK_HEADER_BYTES] {
    let mut h = [0u8; CHUNK_HEADER_BYTES];
    h[0..4].copy_from_slice(CHUNK_TAG);
    h[4] = kind as u8;
    h[6..8].copy_from_slice(&stream.to_le_bytes());
    h[8..12].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[12..16].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
    h
}

/// Writes one chunk of `stream` with a single `write_all` of header and payload.
///
/// # Errors
/// The writer's I/O error.
pub fn write_chunk<W: Write>(w: &mut W, kind: ChunkKind, stream: u16, payload: &[u8]) -> io::Result<()> {
    let mut whole = Vec::with_capacity(CHUNK_HEADER_BYTES + payload.len());
    whole.extend_from_slice(&chunk_header(kind, stream, payload));
    whole.extend_from_slice(payload);
    w.write_all(&whole)
}

/// A parsed chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHead {
    /// The chunk's kind byte, decoded.
    pub kind: ChunkKind,
    /// Stream (thread) of a record chunk; 0 for other kinds.
    pub stream: u16,
    /// Payload length, bytes.
    pub len: usize,
    /// CRC-32 of the payload.
    pub crc: u32,
}

/// Parses a chunk header; `Err` names what is wrong.
///
/// # Errors
/// A description when the tag or kind is not valid.
pub fn parse_chunk_header(h: &[u8; CHUNK_HEADER_BYTES]) -> Result<ChunkHead, crate::error::Invalid> {
    if &h[0..4] != CHUNK_TAG {
        return Err("bad chunk tag".into());
    }
    let kind = ChunkKind::from_code(h[4]).ok_or_else(|| format!("unknown chunk kind {}", h[4]))?;
    let len = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(h[12..16].try_into().expect("4 bytes"));
    let stream = u16::from_le_bytes(h[6..8].try_into().expect("2 bytes"));
    Ok(ChunkHead { kind, stream, len, crc })
}

/// Record boundaries a [`RecordBuffer`] keeps, at least [`MARK_SPACING`]
/// bytes apart, so that a chunk that cannot be written whole can be written
/// in smaller pieces.
pub const MAX_MARKS: usize = 128;

/// Least distance between two kept record boundaries, bytes.
pub const MARK_SPACING: usize = MAX_CHUNK_PAYLOAD / MAX_MARKS + 1;

/// Buffers encoded records and emits them as [`ChunkKind::Records`] chunks.
///
/// The buffer is allocated once, with room for the chunk header in front,
/// so appending a record never allocates and a flush is a single `write`
/// (whole chunks stay whole on an `O_APPEND` file shared by threads).
#[derive(Debug)]
pub struct RecordBuffer {
    buf: Box<[u8]>,
    len: usize,
    stream: u16,
    /// Record boundaries kept: (payload offset, records before it).
    marks: [(u32, u32); MAX_MARKS],
    nmarks: usize,
}

impl Default for RecordBuffer {
    fn default() -> Self {
        Self::new(0)
    }
}

impl RecordBuffer {
    /// An empty buffer of [`MAX_CHUNK_PAYLOAD`] bytes payload capacity for
    /// the records of `stream`.
    pub fn new(stream: u16) -> Self {
        let buf = vec![0u8; CHUNK_HEADER_BYTES + MAX_CHUNK_PAYLOAD].into_boxed_slice();
        RecordBuffer { buf, len: CHUNK_HEADER_BYTES, stream, marks: [(0, 0); MAX_MARKS], nmarks: 0 }
    }

    /// Notes the end of the buffered records as a boundary, `records`
    /// of them before it, if it is [`MARK_SPACING`] past the last one.
    #[inline]
    pub fn mark(&mut self, records: u32) {
        let at = self.len - CHUNK_HEADER_BYTES;
        let last = if self.nmarks == 0 { 0 } else { self.marks[self.nmarks - 1].0 as usize };
        if at - last >= MARK_SPACING && self.nmarks < MAX_MARKS {
            self.marks[self.nmarks] = (at as u32, records);
            self.nmarks += 1;
        }
    }

    /// The kept record boundaries: (payload offset, records before it).
    pub fn marks(&self) -> &[(u32, u32)] {
        &self.marks[..self.nmarks]
    }

    /// The buffered records, encoded.
    pub fn payload(&self) -> &[u8] {
        &self.buf[CHUNK_HEADER_BYTES..self.len]
    }

    /// Forgets the buffered records.
    pub fn clear(&mut self) {
        self.len = CHUNK_HEADER_BYTES;
        self.nmarks = 0;
    }

    /// Writes the buffered records as one chunk (one `write_all`), keeping
    /// them buffered.
    ///
    /// # Errors
    /// The writer's I/O error.
    pub fn write_to<W: Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let head = chunk_header(ChunkKind::Records, self.stream, &self.buf[CHUNK_HEADER_BYTES..self.len]);
        self.buf[..CHUNK_HEADER_BYTES].copy_from_slice(&head);
        w.write_all(&self.buf[..self.len])
    }

    /// Free payload space left, bytes.
    pub fn room(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Appends an encoded record; returns false (and appends nothing) when
    /// it does not fit, in which case the caller flushes first.
    pub fn push(&mut self, record: &[u8]) -> bool {
        if record.len() > self.room() {
            return false;
        }
        self.spare()[..record.len()].copy_from_slice(record);
        self.commit(record.len());
        true
    }

    /// The free space, to encode a record in place before [`RecordBuffer::commit`].
    pub fn spare(&mut self) -> &mut [u8] {
        &mut self.buf[self.len..]
    }

    /// Keeps the first `n` bytes written into [`RecordBuffer::spare`].
    ///
    /// # Panics
    /// If `n` exceeds [`RecordBuffer::room`].
    pub fn commit(&mut self, n: usize) {
        assert!(n <= self.room(), "commit past the buffer");
        self.len += n;
    }

    /// True when no record is buffered.
    pub fn is_empty(&self) -> bool {
        self.len == CHUNK_HEADER_BYTES
    }

    /// The stream whose records this buffer holds.
    pub fn stream(&self) -> u16 {
        self.stream
    }

    /// Writes the buffered records as one chunk and empties the buffer.
    ///
    /// # Errors
    /// The writer's I/O error; the buffer is emptied either way so a broken
    /// file never makes the caller retry forever.
    pub fn flush_to<W: Write>(&mut self, w: &mut W) -> io::Result<()> {
        let r = self.write_to(w);
        self.clear();
        r
    }
}

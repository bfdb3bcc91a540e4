//! Writes a per-rank trace file: magic, header, record chunks, end (the
//! footer and the module table).
//!
//! A write that fails (disk full, I/O error, quota) loses no whole chunk
//! written before it: with [`RankWriter::rewind_with`], the file is cut
//! back to its last whole chunk, the failed chunk's records are written
//! again in pieces (at the record boundaries the buffer keeps) while they
//! fit, and a [`ChunkKind::Stop`] chunk says why writing stopped; the
//! writer then writes nothing more.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

use super::chunk::{chunk_header, write_chunk, ChunkKind, RecordBuffer, CHUNK_HEADER_BYTES, MAGIC};
use super::codec::{list_len, max_encoded_len, Encoder, MAX_REPEAT_LEN};
use super::record::{CallRecord, Params};
use super::{fields, Module, RankFooter, RankHeader};

/// Streams call records of one rank into chunks on `W`.
///
/// Pushing a record encodes it ([`super::codec`]) in place in a
/// preallocated chunk buffer: no allocation, and one `write` per full
/// chunk. Only a record larger than a chunk is encoded on the heap.
#[derive(Debug)]
pub struct RankWriter<W: Write> {
    out: W,
    buf: RecordBuffer,
    encoder: Encoder,
    buffered: u64,
    footer: RankFooter,
    flushes: u64,
    /// The file `out` writes to, to cut it back after a failed write.
    rewind: Option<File>,
    /// Why writing stopped, once it did.
    stopped: Option<String>,
}

impl<W: Write> RankWriter<W> {
    /// Writes the magic and the header chunk.
    ///
    /// # Errors
    /// The writer's I/O error.
    pub fn create(mut out: W, header: &RankHeader) -> io::Result<Self> {
        out.write_all(MAGIC)?;
        write_chunk(&mut out, ChunkKind::Header, 0, &fields::header_bytes(header))?;
        Ok(Self::stream(out, 0))
    }

    /// A writer of stream `stream` (another thread of the rank) appending to
    /// a file that [`RankWriter::create`] started; writes no header. Such a
    /// writer only pushes and flushes: the stream-0 writer finishes the file.
    pub fn stream(out: W, stream: u16) -> Self {
        let footer = RankFooter::default();
        RankWriter {
            out,
            buf: RecordBuffer::new(stream),
            encoder: Encoder::default(),
            buffered: 0,
            footer,
            flushes: 0,
            rewind: None,
            stopped: None,
        }
    }

    /// Keeps the file whole when a write fails (see the module docs):
    /// `file` is the file the writer's destination writes to (a
    /// `try_clone` of it). Costs one `fstat` per chunk.
    pub fn rewind_with(mut self, file: File) -> Self {
        self.rewind = Some(file);
        self
    }

    /// Why writing stopped, once a write failed and the file was cut back
    /// ([`RankWriter::rewind_with`]).
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Appends one record, flushing a full chunk first when needed.
    /// A record that cannot be written is counted in the footer's
    /// `dropped_records`.
    ///
    /// # Errors
    /// The I/O error of the chunk flush, if any.
    #[inline]
    pub fn push(&mut self, rec: &CallRecord) -> io::Result<()> {
        if let Params::Waitall { requests } = &rec.params {
            const PER_CHUNK: usize = 4096; // ≤ 41 KiB encoded: fits a chunk
            if requests.len() > PER_CHUNK {
                // Completion of a waitall is the max over its requests, so
                // consecutive waitalls over the pieces replay identically.
                for piece in requests.chunks(PER_CHUNK) {
                    let mut part = rec.clone();
                    part.params = Params::Waitall { requests: piece.to_vec() };
                    self.push(&part)?;
                }
                return Ok(());
            }
        }
        let max = max_encoded_len(list_len(rec));
        let mut result = Ok(());
        if self.buf.room() < max {
            result = self.flush();
        }
        if self.buf.room() >= max {
            let n = self.encoder.encode(rec, self.buf.spare()).expect("room for the largest encoding");
            self.buf.commit(n);
            self.buf.mark(self.buffered as u32 + 1);
        } else {
            // Larger than a chunk (a huge communicator's member list): a
            // chunk of its own, which readers accept at any size.
            let mut heap = vec![0u8; max];
            let n = self.encoder.encode(rec, &mut heap).expect("a buffer of the largest encoding");
            let own = write_chunk(&mut self.out, ChunkKind::Records, self.buf.stream(), &heap[..n]);
            if own.is_err() {
                self.footer.dropped_records += 1;
            }
            self.footer.records += 1;
            return result.and(own);
        }
        self.buffered += 1;
        self.footer.records += 1;
        self.footer.failed_calls += rec.failed as u64;
        result
    }

    /// Appends a loop body read `1 + copies` times ([`super::codec`]'s
    /// repeat marker, then the body's records): the copies take the body's
    /// compute times, parameters, gaps and call durations. The footer
    /// counts every record a reader yields, copies included.
    ///
    /// # Errors
    /// The I/O error of a chunk flush, if any.
    ///
    /// A `Waitall` of more than 4096 requests in `body` is split into
    /// several records by [`RankWriter::push`], which breaks the count of
    /// the body: leave such records out of repeats.
    ///
    /// # Panics
    /// When `body` is empty or longer than [`super::codec::MAX_REPEAT_BODY`],
    /// or `copies` is 0.
    pub fn push_repeated(&mut self, body: &[CallRecord], copies: u64) -> io::Result<()> {
        let mut result = Ok(());
        if self.buf.room() < MAX_REPEAT_LEN {
            result = self.flush();
        }
        let n = self.encoder.encode_repeat(body.len(), copies, self.buf.spare()).expect("room for a repeat marker");
        self.buf.commit(n);
        for rec in body {
            result = result.and(self.push(rec));
        }
        self.footer.records += body.len() as u64 * copies;
        self.footer.failed_calls += body.iter().filter(|r| r.failed).count() as u64 * copies;
        result
    }

    /// Writes buffered records as a chunk.
    ///
    /// # Errors
    /// The writer's I/O error; the records are then counted as dropped.
    pub fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = match &self.stopped {
            Some(why) => Err(io::Error::other(why.clone())),
            None => {
                let before = self.rewind.as_ref().and_then(|f| f.metadata().ok()).map(|m| m.len());
                match (self.buf.write_to(&mut self.out).and_then(|_| self.out.flush()), before) {
                    (Ok(()), _) => Ok(()),
                    (Err(e), Some(len)) => Err(self.salvage(len, e)),
                    (Err(e), None) => Err(e),
                }
            }
        };
        if r.is_err() && self.stopped.is_none() {
            self.footer.dropped_records += self.buffered;
        }
        self.buf.clear();
        self.buffered = 0;
        r
    }

    /// After a failed write: cuts the file back to `len` bytes (its last
    /// whole chunk), writes the buffered records again in pieces at the
    /// kept boundaries while they fit, then a stop chunk; counts the
    /// records that did not fit as dropped. Returns `e`.
    fn salvage(&mut self, len: u64, e: io::Error) -> io::Error {
        let Some(file) = self.rewind.as_mut() else { return e };
        let cut = |f: &mut File, at: u64| f.set_len(at).and_then(|_| f.seek(SeekFrom::Start(at))).is_ok();
        if !cut(file, len) {
            self.stopped = Some(format!("{e}; the file could not be cut back to its last whole chunk"));
            self.footer.dropped_records += self.buffered;
            return e;
        }
        let (mut at, mut start, mut saved) = (len, 0usize, 0u64);
        // The last piece written: where it starts and the records before it.
        let mut last = (len, 0u64);
        let payload = self.buf.payload();
        let ends = self.buf.marks().iter().map(|&(o, r)| (o as usize, r as u64)).chain([(payload.len(), self.buffered)]);
        for (end, records) in ends {
            if end <= start {
                continue;
            }
            let piece = &payload[start..end];
            let mut whole = Vec::with_capacity(CHUNK_HEADER_BYTES + piece.len());
            whole.extend_from_slice(&chunk_header(ChunkKind::Records, self.buf.stream(), piece));
            whole.extend_from_slice(piece);
            if self.out.write_all(&whole).and_then(|_| self.out.flush()).is_err() {
                cut(file, at);
                break;
            }
            last = (at, saved);
            (at, start, saved) = (at + whole.len() as u64, end, records);
        }
        // The stop chunk; without room for it, the last piece makes room.
        let mut why = String::new();
        for attempt in 0..2 {
            if attempt == 1 {
                cut(file, last.0);
                (at, saved) = last;
            }
            why = format!("{e}; {} records of the chunk being written were lost", self.buffered - saved);
            let mut stop = Vec::new();
            let _ = write_chunk(&mut stop, ChunkKind::Stop, self.buf.stream(), why.as_bytes());
            if self.out.write_all(&stop).and_then(|_| self.out.flush()).is_ok() {
                break;
            }
            cut(file, at);
        }
        self.footer.dropped_records += self.buffered - saved;
        self.stopped = Some(why);
        e
    }

    /// Chunk writes so far (calls of [`RankWriter::flush`], by a push or
    /// directly): a tracer compares it around a push to know whether that
    /// push wrote to the file.
    pub fn flushes(&self) -> u64 {
        self.flushes
    }

    /// Sets the recorder overheads reported in the footer, nanoseconds.
    pub fn set_overhead(&mut self, cpu_ns: u64, wall_ns: u64) {
        self.footer.overhead_cpu_ns = cpu_ns;
        self.footer.overhead_wall_ns = wall_ns;
    }

    /// Sets the counter-mode note reported in the footer (free text; the
    /// file stores the interposer's usual phrases as one byte each,
    /// [`fields::PHRASES`]).
    pub fn set_counters(&mut self, note: &str) {
        self.footer.counters = note.to_string();
    }

    /// Records written so far (including buffered ones).
    pub fn records(&self) -> u64 {
        self.footer.records
    }

    /// Flushes, then writes the end chunk: the footer and the module table
    /// (only the modules that hold a recorded call site). Push nothing
    /// after this.
    ///
    /// # Errors
    /// The writer's I/O error.
    pub fn finish(&mut self, modules: &[Module]) -> io::Result<()> {
        self.flush()?;
        if let Some(why) = &self.stopped {
            return Err(io::Error::other(why.clone()));
        }
        let used: Vec<&Module> = modules.iter().filter(|m| self.encoder.sites().any(|a| m.start <= a && a < m.end)).collect();
        write_chunk(&mut self.out, ChunkKind::End, 0, &fields::end_bytes(&self.footer, &used))?;
        self.out.flush()
    }
}

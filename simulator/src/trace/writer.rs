//! Writes a per-rank trace file: magic, header, record chunks, end (the
//! footer and the module table).

use std::io::{self, Write};

use super::chunk::{write_chunk, ChunkKind, RecordBuffer, MAGIC};
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
        RankWriter { out, buf: RecordBuffer::new(stream), encoder: Encoder::default(), buffered: 0, footer, flushes: 0 }
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
        let r = self.buf.flush_to(&mut self.out).and_then(|_| self.out.flush());
        if r.is_err() {
            self.footer.dropped_records += self.buffered;
        }
        self.buffered = 0;
        r
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
        let used: Vec<&Module> = modules.iter().filter(|m| self.encoder.sites().any(|a| m.start <= a && a < m.end)).collect();
        write_chunk(&mut self.out, ChunkKind::End, 0, &fields::end_bytes(&self.footer, &used))?;
        self.out.flush()
    }
}

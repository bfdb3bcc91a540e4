//! The sampling loop and the chunk ring that carries its events to the writer.
//!
//! Each sampling thread owns one [`Ring`]: `chunks` fixed buffers of
//! `chunk_events` [`Event`]s, allocated, locked (`mlock`) and touched before
//! the loop starts. The loop fills them in order; a full chunk is published
//! with one release store, and the writer hands it back with another. The loop
//! never allocates, locks, blocks or makes a system call, so memory stays at
//! `chunks × chunk_events × 16` bytes per CPU however long the run. If the
//! writer falls behind and every chunk is full, events are counted as dropped
//! (and reported) rather than stalling the loop.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::tsc::{Counter, LfenceRdtsc, Rdtsc, Rdtscp, TimerRead};

/// One detected detour, in raw counter values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Event {
    /// Counter value of the read before the detour, cycles.
    pub start: u64,
    /// Delta to the read after it, cycles (above the threshold).
    pub duration: u64,
}

struct Chunk {
    /// Set by the sampler when the chunk holds `len` events for the writer;
    /// cleared by the writer when it is free again.
    full: AtomicBool,
    len: AtomicUsize,
}

/// Fixed pool of event buffers shared by one sampler and the writer.
pub struct Ring {
    chunks: Box<[Chunk]>,
    events: Box<[UnsafeCell<Event>]>,
    chunk_events: usize,
    /// Set by the sampler after its last publish.
    finished: AtomicBool,
    /// Counter value at which the loop stopped.
    end_tsc: AtomicU64,
    dropped: AtomicU64,
    reads: AtomicU64,
    locked: bool,
}

// SAFETY: a chunk's events are written only by the sampler while `full` is
// false and read only by the writer while `full` is true; the flag is
// published with Release and observed with Acquire.
unsafe impl Sync for Ring {}

impl Ring {
    /// Allocates `chunks × chunk_events` events, tries `mlock`, and touches
    /// every page so the loop never faults. Returns the ring; [`Ring::locked`]
    /// says whether `mlock` succeeded.
    ///
    /// # Panics
    /// If `chunks` or `chunk_events` is 0.
    pub fn new(chunks: usize, chunk_events: usize) -> Ring {
        assert!(chunks > 0 && chunk_events > 0);
        let events: Box<[UnsafeCell<Event>]> = (0..chunks * chunk_events).map(|_| UnsafeCell::new(Event::default())).collect();
        let bytes = std::mem::size_of_val(&*events);
        // SAFETY: the range is our live allocation; mlock only pins it.
        let locked = unsafe { libc::mlock(events.as_ptr().cast(), bytes) == 0 };
        let page = 4096 / std::mem::size_of::<Event>();
        for e in events.iter().step_by(page) {
            // SAFETY: no other thread has the ring yet.
            unsafe { std::ptr::write_volatile(e.get(), Event { start: 1, duration: 0 }) };
        }
        let chunks = (0..chunks).map(|_| Chunk { full: AtomicBool::new(false), len: AtomicUsize::new(0) }).collect();
        Ring {
            chunks,
            events,
            chunk_events,
            finished: AtomicBool::new(false),
            end_tsc: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            locked,
        }
    }

    /// Whether the buffers are locked in memory.
    pub fn locked(&self) -> bool {
        self.locked
    }

    /// Bytes of event buffers.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.events)
    }

    fn chunk_ptr(&self, i: usize) -> *mut Event {
        UnsafeCell::raw_get(self.events[i * self.chunk_events..].as_ptr())
    }

    /// Writer side: hands each full chunk, in order from `*next`, to `f`, then
    /// frees it. Returns the number of events handed over.
    pub fn drain(&self, next: &mut usize, mut f: impl FnMut(&[Event])) -> usize {
        let mut n = 0;
        loop {
            let c = &self.chunks[*next];
            if !c.full.load(Ordering::Acquire) {
                return n;
            }
            let len = c.len.load(Ordering::Relaxed);
            // SAFETY: `full` is set, so the sampler does not touch this chunk
            // until we clear it, and its first `len` events are initialized.
            let events = unsafe { std::slice::from_raw_parts(self.chunk_ptr(*next), len) };
            f(events);
            n += len;
            c.full.store(false, Ordering::Release);
            *next = (*next + 1) % self.chunks.len();
        }
    }

    /// Whether the sampler has stopped and published its last chunk.
    pub fn finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Counter value at which the loop stopped (valid once [`finished`](Self::finished)).
    pub fn end_tsc(&self) -> u64 {
        self.end_tsc.load(Ordering::Relaxed)
    }

    /// Events dropped because every chunk was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Counter reads the sampling loop made (valid once [`finished`](Self::finished)).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

/// Runs the sampling loop on the calling thread from `start` (a counter
/// value read just before) until the counter passes `end` or `stop` is seen
/// at an event. Every delta above `threshold` cycles becomes an [`Event`].
///
/// After an event the loop waits for its bookkeeping to complete
/// ([`crate::tsc::settle`]) and re-reads the counter, so that bookkeeping (a
/// 16-byte store, which misses the TLB once per 4 KiB page; once per chunk, a
/// release store and a flag check) is never mistaken for a detour; those few
/// hundred cycles per event count as undisturbed time. The first read in the
/// loop is likewise taken after entry, not at `start`.
#[inline(never)]
pub fn sample<C: Counter>(ring: &Ring, start: u64, end: u64, threshold: u64, stop: &AtomicBool) {
    let cap = ring.chunk_events;
    let chunks = ring.chunks.len();
    let mut cur = 0usize;
    let mut buf = ring.chunk_ptr(0);
    let mut n = 0usize; // events in `buf`; `cap` means no buffer held
    let mut dropped = 0u64;
    let mut reads = 0u64;
    let mut prev = C::read().max(start);
    let mut now;
    loop {
        now = C::read();
        reads += 1;
        let d = now.saturating_sub(prev);
        if d > threshold {
            if n == cap && !ring.chunks[cur].full.load(Ordering::Acquire) {
                buf = ring.chunk_ptr(cur);
                n = 0;
            }
            if n < cap {
                // SAFETY: `buf` is chunk `cur`, which we own while its flag is clear; n < cap.
                unsafe { buf.add(n).write(Event { start: prev, duration: d }) };
                n += 1;
                if n == cap {
                    ring.chunks[cur].len.store(cap, Ordering::Relaxed);
                    ring.chunks[cur].full.store(true, Ordering::Release);
                    cur = (cur + 1) % chunks;
                }
            } else {
                dropped += 1;
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            crate::tsc::settle();
            now = C::read();
            reads += 1;
        }
        if now >= end {
            break;
        }
        prev = now;
    }
    if n < cap && n > 0 {
        ring.chunks[cur].len.store(n, Ordering::Relaxed);
        ring.chunks[cur].full.store(true, Ordering::Release);
    }
    ring.end_tsc.store(now, Ordering::Relaxed);
    ring.dropped.store(dropped, Ordering::Relaxed);
    ring.reads.store(reads, Ordering::Relaxed);
    ring.finished.store(true, Ordering::Release);
}

/// [`sample`] with the counter chosen at run time.
pub fn sample_with(read: TimerRead, ring: &Ring, start: u64, end: u64, threshold: u64, stop: &AtomicBool) {
    match read {
        TimerRead::Rdtsc => sample::<Rdtsc>(ring, start, end, threshold, stop),
        TimerRead::LfenceRdtsc => sample::<LfenceRdtsc>(ring, start, end, threshold, stop),
        TimerRead::Rdtscp => sample::<Rdtscp>(ring, start, end, threshold, stop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake counter that advances 10 per read, plus a detour of 1000 on
    /// every 50th read; runs `HOOK` (if set) on every read.
    struct Fake;
    type Hook = Box<dyn FnMut(u64)>;
    thread_local! {
        static T: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
        static HOOK: std::cell::RefCell<Option<Hook>> = const { std::cell::RefCell::new(None) };
    }
    impl Counter for Fake {
        fn read() -> u64 {
            let (v, reads) = T.with(|t| {
                let (v, reads) = t.get();
                let v = v + 10 + if (reads + 1) % 50 == 0 { 1000 } else { 0 };
                t.set((v, reads + 1));
                (v, reads + 1)
            });
            HOOK.with(|h| h.borrow_mut().as_mut().map(|f| f(reads)));
            v
        }
    }

    #[test]
    fn records_detours_through_a_small_ring_and_drops_when_full() {
        T.with(|t| t.set((0, 0)));
        // 3 chunks of 4 events and a writer that never drains: 12 stored, rest dropped.
        let ring = Ring::new(3, 4);
        let stop = AtomicBool::new(false);
        sample::<Fake>(&ring, Fake::read(), 200_000, 100, &stop);
        assert!(ring.finished());
        let mut next = 0;
        let mut got = Vec::new();
        ring.drain(&mut next, |e| got.extend_from_slice(e));
        assert_eq!(got.len(), 12);
        assert!(got.iter().all(|e| e.duration == 1010), "{got:?}");
        assert!(got.windows(2).all(|w| w[1].start > w[0].start));
        assert!(ring.dropped() > 0);
        assert!(ring.reads() > 200_000 / 30);
        assert!(ring.end_tsc() >= 200_000);
    }

    #[test]
    fn drained_chunks_are_reused() {
        T.with(|t| t.set((0, 0)));
        // 2 chunks of 4 events; the "writer" drains every 150 reads (3 detours),
        // so the loop must keep re-taking freed chunks and drop nothing.
        let ring = std::rc::Rc::new(Ring::new(2, 4));
        let total = std::rc::Rc::new(std::cell::Cell::new(0usize));
        let next = std::rc::Rc::new(std::cell::Cell::new(0usize));
        let (r, t, nx) = (ring.clone(), total.clone(), next.clone());
        HOOK.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |reads| {
                if reads % 150 == 0 {
                    let mut n = nx.get();
                    t.set(t.get() + r.drain(&mut n, |_| {}));
                    nx.set(n);
                }
            }))
        });
        sample::<Fake>(&ring, Fake::read(), 5_000_000, 100, &AtomicBool::new(false));
        HOOK.with(|h| h.borrow_mut().take());
        let rest = ring.drain(&mut next.get(), |_| {});
        // 5e6 / (50 × 10 + 1000) = 3333 detours, through 8 slots.
        assert_eq!(ring.dropped(), 0);
        assert!((3333..=3334).contains(&(total.get() + rest)), "{} + {rest}", total.get());
    }
}

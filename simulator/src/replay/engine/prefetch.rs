//! Fetching the state of the rank the queue hands out next while the
//! current event runs. Events interleave ranks in simulated-time order,
//! which at scale is close to a random walk over every rank's state: the
//! first touch of a rank is a cache miss (often a TLB miss too), and
//! starting it one event early hides it behind the current event's work.
//! A rank's stream keeps its state in a box of its own; its address sits
//! in a dense array, so that box is fetched at the same time without
//! waiting for the rank's struct.

use super::Kind;
use super::{Engine, Rank};

impl<E: std::error::Error + Send + Sync + 'static> Engine<'_, '_, E> {
    /// Prefetches the engine state of the rank of the next queued event,
    /// if that event is a rank's. A hint only: nothing is read or changed.
    pub(super) fn prefetch_next(&mut self) {
        if let Some(Kind::Rank(n) | Kind::Nbc(n)) = self.queue.peek_kind() {
            if let Some(rk) = self.ranks.get(n as usize) {
                prefetch_lines((rk as *const Rank<'_, E>).cast(), std::mem::size_of::<Rank<'_, E>>());
            }
            if let Some(&(at, len)) = self.stream_at.get(n as usize) {
                // A finished rank's stream was replaced: the address is
                // stale then, which a prefetch tolerates (and no event of
                // a finished rank is queued).
                prefetch_lines(std::ptr::without_provenance(at), len as usize);
            }
        }
    }
}

/// Bytes of a stream's state fetched ahead, at most.
const STREAM_BYTES: usize = 512;

/// Where `stream`'s state is and how many of its bytes to fetch ahead.
pub(super) fn extent<T: ?Sized>(stream: &T) -> (usize, u32) {
    ((stream as *const T).cast::<u8>() as usize, std::mem::size_of_val(stream).min(STREAM_BYTES) as u32)
}

/// Asks the CPU to bring the cache lines of `len` bytes at `p` into its caches.
#[inline(always)]
fn prefetch_lines(p: *const i8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..len).step_by(64) {
        // SAFETY: a prefetch is a hint that never faults and reads nothing
        // into the program; the bytes are of a live rank anyway.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.wrapping_add(off)) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}

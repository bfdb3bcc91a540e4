//! The interposer's heap, safe inside a signal handler.
//!
//! The fatal-signal flush ([`crate::signals`]) encodes the records still
//! pending, and encoding allocates. The signal can arrive while the
//! interrupted code holds the C allocator's lock, or after it corrupted
//! the heap: a `malloc` from the handler would then deadlock (a run that
//! was told to stop would hang) or crash again. So while a thread runs
//! the handler ([`enter_handler`]), this allocator serves that thread's
//! allocations from a static arena and never calls the C heap, not even
//! to free: blocks the C heap owns are left as they are. On every other
//! thread, and outside the handler, it is the system allocator.
//!
//! The arena is a bump allocator: nothing in it is freed (the process is
//! ending). If a previous handler keeps the process alive, blocks made in
//! the arena stay in use; growing one moves it back to the C heap.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Size of the arena, bytes: far more than encoding a full ring of
/// pending records takes.
pub const ARENA_BYTES: usize = 8 << 20;

#[repr(C, align(4096))]
struct Arena(UnsafeCell<[u8; ARENA_BYTES]>);

// SAFETY: bytes are handed out once each, by an atomic bump of `USED`.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena(UnsafeCell::new([0; ARENA_BYTES]));
/// Bytes of the arena handed out.
static USED: AtomicUsize = AtomicUsize::new(0);
/// `pthread_self()` of the thread running the signal flush; 0: none.
static HANDLER: AtomicU64 = AtomicU64::new(0);

/// From now until [`leave_handler`], the calling thread allocates from
/// the arena only. Async-signal-safe.
pub fn enter_handler() {
    // SAFETY: pthread_self has no preconditions and is async-signal-safe.
    HANDLER.store(unsafe { libc::pthread_self() } as u64, Ordering::SeqCst);
}

/// Ends [`enter_handler`]. Async-signal-safe.
pub fn leave_handler() {
    HANDLER.store(0, Ordering::SeqCst);
}

/// Whether the calling thread is in the signal flush.
#[inline]
fn in_handler() -> bool {
    let h = HANDLER.load(Ordering::Relaxed);
    // SAFETY: as in enter_handler.
    h != 0 && h == unsafe { libc::pthread_self() } as u64
}

fn base() -> usize {
    ARENA.0.get() as usize
}

/// Whether `p` points into the arena.
fn in_arena(p: *mut u8) -> bool {
    (p as usize).wrapping_sub(base()) < ARENA_BYTES
}

/// A zeroed block of `layout` from the arena; null when it is used up.
fn arena_alloc(layout: Layout) -> *mut u8 {
    let mut used = USED.load(Ordering::Relaxed);
    loop {
        let start = (base() + used).next_multiple_of(layout.align()) - base();
        let end = match start.checked_add(layout.size()) {
            Some(e) if e <= ARENA_BYTES => e,
            _ => return std::ptr::null_mut(),
        };
        match USED.compare_exchange_weak(used, end, Ordering::Relaxed, Ordering::Relaxed) {
            // The arena starts zeroed and no byte is handed out twice.
            Ok(_) => return (base() + start) as *mut u8,
            Err(now) => used = now,
        }
    }
}

/// The interposer's global allocator (see the module doc).
pub struct SignalSafe;

// SAFETY: every block comes from System or from a range of the arena that
// no other block shares; arena blocks are never freed, System blocks are
// freed by System only, and only outside the handler.
unsafe impl GlobalAlloc for SignalSafe {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if in_handler() {
            arena_alloc(layout)
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if in_handler() {
            arena_alloc(layout)
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !in_arena(ptr) && !in_handler() {
            // SAFETY: a System block (not in the arena), freed outside the handler.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let handler = in_handler();
        if !handler && !in_arena(ptr) {
            // SAFETY: the caller's contract, passed on (a System block).
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: the caller guarantees a valid size for `layout.align()`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let new = if handler { arena_alloc(new_layout) } else { unsafe { System.alloc(new_layout) } };
        if !new.is_null() {
            // SAFETY: both blocks hold at least the smaller size and do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            // The old block: an arena block is never freed, and in the
            // handler a System block is left alone.
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handler_thread_allocates_from_the_arena_only_and_others_do_not() {
        let before: Vec<u64> = (0..1000).collect();
        let outside = before.as_ptr() as *mut u8;
        assert!(!in_arena(outside));
        enter_handler();
        // Made, grown and copied in the handler: all in the arena.
        let mut made: Vec<u64> = Vec::new();
        for i in 0..10_000 {
            made.push(i);
        }
        let boxed = Box::new([7u8; 100]);
        // A System block grown in the handler moves into the arena.
        let mut grown = before.clone();
        let cloned_at = grown.as_ptr() as *mut u8;
        grown.extend(0..10_000);
        // Another thread is not in the handler.
        let elsewhere = std::thread::spawn(|| {
            let v: Vec<u8> = vec![1; 64];
            in_arena(v.as_ptr() as *mut u8)
        })
        .join()
        .unwrap();
        leave_handler();
        assert!(in_arena(made.as_ptr() as *mut u8) && in_arena(&*boxed as *const [u8; 100] as *mut u8));
        assert!(in_arena(cloned_at) && in_arena(grown.as_ptr() as *mut u8));
        assert!(!elsewhere, "another thread allocated from the arena");
        assert_eq!(made.iter().sum::<u64>(), (0..10_000u64).sum::<u64>());
        assert_eq!(&grown[..1000], &before[..]);
        // After the handler: new blocks from System, and an arena block
        // that grows moves back there.
        let after: Vec<u8> = vec![2; 64];
        assert!(!in_arena(after.as_ptr() as *mut u8));
        made.extend(0..100_000);
        assert!(!in_arena(made.as_ptr() as *mut u8));
        assert_eq!(made[9_999], 9_999);
        drop((made, boxed, grown));
    }

    #[test]
    fn a_used_up_arena_gives_null_not_a_shared_block() {
        let huge = Layout::from_size_align(ARENA_BYTES + 1, 8).unwrap();
        assert!(arena_alloc(huge).is_null());
    }
}

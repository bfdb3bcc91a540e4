//! Compute isolation for oversubscribed online runs: at most
//! one rank of a node runs a compute block at a time, so that no block's
//! thread CPU time is measured while another rank's block runs on the
//! other cores.
//!
//! Why: thread CPU time is not an invariant of the work when ranks run
//! side by side. A memory-bound block shares the last-level cache and the
//! memory bandwidth with whatever runs on the other cores: a stencil's
//! sweep takes more CPU time when its ranks share two cores than when they
//! share one, with no MPI involved (the user guide has figures).
//! So a run's prediction depended on how many cores it was given. With
//! one rank computing at a time, every block is measured as on one core
//! of an otherwise idle node: what `speed_ratio` is relative to, and what
//! `taskset -c 0` gave already. SMPI gets the same property by running
//! all ranks in one process, one at a time.
//!
//! The token is a word in node-shared memory (`MPI_Win_allocate_shared`,
//! set up by `csrc/lifecycle.c`), a futex mutex (Drepper, "Futexes Are
//! Tricky", mutex 2): taken when an MPI call returns, after its record is
//! stored and before the next block's start stamp; given back when the
//! next call begins, after its end stamp. Waiting for it is neither
//! compute nor MPI time. A rank waits at most [`GIVE_UP`] for it (a
//! program that synchronizes ranks outside MPI, through shared memory,
//! would otherwise deadlock); then it stops isolating for good and says so
//! once.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The node's token, null when not isolating.
static TOKEN: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::null_mut());
/// Set once a wait timed out: this rank no longer isolates.
static GAVE_UP: AtomicBool = AtomicBool::new(false);

/// Longest wait for the token before giving isolation up.
pub const GIVE_UP: Duration = Duration::from_secs(10);

/// Isolates this rank's compute blocks with the token at `word` (a
/// zeroed `u32` in memory shared by the node's ranks, alive until
/// [`stop`]).
///
/// # Safety
/// `word` is null or points to a 4-byte aligned `u32` that stays mapped
/// until [`stop`] and that only this module's functions touch.
pub unsafe fn start(word: *mut u32) {
    TOKEN.store(word.cast(), Ordering::Release);
}

/// Stops isolating (before the shared word goes away).
pub fn stop() {
    TOKEN.store(std::ptr::null_mut(), Ordering::Release);
}

fn token() -> Option<&'static AtomicU32> {
    let p = TOKEN.load(Ordering::Acquire);
    // SAFETY: per `start`'s contract, a non-null pointer is a live, aligned
    // u32 only accessed atomically here.
    (!p.is_null() && !GAVE_UP.load(Ordering::Relaxed)).then(|| unsafe { &*p })
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
    let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a shared (not FUTEX_PRIVATE) futex on a live u32; the kernel
    // reads `ts` only when non-null.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), op, val, ts) };
}

/// Takes the node's token (compute may start); true when taken, false when
/// not isolating or after giving up.
pub fn acquire() -> bool {
    let Some(w) = token() else { return false };
    if w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
        return true;
    }
    let deadline = Instant::now() + GIVE_UP;
    loop {
        // Mark it contended, then sleep while it stays so.
        if w.swap(2, Ordering::Acquire) == 0 {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            GAVE_UP.store(true, Ordering::Relaxed);
            return false;
        }
        let ts = libc::timespec { tv_sec: left.as_secs() as libc::time_t, tv_nsec: left.subsec_nanos() as libc::c_long };
        futex(w, libc::FUTEX_WAIT, 2, Some(&ts));
    }
}

/// Gives the token back (compute ended): wakes one waiter if any.
pub fn release() {
    let p = TOKEN.load(Ordering::Acquire);
    if p.is_null() {
        return;
    }
    // SAFETY: as in `token`.
    let w = unsafe { &*p };
    if w.swap(0, Ordering::Release) == 2 {
        futex(w, libc::FUTEX_WAKE, 1, None);
    }
}

/// True when a wait for the token timed out and the rank stopped isolating.
pub fn gave_up() -> bool {
    GAVE_UP.load(Ordering::Relaxed)
}

/// Whether to isolate, from `INTERPOSER_ISOLATE` (`auto`, the default:
/// when the node's `ranks` outnumber the `cpus` they may run on; `1`:
/// always; `0`: never). Returns the decision and a warning for a bad value
/// (which counts as `auto`).
pub fn wanted(setting: Option<&str>, ranks: u32, cpus: u32) -> (bool, Option<String>) {
    let auto = ranks > cpus.max(1);
    match setting.map(str::trim) {
        None | Some("") | Some("auto") => (auto, None),
        Some("1") => (true, None),
        Some("0") => (false, None),
        Some(other) => (auto, Some(format!("INTERPOSER_ISOLATE={other:?} is not one of auto|1|0; using auto"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolates_oversubscribed_nodes_by_default() {
        assert_eq!(wanted(None, 16, 2), (true, None));
        assert_eq!(wanted(Some("auto"), 2, 2), (false, None));
        assert_eq!(wanted(Some("1"), 2, 2), (true, None));
        assert_eq!(wanted(Some("0"), 16, 1), (false, None));
        let (on, w) = wanted(Some("yes"), 16, 1);
        assert!(on && w.unwrap().contains("INTERPOSER_ISOLATE"));
    }

    #[test]
    fn token_is_taken_and_given_back() {
        let word = Box::leak(Box::new(0u32));
        // SAFETY: a leaked, aligned u32 that only this module touches.
        unsafe { start(word) };
        assert!(acquire());
        release();
        assert!(acquire());
        release();
        stop();
        assert!(!acquire());
    }
}

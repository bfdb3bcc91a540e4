//! Crash safety: on SIGTERM, SIGINT, SIGSEGV, SIGABRT and SIGBUS, write the
//! buffered records as a whole chunk, then hand the signal to the handler
//! that was installed before ours (or the default action).
//!
//! The handler encodes the records still pending and writes them with
//! `write(2)`, then calls `sigaction(2)`/`raise(3)`. Encoding allocates,
//! and the interrupted code may hold the C allocator's lock: while the
//! flush runs, the thread allocates from a static arena instead, never
//! from the C heap ([`crate::alloc`]). It never touches a buffer that the
//! interrupted code was filling: the recorder holds its own busy flag while
//! it appends a record, and the flush function skips a recorder whose flag
//! is taken.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Once;

/// Signals whose arrival flushes the trace.
pub const SIGNALS: [libc::c_int; 5] = [libc::SIGTERM, libc::SIGINT, libc::SIGSEGV, libc::SIGABRT, libc::SIGBUS];

/// Taken by the first handler that runs, so one flush happens.
static FIRED: AtomicBool = AtomicBool::new(false);

type Flush = fn(*mut ());
static TARGET: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
static FLUSH: AtomicPtr<()> = AtomicPtr::new(std::ptr::null_mut());
static mut PREVIOUS: [Option<libc::sigaction>; 5] = [None; 5];
static INSTALL: Once = Once::new();

/// Makes `flush(target)` the action taken on a fatal signal. The caller
/// keeps `target` alive until [`disarm`].
pub fn arm(target: *mut (), flush: Flush) {
    FLUSH.store(flush as *mut (), Ordering::SeqCst);
    TARGET.store(target, Ordering::SeqCst);
}

/// Stops flushing `target` on a signal (no effect if another is armed),
/// then waits out a handler that may have taken it before, so `target`
/// can be moved or dropped on return.
pub fn disarm(target: *mut ()) {
    let _ = TARGET.compare_exchange(target, std::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst);
    while FIRED.load(Ordering::SeqCst) {
        std::hint::spin_loop();
    }
}

/// Installs the handlers once per process, keeping the previous ones.
pub fn install() {
    INSTALL.call_once(|| {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: plain sigaction calls with zeroed, then filled structs;
            // PREVIOUS is written only here, before any handler can run.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = handler as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut act.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &act, &mut old) == 0 {
                    PREVIOUS[i] = Some(old);
                }
            }
        }
    });
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if !FIRED.swap(true, Ordering::SeqCst) {
        let target = TARGET.load(Ordering::SeqCst);
        let flush = FLUSH.load(Ordering::SeqCst);
        if !target.is_null() && !flush.is_null() {
            // SAFETY: FLUSH only ever holds a `Flush` stored by `arm`.
            let f: Flush = unsafe { std::mem::transmute::<*mut (), Flush>(flush) };
            crate::alloc::enter_handler();
            f(target);
            crate::alloc::leave_handler();
        }
        FIRED.store(false, Ordering::SeqCst);
    }
    // Chain: put the previous action back and deliver the signal again; it
    // is blocked while this handler runs, so it arrives as we return (a
    // faulting instruction simply faults again under the old action).
    if let Some(i) = SIGNALS.iter().position(|&s| s == sig) {
        // SAFETY: reading PREVIOUS, written once before the handler was set.
        unsafe {
            let prev = (*std::ptr::addr_of!(PREVIOUS))[i];
            match prev {
                Some(old) => libc::sigaction(sig, &old, std::ptr::null_mut()),
                None => libc::signal(sig, libc::SIG_DFL) as libc::c_int,
            };
            // si_code <= 0: sent by kill/raise, not by a faulting instruction.
            let sent = info.is_null() || (*info).si_code <= 0;
            if sent || (sig != libc::SIGSEGV && sig != libc::SIGBUS) {
                libc::raise(sig);
            }
        }
    }
}

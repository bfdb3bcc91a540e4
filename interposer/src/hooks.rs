//! The `extern "C"` hooks the generated C wrappers (`build/wrappers.rs` writes them from `csrc/mpi.tbl`) call. Each is a
//! thin shell over [`crate::recorder`] that never lets a panic cross the
//! FFI boundary: a panic disables recording and the application goes on.

use std::ffi::{c_char, c_int, c_void, CStr};

use simulator::trace::Op;

use crate::ffi::{guard, record_params, warn, Params};
use crate::{lifecycle, recorder};

/// Starts a call the fast path (`csrc/fast.h`) does not take; returns 1
/// when the wrapper must report it with an `ipr_end*`.
#[no_mangle]
pub extern "C" fn ipr_begin_slow(op: c_int, caller: *const c_void, tick: u64) -> c_int {
    guard(0, || recorder::begin(op as u8, caller as u64, tick) as c_int)
}

/// Ends a call the fast path does not end (begun by either path); `rc`
/// is the PMPI result.
///
/// # Safety
/// `p` points to a valid `struct ipr_params`.
#[no_mangle]
pub unsafe extern "C" fn ipr_end_slow(op: c_int, rc: c_int, p: *const Params) {
    // SAFETY: the C wrapper passes a pointer to a live stack struct. It is
    // read in place: a by-value copy loads it 16 bytes at a time right after
    // the C side's narrower stores, a store-forwarding stall per call.
    let Some(p) = (unsafe { p.as_ref() }) else { return };
    guard((), || {
        let Some(code) = Op::from_code(op as u8) else { return };
        recorder::end(op as u8, rc != 0, |list| record_params(code, p, list));
    })
}

/// The calling thread's fast-path ring is full: encode it.
#[no_mangle]
pub extern "C" fn ipr_drain() {
    guard((), recorder::drain_full)
}

/// The calling thread is entering a call that usually waits: encode a few
/// of its kept calls ([`crate::fast::DRAIN_SLICE`]).
#[no_mangle]
pub extern "C" fn ipr_drain_some() {
    guard((), recorder::drain_some)
}

/// Room for `n` request handles of the current `MPI_Waitall`; null when not recording.
#[no_mangle]
pub extern "C" fn ipr_scratch(n: u64) -> *mut u64 {
    guard(std::ptr::null_mut(), || recorder::scratch(n as usize))
}

/// Ends a call whose `n` list values (request handles, communicator
/// members) were written to [`ipr_scratch`].
///
/// # Safety
/// `p` points to a valid `struct ipr_params`.
#[no_mangle]
pub unsafe extern "C" fn ipr_end_list_slow(op: c_int, rc: c_int, n: u64, p: *const Params) {
    // SAFETY: the C wrapper passes a pointer to a live stack struct. It is
    // read in place: a by-value copy loads it 16 bytes at a time right after
    // the C side's narrower stores, a store-forwarding stall per call.
    let Some(p) = (unsafe { p.as_ref() }) else { return };
    guard((), || {
        let Some(code) = Op::from_code(op as u8) else { return };
        recorder::end(op as u8, rc != 0, |list| {
            list.truncate(n as usize);
            record_params(code, p, list)
        });
    })
}

/// When the library is loaded (a C constructor): the first timestamp
/// pair of the TSC's frequency measurement ([`crate::clock::mark`]).
#[no_mangle]
pub extern "C" fn ipr_clock_mark() {
    crate::clock::mark()
}

/// After a successful `PMPI_Init`/`PMPI_Init_thread`.
///
/// # Safety
/// `library` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ipr_init(rank: c_int, size: c_int, library: *const c_char) {
    // SAFETY: the C wrapper passes a NUL-terminated stack buffer.
    let lib = if library.is_null() { String::new() } else { unsafe { CStr::from_ptr(library) }.to_string_lossy().into_owned() };
    guard((), || lifecycle::init(rank.max(0) as u32, size.max(0) as u32, &lib))
}

/// Before `PMPI_Finalize`, after `ipr_begin(FINALIZE)` returned 1.
#[no_mangle]
pub extern "C" fn ipr_finalize() {
    guard((), lifecycle::finalize)
}

/// Starts (`on` = 1) or ends the recorder's overhead measurement; returns
/// 1 when it started. See [`recorder::calibration`].
#[no_mangle]
pub extern "C" fn ipr_calibration(on: c_int) -> c_int {
    guard(0, || recorder::calibration(on != 0) as c_int)
}

/// The interposer's start-up work after `MPI_Init` is done: the
/// application's first compute block starts now. See [`recorder::restart_block`].
#[no_mangle]
pub extern "C" fn ipr_started() {
    guard((), recorder::restart_block)
}

/// Online mode: whether this rank isolates its compute blocks, given the
/// number of ranks on its node and of CPUs they may run on (see
/// [`crate::isolate::wanted`]); every rank of the node gets the same answer.
#[no_mangle]
pub extern "C" fn ipr_isolate_wanted(rank: c_int, ranks_on_node: c_int, cpus: c_int) -> c_int {
    guard(0, || {
        let setting = std::env::var("INTERPOSER_ISOLATE").ok();
        let (on, warning) = crate::isolate::wanted(setting.as_deref(), ranks_on_node.max(0) as u32, cpus.max(0) as u32);
        if let (0, Some(w)) = (rank, warning) {
            warn(None, &w);
        }
        on as c_int
    })
}

/// Starts (`word` non-null: the node's shared token, zeroed) or stops
/// (null) isolating compute blocks ([`crate::isolate`]).
///
/// # Safety
/// `word` is null or a 4-byte aligned word shared by the node's ranks
/// that stays mapped until this is called again with null.
#[no_mangle]
pub unsafe extern "C" fn ipr_isolate(word: *mut u32) {
    guard((), || {
        if word.is_null() {
            crate::isolate::stop();
        } else {
            // SAFETY: per the contract.
            unsafe { crate::isolate::start(word) };
        }
    })
}

/// Number of calls the C side makes for the overhead measurement.
#[no_mangle]
pub extern "C" fn ipr_calibration_calls() -> c_int {
    recorder::CALIBRATION_CALLS as c_int
}

/// Charges `seconds` of compute the application skipped (the sampling
/// macros of `include/interposer_sample.h`) to the running compute block:
/// the trace records it and online mode's clock advances by it.
#[no_mangle]
pub extern "C" fn interposer_charge_compute(seconds: f64) {
    if seconds.is_finite() && seconds > 0.0 {
        guard((), || recorder::charge_compute((seconds * 1e9).round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use simulator::trace::Op;
    use std::collections::BTreeSet;

    #[test]
    fn every_wrapped_function_is_an_op_of_the_trace_format() {
        let table = include_str!("../csrc/mpi.tbl");
        let names: Vec<&str> = table.lines().filter_map(|l| l.strip_prefix("int ")).map(|p| p.split('(').next().unwrap().trim()).collect();
        assert!(names.len() > 100, "{}", names.len());
        for name in names {
            assert!(Op::ALL.iter().any(|o| o.mpi_name() == name), "{name} has no op in simulator/src/trace/ops.tbl");
        }
    }

    extern "C" {
        /// The communicator table's ids (csrc/comms.c).
        fn ipr_comm_id(handle: u64) -> u32;
    }

    #[test]
    fn communicator_ids_are_one_per_handle_across_threads() {
        let handles: Vec<u64> = (1..=300u64).map(|k| 0x7f00_1234_0000 + k * 0x40).collect();
        // Four threads name the same handles, each from another start.
        let ids: Vec<Vec<u32>> = std::thread::scope(|s| {
            let spawned: Vec<_> = (0..4)
                .map(|t| {
                    let handles = &handles;
                    s.spawn(move || {
                        let n = handles.len();
                        let mut ids = vec![0; n];
                        for i in 0..n {
                            let k = (i + t * 77) % n;
                            // SAFETY: a plain C function.
                            ids[k] = unsafe { ipr_comm_id(handles[k]) };
                        }
                        ids
                    })
                })
                .collect();
            spawned.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(ids.iter().all(|v| *v == ids[0]), "threads saw different ids");
        let distinct: BTreeSet<u32> = ids[0].iter().copied().collect();
        assert_eq!(distinct.len(), handles.len());
        assert!(!distinct.contains(&0) && !distinct.contains(&u32::MAX), "0 is WORLD's, MAX unknown");
        // SAFETY: as above.
        assert_eq!(unsafe { ipr_comm_id(handles[7]) }, ids[0][7], "a handle keeps its id");
        // SAFETY: as above.
        assert_eq!(unsafe { ipr_comm_id(0) }, u32::MAX, "0 is no handle");
    }
}

//! Per-thread recording state, started and finished by
//! [`crate::lifecycle`] (the process-wide state is [`crate::ffi`]'s).
//!
//! Each thread records into its own buffer: the thread that called
//! `MPI_Init` as stream 0 of the rank file, any other thread that makes an
//! MPI call (`MPI_THREAD_MULTIPLE`) as a further stream, appended to the
//! same file in whole chunks. Other threads' buffers are flushed when the
//! thread exits; only stream 0 is flushed on a fatal signal.

use std::cell::RefCell;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::OnceLock;

use simulator::trace::{rank_file_name, CallRecord, Op, Params, RankHeader, RankWriter, TimingSource, TraceMeta, META_FILE};

use crate::clock::{self, ticks_to_ns, WallClock};
use crate::config::{Config, Mode};
use crate::counters;
use crate::fast::Ring;
use crate::ffi::{warn, DISABLED, FINISHED, STATE, TRACING};
use crate::modules;
use crate::signals;
use crate::timing::{self, Stamp, Timer};

mod regions;
mod state;

static IO_WARNED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static REC: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// The recorder's own share of every compute block, subtracted from it:
/// wall ticks, CPU ns (for blocks whose CPU clock was read) and counts.
#[derive(Debug, Clone, Copy, Default)]
struct Overhead {
    wall: u64,
    cpu_ns: u64,
    hw: (u64, u64),
}

/// What the overhead measurement collects ([`calibration`]).
struct Calibration {
    /// Raw block wall times (ticks) and counter deltas of empty blocks.
    wall: Vec<u64>,
    hw: Vec<(u64, u64)>,
    /// The records are encoded as usual, into nowhere (in regions mode,
    /// summed into a table of their own), so that their cost is measured.
    sink: RankWriter<std::io::Sink>,
    regions: regions::RegionSums,
}

/// Recording state of the thread that called `MPI_Init`.
struct Recorder {
    /// Held while a record is appended, or by a signal handler flushing.
    busy: AtomicBool,
    rank: u32,
    writer: RankWriter<File>,
    /// Trace epoch, wall ticks.
    epoch_wall: u64,
    overhead: Overhead,
    calibration: Option<Calibration>,
    timer: Timer,
    last_end: Stamp,
    /// Inside a recorded call: nested MPI calls (MPICH's Fortran binding
    /// calling the C one, an MPI library calling MPI_ internally) pass through.
    in_call: bool,
    call_start: Stamp,
    cpu_read: bool,
    call_op: u8,
    caller: u64,
    /// Return address of the last recorded call (0: `MPI_Init`): with
    /// `caller`, the region of the running block.
    prev_caller: u64,
    requests: Vec<u64>,
    /// Compute the application skipped but charged to the running block
    /// ([`charge_compute`]), ns.
    charged_ns: u64,
    /// The thread that called `MPI_Init` (the only one that isolates its
    /// compute blocks, see [`crate::isolate`]).
    main: bool,
    /// Holds the node's compute token ([`crate::isolate`]).
    isolated: bool,
    /// The calls the C wrappers kept on the fast path ([`crate::fast`]).
    ring: Ring,
    /// Regions mode: the per-region sums that take the place of records.
    regions: Option<Box<regions::RegionSums>>,
    /// What this thread's compute blocks are charged to ([`BlockSink`]).
    sink: Option<BlockSink>,
}

/// What other threads need to open their streams: set at `MPI_Init`.
struct ThreadSetup {
    path: std::path::PathBuf,
    rank: u32,
    epoch_wall: u64,
}

static THREADS: OnceLock<ThreadSetup> = OnceLock::new();
static NEXT_STREAM: AtomicU16 = AtomicU16::new(1);
/// The measured recorder overhead (wall ticks, CPU ns, cycles,
/// instructions), shared with later threads.
static OVERHEAD: [AtomicU64; 4] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// A recorder for a thread other than the `MPI_Init` one, on its first MPI
/// call; `None` (the thread passes through) when the file cannot be opened
/// or 65535 streams exist.
fn thread_recorder() -> Option<Recorder> {
    let setup = THREADS.get()?;
    let stream = NEXT_STREAM.fetch_add(1, Ordering::Relaxed);
    if stream == 0 {
        return None;
    }
    let file = File::options().append(true).open(&setup.path).ok()?;
    let o = |i: usize| OVERHEAD[i].load(Ordering::Relaxed);
    let overhead = Overhead { wall: o(0), cpu_ns: o(1), hw: (o(2), o(3)) };
    let writer = match file.try_clone() {
        Ok(f) => RankWriter::stream(file, stream).rewind_with(f),
        Err(_) => RankWriter::stream(file, stream),
    };
    Some(Recorder::new(setup.rank, writer, setup.epoch_wall, overhead))
}

extern "C" fn forked_child() {
    STATE.store(DISABLED, Ordering::SeqCst);
    Ring::detach();
}

/// Opens the rank's file, records the `MPI_Init` record at the trace
/// epoch and starts recording on the calling thread (the `MPI_Init`
/// thread); `sink` is the model compute blocks are charged to (online
/// mode's clock), `None` when tracing only.
///
/// # Errors
/// A one-line message naming `INTERPOSER_OUT` or the file that cannot be written.
pub fn start(cfg: &Config, rank: u32, size: u32, library: &str, sink: Option<BlockSink>) -> Result<(), String> {
    let rec = open(cfg, rank, size, library, sink.is_some())?;
    // SAFETY: registering a plain extern "C" function without arguments.
    unsafe { libc::pthread_atfork(None, None, Some(forked_child)) };
    if let Some(f) = sink {
        let _ = SINK.set(f);
    }
    REC.with(|r| {
        let mut slot = r.borrow_mut();
        *slot = Some(rec);
        if let Some(rec) = slot.as_mut() {
            rec.sink = sink;
            rec.start_fast_path(sink.is_none());
        }
        // The recorder stays in place in this thread's slot until
        // finalize or thread exit, which disarm first.
        let target = slot.as_mut().map_or(std::ptr::null_mut(), |rec| rec as *mut Recorder as *mut ());
        signals::arm(target, flush_on_signal);
    });
    signals::install();
    Ok(())
}

/// What a compute block is charged to before its call is recorded:
/// `(cpu_ns, call_start wall ticks, (previous caller, caller))`, once per call.
pub type BlockSink = fn(u64, u64, (u64, u64));

/// The block sink [`start`] was given, for the recorders of other threads.
static SINK: OnceLock<BlockSink> = OnceLock::new();

/// This machine's host name (`uname` nodename), `unknown` when empty.
fn hostname() -> String {
    let name = gethostname::gethostname().to_string_lossy().into_owned();
    if name.is_empty() {
        "unknown".into()
    } else {
        name
    }
}

fn open(cfg: &Config, rank: u32, size: u32, library: &str, online: bool) -> Result<Recorder, String> {
    let (timing_source, counters_note, warning) = counters::resolve(cfg.counters);
    if let (0, Some(w)) = (rank, &warning) {
        warn(None, w);
    }
    let (wall_clock, no_tsc) = clock::calibrate(true);
    let tsc_hz = match wall_clock {
        WallClock::Tsc { hz } => Some(hz),
        WallClock::Monotonic => None,
    };
    timing::configure(timing_source != TimingSource::WallOnly, timing_source == TimingSource::PerfCounters);
    let counters_note = match no_tsc {
        Some(why) => format!("{counters_note}; wall time from CLOCK_MONOTONIC ({why})"),
        None => counters_note,
    };
    let dir = &cfg.out;
    std::fs::create_dir_all(dir).map_err(|e| format!("INTERPOSER_OUT={}: cannot create: {e}", dir.display()))?;
    let regions = cfg.mode == Mode::Regions;
    if regions {
        regions::enable(dir.clone(), size, hostname(), timing_source);
    }
    // Regions mode writes no trace: its records, which never reach the
    // writer beyond the header and the MPI_Init record, go nowhere.
    let path = if regions { Path::new("/dev/null").to_path_buf() } else { dir.join(rank_file_name(rank)) };
    // Created empty, then written in append mode: other threads' streams
    // append whole chunks to the same file with single writes.
    let file = File::create(&path)
        .and_then(|_| File::options().append(true).open(&path))
        .map_err(|e| format!("INTERPOSER_OUT={}: cannot write {}: {e}", dir.display(), path.display()))?;
    let epoch_unix_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let header = RankHeader { rank, ranks: size, host: hostname(), pid: std::process::id(), timing_source, tsc_hz, epoch_unix_s };
    // A failed write (disk full) cuts the file back to its last whole chunk
    // and marks where and why writing stopped. Another thread's chunk
    // appended during that failure may be cut with it.
    let rewind = file.try_clone().ok();
    let mut writer = RankWriter::create(file, &header).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(f) = rewind {
        writer = writer.rewind_with(f);
    }
    writer.set_counters(&counters_note);
    if rank == 0 && !regions {
        let meta = TraceMeta {
            format_version: 1,
            ranks: size,
            mpi_library: library.trim().to_string(),
            timing_source,
            tsc_hz,
            command: std::env::args().collect(),
            mode: if online { "online".into() } else { "trace".into() },
        };
        write_meta(dir, &meta)?;
    }
    let epoch = clock::now();
    let init = CallRecord::bare(Op::Init, Params::None);
    writer.push(&init).map_err(|e| format!("{}: {e}", path.display()))?;
    THREADS.get_or_init(|| ThreadSetup { path: path.clone(), rank, epoch_wall: epoch });
    let mut rec = Recorder::new(rank, writer, epoch, Overhead::default());
    rec.main = true;
    Ok(rec)
}

fn write_meta(dir: &Path, meta: &TraceMeta) -> Result<(), String> {
    let path = dir.join(META_FILE);
    let tmp = dir.join(format!("{META_FILE}.tmp"));
    let json = serde_json::to_vec_pretty(meta).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, json).and_then(|_| std::fs::rename(&tmp, &path)).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Number of empty calls the C side makes through its own wrappers to
/// measure the recorder's overhead (see [`calibration`]).
pub const CALIBRATION_CALLS: usize = 301;

/// Starts (`on`) or ends the overhead measurement. While it runs, the C
/// side calls a cheap wrapped function ([`CALIBRATION_CALLS`] times) with
/// no application work between calls; their records are encoded as usual
/// but not stored, and their raw blocks are collected instead. At the end,
/// the median raw block wall time (and counter deltas) becomes the
/// overhead subtracted from every block; blocks whose CPU clock is read
/// also lose the CPU clock's own cost. Returns true when the measurement
/// started.
pub fn calibration(on: bool) -> bool {
    let cpu_read_ns = if on { 0 } else { timing::cpu_read_cost_ns() };
    REC.with(|r| {
        let mut slot = r.borrow_mut();
        let Some(rec) = slot.as_mut() else { return false };
        // The calls before belong to the application, the calls since the
        // start to the measurement.
        rec.drain();
        if on {
            let sink = RankWriter::stream(std::io::sink(), 0);
            let (wall, regions) = (Vec::with_capacity(CALIBRATION_CALLS), regions::RegionSums::new());
            rec.calibration = Some(Calibration { wall, hw: Vec::new(), sink, regions });
            return true;
        }
        let Some(mut cal) = rec.calibration.take() else { return false };
        let median = |v: &mut Vec<u64>| {
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        };
        let wall = median(&mut cal.wall);
        let mut cycles: Vec<u64> = cal.hw.iter().map(|h| h.0).collect();
        let mut instructions: Vec<u64> = cal.hw.iter().map(|h| h.1).collect();
        let o = Overhead { wall, cpu_ns: ticks_to_ns(wall) + cpu_read_ns, hw: (median(&mut cycles), median(&mut instructions)) };
        rec.overhead = o;
        rec.writer.set_overhead(o.cpu_ns, ticks_to_ns(o.wall));
        for (i, v) in [o.wall, o.cpu_ns, o.hw.0, o.hw.1].into_iter().enumerate() {
            OVERHEAD[i].store(v, Ordering::Relaxed);
        }
        true
    })
}

/// Restarts this thread's running compute block now: the interposer's own
/// start-up work after `MPI_Init` returned (the overhead measurement, online
/// mode's shadow communicators) is not the application's compute. Those
/// shadow duplicates are collectives: under oversubscription a rank spins
/// in them for as long as its peers take to be scheduled, and charging that
/// CPU time to the first block made the prediction depend on how many
/// cores the run had.
pub fn restart_block() {
    let _ = REC.try_with(|r| {
        if let Ok(mut slot) = r.try_borrow_mut() {
            if let Some(rec) = slot.as_mut().filter(|rec| !rec.in_call) {
                rec.drain();
                if !rec.isolated {
                    rec.isolated = rec.main && crate::isolate::acquire();
                }
                // After the interposer's start-up work (collectives, which
                // may have slept): the CPU clock is read.
                rec.last_end = rec.timer.start(clock::now(), None);
                rec.publish();
            }
        }
    });
}

/// Starts recording a call; true when the wrapper must call [`end`].
/// False while disabled, inside another recorded call, or on a thread
/// that does not record. `tick`: the TSC as the C wrapper entered the
/// call (0: not read), which ends the running block.
pub fn begin(op: u8, caller: u64, tick: u64) -> bool {
    if STATE.load(Ordering::Relaxed) != TRACING {
        return false;
    }
    let recording = REC.try_with(|r| {
        let Ok(mut slot) = r.try_borrow_mut() else { return false };
        if slot.is_none() {
            *slot = thread_recorder();
            if let Some(rec) = slot.as_mut() {
                rec.sink = SINK.get().copied();
                rec.start_fast_path(rec.sink.is_none());
            }
        }
        let Some(rec) = slot.as_mut().filter(|rec| !rec.in_call) else { return false };
        let wall = if tick != 0 && rec.ring.state().tsc != 0 { tick } else { clock::now() };
        // A long block's CPU time is read before the ring is encoded: that
        // work is the recorder's, not the block's.
        let cpu = rec.timer.cpu_for_end(rec.ring.state().last_end, wall);
        rec.drain();
        rec.begin_at(op, caller, wall, cpu);
        rec.in_call = true;
        rec.ring.state().in_call = 2;
        if rec.isolated {
            crate::isolate::release();
            rec.isolated = false;
        }
        true
    });
    recording.unwrap_or(false)
}

/// Buffer for `n` list values of the current call (request handles,
/// communicator members). Grows only when a longer list than any before
/// is seen.
pub fn scratch(n: usize) -> *mut u64 {
    REC.with(|r| {
        let mut slot = r.borrow_mut();
        match slot.as_mut() {
            Some(rec) => {
                rec.requests.clear();
                rec.requests.resize(n, 0);
                rec.requests.as_mut_ptr()
            }
            None => std::ptr::null_mut(),
        }
    })
}

/// Finishes a call the fast path does not end (begun by either path):
/// builds its record and appends it, after the calls the ring holds.
///
/// The call's exit time is read once, as the record's end. With the fast
/// path off (online mode, hardware counters, no TSC) it is also the next
/// compute block's start: the recorder's own work after it (building and
/// encoding the record) falls in that block and is subtracted from it as
/// part of the measured overhead ([`calibration`]). Its occasional slow
/// steps, a chunk written to the file (about 1 in 7000 records) or a CPU
/// clock reading ([`Timer::start`]), are not in that median: after one, the
/// block starts at a fresh clock reading instead. So it does after every
/// call in online mode, whose work inside the call leaves the recorder's
/// epilogue slower than in the calibration's hot loop (which would charge
/// the difference to the next block), and with the fast path on, whose
/// epilogue is what the overhead measurement saw.
pub fn end(op: u8, failed: bool, params: impl FnOnce(&mut Vec<u64>) -> Params) {
    REC.with(|r| {
        let mut slot = r.borrow_mut();
        let Some(rec) = slot.as_mut() else { return };
        let exit = clock::now();
        let fast = rec.ring.state();
        if fast.in_call == 1 {
            // Begun on the fast path, ended here (a list, a CPU clock
            // reading due): the entry first, after the calls before it.
            let begun = rec.ring.begun();
            let (bop, bcaller, bstart) = (begun.op as u8, begun.caller, begun.start);
            rec.drain();
            rec.begin_at(bop, bcaller, bstart, None);
        } else if !rec.in_call {
            return;
        }
        rec.in_call = false;
        rec.ring.state().in_call = 0;
        let Some(op) = Op::from_code(op).filter(|_| op == rec.call_op) else { return };
        let flushes = rec.writer.flushes();
        if let Some(charge) = rec.sink.filter(|_| rec.calibration.is_none()) {
            charge(rec.block_cpu_ns(), rec.call_start.wall, (rec.prev_caller, rec.caller));
        }
        let _ = rec.locked(|rec| rec.record(op, failed, exit, params));
        // The wait for the node's compute token is neither this call nor
        // the next block (after MPI_Finalize no block follows).
        rec.isolated = rec.main && op != Op::Finalize && crate::isolate::acquire();
        // The next block starts at a fresh reading after slow steps of the
        // recorder (a chunk written, the token waited for), in online mode
        // (whose model ran in the call's epilogue), and whenever the fast
        // path is on: the overhead measurement saw its epilogue, not this one.
        let fresh = rec.isolated || rec.writer.flushes() != flushes || rec.sink.is_some() || rec.ring.state().on != 0;
        // After a slow step that may have slept (a chunk written, the token
        // waited for) the CPU clock is read; else only after a long call.
        let slept = rec.isolated || rec.writer.flushes() != flushes;
        let call = (!slept).then_some(rec.call_start.wall);
        rec.last_end = rec.timer.start(if fresh { clock::now() } else { exit }, call);
        rec.publish();
    });
}

/// Encodes the oldest few of this thread's kept calls, on entry to a call
/// that usually waits ([`crate::fast::DRAIN_SLICE`]): inside that call, so
/// no block changes.
pub fn drain_some() {
    let _ = REC.try_with(|r| {
        if let Ok(mut slot) = r.try_borrow_mut() {
            if let Some(rec) = slot.as_mut() {
                rec.drain_slice(crate::fast::DRAIN_SLICE);
            }
        }
    });
}

/// Encodes this thread's fast-path ring, which is full, and starts the
/// running block afresh: the encoding is the recorder's work.
pub fn drain_full() {
    let _ = REC.try_with(|r| {
        if let Ok(mut slot) = r.try_borrow_mut() {
            if let Some(rec) = slot.as_mut() {
                let flushes = rec.writer.flushes();
                rec.drain();
                // A chunk written may have slept: then the CPU clock is read.
                let now = clock::now();
                let call = (rec.writer.flushes() == flushes).then_some(now);
                rec.last_end = rec.timer.start(now, call);
                rec.publish();
            }
        }
    });
}

/// Inside a recorded call on this thread: the compute block before it
/// (thread CPU ns, as its record will store), the call's start (wall
/// ticks), which identifies the call, and the block's region (the return
/// addresses of the previous recorded call, 0 for `MPI_Init`, and of this one).
pub fn current_block() -> Option<(u64, u64, (u64, u64))> {
    REC.try_with(|r| {
        let slot = r.try_borrow().ok()?;
        let rec = slot.as_ref().filter(|rec| rec.in_call && rec.calibration.is_none())?;
        Some((rec.block_cpu_ns(), rec.call_start.wall, (rec.prev_caller, rec.caller)))
    })
    .ok()
    .flatten()
}

/// Adds `ns` of compute the application skipped (a sampled loop,
/// `interposer_sample.h`) to the running compute block of this thread, in
/// its record (CPU and wall time) and so in online mode's clock.
pub fn charge_compute(ns: u64) {
    let _ = REC.try_with(|r| {
        if let Ok(mut slot) = r.try_borrow_mut() {
            if let Some(rec) = slot.as_mut().filter(|rec| !rec.in_call) {
                // The charge belongs to the next call, after those kept.
                rec.drain();
                rec.charged_ns += ns;
            }
        }
    });
}

/// Outside MPI calls on this thread: thread CPU time from the last
/// recorded call's return to `cpu_now_ns` ([`timing::thread_cpu_ns`]),
/// ns (0 inside a call, when not recording or without CPU timing).
pub fn cpu_since_last_call_ns(cpu_now_ns: Option<u64>) -> u64 {
    REC.try_with(|r| {
        let slot = r.try_borrow().ok()?;
        let rec = slot.as_ref().filter(|rec| !rec.in_call)?;
        cpu_now_ns.map(|c| c.saturating_sub(rec.last_end.cpu))
    })
    .ok()
    .flatten()
    .unwrap_or(0)
}

/// Moves the start of the compute block running now `wall_ticks` and
/// `cpu_ns` of thread CPU time later (`None` without CPU timing: a
/// stamp's `cpu` is then its wall time): the interposer's own work inside
/// the block (a virtual `MPI_Wtime` pumping online mode's queue) is not
/// the application's compute.
pub fn exclude_from_block(wall_ticks: u64, cpu_ns: Option<u64>) {
    let _ = REC.try_with(|r| {
        let Ok(mut slot) = r.try_borrow_mut() else { return };
        if let Some(rec) = slot.as_mut().filter(|rec| !rec.in_call) {
            rec.last_end.wall += wall_ticks;
            rec.last_end.cpu += cpu_ns.unwrap_or_else(|| clock::ticks_to_ns(wall_ticks));
            rec.publish();
        }
    });
}

/// Signal-time flush of the recorder at `target` (see [`signals::arm`]):
/// only when no append is in progress (a signal that interrupted one
/// leaves that buffer alone).
fn flush_on_signal(target: *mut ()) {
    // SAFETY: armed with a live recorder, disarmed before it moves or drops.
    let rec = unsafe { &mut *(target as *mut Recorder) };
    if !rec.busy.swap(true, Ordering::Acquire) {
        if STATE.load(Ordering::Relaxed) != DISABLED {
            rec.encode_pending(usize::MAX);
        }
        let _ = rec.writer.flush();
        rec.busy.store(false, Ordering::Release);
    }
}

/// Records `MPI_Finalize` (already begun) and completes the file:
/// remaining records, module table and end marker.
pub fn finalize() {
    end(Op::Finalize as u8, false, |_| Params::None);
    if STATE.compare_exchange(TRACING, FINISHED, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return;
    }
    REC.with(|r| {
        if let Some(mut rec) = r.borrow_mut().take() {
            rec.disarm();
            if let Some(sums) = rec.regions.take() {
                let wall_s = ticks_to_ns(clock::now().saturating_sub(rec.epoch_wall)) as f64 * 1e-9;
                if let Err(e) = regions::write(rec.rank, *sums, wall_s) {
                    warn(Some(rec.rank), &e);
                }
            } else if let Err(e) = rec.writer.finish(&modules::current()) {
                warn(Some(rec.rank), &format!("cannot complete the trace: {e}"));
            }
        }
    });
}

//! Long fuzzing runs of the input readers ([`simulator_fuzz`]):
//!
//! ```text
//! cargo run --release -p simulator-fuzz --example fuzz -- [--count N] [--seed S] [--jobs J] [TARGET...]
//! ```
//! Feeds N (default 10^7) mutated inputs to each target (default: all),
//! J targets at a time (default 2), and prints one line per target: the
//! inputs, how many were accepted, the slowest input and the rate. A
//! panic, an allocation over 1 GiB or an input running over 10 s stops
//! the run with the input written to `fuzz-<target>.bin` and exit
//! status 1. Built with `RUSTFLAGS="-C overflow-checks=on"`, integer
//! overflows are panics too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use simulator_fuzz::{self as fuzz, Target, MAX_INPUT};

/// Largest single allocation allowed, bytes.
const MAX_ALLOC: usize = 1 << 30;

/// Inputs per round: a line of counts is printed after each.
const ROUND: u64 = 1_000_000;

/// Seconds one input may run before it is reported as a hang.
const HANG_S: u64 = 10;

/// The system allocator, refusing (and reporting) any allocation over
/// [`MAX_ALLOC`].
struct Bounded;

static TOO_BIG: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            TOO_BIG.store(layout.size(), Ordering::SeqCst);
            dump_all("allocation over 1 GiB");
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        if new > MAX_ALLOC {
            TOO_BIG.store(new, Ordering::SeqCst);
            dump_all("allocation over 1 GiB");
            return std::ptr::null_mut();
        }
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: Bounded = Bounded;

/// The input each worker is on, kept without allocating so that the
/// allocator and the watchdog can write it out.
struct Current {
    name: Mutex<&'static str>,
    len: AtomicUsize,
    bytes: Mutex<[u8; MAX_INPUT]>,
    started_ms: AtomicU64,
    busy: AtomicBool,
}

const JOBS_MAX: usize = 16;
static CURRENT: [Current; JOBS_MAX] = [const {
    Current {
        name: Mutex::new(""),
        len: AtomicUsize::new(0),
        bytes: Mutex::new([0; MAX_INPUT]),
        started_ms: AtomicU64::new(0),
        busy: AtomicBool::new(false),
    }
}; JOBS_MAX];

static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

fn now_ms() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// Writes every busy worker's input to stderr (no allocation) and to
/// `fuzz-<target>.bin` when it can.
fn dump_all(why: &str) {
    let mut err = std::io::stderr().lock();
    for c in &CURRENT {
        if !c.busy.load(Ordering::SeqCst) {
            continue;
        }
        let Ok(bytes) = c.bytes.try_lock() else { continue };
        let name = c.name.try_lock().map(|n| *n).unwrap_or("?");
        let input = &bytes[..c.len.load(Ordering::SeqCst)];
        let _ = err.write_all(b"FINDING ");
        let _ = err.write_all(why.as_bytes());
        let _ = err.write_all(b" in ");
        let _ = err.write_all(name.as_bytes());
        let _ = err.write_all(b"; input follows\n");
        let _ = err.write_all(input);
        let _ = err.write_all(b"\n");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut count: u64 = 10_000_000;
    let mut seed: u64 = 1;
    let mut jobs: usize = 2;
    let mut names = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| it.next().and_then(|v| v.parse::<f64>().ok()).unwrap_or_else(|| panic!("{flag} needs a number"));
        match a.as_str() {
            "--count" => count = value("--count") as u64,
            "--seed" => seed = value("--seed") as u64,
            "--jobs" => jobs = (value("--jobs") as usize).clamp(1, JOBS_MAX),
            name => names.push(name.to_string()),
        }
    }
    let all = fuzz::targets();
    let chosen: Vec<Target> = all.into_iter().filter(|t| names.is_empty() || names.iter().any(|n| n == t.name)).collect();
    if chosen.is_empty() {
        eprintln!("fuzz: no target named {names:?}; targets: {:?}", fuzz::targets().iter().map(|t| t.name).collect::<Vec<_>>());
        std::process::exit(2);
    }
    now_ms();
    std::panic::set_hook(Box::new(|_| {})); // panics are reported as findings
                                            // The watchdog: an input running over HANG_S seconds is a hang.
    std::thread::spawn(|| loop {
        std::thread::sleep(Duration::from_secs(1));
        for c in &CURRENT {
            if c.busy.load(Ordering::SeqCst) && now_ms().saturating_sub(c.started_ms.load(Ordering::SeqCst)) > HANG_S * 1000 {
                dump_all("hang");
                std::process::exit(1);
            }
        }
    });
    // Rounds of a million inputs, each from its own seed, taken target by
    // target (every target advances evenly), with a line of counts after
    // each: a run stopped early still tells how far each target got.
    let rounds = count.div_ceil(ROUND);
    let tasks: Vec<(usize, u64)> = (0..rounds).flat_map(|r| (0..chosen.len()).map(move |t| (t, r))).collect();
    let next = AtomicUsize::new(0);
    let totals = Mutex::new(vec![(0u64, 0u64, 0f64, 0f64); chosen.len()]);
    let failed = AtomicBool::new(false);
    std::thread::scope(|s| {
        for slot in CURRENT.iter().take(jobs) {
            let (tasks, next, totals, failed, chosen) = (&tasks, &next, &totals, &failed, &chosen);
            s.spawn(move || loop {
                if failed.load(Ordering::SeqCst) {
                    break;
                }
                let Some(&(ti, round)) = tasks.get(next.fetch_add(1, Ordering::SeqCst)) else { break };
                let t = &chosen[ti];
                *slot.name.lock().expect("name") = t.name;
                let mut keep = |input: &[u8]| {
                    slot.bytes.lock().expect("bytes")[..input.len()].copy_from_slice(input);
                    slot.len.store(input.len(), Ordering::SeqCst);
                    slot.started_ms.store(now_ms(), Ordering::SeqCst);
                    slot.busy.store(true, Ordering::SeqCst);
                };
                let n = ROUND.min(count - round * ROUND);
                let result = fuzz::run(t, seed.wrapping_add(round.wrapping_mul(0x9e37_79b9)), n, &mut keep);
                slot.busy.store(false, Ordering::SeqCst);
                match result {
                    Ok(st) => {
                        let mut all = totals.lock().expect("totals");
                        let (total, accepted, slowest, elapsed) = &mut all[ti];
                        (*total, *accepted, *elapsed) = (*total + st.inputs, *accepted + st.accepted, *elapsed + st.elapsed_s);
                        *slowest = slowest.max(st.slowest_s);
                        let done = if *total == count { "done" } else { "so far" };
                        println!(
                            "{:<14} {:>11} inputs  {:>10} accepted  slowest {:>9.6} s  {:>9.0} inputs/s  {:>7.1} s  {done}",
                            t.name,
                            total,
                            accepted,
                            slowest,
                            *total as f64 / elapsed.max(1e-9),
                            elapsed
                        );
                        let _ = std::io::stdout().flush();
                    }
                    Err(f) => {
                        let file = format!("fuzz-{}.bin", f.target);
                        let _ = std::fs::write(&file, &f.input);
                        eprintln!("FINDING {f} (input in {file})");
                        failed.store(true, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    if failed.load(Ordering::SeqCst) || TOO_BIG.load(Ordering::SeqCst) > 0 {
        std::process::exit(1);
    }
}

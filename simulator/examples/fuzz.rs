//! Long fuzzing runs of the input readers ([`simulator::fuzz`]):
//!
//! ```text
//! cargo run --release -p simulator --example fuzz -- [--count N] [--seed S] [--jobs J] [TARGET...]
//! ```
//! Feeds N (default 10^7) mutated inputs to each target (default: all),
//! J targets at a time (default 2), and prints one line per target: the
//! inputs, how many were accepted, the slowest input and the rate. A
//! panic, an allocation over 1 GiB or an input running over 10 s stops
//! the run with the input written to `fuzz-<target>.bin` and exit
//! status 1.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use simulator::fuzz::{self, Target, MAX_INPUT};

/// Largest single allocation allowed, bytes.
const MAX_ALLOC: usize = 1 << 30;

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
    let queue = Mutex::new(chosen.into_iter().collect::<Vec<_>>());
    let failed = AtomicBool::new(false);
    std::thread::scope(|s| {
        for slot in CURRENT.iter().take(jobs) {
            let (queue, failed) = (&queue, &failed);
            s.spawn(move || loop {
                let Some(t) = queue.lock().expect("queue").pop() else { break };
                *slot.name.lock().expect("name") = t.name;
                let mut keep = |input: &[u8]| {
                    slot.bytes.lock().expect("bytes")[..input.len()].copy_from_slice(input);
                    slot.len.store(input.len(), Ordering::SeqCst);
                    slot.started_ms.store(now_ms(), Ordering::SeqCst);
                    slot.busy.store(true, Ordering::SeqCst);
                };
                match fuzz::run(&t, seed, count, &mut keep) {
                    Ok(st) => println!(
                        "{:<14} {:>11} inputs  {:>10} accepted  slowest {:>9.6} s  {:>9.0} inputs/s  {:>7.1} s",
                        t.name,
                        st.inputs,
                        st.accepted,
                        st.slowest_s,
                        st.inputs as f64 / st.elapsed_s.max(1e-9),
                        st.elapsed_s
                    ),
                    Err(f) => {
                        let file = format!("fuzz-{}.bin", f.target);
                        let _ = std::fs::write(&file, &f.input);
                        eprintln!("FINDING {f} (input in {file})");
                        failed.store(true, Ordering::SeqCst);
                    }
                }
                slot.busy.store(false, Ordering::SeqCst);
            });
        }
    });
    if failed.load(Ordering::SeqCst) || TOO_BIG.load(Ordering::SeqCst) > 0 {
        std::process::exit(1);
    }
}

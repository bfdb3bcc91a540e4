//! `INTERPOSER_COUNTERS=auto|hw|sw|off`: which clocks time compute blocks,
//! and the probe for hardware counters (perf_event cycles).
//!
//! - `sw` (and `auto` without hardware counters): wall time plus thread CPU
//!   time (`CLOCK_THREAD_CPUTIME_ID`, the task clock); blocks under 10 µs
//!   take their wall time as CPU time.
//! - `off`: wall time only, no system call per MPI call (the cheapest).
//! - `hw` (and `auto` where the probe succeeds): as `sw`, plus user-space
//!   cycles and instructions per block from one perf_event group per thread
//!   ([`PerfGroup`], read with `rdpmc` where the kernel allows it).

use std::fmt;

/// The requested counter mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counters {
    /// Hardware counters when present, else `Sw`.
    Auto,
    /// Hardware counters (cycles, instructions).
    Hw,
    /// Thread CPU time and wall time.
    Sw,
    /// Wall time only.
    Off,
}

impl Counters {
    /// Parses `INTERPOSER_COUNTERS`; `None` for an unknown value.
    pub fn parse(v: &str) -> Option<Counters> {
        match v.trim() {
            "" | "auto" => Some(Counters::Auto),
            "hw" => Some(Counters::Hw),
            "sw" => Some(Counters::Sw),
            "off" => Some(Counters::Off),
            _ => None,
        }
    }
}

/// Why hardware counters cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER1` (72 bytes).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    bp_addr: u64,
    bp_len: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
const PERF_FORMAT_GROUP: u64 = 1 << 3;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;

/// Opens a user-space hardware counter `config` on the calling thread,
/// in the group of `leader` (-1: a new group).
fn open_counter(config: u64, leader: libc::c_int) -> Result<libc::c_int, Unavailable> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        read_format: if leader < 0 { PERF_FORMAT_GROUP } else { 0 },
        flags: EXCLUDE_KERNEL | EXCLUDE_HV,
        ..Default::default()
    };
    // SAFETY: perf_event_open with a valid attr of the size it states, this
    // thread (pid 0), any CPU, the given group, no flags.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, 0, -1, leader, 0) };
    if fd >= 0 {
        return Ok(fd as libc::c_int);
    }
    let e = std::io::Error::last_os_error();
    let why = match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => "no hardware cycle counter (a VM without a virtual PMU?)",
        Some(libc::EACCES) | Some(libc::EPERM) => "forbidden by /proc/sys/kernel/perf_event_paranoid",
        Some(libc::ENOSYS) => "the kernel has no perf_event",
        _ => "perf_event_open failed",
    };
    Err(Unavailable(format!("{why} ({e})")))
}

/// Opens (and closes) a user-space cycle counter on this thread.
///
/// # Errors
/// [`Unavailable`] with the errno's meaning: `ENOENT`/`EOPNOTSUPP` no such
/// counter (e.g. a VM without a virtual PMU), `EACCES`/`EPERM` forbidden by
/// `/proc/sys/kernel/perf_event_paranoid`, `ENOSYS` no perf_event at all.
pub fn probe_hw() -> Result<(), Unavailable> {
    let fd = open_counter(PERF_COUNT_HW_CPU_CYCLES, -1)?;
    // SAFETY: closing the descriptor just opened.
    unsafe { libc::close(fd) };
    Ok(())
}

/// Byte offsets in `struct perf_event_mmap_page` (linux/perf_event.h).
mod page {
    pub const LOCK: usize = 8;
    pub const INDEX: usize = 12;
    pub const OFFSET: usize = 16;
    pub const CAPABILITIES: usize = 40;
    pub const PMC_WIDTH: usize = 48;
    /// `cap_user_rdpmc`, bit 2 of `capabilities`.
    pub const CAP_USER_RDPMC: u64 = 1 << 2;
}

/// One perf_event group per thread: user-space CPU cycles (leader) and
/// retired instructions, counted together (perf-event2's `Group`). Read
/// with `rdpmc` from each counter's mapped page where the kernel allows
/// it (`cap_user_rdpmc`: no system call), else with one `read` of the
/// group.
#[derive(Debug)]
pub struct PerfGroup {
    fds: [libc::c_int; 2],
    /// Each counter's `perf_event_mmap_page`, or null when not mapped.
    pages: [*mut u8; 2],
}

impl PerfGroup {
    /// Opens the group on the calling thread; it counts from now on.
    ///
    /// # Errors
    /// [`Unavailable`], as [`probe_hw`].
    pub fn open() -> Result<PerfGroup, Unavailable> {
        let leader = open_counter(PERF_COUNT_HW_CPU_CYCLES, -1)?;
        let member = match open_counter(PERF_COUNT_HW_INSTRUCTIONS, leader) {
            Ok(fd) => fd,
            Err(e) => {
                // SAFETY: closing the descriptor just opened.
                unsafe { libc::close(leader) };
                return Err(e);
            }
        };
        let map = |fd: libc::c_int| {
            // SAFETY: mapping the first (metadata) page of a perf_event fd, read only.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
            if p == libc::MAP_FAILED {
                std::ptr::null_mut()
            } else {
                p as *mut u8
            }
        };
        Ok(PerfGroup { fds: [leader, member], pages: [map(leader), map(member)] })
    }

    /// True when both counters are read with `rdpmc` (no system call).
    pub fn user_rdpmc(&self) -> bool {
        self.pages.iter().all(|&p| {
            !p.is_null() && {
                // SAFETY: a live mapping of a perf_event_mmap_page.
                let caps = unsafe { std::ptr::read_volatile(p.add(page::CAPABILITIES) as *const u64) };
                let index = unsafe { std::ptr::read_volatile(p.add(page::INDEX) as *const u32) };
                caps & page::CAP_USER_RDPMC != 0 && index != 0
            }
        })
    }

    /// `(cycles, instructions)` counted on this thread since [`PerfGroup::open`];
    /// `(0, 0)` when the counters cannot be read.
    pub fn read(&self) -> (u64, u64) {
        match (rdpmc_read(self.pages[0]), rdpmc_read(self.pages[1])) {
            (Some(c), Some(i)) => (c, i),
            _ => self.read_syscall(),
        }
    }

    fn read_syscall(&self) -> (u64, u64) {
        let mut v = [0u64; 3]; // nr, cycles, instructions (PERF_FORMAT_GROUP)
                               // SAFETY: reading at most the buffer's size from our own fd.
        let n = unsafe { libc::read(self.fds[0], v.as_mut_ptr().cast(), std::mem::size_of_val(&v)) };
        if n == std::mem::size_of_val(&v) as isize && v[0] == 2 {
            (v[1], v[2])
        } else {
            (0, 0)
        }
    }
}

/// One counter's value through its mapped page and `rdpmc` (the
/// self-monitoring loop of linux/perf_event.h); `None` where the page says
/// user-space reads are not allowed now.
#[cfg(target_arch = "x86_64")]
fn rdpmc_read(p: *mut u8) -> Option<u64> {
    use std::ptr::read_volatile;
    use std::sync::atomic::{compiler_fence, Ordering};
    if p.is_null() {
        return None;
    }
    loop {
        // SAFETY: `p` is a live mapping of a perf_event_mmap_page; the
        // kernel updates it under the `lock` sequence count we check.
        unsafe {
            let seq = read_volatile(p.add(page::LOCK) as *const u32);
            compiler_fence(Ordering::SeqCst);
            let caps = read_volatile(p.add(page::CAPABILITIES) as *const u64);
            let index = read_volatile(p.add(page::INDEX) as *const u32);
            if caps & page::CAP_USER_RDPMC == 0 || index == 0 {
                return None;
            }
            let offset = read_volatile(p.add(page::OFFSET) as *const i64);
            let width = read_volatile(p.add(page::PMC_WIDTH) as *const u16) as u32;
            let (lo, hi): (u32, u32);
            std::arch::asm!("rdpmc", in("ecx") index - 1, out("eax") lo, out("edx") hi, options(nostack, nomem));
            let shift = 64 - width.clamp(1, 64);
            let pmc = ((((hi as u64) << 32 | lo as u64) << shift) as i64) >> shift;
            compiler_fence(Ordering::SeqCst);
            if read_volatile(p.add(page::LOCK) as *const u32) == seq {
                return Some(offset.wrapping_add(pmc) as u64);
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdpmc_read(_p: *mut u8) -> Option<u64> {
    None
}

impl Drop for PerfGroup {
    fn drop(&mut self) {
        for (&fd, &p) in self.fds.iter().zip(&self.pages) {
            // SAFETY: unmapping our own page and closing our own descriptor, once.
            unsafe {
                if !p.is_null() {
                    libc::munmap(p.cast(), 4096);
                }
                libc::close(fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_four_modes_and_rejects_others() {
        assert_eq!(Counters::parse("auto"), Some(Counters::Auto));
        assert_eq!(Counters::parse(""), Some(Counters::Auto));
        assert_eq!(Counters::parse("hw"), Some(Counters::Hw));
        assert_eq!(Counters::parse(" sw "), Some(Counters::Sw));
        assert_eq!(Counters::parse("off"), Some(Counters::Off));
        assert_eq!(Counters::parse("cycles"), None);
    }

    #[test]
    fn perf_group_counts_cycles_and_instructions_of_a_loop() {
        let g = match PerfGroup::open() {
            Ok(g) => g,
            Err(why) => return println!("SKIPPED hardware counter group: {why}"),
        };
        let (c0, i0) = g.read();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let (c1, i1) = g.read();
        println!("rdpmc: {}; {} cycles, {} instructions", g.user_rdpmc(), c1 - c0, i1 - i0);
        assert!(i1 - i0 >= 1_000_000, "a million-iteration loop retired {} instructions", i1 - i0);
        assert!(c1 > c0);
    }

    #[test]
    fn hardware_probe_answers_with_a_reason() {
        match probe_hw() {
            Ok(()) => println!("hardware cycle counter available"),
            Err(why) => {
                println!("SKIPPED hardware path: {why}");
                assert!(!why.0.is_empty());
            }
        }
    }
}

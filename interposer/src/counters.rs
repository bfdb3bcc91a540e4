//! `INTERPOSER_COUNTERS=auto|hw|sw|off`: which clocks time compute blocks,
//! and the probe for hardware counters (perf_event cycles).
//!
//! - `sw` (and `auto` without hardware counters): wall time plus thread CPU
//!   time (`CLOCK_THREAD_CPUTIME_ID`, the task clock); blocks under 10 µs
//!   take their wall time as CPU time.
//! - `off`: wall time only, no system call per MPI call (the cheapest).
//! - `hw`: cycles and instructions per block; not recorded by this version,
//!   which says so once and uses `sw`.

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

/// `struct perf_event_attr`, first version (`PERF_ATTR_SIZE_VER0`, 64 bytes).
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
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;

/// Opens (and closes) a user-space cycle counter on this thread.
///
/// # Errors
/// [`Unavailable`] with the errno's meaning: `ENOENT`/`EOPNOTSUPP` no such
/// counter (e.g. a VM without a virtual PMU), `EACCES`/`EPERM` forbidden by
/// `/proc/sys/kernel/perf_event_paranoid`, `ENOSYS` no perf_event at all.
pub fn probe_hw() -> Result<(), Unavailable> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_HW_CPU_CYCLES,
        flags: EXCLUDE_KERNEL | EXCLUDE_HV,
        ..Default::default()
    };
    // SAFETY: perf_event_open with a valid attr of the size it states, this
    // thread (pid 0), any CPU, no group, no flags.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, 0, -1, -1, 0) };
    if fd >= 0 {
        // SAFETY: closing the descriptor just opened.
        unsafe { libc::close(fd as libc::c_int) };
        return Ok(());
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

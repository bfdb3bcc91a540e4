//! CPU lists (`0,2-5,8-15:2`, the kernel's cpulist syntax), the online CPUs,
//! and pinning a thread to one CPU.

use crate::{CollectError, CollectErrorKind};

/// Parses a kernel-style CPU list: comma-separated numbers and ranges
/// `a-b`, a range optionally with a stride `a-b:s`. Returns the CPUs sorted
/// and without duplicates.
///
/// # Errors
/// [`CollectErrorKind::BadCpuList`] for an empty list, a non-number, a
/// reversed range or a zero stride.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, CollectError> {
    let bad = |why: String| CollectError::from(CollectErrorKind::BadCpuList { list: text.to_string(), why });
    let num = |s: &str| s.trim().parse::<u32>().map_err(|_| bad(format!("`{}` is not a CPU number", s.trim())));
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(bad("empty element".into()));
        }
        let (range, stride) = match part.split_once(':') {
            Some((r, s)) => (r, num(s)?),
            None => (part, 1),
        };
        if stride == 0 {
            return Err(bad(format!("zero stride in `{part}`")));
        }
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None if part.contains(':') => return Err(bad(format!("a stride needs a range: `{part}`"))),
            None => (num(range)?, num(range)?),
        };
        if lo > hi {
            return Err(bad(format!("reversed range `{part}`")));
        }
        cpus.extend((lo..=hi).step_by(stride as usize));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPUs compactly in cpulist syntax (`0-3,6`).
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i { format!("{}-{}", cpus[i], cpus[j]) } else { cpus[i].to_string() });
        i = j + 1;
    }
    out.join(",")
}

/// The online CPUs, from `/sys/devices/system/cpu/online`; falls back to
/// `0..available_parallelism` when that file is missing.
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online").ok().and_then(|s| parse_cpu_list(s.trim()).ok()).unwrap_or_else(|| {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        (0..n as u32).collect()
    })
}

/// Pins the calling thread to `cpu` with `sched_setaffinity`.
///
/// # Errors
/// [`CollectErrorKind::Pin`] with the errno: `EINVAL` means the CPU is
/// outside this process's cpuset (cgroup, Slurm allocation) or offline.
pub fn pin_current_thread(cpu: u32) -> Result<(), CollectError> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks against its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu as usize >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(CollectErrorKind::Pin { cpu, error: std::io::Error::from_raw_os_error(libc::EINVAL) }.into());
        }
        libc::CPU_SET(cpu as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(CollectErrorKind::Pin { cpu, error: std::io::Error::last_os_error() }.into());
        }
    }
    Ok(())
}

/// The calling thread's affinity mask, to restore after probing.
pub(crate) fn current_affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: plain-data out parameter of the right size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0).then_some(set)
    }
}

/// Restores a mask from [`current_affinity`].
pub(crate) fn set_affinity(set: &libc::cpu_set_t) {
    // SAFETY: as above; failure leaves the mask as it was, which is harmless.
    unsafe {
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
    }
}

/// The CPU the calling thread runs on (`sched_getcpu`), if known.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments; returns -1 on failure.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

/// Resolves the CPUs to sample: `requested` if given (each must be online
/// and pinnable), else every online CPU this process may run on.
///
/// Probes each CPU by pinning the calling thread to it, then restores the
/// thread's mask. Returns the CPUs and, for the default selection, a warning
/// per online CPU that was skipped because it cannot be pinned (outside the
/// cpuset).
///
/// # Errors
/// [`CollectErrorKind::CpuNotOnline`] or [`CollectErrorKind::Pin`] for a
/// requested CPU; [`CollectErrorKind::NoCpu`] if nothing is left.
pub fn resolve_cpus(requested: Option<&[u32]>) -> Result<(Vec<u32>, Vec<String>), CollectError> {
    let online = online_cpus();
    let saved = current_affinity();
    let mut chosen = Vec::new();
    let mut warnings = Vec::new();
    let result = (|| {
        match requested {
            Some(req) => {
                for &cpu in req {
                    if !online.contains(&cpu) {
                        let online = format_cpu_list(&online);
                        return Err(CollectError::from(CollectErrorKind::CpuNotOnline { cpu, online }));
                    }
                    pin_current_thread(cpu)?;
                    chosen.push(cpu);
                }
            }
            None => {
                for &cpu in &online {
                    match pin_current_thread(cpu) {
                        Ok(()) => chosen.push(cpu),
                        Err(e) => warnings.push(format!("skipping {e}")),
                    }
                }
            }
        }
        if chosen.is_empty() {
            return Err(CollectErrorKind::NoCpu.into());
        }
        Ok(())
    })();
    if let Some(set) = saved {
        set_affinity(&set);
    }
    result.map(|()| (chosen, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0,1").unwrap(), [0, 1]);
        assert_eq!(parse_cpu_list("3, 0-2 ,2").unwrap(), [0, 1, 2, 3]);
        assert_eq!(parse_cpu_list("0-7:3,9").unwrap(), [0, 3, 6, 9]);
        assert_eq!(parse_cpu_list("5").unwrap(), [5]);
        for bad in ["", "a", "1,", "3-1", "0-4:0", "1:2", "-1", "0-", "1.5"] {
            let e = parse_cpu_list(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("bad --cpus `{bad}`")), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn resolves_online_cpus_and_rejects_missing_ones() {
        let online = online_cpus();
        assert!(!online.is_empty());
        let (all, _) = resolve_cpus(None).unwrap();
        assert!(all.iter().all(|c| online.contains(c)));
        let e = resolve_cpus(Some(&[100_000])).unwrap_err().to_string();
        assert!(e.contains("CPU 100000 is not online"), "{e}");
        assert_eq!(resolve_cpus(Some(&[online[0]])).unwrap().0, [online[0]]);
    }
}

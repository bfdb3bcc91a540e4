//! The loaded-object table (`/proc/self/maps`), so offline tools can turn
//! return addresses into module-relative call sites that are stable across
//! runs despite ASLR.

use simulator::trace::Module;

/// Parses the executable, file-backed mappings of a `/proc/<pid>/maps` text.
pub fn parse_maps(text: &str) -> Vec<Module> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
            let path = f.nth(2)?;
            if !perms.contains('x') || !path.starts_with('/') {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some(Module {
                path: path.to_string(),
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                file_offset: u64::from_str_radix(offset, 16).ok()?,
            })
        })
        .collect()
}

/// The current process's executable mappings; empty when `/proc` is unreadable.
pub fn current() -> Vec<Module> {
    std::fs::read_to_string("/proc/self/maps").map(|t| parse_maps(&t)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_executable_file_mappings() {
        let maps = "\
55d0c0000000-55d0c0001000 r--p 00000000 08:01 123 /usr/bin/app
55d0c0001000-55d0c0002000 r-xp 00001000 08:01 123 /usr/bin/app
7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]
7f0000002000-7f0000003000 rw-p 00000000 00:00 0
";
        let m = parse_maps(maps);
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].start, m[0].end, m[0].file_offset), (0x55d0c0001000, 0x55d0c0002000, 0x1000));
        assert_eq!(m[0].path, "/usr/bin/app");
    }
}

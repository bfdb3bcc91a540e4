//! Transparent huge pages under the replay's per-rank state. At a million
//! ranks that state is gigabytes visited in close to random order, and on
//! 4 KiB pages nearly every visit misses the TLB as well as the caches.
//! Where the kernel gives huge pages to the memory that asks for them
//! (`madvise` in `/sys/kernel/mm/transparent_hugepage/enabled`, a common
//! default), the engine asks: for its rank array before filling it, and,
//! collapsing the pages already there, for the heap span that holds the
//! ranks' streams. Hints only: where the kernel refuses, only speed changes.

/// Spans below this are left alone (a huge page is 2 MiB).
const MIN_BYTES: usize = 4 << 20;

/// Asks for huge pages under the `bytes` bytes at address `start`; with
/// `collapse`, also turns the pages already there into huge ones (Linux's
/// `MADV_COLLAPSE`, a copy of the span). Errors are ignored: the advice
/// changes how memory is backed, never what it holds.
pub(super) fn advise(start: usize, bytes: usize, collapse: bool) {
    if bytes < MIN_BYTES {
        return;
    }
    let (first, end) = (start.next_multiple_of(4096), (start + bytes) & !4095);
    #[cfg(target_os = "linux")]
    {
        let ptr = std::ptr::without_provenance_mut::<libc::c_void>(first);
        // SAFETY: madvise with these two advices changes the backing of
        // whole pages of mapped memory (pages under live allocations; a
        // page not mapped gives ENOMEM), never their contents.
        unsafe {
            libc::madvise(ptr, end - first, libc::MADV_HUGEPAGE);
            if collapse {
                libc::madvise(ptr, end - first, libc::MADV_COLLAPSE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (first, end, collapse);
}

/// The span from the lowest to the end of the highest of `extents`
/// (address, bytes), when its extents fill at least half of it: boxes
/// allocated one after another, not ones strewn over the address space.
pub(super) fn dense_span(extents: &[(usize, u32)]) -> Option<(usize, usize)> {
    let lo = extents.iter().map(|e| e.0).min()?;
    let hi = extents.iter().map(|e| e.0 + e.1 as usize).max()?;
    let used: usize = extents.iter().map(|e| e.1 as usize).sum();
    (used.saturating_mul(2) >= hi - lo).then_some((lo, hi - lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_spans_cover_their_extents_and_strewn_ones_are_refused() {
        assert_eq!(dense_span(&[(1000, 100), (1100, 100), (1200, 50)]), Some((1000, 250)));
        assert_eq!(dense_span(&[(1000, 100), (1_000_000, 100)]), None);
        assert_eq!(dense_span(&[]), None);
    }
}

//! What the servers' caches still hold of the data written to them, for
//! reads of recently written data (a page cache): the last `capacity`
//! bytes written, oldest forgotten first.

use std::collections::VecDeque;

/// Written file ranges, oldest first, at most `capacity` bytes in all.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recent {
    /// `(file, start, end)` byte ranges; contiguous writes to a file merge.
    extents: VecDeque<(u32, u64, u64)>,
    bytes: u64,
    capacity: u64,
}

impl Recent {
    /// A memory of `capacity` bytes (0: none).
    pub(crate) fn new(capacity: u64) -> Recent {
        Recent { capacity, ..Recent::default() }
    }

    /// `[start, end)` of `file` was written.
    pub(crate) fn remember(&mut self, file: u32, start: u64, end: u64) {
        if self.capacity == 0 || end <= start {
            return;
        }
        match self.extents.back_mut() {
            Some(last) if last.0 == file && last.2 == start => last.2 = end,
            _ => self.extents.push_back((file, start, end)),
        }
        self.bytes += end - start;
        while self.bytes > self.capacity {
            let Some(first) = self.extents.front_mut() else { break };
            let drop = (self.bytes - self.capacity).min(first.2 - first.1);
            first.1 += drop;
            self.bytes -= drop;
            if first.1 == first.2 {
                self.extents.pop_front();
            }
        }
    }

    /// Whether every byte of `[start, end)` of `file` is still held.
    pub(crate) fn covers(&self, file: u32, start: u64, end: u64) -> bool {
        if self.capacity == 0 || end <= start {
            return false;
        }
        let mut parts: Vec<(u64, u64)> =
            self.extents.iter().filter(|e| e.0 == file && e.1 < end && e.2 > start).map(|e| (e.1, e.2)).collect();
        parts.sort_unstable();
        let mut reached = start;
        for (s, e) in parts {
            if s > reached {
                return false;
            }
            reached = reached.max(e);
            if reached >= end {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_last_bytes_written_and_forgets_the_oldest() {
        let mut r = Recent::new(100);
        r.remember(1, 0, 40);
        r.remember(1, 40, 60); // merges with the first
        r.remember(2, 10, 30);
        assert!(r.covers(1, 10, 60) && r.covers(2, 10, 30));
        assert!(!r.covers(1, 50, 70) && !r.covers(3, 0, 1));
        r.remember(2, 100, 160); // 140 bytes: the oldest 40 of file 1 go
        assert!(!r.covers(1, 0, 10) && r.covers(1, 40, 60) && r.covers(2, 100, 160));
        // Pieces from several writes cover a read together.
        let mut r = Recent::new(1000);
        r.remember(5, 16, 32);
        r.remember(6, 0, 8);
        r.remember(5, 0, 16);
        assert!(r.covers(5, 0, 32) && !r.covers(5, 0, 33));
        assert!(!Recent::new(0).covers(5, 0, 1));
    }
}

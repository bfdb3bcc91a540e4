//! What the servers' caches still hold of the data written to them, for
//! reads of recently written data (a page cache): the last `capacity`
//! bytes written, oldest forgotten first.
//!
//! Writes are kept in the order they came (for forgetting) and, per file,
//! as disjoint segments counting the writes that cover them (for reads),
//! so a read costs O(log segments + segments it spans), not the writes held.

use std::collections::{BTreeMap, HashMap, VecDeque};

/// Written file ranges, oldest first, at most `capacity` bytes in all.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recent {
    /// `(file, start, end)` byte ranges; contiguous writes to a file merge.
    extents: VecDeque<(u32, u64, u64)>,
    /// Per file: segment start → (segment end, writes held covering it).
    cover: HashMap<u32, BTreeMap<u64, (u64, u32)>>,
    bytes: u64,
    capacity: u64,
}

/// Makes `at` a segment boundary of `map` (splits the segment holding it).
fn split(map: &mut BTreeMap<u64, (u64, u32)>, at: u64) {
    if let Some((&s, &(e, n))) = map.range(..at).next_back() {
        if e > at {
            map.insert(s, (at, n));
            map.insert(at, (e, n));
        }
    }
}

/// Adds `delta` writes over `[start, end)` of `map`, creating segments
/// where none was and dropping those no write covers any more.
fn add(map: &mut BTreeMap<u64, (u64, u32)>, start: u64, end: u64, delta: i32) {
    split(map, start);
    split(map, end);
    let mut at = start;
    let inside: Vec<(u64, (u64, u32))> = map.range(start..end).map(|(&s, &v)| (s, v)).collect();
    for (s, (e, n)) in inside {
        if delta > 0 && s > at {
            map.insert(at, (s, 1));
        }
        let n = n.saturating_add_signed(delta);
        if n == 0 {
            map.remove(&s);
        } else {
            map.insert(s, (e, n));
        }
        at = e;
    }
    if delta > 0 && at < end {
        map.insert(at, (end, 1));
    }
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
        add(self.cover.entry(file).or_default(), start, end, 1);
        self.bytes += end - start;
        while self.bytes > self.capacity {
            let Some(first) = self.extents.front_mut() else { break };
            let drop = (self.bytes - self.capacity).min(first.2 - first.1);
            let (f, s) = (first.0, first.1);
            first.1 += drop;
            self.bytes -= drop;
            if first.1 == first.2 {
                self.extents.pop_front();
            }
            if let Some(map) = self.cover.get_mut(&f) {
                add(map, s, s + drop, -1);
            }
        }
    }

    /// Whether every byte of `[start, end)` of `file` is still held.
    pub(crate) fn covers(&self, file: u32, start: u64, end: u64) -> bool {
        if self.capacity == 0 || end <= start {
            return false;
        }
        let Some(map) = self.cover.get(&file) else { return false };
        let mut reached = match map.range(..=start).next_back() {
            Some((_, &(e, _))) if e > start => e,
            _ => return false,
        };
        for (&s, &(e, _)) in map.range(start + 1..end) {
            if s > reached {
                return false;
            }
            reached = reached.max(e);
        }
        reached >= end
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

    /// The same answers as a walk over every write held, on random writes
    /// and reads over a few files (a seeded linear congruential generator).
    #[test]
    fn answers_as_a_walk_over_the_writes_held() {
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let mut r = Recent::new(300);
        let mut writes: Vec<(u32, u64, u64)> = Vec::new();
        for _ in 0..5000 {
            let (f, s, len) = (next(3) as u32, next(200), 1 + next(40));
            if next(2) == 0 {
                r.remember(f, s, s + len);
                writes.push((f, s, s + len));
                // The reference: the last 300 bytes written, oldest first out.
                let mut left = 300u64;
                let mut kept = Vec::new();
                for &(wf, ws, we) in writes.iter().rev() {
                    if left == 0 {
                        break;
                    }
                    let take = (we - ws).min(left);
                    kept.push((wf, we - take, we));
                    left -= take;
                }
                writes = kept.into_iter().rev().collect();
            } else {
                let mut parts: Vec<(u64, u64)> =
                    writes.iter().filter(|w| w.0 == f && w.1 < s + len && w.2 > s).map(|w| (w.1, w.2)).collect();
                parts.sort_unstable();
                let mut reached = s;
                for (a, b) in parts {
                    if a <= reached {
                        reached = reached.max(b);
                    }
                }
                assert_eq!(r.covers(f, s, s + len), reached >= s + len, "file {f} [{s}, {})", s + len);
            }
        }
    }
}

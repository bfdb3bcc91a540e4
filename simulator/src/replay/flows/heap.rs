//! The completion dates of the flows in their bandwidth phase: an
//! indexed binary min-heap whose entries move when a flow's rate changes
//! (SimGrid's lazy update keeps its actions in such a heap,
//! `include/simgrid/kernel/resource/Action.hpp`, `ActionHeap`), so a flow's date costs
//! O(log n) to change and the heap holds one entry per flow.

const NONE: u32 = u32::MAX;

/// Flow ids ordered by `(date, seq)`, seconds and start order.
#[derive(Debug, Default)]
pub(super) struct Dates {
    /// `(date, seq, id)` in heap order.
    heap: Vec<(f64, u64, u32)>,
    /// Per flow id: its place in `heap` (`NONE`: not there).
    at: Vec<u32>,
}

impl Dates {
    /// The earliest entry: `(date, id)`.
    pub(super) fn peek(&self) -> Option<(f64, u32)> {
        self.heap.first().map(|e| (e.0, e.2))
    }

    /// Sets entry `id`'s date and its order among equal dates `seq`,
    /// adding it when absent.
    pub(super) fn set(&mut self, id: u32, seq: u64, date: f64) {
        let i = id as usize;
        if i >= self.at.len() {
            self.at.resize(i + 1, NONE);
        }
        let k = self.at[i];
        if k == NONE {
            self.heap.push((date, seq, id));
            let k = self.heap.len() - 1;
            self.at[i] = k as u32;
            self.up(k);
        } else {
            let k = k as usize;
            let old = self.heap[k];
            self.heap[k] = (date, seq, id);
            if Self::less(&self.heap[k], &old) {
                self.up(k);
            } else {
                self.down(k);
            }
        }
    }

    /// Removes flow `id` when present.
    pub(super) fn remove(&mut self, id: u32) {
        let Some(&k) = self.at.get(id as usize) else { return };
        if k == NONE {
            return;
        }
        let k = k as usize;
        self.at[id as usize] = NONE;
        let last = self.heap.pop().expect("an entry is there");
        if k < self.heap.len() {
            self.heap[k] = last;
            self.at[last.2 as usize] = k as u32;
            self.up(k);
            self.down(k);
        }
    }

    fn less(a: &(f64, u64, u32), b: &(f64, u64, u32)) -> bool {
        a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).is_lt()
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.at[self.heap[a].2 as usize] = a as u32;
        self.at[self.heap[b].2 as usize] = b as u32;
    }

    fn up(&mut self, mut k: usize) {
        while k > 0 {
            let p = (k - 1) / 2;
            if !Self::less(&self.heap[k], &self.heap[p]) {
                break;
            }
            self.swap(k, p);
            k = p;
        }
    }

    fn down(&mut self, mut k: usize) {
        loop {
            let (l, r) = (2 * k + 1, 2 * k + 2);
            let mut m = k;
            if l < self.heap.len() && Self::less(&self.heap[l], &self.heap[m]) {
                m = l;
            }
            if r < self.heap.len() && Self::less(&self.heap[r], &self.heap[m]) {
                m = r;
            }
            if m == k {
                break;
            }
            self.swap(k, m);
            k = m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random sets, moves and removals pop in `(date, seq)` order.
    #[test]
    fn entries_leave_in_date_then_start_order() {
        let mut rng = crate::rng::Rng::new(9);
        for _ in 0..200 {
            let mut h = Dates::default();
            let mut want: Vec<Option<(f64, u64)>> = vec![None; 40];
            for _ in 0..200 {
                let id = rng.below(40);
                if rng.below(4) == 0 {
                    h.remove(id as u32);
                    want[id] = None;
                } else {
                    let d = rng.below(20) as f64 * 0.5;
                    h.set(id as u32, id as u64, d);
                    want[id] = Some((d, id as u64));
                }
            }
            let mut order: Vec<(f64, u64)> = want.iter().flatten().copied().collect();
            order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut got = Vec::new();
            while let Some((d, id)) = h.peek() {
                got.push((d, id as u64));
                h.remove(id);
            }
            assert_eq!(got, order);
        }
    }
}

//! A vector whose first elements live inside its owner: per-rank tables
//! (request slots, handle maps) that hold a few entries stay in the
//! rank's own memory, so touching a rank costs no pointer chase into a
//! separate heap block. At a million ranks those chases are cache and TLB
//! misses, and they dominate the replay's time per event.

use std::ops::{Index, IndexMut};

/// Elements `0..N` inline, the rest in a heap vector allocated only when
/// more than `N` are held.
#[derive(Debug, Clone)]
pub(crate) struct InlineVec<T, const N: usize> {
    inline: [T; N],
    /// Elements held inline (at most `N`).
    len: u32,
    /// Elements `N..`.
    more: Vec<T>,
}

impl<T: Copy + Default, const N: usize> Default for InlineVec<T, N> {
    fn default() -> Self {
        InlineVec { inline: [T::default(); N], len: 0, more: Vec::new() }
    }
}

impl<T: Copy + Default, const N: usize> InlineVec<T, N> {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len as usize + self.more.len()
    }

    /// Appends `v`.
    pub(crate) fn push(&mut self, v: T) {
        if (self.len as usize) < N {
            self.inline[self.len as usize] = v;
            self.len += 1;
        } else {
            self.more.push(v);
        }
    }

    /// Removes and returns the last element, if any.
    pub(crate) fn pop(&mut self) -> Option<T> {
        match self.more.pop() {
            Some(v) => Some(v),
            None if self.len > 0 => {
                self.len -= 1;
                Some(self.inline[self.len as usize])
            }
            None => None,
        }
    }

    /// Removes element `i`, moving the last one into its place.
    ///
    /// # Panics
    /// When `i` is out of bounds.
    pub(crate) fn swap_remove(&mut self, i: usize) -> T {
        let last = self.pop().expect("swap_remove on an empty vector");
        if i == self.len() {
            return last;
        }
        std::mem::replace(&mut self[i], last)
    }

    /// The elements, first first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.inline[..self.len as usize].iter().chain(&self.more)
    }

    /// The elements, mutable.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.inline[..self.len as usize].iter_mut().chain(&mut self.more)
    }

    /// Removes every element, giving back the heap part's memory.
    pub(crate) fn take_all(&mut self) -> impl Iterator<Item = T> {
        let n = std::mem::take(&mut self.len) as usize;
        let inline = self.inline;
        inline.into_iter().take(n).chain(std::mem::take(&mut self.more))
    }
}

impl<T, const N: usize> Index<usize> for InlineVec<T, N> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        if i < N {
            assert!(i < self.len as usize, "index {i} out of bounds");
            &self.inline[i]
        } else {
            &self.more[i - N]
        }
    }
}

impl<T, const N: usize> IndexMut<usize> for InlineVec<T, N> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        if i < N {
            assert!(i < self.len as usize, "index {i} out of bounds");
            &mut self.inline[i]
        } else {
            &mut self.more[i - N]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_vec_spills_past_its_inline_part_and_keeps_order() {
        let mut v: InlineVec<u32, 3> = InlineVec::default();
        for x in 0..7 {
            v.push(x);
        }
        assert_eq!(v.len(), 7);
        assert_eq!(v.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!((v[2], v[3], v[6]), (2, 3, 6));
        v[4] = 40;
        assert_eq!(v.swap_remove(1), 1);
        assert_eq!(v.iter().copied().collect::<Vec<_>>(), [0, 6, 2, 3, 40, 5]);
        assert_eq!(v.swap_remove(5), 5);
        v.iter_mut().for_each(|x| *x += 1);
        assert_eq!(v.take_all().collect::<Vec<_>>(), [1, 7, 3, 4, 41]);
        assert_eq!((v.len(), v.pop()), (0, None));
        v.push(9);
        assert_eq!((v.swap_remove(0), v.len()), (9, 0));
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn inline_vec_refuses_an_index_past_its_length() {
        let mut v: InlineVec<u32, 4> = InlineVec::default();
        v.push(1);
        let _ = v[1];
    }
}

//! The engine's data parallelism: rayon's parallel iterators with the
//! `parallel` feature (the command-line tools), plain iterators without
//! it (the preloaded interposer, which must not start a thread pool in
//! the application). Results are the same either way: every reduction the
//! engine makes is exact (maxima of integers).

#[cfg(feature = "parallel")]
pub use rayon::prelude::*;

#[cfg(not(feature = "parallel"))]
pub use seq::*;

#[cfg(not(feature = "parallel"))]
mod seq {
    /// rayon's slice iterators, sequentially.
    pub trait SliceSeq<T> {
        /// `iter()`.
        fn par_iter(&self) -> std::slice::Iter<'_, T>;
        /// `iter_mut()`.
        fn par_iter_mut(&mut self) -> std::slice::IterMut<'_, T>;
        /// `chunks()`.
        fn par_chunks(&self, n: usize) -> std::slice::Chunks<'_, T>;
        /// `chunks_mut()`.
        fn par_chunks_mut(&mut self, n: usize) -> std::slice::ChunksMut<'_, T>;
        /// `sort_unstable()`.
        fn par_sort_unstable(&mut self)
        where
            T: Ord;
    }

    impl<T> SliceSeq<T> for [T] {
        fn par_iter(&self) -> std::slice::Iter<'_, T> {
            self.iter()
        }
        fn par_iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
            self.iter_mut()
        }
        fn par_chunks(&self, n: usize) -> std::slice::Chunks<'_, T> {
            self.chunks(n)
        }
        fn par_chunks_mut(&mut self, n: usize) -> std::slice::ChunksMut<'_, T> {
            self.chunks_mut(n)
        }
        fn par_sort_unstable(&mut self)
        where
            T: Ord,
        {
            self.sort_unstable()
        }
    }

    /// `into_par_iter` on ranges, sequentially.
    pub trait RangeSeq: Iterator + Sized {
        /// The range itself.
        fn into_par_iter(self) -> Self {
            self
        }
    }

    impl RangeSeq for std::ops::Range<usize> {}

    /// rayon's `with_min_len`, sequentially.
    pub trait MinLen: Iterator + Sized {
        /// The iterator itself.
        fn with_min_len(self, _min: usize) -> Self {
            self
        }
    }

    impl<I: Iterator> MinLen for I {}
}

/// Element-wise maxima of pairs, `(0, 0)` when empty; exact, so the same on any thread count.
#[cfg(feature = "parallel")]
pub fn max_pair(it: impl ParallelIterator<Item = (u64, u64)>) -> (u64, u64) {
    it.reduce(|| (0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
}

/// Element-wise maxima of pairs, `(0, 0)` when empty.
#[cfg(not(feature = "parallel"))]
pub fn max_pair(it: impl Iterator<Item = (u64, u64)>) -> (u64, u64) {
    it.fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
}

//! The (slot, weight) pairs of one solver entry, the first [`NEAR`]
//! inside the entry: a flow of a flat cluster crosses four links (two
//! each way), which then cost no allocation and no pointer to follow.

/// Pairs held inline.
const NEAR: usize = 4;

/// (slot, weight) pairs in order; beyond [`NEAR`], in a vector kept with
/// the entry's id between uses.
#[derive(Debug, Clone, Default)]
pub(super) struct Pairs {
    slot: [u32; NEAR],
    len: u32,
    w: [f64; NEAR],
    far: Vec<(u32, f64)>,
}

impl Pairs {
    /// Number of pairs.
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// Pair `k` (< [`Pairs::len`]).
    #[inline]
    pub(super) fn get(&self, k: usize) -> (u32, f64) {
        if k < NEAR {
            (self.slot[k], self.w[k])
        } else {
            self.far[k - NEAR]
        }
    }

    /// The pairs in order.
    #[inline]
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        (0..self.len()).map(|k| self.get(k))
    }

    /// Appends `(slot, w)`.
    pub(super) fn push(&mut self, (slot, w): (u32, f64)) {
        let k = self.len as usize;
        if k < NEAR {
            (self.slot[k], self.w[k]) = (slot, w);
        } else {
            self.far.push((slot, w));
        }
        self.len += 1;
    }

    /// Removes every pair.
    pub(super) fn clear(&mut self) {
        self.len = 0;
        self.far.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs pushed come back in order, inline or beyond.
    #[test]
    fn pairs_come_back_in_push_order() {
        let mut p = Pairs::default();
        for n in [0u32, 3, 4, 9] {
            p.clear();
            let want: Vec<(u32, f64)> = (0..n).map(|i| (i, f64::from(i) * 0.5)).collect();
            want.iter().for_each(|&x| p.push(x));
            assert_eq!(p.iter().collect::<Vec<_>>(), want);
            assert_eq!(p.len(), n as usize);
        }
    }
}

//! A flow's directed links and their weights, held inside the flow for
//! routes of up to [`NEAR`] links: the route's links share one weight and
//! the way back's (the acknowledgements') another, so a link costs 4
//! bytes and no allocation.

/// Links held inline; a longer route keeps the rest in a vector that
/// stays with the flow's id between uses.
const NEAR: usize = 4;

/// The (directed link, weight) pairs of a flow, in order: the first
/// `fwd` weigh `w[0]`, the others `w[1]`.
#[derive(Debug, Clone, Default)]
pub(super) struct Links {
    near: [u32; NEAR],
    far: Vec<u32>,
    len: u32,
    fwd: u32,
    w: [f64; 2],
}

impl Links {
    /// Makes the links `route` of weight `w_route` then `back` of weight
    /// `w_back`.
    pub(super) fn set(&mut self, route: impl IntoIterator<Item = u32>, w_route: f64, back: impl IntoIterator<Item = u32>, w_back: f64) {
        self.far.clear();
        self.len = 0;
        for l in route {
            self.push(l);
        }
        self.fwd = self.len;
        for l in back {
            self.push(l);
        }
        self.w = [w_route, w_back];
    }

    fn push(&mut self, l: u32) {
        let k = self.len as usize;
        if k < NEAR {
            self.near[k] = l;
        } else {
            self.far.push(l);
        }
        self.len += 1;
    }

    /// Number of links.
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// Link `k` (< [`Links::len`]): its directed id.
    pub(super) fn id(&self, k: usize) -> u32 {
        if k < NEAR {
            self.near[k]
        } else {
            self.far[k - NEAR]
        }
    }

    /// Link `k` (< [`Links::len`]): its directed id and weight.
    pub(super) fn get(&self, k: usize) -> (u32, f64) {
        (self.id(k), self.w[usize::from(k as u32 >= self.fwd)])
    }

    /// The (directed link, weight) pairs in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        (0..self.len()).map(|k| self.get(k))
    }

    /// Divides every weight by `d`.
    pub(super) fn divide(&mut self, d: f64) {
        self.w[0] /= d;
        self.w[1] /= d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short and long routes give back their pairs in order with the
    /// route's weight then the way back's.
    #[test]
    fn pairs_come_back_in_order_with_their_weights() {
        let mut l = Links::default();
        for n in [0u32, 1, 3, 4, 7] {
            l.set(0..n, 1.0, 100..100 + n, 0.25);
            l.divide(2.0);
            let want: Vec<(u32, f64)> = (0..n).map(|i| (i, 0.5)).chain((100..100 + n).map(|i| (i, 0.125))).collect();
            assert_eq!(l.iter().collect::<Vec<_>>(), want, "{n} links each way");
            assert_eq!(l.len(), 2 * n as usize);
        }
    }
}

//! Routes of an extended generalized fat tree as SimGrid 3.32's
//! `FatTreeZone` builds and routes it (`topo_parameters="L;down…;up…;count…"`).
//!
//! Nodes of level i (0: hosts) are numbered by position; a node's label
//! has one digit per level k, digit 0 varying fastest, of radix down_k for
//! k ≥ i and up_k for k < i. A level-l node and a level-(l+1) node are
//! joined when their labels agree but for digit l, by count_l separate
//! links: the child's parent port q = (parent digit l) + j·up_l and the
//! parent's child port (child digit l) + j·down_l, j < count_l.
//! - **Up**: from a level-L node, parent port
//!   q = ⌊b / ∏_{i<L} up_i·count_i⌋ mod up_L·count_L (b: the destination's
//!   position), until the node is an ancestor of b (labels agree from its
//!   level up).
//! - **Down**: SimGrid's loop as written: from d·down_{l−1}, with
//!   d = a mod count_{l−1} (a: the source's position), take the first child
//!   port i with i mod down_{l−1} = b's digit l − 1, step down, and go on
//!   scanning from i + 1 at the new node.
//!
//! Undirected link of (level l, child position p, port q) is
//! `offset_l + p·up_l·count_l + q`; `2k` is its up direction, `2k + 1` down.

/// The fat tree's shape.
pub(super) struct Shape<'a> {
    pub(super) down: &'a [u32],
    pub(super) up: &'a [u32],
    pub(super) count: &'a [u32],
}

impl Shape<'_> {
    fn levels(&self) -> usize {
        self.down.len()
    }

    /// Radix of digit k at level i.
    fn radix(&self, i: usize, k: usize) -> usize {
        if k >= i {
            self.down[k] as usize
        } else {
            self.up[k] as usize
        }
    }

    /// Nodes at level i.
    pub(super) fn nodes(&self, i: usize) -> usize {
        (0..self.levels()).map(|k| self.radix(i, k)).product()
    }

    fn ports(&self, l: usize) -> usize {
        (self.up[l] * self.count[l]) as usize
    }

    /// Undirected links: Σ_l nodes(l) · up_l · count_l.
    pub(super) fn links(&self) -> usize {
        (0..self.levels()).map(|l| self.nodes(l) * self.ports(l)).sum()
    }

    fn label(&self, i: usize, mut pos: usize, out: &mut [usize]) {
        for (k, d) in out.iter_mut().enumerate() {
            let r = self.radix(i, k);
            *d = pos % r;
            pos /= r;
        }
    }

    fn position(&self, i: usize, label: &[usize]) -> usize {
        let mut pos = 0;
        for k in (0..self.levels()).rev() {
            pos = pos * self.radix(i, k) + label[k];
        }
        pos
    }

    fn link(&self, l: usize, child_pos: usize, q: usize) -> usize {
        let offset: usize = (0..l).map(|m| self.nodes(m) * self.ports(m)).sum();
        offset + child_pos * self.ports(l) + q
    }

    /// Appends the directed link ids from host `a` to host `b` to `out`.
    pub(super) fn route(&self, a: usize, b: usize, out: &mut Vec<u32>) {
        let n = self.levels();
        let (mut cur, mut dst) = (vec![0; n], vec![0; n]);
        self.label(0, a, &mut cur);
        self.label(0, b, &mut dst);
        let mut level = 0;
        // Up until `cur` is an ancestor of b.
        while level == 0 || (level..n).any(|k| cur[k] != dst[k]) {
            let below: usize = (0..level).map(|i| self.ports(i)).product();
            let q = b / below % self.ports(level);
            out.push((2 * self.link(level, self.position(level, &cur), q)) as u32);
            cur[level] = q % self.up[level] as usize;
            level += 1;
        }
        // Down, as SimGrid's loop does it.
        while level > 0 {
            let l = level - 1;
            // i runs over at least down_l consecutive ports: one matches.
            let mut i = (a % self.count[l] as usize) * self.down[l] as usize;
            while level > 0 && i < (self.down[level - 1] * self.count[level - 1]) as usize {
                let l = level - 1;
                let down = self.down[l] as usize;
                if i % down == dst[l] {
                    // The child's parent port back to this node.
                    let j = i / down;
                    let q = cur[l] + j * self.up[l] as usize;
                    cur[l] = dst[l];
                    out.push((2 * self.link(l, self.position(l, &cur), q) + 1) as u32);
                    level -= 1;
                }
                i += 1;
            }
        }
    }
}

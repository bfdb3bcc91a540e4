//! Peers and communicator members as functions of the rank r and the rank
//! count N, found from the small runs (Wu & Mueller, "ScalaExtrap", §3:
//! communication topology as a function of rank; 1-D offsets, periodic
//! rings, 2-D and 3-D Cartesian grids from `MPI_Dims_create`,
//! `MPI_PROC_NULL` off the grid's edges).

use crate::trace::record::PROC_NULL;

/// `MPI_Dims_create(n, 2)`: the most nearly square factorization of `n`,
/// larger side first.
pub fn dims_2d(n: u32) -> (u32, u32) {
    let mut small = (n as f64).sqrt() as u32;
    while small > 1 && !n.is_multiple_of(small) {
        small -= 1;
    }
    let small = small.max(1);
    (n / small, small)
}

/// `MPI_Dims_create(n, 3)`: the most nearly cubic factorization of `n`,
/// sides in non-increasing order (each prime factor, largest first, goes
/// to the smallest side so far).
pub fn dims_3d(n: u32) -> [u32; 3] {
    let mut primes = Vec::new();
    let (mut m, mut p) = (n.max(1), 2);
    while p * p <= m {
        while m.is_multiple_of(p) {
            primes.push(p);
            m /= p;
        }
        p += 1;
    }
    if m > 1 {
        primes.push(m);
    }
    let mut d = [1u32; 3];
    for &q in primes.iter().rev() {
        let smallest = (0..3).min_by_key(|&i| d[i]).unwrap_or(0);
        d[smallest] *= q;
    }
    d.sort_unstable_by(|a, b| b.cmp(a));
    d
}

/// Coordinates of rank `r` on the 3-D grid of `n` ranks, and its sides:
/// row-major as `MPI_Cart_create` numbers ranks (the last side varies
/// fastest).
pub(super) fn coords_3d(r: u32, n: u32) -> ([i64; 3], [i64; 3]) {
    let d = dims_3d(n).map(i64::from);
    let r = r as i64;
    ([r / (d[1] * d[2]), r / d[2] % d[1], r % d[2]], d)
}

/// A 2-D grid over N ranks, row-major: `x = r mod width`, `y = r / width`,
/// the width being the smaller side of [`dims_2d`] (`narrow`) or the larger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grid {
    /// True when the row width is the smaller side.
    pub narrow: bool,
}

impl Grid {
    fn width(self, n: u32) -> u32 {
        let (big, small) = dims_2d(n);
        if self.narrow {
            small
        } else {
            big
        }
    }

    /// Column, row, row width and rows of rank `r` of `n`.
    pub(super) fn coords(self, r: u32, n: u32) -> (i64, i64, i64, i64) {
        let w = self.width(n);
        (r as i64 % w as i64, r as i64 / w as i64, w as i64, (n / w) as i64)
    }
}

/// Where a call's peer (destination, source, root) is, for rank `r` of `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerRule {
    /// A fixed value: a rank, or `MPI_PROC_NULL`, `MPI_ANY_SOURCE`, or −1
    /// for a rootless collective.
    Fixed(i32),
    /// Rank `N − 1 − c`.
    FromEnd(u32),
    /// Rank `r + d`, `MPI_PROC_NULL` outside `0..N`.
    Offset(i64),
    /// Rank `(r + d) mod N`.
    Periodic(i64),
    /// The grid neighbour `(x + dx, y + dy)`, wrapped when `periodic`,
    /// else `MPI_PROC_NULL` off the grid.
    Grid {
        /// The grid's orientation.
        grid: Grid,
        /// Column step.
        dx: i64,
        /// Row step.
        dy: i64,
        /// Wrapped at the edges.
        periodic: bool,
    },
    /// The neighbour `coords + step` on the 3-D grid of
    /// `MPI_Dims_create(N, 3)`, wrapped when `periodic`, else
    /// `MPI_PROC_NULL` off the grid.
    Grid3 {
        /// Steps along the three sides.
        step: [i64; 3],
        /// Wrapped at the edges.
        periodic: bool,
    },
    /// Member `k` of the call's communicator.
    Member(usize),
    /// At iteration t of a loop of k iterations, rank `r XOR 2^(k − 1 − t)`:
    /// recursive halving, the farthest partner first (a butterfly sum
    /// along a row of 2^k ranks, as NPB CG's row reductions).
    XorHalving,
    /// At iteration t of a loop, rank `r XOR 2^t`: recursive doubling,
    /// the nearest partner first.
    XorDoubling,
    /// The rank holding the transposed block on the 2-D grid of
    /// `MPI_Dims_create(N, 2)` whose larger side `cols` is `q` times the
    /// smaller `rows` (q = 1 or 2 for powers of two), ranks numbered row
    /// by row: with b = r / q the rank's block on the `rows` × `rows` grid
    /// of blocks, the peer is q·((b mod rows)·rows + b / rows) + r mod q
    /// (NPB CG's transpose exchange). `MPI_PROC_NULL` when `cols` is no
    /// multiple of `rows`.
    Transpose,
}

/// Where a call is in the loop around it: iteration `t` of `k` (0 of 1
/// outside loops). Module `loops` finds the loops whose trip count
/// changes with N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iter {
    /// The iteration, from 0.
    pub t: u32,
    /// The loop's trip count at this rank count.
    pub k: u32,
}

impl Iter {
    /// A call outside any loop the model folds.
    pub const ONCE: Iter = Iter { t: 0, k: 1 };
}

impl PeerRule {
    /// The peer of rank `r` of `n`; `members` are the call's communicator's
    /// world ranks (for [`PeerRule::Member`]).
    pub fn eval(&self, r: u32, n: u32, members: &[u32]) -> i32 {
        self.eval_at(r, n, members, Iter::ONCE)
    }

    /// [`PeerRule::eval`] of a call at iteration `it` of its loop: the
    /// peer of the XOR rules depends on it, that of the others does not.
    /// A partner outside `0..N` is `MPI_PROC_NULL`.
    pub fn eval_at(&self, r: u32, n: u32, members: &[u32], it: Iter) -> i32 {
        let (r, n64) = (r as i64, n as i64);
        let inside = |p: i64| if (0..n64).contains(&p) { p as i32 } else { PROC_NULL };
        match *self {
            PeerRule::Fixed(v) => v,
            PeerRule::FromEnd(c) => n as i32 - 1 - c as i32,
            PeerRule::Offset(d) => inside(r + d),
            PeerRule::Periodic(d) => (r + d).rem_euclid(n64) as i32,
            PeerRule::Grid { grid, dx, dy, periodic } => {
                let (x, y, w, h) = grid.coords(r as u32, n);
                let (px, py) = (x + dx, y + dy);
                match (periodic, (0..w).contains(&px) && (0..h).contains(&py)) {
                    (true, _) => (py.rem_euclid(h) * w + px.rem_euclid(w)) as i32,
                    (false, true) => (py * w + px) as i32,
                    (false, false) => PROC_NULL,
                }
            }
            PeerRule::Grid3 { step, periodic } => {
                let (c, d) = coords_3d(r as u32, n);
                let p: [i64; 3] = std::array::from_fn(|i| c[i] + step[i]);
                let inside = (0..3).all(|i| (0..d[i]).contains(&p[i]));
                if !periodic && !inside {
                    return PROC_NULL;
                }
                let p: [i64; 3] = std::array::from_fn(|i| p[i].rem_euclid(d[i]));
                ((p[0] * d[1] + p[1]) * d[2] + p[2]) as i32
            }
            PeerRule::Member(k) => members.get(k).map_or(PROC_NULL, |&m| m as i32),
            PeerRule::XorHalving => match it.k.checked_sub(1 + it.t) {
                Some(b) if b < 62 => inside(r ^ (1 << b)),
                _ => PROC_NULL,
            },
            PeerRule::XorDoubling if it.t < 62 => inside(r ^ (1 << it.t)),
            PeerRule::XorDoubling => PROC_NULL,
            PeerRule::Transpose => {
                let (cols, rows) = dims_2d(n);
                if !cols.is_multiple_of(rows) {
                    return PROC_NULL;
                }
                let (q, rows) = ((cols / rows) as i64, rows as i64);
                let b = r / q;
                inside(q * ((b % rows) * rows + b / rows) + r % q)
            }
        }
    }

    /// The rules one observation (`p` the peer of rank `r` of `n` in a
    /// communicator of `members`) allows, simplest first.
    fn candidates(r: u32, n: u32, p: i32, members: &[u32]) -> Vec<PeerRule> {
        let mut out = vec![PeerRule::Fixed(p)];
        if p < 0 {
            return out;
        }
        // Last, after the rules that hold at every iteration alike.
        let late = [PeerRule::Transpose, PeerRule::XorHalving, PeerRule::XorDoubling];
        if let Some(k) = members.iter().position(|&m| m as i32 == p) {
            out.push(PeerRule::Member(k));
        }
        let d = p as i64 - r as i64;
        out.push(PeerRule::Offset(d));
        for d in [d, d - n as i64, d + n as i64] {
            out.push(PeerRule::Periodic(d));
        }
        out.push(PeerRule::FromEnd(n - 1 - p as u32));
        for grid in [Grid { narrow: true }, Grid { narrow: false }] {
            let (x, y, w, h) = grid.coords(r, n);
            let (px, py) = (p as i64 % w, p as i64 / w);
            for (dx, dy) in [(px - x, py - y), (px - x - w, py - y), (px - x + w, py - y), (px - x, py - y - h), (px - x, py - y + h)] {
                for periodic in [false, true] {
                    out.push(PeerRule::Grid { grid, dx, dy, periodic });
                }
            }
        }
        let (c, d) = coords_3d(r, n);
        let (pc, _) = coords_3d(p as u32, n);
        // Per side the step as seen, or around the wrap either way.
        let steps: [[i64; 3]; 3] = std::array::from_fn(|i| {
            let s = pc[i] - c[i];
            [s, s - d[i], s + d[i]]
        });
        for a in steps[0] {
            for b in steps[1] {
                for z in steps[2] {
                    for periodic in [false, true] {
                        out.push(PeerRule::Grid3 { step: [a, b, z], periodic });
                    }
                }
            }
        }
        out.extend(late);
        out
    }
}

/// One observed peer: rank `r` of `n` had peer `p` in a communicator of `members`.
#[derive(Debug, Clone)]
pub struct PeerSeen {
    /// Rank count of the run.
    pub n: u32,
    /// The rank.
    pub r: u32,
    /// Its peer (world rank or a negative special value).
    pub p: i32,
    /// World ranks of the call's communicator.
    pub members: Vec<u32>,
    /// Where the call was in its loop.
    pub it: Iter,
}

/// The simplest rule that gives every observation's peer; `None` when no
/// rule does (a data-dependent peer).
pub fn fit_peer(seen: &[PeerSeen]) -> Option<PeerRule> {
    fit_peer_on(seen, |_, _, _| None)
}

/// [`fit_peer`] with the rule `prefer(r, p, n)` gives for one observation
/// (peer `p` of rank `r` of `n`) tried before the others: for ranks
/// classed by their position on a process grid (module `grid`), the
/// neighbour rule of that grid, since a class there may be seen at one
/// rank count only, where an offset or a fixed rank gives the same peers.
pub fn fit_peer_on(seen: &[PeerSeen], prefer: impl Fn(u32, i32, u32) -> Option<PeerRule>) -> Option<PeerRule> {
    let first = seen.iter().find(|s| s.p >= 0).or(seen.first())?;
    let mut candidates = PeerRule::candidates(first.r, first.n, first.p, &first.members);
    if let Some(rule) = prefer(first.r, first.p, first.n) {
        candidates.insert(0, rule);
    }
    candidates.into_iter().find(|rule| seen.iter().all(|s| rule.eval_at(s.r, s.n, &s.members, s.it) == s.p))
}

/// Why `rule`, fitted to `seen`, cannot be trusted at other rank counts,
/// if it cannot: a step along a side of a periodic 3-D grid that was at
/// most 2 long at every traced count, where the neighbour one way is the
/// neighbour the other way, so the direction of the call is unknown.
pub fn undetermined(rule: &PeerRule, seen: &[PeerSeen]) -> Option<String> {
    let side = *blind_sides(rule, seen).first()?;
    let longest = seen.iter().map(|s| s.n).max().unwrap_or(0);
    let two = (1..31).map(|k| 1u32 << k).find(|&n| dims_3d(n)[side] >= 3).unwrap_or(64);
    Some(format!(
        "its peer is a neighbour along side {side} of the periodic 3-D grid, which is at most 2 ranks long up to the {longest} ranks traced, so which neighbour (step −1 or +1) is unknown; add a trace at a rank count whose side {side} is 3 or more (27 ranks: 3 × 3 × 3; among powers of two, {two})"
    ))
}

/// The sides of `rule` (a periodic 3-D grid rule fitted to `seen`) along
/// which it steps and which were at most 2 long at every traced count,
/// where its direction is unknown ([`undetermined`]).
fn blind_sides(rule: &PeerRule, seen: &[PeerSeen]) -> Vec<usize> {
    let PeerRule::Grid3 { step, periodic: true } = *rule else { return Vec::new() };
    (0..3).filter(|&i| step[i] != 0 && seen.iter().all(|s| dims_3d(s.n)[i] <= 2)).collect()
}

/// The direction (−1 or +1) of a periodic 3-D grid rule that steps
/// along one side only, where a traced count had that side 3 or more
/// long; `None` for other rules.
pub fn direction(rule: &PeerRule, seen: &[PeerSeen]) -> Option<i64> {
    let PeerRule::Grid3 { step, periodic: true } = *rule else { return None };
    let moving: Vec<i64> = step.into_iter().filter(|&x| x != 0).collect();
    (moving.len() == 1 && blind_sides(rule, seen).is_empty()).then(|| moving[0].signum())
}

/// `rule`, whose direction is unknown along some sides ([`undetermined`]),
/// stepping `dir` (±1) along them: the direction a call from the same
/// source line takes along a side that is longer at a traced count (a
/// loop over the sides, as `MPI_Cart_shift(comm, side, 1, &lo, &hi)` in
/// it gives). `None` unless the rule still gives every observation's peer.
pub fn oriented(rule: &PeerRule, seen: &[PeerSeen], dir: i64) -> Option<PeerRule> {
    let PeerRule::Grid3 { mut step, periodic: true } = *rule else { return None };
    for i in blind_sides(rule, seen) {
        step[i] = dir;
    }
    let out = PeerRule::Grid3 { step, periodic: true };
    seen.iter().all(|s| out.eval_at(s.r, s.n, &s.members, s.it) == s.p).then_some(out)
}

/// Who a new communicator holds, for rank `r` of `n` (world ranks in
/// increasing order, as `MPI_Comm_split` with the key of rank order gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberRule {
    /// Every rank (`MPI_Comm_dup` of the world).
    All,
    /// The rank alone.
    Alone,
    /// The ranks of `r`'s grid row.
    Row(Grid),
    /// The ranks of `r`'s grid column.
    Column(Grid),
    /// The block of `k` consecutive ranks holding `r`.
    Block(u32),
    /// The ranks congruent to `r` modulo `k`.
    Stride(u32),
}

impl MemberRule {
    /// The members for rank `r` of `n`.
    pub fn eval(&self, r: u32, n: u32) -> Vec<u32> {
        match *self {
            MemberRule::All => (0..n).collect(),
            MemberRule::Alone => vec![r],
            MemberRule::Row(g) => {
                let w = g.width(n);
                let y = r / w;
                (y * w..(y + 1) * w).collect()
            }
            MemberRule::Column(g) => {
                let w = g.width(n);
                (r % w..n).step_by(w as usize).collect()
            }
            MemberRule::Block(k) => {
                let start = r / k * k;
                (start..(start + k).min(n)).collect()
            }
            MemberRule::Stride(k) => (r % k..n).step_by(k as usize).collect(),
        }
    }
}

/// The rule giving every observation's members (`(n, r, members)`), or `None`.
pub fn fit_members(seen: &[(u32, u32, Vec<u32>)]) -> Option<MemberRule> {
    let (_, _, m0) = seen.first()?;
    let mut rules = vec![MemberRule::All, MemberRule::Alone];
    for grid in [Grid { narrow: true }, Grid { narrow: false }] {
        rules.push(MemberRule::Row(grid));
        rules.push(MemberRule::Column(grid));
    }
    let k = m0.len() as u32;
    if k > 0 {
        rules.push(MemberRule::Block(k));
        if m0.len() > 1 {
            rules.push(MemberRule::Stride(m0[1] - m0[0]));
        }
    }
    rules.into_iter().find(|rule| seen.iter().all(|(n, r, m)| rule.eval(*r, *n) == *m))
}

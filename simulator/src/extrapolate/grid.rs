//! Rank classes by position on a process grid: a rank's class is its
//! place along each side of the 2-D or 3-D grid, first, interior or last
//! (corners, edges, faces and the interior), so that the calls a rank on
//! the grid's boundary skips (those to the neighbours it lacks) are a
//! property of its class (Wu & Mueller, "ScalaExtrap", §3: ranks grouped
//! by their communication pattern, the topology a function of the rank).
//!
//! The grid is the one of `MPI_Dims_create` in two or three dimensions,
//! ranks numbered row-major as `MPI_Cart_create` numbers them; which one
//! a program uses is inferred from its peers (`choose`): the layout
//! under which every point-to-point peer is a neighbour (a step of at
//! most one along each side) and a position gives one call sequence at
//! every traced count, the nearest neighbours winning.
//!
//! A position no traced count has (the interior of a side that is at
//! most 2 long at every traced count) is built from those it has:
//!
//! - **removal**: a rank first along a side makes the calls of an
//!   interior rank of that side but those to its low neighbour (last: its
//!   high neighbour);
//! - **merge**: an interior rank makes the calls of the first rank (the
//!   calls to its high neighbour) and those of the last (to its low
//!   neighbour), the calls both make in between. Where both have calls of
//!   their own between the same two shared calls, their order is unknown
//!   and the model refuses, naming the call and a rank count that has
//!   the position.
//!
//! Both assume blocking calls: a skipped nonblocking call would leave the
//! request lists of the waits around it to be guessed, and is refused.

use std::collections::HashMap;

use super::fields::Fields;
use super::rules::{coords_3d, Grid, PeerRule};
use super::Sample;
use crate::trace::record::Params;

/// How ranks are laid out on the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// The 2-D grid of `MPI_Dims_create(N, 2)`, rows `grid.width(N)` ranks wide.
    Grid2(Grid),
    /// The 3-D grid of `MPI_Dims_create(N, 3)`, the last side fastest.
    Grid3,
}

/// A rank's place along one side of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pos {
    /// Alone on a side of one rank.
    Only,
    /// Coordinate 0.
    First,
    /// Neither first nor last.
    Interior,
    /// The side's last coordinate.
    Last,
}

/// A rank class by grid position: the layout and the place along each
/// side (a 2-D grid's first side is [`Pos::Only`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Position {
    /// The grid.
    pub layout: Layout,
    /// Place along each side, the slowest-varying side first.
    pub pos: [Pos; 3],
}

impl Layout {
    /// Coordinates of rank `r` of `n` and the grid's sides, slowest side
    /// first (a 2-D grid has a first side of 1).
    pub fn place(self, r: u32, n: u32) -> ([i64; 3], [i64; 3]) {
        match self {
            Layout::Grid2(g) => {
                let (x, y, w, h) = g.coords(r, n);
                ([0, y, x], [1, h, w])
            }
            Layout::Grid3 => coords_3d(r, n),
        }
    }

    /// The class of rank `r` of `n`.
    pub fn position(self, r: u32, n: u32) -> Position {
        let (c, d) = self.place(r, n);
        let pos = std::array::from_fn(|i| match (c[i], d[i]) {
            (_, 1) => Pos::Only,
            (0, _) => Pos::First,
            (c, d) if c == d - 1 => Pos::Last,
            _ => Pos::Interior,
        });
        Position { layout: self, pos }
    }

    /// The step from rank `r` to rank `p` of `n` along each side, without
    /// wrapping.
    fn step(self, r: u32, p: u32, n: u32) -> [i64; 3] {
        let (a, b) = (self.place(r, n).0, self.place(p, n).0);
        std::array::from_fn(|i| b[i] - a[i])
    }

    /// The peer rule of the neighbour `step` away, `MPI_PROC_NULL` off the
    /// grid.
    pub fn neighbour(self, step: [i64; 3]) -> PeerRule {
        match self {
            Layout::Grid2(grid) => PeerRule::Grid { grid, dx: step[2], dy: step[1], periodic: false },
            Layout::Grid3 => PeerRule::Grid3 { step, periodic: false },
        }
    }

    /// The neighbour rule of rank `r`'s peer `p` at `n`, when `p` is a
    /// neighbour (at most one step along each side, not `r` itself).
    pub fn neighbour_of(self, r: u32, p: i32, n: u32) -> Option<PeerRule> {
        if p < 0 || p as u32 >= n {
            return None;
        }
        let s = self.step(r, p as u32, n);
        (s != [0; 3] && s.iter().all(|x| x.abs() <= 1)).then(|| self.neighbour(s))
    }

    /// The sides that have more than one place.
    fn sides(self) -> std::ops::Range<usize> {
        match self {
            Layout::Grid2(_) => 1..3,
            Layout::Grid3 => 0..3,
        }
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .layout
            .sides()
            .map(|i| match self.pos[i] {
                Pos::Only => "only",
                Pos::First => "first",
                Pos::Interior => "interior",
                Pos::Last => "last",
            })
            .collect();
        let dim = if matches!(self.layout, Layout::Grid3) { "3-D" } else { "2-D" };
        write!(f, "({}) on the {dim} grid", names.join(", "))
    }
}

/// One rank of a class as the model reads it: a traced rank, or one made
/// from traced ranks' calls (a position no traced count has).
#[derive(Debug, Clone)]
pub(super) struct Member {
    /// Index of its sample.
    pub k: usize,
    /// Its rank when it was traced.
    pub rank: Option<u32>,
    /// Its coordinates on the grid (a made rank's: an interior one).
    at: [i64; 3],
    /// Its calls: (traced rank, index of the call in that rank's records).
    pub calls: Calls,
}

impl Member {
    /// Traced rank `r` of sample `k`, whose records are `len` long.
    pub fn traced(k: usize, r: u32, len: usize) -> Member {
        Member { k, rank: Some(r), at: [0; 3], calls: (0..len as u32).map(|i| (r, i)).collect() }
    }

    /// Traced rank `r` of sample `k` whose calls at the class's slots are
    /// `calls` (indices in its records), as module `loops` aligns them.
    pub fn aligned(k: usize, r: u32, calls: impl IntoIterator<Item = u32>) -> Member {
        Member { k, rank: Some(r), at: [0; 3], calls: calls.into_iter().map(|i| (r, i)).collect() }
    }
}

/// Calls of a member: (traced rank, index in its records).
type Calls = Vec<(u32, u32)>;

/// Why a position cannot be made: the call at fault and what it lacks.
#[derive(Debug)]
pub(super) struct Refusal {
    /// The call: (sample, traced rank, index in its records).
    pub call: (usize, u32, u32),
    /// What does not fit.
    pub why: String,
}

/// The layout whose positions separate the shapes (`shape_of[k][r]`, the
/// call sequence of rank r of sample k) and whose peers are neighbours,
/// nearest first; `None` when no layout does.
pub(super) fn choose(samples: &[Sample], shape_of: &[Vec<usize>]) -> Option<Layout> {
    let layouts = [Layout::Grid2(Grid { narrow: true }), Layout::Grid3, Layout::Grid2(Grid { narrow: false })];
    let mut best: Option<(i64, Layout)> = None;
    'layout: for layout in layouts {
        let mut shape_at: HashMap<Position, usize> = HashMap::new();
        let mut distance = 0;
        for (s, ids) in samples.iter().zip(shape_of) {
            let n = s.n();
            for (r, (_, _, recs)) in s.ranks.iter().enumerate() {
                let r = r as u32;
                if *shape_at.entry(layout.position(r, n)).or_insert(ids[r as usize]) != ids[r as usize] {
                    continue 'layout;
                }
                for (rec, _) in recs {
                    for p in p2p_peers(&rec.params).into_iter().flatten().filter(|&p| p >= 0 && p as u32 != r) {
                        if layout.neighbour_of(r, p, n).is_none() {
                            continue 'layout;
                        }
                        distance += layout.step(r, p as u32, n).iter().map(|x| x.abs()).sum::<i64>();
                    }
                }
            }
        }
        if best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, layout));
        }
    }
    best.map(|(_, l)| l)
}

/// The peers of a point-to-point call (destination, source), `None`
/// elsewhere.
fn p2p_peers(p: &Params) -> [Option<i32>; 2] {
    match p {
        Params::P2p { .. } | Params::Sendrecv { .. } | Params::Probe { .. } => Fields::of(p).peers,
        _ => [None, None],
    }
}

/// The members of every position on `layout`: those of the traced
/// positions, then each interior, face, edge and corner position no
/// traced count has, made by removal or merge (module docs).
///
/// # Errors
/// A [`Refusal`] naming the first call that keeps a position from being
/// made, with a rank count that has the position.
pub(super) fn classes(samples: &[Sample], layout: Layout) -> Result<Vec<(Position, Vec<Member>)>, Refusal> {
    let mut known: HashMap<Position, Vec<Member>> = HashMap::new();
    let mut order = Vec::new();
    for (k, s) in samples.iter().enumerate() {
        for (r, (_, _, recs)) in s.ranks.iter().enumerate() {
            let p = layout.position(r as u32, s.n());
            let mut m = Member::traced(k, r as u32, recs.len());
            m.at = layout.place(r as u32, s.n()).0;
            known.entry(p).or_insert_with(|| {
                order.push(p);
                Vec::new()
            });
            known.get_mut(&p).expect("inserted").push(m);
        }
    }
    let mut maker = Maker { samples, layout, known, busy: Vec::new() };
    let places = [Pos::First, Pos::Interior, Pos::Last];
    for a in places {
        for b in places {
            for c in places {
                let pos = match layout {
                    Layout::Grid2(_) => [Pos::Only, b, c],
                    Layout::Grid3 => [a, b, c],
                };
                let p = Position { layout, pos };
                if !order.contains(&p) {
                    maker.make(p)?;
                    order.push(p);
                }
            }
        }
    }
    Ok(order.into_iter().map(|p| (p, maker.known.remove(&p).expect("made"))).collect())
}

/// Makes positions from others, remembering what it made.
struct Maker<'s> {
    samples: &'s [Sample],
    layout: Layout,
    known: HashMap<Position, Vec<Member>>,
    /// Positions being made (a position is not made from itself).
    busy: Vec<Position>,
}

impl Maker<'_> {
    /// The members of `p`, made if no traced count has it.
    fn make(&mut self, p: Position) -> Result<&Vec<Member>, Refusal> {
        if self.known.contains_key(&p) {
            return Ok(&self.known[&p]);
        }
        if self.busy.contains(&p) {
            return Err(self.missing(p));
        }
        self.busy.push(p);
        let made = self.removal(p).or_else(|first| self.merge(p).map_err(|second| second.or(first)));
        self.busy.pop();
        match made {
            Ok(members) => {
                self.known.insert(p, members);
                Ok(&self.known[&p])
            }
            Err(why) => Err(why.unwrap_or_else(|| self.missing(p))),
        }
    }

    /// `p` from the position interior along one of its sides where it is
    /// first or last, the calls to the missing neighbour taken out.
    fn removal(&mut self, p: Position) -> Result<Vec<Member>, Option<Refusal>> {
        let mut last = None;
        for side in self.layout.sides() {
            let dir = match p.pos[side] {
                Pos::First => -1,
                Pos::Last => 1,
                _ => continue,
            };
            let mut q = p;
            q.pos[side] = Pos::Interior;
            let inner = match self.make(q) {
                Ok(m) => m.clone(),
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let mut out = Vec::with_capacity(inner.len());
            for m in inner {
                let n = self.samples[m.k].n();
                let (_, d) = self.layout.place(0, n);
                let mut calls = Vec::with_capacity(m.calls.len());
                for &(r, i) in &m.calls {
                    if self.along(m.k, r, i, side, dir) {
                        self.blocking(m.k, r, i, p)?;
                    } else {
                        calls.push((r, i));
                    }
                }
                let mut at = m.at;
                at[side] = if dir < 0 { 0 } else { d[side] - 1 };
                out.push(Member { k: m.k, rank: None, at, calls });
            }
            return Ok(out);
        }
        Err(last)
    }

    /// `p`, interior along a side, from the first and the last positions
    /// of that side.
    fn merge(&mut self, p: Position) -> Result<Vec<Member>, Option<Refusal>> {
        let mut last = None;
        for side in self.layout.sides() {
            if p.pos[side] != Pos::Interior {
                continue;
            }
            let (mut a, mut b) = (p, p);
            a.pos[side] = Pos::First;
            b.pos[side] = Pos::Last;
            let ends = self.make(a).cloned().and_then(|x| self.make(b).map(|y| (x, y.clone())));
            let (first, lasts) = match ends {
                Ok(e) => e,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let mut out = Vec::new();
            for f in &first {
                let same = |l: &&Member| l.k == f.k && (0..3).all(|i| i == side || l.at[i] == f.at[i]);
                let Some(l) = lasts.iter().find(same) else { continue };
                match self.merge_pair(f, l, side, p) {
                    Ok(calls) => {
                        let mut at = f.at;
                        at[side] = 1;
                        out.push(Member { k: f.k, rank: None, at, calls });
                    }
                    Err(e) => {
                        last = Some(e);
                        out.clear();
                        break;
                    }
                }
            }
            if !out.is_empty() {
                return Ok(out);
            }
        }
        Err(last)
    }

    /// The calls of an interior rank along `side` from those of the first
    /// (`f`) and the last (`l`) rank there.
    fn merge_pair(&self, f: &Member, l: &Member, side: usize, p: Position) -> Result<Calls, Refusal> {
        let k = f.k;
        let split = |m: &Member, dir: i64| -> Result<(Calls, Vec<Calls>), Refusal> {
            // The shared calls, and before each (and after the last) the
            // rank's own calls along the side.
            let (mut shared, mut own) = (Vec::new(), vec![Vec::new()]);
            for &(r, i) in &m.calls {
                if self.along(k, r, i, side, dir) {
                    self.blocking(k, r, i, p)?;
                    own.last_mut().expect("one per gap").push((r, i));
                } else {
                    shared.push((r, i));
                    own.push(Vec::new());
                }
            }
            Ok((shared, own))
        };
        let (fs, fo) = split(f, 1)?;
        let (ls, lo) = split(l, -1)?;
        let key = |&(r, i): &(u32, u32)| {
            let (rec, site) = &self.samples[k].ranks[r as usize].2[i as usize];
            (rec.op, site.clone())
        };
        if let Some(at) = (0..fs.len().max(ls.len())).find(|&j| fs.get(j).map(key) != ls.get(j).map(key)) {
            let (r, i) = fs.get(at).or(fs.last()).copied().unwrap_or(f.calls[0]);
            return Err(Refusal {
                call: (k, r, i),
                why: format!(
                    "the first and the last ranks along side {side} at {} ranks make other calls than those to their neighbours along it, so the calls of {p} are unknown{}",
                    self.samples[k].n(),
                    self.decides(p)
                ),
            });
        }
        let mut out = Vec::with_capacity(f.calls.len() + lo.iter().map(Vec::len).sum::<usize>());
        for (j, (a, b)) in fo.iter().zip(&lo).enumerate() {
            if !a.is_empty() && !b.is_empty() {
                let (r, i) = a[0];
                let (br, bi) = b[0];
                let other = self.samples[k].ranks[br as usize].2[bi as usize].0.op.mpi_name();
                return Err(Refusal {
                    call: (k, r, i),
                    why: format!(
                        "whether a rank at {p} makes it before or after its {other} with its neighbour the other way along side {side} is not in the traces{}",
                        self.decides(p)
                    ),
                });
            }
            out.extend(a.iter().chain(b));
            if let Some(&c) = fs.get(j) {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Whether call `i` of traced rank `r` of sample `k` goes to a
    /// neighbour `dir` (±1) along `side`.
    fn along(&self, k: usize, r: u32, i: u32, side: usize, dir: i64) -> bool {
        let n = self.samples[k].n();
        let rec = &self.samples[k].ranks[r as usize].2[i as usize].0;
        p2p_peers(&rec.params).into_iter().flatten().any(|q| q >= 0 && (q as u32) < n && self.layout.step(r, q as u32, n)[side] == dir)
    }

    /// A refusal unless call `i` of rank `r` of sample `k` is blocking.
    fn blocking(&self, k: usize, r: u32, i: u32, p: Position) -> Result<(), Refusal> {
        match self.samples[k].ranks[r as usize].2[i as usize].0.params {
            Params::P2p { request, .. } if request != 0 => Err(Refusal {
                call: (k, r, i),
                why: format!(
                    "it is nonblocking and skipped at the grid's boundary, so the requests of a rank at {p} are unknown{}",
                    self.decides(p)
                ),
            }),
            _ => Ok(()),
        }
    }

    /// A refusal for a position no traced count has and none is made from.
    fn missing(&self, p: Position) -> Refusal {
        Refusal {
            call: (self.samples.len() - 1, 0, 0),
            why: format!("no traced rank is at {p} and the traced positions do not make it{}", self.decides(p)),
        }
    }

    /// "; a trace at N ranks would decide", N the smallest count with a
    /// rank at `p`.
    fn decides(&self, p: Position) -> String {
        (1..=1024u32)
            .find(|&n| (0..n).any(|r| self.layout.position(r, n) == p))
            .map_or(String::new(), |n| format!("; a trace at {n} ranks, which has a rank there, would decide"))
    }
}

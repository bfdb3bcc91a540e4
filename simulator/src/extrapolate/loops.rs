//! Loops whose trip count changes with the rank count: a butterfly sum
//! over a row of the process grid takes log2 of the row's width
//! exchanges (NPB CG's reductions), so the ranks of 2, 4 and 8 call in
//! sequences of different lengths and no rank rule classes them.
//!
//! The traces are folded as ScalaTrace folds loops into regular section
//! descriptors (Noeth, Ratn, Mueller, Schulz and de Supinski, "ScalaTrace:
//! Scalable Compression and Replay of Communication Traces for
//! High-Performance Computing", JPDC 2009, §3), and the trip count becomes
//! one more parameter with a law of N, as ScalaExtrap extrapolates loop
//! iteration counts (Wu & Mueller, PPoPP 2011, §4):
//!
//! - **Shapes.** Two ranks call alike when their sequences of (operation,
//!   call site) are the same once every run of a repeated body is cut to
//!   one copy, innermost first (`collapse`): a loop's trip count does
//!   not enter the shape.
//! - **Runs of the template.** The largest traced count's rank of a class
//!   gives the class's calls. Its runs are its innermost tandem repeats
//!   (`innermost_runs`): the smallest body that repeats at each place,
//!   never overlapping a run found with a smaller body.
//! - **Matching.** Every other rank of the class is read against the
//!   template, each run taking as many copies of its body as follow
//!   (`match_runs`, at least one): each call of the rank gets the
//!   template call it is (a run's copy t, or its last copy beyond the
//!   template's count) and its iteration.
//! - **Trip counts** are fitted per run ([`CountLaw`]): the same at every
//!   rank of a class at one count, and exactly a constant, a·log2 X + b
//!   or a·X + b of N or a side of the 2-D grid, simplest first.

use std::collections::HashMap;

use super::fit::Var;
use super::grid::Member;
use super::rules::Iter;
use super::{class_rules, irregular, members_of, ClassRule, ExtrapolateError, Sample};
use crate::trace::record::Op;
use crate::trace::CallSite;

/// A run of a repeated body in the template rank's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    /// Index of the run's first call.
    pub start: u32,
    /// Calls in its body.
    pub period: u32,
    /// Copies of the body in the template.
    pub count: u32,
}

/// Longest loop body, in calls, the folding looks for.
pub(super) const MAX_PERIOD: usize = 512;

/// The innermost runs of `seq` (token per call), in call order: for each
/// body length p from 1 to [`MAX_PERIOD`], the maximal repeats of a body
/// of p tokens, at least two copies, that overlap no run found before.
pub(super) fn innermost_runs(seq: &[u32]) -> Vec<Run> {
    let n = seq.len();
    let mut covered = vec![false; n];
    let mut runs = Vec::new();
    for p in 1..=MAX_PERIOD.min(n / 2) {
        let mut i = 0;
        while i + 2 * p <= n {
            let copy = |c: usize| {
                let at = i + c * p;
                at + p <= n && !covered[at..at + p].contains(&true) && seq[at..at + p] == seq[i..i + p]
            };
            if seq[i] != seq[i + p] || !copy(0) || !copy(1) {
                i += 1;
                continue;
            }
            let mut c = 2;
            while copy(c) {
                c += 1;
            }
            covered[i..i + c * p].fill(true);
            runs.push(Run { start: i as u32, period: p as u32, count: c as u32 });
            i += c * p;
        }
    }
    runs.sort_unstable_by_key(|r| r.start);
    runs
}

/// `seq` with every run cut to one copy of its body, innermost runs
/// first, until no run is left: the shape of a rank whatever its loops'
/// trip counts.
pub(super) fn collapse(seq: &[u32]) -> Vec<u32> {
    let mut s = seq.to_vec();
    loop {
        let runs = innermost_runs(&s);
        if runs.is_empty() {
            return s;
        }
        let mut out = Vec::with_capacity(s.len());
        let mut at = 0;
        for r in runs {
            let (start, p) = (r.start as usize, r.period as usize);
            out.extend_from_slice(&s[at..start + p]);
            at = start + p * r.count as usize;
        }
        out.extend_from_slice(&s[at..]);
        s = out;
    }
}

/// One call of a rank read against the template: the template call it is
/// and where it is in its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Placed {
    /// Index of the template call.
    pub slot: u32,
    /// Its iteration in the run (0 outside runs).
    pub t: u32,
    /// Index of its run in the template's runs, `u32::MAX` outside runs.
    pub run: u32,
}

/// `seq` (a rank's tokens) read against the template's tokens and runs:
/// per call its [`Placed`], and per run its copies in `seq`. `Err(i)`:
/// the index of the first call of `seq` the template does not have there.
pub(super) fn match_runs(template: &[u32], runs: &[Run], seq: &[u32]) -> Result<(Vec<Placed>, Vec<u32>), usize> {
    let mut placed = Vec::with_capacity(seq.len());
    let mut counts = Vec::with_capacity(runs.len());
    let (mut ti, mut si) = (0usize, 0usize);
    let mut next = runs.iter().enumerate().peekable();
    while ti < template.len() {
        if let Some(&(ri, run)) = next.peek().filter(|(_, r)| r.start as usize == ti) {
            next.next();
            let (p, kt) = (run.period as usize, run.count as usize);
            let body = &template[ti..ti + p];
            let mut c = 0;
            while seq.get(si..si + p) == Some(body) {
                let copy = c.min(kt - 1);
                placed.extend((0..p).map(|j| Placed { slot: (ti + copy * p + j) as u32, t: c as u32, run: ri as u32 }));
                si += p;
                c += 1;
            }
            if c == 0 {
                return Err(si);
            }
            counts.push(c as u32);
            ti += p * kt;
        } else {
            if seq.get(si) != Some(&template[ti]) {
                return Err(si);
            }
            placed.push(Placed { slot: ti as u32, t: 0, run: u32::MAX });
            ti += 1;
            si += 1;
        }
    }
    if si < seq.len() {
        return Err(si);
    }
    Ok((placed, counts))
}

/// A class's runs whose trip counts change with N.
#[derive(Debug, Clone)]
pub(super) struct Loops {
    /// The template's runs, in call order.
    pub runs: Vec<Run>,
    /// Each run's trip count as a law of N.
    pub laws: Vec<CountLaw>,
}

/// How a class's members' calls fold into its [`Loops`].
#[derive(Debug)]
pub(super) struct Folding {
    /// The runs and their laws.
    pub loops: Loops,
    /// Per template call: every call of the class's members read as it
    /// ([`match_runs`]): (index of the member, index of the call in its
    /// records, its iteration).
    pub at: Vec<Vec<(u32, u32, Iter)>>,
}

impl Folding {
    /// The template calls whose observations make the rules of call `i`:
    /// the calls at the same place of every copy of its run's body, or `i`
    /// alone outside runs.
    pub fn group(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        // Runs are in call order and do not overlap: the last one starting
        // at or before i holds i if any does.
        let before = self.loops.runs.partition_point(|r| r.start as usize <= i);
        let run = before.checked_sub(1).map(|k| &self.loops.runs[k]).filter(|r| i < (r.start + r.period * r.count) as usize);
        let (first, step, copies) = match run {
            Some(r) => (r.start as usize + (i - r.start as usize) % r.period as usize, r.period as usize, r.count as usize),
            None => (i, 1, 1),
        };
        (0..copies).map(move |c| first + c * step)
    }
}

impl Loops {
    /// The calls of a rank at `n` ranks: per call, the template call it is,
    /// its iteration, and how many copies past the template's last it is
    /// (0 within them), each run taking its law's trip count at `n`.
    pub(super) fn plan(&self, calls: usize, n: u32) -> Vec<Step> {
        let mut out = Vec::with_capacity(calls);
        let mut i = 0;
        let mut runs = self.runs.iter().zip(&self.laws).peekable();
        while i < calls {
            match runs.peek() {
                Some((r, law)) if r.start as usize == i => {
                    let (p, kt, k) = (r.period, r.count, law.eval(n));
                    for t in 0..k {
                        let copy = t.min(kt - 1);
                        out.extend((0..p).map(|j| Step { slot: r.start + copy * p + j, it: Iter { t, k }, rep: t - copy }));
                    }
                    i += (p * kt) as usize;
                    runs.next();
                }
                _ => {
                    out.push(Step { slot: i as u32, it: Iter::ONCE, rep: 0 });
                    i += 1;
                }
            }
        }
        out
    }
}

/// One call of a rank at a target count ([`Folding::plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Step {
    /// The template call it is.
    pub slot: u32,
    /// Its iteration.
    pub it: Iter,
    /// Copies past the template's last (0 within them): its blocks are
    /// drawn apart from the last copy's.
    pub rep: u32,
}

/// A class made by [`classes`]: its rule, its members (calls aligned to
/// the template's) and its folding.
pub(super) type FoldedClass = (ClassRule, Vec<Member>, Folding);

/// The classes of `samples` when the ranks' sequences differ only in
/// loops' trip counts: ranks classed by their collapsed shapes
/// ([`collapse`]), each class's members read against its template
/// ([`match_runs`]), each run's trip count a [`CountLaw`]. `None` when
/// collapsing does not make the rank rules class the ranks, or when the
/// ranks of one class at one count loop differently (behaviour by
/// position, for module `grid`); `Some(Err)` naming the call whose loop
/// no law describes.
pub(super) fn classes(samples: &[Sample]) -> Option<Result<Vec<FoldedClass>, ExtrapolateError>> {
    let mut ids: HashMap<(Op, &CallSite), u32> = HashMap::new();
    let tokens: Vec<Vec<Vec<u32>>> = samples
        .iter()
        .map(|s| {
            s.ranks
                .iter()
                .map(|(_, _, recs)| {
                    recs.iter()
                        .map(|(r, site)| {
                            let next = ids.len() as u32;
                            *ids.entry((r.op, site)).or_insert(next)
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let mut keys: HashMap<Vec<u32>, usize> = HashMap::new();
    let key_of: Vec<Vec<usize>> = tokens
        .iter()
        .map(|ranks| {
            ranks
                .iter()
                .map(|t| {
                    let next = keys.len();
                    *keys.entry(collapse(t)).or_insert(next)
                })
                .collect()
        })
        .collect();
    let rules = class_rules(samples, &key_of, keys.len()).ok()?;
    let big = samples.len() - 1;
    let mut out = Vec::new();
    for (key, rule) in rules {
        let traced = members_of(samples, &key_of, key);
        let tm = traced.iter().find(|m| m.k == big).unwrap_or(traced.last()?);
        let tr = tm.rank? as usize;
        let template = &tokens[tm.k][tr];
        let runs = innermost_runs(template);
        let (mut at, mut members) = (vec![Vec::new(); template.len()], Vec::new());
        let mut counts: Vec<Vec<(u32, u32)>> = vec![Vec::new(); runs.len()];
        for (o, m) in traced.iter().enumerate() {
            let r = m.rank? as usize;
            let (placed, copies) = match match_runs(template, &runs, &tokens[m.k][r]) {
                Ok(x) => x,
                Err(i) => {
                    let (rec, site) = samples[m.k].ranks[r].2.get(i).or(samples[m.k].ranks[r].2.last())?;
                    let why = format!(
                        "rank {r} of {} calls here where rank {tr} of {} makes another call, and no loop of the latter's makes the difference",
                        samples[m.k].n(),
                        samples[tm.k].n()
                    );
                    return Some(Err(irregular(rec, site, why)));
                }
            };
            for (run, &c) in copies.iter().enumerate() {
                // Ranks of one class at one count that loop differently
                // behave by position.
                if counts[run].iter().any(|&(k, c0)| k == m.k as u32 && c0 != c) {
                    return None;
                }
                counts[run].push((m.k as u32, c));
            }
            // The member's call at each template call, for its blocks:
            // a copy the member lacks takes its last copy's.
            let mut calls = vec![u32::MAX; template.len()];
            for (idx, p) in placed.iter().enumerate() {
                let k = if p.run == u32::MAX { 1 } else { copies[p.run as usize] };
                at[p.slot as usize].push((o as u32, idx as u32, Iter { t: p.t, k }));
                let copy = if p.run == u32::MAX { 0 } else { (p.slot - runs[p.run as usize].start) / runs[p.run as usize].period };
                if calls[p.slot as usize] == u32::MAX && p.t == copy {
                    calls[p.slot as usize] = idx as u32;
                }
            }
            for (run, r) in runs.iter().enumerate() {
                let have = copies[run].min(r.count);
                for copy in have..r.count {
                    for j in 0..r.period {
                        let (s, last) = ((r.start + copy * r.period + j) as usize, (r.start + (have - 1) * r.period + j) as usize);
                        calls[s] = calls[last];
                    }
                }
            }
            members.push(Member::aligned(m.k, r as u32, calls));
        }
        let mut laws = Vec::with_capacity(runs.len());
        for (run, seen) in runs.iter().zip(&counts) {
            let mut pts: Vec<(u32, u32)> = seen.iter().map(|&(k, c)| (samples[k as usize].n(), c)).collect();
            pts.dedup();
            match CountLaw::fit(&pts) {
                Some(law) => laws.push(law),
                None => {
                    let (rec, site) = &samples[tm.k].ranks[tr].2[run.start as usize];
                    let seen: Vec<String> = pts.iter().map(|(n, c)| format!("{c} at {n} ranks")).collect();
                    let why = format!(
                        "it opens a loop that runs {}, which is no constant, a·log2 X + b or a·X + b of N or a side of the 2-D grid",
                        seen.join(", ")
                    );
                    return Some(Err(irregular(rec, site, why)));
                }
            }
        }
        out.push((rule, members, Folding { loops: Loops { runs, laws }, at }));
    }
    Some(Ok(out))
}

/// A loop's trip count as a function of N: `a·f(X(N)) + b`, with f the
/// identity or log2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CountLaw {
    /// Coefficient.
    pub a: f64,
    /// Offset.
    pub b: f64,
    /// The variable X.
    pub var: Var,
    /// Whether f is log2.
    pub log: bool,
}

impl CountLaw {
    /// The trip count at `n` ranks (never below 0).
    pub fn eval(&self, n: u32) -> u32 {
        let x = self.var.at(n);
        let y = self.a * if self.log { x.log2() } else { x } + self.b;
        y.round().max(0.0) as u32
    }

    /// The simplest law that gives every traced count's trip count
    /// exactly (`pts`: rank count, trip count; one entry per count), in
    /// the order: a constant; a·log2 X + b for X the larger side of the
    /// 2-D grid, the smaller, N; a·X + b for X = N, the larger side, the
    /// smaller. A count that grows by one per doubling is thus taken for
    /// a logarithm before a linear law. `None` when none fits, or when a
    /// non-constant law rests on one value of X.
    pub fn fit(pts: &[(u32, u32)]) -> Option<CountLaw> {
        let first = pts.first()?;
        if pts.iter().all(|p| p.1 == first.1) {
            return Some(CountLaw { a: 0.0, b: first.1 as f64, var: Var::Ranks, log: false });
        }
        let tries = [(Var::Dim0, true), (Var::Dim1, true), (Var::Ranks, true), (Var::Ranks, false), (Var::Dim0, false), (Var::Dim1, false)];
        tries.into_iter().find_map(|(var, log)| {
            let f = |n: u32| if log { var.at(n).log2() } else { var.at(n) };
            let (x0, y0) = (f(first.0), first.1 as f64);
            let &(n1, y1) = pts.iter().find(|p| f(p.0) != x0)?;
            let a = (y1 as f64 - y0) / (f(n1) - x0);
            let law = CountLaw { a, b: y0 - a * x0, var, log };
            pts.iter().all(|&(n, k)| (law.a * f(n) + law.b - k as f64).abs() < 1e-9).then_some(law)
        })
    }
}

impl std::fmt::Display for CountLaw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = match self.var {
            Var::Ranks => "N",
            Var::Dim0 => "dims0(N)",
            Var::Dim1 => "dims1(N)",
        };
        if self.a == 0.0 {
            return write!(f, "{}", self.b);
        }
        let coef = if self.a == 1.0 { String::new() } else { format!("{}·", self.a) };
        let term = if self.log { format!("log2 {x}") } else { x.to_string() };
        match self.b {
            0.0 => write!(f, "{coef}{term}"),
            b if b < 0.0 => write!(f, "{coef}{term} − {}", -b),
            b => write!(f, "{coef}{term} + {b}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CG-like step: A, a butterfly of (I S W) k times, B, a second
    /// butterfly of (J T X), C; `iters` times.
    fn cg(k: usize, iters: usize) -> Vec<u32> {
        let mut v = Vec::new();
        for _ in 0..iters {
            v.push(0);
            for _ in 0..k {
                v.extend([1, 2, 3]);
            }
            v.push(4);
            for _ in 0..k {
                v.extend([5, 6, 7]);
            }
            v.push(8);
        }
        v
    }

    #[test]
    fn loops_fold_innermost_first_and_trip_counts_leave_the_shape() {
        let t = cg(3, 2);
        let runs = innermost_runs(&t);
        assert_eq!(runs, [(1, 3, 3), (11, 3, 3), (22, 3, 3), (32, 3, 3)].map(|(start, period, count)| Run { start, period, count }));
        assert_eq!(collapse(&t), collapse(&cg(1, 5)));
        assert_eq!(collapse(&t), vec![0, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_ne!(collapse(&t), collapse(&[0, 1, 2, 3, 8]));
    }

    #[test]
    fn a_rank_with_fewer_or_more_copies_matches_the_template_call_by_call() {
        let t = cg(2, 2);
        let runs = innermost_runs(&t);
        let (placed, counts) = match_runs(&t, &runs, &cg(1, 2)).unwrap();
        assert_eq!(counts, [1, 1, 1, 1]);
        assert_eq!(placed.len(), cg(1, 2).len());
        assert_eq!(placed[1], Placed { slot: 1, t: 0, run: 0 });
        assert_eq!(placed[4], Placed { slot: 7, t: 0, run: u32::MAX });
        assert_eq!(placed[5], Placed { slot: 8, t: 0, run: 1 });
        // Beyond the template's copies, the last copy's calls.
        let (placed, counts) = match_runs(&t, &runs, &cg(3, 2)).unwrap();
        assert_eq!(counts, [3, 3, 3, 3]);
        assert_eq!(placed[7], Placed { slot: 4, t: 2, run: 0 });
        assert_eq!(placed[10], Placed { slot: 7, t: 0, run: u32::MAX });
        assert_eq!(match_runs(&t, &runs, &[0, 4]), Err(1));
        assert_eq!(match_runs(&t, &runs, &[t.clone(), vec![9]].concat()), Err(t.len()));
    }

    #[test]
    fn trip_counts_follow_the_grid_side_s_logarithm_or_refuse() {
        // log2 of the larger side of MPI_Dims_create(N, 2): 1, 1, 2 at 2, 4, 8.
        let law = CountLaw::fit(&[(2, 1), (4, 1), (8, 2)]).unwrap();
        assert_eq!((law.var, law.log), (Var::Dim0, true));
        assert_eq!(law.to_string(), "log2 dims0(N)");
        assert_eq!([16, 32, 64, 256, 1 << 20].map(|n| law.eval(n)), [2, 3, 3, 4, 10]);
        let law = CountLaw::fit(&[(2, 5), (4, 5)]).unwrap();
        assert_eq!(law.eval(1024), 5);
        // A pipeline over N − 1 partners.
        let law = CountLaw::fit(&[(2, 1), (4, 3), (8, 7)]).unwrap();
        assert_eq!((law.var, law.log, law.eval(64)), (Var::Ranks, false, 63));
        assert_eq!(law.to_string(), "N − 1");
        assert_eq!(CountLaw::fit(&[(2, 1), (4, 7), (8, 2)]), None);
    }
}

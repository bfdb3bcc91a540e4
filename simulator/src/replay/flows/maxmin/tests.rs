//! The solver against the plain progressive filling (every level
//! recomputes every link from all open flows), kept here as the reference.

use super::{Solver, TOL};
use crate::rng::Rng;

/// A flow for the reference: its (link, weight) pairs and its rate bound.
#[derive(Debug, Clone)]
pub(in crate::replay::flows) struct Flow {
    pub(in crate::replay::flows) links: Vec<(u32, f64)>,
    pub(in crate::replay::flows) bound: f64,
}

/// The plain algorithm over all `flows` at once, on links of capacity
/// `base`: returns the rates, in start order, and whether every link
/// fits the flows at their bounds.
pub(in crate::replay::flows) fn reference(base: &[f64], flows: &[Flow]) -> (Vec<f64>, bool) {
    let n = flows.len();
    let mut rate = vec![0.0; n];
    let mut load = vec![0.0; base.len()];
    let mut cap = vec![0.0; base.len()];
    let mut seen = vec![false; base.len()];
    let mut links = Vec::new();
    for f in flows {
        for &(l, w) in &f.links {
            let li = l as usize;
            if !seen[li] {
                seen[li] = true;
                cap[li] = base[li];
                links.push(li);
            }
            load[li] += w * f.bound;
        }
    }
    if links.iter().all(|&l| load[l] <= base[l] * (1.0 + TOL)) {
        return (flows.iter().map(|f| f.bound).collect(), true);
    }
    let mut open: Vec<usize> = (0..n).collect();
    let mut tight = vec![false; base.len()];
    while !open.is_empty() {
        for &l in &links {
            load[l] = 0.0;
        }
        for &i in &open {
            for &(l, w) in &flows[i].links {
                load[l as usize] += w;
            }
        }
        let mut level = open.iter().map(|&i| flows[i].bound).fold(f64::INFINITY, f64::min);
        for &l in &links {
            if load[l] > 0.0 {
                level = level.min(cap[l].max(0.0) / load[l]);
            }
        }
        for &l in &links {
            tight[l] = load[l] > 0.0 && cap[l] / load[l] <= level * (1.0 + TOL);
        }
        let mut still = Vec::new();
        for &i in &open {
            let f = &flows[i];
            if f.bound <= level * (1.0 + TOL) || f.links.iter().any(|&(l, w)| w > 0.0 && tight[l as usize]) {
                rate[i] = level;
            } else {
                still.push(i);
            }
        }
        for &i in &open {
            if rate[i] > 0.0 {
                for &(l, w) in &flows[i].links {
                    cap[l as usize] -= w * level;
                }
            }
        }
        if still.len() == open.len() {
            break;
        }
        open = still;
    }
    (rate, false)
}

fn flow(links: Vec<(u32, f64)>, bound: f64) -> Flow {
    Flow { links, bound }
}

/// A random flow set on `m` links: weights and bounds mostly from small
/// sets (ties between levels are the delicate case), some arbitrary.
/// With `sparse`, many links and flows on neighbouring links, so that
/// the flows form several components.
fn random_case(rng: &mut Rng, sparse: bool) -> (Vec<f64>, Vec<Flow>) {
    let unit = |rng: &mut Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let m = if sparse { 20 + rng.below(200) } else { 1 + rng.below(24) };
    let caps = [1e6, 1.25e9, 2.5e9, 1e9 / 3.0];
    let base: Vec<f64> = (0..m).map(|_| if rng.below(4) == 0 { 1e6 + unit(rng) * 1e9 } else { caps[rng.below(caps.len())] }).collect();
    let bounds = [1e6, 1.25e9, 0.94e9, 1e9 / 7.0];
    let weights = [1.0, 0.05, 1.25e9 / 0.94e9, 0.05 * 1.25e9 / 0.94e9, 0.0];
    // Few flows on many links often fit at their bounds.
    let most = if rng.below(3) == 0 { 3 } else { 40 };
    let n = 1 + rng.below(most);
    let flows = (0..n)
        .map(|_| {
            let k = 1 + rng.below(if sparse { 3 } else { 6 });
            let near = rng.below(m);
            let links = (0..k)
                .map(|_| {
                    let w = if rng.below(5) == 0 { unit(rng) * 2.0 } else { weights[rng.below(weights.len())] };
                    let l = if sparse { (near + rng.below(4)) % m } else { rng.below(m) };
                    (l as u32, w)
                })
                .collect();
            let bound = if rng.below(5) == 0 { 1e5 + unit(rng) * 2e9 } else { bounds[rng.below(bounds.len())] };
            flow(links, bound)
        })
        .collect();
    (base, flows)
}

/// The solver's rates of `flows` (in start order), added to a fresh solver.
fn solve(base: &[f64], flows: &[Flow]) -> Vec<f64> {
    solve_with(base, flows, super::SMALL_FILL)
}

/// [`solve`] with fillings of up to `small` links by scans, larger ones
/// by heaps.
fn solve_with(base: &[f64], flows: &[Flow], small: usize) -> Vec<f64> {
    let mut s = Solver::new(base.len());
    s.small = small;
    for (k, f) in flows.iter().enumerate() {
        s.add(k as u32, k as u64, &f.links, f.bound);
    }
    let mut changed = Vec::new();
    s.solve(base, &mut changed);
    changed.sort_unstable();
    assert_eq!(changed, (0..flows.len() as u32).collect::<Vec<_>>(), "every new flow is solved");
    (0..flows.len()).map(|k| s.rate(k as u32)).collect()
}

/// The components of `flows` (joined by shared links), each a list of
/// flow indices in start order.
fn components(m: usize, flows: &[Flow]) -> Vec<Vec<usize>> {
    let mut owner: Vec<usize> = (0..flows.len()).collect();
    fn find(o: &mut [usize], mut i: usize) -> usize {
        while o[i] != i {
            o[i] = o[o[i]];
            i = o[i];
        }
        i
    }
    let mut first_on: Vec<Option<usize>> = vec![None; m];
    for (i, f) in flows.iter().enumerate() {
        for &(l, _) in &f.links {
            match first_on[l as usize] {
                None => first_on[l as usize] = Some(i),
                Some(j) => {
                    let (a, b) = (find(&mut owner, i), find(&mut owner, j));
                    owner[a] = b;
                }
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for i in 0..flows.len() {
        groups.entry(find(&mut owner, i)).or_default().push(i);
    }
    groups.into_values().collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs()
}

/// A fresh solver's rates are the plain algorithm's over all flows at
/// once to 1e-9 relative, and to the bit when the flows form one
/// component.
#[test]
fn rates_are_the_reference_ones() {
    let mut rng = Rng::new(11);
    let (mut fitting, mut filled, mut split) = (0, 0, 0);
    for case in 0..20_000 {
        let (base, flows) = random_case(&mut rng, case % 2 == 1);
        let got = solve(&base, &flows);
        let (want, fits) = reference(&base, &flows);
        if components(base.len(), &flows).len() == 1 {
            assert_eq!(bits(&got), bits(&want), "case {case}: {base:?} {flows:?}");
        } else {
            split += 1;
        }
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(close(*g, *w), "case {case} flow {k}: {g} vs {w}");
        }
        if fits {
            fitting += 1;
        } else {
            filled += 1;
        }
    }
    assert!(fitting > 1000 && filled > 1000 && split > 1000, "{fitting} fitting, {filled} filled, {split} split");
}

/// Flows come and go one or a few at a time, as in a replay; after each
/// change only the flows it can move are solved (or, when the set still
/// grows after `rounds` fillings, their components), and every present flow's
/// rate is the plain algorithm's over all present flows, to 1e-9
/// relative. Links left empty give back their slots.
fn arrivals_and_departures(rounds: usize, seed: u64) -> (u64, u64, u64) {
    let mut rng = Rng::new(seed);
    let mut changed = Vec::new();
    let (mut local, mut whole, mut fitted) = (0, 0, 0);
    for run in 0..600 {
        let (base, pool) = random_case(&mut rng, run % 2 == 1);
        let mut s = Solver::new(base.len());
        s.rounds = rounds;
        // Present flows: (start order, index in `pool`, solver id).
        let mut present: Vec<(u64, usize, u32)> = Vec::new();
        let mut free_ids: Vec<u32> = Vec::new();
        let mut next_id = 0;
        let mut seq = 0;
        let mut used = std::collections::HashSet::new();
        for step in 0..60 {
            for _ in 0..1 + rng.below(3) {
                if !present.is_empty() && rng.below(2) == 0 {
                    let (_, _, id) = present.remove(rng.below(present.len()));
                    s.remove(id);
                    free_ids.push(id);
                } else {
                    let k = rng.below(pool.len());
                    // Mostly in start order, sometimes an earlier start
                    // (a flow whose latency phase was shorter).
                    seq += 8;
                    let back = if rng.below(4) == 0 { 1 + 8 * rng.below(3) as u64 } else { 0 };
                    let at = if back < seq && !used.contains(&(seq - back)) { seq - back } else { seq };
                    used.insert(at);
                    let id = free_ids.pop().unwrap_or_else(|| {
                        next_id += 1;
                        next_id - 1
                    });
                    s.add(id, at, &pool[k].links, pool[k].bound);
                    let pos = present.partition_point(|p| p.0 <= at);
                    present.insert(pos, (at, k, id));
                }
            }
            changed.clear();
            s.solve(&base, &mut changed);
            let flows: Vec<Flow> = present.iter().map(|p| pool[p.1].clone()).collect();
            let (want, _) = reference(&base, &flows);
            for (p, w) in present.iter().zip(&want) {
                let got = s.rate(p.2);
                assert!(close(got, *w), "run {run} step {step}: {got} vs {w}");
            }
            let crossed: std::collections::HashSet<u32> = flows.iter().flat_map(|f| f.links.iter().map(|l| l.0)).collect();
            let held = s.slots.len() - s.free_slots.len();
            assert_eq!(held, crossed.len(), "run {run} step {step}: slots held");
        }
        local += s.solved.0;
        whole += s.solved.1;
        fitted += s.fitted;
    }
    (local, whole, fitted)
}

#[test]
fn local_solving_gives_the_rates_of_a_full_filling() {
    let (local, whole, fitted) = arrivals_and_departures(super::local::ROUNDS, 3);
    assert!(local > 30_000, "{local} solved locally, {whole} by components");
    // Some local sets fit at their bounds and take them unfilled.
    assert!(fitted > 4_000, "{fitted} of {local} local sets fit at their bounds");
}

#[test]
fn component_solving_gives_the_rates_of_a_full_filling() {
    // No local filling: every change fills its whole components.
    let (local, whole, _) = arrivals_and_departures(0, 4);
    assert!(whole > 30_000, "{local} solved locally, {whole} by components");
}

/// Fillings by scans and by heaps give the same rates to the bit.
#[test]
fn scanning_and_heap_fillings_agree_to_the_bit() {
    let mut rng = Rng::new(12);
    for case in 0..10_000 {
        let (base, flows) = random_case(&mut rng, case % 2 == 1);
        let scan = solve_with(&base, &flows, usize::MAX);
        let heap = solve_with(&base, &flows, 0);
        assert_eq!(bits(&scan), bits(&heap), "case {case}: {base:?} {flows:?}");
    }
}

#[test]
fn one_saturated_link_splits_by_weight_and_frees_the_rest() {
    // Links 0 and 1 of 10 bytes/s; flows a, b on link 0, c on links 0 and 1
    // with weight 2 on link 1 and bound 100; d on link 1 alone.
    let base = [10.0, 10.0];
    let flows =
        vec![flow(vec![(0, 1.0)], 100.0), flow(vec![(0, 1.0)], 100.0), flow(vec![(0, 1.0), (1, 2.0)], 100.0), flow(vec![(1, 1.0)], 100.0)];
    let rates = solve(&base, &flows);
    // Link 1 saturates first (10 / 3), fixing c and d; a and b share the
    // 10 - 10/3 left on link 0.
    let third = 10.0 / 3.0;
    assert_eq!(rates[2..], [third, third]);
    assert!(rates[..2].iter().all(|r| (r - (10.0 - third) / 2.0).abs() < 1e-12), "{rates:?}");
}

/// A flow joining one of two components leaves the other's flows out
/// of the filling.
#[test]
fn an_arrival_solves_only_its_component() {
    let base = [10.0; 4];
    let mut s = Solver::new(4);
    s.add(0, 0, &[(0, 1.0), (1, 0.5)], 100.0);
    s.add(1, 1, &[(1, 1.0)], 100.0);
    s.add(2, 2, &[(2, 1.0), (3, 1.0)], 100.0);
    let mut changed = Vec::new();
    s.solve(&base, &mut changed);
    assert_eq!(changed.len(), 3);
    changed.clear();
    s.add(3, 3, &[(3, 1.0)], 100.0);
    s.solve(&base, &mut changed);
    changed.sort_unstable();
    assert_eq!(changed, [2, 3]);
    assert_eq!((s.rate(2), s.rate(3)), (5.0, 5.0));
    assert_eq!((s.rate(0), s.rate(1)), (10.0 / 1.5, 10.0 / 1.5));
}

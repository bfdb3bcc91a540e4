//! The solver against the plain progressive filling (every level
//! recomputes every link from all open flows), kept here as the reference.

use super::super::{Done, Flow};
use super::{Solver, TOL};
use crate::fuzz::Rng;

/// The plain algorithm: returns the rates, in start order, and whether
/// every link fits the flows at their bounds.
fn reference(base: &[f64], flows: &[Flow]) -> (Vec<f64>, bool) {
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
    let done = Done { dst: 0, recv_slot: 0, recv_ready: 0.0, src: 0, send_slot: 0, start: 0.0 };
    Flow { links, bound, lat_end: 0.0, remaining: 1.0, rate: -1.0, done, seq: 0, id: 0 }
}

/// A random flow set on `m` links: weights and bounds mostly from small
/// sets (ties between levels are the delicate case), some arbitrary.
fn random_case(rng: &mut Rng) -> (Vec<f64>, Vec<Flow>) {
    let unit = |rng: &mut Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let m = 1 + rng.below(24);
    let caps = [1e6, 1.25e9, 2.5e9, 1e9 / 3.0];
    let base: Vec<f64> = (0..m).map(|_| if rng.below(4) == 0 { 1e6 + unit(rng) * 1e9 } else { caps[rng.below(caps.len())] }).collect();
    let bounds = [1e6, 1.25e9, 0.94e9, 1e9 / 7.0];
    let weights = [1.0, 0.05, 1.25e9 / 0.94e9, 0.05 * 1.25e9 / 0.94e9, 0.0];
    // Few flows on many links often fit at their bounds.
    let most = if rng.below(3) == 0 { 3 } else { 40 };
    let n = 1 + rng.below(most);
    let flows = (0..n)
        .map(|_| {
            let k = 1 + rng.below(6);
            let links = (0..k)
                .map(|_| {
                    let w = if rng.below(5) == 0 { unit(rng) * 2.0 } else { weights[rng.below(weights.len())] };
                    (rng.below(m) as u32, w)
                })
                .collect();
            let bound = if rng.below(5) == 0 { 1e5 + unit(rng) * 2e9 } else { bounds[rng.below(bounds.len())] };
            flow(links, bound)
        })
        .collect();
    (base, flows)
}

/// The solver's rates of `flows` (in start order) and its fit answer,
/// adding them to a fresh solver.
fn solve(base: &[f64], flows: &[Flow]) -> (Vec<f64>, bool) {
    let mut s = Solver::new(base.len());
    let ids: Vec<u32> = flows.iter().enumerate().map(|(k, f)| s.add(k as u64, &f.links, f.bound)).collect();
    let fits = s.share(base);
    (ids.iter().map(|&id| s.rate(id)).collect(), fits)
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn rates_are_the_reference_ones_to_the_bit() {
    let mut rng = Rng::new(11);
    let (mut fitting, mut filled) = (0, 0);
    for case in 0..20_000 {
        let (base, flows) = random_case(&mut rng);
        let (want, want_fits) = reference(&base, &flows);
        let (got, fits) = solve(&base, &flows);
        assert_eq!((bits(&got), fits), (bits(&want), want_fits), "case {case}: {base:?} {flows:?}");
        if fits {
            fitting += 1;
        } else {
            filled += 1;
        }
    }
    assert!(fitting > 1000 && filled > 1000, "{fitting} fitting, {filled} filled");
}

/// Flows come and go one or a few at a time, as in a replay, and the
/// solver is sometimes emptied and refilled; after each change its rates
/// are the reference's on the flows present.
#[test]
fn kept_sums_give_the_rates_of_a_full_recompute() {
    let mut rng = Rng::new(3);
    for run in 0..300 {
        let (base, pool) = random_case(&mut rng);
        let mut s = Solver::new(base.len());
        // Present flows: (start order, index in `pool`, solver id).
        let mut present: Vec<(u64, usize, u32)> = Vec::new();
        let mut seq = 0;
        let mut used = std::collections::HashSet::new();
        for step in 0..60 {
            for _ in 0..1 + rng.below(3) {
                if !present.is_empty() && rng.below(2) == 0 {
                    let (_, _, id) = present.remove(rng.below(present.len()));
                    s.remove(id);
                } else {
                    let k = rng.below(pool.len());
                    // Mostly in start order, sometimes an earlier start
                    // (a flow whose latency phase was shorter).
                    seq += 8;
                    let back = if rng.below(4) == 0 { 1 + 8 * rng.below(3) as u64 } else { 0 };
                    let at = if back < seq && !used.contains(&(seq - back)) { seq - back } else { seq };
                    used.insert(at);
                    let id = s.add(at, &pool[k].links, pool[k].bound);
                    let pos = present.partition_point(|p| p.0 <= at);
                    present.insert(pos, (at, k, id));
                }
            }
            // Sometimes emptied and filled again in start order.
            if rng.below(10) == 0 {
                s.clear();
                for p in &mut present {
                    p.2 = s.add(p.0, &pool[p.1].links, pool[p.1].bound);
                }
            }
            let flows: Vec<Flow> = present.iter().map(|p| pool[p.1].clone()).collect();
            let (want, want_fits) = reference(&base, &flows);
            let fits = s.share(&base);
            let got: Vec<f64> = present.iter().map(|p| s.rate(p.2)).collect();
            assert_eq!((bits(&got), fits), (bits(&want), want_fits), "run {run} step {step}");
        }
    }
}

#[test]
fn one_saturated_link_splits_by_weight_and_frees_the_rest() {
    // Links 0 and 1 of 10 bytes/s; flows a, b on link 0, c on links 0 and 1
    // with weight 2 on link 1 and bound 100; d on link 1 alone.
    let base = [10.0, 10.0];
    let flows =
        vec![flow(vec![(0, 1.0)], 100.0), flow(vec![(0, 1.0)], 100.0), flow(vec![(0, 1.0), (1, 2.0)], 100.0), flow(vec![(1, 1.0)], 100.0)];
    let (rates, fits) = solve(&base, &flows);
    // Link 1 saturates first (10 / 3), fixing c and d; a and b share the
    // 10 - 10/3 left on link 0.
    assert!(!fits);
    let third = 10.0 / 3.0;
    assert_eq!(rates[2..], [third, third]);
    assert!(rates[..2].iter().all(|r| (r - (10.0 - third) / 2.0).abs() < 1e-12), "{rates:?}");
}

/// Flows come and go after a filling; whenever the solver says a change
/// keeps the other flows' rates, the rates it keeps (and gives the new
/// flows) are the reference's on the flows present, to 1e-9 relative.
#[test]
fn kept_rates_are_those_of_a_new_filling() {
    let mut rng = Rng::new(5);
    let (mut kept, mut refused) = (0, 0);
    for run in 0..300 {
        let (base, pool) = random_case(&mut rng);
        let mut s = Solver::new(base.len());
        let mut present: Vec<(usize, u32)> = Vec::new();
        let mut seq = 0;
        let mut filled = false;
        for step in 0..60 {
            let mut gone = Vec::new();
            while !present.is_empty() && rng.below(2) == 0 {
                gone.push(present.remove(rng.below(present.len())).1);
            }
            let mut keep = filled && (gone.is_empty() || s.keeps_rates_without(&gone, &base));
            for &id in &gone {
                s.remove(id);
            }
            if keep {
                s.settle(&gone);
            }
            for _ in 0..rng.below(3) {
                let k = rng.below(pool.len());
                seq += 1;
                let id = s.add(seq, &pool[k].links, pool[k].bound);
                present.push((k, id));
                keep = keep && s.fit_alone(id, &base).is_some();
            }
            let flows: Vec<Flow> = present.iter().map(|p| pool[p.0].clone()).collect();
            let (want, _) = reference(&base, &flows);
            if keep {
                kept += 1;
                for (p, w) in present.iter().zip(&want) {
                    let got = s.rate(p.1);
                    assert!((got - w).abs() <= 1e-9 * w.abs(), "run {run} step {step}: kept {got}, reference {w}");
                }
            } else {
                refused += 1;
                filled = !s.share(&base);
                let got: Vec<f64> = present.iter().map(|p| s.rate(p.1)).collect();
                assert_eq!(bits(&got), bits(&want), "run {run} step {step}");
            }
        }
    }
    assert!(kept > 500 && refused > 500, "{kept} kept, {refused} refused");
}

//! The compute blocks a target rank takes from its class's ranks in the
//! largest traced run (the template members).
//!
//! A member's block at call i is split into three factors: the block the
//! members share at that call (their median, freed of its chance
//! deviation, which keeps a loop's warm-up iteration long for every
//! rank), the member's own level in the call's region (its blocks over
//! the shared ones, detours left out: imbalance that persists, such as a
//! larger share of the domain), and what is left, the transient part.
//! Target rank r keeps the level of its member (the traced rank r when
//! the class had it, else member r mod M) and draws each transient part
//! from the pool of the region's transient parts over all members and
//! calls, with a hash of (seed, r, the draw's index) as the random
//! source, so no per-rank state is kept.
//!
//! Why draw: a collective waits for the slowest of its ranks, and the
//! slowest of N independent transient delays grows with N (Hoefler,
//! Schneider and Lumsdaine, "Characterizing the Influence of System Noise
//! on Large-Scale Applications by Simulation", SC '10). Copying the M
//! members' blocks to N ranks would repeat M delays per call, and the wait
//! at N would stay that of M ranks.
//!
//! What is drawn is the program's variability, not the traced machine's
//! noise, which would otherwise grow into waiting at N as if the program
//! had it:
//!
//! - **Detours** (a preemption, an interrupt, an oversubscribed core) are
//!   the transient parts far outside the body of the region's
//!   distribution: more than [`DETOUR_SIGMAS`] robust standard deviations
//!   (1.4826 × the median absolute deviation) from the median. They are
//!   left out of the pool. A target machine's own noise is the replay's
//!   `--jitter` (a tracecollector trace), not the traced machine's.
//! - **Measurement noise** adds to the program's spread and differs from
//!   run to run, while the program's own spread is the same at every
//!   traced count: the quietest traced count bounds it. (Several traced
//!   runs of one count, merged block by block at their median before
//!   this, leave out more of it: the program's variability repeats from
//!   run to run, the machine's does not.) Each transient
//!   part of the largest run is moved towards the median until no
//!   quantile lies farther out than in any quieter run with enough parts
//!   (its quantile at the same level, widened by its sampling error): a
//!   monotone map, so each rank's order of blocks is kept.
//! - **Correlation from one block to the next** of a rank in a region
//!   (a rank slow for several steps in a row) is kept where the traces
//!   show it: with a lag-1 autocorrelation ρ above twice its standard
//!   error, each draw holds for L = 1 / (1 − ρ) consecutive blocks of the
//!   region (a held value has lag-1 correlation 1 − 1/L), from a phase of
//!   its own per rank.

/// Default seed of the draws; any fixed value gives a reproducible model.
pub const SEED: u64 = 0x5ca1_ab1e_e7a2_0a01;

/// Distance from the median, in robust standard deviations, beyond which
/// a transient part counts as a detour of the traced machine.
pub const DETOUR_SIGMAS: f64 = 5.0;

/// Fewest transient parts whose spread says how wide a run's body is.
const MIN_SPREAD_SAMPLES: usize = 30;

/// Longest hold of one draw, in blocks of its region.
const MAX_HOLD: u32 = 64;

/// One member's blocks, call by call: (CPU, wall) ns.
pub(super) type MemberBlocks = Vec<(u64, u64)>;

/// The template members' blocks and their split (see the module docs).
#[derive(Debug)]
pub(super) struct Blocks {
    /// Per member, per call: (CPU, wall) ns.
    members: Vec<MemberBlocks>,
    /// Per rank of the largest run: its member index (`u32::MAX` for a
    /// rank of another class).
    index_of: Vec<u32>,
    /// Per call: the members' median CPU ns.
    base: Vec<f64>,
    /// Per member, per region law: the member's level (1 for a member at
    /// the median).
    level: Vec<Vec<f64>>,
    /// Per region law: the transient parts of its blocks, all members and
    /// calls, detours left out, scaled to mean 1.
    pool: Vec<Vec<f32>>,
    /// Per region law: blocks one draw holds (1: independent draws).
    hold: Vec<u32>,
    /// Per call: its index among its scale group's calls.
    nth: Vec<u32>,
    /// Per call: its scale group (see [`Blocks::new`]), the unit the
    /// levels, pools and holds are kept by.
    group_of: Vec<usize>,
    /// Per region law: what was done to its transient parts.
    pub(super) noise: Vec<Noise>,
}

/// Width of a scale group, as a factor of the region's median block:
/// calls whose shared blocks are within a factor of 2^(3/2) of the
/// group's centre (on a log scale, bands a factor of 8 wide) share a pool.
const SCALE_BAND_LOG2: f64 = 3.0;

/// What the traced runs' noise did to one region's transient parts.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Noise {
    /// Transient parts left out as detours, and all of them.
    pub detours: usize,
    /// See `detours`.
    pub parts: usize,
    /// Robust relative spread of the largest run's body.
    pub spread: f64,
    /// Transient parts moved towards the median to a quieter run's
    /// quantile.
    pub capped: usize,
    /// Blocks one draw holds.
    pub hold: u32,
}

/// One run's split of a class's blocks: per call the shared block, per
/// member and region the level (the median ratio to the shared block),
/// per region and member the transient parts in call order with their
/// call.
struct Split {
    base: Vec<f64>,
    level: Vec<Vec<f64>>,
    parts: Vec<Vec<Vec<(usize, f64)>>>,
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable_by(f64::total_cmp);
    let k = v.len() / 2;
    if v.len() % 2 == 1 {
        v[k]
    } else {
        0.5 * (v[k - 1] + v[k])
    }
}

fn split(members: &[MemberBlocks], law_of: &[usize], laws: usize) -> Split {
    let calls = law_of.len();
    let mut col: Vec<f64> = Vec::with_capacity(members.len());
    let base: Vec<f64> = (0..calls)
        .map(|i| {
            col.clear();
            col.extend(members.iter().map(|m| m[i].0 as f64));
            median(&mut col)
        })
        .collect();
    let base = shrink_base(members, base, law_of, laws);
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); laws];
    let level: Vec<Vec<f64>> = members
        .iter()
        .map(|m| {
            ratios.iter_mut().for_each(Vec::clear);
            for i in 0..calls {
                if base[i] > 0.0 {
                    ratios[law_of[i]].push(m[i].0 as f64 / base[i]);
                }
            }
            ratios.iter_mut().map(|r| if r.is_empty() { 1.0 } else { median(r) }).collect()
        })
        .collect();
    let mut parts: Vec<Vec<Vec<(usize, f64)>>> = vec![vec![Vec::new(); members.len()]; laws];
    for (k, m) in members.iter().enumerate() {
        for i in 0..calls {
            let g = law_of[i];
            let expect = base[i] * level[k][g];
            if expect > 0.0 {
                parts[g][k].push((i, m[i].0 as f64 / expect));
            }
        }
    }
    Split { base, level, parts }
}

/// The shared blocks `base` (per call, the members' median) with the
/// members' own spread taken out of their call-to-call variation, region
/// by region: the median of M members moves from call to call by about
/// π/2 · W / M in variance (W: the members' variance about it at one
/// call) even when the calls share nothing, so each call's shared block
/// is brought towards the region's mean by the share of its variation
/// that this explains, λ = 1 − (π/2 · W / M) / V (V: the variance of the
/// shared blocks over the region's calls; 0 ≤ λ ≤ 1). Without that, a
/// target rank would meet each member median's chance deviation on top
/// of the transient part drawn for it. A loop's warm-up or a step that
/// all ranks find slow stands out of W and is kept.
fn shrink_base(members: &[MemberBlocks], mut base: Vec<f64>, law_of: &[usize], laws: usize) -> Vec<f64> {
    let m = members.len() as f64;
    if m < 2.0 {
        return base;
    }
    // Per region: calls, Σ base, Σ base², Σ within-call variance.
    let mut acc = vec![(0usize, 0.0f64, 0.0f64, 0.0f64); laws];
    for (i, &g) in law_of.iter().enumerate() {
        let b = base[i];
        let w = members.iter().map(|x| (x[i].0 as f64 - b).powi(2)).sum::<f64>() / (m - 1.0);
        let a = &mut acc[g];
        *a = (a.0 + 1, a.1 + b, a.2 + b * b, a.3 + w);
    }
    let lambda: Vec<(f64, f64)> = acc
        .iter()
        .map(|&(k, sb, sbb, sw)| {
            if k < 2 {
                return (1.0, 0.0);
            }
            let kf = k as f64;
            let mean = sb / kf;
            let v = (sbb - kf * mean * mean).max(0.0) / (kf - 1.0);
            let noise = std::f64::consts::FRAC_PI_2 * (sw / kf) / m;
            let l = if v > 0.0 { (1.0 - noise / v).clamp(0.0, 1.0) } else { 1.0 };
            (l, mean)
        })
        .collect();
    for (i, &g) in law_of.iter().enumerate() {
        let (l, mean) = lambda[g];
        base[i] = mean + l * (base[i] - mean);
    }
    base
}

/// Median and robust standard deviation of `v` (1.4826 × the median
/// absolute deviation; 1.2533 × the mean absolute deviation when more
/// than half of the values equal the median).
fn robust(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    let mid = median(&mut s);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - mid).abs()).collect();
    let mad = median(&mut dev);
    let sigma = if mad > 0.0 { 1.4826 * mad } else { 1.2533 * dev.iter().sum::<f64>() / dev.len().max(1) as f64 };
    (mid, sigma)
}

/// The body of one region's transient parts in one run: median, robust
/// spread and how many parts; `None` with too few parts to tell. The
/// parts of M members are deviations from their shared block, which
/// narrows them by √(1 − 1/M): the spread is widened back by that.
fn body(parts: &[Vec<(usize, f64)>]) -> Option<(f64, f64, usize)> {
    let all: Vec<f64> = parts.iter().flatten().map(|p| p.1).collect();
    let m = parts.len() as f64;
    (all.len() >= MIN_SPREAD_SAMPLES && m >= 2.0).then(|| {
        let (mid, sigma) = robust(&all);
        (mid, sigma / (1.0 - 1.0 / m).sqrt(), all.len())
    })
}

/// One run's transient parts of a region as sorted relative deviations
/// from their mean, detours left out; `None` with too few parts to tell
/// ([`body`]).
fn deviations(parts: &[Vec<(usize, f64)>]) -> Option<Vec<f64>> {
    let (mid, sigma, _) = body(parts)?;
    let mut kept: Vec<f64> = parts.iter().flatten().map(|p| p.1).filter(|t| (t - mid).abs() <= DETOUR_SIGMAS * sigma).collect();
    let mean = kept.iter().sum::<f64>() / kept.len().max(1) as f64;
    if mean <= 0.0 {
        return None;
    }
    kept.iter_mut().for_each(|t| *t = *t / mean - 1.0);
    kept.sort_unstable_by(f64::total_cmp);
    Some(kept)
}

/// The quantile at `p` of the sorted `v` (positions (j + ½) / n, linear
/// in between, its extremes beyond).
fn quantile(v: &[f64], p: f64) -> f64 {
    let x = (p * v.len() as f64 - 0.5).clamp(0.0, (v.len() - 1) as f64);
    let (j, f) = (x.floor() as usize, x.fract());
    if j + 1 < v.len() {
        v[j] + f * (v[j + 1] - v[j])
    } else {
        v[j]
    }
}

/// Moves each of `dev` (relative deviations) no farther from the median
/// than the quieter runs' `quiet` (sorted deviations each) put the same
/// quantile, with their sampling error: at quantile p above the median,
/// the least over the quieter runs of their quantile at p + 2·√(p(1 − p)
/// / n); below it, the greatest at p − that. The map is monotone, so each
/// rank's order of blocks, and with it their correlation, is kept.
/// Returns how many moved.
fn cap_to(dev: &mut [f64], quiet: &[Vec<f64>]) -> usize {
    if quiet.is_empty() || dev.is_empty() {
        return 0;
    }
    let mut order: Vec<usize> = (0..dev.len()).collect();
    order.sort_unstable_by(|&a, &b| dev[a].total_cmp(&dev[b]));
    let n = dev.len() as f64;
    let mut moved = 0;
    for (j, &i) in order.iter().enumerate() {
        let p = (j as f64 + 0.5) / n;
        let bound = |q: &Vec<f64>| {
            let e = 2.0 * (p * (1.0 - p) / q.len() as f64).sqrt();
            quantile(q, if p >= 0.5 { (p + e).min(1.0) } else { (p - e).max(0.0) })
        };
        let d = dev[i];
        let capped = if p >= 0.5 { quiet.iter().map(bound).fold(d, f64::min) } else { quiet.iter().map(bound).fold(d, f64::max) };
        if capped != d {
            dev[i] = capped;
            moved += 1;
        }
    }
    moved
}

/// Lag-1 autocorrelation of the members' sequences `parts` about `mean`,
/// and the pairs it was taken over.
fn lag1(parts: &[Vec<f64>], mean: f64) -> (f64, usize) {
    let (mut num, mut den, mut pairs) = (0.0, 0.0, 0usize);
    for seq in parts {
        for w in seq.windows(2) {
            num += (w[0] - mean) * (w[1] - mean);
            pairs += 1;
        }
        den += seq.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
    }
    (if den > 0.0 { num / den } else { 0.0 }, pairs)
}

impl Blocks {
    /// Splits the class's blocks by region. `runs`: per traced rank count,
    /// smallest first, the blocks of the class's ranks (per member, per
    /// call: CPU and wall ns; all of one length); the last run's members
    /// are the template members (at least one), `ranks` their ranks in
    /// that run. `law_of[i]` is call i's region law index below `laws`.
    ///
    /// The calls of one region may differ in scale (a multigrid level's
    /// compute and the empty span between two of its exchanges start and
    /// end at the same call sites), and a block of a microsecond varies
    /// by a larger share than one of a millisecond. So the split is made
    /// per scale group: the calls of a region whose shared block (the
    /// members' median in the largest run) lies in one band, a factor of
    /// 8 wide on a log scale around the region's median block.
    pub(super) fn new(runs: Vec<Vec<MemberBlocks>>, ranks: &[u32], law_of: &[usize], laws: usize) -> Blocks {
        let last = runs.last().expect("the largest run's members");
        let mut col = Vec::with_capacity(last.len());
        let shared: Vec<f64> = (0..law_of.len())
            .map(|i| {
                col.clear();
                col.extend(last.iter().map(|m| m[i].0 as f64));
                median(&mut col)
            })
            .collect();
        let centre: Vec<f64> = (0..laws)
            .map(|g| {
                let mut v: Vec<f64> = (0..law_of.len()).filter(|&i| law_of[i] == g && shared[i] > 0.0).map(|i| shared[i]).collect();
                median(&mut v)
            })
            .collect();
        let mut groups: Vec<(usize, i64)> = Vec::new();
        let group_of: Vec<usize> = (0..law_of.len())
            .map(|i| {
                let g = law_of[i];
                let band = if shared[i] > 0.0 && centre[g] > 0.0 {
                    ((shared[i] / centre[g]).log2() / SCALE_BAND_LOG2).round() as i64
                } else {
                    i64::MIN
                };
                groups.iter().position(|&x| x == (g, band)).unwrap_or_else(|| {
                    groups.push((g, band));
                    groups.len() - 1
                })
            })
            .collect();
        let mut b = Blocks::by_group(runs, ranks, &group_of, groups.len());
        let groups = &groups;
        // Each region law's noise: its groups' counts, the spread and hold
        // of its largest group.
        b.noise = (0..laws)
            .map(|g| {
                let mine = || (0..groups.len()).filter(move |&k| groups[k].0 == g);
                let mut n = Noise::default();
                for k in mine() {
                    let x = b.noise[k];
                    (n.detours, n.parts, n.capped) = (n.detours + x.detours, n.parts + x.parts, n.capped + x.capped);
                }
                let top = mine().max_by_key(|&k| b.noise[k].parts);
                (n.spread, n.hold) = top.map_or((0.0, 1), |k| (b.noise[k].spread, b.noise[k].hold));
                n
            })
            .collect();
        b.group_of = group_of;
        b
    }

    /// [`Blocks::new`] with `law_of` the calls' groups.
    fn by_group(mut runs: Vec<Vec<MemberBlocks>>, ranks: &[u32], law_of: &[usize], laws: usize) -> Blocks {
        let members = runs.pop().expect("the largest run's members");
        let quieter: Vec<Split> = runs.iter().filter(|m| m.len() >= 2).map(|m| split(m, law_of, laws)).collect();
        let Split { base, mut level, parts } = split(&members, law_of, laws);
        let mut pool: Vec<Vec<f32>> = Vec::with_capacity(laws);
        let mut hold = Vec::with_capacity(laws);
        let mut noise = Vec::with_capacity(laws);
        for (g, per_member) in parts.iter().enumerate() {
            let parts_n = per_member.iter().map(Vec::len).sum();
            let Some((mid, sigma, _)) = body(per_member) else {
                pool.push(per_member.iter().flatten().map(|p| p.1 as f32).collect());
                hold.push(1);
                noise.push(Noise { parts: parts_n, hold: 1, ..Noise::default() });
                continue;
            };
            // Detours out; then each member's level is its kept blocks'
            // sum over the shared blocks' at those calls, so that a target
            // rank's blocks keep its member's total less the detours, and
            // the transient parts are taken again against it.
            let inside = |t: f64| (t - mid).abs() <= DETOUR_SIGMAS * sigma;
            let kept: Vec<Vec<f64>> = per_member
                .iter()
                .enumerate()
                .map(|(k, seq)| {
                    let calls: Vec<usize> = seq.iter().filter(|p| inside(p.1)).map(|p| p.0).collect();
                    let own: f64 = calls.iter().map(|&i| members[k][i].0 as f64).sum();
                    let shared: f64 = calls.iter().map(|&i| base[i]).sum();
                    if shared > 0.0 {
                        level[k][g] = own / shared;
                    }
                    calls.iter().map(|&i| members[k][i].0 as f64 / (base[i] * level[k][g])).collect()
                })
                .collect();
            let kept_n: usize = kept.iter().map(Vec::len).sum();
            let mean = kept.iter().flatten().sum::<f64>() / kept_n.max(1) as f64;
            let (rho, pairs) = lag1(&kept, mean);
            let h = if pairs > 0 && rho > 2.0 / (pairs as f64).sqrt() {
                ((1.0 / (1.0 - rho.min(0.999))).round() as u32).clamp(1, MAX_HOLD)
            } else {
                1
            };
            let scale = if mean > 0.0 { 1.0 / mean } else { 1.0 };
            let mut dev: Vec<f64> = kept.iter().flatten().map(|&t| t * scale - 1.0).collect();
            let quiet: Vec<Vec<f64>> = quieter.iter().filter_map(|q| deviations(&q.parts[g])).collect();
            let capped = cap_to(&mut dev, &quiet);
            let body_mean = dev.iter().sum::<f64>() / dev.len().max(1) as f64;
            pool.push(dev.iter().map(|d| ((1.0 + d) / (1.0 + body_mean)) as f32).collect());
            hold.push(h);
            let spread = if mid > 0.0 { sigma / mid } else { 0.0 };
            noise.push(Noise { detours: parts_n - kept_n, parts: parts_n, spread, capped, hold: h });
        }
        let mut seen = vec![0u32; laws];
        let nth = law_of
            .iter()
            .map(|&g| {
                seen[g] += 1;
                seen[g] - 1
            })
            .collect();
        let mut index_of = vec![u32::MAX; ranks.iter().max().map_or(0, |&r| r as usize + 1)];
        for (m, &r) in ranks.iter().enumerate() {
            index_of[r as usize] = m as u32;
        }
        Blocks { members, index_of, base, level, pool, hold, nth, group_of: law_of.to_vec(), noise }
    }

    /// The member target rank `r` takes its blocks and level from: the
    /// member of that rank when there is one, else member r mod M.
    fn member_of(&self, r: u32) -> usize {
        match self.index_of.get(r as usize) {
            Some(&m) if m != u32::MAX => m as usize,
            _ => r as usize % self.members.len(),
        }
    }

    /// The (CPU, wall) ns of target rank `r`'s block before call `i`,
    /// before its region law's scaling: drawn with `seed` from its scale
    /// group's pool, or with `None` member r mod M's own block. `rep` > 0
    /// is a call that repeats call i past the template's copies of a loop
    /// (module `loops`): its draw is its own.
    pub(super) fn block(&self, r: u32, i: usize, rep: u32, seed: Option<u64>) -> (f64, f64) {
        let g = self.group_of[i];
        let m = self.member_of(r);
        let (cpu, wall) = self.members[m][i];
        let pool = &self.pool[g];
        let Some(seed) = seed else { return (cpu as f64, wall as f64) };
        if self.base[i] <= 0.0 || pool.is_empty() {
            return (cpu as f64, wall as f64);
        }
        let hold = self.hold[g] as u64;
        let draw = if hold > 1 {
            let phase = mix(seed, r, u64::MAX - g as u64) % hold;
            ((g as u64) << 40) ^ ((self.nth[i] as u64 + phase) / hold)
        } else {
            i as u64
        } ^ ((rep as u64) << 56);
        let t = pool[(mix(seed, r, draw) % pool.len() as u64) as usize] as f64;
        let drawn = self.base[i] * self.level[m][g] * t;
        // Wall time keeps the member's wall-to-CPU ratio at this call.
        let w = if cpu > 0 { wall as f64 * drawn / cpu as f64 } else { drawn };
        (drawn, w)
    }
}

/// SplitMix64 of the seed, the rank and the draw's index.
fn mix(seed: u64, r: u32, i: u64) -> u64 {
    crate::rng::mix(seed ^ ((r as u64) << 40) ^ i)
}

#[cfg(test)]
mod tests {
    use super::{Blocks, MemberBlocks, SEED};

    const S: Option<u64> = Some(SEED);

    /// A uniform draw in [-1, 1) per (member, call).
    fn u(m: u64, i: u64) -> f64 {
        super::mix(7, m as u32, i) as f64 / u64::MAX as f64 * 2.0 - 1.0
    }

    /// Five members of one region, 100 calls: member 4 persistently twice
    /// as slow; a ±20 % spread of the program's own; every tenth call of
    /// member 0 hit by a detour of 9 units.
    fn blocks() -> Blocks {
        let member = |m: u64, level: f64| -> MemberBlocks {
            (0..100u64)
                .map(|i| {
                    let b = (level * 100.0 * (1.0 + 0.2 * u(m, i))) as u64 + if m == 0 && i % 10 == 0 { 900 } else { 0 };
                    (b, b)
                })
                .collect()
        };
        let members = vec![member(0, 1.0), member(1, 1.0), member(2, 1.0), member(3, 1.0), member(4, 2.0)];
        Blocks::new(vec![members], &[], &[0; 100], 1)
    }

    #[test]
    fn persistent_imbalance_stays_with_the_rank_detours_go_and_the_spread_is_drawn() {
        let b = blocks();
        let total = |r: u32| (0..100).map(|i| b.block(r, i, 0, S).0).sum::<f64>();
        // Each member's level carries over to its target ranks; the
        // detours of member 0 do not.
        let own = [100.0 * 100.0, 100.0 * 100.0, 100.0 * 100.0, 100.0 * 100.0, 200.0 * 100.0];
        for (m, want) in own.iter().enumerate() {
            let mean = (0..400).map(|k| total(5 * k + m as u32)).sum::<f64>() / 400.0;
            assert!((mean / want - 1.0).abs() < 0.03, "member {m}: {mean} against {want}");
        }
        assert_eq!(b.noise[0].detours, 10);
        assert!((0..2000).all(|r| (0..100).all(|i| b.block(r, i, 0, S).0 < 500.0)));
        // The program's own spread is drawn: ranks of one member differ.
        let blocks_of = |r: u32| (0..100).map(|i| b.block(r, i, 0, S).0).collect::<Vec<_>>();
        assert_ne!(blocks_of(1), blocks_of(6));
        // The same seed, rank and call always draw the same block; another
        // seed draws others.
        assert_eq!(b.block(7, 31, 0, S), b.block(7, 31, 0, S));
        assert_ne!(blocks_of(6), (0..100).map(|i| b.block(6, i, 0, Some(1)).0).collect::<Vec<_>>());
        // Without a seed each rank copies its member.
        assert_eq!(b.block(5, 10, 0, None), (b.members[0][10].0 as f64, b.members[0][10].1 as f64));
    }

    #[test]
    fn identical_members_keep_their_blocks() {
        let m: MemberBlocks = (0..10).map(|i| (100 * (i + 1), 150 * (i + 1))).collect();
        let b = Blocks::new(vec![vec![m.clone(), m.clone(), m.clone()]], &[], &[0; 10], 1);
        for r in 0..9 {
            for (i, &(cpu, wall)) in m.iter().enumerate() {
                let (c, w) = b.block(r, i, 0, S);
                assert!((c - cpu as f64).abs() < 1e-3 && (w - wall as f64).abs() < 1e-3, "rank {r} call {i}: {c} {w}");
            }
        }
    }

    /// `members` members of `calls` calls of one region, each block 1000
    /// ns times (1 + `pct` % of a uniform draw).
    fn noisy(members: u64, calls: u64, pct: f64, salt: u64) -> Vec<MemberBlocks> {
        (0..members)
            .map(|m| {
                (0..calls)
                    .map(|i| {
                        let b = (1000.0 * (1.0 + pct / 100.0 * u(m + salt, i))) as u64;
                        (b, b)
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_body_wider_than_a_quieter_runs_is_brought_to_its_quantiles() {
        // The same program spread (±2 %) at 2 ranks; ±10 % at 8 ranks.
        let b = Blocks::new(vec![noisy(2, 200, 2.0, 10), noisy(8, 200, 10.0, 20)], &[], &[0; 200], 1);
        let n = b.noise[0];
        assert!(n.capped > n.parts / 2, "{n:?}");
        // The spread across ranks at a call (what makes ranks wait for
        // each other), averaged over the calls.
        let spread = |b: &Blocks| {
            let at = |i: usize| {
                let v: Vec<f64> = (0..64).map(|r| b.block(r, i, 0, S).0).collect();
                let mean = v.iter().sum::<f64>() / v.len() as f64;
                (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt() / mean
            };
            (0..200).map(at).sum::<f64>() / 200.0
        };
        assert!(spread(&b) < 0.02, "{}", spread(&b));
        // Runs of one spread keep it.
        let same = Blocks::new(vec![noisy(2, 200, 10.0, 10), noisy(8, 200, 10.0, 20)], &[], &[0; 200], 1);
        assert!(same.noise[0].capped < same.noise[0].parts / 10, "{:?}", same.noise[0]);
        assert!(spread(&same) > 0.04, "{}", spread(&same));
    }

    #[test]
    fn correlated_steps_hold_their_draws() {
        // Each member's deviation changes every 8 calls.
        let members: Vec<MemberBlocks> = (0..8u64)
            .map(|m| {
                (0..400u64)
                    .map(|i| {
                        let b = (1000.0 * (1.0 + 0.1 * u(m, i / 8))) as u64;
                        (b, b)
                    })
                    .collect()
            })
            .collect();
        let b = Blocks::new(vec![members], &[], &[0; 400], 1);
        assert!((4..=16).contains(&b.hold[0]), "{:?}", b.noise[0]);
        let independent = Blocks::new(vec![noisy(8, 400, 10.0, 0)], &[], &[0; 400], 1);
        assert_eq!(independent.hold[0], 1);
        // Consecutive blocks of a target rank repeat their transient part
        // as often as the members' did.
        let t = |b: &Blocks, r: u32, i: usize| b.block(r, i, 0, S).0 / (b.base[i] * b.level[r as usize % 8][0]);
        let repeats = |b: &Blocks| (0..32).map(|r| (1..400).filter(|&i| (t(b, r, i) - t(b, r, i - 1)).abs() < 1e-9).count()).sum::<usize>();
        assert!(repeats(&b) > 32 * 300, "{}", repeats(&b));
        assert!(repeats(&independent) < 32 * 10, "{}", repeats(&independent));
    }

    #[test]
    fn a_regions_long_blocks_draw_from_their_own_scale_not_its_short_ones() {
        // A multigrid level: per level one 400 us compute, then two empty
        // spans of about 300 ns between exchanges, all three in one region;
        // the compute varies by 2 %, the empty spans by 100 %.
        let member = |m: u64| -> MemberBlocks {
            (0..300u64)
                .map(|i| {
                    let b = if i % 3 == 0 { 400_000.0 * (1.0 + 0.02 * u(m, i)) } else { 300.0 * (1.0 + u(m, i)) };
                    (b as u64, b as u64)
                })
                .collect()
        };
        let b = Blocks::new(vec![(0..8).map(member).collect()], &[], &[0; 300], 1);
        for r in 0..64 {
            for i in (0..300).step_by(3) {
                let t = b.block(r, i, 0, S).0 / 400_000.0;
                assert!((t - 1.0).abs() < 0.05, "rank {r}, call {i}: {t}");
            }
        }
        assert_eq!(b.noise.len(), 1);
        assert_eq!(b.noise[0].parts, 8 * 300);
    }
}

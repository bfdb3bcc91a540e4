//! The compute blocks a target rank takes from its class's ranks in the
//! largest traced run (the template members).
//!
//! A member's block at call i is split into three factors: the block the
//! members share at that call (their median, which keeps a loop's warm-up
//! iteration long for every rank), the member's own level in the call's
//! region (its blocks' sum over the median's sum: imbalance that persists,
//! such as a larger share of the domain), and what is left, the transient
//! part (a detour, a cache miss). Target rank r keeps the level of member
//! r mod M and draws each transient part from the pool of the region's
//! transient parts over all members and calls, with a hash of (r, i) as
//! the seeded random source, so no per-rank state is kept.
//!
//! Why draw: a collective waits for the slowest of its ranks, and the
//! slowest of N independent transient delays grows with N (Hoefler,
//! Schneider and Lumsdaine, "Characterizing the Influence of System Noise
//! on Large-Scale Applications by Simulation", SC '10). Copying the M
//! members' blocks to N ranks would repeat M delays per call, and the wait
//! at N would stay that of M ranks.

/// Seed of the draws; any fixed value gives a reproducible model.
const SEED: u64 = 0x5ca1_ab1e_e7a2_0a01;

/// The template members' blocks and their split (see the module docs).
#[derive(Debug)]
pub(super) struct Blocks {
    /// Per member, per call: (CPU, wall) ns.
    members: Vec<Vec<(u64, u64)>>,
    /// Per call: the members' median CPU ns.
    base: Vec<f64>,
    /// Per member, per region law: the member's level (1 for a member at
    /// the median).
    level: Vec<Vec<f64>>,
    /// Per region law: the transient parts of its blocks, all members and
    /// calls, scaled to mean 1.
    pool: Vec<Vec<f32>>,
}

impl Blocks {
    /// Splits `members` (per member, per call: CPU and wall ns; at least
    /// one member, all of one length) by region, `law_of[i]` being call
    /// i's region law index below `laws`.
    pub(super) fn new(members: Vec<Vec<(u64, u64)>>, law_of: &[usize], laws: usize) -> Blocks {
        let calls = law_of.len();
        let mut base = Vec::with_capacity(calls);
        let mut col: Vec<u64> = Vec::with_capacity(members.len());
        for i in 0..calls {
            col.clear();
            col.extend(members.iter().map(|m| m[i].0));
            col.sort_unstable();
            let k = col.len() / 2;
            base.push(if col.len() % 2 == 1 { col[k] as f64 } else { (col[k - 1] + col[k]) as f64 / 2.0 });
        }
        let mut base_sum = vec![0.0; laws];
        for i in 0..calls {
            base_sum[law_of[i]] += base[i];
        }
        let level: Vec<Vec<f64>> = members
            .iter()
            .map(|m| {
                let mut own = vec![0.0; laws];
                for i in 0..calls {
                    if base[i] > 0.0 {
                        own[law_of[i]] += m[i].0 as f64;
                    }
                }
                own.iter().zip(&base_sum).map(|(o, b)| if *b > 0.0 { o / b } else { 1.0 }).collect()
            })
            .collect();
        let mut pool: Vec<Vec<f32>> = vec![Vec::new(); laws];
        for (m, blocks) in members.iter().enumerate() {
            for i in 0..calls {
                let g = law_of[i];
                let expect = base[i] * level[m][g];
                if expect > 0.0 {
                    pool[g].push((blocks[i].0 as f64 / expect) as f32);
                }
            }
        }
        for p in &mut pool {
            let mean = p.iter().map(|&t| t as f64).sum::<f64>() / p.len().max(1) as f64;
            if mean > 0.0 {
                p.iter_mut().for_each(|t| *t = (*t as f64 / mean) as f32);
            }
        }
        Blocks { members, base, level, pool }
    }

    /// The (CPU, wall) ns of target rank `r`'s block before call `i`, whose
    /// region law is `g` (as given to [`Blocks::new`]), before the law's
    /// scaling.
    pub(super) fn block(&self, r: u32, i: usize, g: usize) -> (f64, f64) {
        let m = r as usize % self.members.len();
        let (cpu, wall) = self.members[m][i];
        let pool = &self.pool[g];
        if self.base[i] <= 0.0 || pool.is_empty() {
            return (cpu as f64, wall as f64);
        }
        let t = pool[(mix(r, i) % pool.len() as u64) as usize] as f64;
        let drawn = self.base[i] * self.level[m][g] * t;
        // Wall time keeps the member's wall-to-CPU ratio at this call.
        let w = if cpu > 0 { wall as f64 * drawn / cpu as f64 } else { drawn };
        (drawn, w)
    }
}

/// SplitMix64 of the rank and the call: the draw of one block.
fn mix(r: u32, i: usize) -> u64 {
    let mut z = SEED ^ ((r as u64) << 40) ^ i as u64;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::Blocks;

    /// Five members of one region, 100 calls: member 4 persistently twice
    /// as slow; every tenth call of member 0 hit by a detour of 9 units.
    fn blocks() -> Blocks {
        let m0: Vec<(u64, u64)> = (0..100).map(|i| if i % 10 == 0 { (1000, 1000) } else { (100, 100) }).collect();
        let quiet: Vec<(u64, u64)> = vec![(100, 100); 100];
        let slow: Vec<(u64, u64)> = vec![(200, 200); 100];
        Blocks::new(vec![m0, quiet.clone(), quiet.clone(), quiet, slow], &[0; 100], 1)
    }

    #[test]
    fn persistent_imbalance_stays_with_the_rank_and_detours_are_drawn() {
        let b = blocks();
        let total = |r: u32| (0..100).map(|i| b.block(r, i, 0).0).sum::<f64>();
        // Each member's total carries over to its target ranks.
        let own = [90.0 * 100.0 + 10.0 * 1000.0, 100.0 * 100.0, 100.0 * 100.0, 100.0 * 100.0, 200.0 * 100.0];
        for r in 0..20u32 {
            let want = own[r as usize % 5];
            assert!((total(r) / want - 1.0).abs() < 0.35, "rank {r}: {} against {want}", total(r));
        }
        // Averaged over many ranks, the drawn blocks keep the members' means.
        for (m, want) in own.iter().enumerate() {
            let mean = (0..400).map(|k| total(5 * k + m as u32)).sum::<f64>() / 400.0;
            assert!((mean / want - 1.0).abs() < 0.03, "member {m}: {mean} against {want}");
        }
        // Ranks of one member no longer repeat its detours call by call,
        // and quiet members' ranks meet detours too.
        let hit = |r: u32| (0..100).filter(|&i| b.block(r, i, 0).0 > 300.0).collect::<Vec<_>>();
        assert_ne!(hit(0), hit(5));
        assert!((0..100).any(|k| !hit(5 * k + 1).is_empty()));
        // The same rank and call always draw the same block.
        assert_eq!(b.block(7, 31, 0), b.block(7, 31, 0));
    }

    #[test]
    fn identical_members_keep_their_blocks() {
        let m: Vec<(u64, u64)> = (0..10).map(|i| (100 * (i + 1), 150 * (i + 1))).collect();
        let b = Blocks::new(vec![m.clone(), m.clone(), m.clone()], &[0; 10], 1);
        for r in 0..9 {
            for (i, &(cpu, wall)) in m.iter().enumerate() {
                let (c, w) = b.block(r, i, 0);
                assert!((c - cpu as f64).abs() < 1e-3 && (w - wall as f64).abs() < 1e-3, "rank {r} call {i}: {c} {w}");
            }
        }
    }
}

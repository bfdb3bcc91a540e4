//! The final compute blocks of an oversubscribed host's ranks, shared out
//! at `MPI_Finalize` by the replay's fluid model of its cores.

use super::FinalBlock;
use crate::platform::{Platform, WaitingRanks};
use crate::replay::cores::{Ended, HostCores};

/// Each rank's end, seconds, once the final blocks of the ranks of every
/// oversubscribed host of polling ranks share its cores by the replay's
/// fluid model: rate `min(1, cores / ranks not finalized)`, a rank
/// finalizing as its final block ends.
///
/// `ends[r]` is rank r's end as its clock has it and `blocks[r]` its
/// final block ([`super::VirtualRank::final_block`]); the result is
/// `ends` with the ranks of such hosts at their shared ends. A host keeps
/// its clocks' ends when a rank there has no final block, or when a
/// rank's earlier block ends after the host's first finalize (the
/// speed-up reaches more than final blocks: online mode cannot know it).
/// Under [`WaitingRanks::Yield`] every host keeps them.
///
/// # Panics
/// When `blocks` and `ends` differ in length from each other, or with an
/// explicit mapping that does not place that many ranks.
pub fn final_ends(platform: &Platform, blocks: &[Option<FinalBlock>], ends: &[f64]) -> Vec<f64> {
    assert_eq!(blocks.len(), ends.len(), "one final block and one end per rank");
    let mut out = ends.to_vec();
    if platform.waiting_ranks != WaitingRanks::Poll {
        return out;
    }
    let placement = platform.placement(ends.len() as u32);
    for (h, host) in platform.hosts.iter().enumerate() {
        let ranks: Vec<usize> = (0..ends.len()).filter(|&r| placement[r] as usize == h).collect();
        if ranks.len() as u32 <= host.cores {
            continue;
        }
        let Some(finals) = ranks.iter().map(|&r| blocks[r].map(|b| (r, b))).collect::<Option<Vec<_>>>() else { continue };
        let shared = share(host.cores, &finals);
        let first_end = shared.iter().map(|&(_, t)| t).fold(f64::INFINITY, f64::min);
        if finals.iter().all(|(_, b)| b.before_s <= first_end) {
            for (r, t) in shared {
                out[r] = t;
            }
        }
    }
    out
}

/// The ends of the final blocks `finals` (rank, block) of one host's
/// ranks on `cores` cores: the blocks start in start order, and a rank
/// finalizes when its block ends.
fn share(cores: u32, finals: &[(usize, FinalBlock)]) -> Vec<(usize, f64)> {
    let mut starts: Vec<(usize, FinalBlock)> = finals.to_vec();
    starts.sort_by(|a, b| a.1.start_s.total_cmp(&b.1.start_s).then(a.0.cmp(&b.0)));
    let mut hc = HostCores::new(cores, finals.len() as u32, WaitingRanks::Poll);
    let mut out = Vec::with_capacity(finals.len());
    let mut ended = Vec::new();
    let mut next = 0;
    while out.len() < finals.len() {
        let start = starts.get(next).map_or(f64::INFINITY, |s| s.1.start_s);
        match hc.next_end() {
            Some(t) if t < start => {
                ended.clear();
                hc.finish_until(t, &mut ended);
                for &Ended { rank, .. } in &ended {
                    out.push((rank as usize, t));
                    hc.rank_done(t);
                }
            }
            _ => {
                let (r, b) = starts[next];
                next += 1;
                if b.work_s > 0.0 {
                    hc.start(b.start_s, r as u32, b.work_s);
                } else {
                    out.push((r, b.start_s));
                    hc.rank_done(b.start_s);
                }
            }
        }
    }
    out
}

//! Collectives as point-to-point schedules.
//!
//! Each function appends one rank's part of a collective to a reusable
//! buffer of [`Step`]s. A rank executes its steps round by round: it posts
//! every step of a round (sends first, as nonblocking sends; then receives),
//! then waits for all of them, like `MPI_Waitall`, before the next round.
//! The algorithms are MPICH's (Thakur, Rabenseifner & Gropp, "Optimization
//! of Collective Communication Operations in MPICH", IJHPCA 2005):
//!
//! | collective | algorithm | rounds on `n` ranks |
//! |---|---|---|
//! | barrier | dissemination (Hensgen, Finkel & Manber 1988), 0-byte messages; or linear (SMPI's default) | ⌈log₂ n⌉; 2 |
//! | bcast | binomial tree; a parent sends to its children one after the other | ≤ ⌈log₂ n⌉ + 1 per rank |
//! | reduce | binomial tree to the root; a parent receives its children one after the other | ≤ ⌈log₂ n⌉ + 1 per rank |
//! | reduce (SMPI default) | linear: the root receives from all at once | 1 |
//! | allreduce (SMPI default) | reduce to rank 0, then binomial bcast from it | |
//! | allreduce | recursive doubling; for `n` not a power of two, MPICH's fold: the first `2·rem` ranks pair up first and the odd one of each pair stands in for both | log₂ n, or ⌊log₂ n⌋ + 2 |
//!
//! | alltoall(v) | pairwise exchange | n − 1 |
//! | allgather(v) | ring | n − 1 |
//! | gather(v), scatter(v) | linear (OpenMPI basic linear) | 1 |
//! | reduce-scatter | binomial reduce to rank 0, then linear scatterv (SMPI's default) | |
//! | scan, exscan | linear chain | ≤ 2 |
//!
//! Ranks here are world ranks and `n` is the world size: only
//! `MPI_COMM_WORLD` is supported so far.

use serde::{Deserialize, Serialize};

/// Barrier algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BarrierAlg {
    /// [`barrier`]: dissemination (MPICH; SimGrid's `ompi_bruck`).
    Dissemination,
    /// [`linear_barrier`]: all to rank 0, then back (SimGrid's default, `ompi_basic_linear`).
    Linear,
}

/// Reduce algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReduceAlg {
    /// [`reduce`]: binomial tree (MPICH).
    Binomial,
    /// [`linear_gather`] to the root (SimGrid's default: its nonblocking linear `ireduce`).
    Linear,
}

/// All-reduce algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AllreduceAlg {
    /// [`allreduce`]: recursive doubling (MPICH below 2 KiB; SimGrid's `rdb`).
    RecursiveDoubling,
    /// Reduce to rank 0 with the reduce algorithm, then [`bcast`] (SimGrid's default).
    ReduceBcast,
}

/// The algorithm of each collective that has a choice; the others are
/// fixed (see the table above).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollAlgs {
    /// Barrier.
    pub barrier: BarrierAlg,
    /// Reduce (and the reduce phase of `ReduceBcast` all-reduce).
    pub reduce: ReduceAlg,
    /// All-reduce.
    pub allreduce: AllreduceAlg,
}

impl Default for CollAlgs {
    fn default() -> Self {
        CollAlgs::mpich()
    }
}

impl CollAlgs {
    /// MPICH's choices for short messages (the default).
    pub fn mpich() -> CollAlgs {
        CollAlgs {
            barrier: BarrierAlg::Dissemination,
            reduce: ReduceAlg::Binomial,
            allreduce: AllreduceAlg::RecursiveDoubling,
        }
    }

    /// SimGrid 3.32 SMPI's `default` selector (`smpi_default_selector.cpp`).
    pub fn smpi() -> CollAlgs {
        CollAlgs { barrier: BarrierAlg::Linear, reduce: ReduceAlg::Linear, allreduce: AllreduceAlg::ReduceBcast }
    }

    /// A preset by name: `mpich`, or `smpi`/`default` (SimGrid's default).
    ///
    /// # Errors
    /// A one-line message for an unknown name.
    pub fn preset(name: &str) -> Result<CollAlgs, String> {
        match name {
            "mpich" => Ok(CollAlgs::mpich()),
            "smpi" | "default" => Ok(CollAlgs::smpi()),
            _ => Err(format!("unknown collective selector `{name}` (known: mpich, smpi)")),
        }
    }

    /// Overrides one collective by SimGrid's option name (`barrier`,
    /// `reduce`, `allreduce`) and algorithm name (`smpi/<coll>:<alg>`).
    ///
    /// # Errors
    /// A one-line message for an unknown collective or algorithm.
    pub fn set(&mut self, coll: &str, alg: &str) -> Result<(), String> {
        let bad = || format!("unknown algorithm `{alg}` for {coll}");
        match coll {
            "barrier" => {
                self.barrier = match alg {
                    "ompi_bruck" | "mpich" | "dissemination" => BarrierAlg::Dissemination,
                    "ompi_basic_linear" | "default" | "linear" => BarrierAlg::Linear,
                    _ => return Err(bad()),
                }
            }
            "reduce" => {
                self.reduce = match alg {
                    "binomial" | "mpich" => ReduceAlg::Binomial,
                    "default" | "linear" | "ompi_basic_linear" => ReduceAlg::Linear,
                    _ => return Err(bad()),
                }
            }
            "allreduce" => {
                self.allreduce = match alg {
                    "rdb" | "recursive_doubling" | "mpich" => AllreduceAlg::RecursiveDoubling,
                    "default" | "reduce_bcast" => AllreduceAlg::ReduceBcast,
                    _ => return Err(bad()),
                }
            }
            _ => return Err(format!("no algorithm choice for collective `{coll}` yet")),
        }
        Ok(())
    }
}

/// Appends rank `rank`'s steps of a linear barrier over `n` ranks (OpenMPI's
/// `barrier_intra_basic_linear`): every other rank sends 0 bytes to rank 0
/// and then receives from it; rank 0 receives from all, then sends to all.
///
/// # Panics
/// If `rank >= n`.
pub fn linear_barrier(rank: u32, n: u32, out: &mut Vec<Step>) {
    linear_gather(rank, n, 0, 0, out);
    linear_scatter(rank, n, 0, |_| 0, out);
}

/// One point-to-point operation of a rank's part in a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The other world rank.
    pub peer: u32,
    /// Message size, bytes.
    pub bytes: u64,
    /// True for a send to `peer`, false for a receive from it.
    pub send: bool,
    /// True on the last step of a round: the rank waits for the round here.
    pub end_round: bool,
}

fn push_round(out: &mut Vec<Step>, ops: &[(u32, bool)], bytes: u64) {
    for (i, &(peer, send)) in ops.iter().enumerate() {
        out.push(Step { peer, bytes, send, end_round: i + 1 == ops.len() });
    }
}

/// Appends rank `rank`'s steps of a dissemination barrier over `n` ranks:
/// in round k it sends 0 bytes to `rank + 2^k` and receives from
/// `rank − 2^k` (mod n), for ⌈log₂ n⌉ rounds.
///
/// # Panics
/// If `rank >= n`.
pub fn barrier(rank: u32, n: u32, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let mut dist = 1u64;
    while dist < n as u64 {
        let to = ((rank as u64 + dist) % n as u64) as u32;
        let from = ((rank as u64 + n as u64 - dist) % n as u64) as u32;
        push_round(out, &[(to, true), (from, false)], 0);
        dist <<= 1;
    }
}

/// Appends rank `rank`'s steps of a binomial-tree broadcast of `bytes`
/// bytes from `root` over `n` ranks: receive from the parent, then send to
/// each child, largest subtree first, one blocking send per round
/// (MPICH's `MPIR_Bcast_intra_binomial`).
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn bcast(rank: u32, n: u32, root: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n && root < n, "rank {rank} or root {root} out of {n}");
    let vr = (rank + n - root) % n;
    let real = |v: u32| ((v as u64 + root as u64) % n as u64) as u32;
    let mut mask = 1u32;
    while mask < n {
        if vr & mask != 0 {
            push_round(out, &[(real(vr - mask), false)], bytes);
            break;
        }
        mask = mask.saturating_mul(2);
    }
    mask >>= 1;
    while mask > 0 {
        if vr as u64 + (mask as u64) < n as u64 {
            push_round(out, &[(real(vr + mask), true)], bytes);
        }
        mask >>= 1;
    }
}

/// Appends rank `rank`'s steps of a binomial-tree reduction of `bytes`
/// bytes per rank to `root` over `n` ranks: receive from each child,
/// smallest subtree first, one per round, then send to the parent
/// (MPICH's `MPIR_Reduce_intra_binomial`, commutative operation). The
/// reduction arithmetic itself is not timed.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn reduce(rank: u32, n: u32, root: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n && root < n, "rank {rank} or root {root} out of {n}");
    let vr = (rank + n - root) % n;
    let real = |v: u32| ((v as u64 + root as u64) % n as u64) as u32;
    let mut mask = 1u32;
    while mask < n {
        if vr & mask == 0 {
            let child = vr as u64 | mask as u64;
            if child < n as u64 {
                push_round(out, &[(real(child as u32), false)], bytes);
            }
        } else {
            push_round(out, &[(real(vr & !mask), true)], bytes);
            break;
        }
        mask = mask.saturating_mul(2);
    }
}

/// Appends rank `rank`'s steps of a recursive-doubling all-reduction of
/// `bytes` bytes per rank over `n` ranks (MPICH's
/// `MPIR_Allreduce_intra_recursive_doubling`). In each of log₂ p rounds a
/// rank exchanges its whole buffer with the partner whose (folded) rank
/// differs in one bit. When `n` is not a power of two, with p the largest
/// power of two below n and `rem = n − p`: the even ranks `< 2·rem` first
/// send their data to the odd neighbour above and sit out; after the
/// doubling, each odd rank `< 2·rem` sends the result back.
///
/// # Panics
/// If `rank >= n`.
pub fn allreduce(rank: u32, n: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let pof2 = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
    let rem = n - pof2;
    let folded = if rank < 2 * rem {
        if rank & 1 == 0 {
            push_round(out, &[(rank + 1, true)], bytes);
            None
        } else {
            push_round(out, &[(rank - 1, false)], bytes);
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    };
    let Some(new) = folded else {
        push_round(out, &[(rank + 1, false)], bytes);
        return;
    };
    let mut mask = 1u32;
    while mask < pof2 {
        let partner_new = new ^ mask;
        let partner = if partner_new < rem { partner_new * 2 + 1 } else { partner_new + rem };
        push_round(out, &[(partner, true), (partner, false)], bytes);
        mask <<= 1;
    }
    if rank < 2 * rem {
        push_round(out, &[(rank - 1, true)], bytes);
    }
}

fn push_ops(out: &mut Vec<Step>, ops: &[(u32, bool, u64)]) {
    for (i, &(peer, send, bytes)) in ops.iter().enumerate() {
        out.push(Step { peer, bytes, send, end_round: i + 1 == ops.len() });
    }
}

/// Appends rank `rank`'s steps of a pairwise exchange over `n` ranks (the
/// all-to-all of MPICH and OpenMPI's `alltoall_intra_pairwise`): in round
/// k = 1..n it sends `send_bytes(to)` to `rank + k` and receives from
/// `rank − k` (mod n).
///
/// # Panics
/// If `rank >= n`.
pub fn pairwise(rank: u32, n: u32, send_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    for k in 1..n {
        let to = (rank + k) % n;
        let from = (rank + n - k) % n;
        push_ops(out, &[(to, true, send_bytes(to)), (from, false, 0)]);
    }
}

/// Appends rank `rank`'s steps of a ring all-gather over `n` ranks
/// (MPICH's `MPIR_Allgather(v)_intra_ring`): in round k = 0..n−1 it
/// forwards block `rank − k` (mod n), of `block_bytes(block)` bytes, to
/// `rank + 1` and receives from `rank − 1`.
///
/// # Panics
/// If `rank >= n`.
pub fn ring_allgather(rank: u32, n: u32, block_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    for k in 0..n.saturating_sub(1) {
        let block = (rank + n - k) % n;
        push_ops(out, &[((rank + 1) % n, true, block_bytes(block)), ((rank + n - 1) % n, false, 0)]);
    }
}

/// Appends rank `rank`'s steps of a linear gather of `bytes` to `root`
/// (OpenMPI's `gather_intra_basic_linear`): every other rank sends once;
/// the root posts all receives in one round.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn linear_gather(rank: u32, n: u32, root: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n && root < n, "rank {rank} or root {root} out of {n}");
    if rank != root {
        push_ops(out, &[(root, true, bytes)]);
    } else if n > 1 {
        let ops: Vec<_> = (0..n).filter(|&p| p != root).map(|p| (p, false, 0)).collect();
        push_ops(out, &ops);
    }
}

/// Appends rank `rank`'s steps of a linear scatter from `root`, which
/// sends `send_bytes(p)` to each other rank p in one round (OpenMPI's
/// `scatter_intra_basic_linear`).
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn linear_scatter(rank: u32, n: u32, root: u32, send_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    assert!(rank < n && root < n, "rank {rank} or root {root} out of {n}");
    if rank != root {
        push_ops(out, &[(root, false, 0)]);
    } else if n > 1 {
        let ops: Vec<_> = (0..n).filter(|&p| p != root).map(|p| (p, true, send_bytes(p))).collect();
        push_ops(out, &ops);
    }
}

/// Appends rank `rank`'s steps of a linear-chain scan of `bytes` per rank
/// (OpenMPI's `scan_intra_linear`): receive the prefix from `rank − 1`,
/// then send the new prefix to `rank + 1`.
///
/// # Panics
/// If `rank >= n`.
pub fn chain_scan(rank: u32, n: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    if rank > 0 {
        push_ops(out, &[(rank - 1, false, 0)]);
    }
    if rank + 1 < n {
        push_ops(out, &[(rank + 1, true, bytes)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Executes the schedules of all ranks with FIFO channels and returns,
    /// per rank, the set of ranks whose data it has seen at exit (a
    /// bitmask), or panics on a deadlock.
    fn run(schedules: &[Vec<Step>]) -> Vec<u64> {
        let n = schedules.len();
        let mut know: Vec<u64> = (0..n).map(|r| 1 << r).collect();
        let mut chan: Vec<VecDeque<u64>> = vec![VecDeque::new(); n * n];
        let mut pos = vec![0usize; n];
        let mut posted = vec![false; n];
        loop {
            let mut progress = false;
            for r in 0..n {
                let s = &schedules[r];
                if pos[r] == s.len() {
                    continue;
                }
                let end = pos[r] + s[pos[r]..].iter().position(|x| x.end_round).unwrap() + 1;
                let round = &s[pos[r]..end];
                if !posted[r] {
                    for st in round.iter().filter(|st| st.send) {
                        chan[r * n + st.peer as usize].push_back(know[r]);
                    }
                    posted[r] = true;
                    progress = true;
                }
                let ready = round.iter().filter(|st| !st.send).all(|st| !chan[st.peer as usize * n + r].is_empty());
                if ready {
                    for st in round.iter().filter(|st| !st.send) {
                        know[r] |= chan[st.peer as usize * n + r].pop_front().unwrap();
                    }
                    pos[r] = end;
                    posted[r] = false;
                    progress = true;
                }
            }
            if pos.iter().zip(schedules).all(|(p, s)| *p == s.len()) {
                assert!(chan.iter().all(|c| c.is_empty()), "unreceived messages");
                return know;
            }
            assert!(progress, "schedules deadlock: {pos:?}");
        }
    }

    fn schedules(n: u32, f: impl Fn(u32, &mut Vec<Step>)) -> Vec<Vec<Step>> {
        (0..n)
            .map(|r| {
                let mut v = Vec::new();
                f(r, &mut v);
                v
            })
            .collect()
    }

    fn rounds(s: &[Step]) -> usize {
        s.iter().filter(|x| x.end_round).count()
    }

    #[test]
    fn allreduce_gives_everyone_everything() {
        for n in 1..=33u32 {
            let all = (1u64 << n) - 1;
            let s = schedules(n, |r, v| allreduce(r, n, 8, v));
            assert!(run(&s).iter().all(|&k| k == all), "n = {n}");
            if n.is_power_of_two() {
                assert!(s.iter().all(|x| rounds(x) == n.trailing_zeros() as usize), "n = {n}");
            }
        }
    }

    #[test]
    fn reduce_gathers_at_the_root_and_bcast_reaches_all() {
        for n in 1..=20u32 {
            let all = (1u64 << n) - 1;
            for root in [0, n / 2, n - 1] {
                let know = run(&schedules(n, |r, v| reduce(r, n, root, 8, v)));
                assert_eq!(know[root as usize], all, "reduce n = {n} root = {root}");
                let know = run(&schedules(n, |r, v| bcast(r, n, root, 8, v)));
                assert!(know.iter().all(|k| k & (1 << root) != 0), "bcast n = {n} root = {root}");
            }
        }
    }

    #[test]
    fn dissemination_barrier_hears_from_everyone_in_ceil_log2_rounds() {
        for n in 1..=33u32 {
            let all = (1u64 << n) - 1;
            let s = schedules(n, |r, v| barrier(r, n, v));
            assert!(run(&s).iter().all(|&k| k == all), "n = {n}");
            let expect = if n == 1 { 0 } else { (n - 1).ilog2() as usize + 1 };
            assert!(s.iter().all(|x| rounds(x) == expect && x.iter().all(|st| st.bytes == 0)), "n = {n}");
        }
    }

    #[test]
    fn linear_barrier_hears_from_everyone_in_two_rounds() {
        for n in 1..=12u32 {
            let all = (1u64 << n) - 1;
            let s = schedules(n, |r, v| linear_barrier(r, n, v));
            assert!(run(&s).iter().all(|&k| k == all), "n = {n}");
        }
        let mut c = CollAlgs::preset("mpich").unwrap();
        c.set("barrier", "ompi_basic_linear").unwrap();
        assert_eq!(c.barrier, BarrierAlg::Linear);
        assert_eq!(c.set("allreduce", "nope").unwrap_err(), "unknown algorithm `nope` for allreduce");
        assert!(CollAlgs::preset("ompi").is_err());
    }

    #[test]
    fn pairwise_ring_linear_and_chain_deliver() {
        for n in 1..=12u32 {
            let all = (1u64 << n) - 1;
            assert!(run(&schedules(n, |r, v| pairwise(r, n, |_| 8, v))).iter().all(|&k| k == all), "n = {n}");
            assert!(run(&schedules(n, |r, v| ring_allgather(r, n, |_| 8, v))).iter().all(|&k| k == all), "n = {n}");
            for root in [0, n - 1] {
                assert_eq!(run(&schedules(n, |r, v| linear_gather(r, n, root, 8, v)))[root as usize], all);
                let know = run(&schedules(n, |r, v| linear_scatter(r, n, root, |_| 8, v)));
                assert!(know.iter().all(|k| k & (1 << root) != 0), "scatter n = {n}");
            }
            let know = run(&schedules(n, |r, v| chain_scan(r, n, 8, v)));
            assert!((0..n).all(|r| know[r as usize] == (1u64 << (r + 1)) - 1), "scan n = {n}");
        }
    }

    #[test]
    fn binomial_bcast_from_root_0_on_8_ranks() {
        let mut v = Vec::new();
        bcast(0, 8, 0, 4, &mut v);
        assert_eq!(v.iter().map(|s| (s.peer, s.send)).collect::<Vec<_>>(), [(4, true), (2, true), (1, true)]);
        v.clear();
        bcast(6, 8, 0, 4, &mut v);
        assert_eq!(v.iter().map(|s| (s.peer, s.send)).collect::<Vec<_>>(), [(4, false), (7, true)]);
    }
}

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
//! | barrier | dissemination (Hensgen, Finkel & Manber 1988), 0-byte messages | ⌈log₂ n⌉ |
//! | bcast | binomial tree; a parent sends to its children one after the other | ≤ ⌈log₂ n⌉ + 1 per rank |
//! | reduce | binomial tree to the root; a parent receives its children one after the other | ≤ ⌈log₂ n⌉ + 1 per rank |
//! | allreduce | recursive doubling; for `n` not a power of two, MPICH's fold: the first `2·rem` ranks pair up first and the odd one of each pair stands in for both | log₂ n, or ⌊log₂ n⌋ + 2 |
//!
//! Ranks here are world ranks and `n` is the world size: only
//! `MPI_COMM_WORLD` is supported so far.

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
    fn binomial_bcast_from_root_0_on_8_ranks() {
        let mut v = Vec::new();
        bcast(0, 8, 0, 4, &mut v);
        assert_eq!(v.iter().map(|s| (s.peer, s.send)).collect::<Vec<_>>(), [(4, true), (2, true), (1, true)]);
        v.clear();
        bcast(6, 8, 0, 4, &mut v);
        assert_eq!(v.iter().map(|s| (s.peer, s.send)).collect::<Vec<_>>(), [(4, false), (7, true)]);
    }
}

//! Rootless schedules: all-reduce, reduce-scatter, all-gather, all-to-all,
//! scan. Ranks are communicator ranks `0..n`.

use super::{push_ops, push_round, reduce_last, reducing, Step};

/// MPICH's fold for `n` not a power of two (Thakur et al. 2005 §4.1): with
/// p the largest power of two ≤ n and `rem = n − p`, the even ranks
/// `< 2·rem` hand their data to the odd rank above and sit out. Returns
/// `(p, rem, new rank or None for a rank that sits out)`.
pub(super) fn fold(rank: u32, n: u32) -> (u32, u32, Option<u32>) {
    let p = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
    let rem = n - p;
    let new = if rank < 2 * rem { (rank & 1 == 1).then_some(rank / 2) } else { Some(rank - rem) };
    (p, rem, new)
}

/// The rank that new rank `new` of [`fold`] stands for.
pub(super) fn unfold(new: u32, rem: u32) -> u32 {
    if new < rem {
        new * 2 + 1
    } else {
        new + rem
    }
}

/// Appends rank `rank`'s steps of a recursive-doubling all-reduction of
/// `bytes` bytes per rank over `n` ranks (MPICH's
/// `MPIR_Allreduce_intra_recursive_doubling`, OpenMPI's
/// `allreduce_intra_recursivedoubling`, SimGrid's `rdb`). In each of
/// log₂ p rounds a rank exchanges its whole buffer with the partner whose
/// (folded, see MPICH's fold) rank differs in one bit; when `n` is not a
/// power of two the folded-out ranks get the result back at the end.
///
/// # Panics
/// If `rank >= n`.
pub fn allreduce(rank: u32, n: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let (p, rem, new) = fold(rank, n);
    let Some(new) = new else {
        push_round(out, &[(rank + 1, true)], bytes);
        push_round(out, &[(rank + 1, false)], bytes);
        return;
    };
    let from = out.len();
    if rank < 2 * rem {
        push_round(out, &[(rank - 1, false)], bytes);
    }
    let mut mask = 1u32;
    while mask < p {
        let partner = unfold(new ^ mask, rem);
        push_round(out, &[(partner, true), (partner, false)], bytes);
        mask <<= 1;
    }
    reducing(out, from, bytes);
    if rank < 2 * rem {
        push_round(out, &[(rank - 1, true)], bytes);
    }
}

/// Sizes in bytes of `parts` blocks of `bytes` split by elements of
/// `elem` bytes as MPICH and OpenMPI split counts: `count / parts`
/// elements each, the last block taking the remainder.
pub fn split_blocks(bytes: u64, parts: u32, elem: u64) -> Vec<u64> {
    let count = bytes / elem;
    let each = count / parts as u64;
    let mut v = vec![each * elem; parts as usize];
    if let Some(last) = v.last_mut() {
        *last = bytes - each * elem * (parts as u64 - 1);
    }
    v
}

/// Recursive vector halving among the `p` folded ranks: block sizes
/// `blocks` (len p, by new rank); new rank `new` ends holding block `new`.
/// Each receive is a reduction step of the blocks the rank keeps.
fn halving(new: u32, p: u32, rem: u32, blocks: &[u64], out: &mut Vec<Step>) {
    let (mut lo, mut mask) = (0u32, p / 2);
    while mask > 0 {
        let partner_new = new ^ mask;
        let partner = unfold(partner_new, rem);
        let (keep, give) = if new < partner_new { (lo, lo + mask) } else { (lo + mask, lo) };
        let send: u64 = blocks[give as usize..(give + mask) as usize].iter().sum();
        push_ops(out, &[(partner, true, send), (partner, false, 0)]);
        let kept: u64 = blocks[keep as usize..(keep + mask) as usize].iter().sum();
        reduce_last(out, kept);
        lo = keep;
        mask /= 2;
    }
}

/// Recursive vector doubling among the folded ranks, the inverse of
/// [`halving`]: new rank `new` starts with block `new` and ends with all.
fn doubling(new: u32, p: u32, rem: u32, blocks: &[u64], out: &mut Vec<Step>) {
    let mut mask = 1u32;
    while mask < p {
        let partner = unfold(new ^ mask, rem);
        let base = new & !(mask - 1);
        let send: u64 = blocks[base as usize..(base + mask) as usize].iter().sum();
        push_ops(out, &[(partner, true, send), (partner, false, 0)]);
        mask <<= 1;
    }
}

/// Appends rank `rank`'s steps of Rabenseifner's all-reduction of `bytes`
/// bytes (elements of `elem` bytes) per rank (Rabenseifner 2004; MPICH's
/// `MPIR_Allreduce_intra_reduce_scatter_allgather`, OpenMPI's
/// `allreduce_intra_redscat_allgather`, SimGrid's `rab_rdb`): after MPICH's
/// fold, a reduce-scatter by recursive halving (round k sends
/// bytes / 2^(k+1)) and an all-gather by recursive doubling; each folded
/// rank sends `2 (p − 1) / p × bytes` in all.
///
/// # Panics
/// If `rank >= n` or `elem` is 0.
pub fn rabenseifner_allreduce(rank: u32, n: u32, bytes: u64, elem: u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let (p, rem, new) = fold(rank, n);
    let Some(new) = new else {
        push_round(out, &[(rank + 1, true)], bytes);
        push_round(out, &[(rank + 1, false)], bytes);
        return;
    };
    if rank < 2 * rem {
        push_round(out, &[(rank - 1, false)], bytes);
        reduce_last(out, bytes);
    }
    let blocks = split_blocks(bytes, p, elem);
    halving(new, p, rem, &blocks, out);
    doubling(new, p, rem, &blocks, out);
    if rank < 2 * rem {
        push_round(out, &[(rank - 1, true)], bytes);
    }
}

/// Appends rank `rank`'s steps of Rabenseifner's reduction to `root`
/// (MPICH's `MPIR_Reduce_intra_reduce_scatter_gather`): ranks renumbered
/// from the root, MPICH's fold, a reduce-scatter by recursive halving,
/// then a binomial gather of the blocks to new rank 0; when that rank is
/// not the root (the root was folded out), it sends the result on.
///
/// # Panics
/// If `rank` or `root` is `>= n`, or `elem` is 0.
pub fn rabenseifner_reduce(rank: u32, n: u32, root: u32, bytes: u64, elem: u64, out: &mut Vec<Step>) {
    assert!(rank < n && root < n, "rank {rank} or root {root} out of {n}");
    let vr = (rank + n - root) % n;
    let real = |v: u32| ((v as u64 + root as u64) % n as u64) as u32;
    let (p, rem, new) = fold(vr, n);
    let Some(new) = new else {
        push_round(out, &[(real(vr + 1), true)], bytes);
        if vr == 0 && n > 1 {
            push_round(out, &[(real(1), false)], bytes);
        }
        return;
    };
    if vr < 2 * rem {
        push_round(out, &[(real(vr - 1), false)], bytes);
        reduce_last(out, bytes);
    }
    let blocks = split_blocks(bytes, p, elem);
    let mut half = Vec::new();
    halving(new, p, rem, &blocks, &mut half);
    out.extend(half.into_iter().map(|s| Step { peer: real(s.peer), ..s }));
    let mut mask = 1u32;
    while mask < p {
        if new & mask != 0 {
            let send: u64 = blocks[new as usize..(new + mask).min(p) as usize].iter().sum();
            push_round(out, &[(real(unfold(new - mask, rem)), true)], send);
            break;
        }
        push_round(out, &[(real(unfold(new + mask, rem)), false)], 0);
        mask <<= 1;
    }
    if new == 0 && unfold(0, rem) != 0 {
        push_round(out, &[(real(0), true)], bytes);
    }
}

/// Appends rank `rank`'s steps of a reduce-scatter by recursive halving
/// (MPICH's `MPIR_Reduce_scatter_intra_recursive_halving`, OpenMPI's
/// `reduce_scatter_intra_basic_recursivehalving`): rank i ends with
/// `recv_bytes[i]`. After MPICH's fold (the even rank sends the whole
/// vector), each folded rank stands for the blocks of the ranks it
/// represents; the odd ranks finally send the even ones their block.
///
/// # Panics
/// If `rank >= n` or `recv_bytes.len() != n`.
pub fn recursive_halving_reduce_scatter(rank: u32, n: u32, recv_bytes: &[u64], out: &mut Vec<Step>) {
    assert!(rank < n && recv_bytes.len() == n as usize, "rank {rank} of {n}, {} sizes", recv_bytes.len());
    let total: u64 = recv_bytes.iter().sum();
    let (p, rem, new) = fold(rank, n);
    let Some(new) = new else {
        push_round(out, &[(rank + 1, true)], total);
        push_round(out, &[(rank + 1, false)], 0);
        return;
    };
    if rank < 2 * rem {
        push_round(out, &[(rank - 1, false)], 0);
        reduce_last(out, total);
    }
    let blocks: Vec<u64> = (0..p)
        .map(|q| if q < rem { recv_bytes[2 * q as usize] + recv_bytes[2 * q as usize + 1] } else { recv_bytes[(q + rem) as usize] })
        .collect();
    halving(new, p, rem, &blocks, out);
    if rank < 2 * rem {
        push_round(out, &[(rank - 1, true)], recv_bytes[rank as usize - 1]);
    }
}

/// Appends rank `rank`'s steps of a ring reduce-scatter (OpenMPI's
/// `reduce_scatter_intra_ring`; the first phase of a ring all-reduce): in
/// step k = 0..n−1 rank r sends its partial block `r − k − 1` (mod n),
/// of `block_bytes(block)` bytes, to `r + 1` and receives from `r − 1`
/// block `r − k − 2`, which it combines with its own (a reduction step);
/// block b ends complete on rank b.
///
/// # Panics
/// If `rank >= n`.
pub fn ring_reduce_scatter(rank: u32, n: u32, block_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    for k in 0..n.saturating_sub(1) {
        let block = (rank + 2 * n - k - 1) % n;
        push_ops(out, &[((rank + 1) % n, true, block_bytes(block)), ((rank + n - 1) % n, false, 0)]);
        reduce_last(out, block_bytes((rank + 2 * n - k - 2) % n));
    }
}

/// Appends rank `rank`'s steps of a ring all-reduction (OpenMPI's
/// `allreduce_intra_ring`, SimGrid's `lr`; Patarasuk & Yuan 2009): a ring
/// reduce-scatter of `bytes` cut into n blocks (elements of `elem`
/// bytes), then a ring all-gather. Each rank sends `2 (n − 1) / n × bytes`.
///
/// # Panics
/// If `rank >= n` or `elem` is 0.
pub fn ring_allreduce(rank: u32, n: u32, bytes: u64, elem: u64, out: &mut Vec<Step>) {
    let blocks = split_blocks(bytes, n, elem);
    ring_reduce_scatter(rank, n, |b| blocks[b as usize], out);
    ring_allgather(rank, n, |b| blocks[b as usize], out);
}

/// Appends rank `rank`'s steps of a pairwise exchange over `n` ranks (the
/// all-to-all of MPICH and OpenMPI's `alltoall_intra_pairwise`, and
/// MPICH's long-message reduce-scatter): in round k = 1..n it sends
/// `send_bytes(to)` to `rank + k` and receives from `rank − k` (mod n).
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

/// Appends rank `rank`'s steps of a linear all-to-all (OpenMPI's
/// `alltoall(v)_intra_basic_linear`, MPICH's "scattered" medium-size
/// all-to-all without throttling): one round posting every send, of
/// `send_bytes(peer)`, and every receive.
///
/// # Panics
/// If `rank >= n`.
pub fn linear_alltoall(rank: u32, n: u32, send_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let mut ops: Vec<(u32, bool, u64)> = (1..n).map(|k| ((rank + k) % n, true, send_bytes((rank + k) % n))).collect();
    ops.extend((1..n).map(|k| ((rank + n - k) % n, false, 0)));
    if !ops.is_empty() {
        push_ops(out, &ops);
    }
}

/// Appends rank `rank`'s steps of Bruck's all-to-all (Bruck et al., IEEE
/// TPDS 1997; MPICH's short-message all-to-all, OpenMPI's `modified_bruck`):
/// in round k (distance 2^k < n) it sends to `rank + 2^k` and receives from
/// `rank − 2^k` the blocks whose index has bit k set, `bytes` each.
///
/// # Panics
/// If `rank >= n`.
pub fn bruck_alltoall(rank: u32, n: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let mut dist = 1u32;
    while dist < n {
        let blocks = (0..n).filter(|j| j & dist != 0).count() as u64;
        push_ops(out, &[((rank + dist) % n, true, blocks * bytes), ((rank + n - dist) % n, false, 0)]);
        dist <<= 1;
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

/// Appends rank `rank`'s steps of a recursive-doubling all-gather (MPICH's
/// and OpenMPI's `recursive_doubling`, SimGrid's `rdb`): in round k it
/// exchanges with `rank ^ 2^k` the 2^k blocks it holds. For `n` not a
/// power of two it is Bruck's all-gather, as OpenMPI falls back to.
///
/// # Panics
/// If `rank >= n`.
pub fn rdb_allgather(rank: u32, n: u32, block_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    if !n.is_power_of_two() {
        return bruck_allgather(rank, n, block_bytes, out);
    }
    let mut mask = 1u32;
    while mask < n {
        let base = rank & !(mask - 1);
        let send: u64 = (base..base + mask).map(&block_bytes).sum();
        push_ops(out, &[(rank ^ mask, true, send), (rank ^ mask, false, 0)]);
        mask <<= 1;
    }
}

/// Appends rank `rank`'s steps of Bruck's all-gather (MPICH's
/// `MPIR_Allgather_intra_brucks`, OpenMPI's `allgather_intra_bruck`): in
/// round k (distance 2^k < n) it sends the min(2^k, n − 2^k) blocks it
/// holds, `rank .. rank + count` (mod n), to `rank − 2^k` and receives
/// from `rank + 2^k`.
///
/// # Panics
/// If `rank >= n`.
pub fn bruck_allgather(rank: u32, n: u32, block_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let mut dist = 1u32;
    while dist < n {
        let count = dist.min(n - dist);
        let send: u64 = (0..count).map(|j| block_bytes((rank + j) % n)).sum();
        push_ops(out, &[((rank + n - dist) % n, true, send), ((rank + dist) % n, false, 0)]);
        dist <<= 1;
    }
}

/// Appends rank `rank`'s steps of OpenMPI's neighbor-exchange all-gather
/// (`allgather_intra_neighborexchange`; Chen et al. 2005) of `bytes` per
/// rank: for even `n`, a first exchange of one block with one neighbour,
/// then n/2 − 1 exchanges of two blocks alternating between the two
/// neighbours. For odd `n` it is the ring, as in OpenMPI.
///
/// # Panics
/// If `rank >= n`.
pub fn neighbor_allgather(rank: u32, n: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    if n % 2 == 1 {
        return ring_allgather(rank, n, |_| bytes, out);
    }
    let (right, left) = ((rank + 1) % n, (rank + n - 1) % n);
    let nb = if rank.is_multiple_of(2) { [right, left] } else { [left, right] };
    push_ops(out, &[(nb[0], true, bytes), (nb[0], false, 0)]);
    for i in 1..n / 2 {
        let p = nb[(i % 2) as usize];
        push_ops(out, &[(p, true, 2 * bytes), (p, false, 0)]);
    }
}

/// Appends rank `rank`'s steps of a linear all-gather (SimGrid's
/// `NTSLR_NB`; the send and receive of every pair in one round).
///
/// # Panics
/// If `rank >= n`.
pub fn linear_allgather(rank: u32, n: u32, block_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    linear_alltoall(rank, n, |_| block_bytes(rank), out);
}

/// Appends rank `rank`'s steps of a linear-chain scan of `bytes` per rank
/// (OpenMPI's `scan_intra_linear`): receive the prefix from `rank − 1`,
/// and combine it (a reduction step), then send the new prefix to `rank + 1`.
///
/// # Panics
/// If `rank >= n`.
pub fn chain_scan(rank: u32, n: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    if rank > 0 {
        push_ops(out, &[(rank - 1, false, 0)]);
        reduce_last(out, bytes);
    }
    if rank + 1 < n {
        push_ops(out, &[(rank + 1, true, bytes)]);
    }
}

/// Appends rank `rank`'s steps of a recursive-doubling scan or exscan
/// (MPICH's `MPIR_Scan_intra_recursive_doubling`): in round k it exchanges
/// its partial result with `rank ^ 2^k` when that rank exists and combines
/// what it receives (one reduction step per round).
///
/// # Panics
/// If `rank >= n`.
pub fn rdb_scan(rank: u32, n: u32, bytes: u64, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let mut mask = 1u32;
    while mask < n {
        let partner = rank ^ mask;
        if partner < n {
            push_ops(out, &[(partner, true, bytes), (partner, false, 0)]);
            reduce_last(out, bytes);
        }
        mask <<= 1;
    }
}

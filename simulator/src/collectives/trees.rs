//! Rooted and tree-shaped schedules: barriers, broadcasts, reductions,
//! gathers and scatters. Ranks are communicator ranks `0..n`; `root` is a
//! communicator rank too.

use super::{push_ops, push_round, reduce_last, reducing, segments, Step};

/// Virtual rank of `rank` when `root` is renumbered 0.
fn virt(rank: u32, n: u32, root: u32) -> u32 {
    (rank + n - root) % n
}

/// Real rank of virtual rank `v`.
fn real(v: u32, n: u32, root: u32) -> u32 {
    ((v as u64 + root as u64) % n as u64) as u32
}

fn check(rank: u32, n: u32, root: u32) {
    assert!(rank < n && root < n, "rank {rank} or root {root} out of {n}");
}

/// Appends rank `rank`'s steps of a dissemination barrier over `n` ranks
/// (Hensgen, Finkel & Manber 1988; MPICH's barrier, OpenMPI's and
/// SimGrid's `ompi_bruck`): in round k it sends 0 bytes to `rank + 2^k`
/// and receives from `rank − 2^k` (mod n), for ⌈log₂ n⌉ rounds.
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

/// Appends rank `rank`'s steps of OpenMPI's recursive-doubling barrier
/// (`barrier_intra_recursivedoubling`): with p the largest power of two
/// ≤ n, ranks `≥ p` send 0 bytes to `rank − p` and wait for its answer
/// (one round); ranks `< n − p` first receive from `rank + p`; ranks `< p`
/// exchange with `rank ^ 2^k` for log₂ p rounds; ranks `< n − p` finally
/// release `rank + p`.
///
/// # Panics
/// If `rank >= n`.
pub fn recursive_doubling_barrier(rank: u32, n: u32, out: &mut Vec<Step>) {
    assert!(rank < n, "rank {rank} out of {n}");
    let p = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
    if rank >= p {
        push_round(out, &[(rank - p, true), (rank - p, false)], 0);
        return;
    }
    if rank < n - p {
        push_round(out, &[(rank + p, false)], 0);
    }
    let mut mask = 1;
    while mask < p {
        push_round(out, &[(rank ^ mask, true), (rank ^ mask, false)], 0);
        mask <<= 1;
    }
    if rank < n - p {
        push_round(out, &[(rank + p, true)], 0);
    }
}

/// Appends rank `rank`'s steps of a binomial-tree broadcast of `bytes`
/// bytes from `root` over `n` ranks: receive from the parent, then send to
/// each child, largest subtree first, one blocking send per round
/// (MPICH's `MPIR_Bcast_intra_binomial`; OpenMPI's `bcast_intra_binomial`
/// unsegmented). `n − 1` messages of `bytes`.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn bcast(rank: u32, n: u32, root: u32, bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    let vr = virt(rank, n, root);
    let mut mask = 1u32;
    while mask < n {
        if vr & mask != 0 {
            push_round(out, &[(real(vr - mask, n, root), false)], bytes);
            break;
        }
        mask = mask.saturating_mul(2);
    }
    mask >>= 1;
    while mask > 0 {
        if vr as u64 + (mask as u64) < n as u64 {
            push_round(out, &[(real(vr + mask, n, root), true)], bytes);
        }
        mask >>= 1;
    }
}

/// Appends rank `rank`'s steps of a binomial-tree reduction of `bytes`
/// bytes per rank to `root` over `n` ranks: receive from each child,
/// smallest subtree first, one per round, then send to the parent
/// (MPICH's `MPIR_Reduce_intra_binomial`, commutative operation). Each
/// receive is a reduction step of `bytes`.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn reduce(rank: u32, n: u32, root: u32, bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    let vr = virt(rank, n, root);
    let mut mask = 1u32;
    while mask < n {
        if vr & mask == 0 {
            let child = vr as u64 | mask as u64;
            if child < n as u64 {
                push_round(out, &[(real(child as u32, n, root), false)], bytes);
                reduce_last(out, bytes);
            }
        } else {
            push_round(out, &[(real(vr & !mask, n, root), true)], bytes);
            break;
        }
        mask = mask.saturating_mul(2);
    }
}

/// Appends rank `rank`'s steps of a linear gather of `bytes` to `root`
/// (OpenMPI's `gather_intra_basic_linear`): every other rank sends once;
/// the root posts all receives in one round.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn linear_gather(rank: u32, n: u32, root: u32, bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    if rank != root {
        push_ops(out, &[(root, true, bytes)]);
    } else if n > 1 {
        let ops: Vec<_> = (0..n).filter(|&p| p != root).map(|p| (p, false, 0)).collect();
        push_ops(out, &ops);
    }
}

/// Appends rank `rank`'s steps of a linear scatter from `root`, which
/// sends `send_bytes(p)` to each other rank p in one round (OpenMPI's
/// `scatter_intra_basic_linear`; with equal sizes also OpenMPI's linear
/// broadcast, `bcast_intra_basic_linear`).
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn linear_scatter(rank: u32, n: u32, root: u32, send_bytes: impl Fn(u32) -> u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    if rank != root {
        push_ops(out, &[(root, false, 0)]);
    } else if n > 1 {
        let ops: Vec<_> = (0..n).filter(|&p| p != root).map(|p| (p, true, send_bytes(p))).collect();
        push_ops(out, &ops);
    }
}

/// Number of ranks in the binomial subtree of virtual rank `vr` whose
/// lowest set bit is `mask` (the whole remaining range for vr = 0).
fn subtree(vr: u32, mask: u32, n: u32) -> u64 {
    (mask as u64).min((n - vr) as u64)
}

/// Appends rank `rank`'s steps of a binomial gather to `root` of `bytes`
/// per rank (OpenMPI's `gather_intra_binomial`, MPICH's gather): a rank
/// receives its children's subtrees, smallest first, then sends its whole
/// subtree (`subtree ranks × bytes`) to its parent. Every rank's
/// contribution crosses ⌈log₂ n⌉ hops at most; the root receives
/// `(n − 1) × bytes` in all.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn binomial_gather(rank: u32, n: u32, root: u32, bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    let vr = virt(rank, n, root);
    let mut mask = 1u32;
    while mask < n {
        if vr & mask == 0 {
            if vr as u64 + (mask as u64) < n as u64 {
                push_round(out, &[(real(vr + mask, n, root), false)], 0);
            }
        } else {
            push_round(out, &[(real(vr - mask, n, root), true)], subtree(vr, mask, n) * bytes);
            break;
        }
        mask = mask.saturating_mul(2);
    }
}

/// Appends rank `rank`'s steps of a binomial scatter from `root` of
/// `bytes` per rank (OpenMPI's `scatter_intra_binomial`, MPICH's
/// scatter): a rank receives its subtree's data from its parent, then
/// sends each child its subtree's part, largest first.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn binomial_scatter(rank: u32, n: u32, root: u32, bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    scatter_tree(rank, n, root, |vr, mask| subtree(vr, mask, n) * bytes, out);
}

/// Binomial scatter where the message to virtual rank `vr` (lowest set bit
/// `mask`) carries `part(vr, mask)` bytes.
fn scatter_tree(rank: u32, n: u32, root: u32, part: impl Fn(u32, u32) -> u64, out: &mut Vec<Step>) {
    let vr = virt(rank, n, root);
    let mut mask = 1u32;
    while mask < n {
        if vr & mask != 0 {
            push_round(out, &[(real(vr - mask, n, root), false)], 0);
            break;
        }
        mask = mask.saturating_mul(2);
    }
    mask >>= 1;
    while mask > 0 {
        if vr as u64 + (mask as u64) < n as u64 {
            push_round(out, &[(real(vr + mask, n, root), true)], part(vr + mask, mask));
        }
        mask >>= 1;
    }
}

/// Appends rank `rank`'s steps of a pipelined chain broadcast of `bytes`
/// from `root` in segments of `seg_bytes` (0: one segment) (OpenMPI's
/// `bcast_intra_chain` with fan-out 1 and `bcast_intra_pipeline`): rank
/// `root + v` receives each segment from `root + v − 1` and forwards it to
/// `root + v + 1`, sending segment i while receiving segment i + 1.
/// `(n − 1) × ⌈bytes / seg⌉` messages.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn chain_bcast(rank: u32, n: u32, root: u32, bytes: u64, seg_bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    let vr = virt(rank, n, root);
    let parent = (vr > 0).then(|| real(vr - 1, n, root));
    let child = (vr + 1 < n).then(|| real(vr + 1, n, root));
    pipeline_tree(parent.as_slice(), child.as_slice(), bytes, seg_bytes, false, out);
}

/// Appends rank `rank`'s steps of a pipelined chain reduction to `root` in
/// segments of `seg_bytes` (OpenMPI's `reduce_intra_chain`/`pipeline`):
/// rank `root + v` receives each segment from `root + v + 1` and sends the
/// partial result on to `root + v − 1`; each received segment is a
/// reduction step.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn chain_reduce(rank: u32, n: u32, root: u32, bytes: u64, seg_bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    let vr = virt(rank, n, root);
    let from = (vr + 1 < n).then(|| real(vr + 1, n, root));
    let to = (vr > 0).then(|| real(vr - 1, n, root));
    pipeline_tree(from.as_slice(), to.as_slice(), bytes, seg_bytes, true, out);
}

/// Children of virtual rank `vr` in OpenMPI's binary tree (`topo_build_tree`
/// with fan-out 2): `2 vr + 1` and `2 vr + 2`.
fn binary_children(vr: u32, n: u32) -> impl Iterator<Item = u32> {
    [2 * vr as u64 + 1, 2 * vr as u64 + 2].into_iter().filter(move |&c| c < n as u64).map(|c| c as u32)
}

/// Appends rank `rank`'s steps of a segmented binary-tree broadcast
/// (OpenMPI's `bcast_intra_bintree`; its split-binary variant is costed
/// the same): segments flow from parent `(v − 1) / 2` to children
/// `2v + 1`, `2v + 2`, pipelined as in [`chain_bcast`].
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn binary_bcast(rank: u32, n: u32, root: u32, bytes: u64, seg_bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    let vr = virt(rank, n, root);
    let parent = (vr > 0).then(|| real((vr - 1) / 2, n, root));
    let kids: Vec<u32> = binary_children(vr, n).map(|c| real(c, n, root)).collect();
    pipeline_tree(parent.as_slice(), &kids, bytes, seg_bytes, false, out);
}

/// Appends rank `rank`'s steps of a segmented binary-tree reduction
/// (OpenMPI's `reduce_intra_binary` and `in_order_binary`): each segment
/// goes from the children `2v + 1`, `2v + 2` to the parent `(v − 1) / 2`;
/// each received segment is a reduction step.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn binary_reduce(rank: u32, n: u32, root: u32, bytes: u64, seg_bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    let vr = virt(rank, n, root);
    let kids: Vec<u32> = binary_children(vr, n).map(|c| real(c, n, root)).collect();
    let parent = (vr > 0).then(|| real((vr - 1) / 2, n, root));
    pipeline_tree(&kids, parent.as_slice(), bytes, seg_bytes, true, out);
}

/// A pipeline over a tree: in round i a rank forwards segment i − 1 to
/// each of `to` and receives segment i from each of `from`, combining it
/// when `reduce`.
fn pipeline_tree(from: &[u32], to: &[u32], bytes: u64, seg_bytes: u64, reduce: bool, out: &mut Vec<Step>) {
    let segs = segments(bytes, seg_bytes);
    for i in 0..=segs.len() {
        let mut ops: Vec<(u32, bool, u64)> = Vec::new();
        if i > 0 {
            ops.extend(to.iter().map(|&c| (c, true, segs[i - 1])));
        }
        if i < segs.len() {
            ops.extend(from.iter().map(|&p| (p, false, 0)));
        }
        if !ops.is_empty() {
            let at = out.len();
            push_ops(out, &ops);
            if reduce && i < segs.len() {
                reducing(out, at, segs[i]);
            }
        }
    }
}

/// Appends rank `rank`'s steps of a k-nomial broadcast of radix `k`
/// (MVAPICH2's `knomial_intra_node`, OpenMPI 4.1's `bcast_intra_knomial`
/// with its default radix 4): a rank receives from its parent, then sends
/// to all its children of one level in one round, highest level first.
///
/// # Panics
/// If `rank` or `root` is `>= n`, or `k < 2`.
pub fn knomial_bcast(rank: u32, n: u32, root: u32, k: u32, bytes: u64, out: &mut Vec<Step>) {
    check(rank, n, root);
    assert!(k >= 2, "radix {k} < 2");
    let (vr, n64, k64) = (virt(rank, n, root) as u64, n as u64, k as u64);
    let mut mask = 1u64;
    while mask < n64 {
        if vr % (k64 * mask) != 0 {
            push_round(out, &[(real((vr - vr % (k64 * mask)) as u32, n, root), false)], bytes);
            break;
        }
        mask *= k64;
    }
    // mask is now the level above this rank's children.
    mask /= k64;
    while mask > 0 {
        let kids: Vec<(u32, bool, u64)> =
            (1..k64).map(|j| vr + j * mask).filter(|&c| c < n64).map(|c| (real(c as u32, n, root), true, bytes)).collect();
        if !kids.is_empty() {
            push_ops(out, &kids);
        }
        mask /= k64;
    }
}

/// Appends rank `rank`'s steps of van de Geijn's broadcast (MPICH's
/// `MPIR_Bcast_intra_scatter_{recursive_doubling,ring}_allgather`;
/// Barnett et al. 1994): a binomial scatter of `bytes` cut in `n` chunks of
/// ⌈bytes / n⌉, then an all-gather of the chunks, by recursive doubling
/// when `ring` is false and `n` is a power of two, else by a ring.
///
/// # Panics
/// If `rank` or `root` is `>= n`.
pub fn scatter_allgather_bcast(rank: u32, n: u32, root: u32, bytes: u64, ring: bool, out: &mut Vec<Step>) {
    check(rank, n, root);
    let chunk = bytes.div_ceil(n as u64);
    // Bytes of chunks [v, v + count) that exist (the tail may be short).
    let span = move |v: u64, count: u64| (v * chunk + count * chunk).min(bytes).saturating_sub(v * chunk);
    scatter_tree(rank, n, root, |vr, mask| span(vr as u64, subtree(vr, mask, n)), out);
    let vr = virt(rank, n, root);
    if !ring && n.is_power_of_two() {
        let mut mask = 1u32;
        while mask < n {
            let peer = vr ^ mask;
            let mine = vr & !(mask - 1);
            push_ops(out, &[(real(peer, n, root), true, span(mine as u64, mask as u64)), (real(peer, n, root), false, 0)]);
            mask <<= 1;
        }
    } else {
        for k in 0..n.saturating_sub(1) {
            let block = (vr + n - k) % n;
            let (to, from) = (real((vr + 1) % n, n, root), real((vr + n - 1) % n, n, root));
            push_ops(out, &[(to, true, span(block as u64, 1)), (from, false, 0)]);
        }
    }
}

//! Open MPI's OMPIO collective I/O as a timing model (Open MPI 4.1,
//! `ompi/mca/fcoll/base/fcoll_base_file_select.c`,
//! `ompi/mca/fcoll/individual`, `ompi/mca/fcoll/vulcan`,
//! `ompi/mca/common/ompio/common_ompio_aggregators.c`).
//!
//! OMPIO's `fcoll` framework picks a component per file:
//!
//! - `individual` for a communicator of at most
//!   [`INDIVIDUAL_MAX_RANKS`] ranks: a collective access is each rank's
//!   own independent access, with no exchange and no wait for the others;
//! - `vulcan` above (on file systems other than Lustre): the aggregators
//!   ([`aggregators`]) each own an even share of the accessed range (its
//!   file domain); a write runs in cycles of half the aggregator buffer
//!   (`cb_buffer_size`, [`DEFAULT_BYTES_PER_AGG`]) of data per
//!   aggregator, every cycle exchanging the members' data with the
//!   aggregators, then writing; with more than two cycles the write of one
//!   cycle overlaps the exchange of the next (`fbtl` posix's asynchronous
//!   writes). A read runs in cycles of the whole buffer: read, then
//!   exchange. All ranks proceed cycle by cycle together. Before the
//!   cycles, `vulcan` sets up ([`setup_s`]): two allreduces of the
//!   accessed range's ends (its `minmax`), an allreduce of the bytes per
//!   aggregator, an allgather of each rank's number of file pieces per
//!   aggregator and, per aggregator, an allgatherv of those pieces
//!   (offset and length, 16 bytes each).

use super::plan::{Plan, Step};
use super::state::{FsState, IoKind};
use super::{Hints, Member};

/// OMPIO's default aggregator buffer (`io_ompio_bytes_per_agg`; the
/// `cb_buffer_size` hint replaces it), bytes.
pub const DEFAULT_BYTES_PER_AGG: u64 = 32 * 1024 * 1024;

/// Largest communicator whose collective accesses `fcoll` runs as
/// `individual` (independent accesses), ranks.
pub const INDIVIDUAL_MAX_RANKS: usize = 2;

/// Ranks per aggregator at least (`io_ompio_max_aggregators_ratio`).
pub const MAX_AGGREGATORS_RATIO: usize = 8;

/// Whether OMPIO runs a collective access of a communicator of `ranks`
/// ranks as independent accesses (`fcoll` `individual`).
pub fn individual(ranks: usize) -> bool {
    ranks <= INDIVIDUAL_MAX_RANKS
}

/// OMPIO's number of aggregators for `ranks` ranks without a `cb_nodes`
/// hint: `⌊ranks / 8⌋`, at least 1. OMPIO's simple grouping adds
/// aggregators while its communication model (Jha & Gabriel, "Performance
/// models for communication in collective I/O operations", CCGrid 2017
/// workshops) still gains, up to this cap; the model takes the cap.
pub fn default_aggregators(ranks: usize) -> usize {
    (ranks / MAX_AGGREGATORS_RATIO).max(1)
}

/// The aggregators among `ranks` members (indices in communicator
/// order): `cb_nodes` of them (default [`default_aggregators`], at most
/// `ranks`), the first rank of each of as many consecutive groups, the
/// first `ranks mod A` groups one rank larger (OMPIO's forced grouping).
pub fn aggregators(ranks: usize, cb_nodes: Option<u32>) -> Vec<usize> {
    if ranks == 0 {
        return Vec::new();
    }
    let a = cb_nodes.map_or_else(|| default_aggregators(ranks), |c| c as usize).clamp(1, ranks);
    let (size, rest) = (ranks / a, ranks % a);
    let mut first = 0;
    (0..a)
        .map(|g| {
            let at = first;
            first += size + usize::from(g < rest);
            at
        })
        .collect()
}

/// The schedule of a collective access of `file` by `members` (in
/// communicator order) as OMPIO runs it, one party per member:
/// [`individual`] accesses (each member's own request at its entry) up to
/// [`INDIVIDUAL_MAX_RANKS`] members, else `vulcan`'s cycles (see the
/// module docs) from the last member's entry, every member completing
/// with the last cycle. `hints` give `cb_nodes` and `cb_buffer_size`
/// (else the file system's, else OMPIO's defaults); `exchange(from, to,
/// bytes)` is the transfer time between two members, seconds.
pub fn plan(fs: &FsState, file: u32, members: &[Member], kind: IoKind, hints: &Hints, exchange: impl Fn(usize, usize, u64) -> f64) -> Plan {
    let mut p = Plan::default();
    if individual(members.len()) {
        for (i, m) in members.iter().enumerate() {
            let s = p.request((m.entry_s, i as u32), &[], file, m.offset, m.bytes, kind);
            p.outputs.push(s);
        }
        return p;
    }
    let (t0, range) = Member::extent(members);
    let Some((lo, hi)) = range else {
        let s = p.add(Step::Join, t0, &[]);
        p.outputs = vec![s; members.len()];
        return p;
    };
    let aggs = aggregators(members.len(), hints.cb_nodes.or(fs.fs().cb_nodes));
    let buffer = hints.cb_buffer_bytes.or(fs.fs().cb_buffer_bytes).unwrap_or(DEFAULT_BYTES_PER_AGG).max(2);
    let cycle = match kind {
        IoKind::Write => buffer / 2,
        IoKind::Read => buffer,
    };
    let domain = (hi - lo).div_ceil(aggs.len() as u64);
    let domains: Vec<(u64, u64)> = (0..aggs.len() as u64).map(|a| (lo + a * domain, (lo + (a + 1) * domain).min(hi))).collect();
    let cycles = domains.iter().map(|&(a, b)| data_in(members, a, b).div_ceil(cycle)).max().unwrap_or(0);
    let setup = p.add(Step::Join, t0, &[]);
    let setup = p.add(Step::Delay(setup_s(members, &domains, &exchange)), t0, &[setup]);
    // Each aggregator's cycle k: the file window holding its domain's data
    // from k·cycle to (k+1)·cycle, its data, where it starts, and the
    // exchange's time (the largest remote contributor's link carrying all
    // remote data).
    let step = |k: u64| -> Vec<(u64, u64, f64, u32)> {
        let mut out = Vec::new();
        for (ai, &(d_lo, d_hi)) in domains.iter().enumerate() {
            let (w_lo, w_hi) = (window_end(members, d_lo, d_hi, k * cycle), window_end(members, d_lo, d_hi, (k + 1) * cycle));
            let parts: Vec<(usize, u64)> =
                members.iter().enumerate().map(|(i, m)| (i, before(m, w_hi) - before(m, w_lo))).filter(|p| p.1 > 0).collect();
            let data: u64 = parts.iter().map(|p| p.1).sum();
            if data == 0 {
                continue;
            }
            let agg = aggs[ai];
            let first = parts.iter().map(|&(i, _)| members[i].offset.max(w_lo)).min().unwrap_or(w_lo);
            let remote = parts.iter().filter(|p| p.0 != agg);
            let moved: u64 = remote.clone().map(|p| p.1).sum();
            let swap = remote.max_by_key(|p| p.1).map_or(0.0, |&(i, _)| match kind {
                IoKind::Write => exchange(i, agg, moved),
                IoKind::Read => exchange(agg, i, moved),
            });
            out.push((first, data, swap, agg as u32));
        }
        out
    };
    // The aggregators' accesses of one cycle from step `at`, and the step
    // ending with the last of them.
    let access = |p: &mut Plan, at: u32, work: &[(u64, u64, f64, u32)]| {
        let mut ends = vec![at];
        ends.extend(work.iter().map(|&(first, data, _, agg)| p.request((t0, agg), &[at], file, first, data, kind)));
        p.add(Step::Join, t0, &ends)
    };
    let swapped =
        |p: &mut Plan, at: u32, work: &[(u64, u64, f64, u32)]| p.add(Step::Delay(work.iter().map(|w| w.2).fold(0.0, f64::max)), t0, &[at]);
    let mut t = setup;
    match kind {
        IoKind::Read => {
            for k in 0..cycles {
                let work = step(k);
                let read = access(&mut p, t, &work);
                t = swapped(&mut p, read, &work);
            }
        }
        IoKind::Write if cycles > 0 => {
            let overlap = cycles > 2;
            let mut pending = step(0);
            t = swapped(&mut p, t, &pending);
            for k in 1..cycles {
                let work = step(k);
                t = if overlap {
                    let written = access(&mut p, t, &pending);
                    let moved = swapped(&mut p, t, &work);
                    p.add(Step::Join, t0, &[written, moved])
                } else {
                    let written = access(&mut p, t, &pending);
                    swapped(&mut p, written, &work)
                };
                pending = work;
            }
            t = access(&mut p, t, &pending);
        }
        IoKind::Write => {}
    }
    p.outputs = vec![t; members.len()];
    p
}

/// Bytes of one file piece in `vulcan`'s set-up (a `struct iovec`:
/// offset and length).
pub const PIECE_BYTES: u64 = 16;

/// Time of `vulcan`'s set-up before its cycles over the file `domains` of
/// its aggregators, seconds: two allreduces of one 8-byte value (the
/// accessed range's ends), an allreduce of 8 bytes per aggregator, an
/// allgather of 4 bytes per aggregator from every member and, per
/// aggregator, an allgatherv of [`PIECE_BYTES`] per piece (a member's
/// pieces for an aggregator: 1 when its span meets the aggregator's
/// domain). Each is timed as recursive doubling over the members
/// (⌈log₂ n⌉ rounds; a round costs its slowest pair's `exchange` both
/// ways; an allgather's blocks double every round; members without a
/// partner in a round wait for it), as Open MPI's tuned collectives run
/// such small messages.
pub fn setup_s(members: &[Member], domains: &[(u64, u64)], exchange: &impl Fn(usize, usize, u64) -> f64) -> f64 {
    let n = members.len();
    let rounds = usize::BITS - n.saturating_sub(1).leading_zeros();
    // Recursive doubling: round s exchanges `bytes(s)` between i and i ^ 2^s.
    let doubling = |bytes: &dyn Fn(u32) -> u64| -> f64 {
        (0..rounds)
            .map(|s| {
                let b = bytes(s);
                (0..n)
                    .filter_map(|i| {
                        let j = i ^ (1 << s);
                        (i < j && j < n).then(|| exchange(i, j, b).max(exchange(j, i, b)))
                    })
                    .fold(0.0, f64::max)
            })
            .sum()
    };
    let a = domains.len() as u64;
    let allreduces = 2.0 * doubling(&|_| 8) + doubling(&|_| 8 * a);
    let counts = doubling(&|s| (4 * a) << s);
    // The allgathervs of the domains some member meets all cost the same, as do the others'.
    let met = domains
        .iter()
        .filter(|&&(lo, hi)| members.iter().any(|m| m.bytes > 0 && m.offset < hi && m.offset.saturating_add(m.span.max(m.bytes)) > lo))
        .count();
    let pieces = met as f64 * doubling(&|s| PIECE_BYTES << s) + (domains.len() - met) as f64 * doubling(&|_| 0);
    allreduces + counts + pieces
}

/// A member's data before file byte `x`, its data spread evenly over the
/// range it covers, bytes.
fn before(m: &Member, x: u64) -> u64 {
    let span = m.span.max(m.bytes);
    let covered = x.saturating_sub(m.offset).min(span);
    (covered as u128 * m.bytes as u128 / span.max(1) as u128) as u64
}

/// The members' data in the file range `[a, b)`, bytes.
fn data_in(members: &[Member], a: u64, b: u64) -> u64 {
    members.iter().map(|m| before(m, b) - before(m, a)).sum()
}

/// The smallest file byte `x` in `[lo, hi]` with at least `want` bytes of
/// the members' data in `[lo, x)` (`hi` when the range holds less).
fn window_end(members: &[Member], lo: u64, hi: u64, want: u64) -> u64 {
    let (mut a, mut b) = (lo, hi);
    while a < b {
        let mid = a + (b - a) / 2;
        if data_in(members, lo, mid) >= want {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::tests::fs;
    use crate::io::{FileSystem, FsState};

    const MIB: u64 = 1 << 20;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1e-9), "{a} vs {b}");
    }

    fn contiguous(n: u64, each: u64, entries: &[f64]) -> Vec<Member> {
        (0..n).map(|r| Member { host: 0, offset: r * each, bytes: each, span: each, entry_s: entries[r as usize] }).collect()
    }

    #[test]
    fn aggregators_head_consecutive_groups() {
        assert_eq!(aggregators(2, None), [0]);
        assert_eq!(aggregators(15, None), [0]);
        assert_eq!(aggregators(16, None), [0, 8]);
        assert_eq!(aggregators(20, None), [0, 10]);
        // 10 ranks in 3 groups of 4, 3, 3.
        assert_eq!(aggregators(10, Some(3)), [0, 4, 7]);
        assert_eq!(aggregators(3, Some(9)), [0, 1, 2]);
        assert!(aggregators(0, None).is_empty());
    }

    #[test]
    fn two_ranks_write_on_their_own_without_waiting() {
        // Disk: 10 ms per request, 1e8 B/s write. Rank 1 enters 100 ms
        // late; rank 0's 4 MiB is on the disk by then and rank 1 does not queue.
        let mut st = FsState::new(fs(1, 64 * MIB));
        let members = contiguous(2, 4 * MIB, &[0.0, 0.1]);
        let done = plan(&st, 0, &members, IoKind::Write, &Hints::default(), |_, _, _| 1.0).run(&mut st, 0.0);
        let one = 1e-2 + 4.0 * MIB as f64 / 1e8;
        close(done[0], one);
        close(done[1], 0.1 + one);
    }

    #[test]
    fn vulcan_writes_after_the_exchange_with_one_aggregator() {
        // 4 ranks of 2 MiB, entries up to 3 ms: one aggregator (rank 0),
        // 8 MiB of data, cycles of 16 MiB: one cycle. The set-up's 2
        // rounds per collective move 8 + 8 B (minmax), 8 + 8 B (two
        // allreduces), 8 + 8 (the bytes per aggregator), 4 + 8 (the piece
        // counts) and 16 + 32 (the pieces): 108 B at 1e9 B/s. The
        // exchange moves the other ranks' 6 MiB to rank 0, then one 8 MiB write.
        let mut st = FsState::new(fs(1, 64 * MIB));
        let members = contiguous(4, 2 * MIB, &[0.0, 1e-3, 2e-3, 3e-3]);
        let exchange = |_: usize, to: usize, b: u64| {
            assert!(b <= 32 || to == 0, "{b} bytes to {to}");
            b as f64 / 1e9
        };
        let done = plan(&st, 0, &members, IoKind::Write, &Hints::default(), exchange).run(&mut st, 0.0);
        let want = 3e-3 + 108.0 / 1e9 + 6.0 * MIB as f64 / 1e9 + 1e-2 + 8.0 * MIB as f64 / 1e8;
        for d in done {
            close(d, want);
        }
    }

    #[test]
    fn vulcan_overlaps_writes_and_exchanges_beyond_two_cycles() {
        // 4 ranks of 3 MiB, cb_buffer_size 2 MiB: cycles of 1 MiB, 12
        // cycles, after the set-up: 5 collectives (one allgatherv for the
        // one aggregator) of 2 rounds of 5 ms. The first three cycles hold
        // the aggregator's own data (nothing to exchange); the others'
        // exchanges take 5 ms, hidden behind the previous cycle's write of
        // 10 ms + 1 MiB at 1e8 B/s: 12 writes.
        let setup = 10.0 * 5e-3;
        let mut st = FsState::new(FileSystem { cb_buffer_bytes: Some(2 * MIB), ..fs(1, 64 * MIB) });
        let members = contiguous(4, 3 * MIB, &[0.0; 4]);
        let done = plan(&st, 0, &members, IoKind::Write, &Hints::default(), |_, _, _| 5e-3).run(&mut st, 0.0);
        let write = 1e-2 + MIB as f64 / 1e8;
        close(done[0], setup + 12.0 * write);
        // Two cycles (cb_buffer_size 12 MiB: 6 MiB each) do not overlap:
        // exchange, write, exchange, write.
        let mut st = FsState::new(fs(1, 64 * MIB));
        let hints = Hints { cb_buffer_bytes: Some(12 * MIB), ..Hints::default() };
        let done = plan(&st, 0, &members, IoKind::Write, &hints, |_, _, _| 5e-3).run(&mut st, 0.0);
        close(done[3], setup + 2.0 * (5e-3 + 1e-2 + 6.0 * MIB as f64 / 1e8));
    }

    #[test]
    fn vulcan_setup_is_recursive_doubling_over_the_members() {
        // 5 ranks: 3 rounds; in round 2 only ranks 0 and 4 pair. Two
        // domains, the second met by no member: its allgatherv moves
        // nothing. Cost: 1 µs per message plus 1 ns per byte, the slower
        // direction of each pair (rank 4 sends at twice the cost).
        let members = contiguous(5, MIB, &[0.0; 5]);
        let domains = [(0, 5 * MIB), (5 * MIB, 6 * MIB)];
        let cost = |from: usize, _: usize, b: u64| (1e-6 + b as f64 * 1e-9) * if from == 4 { 2.0 } else { 1.0 };
        let round = |s: u32, b: u64| if s == 2 { 2.0 * (1e-6 + b as f64 * 1e-9) } else { 1e-6 + b as f64 * 1e-9 };
        let three = |b: &dyn Fn(u32) -> u64| (0..3).map(|s| round(s, b(s))).sum::<f64>();
        let want = 2.0 * three(&|_| 8) + three(&|_| 16) + three(&|s| 8 << s) + three(&|s| 16 << s) + three(&|_| 0);
        close(setup_s(&members, &domains, &cost), want);
        // One member: no round.
        assert_eq!(setup_s(&members[..1], &domains, &cost), 0.0);
    }

    #[test]
    fn vulcan_reads_then_exchanges_in_cycles_of_the_whole_buffer() {
        // 4 ranks of 4 MiB, cb_nodes 2: domains of 8 MiB, aggregators 0
        // and 2, cycles of 8 MiB: one. The set-up: 6 collectives (an
        // allgatherv per aggregator) of 2 rounds of 2 ms. Both aggregators
        // read 8 MiB from the one server (10 ms + 8 MiB at 2e8 B/s each,
        // the second queued), then send 4 MiB in 2 ms.
        let mut st = FsState::new(FileSystem { cb_nodes: Some(2), cb_buffer_bytes: Some(8 * MIB), ..fs(1, 64 * MIB) });
        let members = contiguous(4, 4 * MIB, &[0.0; 4]);
        let done = plan(&st, 0, &members, IoKind::Read, &Hints::default(), |_, _, _| 2e-3).run(&mut st, 0.0);
        close(done[1], 12.0 * 2e-3 + 2.0 * (1e-2 + 8.0 * MIB as f64 / 2e8) + 2e-3);
    }
}

//! ROMIO's generic two-phase collective I/O (Thakur, Gropp & Lusk, "Data
//! sieving and collective I/O in ROMIO", Frontiers 1999, §3;
//! `ad_write_coll.c`, `ad_aggregate.c`), as a timing model.

use super::plan::{Plan, Step};
use super::state::{FsState, IoKind};
use super::{Hints, DEFAULT_CB_BUFFER_BYTES};

/// One rank's part of a collective access.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Member {
    /// Host index of the rank (aggregators are picked one per host).
    pub host: usize,
    /// First byte accessed.
    pub offset: u64,
    /// Bytes accessed.
    pub bytes: u64,
    /// File bytes the access covers from `offset` (`bytes` when
    /// contiguous; more through a strided view, its data spread evenly).
    pub span: u64,
    /// When the rank entered the call, seconds.
    pub entry_s: f64,
}

impl Member {
    /// The last entry among `members`, seconds, and the file range
    /// `[lo, hi)` that the members moving data cover (their spans); `None`
    /// for the range when no member moves a byte.
    pub fn extent(members: &[Member]) -> (f64, Option<(u64, u64)>) {
        let t0 = members.iter().map(|m| m.entry_s).fold(0.0, f64::max);
        let active = || members.iter().filter(|m| m.bytes > 0);
        let lo = active().map(|m| m.offset).min();
        let hi = active().map(|m| m.offset.saturating_add(m.span.max(m.bytes))).max();
        (t0, lo.zip(hi))
    }
}

/// The aggregators among `members` (indices): the first member on each
/// host, in member order, then further members in order until `cb_nodes`
/// (ROMIO's default `cb_nodes` is the number of hosts).
pub fn aggregators(members: &[Member], cb_nodes: Option<u32>) -> Vec<usize> {
    let mut hosts: Vec<usize> = Vec::new();
    let mut picked: Vec<usize> = Vec::new();
    for (i, m) in members.iter().enumerate() {
        if !hosts.contains(&m.host) {
            hosts.push(m.host);
            picked.push(i);
        }
    }
    let want = cb_nodes.map_or(picked.len(), |c| c as usize).clamp(1, members.len().max(1));
    if want < picked.len() {
        picked.truncate(want);
    } else {
        for i in 0..members.len() {
            if picked.len() >= want {
                break;
            }
            if !picked.contains(&i) {
                picked.push(i);
            }
        }
        picked.sort_unstable();
    }
    picked
}

/// The schedule of ROMIO's two-phase access of `file` by `members`, one
/// party per member, with the file's `hints` (`cb_nodes`,
/// `cb_buffer_size`; else the file system's, else ROMIO's defaults).
/// The access starts when the last member enters.
/// The accessed range `[lo, hi)` is split into one contiguous file domain
/// per aggregator (`⌈(hi − lo) / A⌉` bytes each), each domain processed in
/// rounds of the collective buffer; in each round every aggregator
/// receives (write) or sends (read) the members' bytes in its window,
/// `exchange(from, to, bytes)` seconds for the largest contributor's link
/// carrying the round's total, and accesses the file (after the exchange
/// for a write, before it for a read). Rounds follow one another; every
/// member completes with the last round.
pub fn two_phase_plan(
    fs: &FsState,
    file: u32,
    members: &[Member],
    kind: IoKind,
    hints: &Hints,
    exchange: impl Fn(usize, usize, u64) -> f64,
) -> Plan {
    let (t0, range) = Member::extent(members);
    let mut p = Plan::default();
    let mut start = p.add(Step::Join, t0, &[]);
    p.outputs = vec![start; members.len()];
    let Some((lo, hi)) = range else { return p };
    let aggs = aggregators(members, hints.cb_nodes.or(fs.fs().cb_nodes));
    let cb = hints.cb_buffer_bytes.or(fs.fs().cb_buffer_bytes).unwrap_or(DEFAULT_CB_BUFFER_BYTES).max(1);
    let domain = (hi - lo).div_ceil(aggs.len() as u64);
    let rounds = domain.div_ceil(cb);
    // A member's data in [a, b): its data before b less its data before a,
    // its data spread evenly over its covered range (so windows add up to
    // its bytes exactly).
    let before = |m: &Member, x: u64| {
        let span = m.span.max(m.bytes);
        let covered = x.saturating_sub(m.offset).min(span);
        (covered as u128 * m.bytes as u128 / span.max(1) as u128) as u64
    };
    let overlap = |m: &Member, a: u64, b: u64| before(m, b) - before(m, a);
    for k in 0..rounds {
        let mut ends = vec![start];
        for (ai, &agg) in aggs.iter().enumerate() {
            let d_lo = lo + ai as u64 * domain;
            let (w_lo, w_hi) = (d_lo + k * cb, (d_lo + (k + 1) * cb).min(d_lo + domain).min(hi));
            if w_lo >= w_hi {
                continue;
            }
            let parts: Vec<(usize, u64)> =
                members.iter().enumerate().map(|(i, m)| (i, overlap(m, w_lo, w_hi))).filter(|p| p.1 > 0).collect();
            let data: u64 = parts.iter().map(|p| p.1).sum();
            if data == 0 {
                continue;
            }
            let first = parts.iter().map(|&(i, _)| members[i].offset.max(w_lo)).min().unwrap_or(w_lo);
            let remote: Vec<&(usize, u64)> = parts.iter().filter(|p| p.0 != agg).collect();
            let moved: u64 = remote.iter().map(|p| p.1).sum();
            let widest = remote.iter().max_by_key(|p| p.1).map(|p| p.0);
            let swap = |from_member: usize| match kind {
                IoKind::Write => exchange(from_member, agg, moved),
                IoKind::Read => exchange(agg, from_member, moved),
            };
            let done = match kind {
                IoKind::Write => {
                    let ready = p.add(Step::Delay(widest.map_or(0.0, swap)), t0, &[start]);
                    p.request((t0, agg as u32), &[ready], file, first, data, IoKind::Write)
                }
                IoKind::Read => {
                    let read = p.request((t0, agg as u32), &[start], file, first, data, IoKind::Read);
                    p.add(Step::Delay(widest.map_or(0.0, swap)), t0, &[read])
                }
            };
            ends.push(done);
        }
        start = p.add(Step::Join, t0, &ends);
    }
    p.outputs = vec![start; members.len()];
    p
}

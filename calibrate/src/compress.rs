//! Trace compression by dPerf's threshold-iteration rule (Cornea &
//! Bourgeois, dPerf, §III): in each call-site region of each rank, the
//! compute blocks after the region's threshold `th` all take one average
//! time, after which a loop's iterations become identical records, and
//! runs of them are stored once with a repeat marker (the run-length
//! records of `simulator::trace::codec`).
//!
//! - **Regions:** per rank, the pair (previous call site, this call site)
//!   of raw return addresses, i.e. replay's region before symbolization.
//! - **Threshold:** [`joint_threshold`] over the blocks' CPU and wall
//!   times, so the rule holds for both. The tolerance is dPerf's `ε × m_th`
//!   with an absolute floor `δ = ε × T / B`, where `T` is the rank's traced
//!   run time and `B` its number of blocks: regions too short to matter
//!   (a few nanoseconds per block) settle at once, and even if every
//!   region's mean drifted by `δ`, the rank's compute would change by at
//!   most `ε × T`.
//! - **Averages:** the blocks after `th` all take their own mean (which
//!   the rule puts within about ε of dPerf's `t_avg = t_th / th`), rounded
//!   to the nanosecond, so each region's total is kept to within half a
//!   nanosecond per block.
//! - **Repeats:** greedy, at each record the body of at most `max_body`
//!   records that covers the longest run of identical copies (op, call
//!   site, compute times, parameters — request handles included, so
//!   matching in replay is unchanged).
//! - **Times:** each record keeps its gap and call duration, and copies
//!   take their body record's, so a compressed trace's timestamps are a
//!   consistent synthetic timeline, not measurements.
//!
//! The output is an interposer trace directory that every reader of the
//! simulator (`simulator replay`, `trace regions`, `export-ti`) reads as
//! usual. Ranks with several threads' streams are refused.

use std::collections::HashMap;
use std::io::BufWriter;
use std::path::Path;

use simulator::trace::codec::MAX_REPEAT_BODY;
use simulator::trace::ComputeTime;
use simulator::trace::{open_dir, rank_file_name, CallRecord, Params, RankTrace, RankWriter, META_FILE};
use statrs::statistics::Statistics;

use crate::blocks::joint_threshold;
use crate::error::{Error, ErrorKind};

/// Default longest loop body looked for, records.
pub const DEFAULT_MAX_BODY: usize = 256;

/// What [`compress_trace`] did, summed over ranks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompressReport {
    /// Call records a reader yields (the same before and after).
    pub records: u64,
    /// Records stored in the compressed trace (repeat markers excluded).
    pub stored_records: u64,
    /// Repeat markers written.
    pub repeats: u64,
    /// Compute blocks given their region's average (blocks after `th`).
    pub averaged_blocks: u64,
    /// (rank, region) sequences with at least one averaged block, of all.
    pub averaged_regions: (u64, u64),
    /// Bytes of the input trace (`meta.json` and rank files).
    pub bytes_before: u64,
    /// Bytes of the compressed trace.
    pub bytes_after: u64,
}

impl CompressReport {
    /// Two lines: records and bytes before and after.
    pub fn summary(&self) -> String {
        format!(
            "records: {} before, {} stored after ({} repeat markers; {:.1}x fewer); {} blocks of {}/{} rank regions averaged\n\
             bytes:   {} before, {} after ({:.1}x smaller)\n",
            self.records,
            self.stored_records,
            self.repeats,
            self.records as f64 / self.stored_records.max(1) as f64,
            self.averaged_blocks,
            self.averaged_regions.0,
            self.averaged_regions.1,
            self.bytes_before,
            self.bytes_after,
            self.bytes_before as f64 / self.bytes_after.max(1) as f64
        )
    }
}

/// Writes a compressed copy of the trace in `src` to the directory `dst`
/// (created if missing): compute blocks after each region's threshold
/// (tolerance `epsilon`) at their average, loop bodies of up to
/// `max_body` records stored once.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] unless `0 < epsilon < 1` and
/// `1 ≤ max_body ≤ 4096`, or when `src` and `dst` are the same directory
/// or a rank has several thread streams; [`ErrorKind::Trace`] for an
/// unreadable trace; [`ErrorKind::Io`] naming the file that cannot be written.
pub fn compress_trace(src: &Path, dst: &Path, epsilon: f64, max_body: usize) -> Result<CompressReport, Error> {
    let bad = |what: String| Error::new(ErrorKind::InvalidArgument, what);
    if !(epsilon > 0.0 && epsilon < 1.0) {
        return Err(bad(format!("epsilon: {epsilon} is not in (0, 1)")));
    }
    if !(1..=MAX_REPEAT_BODY).contains(&max_body) {
        return Err(bad(format!("max body: {max_body} is not in 1..={MAX_REPEAT_BODY}")));
    }
    if src.canonicalize().ok().is_some_and(|s| dst.canonicalize().ok() == Some(s)) {
        return Err(bad(format!("{}: the compressed trace must go to another directory", dst.display())));
    }
    let trace_err = |e: simulator::trace::TraceError| Error::new(ErrorKind::Trace, e.to_string());
    let (_, ranks) = open_dir(src).map_err(trace_err)?;
    std::fs::create_dir_all(dst).map_err(|e| Error::io(dst, e))?;
    let (meta_in, meta_out) = (src.join(META_FILE), dst.join(META_FILE));
    std::fs::copy(&meta_in, &meta_out).map_err(|e| Error::io(&meta_out, e))?;
    let mut report = CompressReport::default();
    for (r, rank) in ranks.iter().enumerate() {
        let out = dst.join(rank_file_name(r as u32));
        compress_rank(rank, &out, epsilon, max_body, &mut report)?;
        report.bytes_before += file_len(&rank.path)?;
        report.bytes_after += file_len(&out)?;
    }
    report.bytes_before += file_len(&meta_in)?;
    report.bytes_after += file_len(&meta_out)?;
    Ok(report)
}

fn file_len(path: &Path) -> Result<u64, Error> {
    std::fs::metadata(path).map(|m| m.len()).map_err(|e| Error::io(path, e))
}

/// A region's threshold and its averaged block times, nanoseconds.
struct Average {
    th: usize,
    cpu_ns: u64,
    wall_ns: u64,
}

fn compress_rank(rank: &RankTrace, out: &Path, epsilon: f64, max_body: usize, report: &mut CompressReport) -> Result<(), Error> {
    let trace_err = |e: simulator::trace::TraceError| Error::new(ErrorKind::Trace, e.to_string());
    if rank.streams().len() > 1 {
        let why = format!("{}: {} thread streams; only single-threaded ranks are compressed", rank.path.display(), rank.streams().len());
        return Err(Error::new(ErrorKind::InvalidArgument, why));
    }
    let mut recs: Vec<CallRecord> = rank.records().map_err(trace_err)?.collect::<Result<_, _>>().map_err(trace_err)?;
    // Each record's gap and call duration, kept through the rewrite.
    let mut prev_end = 0u64;
    let shape: Vec<(i64, u64)> = recs
        .iter()
        .map(|r| {
            let gap = r.t_start_ns as i64 - prev_end as i64 - r.compute_wall_ns as i64;
            prev_end = r.t_end_ns;
            (gap, r.t_end_ns.saturating_sub(r.t_start_ns))
        })
        .collect();
    let blocks = recs.len().max(1) as f64;
    let floor_ns = epsilon * recs.last().map_or(0, |r| r.t_end_ns) as f64 / blocks;
    let averages = region_averages(&recs, epsilon, floor_ns);
    report.averaged_regions.1 += averages.len() as u64;
    report.averaged_regions.0 += averages.values().filter(|a| a.th < usize::MAX).count() as u64;
    let mut seen: HashMap<(u64, u64), usize> = HashMap::new();
    let mut prev = 0u64;
    for r in &mut recs {
        let key = (prev, r.caller);
        prev = r.caller;
        let j = seen.entry(key).or_default();
        *j += 1;
        let a = &averages[&key];
        if *j > a.th {
            (r.compute_cpu_ns, r.compute_wall_ns) = (a.cpu_ns, a.wall_ns);
            report.averaged_blocks += 1;
        }
    }
    let plan = plan_repeats(&recs, max_body);
    // Times on the synthetic timeline the decoder rebuilds.
    let mut prev_end = 0u64;
    for item in &plan {
        let (at, k, copies) = match *item {
            Item::Literal(i) => (i, 1, 0),
            Item::Repeat { at, body, copies } => (at, body, copies),
        };
        for c in 0..=copies as usize {
            for j in 0..k {
                let (gap, dur) = shape[at + j];
                let r = &mut recs[at + c * k + j];
                r.t_start_ns = (prev_end as i64 + r.compute_wall_ns as i64 + gap).max(0) as u64;
                r.t_end_ns = r.t_start_ns + dur;
                prev_end = r.t_end_ns;
            }
        }
    }
    let file = std::fs::File::create(out).map_err(|e| Error::io(out, e))?;
    let io = |e| Error::io(out, e);
    let mut w = RankWriter::create(BufWriter::new(file), &rank.header).map_err(io)?;
    for item in &plan {
        match *item {
            Item::Literal(i) => w.push(&recs[i]).map_err(io)?,
            Item::Repeat { at, body, copies } => w.push_repeated(&recs[at..at + body], copies).map_err(io)?,
        }
        report.stored_records += match *item {
            Item::Literal(_) => 1,
            Item::Repeat { body, .. } => {
                report.repeats += 1;
                body as u64
            }
        };
    }
    w.set_overhead(rank.footer.overhead_cpu_ns, rank.footer.overhead_wall_ns);
    w.set_counters(&rank.footer.counters);
    w.finish(&rank.modules).map_err(io)?;
    report.records += recs.len() as u64;
    Ok(())
}

/// Per region (previous, this call site): the joint CPU/wall threshold
/// (tolerance floor `floor_ns`) and the means of the blocks after it;
/// `th = usize::MAX` when the rule only holds at the last block (nothing
/// to average).
fn region_averages(recs: &[CallRecord], epsilon: f64, floor_ns: f64) -> HashMap<(u64, u64), Average> {
    let mut seqs: HashMap<(u64, u64), (Vec<f64>, Vec<f64>)> = HashMap::new();
    let mut prev = 0u64;
    for r in recs {
        let s = seqs.entry((prev, r.caller)).or_default();
        s.0.push(r.compute_cpu_ns as f64);
        s.1.push(r.compute_wall_ns as f64);
        prev = r.caller;
    }
    seqs.into_iter()
        .map(|(key, (cpu, wall))| {
            let th = joint_threshold(&[&cpu, &wall], epsilon, floor_ns).expect("a region has blocks");
            let mean = |v: &[f64]| v[th.min(v.len() - 1)..].mean().round() as u64;
            let avg = Average { th: if th >= cpu.len() { usize::MAX } else { th }, cpu_ns: mean(&cpu), wall_ns: mean(&wall) };
            (key, avg)
        })
        .collect()
}

/// One step of the output: a record, or a loop body read `1 + copies` times.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Item {
    Literal(usize),
    Repeat { at: usize, body: usize, copies: u64 },
}

/// Records identical up to their times (what a repeat copy reproduces).
fn same(a: &CallRecord, b: &CallRecord) -> bool {
    a.op == b.op
        && a.caller == b.caller
        && a.compute_cpu_ns == b.compute_cpu_ns
        && a.compute_wall_ns == b.compute_wall_ns
        && a.failed == b.failed
        && a.params == b.params
}

/// Whether a record may sit in a repeat body: the writer splits waitalls
/// of more than 4096 requests into several records.
fn repeatable(r: &CallRecord) -> bool {
    !matches!(&r.params, Params::Waitall { requests } if requests.len() > 4096)
}

/// Greedy loop detection: at each record, the body of at most `max_body`
/// records followed by the most records in identical copies.
fn plan_repeats(recs: &[CallRecord], max_body: usize) -> Vec<Item> {
    let n = recs.len();
    let mut plan = Vec::new();
    let mut i = 0;
    while i < n {
        let (mut best_k, mut best_c) = (0usize, 0usize);
        for k in 1..=max_body.min((n - i) / 2) {
            if (best_k > 0 && k % best_k == 0) || !same(&recs[i], &recs[i + k]) {
                continue;
            }
            let body = &recs[i..i + k];
            if !body.iter().all(repeatable) {
                continue;
            }
            let mut c = 0;
            while i + (c + 2) * k <= n && body.iter().zip(&recs[i + (c + 1) * k..]).all(|(a, b)| same(a, b)) {
                c += 1;
            }
            if c * k > best_c * best_k {
                (best_k, best_c) = (k, c);
            }
        }
        if best_c > 0 {
            plan.push(Item::Repeat { at: i, body: best_k, copies: best_c as u64 });
            i += best_k * (best_c + 1);
        } else {
            plan.push(Item::Literal(i));
            i += 1;
        }
    }
    plan
}

/// The makespan of replaying the trace in `trace` on the platform file
/// `platform` (our TOML or a SimGrid XML), seconds, as `simulator replay`
/// gives it.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] naming the platform file,
/// [`ErrorKind::Trace`] naming the trace file, or the replay's error.
pub fn replay_makespan(platform: &Path, trace: &Path, compute: ComputeTime) -> Result<f64, Error> {
    use simulator::replay::{replay, TraceInput};
    let p = simulator::platform::Platform::load(platform).map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()))?;
    let streams = TraceInput::detect(trace)
        .map_err(|e| Error::new(ErrorKind::Trace, e.to_string()))?
        .open(compute)
        .map_err(|e| Error::new(ErrorKind::Trace, e.to_string()))?;
    let report = replay(&p, streams).map_err(|e| Error::new(ErrorKind::Trace, format!("{}: {e}", trace.display())))?;
    Ok(report.makespan_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator::trace::Op;

    fn rec(op: Op, caller: u64, cpu: u64) -> CallRecord {
        let params = Params::P2p { peer: 1, tag: 0, bytes: 8, comm: 0, request: 0 };
        CallRecord {
            op,
            failed: false,
            caller,
            compute_cpu_ns: cpu,
            compute_wall_ns: cpu,
            counters: None,
            t_start_ns: 0,
            t_end_ns: 0,
            params,
        }
    }

    #[test]
    fn loops_become_one_body_and_its_copies() {
        // A warm-up record, 10 iterations of a 2-record body, a tail.
        let mut recs = vec![rec(Op::Init, 1, 7)];
        for _ in 0..10 {
            recs.push(rec(Op::Send, 2, 100));
            recs.push(rec(Op::Recv, 3, 50));
        }
        recs.push(rec(Op::Finalize, 4, 9));
        let plan = plan_repeats(&recs, 8);
        assert_eq!(plan, vec![Item::Literal(0), Item::Repeat { at: 1, body: 2, copies: 9 }, Item::Literal(21)]);
        // A body longer than allowed stays literal.
        assert!(plan_repeats(&recs, 1).iter().all(|i| matches!(i, Item::Literal(_))));
        // Different compute times break the run.
        recs[7].compute_cpu_ns = 101;
        let plan = plan_repeats(&recs, 8);
        assert!(plan.len() > 3, "{plan:?}");
    }
}

//! The simulator's file-system model fitted to the benchmark's medians.
//!
//! The model ([`simulator::io`]) is one server whose FIFO disk serves a
//! request of b bytes in `latency_s + b / bandwidth`; `N` ranks accessing
//! b bytes each at once are served one after the other, so a case takes
//! `N·latency_s + N·b / bandwidth`. With `x = N·b` the per-size medians lie
//! on a line whose intercept is `N·latency_s` and slope `1 / bandwidth`,
//! fitted by [`crate::segmented::fit`] with one piece (least squares on
//! relative residuals):
//!
//! - metadata latency: the median of `openclose / 2` (open and close are
//!   the common metadata operations; `sync0` only when there is no
//!   `openclose` sample, and its residual shows what a sync costs beyond);
//! - read: the `read` medians (data dropped from the page cache first);
//! - cache: the sizes whose `write` median is more than [`CACHE_FACTOR`]
//!   times faster than `write_sync` less `sync0` (the sync's own cost)
//!   give the cache's line; from the smallest of them, the sizes whose
//!   `write` stays within that factor of the line went to a write-back
//!   cache (and the smaller sizes with them); `cache_bytes` = N × the
//!   largest of them. The cost of a write into the cache, `cache_write`,
//!   is piecewise linear in the request size, interpolated between their
//!   medians (ranks write into the cache at once): a small write copies
//!   from the CPU's caches, a large one allocates pages. When `write16`
//!   was measured (16 writes of a sixteenth of the block, timed in a
//!   stream already running), it is interpolated between its sixteenths
//!   instead (and at sizes the stream did not reach, or where a single
//!   write cost less, on the `write` medians): a running stream of writes
//!   pays the cost an application's writes pay, where a new file's first
//!   write, or a write just after a large one, pays more;
//! - cached reads: `cache_read`, piecewise linear in the size,
//!   interpolated between the sixteenths of `read16` (a running stream of
//!   reads of data written before, no longer in the CPU's private caches)
//!   where it was measured, else and beyond them (or where a single read
//!   cost less) the `read_cached` medians (data just written, read at once
//!   by every rank from the page cache);
//! - write: the `write_sync` medians less the sync's metadata latency; on
//!   cached sizes the model's `write_sync` is `cache_write(b) + N·b /
//!   bandwidth` (the drain has no per-request
//!   latency), so those medians are first brought onto the line by
//!   removing the cache write and adding the read fit's `N·latency_s`;
//! - disk latency: the read fit's; the write fit's intercept holds it N
//!   times (one request per rank) and what a sync costs beyond the
//!   metadata latency, which with the metadata latency is
//!   `sync_latency_s`.
//!
//! The collective cases are not fitted: their residuals check the
//! collective schedule of the MPI-IO implementation that ran (the
//! file system's `mpi_io`: ROMIO's two-phase, OMPIO's `individual` or
//! `vulcan`, [`simulator::io::client::schedule`]) on the fitted file
//! system.

use std::collections::BTreeMap;

use simulator::io::client::schedule;
use simulator::io::{Disk, FileSystem, FsState, Hints, IoKind, Member, MpiIo};
use simulator::network::{Piecewise, Segment};

use super::{Case, IoSample};
use crate::error::{Error, ErrorKind};
use crate::segmented::{self, FitOptions, SegmentedFit};

/// A write this many times faster without sync than with it went to a
/// cache (dimensionless).
pub const CACHE_FACTOR: f64 = 3.0;

/// The fitted file system and how well it explains the medians.
#[derive(Debug, Clone)]
pub struct IoFit {
    /// The fitted file system (one server).
    pub fs: FileSystem,
    /// Ranks of the benchmark.
    pub ranks: u32,
    /// Median duration of every case and size: `(case, size_bytes, seconds)`.
    pub medians: Vec<(Case, u64, f64)>,
    /// Per case: relative RMS of `(model − median) / median` over its
    /// sizes (dimensionless), and the number of sizes.
    pub residuals: Vec<(Case, f64, usize)>,
    /// Intercept of the write fit, seconds: the disk's per-request
    /// latency of each rank plus what a sync costs beyond the drain.
    pub write_intercept_s: f64,
    /// Set when a write-back cache was found: the page cache hides the disk.
    pub cache_warning: Option<String>,
}

/// Duration of `case` at `size_bytes` per rank on `ranks` ranks of one
/// host on the file system `fs`, as the simulator times it, seconds;
/// `exchange(bytes)` is the network's transfer time between two ranks of
/// the host (the exchange of collective I/O), seconds.
pub fn predict(fs: &FileSystem, ranks: u32, case: Case, size_bytes: u64, exchange: &dyn Fn(u64) -> f64) -> f64 {
    let mut st = FsState::new(fs.clone());
    let independent =
        |st: &mut FsState, kind| (0..ranks as u64).map(|r| st.request(0.0, 0.0, 0, r * size_bytes, size_bytes, kind)).fold(0.0, f64::max);
    let collective = |st: &mut FsState, write: bool| {
        let members: Vec<Member> = (0..ranks as u64)
            .map(|r| Member { host: 0, offset: r * size_bytes, bytes: size_bytes, span: size_bytes, entry_s: 0.0 })
            .collect();
        schedule(st, 0, &members, write, &Hints::default(), 0.0, |_, _, b| exchange(b)).into_iter().fold(0.0, f64::max)
    };
    match case {
        Case::Write => independent(&mut st, IoKind::Write),
        Case::WriteSync => {
            let t = independent(&mut st, IoKind::Write);
            st.sync(t)
        }
        Case::Read => independent(&mut st, IoKind::Read),
        Case::WriteAll => collective(&mut st, true),
        Case::WriteAllSync => {
            let t = collective(&mut st, true);
            st.sync(t)
        }
        Case::ReadAll => collective(&mut st, false),
        Case::Write16 | Case::Read16 => {
            // Each rank's stream of 32 requests of a sixteenth over twice its
            // block, in the order of time (each rank's next after its last),
            // the last 16 timed; a read stream's data written first.
            let (piece, kind) = (size_bytes / 16, if case == Case::Write16 { IoKind::Write } else { IoKind::Read });
            let mut t = vec![0.0; ranks as usize];
            if kind == IoKind::Read {
                for (r, tr) in t.iter_mut().enumerate() {
                    *tr = st.request(0.0, 0.0, 0, 2 * r as u64 * size_bytes, 2 * size_bytes, IoKind::Write);
                }
            }
            let mut start = t.clone();
            for i in 0..32 {
                for (r, tr) in t.iter_mut().enumerate() {
                    if i == 16 {
                        start[r] = *tr;
                    }
                    *tr = st.request(*tr, 0.0, 0, 2 * r as u64 * size_bytes + i * piece, piece, kind);
                }
            }
            t.iter().zip(&start).map(|(e, s)| e - s).fold(0.0, f64::max)
        }
        Case::ReadCached => {
            let t = independent(&mut st, IoKind::Write);
            (0..ranks as u64).map(|r| st.request(t, 0.0, 0, r * size_bytes, size_bytes, IoKind::Read) - t).fold(0.0, f64::max)
        }
        Case::OpenClose => 2.0 * st.metadata(0.0),
        Case::Sync0 => st.sync(0.0),
    }
}

/// Fits the file system `name` (stripe unit `stripe_size_bytes`, MPI-IO
/// implementation `mpi_io`) to the `samples` of a run on `ranks` ranks;
/// `exchange` as in [`predict`].
///
/// # Errors
/// [`ErrorKind::Fit`] when `read` or `write_sync` has fewer than 2 sizes,
/// a median is not positive, or its largest size took no time (no bandwidth).
pub fn fit_io(
    samples: &[IoSample],
    ranks: u32,
    name: &str,
    stripe_size_bytes: u64,
    mpi_io: MpiIo,
    exchange: &dyn Fn(u64) -> f64,
) -> Result<IoFit, Error> {
    let n = ranks.max(1) as f64;
    let mut by_case: BTreeMap<Case, Vec<(u64, f64)>> = BTreeMap::new();
    for s in samples {
        by_case.entry(s.case).or_default().push((s.size_bytes, s.seconds));
    }
    let med = |c: Case| segmented::median_by_size(by_case.get(&c).map_or(&[][..], Vec::as_slice));
    let meta_samples: Vec<f64> = match (by_case.get(&Case::OpenClose), by_case.get(&Case::Sync0)) {
        (Some(oc), _) => oc.iter().map(|p| p.1 / 2.0).collect(),
        (None, sync0) => sync0.into_iter().flatten().map(|p| p.1).collect(),
    };
    let metadata_latency_s =
        segmented::median_by_size(&meta_samples.iter().map(|&t| (0, t)).collect::<Vec<_>>()).first().map_or(0.0, |p| p.1);

    let read = line(Case::Read, &med(Case::Read).iter().map(|&(b, t)| (ranks as u64 * b, t)).collect::<Vec<_>>())?;
    let read_latency_s = read.pieces[0].intercept_s / n;

    // Cache: the sizes where write ≪ write_sync less what a sync of
    // nothing costs (at small sizes both syncs cost about the same, so a
    // noisy sync can hide a cached size: those are not required to pass).
    let (write, write_sync) = (med(Case::Write), med(Case::WriteSync));
    let empty_sync_s = med(Case::Sync0).first().map_or(metadata_latency_s, |p| p.1);
    let fast: Vec<(u64, f64)> = write_sync
        .iter()
        .filter_map(|&(b, ws)| write.iter().find(|w| w.0 == b).filter(|w| w.1 > 0.0 && ws - empty_sync_s > CACHE_FACTOR * w.1).copied())
        .collect();
    // From the first of them, they and the sizes whose writes went at the
    // cache's speed (within CACHE_FACTOR of its cost by size) went to the cache: a
    // write-back cache hides the disk up to its size, however slow the
    // sync behind it.
    let fast: Vec<(u64, f64)> = match fast.first() {
        None => fast,
        Some(&(first, _)) => {
            let cost = cost_by_size(&fast);
            write
                .iter()
                .copied()
                .skip_while(|w| w.0 < first)
                .take_while(|&(b, t)| fast.iter().any(|f| f.0 == b) || (t > 0.0 && t <= CACHE_FACTOR * cost.eval(b)))
                .collect()
        }
    };
    // A running stream of writes pays a write's cost as the application's
    // writes do (a new file's first write, or one just after a large write,
    // pays more): the cost comes from the sixteenths of `write16` where it
    // was measured, and from the single writes at the sizes a stream did
    // not reach or where the single write cost less (a stream of 4 MiB
    // writes after as many untimed ones has written 128 MiB per rank and
    // meets the page reclaim a single write of that size does not).
    let pieces: Vec<(u64, f64)> =
        med(Case::Write16).iter().filter(|&&(b, _)| fast.iter().any(|f| f.0 == b)).map(|&(b, t)| (b / 16, t / 16.0)).collect();
    let pieces = stream_and_single(&pieces, &fast);
    let cost_of = |fast: &[(u64, f64)]| if pieces.len() >= 2 { cost_by_size(&pieces) } else { cost_by_size(fast) };
    let cache = fast.last().map(|&(largest, _)| (ranks as u64 * largest, cost_of(&fast)));
    let cached = |b: u64| cache.as_ref().is_some_and(|(bytes, _)| ranks as u64 * b <= *bytes);
    let adjusted: Vec<(u64, f64)> = write_sync
        .iter()
        .map(|&(b, ws)| {
            let on_disk = ws - metadata_latency_s;
            let y = match &cache {
                Some((_, cost)) if cached(b) => on_disk - cost.eval(b) + n * read_latency_s,
                _ => on_disk,
            };
            (ranks as u64 * b, if y > 0.0 { y } else { ws })
        })
        .collect();
    let write_fit = line(Case::WriteSync, &adjusted)?;
    let write_intercept_s = write_fit.pieces[0].intercept_s;
    // What the synced writes' line holds beyond each rank's disk request
    // is the sync's own fixed cost.
    let sync_extra_s = (write_intercept_s - n * read_latency_s).max(0.0);
    // Reads of data written before: a running stream's from the sixteenths
    // of `read16` where it was measured, with the single reads of data just
    // written (`read_cached`) beyond them or where they cost less.
    let cached_read = {
        let single = med(Case::ReadCached);
        let stream: Vec<(u64, f64)> = med(Case::Read16).iter().map(|&(b, t)| (b / 16, t / 16.0)).collect();
        let m = if stream.len() >= 2 { stream_and_single(&stream, &single) } else { single };
        (cache.is_some() && m.len() >= 2).then(|| cost_by_size(&m))
    };

    let fs = FileSystem {
        name: name.to_string(),
        servers: 1,
        server_hosts: Vec::new(),
        stripe_size_bytes: stripe_size_bytes.max(1),
        stripe_count: None,
        metadata_latency_s,
        sync_latency_s: Some(metadata_latency_s + sync_extra_s),
        link_bytes_per_s: None,
        disk: Disk {
            cache_bytes: cache.as_ref().map_or(0, |c| c.0),
            // The cache held every read after write that was measured.
            // The most data the cached reads read back (a read16 stream reads twice its block).
            read_cache_bytes: cached_read.as_ref().and(
                [med(Case::ReadCached).last().map(|&(b, _)| b), med(Case::Read16).last().map(|&(b, _)| 2 * b)]
                    .into_iter()
                    .flatten()
                    .max()
                    .map(|b| ranks as u64 * b),
            ),
            cache_write: cache.as_ref().map(|c| c.1.clone()).unwrap_or_default(),
            // Reads of the cache without a measurement cost what its writes do.
            cache_read: cached_read.or_else(|| cache.as_ref().map(|c| c.1.clone())).unwrap_or_default(),
            ..Disk::new(read_latency_s, 1.0 / read.pieces[0].slope_s_per_byte, 1.0 / write_fit.pieces[0].slope_s_per_byte)
        },
        cb_buffer_bytes: None,
        cb_nodes: None,
        mpi_io,
    };
    let cache_warning = cache.as_ref().map(|&(bytes, _)| {
        let largest = fast.last().map_or(0, |f| f.0);
        format!(
            "the page cache hides the disk: writes without sync were more than {CACHE_FACTOR}× faster than with sync up to {largest} bytes per rank; modelled as a write-back cache of {bytes} bytes, the disk's write bandwidth comes from the synced writes"
        )
    });
    let medians: Vec<(Case, u64, f64)> = Case::ALL.iter().flat_map(|&case| med(case).into_iter().map(move |(b, t)| (case, b, t))).collect();
    let mut fit = IoFit { fs, ranks, medians, residuals: Vec::new(), write_intercept_s, cache_warning };
    fit.update_residuals(exchange);
    Ok(fit)
}

/// The cache's `(latency_s, bytes_per_s)` from the cached sizes' `write`
/// medians `(bytes per rank, seconds)`: the ranks write into the cache at
/// once, so each sample is `latency_s + b / bytes_per_s`. A line (least
/// squares on relative residuals) with two sizes or more; through the
/// origin (`k = Σ(b/t) / Σ(b/t)²`, no latency) with one size or when the
/// line's intercept is negative.
fn cache_line(fast: &[(u64, f64)]) -> (f64, f64) {
    let options = FitOptions { max_segments: 1, min_points_per_segment: 2, lines_by_median: true };
    if fast.len() >= 2 {
        if let Ok(f) = segmented::fit(fast, &options) {
            let p = &f.pieces[0];
            if p.slope_s_per_byte > 0.0 && p.intercept_s >= 0.0 {
                return (p.intercept_s, 1.0 / p.slope_s_per_byte);
            }
        }
    }
    let (s1, s2) = fast.iter().fold((0.0, 0.0), |(a, c), &(b, t)| (a + b as f64 / t, c + (b as f64 / t).powi(2)));
    (0.0, s2 / s1)
}

/// The cost of a request by its size through the medians `pts` `(bytes,
/// seconds)`, sorted by size: the piecewise-linear interpolant of the
/// medians, each made at least its predecessor (a larger request never
/// costs less). Below the second size the line of the first two holds, down
/// to 0 bytes when it stays ≥ 0 there, else a flat first segment at the
/// smallest size's cost; beyond the largest size the last two sizes' line.
/// A page cache's cost changes regime several times between 256 B and 4
/// MiB (copies from the CPU's caches, page allocation, reclaim), more than
/// a few lines follow; each median is already the estimate at its size.
/// Fewer than 2 sizes: [`cache_line`]'s one line.
fn cost_by_size(pts: &[(u64, f64)]) -> Piecewise {
    let mut mono: Vec<(u64, f64)> = Vec::with_capacity(pts.len());
    for &(b, t) in pts {
        let floor = mono.last().map_or(0.0, |p: &(u64, f64)| p.1);
        if t.is_finite() && mono.last().is_none_or(|p| p.0 < b) {
            mono.push((b, t.max(floor)));
        }
    }
    if mono.len() < 2 {
        let (intercept_s, bandwidth_bytes_per_s) = cache_line(pts);
        return Piecewise { segments: vec![Segment { max_bytes: None, intercept_s, bandwidth_bytes_per_s }] };
    }
    // The segment through (b0, t0) and (b1, t1), up to `max_bytes`.
    let through = |(b0, t0): (u64, f64), (b1, t1): (u64, f64), max_bytes: Option<u64>| {
        let slope = (t1 - t0) / (b1 - b0) as f64;
        let bandwidth_bytes_per_s = if slope > 0.0 { 1.0 / slope } else { f64::INFINITY };
        Segment { max_bytes, intercept_s: t0 - b0 as f64 * slope.max(0.0), bandwidth_bytes_per_s }
    };
    let mut segments = Vec::with_capacity(mono.len());
    let first = through(mono[0], mono[1], None);
    if first.intercept_s < 0.0 {
        segments.push(Segment { max_bytes: Some(mono[0].0), intercept_s: mono[0].1, bandwidth_bytes_per_s: f64::INFINITY });
    }
    for (i, w) in mono.windows(2).enumerate() {
        let max_bytes = (i + 2 < mono.len()).then_some(w[1].0);
        segments.push(through(w[0], w[1], max_bytes));
    }
    Piecewise { segments }
}

/// The cost of a request by size from a stream's `pieces` and the `single`
/// requests' medians, both `(bytes, seconds)` sorted by size: the pieces,
/// the single requests larger than the largest piece, and at a size both
/// have, the cheaper. No pieces: none (the caller falls back on the single
/// requests).
fn stream_and_single(pieces: &[(u64, f64)], single: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let Some(&(largest, _)) = pieces.last() else { return Vec::new() };
    let mut out: Vec<(u64, f64)> = pieces.iter().map(|&(b, t)| (b, single.iter().find(|s| s.0 == b).map_or(t, |s| t.min(s.1)))).collect();
    out.extend(single.iter().filter(|s| s.0 > largest));
    out
}

/// A piecewise cost as text: ` below 65536 B: 1.000e-6 s + b / 8.0000e9 B/s; from 65536 B: ...`.
fn pieces(cost: &Piecewise) -> String {
    let mut from = None;
    let mut s = String::new();
    for seg in &cost.segments {
        let range = match (from, seg.max_bytes) {
            (None, Some(m)) => format!("below {m} B"),
            (Some(f), Some(m)) => format!("{f}-{m} B"),
            (Some(f), None) => format!("from {f} B"),
            (None, None) => "any size".to_string(),
        };
        s += &format!(" {range}: {:.3e} s + b / {:.4e} B/s;", seg.intercept_s, seg.bandwidth_bytes_per_s);
        from = seg.max_bytes;
    }
    s.pop();
    s
}

/// One least-squares line through `pts` (`(bytes, seconds)`), with a
/// positive slope.
fn line(case: Case, pts: &[(u64, f64)]) -> Result<SegmentedFit, Error> {
    let options = FitOptions { max_segments: 1, min_points_per_segment: 2, lines_by_median: true };
    let mut f = segmented::fit(pts, &options).map_err(|e| Error::new(ErrorKind::Fit, format!("{case}: {e}")))?;
    if f.pieces[0].slope_s_per_byte <= 0.0 {
        // Noise over too small a range of sizes: the largest size alone.
        let &(b, t) = pts.iter().max_by_key(|p| p.0).expect("the fit had points");
        if b == 0 || t.is_nan() || t <= 0.0 {
            return Err(Error::new(ErrorKind::Fit, format!("{case}: times do not grow with size, no bandwidth to fit")));
        }
        eprintln!("calibrate io: warning: {case}: times do not grow with size; its bandwidth is its largest size's ({b} bytes in {t:.3e} s), no latency");
        f.pieces[0].slope_s_per_byte = t / b as f64;
        f.pieces[0].intercept_s = 0.0;
    }
    Ok(f)
}

impl IoFit {
    /// Recomputes `residuals` from `medians` and the file system `fs` as
    /// it is now (after a caller changed it); `exchange` as in [`predict`].
    pub fn update_residuals(&mut self, exchange: &dyn Fn(u64) -> f64) {
        self.residuals.clear();
        for case in Case::ALL {
            let m: Vec<(u64, f64)> = self.medians.iter().filter(|x| x.0 == case).map(|x| (x.1, x.2)).collect();
            if m.is_empty() {
                continue;
            }
            let sq: f64 = m.iter().map(|&(b, t)| ((predict(&self.fs, self.ranks, case, b, exchange) - t) / t).powi(2)).sum();
            self.residuals.push((case, (sq / m.len() as f64).sqrt(), m.len()));
        }
    }

    /// The fitted parameters and the residual per case, one per line.
    pub fn summary(&self) -> String {
        let (fs, d) = (&self.fs, &self.fs.disk);
        let mut s = format!(
            "file system {} ({} ranks): servers 1, stripe_size_bytes {}, metadata_latency_s {:.3e}\n  disk: latency_s {:.3e}, read {:.4e} B/s, write {:.4e} B/s",
            fs.name, self.ranks, fs.stripe_size_bytes, fs.metadata_latency_s, d.latency_s, d.read_bytes_per_s, d.write_bytes_per_s
        );
        if d.cache_bytes > 0 {
            s += &format!(
                ", cache {} bytes\n  cache write:{}\n  cached read:{}\n",
                d.cache_bytes,
                pieces(&d.cache_write),
                pieces(&d.cache_read)
            );
        } else {
            s += ", no cache\n";
        }
        s += &format!(
            "  sync_latency_s {:.3e} (write fit's intercept {:.3e} s)\n",
            fs.sync_latency_s.unwrap_or(fs.metadata_latency_s),
            self.write_intercept_s
        );
        for (case, rms, sizes) in &self.residuals {
            s += &format!("  {:<15} relative RMS residual {:>7.2}% over {sizes} size(s)\n", case.name(), rms * 100.0);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truth(cache_bytes: u64) -> FileSystem {
        FileSystem {
            name: "t".into(),
            servers: 1,
            server_hosts: Vec::new(),
            stripe_size_bytes: 4096,
            stripe_count: None,
            metadata_latency_s: 2e-4,
            sync_latency_s: Some(1e-3),
            link_bytes_per_s: None,
            disk: if cache_bytes > 0 {
                // A page cache: it holds every read after write.
                Disk {
                    cache_bytes,
                    cache_bytes_per_s: Some(5e9),
                    cache_latency_s: 5e-6,
                    cache_read_bytes_per_s: Some(2e10),
                    cache_read_latency_s: Some(2e-6),
                    read_cache_bytes: Some(1 << 40),
                    ..Disk::new(1e-4, 5e8, 3e8)
                }
            } else {
                Disk::new(1e-4, 5e8, 3e8)
            },
            cb_buffer_bytes: None,
            cb_nodes: None,
            mpi_io: MpiIo::Romio,
        }
    }

    fn synthetic(fs: &FileSystem, ranks: u32) -> Vec<IoSample> {
        let sizes: Vec<u64> = (0..8).map(|k| 4096u64 << (2 * k)).collect();
        let net = |b: u64| 1e-6 + b as f64 / 5e9;
        Case::ALL
            .iter()
            .flat_map(|&case| {
                let sizes = if Case::DATA.contains(&case) { sizes.clone() } else { vec![0] };
                sizes.into_iter().map(move |b| IoSample { case, size_bytes: b, seconds: predict(fs, ranks, case, b, &net) })
            })
            .collect()
    }

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 0.01 * want.abs()
    }

    #[test]
    fn recovers_known_parameters_from_synthetic_samples() {
        let runs = [
            (2, 0, MpiIo::Romio),
            (2, 2 << 20, MpiIo::Romio),
            (4, 4 << 20, MpiIo::Romio),
            (2, 2 << 20, MpiIo::Ompio),
            (4, 0, MpiIo::Ompio),
        ];
        for (ranks, cache, mpi_io) in runs {
            let want = FileSystem { mpi_io, ..truth(cache) };
            let f = fit_io(&synthetic(&want, ranks), ranks, "t", 4096, mpi_io, &|b| 1e-6 + b as f64 / 5e9).unwrap();
            assert_eq!(f.fs.mpi_io, mpi_io);
            let (g, w) = (&f.fs.disk, &want.disk);
            assert!(close(f.fs.metadata_latency_s, want.metadata_latency_s), "{}", f.summary());
            assert!(close(f.fs.sync_latency_s.unwrap(), 1e-3), "{}", f.summary());
            assert!(close(g.latency_s, w.latency_s) && close(g.read_bytes_per_s, w.read_bytes_per_s), "{}", f.summary());
            assert!(close(g.write_bytes_per_s, w.write_bytes_per_s), "{}", f.summary());
            assert_eq!(g.cache_bytes, w.cache_bytes, "{}", f.summary());
            assert_eq!(f.cache_warning.is_some(), cache > 0);
            if cache > 0 {
                for b in [256, 4096, 1 << 20] {
                    assert!(close(g.cache_write_s(b), w.cache_write_s(b)), "{b}: {}", f.summary());
                    assert!(close(g.cached_read_s(b), w.cached_read_s(b)), "{b}: {}", f.summary());
                }
            }
            assert!(f.residuals.iter().all(|r| r.1 < 0.01), "{}", f.summary());
            assert_eq!(f.residuals.len(), Case::ALL.len());
        }
    }

    #[test]
    fn a_cache_whose_cost_per_byte_changes_with_size_is_interpolated_between_the_sizes() {
        // Small writes copy at 8 GB/s, writes from 64 KiB on at 1 GB/s;
        // reads from 256 KiB on at a third of the small ones' speed.
        let two = |at: u64, small: (f64, f64), large: (f64, f64)| Piecewise {
            segments: vec![
                Segment { max_bytes: Some(at), intercept_s: small.0, bandwidth_bytes_per_s: small.1 },
                Segment { max_bytes: None, intercept_s: large.0, bandwidth_bytes_per_s: large.1 },
            ],
        };
        let mut want = truth(128 << 20);
        want.disk.cache_write = two(65536, (1e-6, 8e9), (2e-5, 1e9));
        want.disk.cache_read = two(262144, (5e-7, 3e10), (4e-6, 1e10));
        let f = fit_io(&synthetic(&want, 2), 2, "t", 4096, MpiIo::Romio, &|b| 1e-6 + b as f64 / 5e9).unwrap();
        let g = &f.fs.disk;
        let exact = |got: f64, want: f64| (got - want).abs() <= 1e-9 * want;
        // write16's sixteenths are 256 B .. 4 MiB, read_cached's sizes 4 KiB .. 64 MiB.
        for b in (0..8).map(|k| 256u64 << (2 * k)) {
            assert!(exact(g.cache_write_s(b), want.disk.cache_write_s(b)), "{b}: {}", f.summary());
        }
        for b in (0..8).map(|k| 4096u64 << (2 * k)) {
            assert!(exact(g.cached_read_s(b), want.disk.cached_read_s(b)), "{b}: {}", f.summary());
        }
        // Between two sizes of one regime the interpolant is that regime's
        // line; across a regime change it is the chord, and beyond the
        // largest size the last regime's line.
        for b in [100, 2048, 3 << 20, 64 << 20] {
            assert!(exact(g.cache_write_s(b), want.disk.cache_write_s(b)), "{b}: {}", f.summary());
        }
        let chord = want.disk.cache_write_s(16384) + 0.5 * (want.disk.cache_write_s(65536) - want.disk.cache_write_s(16384));
        assert!(exact(g.cache_write_s(40960), chord), "{}", f.summary());
        assert!(f.residuals.iter().all(|r| r.1 < 0.01), "{}", f.summary());
    }

    #[test]
    fn single_writes_extend_the_stream_and_replace_its_dearer_sizes() {
        let pieces = [(256, 1e-6), (4096, 5e-6), (1 << 20, 1e-2)];
        let single = [(4096, 9e-6), (1 << 20, 6e-4), (4 << 20, 2.4e-3)];
        let got = stream_and_single(&pieces, &single);
        assert_eq!(got, vec![(256, 1e-6), (4096, 5e-6), (1 << 20, 6e-4), (4 << 20, 2.4e-3)]);
        assert!(stream_and_single(&[], &single).is_empty());
    }

    #[test]
    fn interpolated_costs_never_fall_with_size_nor_below_zero() {
        // A median below its predecessor is lifted to it; a steep first
        // pair would cross zero below the smallest size, so a flat segment
        // holds the smallest size's cost there.
        let cost = cost_by_size(&[(1000, 5e-6), (2000, 4e-6), (3000, 9e-6), (5000, 1e-5)]);
        cost.validate().unwrap();
        let at = |b: u64| cost.eval(b);
        assert_eq!((at(1000), at(1500), at(2000)), (5e-6, 5e-6, 5e-6));
        assert!((at(2500) - 7e-6).abs() < 1e-15 && (at(3000) - 9e-6).abs() < 1e-15);
        assert!((at(7000) - 1.1e-5).abs() < 1e-15, "the last pair's line beyond: {}", at(7000));
        assert_eq!(at(0), 5e-6);
        let steep = cost_by_size(&[(1000, 1e-6), (2000, 1e-5)]);
        steep.validate().unwrap();
        assert_eq!((steep.eval(10), steep.eval(999)), (1e-6, 1e-6));
        assert!((steep.eval(1500) - 5.5e-6).abs() < 1e-15);
    }

    #[test]
    fn a_small_size_whose_sync_costs_no_more_than_an_empty_one_still_is_cached() {
        let want = truth(2 << 20);
        let mut s = synthetic(&want, 2);
        let sync0 = s.iter().find(|x| x.case == Case::Sync0).unwrap().seconds;
        for x in s.iter_mut().filter(|x| x.case == Case::WriteSync && x.size_bytes == 4096) {
            x.seconds = sync0;
        }
        let f = fit_io(&s, 2, "t", 4096, MpiIo::Romio, &|b| 1e-6 + b as f64 / 5e9).unwrap();
        assert_eq!(f.fs.disk.cache_bytes, want.disk.cache_bytes, "{}", f.summary());
    }

    #[test]
    fn too_few_sizes_are_refused_and_flat_times_take_the_largest_size() {
        let s = [IoSample { case: Case::Read, size_bytes: 4096, seconds: 1e-3 }];
        assert!(fit_io(&s, 2, "t", 4096, MpiIo::Romio, &|_| 0.0).unwrap_err().to_string().starts_with("read: "));
        let flat = |case: Case| [4096u64, 16384, 65536].map(|b| IoSample { case, size_bytes: b, seconds: 1e-3 });
        let samples: Vec<IoSample> = [flat(Case::Read), flat(Case::WriteSync)].concat();
        let f = fit_io(&samples, 2, "t", 4096, MpiIo::Romio, &|_| 0.0).unwrap();
        // 2 ranks × 64 KiB in 1 ms, no latency.
        assert!(close(f.fs.disk.read_bytes_per_s, 2.0 * 65536.0 / 1e-3) && f.fs.disk.latency_s == 0.0, "{}", f.summary());
    }
}

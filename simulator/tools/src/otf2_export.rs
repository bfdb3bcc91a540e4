//! `simulator trace export-otf2`: a recorded run as an OTF2 archive
//! ([`crate::otf2_out`]), timestamps as recorded (nanoseconds since each
//! rank's trace epoch at `MPI_Init` exit).

use std::path::Path;

use anyhow::Context;

use simulator::action::RecordConverter;
use simulator::trace::symbols::RegionNames;
use simulator::trace::{open_dir, RankTrace};

use crate::otf2_out::ArchiveOut;

/// What an export wrote.
#[derive(Debug, Default)]
pub struct Exported {
    /// Ranks (locations of the threads that called `MPI_Init`).
    pub ranks: u32,
    /// MPI calls written (every record of every stream).
    pub calls: u64,
    /// Compute blocks written.
    pub blocks: u64,
}

/// Writes the trace directory `trace` as `<out>/traces.otf2`.
///
/// Every record becomes a region named after its MPI function, with the
/// events of the replay actions it stands for (the conversion of
/// [`simulator::action::TraceActions`], so the archive replays as the
/// trace does with `--compute-time wall`); the compute block before it (its recorded wall
/// time, ending at the call) becomes a region named by its call-site
/// region.
///
/// # Errors
/// One line naming the trace file or the archive at fault.
pub fn export(trace: &Path, out: &Path) -> anyhow::Result<Exported> {
    let (meta, ranks) = open_dir(trace).context("cannot open trace")?;
    let mut archive = ArchiveOut::create(out, meta.ranks).context("cannot create the OTF2 archive")?;
    let mut done = Exported { ranks: meta.ranks, ..Exported::default() };
    for t in &ranks {
        for stream in t.streams() {
            rank_stream(&mut archive, t, stream, &mut done)?;
        }
    }
    archive.finish().context("cannot write the OTF2 archive")?;
    Ok(done)
}

fn rank_stream(archive: &mut ArchiveOut, t: &RankTrace, stream: u16, done: &mut Exported) -> anyhow::Result<()> {
    let rank = t.header.rank;
    let loc = archive.location(rank, stream);
    let mut conv = RecordConverter::new(t.header.ranks);
    let mut names = RegionNames::new();
    let (mut prev_caller, mut last_end) = (0u64, 0u64);
    let ctx = || format!("cannot export {}", t.path.display());
    for rec in t.records_of(stream).with_context(ctx)? {
        let rec = rec.with_context(ctx)?;
        let (key, region) = names.region(t, prev_caller, rec.caller);
        prev_caller = rec.caller;
        let wall = rec.compute_wall_ns;
        // Unrepresentable calls (TraceActions refuses them too) keep their region only.
        let _ = conv.convert(&rec, wall as f64 * 1e-9, region);
        if wall > 0 {
            let start = rec.t_start_ns.saturating_sub(wall).max(last_end);
            archive.compute(loc, &key, start, rec.t_start_ns).with_context(ctx)?;
            done.blocks += 1;
        }
        let actions: Vec<_> = std::iter::from_fn(|| conv.pop()).collect();
        archive.call(rank, loc, rec.op.mpi_name(), rec.t_start_ns, rec.t_end_ns, &actions).with_context(ctx)?;
        last_end = rec.t_end_ns.max(rec.t_start_ns);
        done.calls += 1;
    }
    Ok(())
}

/// Each compute region id of the trace directory `trace` (stream 0 of
/// every rank, as replay reads it) with its call-site region key: the
/// names of the simulated run's compute blocks.
///
/// # Errors
/// The trace cannot be read (naming the file).
pub fn region_names(trace: &Path) -> anyhow::Result<std::collections::HashMap<u64, String>> {
    let (_, ranks) = open_dir(trace).context("cannot open trace")?;
    let mut map = std::collections::HashMap::new();
    for t in &ranks {
        let mut names = RegionNames::new();
        let mut prev = 0;
        for rec in t.records().context("cannot read trace")? {
            let rec = rec.context("cannot read trace")?;
            let (key, id) = names.region(t, prev, rec.caller);
            prev = rec.caller;
            map.entry(id).or_insert_with(|| key.to_string());
        }
    }
    Ok(map)
}

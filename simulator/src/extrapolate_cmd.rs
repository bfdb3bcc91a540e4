//! `simulator extrapolate` and the extrapolating form of `simulator
//! replay` (`--ranks N` with traces at other rank counts).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use simulator::extrapolate::{Model, Sample};
use simulator::replay::{ActionStream, InputError};

/// `simulator extrapolate`.
#[derive(clap::Args)]
pub struct ExtrapolateArgs {
    /// Rank count of the run to make.
    #[arg(long, value_name = "N")]
    ranks: u32,
    /// Trace directory to write (meta.json and a rank file each).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Trace directories of the same program at two or more rank counts.
    #[arg(value_name = "TRACE_DIR", required = true, num_args = 2..)]
    traces: Vec<PathBuf>,
}

/// Reads the traces and builds the model.
pub fn model(traces: &[PathBuf]) -> anyhow::Result<Model> {
    let samples = traces.iter().map(|t| Sample::open(t)).collect::<Result<Vec<_>, _>>().context("cannot read the traces")?;
    Model::build(samples).context("cannot extrapolate")
}

/// The replay streams of `n` ranks of `model`.
pub fn streams(model: &Model, n: u32) -> Vec<ActionStream<'_, InputError>> {
    model
        .streams(n)
        .into_iter()
        .map(|s| Box::new(s.map(|a| a.map_err(InputError::Extrapolate))) as ActionStream<'_, InputError>)
        .collect()
}

/// Writes the extrapolated run and a summary of the model on stdout.
pub fn run(args: &ExtrapolateArgs) -> anyhow::Result<()> {
    if args.ranks == 0 {
        anyhow::bail!("--ranks 0: a run needs at least one rank");
    }
    let model = model(&args.traces)?;
    model.write_dir(args.ranks, &args.out).context("cannot write the extrapolated trace")?;
    let mut out = std::io::stdout().lock();
    summary(&model, &mut out)?;
    writeln!(out, "wrote {} ({} ranks)", args.out.display(), args.ranks)?;
    Ok(())
}

/// The model in a few lines: classes, and each compute region's law with
/// its residual (largest first).
pub fn summary(model: &Model, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "extrapolation from {:?} ranks: {} rank class(es)", model.sample_ranks, model.classes.len())?;
    for c in &model.classes {
        writeln!(out, "  class {:?}: {} calls per rank", c.rule, c.calls())?;
        let mut laws: Vec<_> = c.laws.iter().filter(|l| l.points.iter().any(|p| p.1 > 0.0)).collect();
        laws.sort_by(|a, b| b.points.last().map(|p| p.1).partial_cmp(&a.points.last().map(|p| p.1)).unwrap_or(std::cmp::Ordering::Equal));
        for l in laws.iter().take(5) {
            let pts: Vec<String> = l.points.iter().map(|(n, s)| format!("{n}:{:.3e}", s)).collect();
            let law = &l.law;
            let form = if law.a == 0.0 { format!("{:.3e} s", law.c) } else { format!("{:.3e}·N^-{:.2} + {:.3e} s", law.a, law.b, law.c) };
            writeln!(out, "    {}: mean block [{}] -> {form} (residual {:.1} %)", l.region, pts.join(" "), law.rel_rms * 100.0)?;
        }
    }
    Ok(())
}

/// True when `dirs` need extrapolating to `ranks` (several traces, or one
/// at another rank count).
pub fn wanted(dirs: &[PathBuf], ranks: Option<u32>) -> anyhow::Result<bool> {
    match (dirs, ranks) {
        ([_], None) => Ok(false),
        ([one], Some(n)) => {
            let have = simulator::trace::read_meta(one).map(|m| m.ranks).ok();
            match have {
                Some(h) if h != n => anyhow::bail!(
                    "--ranks {n}: {} holds {h} ranks; extrapolation needs traces at two or more rank counts",
                    one.display()
                ),
                _ => Ok(false),
            }
        }
        (_, None) => anyhow::bail!("several traces given: --ranks N says which rank count to extrapolate to"),
        (_, Some(_)) => Ok(true),
    }
}

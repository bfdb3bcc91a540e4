//! `simulator extrapolate` and the extrapolating form of `simulator
//! replay` (`--ranks N` with traces at other rank counts).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use simulator::extrapolate::{band_of, band_variants, Model, Sample, Variant, DEFAULT_DRAWS};
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
    /// Trace directories of the same program at two or more rank counts
    /// (several runs of one count are merged, each block at its median).
    #[arg(value_name = "TRACE_DIR", required = true, num_args = 2..)]
    traces: Vec<PathBuf>,
}

/// Reads the traces and builds the model.
pub fn model(traces: &[PathBuf]) -> anyhow::Result<Model> {
    let samples = traces.iter().map(|t| Sample::open(t)).collect::<Result<Vec<_>, _>>().context("cannot read the traces")?;
    Model::build(samples).context("cannot extrapolate")
}

/// The replay streams of `n` ranks of `model` in one `variant` of the
/// prediction.
pub fn streams(model: &Model, n: u32, variant: Variant) -> Vec<ActionStream<'_, InputError>> {
    model.streams_as(n, variant, InputError::Extrapolate)
}

/// How an extrapolated prediction treats the program's variability.
#[derive(clap::Args, Debug, Clone)]
pub struct VariabilityArgs {
    /// Copy each traced rank's compute blocks to the target ranks of its
    /// class (the traced rank of that number, else rank r mod M of the
    /// M) instead of drawing each block's transient part from its
    /// region's distribution; the waiting of the traced count then
    /// repeats at every count.
    #[arg(long)]
    pub clone_template: bool,
    /// Draws (seeds) of the program's variability the band is made of;
    /// the prediction is the first.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_DRAWS, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub draws: u32,
}

/// The replay of `model` at `n` ranks on `platform` in one `variant`.
///
/// # Errors
/// A replay that fails, naming the rank count.
pub fn replay(
    model: &Model,
    platform: &simulator::platform::Platform,
    n: u32,
    variant: Variant,
) -> anyhow::Result<simulator::replay::ReplayReport> {
    simulator::replay::Replay::new(platform)
        .order_free(model.order_free())
        .run(streams(model, n, variant))
        .with_context(|| format!("replay of the extrapolated {n}-rank run failed"))
}

impl VariabilityArgs {
    /// The variant of the prediction itself.
    pub fn prediction(&self) -> Variant {
        band_variants(1, self.clone_template)[0]
    }
}

/// A prediction at one rank count and its band.
pub struct Predicted {
    /// The prediction's replay.
    pub report: simulator::replay::ReplayReport,
    /// The band, seconds ([`simulator::extrapolate::band_of`]).
    pub low_s: f64,
    /// See `low_s`.
    pub high_s: f64,
    /// Wall time of all the band's replays, seconds.
    pub wall_s: f64,
}

/// Replays `model` at `n` ranks on `platform` in every variant of the
/// band ([`band_variants`]): the prediction, the other draws and the laws
/// at their intervals' edges.
///
/// # Errors
/// A replay that fails, naming the rank count.
pub fn predict(model: &Model, platform: &simulator::platform::Platform, n: u32, v: &VariabilityArgs) -> anyhow::Result<Predicted> {
    let started = std::time::Instant::now();
    if let Some(w) = model.far_from_data(n) {
        eprintln!("warning: {w}");
    }
    let run = |variant: Variant| replay(model, platform, n, variant);
    let variants = band_variants(v.draws, v.clone_template);
    let report = run(variants[0])?;
    let mut makespans = vec![report.makespan_s];
    for &variant in &variants[1..] {
        makespans.push(run(variant)?.makespan_s);
    }
    let (low_s, high_s) = band_of(&makespans);
    Ok(Predicted { report, low_s, high_s, wall_s: started.elapsed().as_secs_f64() })
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
        writeln!(out, "  class {}: {} calls per rank", c.rule, c.calls())?;
        // Loops whose trip count changes with N, by law.
        let mut by_law: Vec<(String, usize)> = Vec::new();
        for law in c.loop_laws().iter().filter(|l| l.a != 0.0).map(|l| l.to_string()) {
            match by_law.iter_mut().find(|(s, _)| *s == law) {
                Some((_, k)) => *k += 1,
                None => by_law.push((law, 1)),
            }
        }
        for (law, k) in by_law {
            writeln!(out, "    {k} loop(s) of trip count {law}")?;
        }
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
pub fn wanted(dirs: &[PathBuf], ranks: Option<u32>) -> anyhow::Result<Input> {
    let counts = || dirs.iter().map(|d| simulator::trace::read_meta(d).map(|m| m.ranks).ok()).collect::<Vec<_>>();
    match (dirs, ranks) {
        ([_], None) => Ok(Input::One),
        ([one], Some(n)) => {
            let have = simulator::trace::read_meta(one).map(|m| m.ranks).ok();
            match have {
                Some(h) if h != n => {
                    anyhow::bail!("--ranks {n}: {} holds {h} ranks; extrapolation needs traces at two or more rank counts", one.display())
                }
                _ => Ok(Input::One),
            }
        }
        (_, n) => {
            let c = counts();
            let same = c.iter().all(|&k| k.is_some() && k == c[0]);
            match (same, n) {
                (true, None) => Ok(Input::Runs),
                (true, Some(n)) if c[0] == Some(n) => Ok(Input::Runs),
                (_, Some(_)) => Ok(Input::Extrapolate),
                (false, None) => {
                    anyhow::bail!("several traces at different rank counts ({c:?}): --ranks N says which rank count to extrapolate to")
                }
            }
        }
    }
}

/// What `simulator replay`'s traces are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// One trace, replayed as it is.
    One,
    /// Several traced runs of one program on the same ranks: each block at
    /// the median of its durations ([`simulator::replay::runs`]).
    Runs,
    /// Runs at other rank counts, extrapolated to `--ranks`.
    Extrapolate,
}

/// `simulator scaling`.
#[derive(clap::Args)]
pub struct ScalingArgs {
    /// Platform file: our TOML, or a SimGrid platform XML.
    #[arg(long, value_name = "FILE")]
    platform: PathBuf,
    /// Most hosts the platform may have (an XML cluster's radical is
    /// counted before any host is made).
    #[arg(long, value_name = "N", default_value_t = simulator::limits::MAX_HOSTS)]
    max_hosts: usize,
    /// Rank counts to predict, comma-separated (e.g. 16,256,4096).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', required = true)]
    ranks: Vec<u32>,
    /// Draw predicted time with its band, ideal scaling from the first
    /// count, mean compute and communication against ranks to this SVG
    /// file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// With --plot: the reference's times drawn as points, from the
    /// `reference.json` of `simulator validate --reference smpi` (its rows
    /// of --reference-case, or of its only case).
    #[arg(long, value_name = "reference.json", requires = "plot")]
    reference: Option<PathBuf>,
    /// The case of --reference whose rows to draw.
    #[arg(long, value_name = "NAME", requires = "reference")]
    reference_case: Option<String>,
    /// Print one JSON object (`points`) instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    variability: VariabilityArgs,
    /// Trace directories of the same program at two or more rank counts
    /// (several runs of one count are merged, each block at its median).
    #[arg(value_name = "TRACE_DIR", required = true, num_args = 2..)]
    traces: Vec<PathBuf>,
}

/// One rank count of the scaling curve.
#[derive(Debug, serde::Serialize)]
pub struct Point {
    /// Rank count.
    pub ranks: u32,
    /// Predicted run time, seconds.
    pub makespan_s: f64,
    /// The band, seconds: other draws of the program's variability, and
    /// the compute laws at their intervals' edges.
    pub low_s: f64,
    /// See `low_s`.
    pub high_s: f64,
    /// Mean per rank, seconds.
    pub compute_s: f64,
    /// See `compute_s`.
    pub comm_s: f64,
    /// See `compute_s`.
    pub wait_s: f64,
    /// Strong-scaling efficiency against the first rank count:
    /// T(N0)·N0 / (T(N)·N).
    pub efficiency: f64,
}

/// The (ranks, seconds) rows of `case` (or of the only case) in a
/// `reference.json` written by `simulator validate --reference`.
///
/// # Errors
/// An unreadable file, one that is not such a report, or a case it does
/// not hold (naming the cases it holds).
pub fn reference_points(path: &std::path::Path, case: Option<&str>) -> anyhow::Result<Vec<(u32, f64)>> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let json: serde_json::Value = serde_json::from_slice(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let rows = json["rows"].as_array().with_context(|| format!("{}: no `rows` (not a validate --reference report)", path.display()))?;
    let mut cases: Vec<&str> = rows.iter().filter_map(|r| r["case"].as_str()).collect();
    cases.dedup();
    let want = match case {
        Some(c) => c,
        None if cases.len() == 1 => cases[0],
        None => anyhow::bail!("{}: holds cases {cases:?}; say which with --reference-case", path.display()),
    };
    let pts: Vec<(u32, f64)> = rows
        .iter()
        .filter(|r| r["case"].as_str() == Some(want))
        .filter_map(|r| Some((r["ranks"].as_u64()? as u32, r["smpi_s"].as_f64()?)))
        .collect();
    if pts.is_empty() {
        anyhow::bail!("{}: no rows of case {want} (it holds {cases:?})", path.display());
    }
    Ok(pts)
}

/// Predicts every rank count of `args.ranks` from the model and reports
/// the curve.
pub fn scaling(args: &ScalingArgs) -> anyhow::Result<()> {
    if args.ranks.contains(&0) {
        anyhow::bail!("--ranks: a run needs at least one rank");
    }
    let platform = simulator::platform::Platform::load_limited(&args.platform, &[], args.max_hosts).context("cannot load platform")?;
    let model = model(&args.traces)?;
    let mut points: Vec<Point> = Vec::new();
    for &n in &args.ranks {
        let Predicted { report: mid, low_s, high_s, .. } = predict(&model, &platform, n, &args.variability)?;
        let k = mid.ranks.len().max(1) as f64;
        let mean = |f: fn(&simulator::replay::RankReport) -> f64| mid.ranks.iter().map(f).sum::<f64>() / k;
        let efficiency = match points.first() {
            Some(p0) => p0.makespan_s * p0.ranks as f64 / (mid.makespan_s * n as f64),
            None => 1.0,
        };
        points.push(Point {
            ranks: n,
            makespan_s: mid.makespan_s,
            low_s,
            high_s,
            compute_s: mean(|r| r.compute_s),
            comm_s: mean(|r| r.comm_s),
            wait_s: mean(|r| r.wait_s),
            efficiency,
        });
    }
    if let Some(path) = &args.plot {
        let reference = match &args.reference {
            Some(r) => reference_points(r, args.reference_case.as_deref())?,
            None => Vec::new(),
        };
        plot(path, &points, &reference, "reference").map_err(anyhow::Error::msg)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &serde_json::json!({ "points": points }))?;
        writeln!(out)?;
        return Ok(());
    }
    summary(&model, &mut out)?;
    writeln!(
        out,
        "{:>9} {:>13} {:>13} {:>13} {:>11} {:>11} {:>11} {:>6}",
        "ranks", "predicted_s", "low_s", "high_s", "compute_s", "comm_s", "wait_s", "eff"
    )?;
    for p in &points {
        writeln!(
            out,
            "{:>9} {:>13.6} {:>13.6} {:>13.6} {:>11.6} {:>11.6} {:>11.6} {:>6.3}",
            p.ranks, p.makespan_s, p.low_s, p.high_s, p.compute_s, p.comm_s, p.wait_s, p.efficiency
        )?;
    }
    Ok(())
}

/// Predicted time with its band, ideal scaling from the first count,
/// mean compute and communication (log-log) against ranks, and the
/// `reference` (ranks, seconds) points labelled `name`, to the SVG file
/// `path`.
///
/// # Errors
/// A name that does not end in `.svg`, or the drawing's error, naming
/// the file.
pub fn plot(path: &std::path::Path, points: &[Point], reference: &[(u32, f64)], name: &str) -> Result<(), String> {
    use plotters::prelude::*;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if path.extension().is_none_or(|e| e != "svg") {
        return Err(fail(&"only SVG plots are supported (use a .svg name)"));
    }
    let xs = points.iter().map(|p| p.ranks).chain(reference.iter().map(|r| r.0));
    let x_hi = xs.clone().max().unwrap_or(2).max(2) as f64 * 1.5;
    let x_lo = xs.min().unwrap_or(1).max(1) as f64 / 1.5;
    let ideal: Vec<(f64, f64)> = match points.first() {
        Some(p0) => points.iter().map(|p| (p.ranks as f64, p0.makespan_s * p0.ranks as f64 / p.ranks as f64)).collect(),
        None => Vec::new(),
    };
    let y_hi = points.iter().map(|p| p.high_s).chain(reference.iter().map(|r| r.1)).fold(0.0, f64::max) * 1.5 + 1e-12;
    let y_lo = points
        .iter()
        .map(|p| p.low_s.min(p.comm_s).max(1e-12))
        .chain(reference.iter().map(|r| r.1))
        .chain(ideal.iter().map(|i| i.1))
        .fold(f64::INFINITY, f64::min)
        / 1.5;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("predicted run time against ranks (extrapolated)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("ranks")
        .y_desc("seconds")
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .draw()
        .map_err(|e| fail(&e))?;
    type Series = (&'static str, fn(&Point) -> f64, RGBColor);
    let series: [Series; 3] =
        [("predicted", |p| p.makespan_s, BLUE), ("compute (mean)", |p| p.compute_s, GREEN), ("communication (mean)", |p| p.comm_s, RED)];
    for (name, f, color) in series {
        let line: Vec<(f64, f64)> = points.iter().map(|p| (p.ranks as f64, f(p).max(y_lo))).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
            .map_err(|e| fail(&e))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(line.into_iter().map(|xy| Circle::new(xy, 3, color.filled()))).map_err(|e| fail(&e))?;
    }
    let band: Vec<(f64, f64)> =
        points.iter().map(|p| (p.ranks as f64, p.low_s)).chain(points.iter().rev().map(|p| (p.ranks as f64, p.high_s))).collect();
    chart
        .draw_series(std::iter::once(Polygon::new(band, BLUE.mix(0.15).filled())))
        .map_err(|e| fail(&e))?
        .label("band (draws, law intervals)")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], BLUE.mix(0.15).filled()));
    let grey = RGBColor(120, 120, 120);
    chart
        .draw_series(LineSeries::new(ideal.iter().map(|&(x, y)| (x, y.max(y_lo))), grey.stroke_width(1)))
        .map_err(|e| fail(&e))?
        .label("ideal scaling")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1)));
    if !reference.is_empty() {
        chart
            .draw_series(reference.iter().map(|&(n, t)| Cross::new((n as f64, t), 6, BLACK.stroke_width(2))))
            .map_err(|e| fail(&e))?
            .label(name.to_string())
            .legend(|(x, y)| Cross::new((x + 10, y), 5, BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}

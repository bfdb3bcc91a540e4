//! `simulator energy`: the time/energy trade-off of a trace on a platform
//! over every static pstate and the DVFS policies given
//! ([`simulator::dvfs`]; Heinrich et al. 2017, §7), with the Pareto front
//! of makespan against energy.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use simulator::action::ComputeTime;
use simulator::dvfs::Dvfs;
use simulator::platform::Platform;
use simulator::replay::{self, TraceInput};

/// `simulator energy` arguments.
#[derive(clap::Args)]
pub struct EnergyArgs {
    /// Platform file (our TOML or a SimGrid platform XML) whose hosts have
    /// pstates with power (`wattage_per_state`).
    #[arg(long, value_name = "FILE")]
    pub platform: PathBuf,
    /// Trace directory written by the interposer, or a SimGrid TI trace-list file.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// A DVFS policy to add to the sweep, as `simulator replay --dvfs`
    /// (`wait=K`, `regions=FILE.csv`, or both comma-separated);
    /// repeatable. Default: `wait=<the slowest pstate>`.
    #[arg(long, value_name = "POLICY")]
    pub dvfs: Vec<String>,
    /// SimGrid setting for an XML platform, as smpirun's --cfg=name:value; repeatable.
    #[arg(long = "cfg", value_name = "NAME:VALUE")]
    pub cfg: Vec<String>,
    /// What a rank waiting in MPI does, as `simulator replay
    /// --waiting-ranks`: with poll it also keeps its core busy in the
    /// energy accounting (a polling MPI).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub waiting_ranks: Option<WaitingArg>,
    /// Print one JSON object (`rows`, `min_energy`, `min_edp`) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Draw energy against makespan, with the Pareto front, to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// What a rank waiting in MPI does (`--waiting-ranks`).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitingArg {
    /// Waiting ranks keep their core busy.
    Poll,
    /// Waiting ranks leave their core.
    Yield,
}

impl WaitingArg {
    /// Sets `platform`'s `waiting_ranks` to `w` when given; a poll given
    /// also counts waiting ranks as busy cores in the energy accounting
    /// ([`Dvfs::waiting_busy`]).
    pub fn apply(w: Option<WaitingArg>, platform: &mut Platform) {
        use simulator::platform::WaitingRanks;
        match w {
            Some(WaitingArg::Poll) => platform.waiting_ranks = WaitingRanks::Poll,
            Some(WaitingArg::Yield) => platform.waiting_ranks = WaitingRanks::Yield,
            None => {}
        }
        platform.dvfs.waiting_busy = w == Some(WaitingArg::Poll);
    }
}

/// One configuration of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// `pstate=K` (every host at pstate K) or the DVFS policy as given.
    pub policy: String,
    /// Predicted makespan, seconds.
    pub makespan_s: f64,
    /// Energy of all hosts, joules.
    pub energy_j: f64,
    /// Energy-delay product, joule-seconds.
    pub edp_js: f64,
}

/// The sweep's JSON: its rows and the policies of least energy and least EDP.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    /// One row per configuration, static pstates first.
    pub rows: Vec<Row>,
    /// Policy of the least energy (the first on ties).
    pub min_energy: String,
    /// Policy of the least energy-delay product (the first on ties).
    pub min_edp: String,
}

impl Sweep {
    /// The sweep of `rows` (at least one).
    ///
    /// # Panics
    /// When `rows` is empty.
    pub fn new(rows: Vec<Row>) -> Sweep {
        let least = |f: fn(&Row) -> f64| rows.iter().reduce(|a, b| if f(b) < f(a) { b } else { a }).expect("rows").policy.clone();
        let (min_energy, min_edp) = (least(|r| r.energy_j), least(|r| r.edp_js));
        Sweep { rows, min_energy, min_edp }
    }

    /// Indices of the rows on the Pareto front (no other row has both a
    /// makespan and an energy at most theirs, one of them less), by makespan.
    pub fn pareto(&self) -> Vec<usize> {
        let r = &self.rows;
        let dominated = |i: usize| {
            r.iter().any(|o| {
                o.makespan_s <= r[i].makespan_s
                    && o.energy_j <= r[i].energy_j
                    && (o.makespan_s < r[i].makespan_s || o.energy_j < r[i].energy_j)
            })
        };
        let mut front: Vec<usize> = (0..r.len()).filter(|&i| !dominated(i)).collect();
        front.sort_by(|&a, &b| r[a].makespan_s.total_cmp(&r[b].makespan_s));
        front
    }
}

/// The replay of `trace` on `platform`, as a row named `policy`.
fn row(platform: &Platform, trace: &Path, policy: String) -> anyhow::Result<Row> {
    let streams =
        TraceInput::detect(trace).map_err(anyhow::Error::from).and_then(|i| Ok(i.open(ComputeTime::Cpu)?)).context("cannot open trace")?;
    let r = replay::replay(platform, streams).with_context(|| format!("{policy}: replay of {} failed", trace.display()))?;
    let energy_j = r.energy_j.ok_or_else(|| anyhow::anyhow!("the platform's hosts have no power (wattage_per_state) at {policy}"))?;
    Ok(Row { policy, makespan_s: r.makespan_s, energy_j, edp_js: energy_j * r.makespan_s })
}

/// Runs `simulator energy`.
///
/// # Errors
/// A one-line message naming the platform, trace, policy or plot file at fault.
pub fn run(args: &EnergyArgs) -> anyhow::Result<()> {
    let base = Platform::load_with(&args.platform, &args.cfg).context("cannot load platform")?;
    let counts: Vec<usize> = base.hosts.iter().map(|h| h.pstates.len()).filter(|&n| n > 0).collect();
    let Some(&n) = counts.iter().min() else {
        anyhow::bail!("{}: no host has pstates", args.platform.display());
    };
    let mut rows = Vec::new();
    for k in 0..n {
        let mut p = base.clone();
        p.set_pstate(&k.to_string()).map_err(anyhow::Error::msg)?;
        WaitingArg::apply(args.waiting_ranks, &mut p);
        rows.push(row(&p, &args.trace, format!("pstate={k}"))?);
    }
    let slowest = {
        let h = base.hosts.iter().find(|h| !h.pstates.is_empty()).expect("a host with pstates");
        (0..h.pstates.len()).reduce(|a, b| if h.pstates[b].speed_flops < h.pstates[a].speed_flops { b } else { a }).expect("pstates")
    };
    let policies = match args.dvfs.is_empty() {
        true => vec![format!("wait={slowest}")],
        false => args.dvfs.clone(),
    };
    for spec in policies {
        let mut p = base.clone();
        p.dvfs = Dvfs::parse(&spec).map_err(anyhow::Error::msg).with_context(|| format!("--dvfs {spec}"))?;
        p.dvfs.check(&p).map_err(anyhow::Error::msg).with_context(|| format!("--dvfs {spec}"))?;
        WaitingArg::apply(args.waiting_ranks, &mut p);
        rows.push(row(&p, &args.trace, spec)?);
    }
    let sweep = Sweep::new(rows);
    if let Some(path) = &args.plot {
        plot_svg(path, &sweep).map_err(anyhow::Error::msg)?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &sweep)?;
        writeln!(out)?;
    } else {
        let front = sweep.pareto();
        let w = sweep.rows.iter().map(|r| r.policy.len()).max().unwrap_or(6).max(6);
        writeln!(out, "{:<w$}  {:>14}  {:>14}  {:>14}  pareto", "policy", "makespan_s", "energy_j", "edp_js")?;
        for (i, r) in sweep.rows.iter().enumerate() {
            let mark = if front.contains(&i) { "*" } else { "" };
            writeln!(out, "{:<w$}  {:>14.6}  {:>14.6}  {:>14.6}  {mark}", r.policy, r.makespan_s, r.energy_j, r.edp_js)?;
        }
        writeln!(out, "least energy: {}; least EDP: {}", sweep.min_energy, sweep.min_edp)?;
    }
    Ok(())
}

/// Draws energy against makespan, a point per row, the Pareto front as a
/// line. SVG only.
///
/// # Errors
/// A message naming `path` when it does not end in `.svg` or cannot be written.
pub fn plot_svg(path: &Path, sweep: &Sweep) -> Result<(), String> {
    use plotters::prelude::*;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if path.extension().is_none_or(|e| e != "svg") {
        return Err(fail(&"only SVG plots are supported (use a .svg name)"));
    }
    let rows = &sweep.rows;
    let span = |f: fn(&Row) -> f64| {
        let (lo, hi) = rows.iter().map(f).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        let pad = ((hi - lo) * 0.1).max(hi.abs() * 1e-3).max(1e-12);
        (lo - pad)..(hi + pad)
    };
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("energy against makespan", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(span(|r| r.makespan_s), span(|r| r.energy_j))
        .map_err(|e| fail(&e))?;
    chart.configure_mesh().x_desc("makespan (s)").y_desc("energy (J)").draw().map_err(|e| fail(&e))?;
    let front: Vec<(f64, f64)> = sweep.pareto().into_iter().map(|i| (rows[i].makespan_s, rows[i].energy_j)).collect();
    chart
        .draw_series(LineSeries::new(front, RED.stroke_width(2)))
        .map_err(|e| fail(&e))?
        .label("Pareto front")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    for r in rows {
        let color = if r.policy.starts_with("pstate=") { BLUE } else { GREEN };
        let at = (r.makespan_s, r.energy_j);
        chart.draw_series([Circle::new(at, 4, color.filled())]).map_err(|e| fail(&e))?;
        chart.draw_series([Text::new(r.policy.clone(), at, ("sans-serif", 13).into_font())]).map_err(|e| fail(&e))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(policy: &str, makespan_s: f64, energy_j: f64) -> Row {
        Row { policy: policy.into(), makespan_s, energy_j, edp_js: makespan_s * energy_j }
    }

    #[test]
    fn the_front_keeps_the_rows_no_other_row_beats_on_both() {
        let s = Sweep::new(vec![row("a", 1.0, 10.0), row("b", 2.0, 6.0), row("c", 2.5, 7.0), row("d", 3.0, 5.0), row("e", 1.0, 11.0)]);
        assert_eq!(s.pareto(), vec![0, 1, 3]);
        assert_eq!((s.min_energy.as_str(), s.min_edp.as_str()), ("d", "a"));
    }
}

//! The validation tables (terminal, Markdown, CSV) and the plot of
//! predicted against measured run time.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use statrs::statistics::{Data, Median};

use crate::perturbation::Perturbation;

/// One suite case: what was measured and what was predicted, seconds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    /// Case name.
    pub name: String,
    /// MPI ranks.
    pub ranks: u32,
    /// `wall_s` of every plain run, in run order.
    pub measured: Vec<f64>,
    /// `wall_s` of the run under the interposer in trace mode (the median
    /// of [`Row::traced`]).
    pub traced_s: Option<f64>,
    /// `wall_s` of every traced run (`--traced-runs`), in run order.
    pub traced: Vec<f64>,
    /// The offline replay of that trace over the program's timed region
    /// (rank 0, end of its first `MPI_Barrier` to end of its last; the
    /// makespan without two barriers), see [`super::predict::Predicted`].
    pub offline_s: Option<f64>,
    /// The online-mode run's own `wall_s`, in virtual time
    /// (`INTERPOSER_VIRTUAL_WTIME=1`), when it wrote `online.json`: the
    /// median of [`Row::online`] (of those in the fast state).
    pub online_s: Option<f64>,
    /// That of every online run (`--online-runs`), in run order.
    pub online: Vec<f64>,
    /// With several traced runs: the lowest and highest offline prediction
    /// of the runs replayed alone, seconds.
    pub offline_band: Option<(f64, f64)>,
    /// Tracing's perturbation of the compute blocks, with `--regions-runs`.
    pub perturbation: Option<PerturbSummary>,
    /// The offline prediction with the systematic perturbation corrected
    /// (`--correct-perturbation`), seconds.
    pub corrected_s: Option<f64>,
    /// With `--calibrations K`: the offline prediction on each of the K
    /// calibrations, the case's own first, seconds.
    pub calibrated: Vec<f64>,
    /// Failures and missing values, `; `-separated (empty when all went well).
    pub note: String,
}

/// Median of `v` (the mean of the middle two for even lengths); `None`
/// when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| Data::new(v.to_vec()).median())
}

/// Index of the median of `v`, the lower middle one of an even count:
/// the one run (or calibration) whose value is the median; `None` when
/// empty.
pub fn lower_median_index(v: &[f64]) -> Option<usize> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    order.get(v.len().checked_sub(1)? / 2).copied()
}

/// Spread of repeated runs: `100 · (max − min) / median`, percent; `None`
/// for fewer than two runs or a median ≤ 0.
///
/// An error smaller than the spread of the runs it is measured against is
/// within the machine's own run-to-run variation.
pub fn spread_pct(v: &[f64]) -> Option<f64> {
    let m = median(v).filter(|m| *m > 0.0 && v.len() >= 2)?;
    let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    Some(100.0 * (hi - lo) / m)
}

/// `100 · (predicted − measured) / measured`, percent.
pub fn error_pct(predicted: Option<f64>, measured: Option<f64>) -> Option<f64> {
    match (predicted, measured) {
        (Some(p), Some(m)) if m > 0.0 => Some(100.0 * (p - m) / m),
        _ => None,
    }
}

impl Row {
    /// Median of the plain runs, seconds.
    pub fn measured_s(&self) -> Option<f64> {
        median(&self.measured)
    }

    /// Offline error, percent of measured.
    pub fn offline_error_pct(&self) -> Option<f64> {
        error_pct(self.offline_s, self.measured_s())
    }

    /// Error of the corrected offline prediction, percent of measured.
    pub fn corrected_error_pct(&self) -> Option<f64> {
        error_pct(self.corrected_s, self.measured_s())
    }

    /// Online error, percent of measured.
    pub fn online_error_pct(&self) -> Option<f64> {
        error_pct(self.online_s, self.measured_s())
    }

    /// Spread of the online runs' predictions, percent ([`spread_pct`]).
    pub fn online_spread_pct(&self) -> Option<f64> {
        spread_pct(&self.online)
    }

    /// [`spread_pct`] of the plain runs in the median.
    pub fn plain_spread_pct(&self) -> Option<f64> {
        spread_pct(&self.measured)
    }

    /// [`spread_pct`] of the traced runs.
    pub fn traced_spread_pct(&self) -> Option<f64> {
        spread_pct(&self.traced)
    }

    /// [`spread_pct`] of the offline predictions on the calibrations: how
    /// far the calibration's own run-to-run variation moves the prediction.
    pub fn calibration_spread_pct(&self) -> Option<f64> {
        spread_pct(&self.calibrated)
    }

    /// Appends `what` to the note.
    pub fn note(&mut self, what: impl AsRef<str>) {
        if !self.note.is_empty() {
            self.note.push_str("; ");
        }
        self.note.push_str(what.as_ref());
    }

    /// [`Row::note`] in place of the parts of the note that start with
    /// `prefix`.
    pub fn renote(&mut self, prefix: &str, what: impl AsRef<str>) {
        let kept: Vec<&str> = self.note.split("; ").filter(|part| !part.is_empty() && !part.starts_with(prefix)).collect();
        self.note = kept.join("; ");
        self.note(what);
    }
}

/// Median and maximum of the absolute errors, percent, over the rows that
/// have one, and how many rows that is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorSummary {
    /// Median |error|, percent.
    pub median_abs_pct: f64,
    /// Largest |error|, percent.
    pub max_abs_pct: f64,
    /// Rows with a value.
    pub rows: usize,
}

/// [`ErrorSummary`] of `errors` (percent; `None`s skipped); `None` when no
/// row has a value.
pub fn summarize(errors: impl Iterator<Item = Option<f64>>) -> Option<ErrorSummary> {
    let abs: Vec<f64> = errors.flatten().map(f64::abs).collect();
    Some(ErrorSummary { median_abs_pct: median(&abs)?, max_abs_pct: abs.iter().copied().fold(0.0, f64::max), rows: abs.len() })
}

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |x| format!("{x:.4}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |x| format!("{x:+.1}"))
}

fn spread(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |x| format!("{x:.1}"))
}

fn summary_lines(rows: &[Row]) -> String {
    let mut out = String::new();
    for (label, s) in
        [("offline", summarize(rows.iter().map(Row::offline_error_pct))), ("online", summarize(rows.iter().map(Row::online_error_pct)))]
    {
        match s {
            Some(s) => writeln!(out, "{label}: median |error| {:.1} %, max {:.1} % over {} rows", s.median_abs_pct, s.max_abs_pct, s.rows),
            None => writeln!(out, "{label}: no prediction"),
        }
        .expect("write to String");
    }
    out
}

/// The table for the terminal, with the error summary below: per case the
/// errors and, beside them, the spread of the plain and the traced runs
/// and of the predictions on several calibrations ([`spread_pct`]; `n/a`
/// for a single one).
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<16} {:>5} {:>11} {:>11} {:>11} {:>11} {:>10} {:>10} {:>15} {:>16} {:>15}\n",
        "program",
        "ranks",
        "measured_s",
        "traced_s",
        "offline_s",
        "online_s",
        "offline_%",
        "online_%",
        "plain_spread_%",
        "traced_spread_%",
        "calib_spread_%"
    );
    for r in rows {
        writeln!(
            out,
            "{:<16} {:>5} {:>11} {:>11} {:>11} {:>11} {:>10} {:>10} {:>15} {:>16} {:>15}",
            r.name,
            r.ranks,
            secs(r.measured_s()),
            secs(r.traced_s),
            secs(r.offline_s),
            secs(r.online_s),
            pct(r.offline_error_pct()),
            pct(r.online_error_pct()),
            spread(r.plain_spread_pct()),
            spread(r.traced_spread_pct()),
            spread(r.calibration_spread_pct())
        )
        .expect("write to String");
    }
    out + &summary_lines(rows)
}

/// The same table in Markdown, with notes and the error summary.
pub fn markdown(rows: &[Row], preamble: &str) -> String {
    let mut out = format!("# Validation: measured against predicted\n\n{preamble}\n\n");
    out.push_str(
        "| program | ranks | runs | measured (s) | traced (s) | offline (s) | online (s) | offline error % | online error % | plain spread % | traced spread % | calibration spread % |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.name,
            r.ranks,
            r.measured.len(),
            secs(r.measured_s()),
            secs(r.traced_s),
            secs(r.offline_s),
            secs(r.online_s),
            pct(r.offline_error_pct()),
            pct(r.online_error_pct()),
            spread(r.plain_spread_pct()),
            spread(r.traced_spread_pct()),
            spread(r.calibration_spread_pct())
        )
        .expect("write to String");
    }
    out.push('\n');
    for line in summary_lines(rows).lines() {
        writeln!(out, "- {line}").expect("write to String");
    }
    for r in rows.iter().filter(|r| !r.note.is_empty()) {
        writeln!(out, "- {}: {}", r.name, r.note).expect("write to String");
    }
    out
}

/// Header of [`csv()`].
pub const CSV_HEADER: &str =
    "program,ranks,measured_s,traced_s,offline_s,online_s,offline_error_pct,online_error_pct,runs_s,offline_lo_s,offline_hi_s,plain_spread_pct,traced_spread_pct,traced_runs_s,calibration_spread_pct,calibrated_s,online_spread_pct,online_runs_s,note";

/// One line of [`csv()`], in [`CSV_HEADER`] order.
#[derive(serde::Serialize)]
struct CsvRow<'a> {
    program: &'a str,
    ranks: u32,
    measured_s: Option<String>,
    traced_s: Option<String>,
    offline_s: Option<String>,
    online_s: Option<String>,
    offline_error_pct: Option<String>,
    online_error_pct: Option<String>,
    runs_s: String,
    offline_lo_s: Option<String>,
    offline_hi_s: Option<String>,
    plain_spread_pct: Option<String>,
    traced_spread_pct: Option<String>,
    traced_runs_s: String,
    calibration_spread_pct: Option<String>,
    calibrated_s: String,
    online_spread_pct: Option<String>,
    online_runs_s: String,
    note: &'a str,
}

/// The table as CSV (header [`CSV_HEADER`]): one line per case, seconds
/// and percents in `{:e}` notation, empty fields for missing values, the
/// plain runs' `wall_s` `;`-separated in `runs_s` and the traced runs' in
/// `traced_runs_s`, their spreads ([`spread_pct`]) in `plain_spread_pct`
/// and `traced_spread_pct`, the predictions on each calibration in
/// `calibrated_s` and their spread in `calibration_spread_pct`, the online
/// runs' in `online_runs_s` and their spread in `online_spread_pct`; fields
/// holding a comma or quote are quoted.
pub fn csv(rows: &[Row]) -> String {
    let f = |v: Option<f64>| v.map(|x| format!("{x:e}"));
    let list = |v: &[f64]| v.iter().map(|x| format!("{x:e}")).collect::<Vec<_>>().join(";");
    to_csv(
        CSV_HEADER,
        rows.iter().map(|r| CsvRow {
            program: &r.name,
            ranks: r.ranks,
            measured_s: f(r.measured_s()),
            traced_s: f(r.traced_s),
            offline_s: f(r.offline_s),
            online_s: f(r.online_s),
            offline_error_pct: f(r.offline_error_pct()),
            online_error_pct: f(r.online_error_pct()),
            runs_s: list(&r.measured),
            offline_lo_s: f(r.offline_band.map(|b| b.0)),
            offline_hi_s: f(r.offline_band.map(|b| b.1)),
            plain_spread_pct: f(r.plain_spread_pct()),
            traced_spread_pct: f(r.traced_spread_pct()),
            traced_runs_s: list(&r.traced),
            calibration_spread_pct: f(r.calibration_spread_pct()),
            calibrated_s: list(&r.calibrated),
            online_spread_pct: f(r.online_spread_pct()),
            online_runs_s: list(&r.online),
            note: &r.note,
        }),
    )
}

/// One case of [`json()`]: seconds and percents as numbers, `null` when
/// missing.
#[derive(serde::Serialize)]
struct JsonRow<'a> {
    program: &'a str,
    ranks: u32,
    measured_s: Option<f64>,
    traced_s: Option<f64>,
    offline_s: Option<f64>,
    online_s: Option<f64>,
    offline_error_pct: Option<f64>,
    online_error_pct: Option<f64>,
    plain_spread_pct: Option<f64>,
    traced_spread_pct: Option<f64>,
    runs_s: &'a [f64],
    traced_runs_s: &'a [f64],
    offline_lo_s: Option<f64>,
    offline_hi_s: Option<f64>,
    calibration_spread_pct: Option<f64>,
    calibrated_s: &'a [f64],
    online_spread_pct: Option<f64>,
    online_runs_s: &'a [f64],
    #[serde(skip_serializing_if = "Option::is_none")]
    perturbation: Option<&'a PerturbSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    corrected_s: Option<f64>,
    note: &'a str,
}

/// The table as a JSON array, one object per case with the fields of
/// [`CSV_HEADER`] (`runs_s`, `traced_runs_s`, `calibrated_s` and
/// `online_runs_s` as arrays of seconds).
pub fn json(rows: &[Row]) -> String {
    let v: Vec<JsonRow> = rows
        .iter()
        .map(|r| JsonRow {
            program: &r.name,
            ranks: r.ranks,
            measured_s: r.measured_s(),
            traced_s: r.traced_s,
            offline_s: r.offline_s,
            online_s: r.online_s,
            offline_error_pct: r.offline_error_pct(),
            online_error_pct: r.online_error_pct(),
            plain_spread_pct: r.plain_spread_pct(),
            traced_spread_pct: r.traced_spread_pct(),
            runs_s: &r.measured,
            traced_runs_s: &r.traced,
            offline_lo_s: r.offline_band.map(|b| b.0),
            offline_hi_s: r.offline_band.map(|b| b.1),
            calibration_spread_pct: r.calibration_spread_pct(),
            calibrated_s: &r.calibrated,
            online_spread_pct: r.online_spread_pct(),
            online_runs_s: &r.online,
            perturbation: r.perturbation.as_ref(),
            corrected_s: r.corrected_s,
            note: &r.note,
        })
        .collect();
    serde_json::to_string_pretty(&v).expect("JSON of plain fields") + "\n"
}

/// CSV text: the comma-separated `header`, then one record per row.
pub(crate) fn to_csv<T: serde::Serialize>(header: &str, rows: impl IntoIterator<Item = T>) -> String {
    let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    w.write_record(header.split(',')).expect("CSV into memory");
    for r in rows {
        w.serialize(r).expect("CSV of plain fields into memory");
    }
    String::from_utf8(w.into_inner().expect("CSV into memory")).expect("CSV of UTF-8 fields")
}

/// Draws predicted (offline: circles, online: crosses) against measured
/// run time, log-log, with the line y = x. SVG only.
///
/// # Errors
/// A message naming `path` when it does not end in `.svg` or cannot be
/// written.
pub fn plot_svg(path: &Path, title: &str, rows: &[Row]) -> Result<(), String> {
    use plotters::prelude::*;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if path.extension().is_none_or(|e| e != "svg") {
        return Err(fail(&"only SVG plots are supported (use a .svg name)"));
    }
    let pts = |pick: fn(&Row) -> Option<f64>| -> Vec<(f64, f64, String)> {
        rows.iter().filter_map(|r| Some((r.measured_s()?, pick(r)?, r.name.clone()))).filter(|(m, p, _)| *m > 0.0 && *p > 0.0).collect()
    };
    let (offline, online) = (pts(|r| r.offline_s), pts(|r| r.online_s));
    let all = offline.iter().chain(&online).flat_map(|(m, p, _)| [*m, *p]);
    let (lo, hi) = all.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo.is_finite() { (lo / 1.5, hi * 1.5) } else { (1e-3, 1.0) };
    let root = SVGBackend::new(path, (720, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(|e| fail(&e))?;
    chart.configure_mesh().x_desc("measured (s)").y_desc("predicted (s)").draw().map_err(|e| fail(&e))?;
    chart
        .draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.mix(0.5).stroke_width(1)))
        .map_err(|e| fail(&e))?
        .label("y = x")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.5)));
    let blue = Palette99::pick(0).to_rgba();
    let red = Palette99::pick(1).to_rgba();
    chart
        .draw_series(offline.iter().map(|(m, p, _)| Circle::new((*m, *p), 5, blue.filled())))
        .map_err(|e| fail(&e))?
        .label("offline replay")
        .legend(move |(x, y)| Circle::new((x + 10, y), 5, blue.filled()));
    chart
        .draw_series(online.iter().map(|(m, p, _)| Cross::new((*m, *p), 6, red.stroke_width(2))))
        .map_err(|e| fail(&e))?
        .label("online")
        .legend(move |(x, y)| Cross::new((x + 10, y), 6, red.stroke_width(2)));
    chart.draw_series(offline.iter().map(|(m, p, n)| Text::new(format!(" {n}"), (*m, *p), ("sans-serif", 13)))).map_err(|e| fail(&e))?;
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests;

/// What the validation table keeps of a case's [`Perturbation`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerturbSummary {
    /// Regions-mode runs compared.
    pub regions_runs: usize,
    /// Traced runs compared.
    pub traced_runs: usize,
    /// `wall_s` of the regions-mode runs, seconds, in run order.
    pub regions_wall_s: Vec<f64>,
    /// Weighted median over the regions of traced ÷ untraced mean block.
    pub weighted_median_ratio: f64,
    /// Total traced ÷ total untraced block time of the matched regions.
    pub total_ratio: f64,
    /// Share of the untraced block time in regions the traces also have.
    pub matched_share: f64,
    /// Regions matched.
    pub regions: usize,
    /// Regions whose difference is systematic.
    pub systematic: usize,
    /// The systematic region with the largest |traced − untraced| time
    /// per run, and its ratio.
    pub largest: Option<(String, f64)>,
}

impl PerturbSummary {
    /// The summary of `p`, with the regions-mode runs' `wall_s`.
    pub fn of(p: &Perturbation, regions_wall_s: Vec<f64>) -> PerturbSummary {
        PerturbSummary {
            regions_runs: p.untraced_runs,
            traced_runs: p.traced_runs,
            regions_wall_s,
            weighted_median_ratio: p.weighted_median_ratio,
            total_ratio: p.total_ratio,
            matched_share: p.matched_share,
            regions: p.regions.len(),
            systematic: p.systematic().count(),
            largest: p.systematic().next().map(|r| (r.region.clone(), r.ratio)),
        }
    }
}

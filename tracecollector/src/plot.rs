//! The jitter-duration histogram as an SVG: events per second in each
//! power-of-two duration bin, log-log, one line per CPU and one for the node.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::summary::DurationSummary;

/// A drawing or I/O failure while writing a plot.
#[derive(Debug, thiserror::Error)]
#[error("{}: {what}", path.display())]
pub struct PlotError {
    /// The SVG file.
    pub path: PathBuf,
    /// plotters' one-line description.
    pub what: String,
}

/// Draws `series` (name, summary) to an SVG at `path`, titled `title`.
/// The last series is drawn thicker (it is the node).
///
/// # Errors
/// [`PlotError`] naming `path`.
pub fn histogram_svg(path: &Path, title: &str, series: &[(String, &DurationSummary)]) -> Result<(), PlotError> {
    let points = |s: &DurationSummary, seconds_per_event: f64| -> Vec<(f64, f64)> {
        s.histogram
            .iter()
            .filter(|b| b.events > 0)
            .map(|b| ((b.lo_ns as f64 * b.hi_ns as f64).sqrt(), b.events as f64 * seconds_per_event))
            .collect()
    };
    let all: Vec<(f64, f64)> =
        series.iter().flat_map(|(_, s)| points(s, if s.events > 0 { s.rate_per_s / s.events as f64 } else { 0.0 })).collect();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in &all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if all.is_empty() {
        (x0, x1, y0, y1) = (100.0, 1e6, 0.1, 10.0);
    }
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    let e = |x: &dyn std::fmt::Display| PlotError { path: path.to_path_buf(), what: x.to_string() };
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x0 / 2.0..x1 * 2.0).log_scale(), (y0 / 2.0..y1 * 2.0).log_scale())
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("jitter duration (power-of-two bins)")
        .y_desc("events per second")
        .x_label_formatter(&|x| crate::summary::fmt_ns(*x))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, (name, s)) in series.iter().enumerate() {
        let node = i + 1 == series.len();
        let color = if node { BLACK.to_rgba() } else { Palette99::pick(i).to_rgba() };
        let style = color.stroke_width(if node { 3 } else { 1 });
        let pts = points(s, if s.events > 0 { s.rate_per_s / s.events as f64 } else { 0.0 });
        chart
            .draw_series(LineSeries::new(pts.clone(), style))
            .map_err(|x| e(&x))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(|x| e(&x))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::Stats;

    #[test]
    fn draws_an_svg() {
        let mut s = Stats::new(1e9);
        for i in 1..200u64 {
            s.add(i * 300);
        }
        s.measured_cycles = 1_000_000_000;
        let sum = s.summary(1.0);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.svg");
        histogram_svg(&p, "test", &[("cpu0".into(), &sum), ("node".into(), &sum)]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("<svg") && text.contains("events per second"), "{}", &text[..200.min(text.len())]);
        let empty = Stats::new(1e9).summary(1.0);
        histogram_svg(&p, "empty", &[("node".into(), &empty)]).unwrap();
    }
}

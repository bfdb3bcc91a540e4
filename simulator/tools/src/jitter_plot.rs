//! The slowdown-versus-tasks plot of `simulator jitter --plot`.

use std::path::Path;

use simulator::jitter::report::Point;

/// Draws slowdown (percent, median with the p5–p95 band) against tasks (log₂
/// axis), one curve per mode, as in jitSim Figs. 7–10. SVG only.
///
/// # Errors
/// A message naming `path` when it does not end in `.svg` or cannot be written.
pub fn plot_svg(path: &Path, title: &str, points: &[Point]) -> Result<(), String> {
    use plotters::prelude::*;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if path.extension().is_none_or(|e| e != "svg") {
        return Err(fail(&"only SVG plots are supported (use a .svg name)"));
    }
    let max_tasks = points.iter().map(|p| p.tasks).max().unwrap_or(1).max(2) as f64;
    let y_hi = points.iter().map(|p| p.band.p95.max(p.slowdown_pct)).fold(0.0f64, f64::max) * 1.1 + 1e-3;
    let y_lo = points.iter().map(|p| p.band.p5.min(p.slowdown_pct)).fold(0.0f64, f64::min);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((1f64..max_tasks).log_scale(), y_lo..y_hi)
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("tasks")
        .y_desc("slowdown (%)")
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .draw()
        .map_err(|e| fail(&e))?;
    let mut modes: Vec<&str> = points.iter().map(|p| p.mode.as_str()).collect();
    modes.dedup();
    for (k, mode) in modes.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let pts: Vec<&Point> = points.iter().filter(|p| p.mode == *mode).collect();
        let line = pts.iter().map(|p| (p.tasks as f64, p.band.median));
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
            .map_err(|e| fail(&e))?
            .label(*mode)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(line.map(|xy| Circle::new(xy, 3, color.filled()))).map_err(|e| fail(&e))?;
        for band in [
            pts.iter().map(|p| (p.tasks as f64, p.band.p5)).collect::<Vec<_>>(),
            pts.iter().map(|p| (p.tasks as f64, p.band.p95)).collect(),
        ] {
            chart.draw_series(LineSeries::new(band, color.mix(0.4).stroke_width(1))).map_err(|e| fail(&e))?;
        }
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}

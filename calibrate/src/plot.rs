//! SVG plots: the benchmark samples and the fitted segments, one per
//! operation, log-log (after Heinrich et al., IEEE Cluster 2017, Fig. 8);
//! the power model per host.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::bench::{Op, Sample};
use crate::error::{Error, ErrorKind};
use crate::io::fit::IoFit;
use crate::io::{Case, IoSample};
use crate::power::HostPower;
use crate::segmented::SegmentedFit;

/// Draws the `samples` of `op` (points, seconds against bytes) and the
/// pieces of `fit` (one colored line per piece, over its measured sizes)
/// to the SVG `path`, titled `title`.
///
/// # Errors
/// [`ErrorKind::Io`] naming `path` when drawing or writing fails;
/// [`ErrorKind::Fit`] when there is no positive sample of `op`.
pub fn samples_svg(path: &Path, title: &str, op: Op, samples: &[Sample], fit: &SegmentedFit) -> Result<(), Error> {
    let pts: Vec<(f64, f64)> =
        samples.iter().filter(|s| s.op == op && s.duration_s > 0.0).map(|s| (s.size_bytes.max(1) as f64, s.duration_s * 1e6)).collect();
    if pts.is_empty() {
        return Err(Error::new(ErrorKind::Fit, format!("{}: no positive {op} sample to plot", path.display())));
    }
    let (mut x1, mut y0, mut y1) = (1.0f64, f64::MAX, f64::MIN);
    for &(x, y) in &pts {
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    let e = |x: &dyn std::fmt::Display| Error::new(ErrorKind::Io, format!("{}: {x}", path.display()));
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((0.8..x1 * 1.25).log_scale(), (y0 / 1.5..y1 * 1.5).log_scale())
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc("message size (bytes)").y_desc("duration (us)").draw().map_err(|x| e(&x))?;
    chart
        .draw_series(pts.iter().map(|&p| Circle::new(p, 2, RGBColor(120, 120, 120).mix(0.35).filled())))
        .map_err(|x| e(&x))?
        .label(format!("{op} samples ({})", pts.len()))
        .legend(|(x, y)| Circle::new((x + 10, y), 3, RGBColor(120, 120, 120).filled()));
    for (i, p) in fit.pieces.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let (a, b) = (p.first_bytes.max(1) as f64, p.last_bytes.max(1) as f64);
        // Many points so the line stays straight in linear terms on log axes.
        let line: Vec<(f64, f64)> =
            (0..=64).map(|k| a * (b / a).powf(k as f64 / 64.0)).map(|x| (x, (p.intercept_s + p.slope_s_per_byte * x) * 1e6)).collect();
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(3)))
            .map_err(|x| e(&x))?
            .label(format!("piece {}: {}..{} B", i + 1, p.first_bytes, p.last_bytes))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Writes `<dir>/<prefix><op>.svg` for each `(op, fit)`; returns the paths.
///
/// # Errors
/// As [`samples_svg`]; [`ErrorKind::Io`] when `dir` cannot be created.
pub fn plot_all(dir: &Path, prefix: &str, samples: &[Sample], fits: &[(Op, &SegmentedFit)]) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(dir).map_err(|x| Error::io(dir, x))?;
    let mut out = Vec::new();
    for (op, fit) in fits {
        let path = dir.join(format!("{prefix}{op}.svg"));
        let title = format!("{prefix}{op}: samples and {} fitted piece(s)", fit.pieces.len());
        samples_svg(&path, &title, *op, samples, fit)?;
        out.push(path);
    }
    Ok(out)
}

/// Draws the power model of `host` to the SVG `path`: the steady-segment
/// means (points, watts against u = active cores ÷ cores) and the fitted
/// line `P_static + P_dyn × u` of every pstate (after Heinrich et al. 2017,
/// Fig. 6).
///
/// # Errors
/// [`ErrorKind::Io`] naming `path` when drawing or writing fails.
pub fn power_svg(path: &Path, host: &HostPower) -> Result<(), Error> {
    let e = |x: &dyn std::fmt::Display| Error::new(ErrorKind::Io, format!("{}: {x}", path.display()));
    let top = host.pstates.iter().map(|p| p.static_w + p.dynamic_w.max(0.0)).chain(host.points.iter().map(|p| p.2)).fold(1.0f64, f64::max);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: power against load, per pstate", host.host), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.02..1.02f64, 0.0..top * 1.1)
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc("u = active cores / cores").y_desc("power (W)").draw().map_err(|x| e(&x))?;
    for (i, p) in host.pstates.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = host.points.iter().filter(|q| q.0 == p.pstate).map(|q| (q.1, q.2)).collect();
        chart.draw_series(pts.iter().map(|&q| Circle::new(q, 4, color.filled()))).map_err(|x| e(&x))?;
        chart
            .draw_series(LineSeries::new([(0.0, p.static_w), (1.0, p.static_w + p.dynamic_w)], color.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(format!("pstate {:e}: {:.1} + {:.1} u W", p.pstate, p.static_w, p.dynamic_w))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Draws every data case of an I/O calibration to `<dir>/io.svg`: the
/// samples (points, seconds against bytes per rank, log-log) and the
/// fitted model's time at each measured size (a line per case, as
/// [`crate::io::fit::predict`] gives it with `exchange`); returns the path.
///
/// # Errors
/// [`ErrorKind::Io`] naming the directory or file when creating or
/// drawing fails; [`ErrorKind::Fit`] when there is no positive sample.
pub fn io_svg(dir: &Path, samples: &[IoSample], fit: &IoFit, exchange: &dyn Fn(u64) -> f64) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(dir).map_err(|x| Error::io(dir, x))?;
    let path = dir.join("io.svg");
    let pts: Vec<(Case, f64, f64)> = samples
        .iter()
        .filter(|s| Case::DATA.contains(&s.case) && s.seconds > 0.0 && s.size_bytes > 0)
        .map(|s| (s.case, s.size_bytes as f64, s.seconds))
        .collect();
    if pts.is_empty() {
        return Err(Error::new(ErrorKind::Fit, format!("{}: no positive I/O sample to plot", path.display())));
    }
    let mut sizes: Vec<u64> = pts.iter().map(|p| p.1 as u64).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let model = |c: Case| -> Vec<(f64, f64)> {
        sizes.iter().map(|&b| (b as f64, crate::io::fit::predict(&fit.fs, fit.ranks, c, b, exchange))).collect()
    };
    let (x0, x1) = (sizes[0] as f64, sizes[sizes.len() - 1] as f64);
    let all_y = pts.iter().map(|p| p.2).chain(Case::DATA.iter().flat_map(|&c| model(c)).map(|p| p.1)).filter(|&y| y > 0.0);
    let (y0, y1) = all_y.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    let e = |x: &dyn std::fmt::Display| Error::new(ErrorKind::Io, format!("{}: {x}", path.display()));
    let root = SVGBackend::new(&path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: measured (points) and modelled (lines) MPI-IO, {} ranks", fit.fs.name, fit.ranks), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x0 / 1.5..x1 * 1.5).log_scale(), (y0 / 1.5..y1 * 1.5).log_scale())
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc("bytes per rank").y_desc("time (s)").draw().map_err(|x| e(&x))?;
    for (i, &c) in Case::DATA.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(pts.iter().filter(|p| p.0 == c).map(|p| Circle::new((p.1, p.2), 3, color.mix(0.5).filled())))
            .map_err(|x| e(&x))?;
        chart
            .draw_series(LineSeries::new(model(c), color.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(c.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    drop(chart);
    drop(root);
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segmented::{fit, FitOptions};

    #[test]
    fn draws_samples_and_segments() {
        let samples: Vec<Sample> = (0..40u64)
            .map(|i| {
                let s = 1u64 << (i / 2);
                let y = if s < 4096 { 3e-7 + s as f64 / 3e9 } else { 4e-6 + s as f64 / 8e9 };
                Sample { op: Op::Pingpong, size_bytes: s, start_s: 0.0, duration_s: y * (1.0 + 0.01 * (i % 3) as f64) }
            })
            .collect();
        let pts: Vec<(u64, f64)> = samples.iter().map(|s| (s.size_bytes, s.duration_s)).collect();
        let f = fit(&pts, &FitOptions::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let paths = plot_all(dir.path(), "intra-", &samples, &[(Op::Pingpong, &f)]).unwrap();
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(
            paths[0].ends_with("intra-pingpong.svg") && svg.starts_with("<svg") && svg.contains("piece 2"),
            "{}",
            &svg[..200.min(svg.len())]
        );
        let e = samples_svg(&dir.path().join("x.svg"), "t", Op::Send, &samples, &f).unwrap_err();
        assert!(e.to_string().contains("no positive send sample"), "{e}");
    }

    #[test]
    fn draws_the_power_model() {
        use crate::power::PstateFit;
        let host = HostPower {
            host: "node0".into(),
            cores: 4,
            pstates: vec![PstateFit { pstate: 2e9, static_w: 60.0, dynamic_w: 40.0, segments: 2 }],
            quadratic: None,
            points: vec![(2e9, 0.0, 60.5), (2e9, 1.0, 99.0)],
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("power-node0.svg");
        power_svg(&p, &host).unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().contains("60.0 + 40.0 u W"));
    }
}

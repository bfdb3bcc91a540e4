//! Tracing's perturbation of compute blocks in `validate`
//! (`--regions-runs`, `--correct-perturbation`): per case, runs in
//! `INTERPOSER_MODE=regions` interleaved with the traced runs, the
//! comparison of their per-region block times ([`crate::perturbation`]),
//! and the offline prediction again with the systematic regions' blocks
//! scaled by `untraced ÷ traced`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::perturbation::{compare, format_table, Perturbation, Rule, RunRegions};
use simulator::action::ComputeTime;

use super::report::{median, summarize, Row};

/// The traced runs `traces` against the regions-mode runs `regions` of
/// one case; also writes `perturbation.txt` and `perturbation.json` in `dir`.
///
/// # Errors
/// A one-line message naming the run directory that cannot be read.
pub fn measure(traces: &[PathBuf], regions: &[PathBuf], compute: ComputeTime, dir: &Path) -> Result<Perturbation, String> {
    let traced = traces.iter().map(|t| RunRegions::from_trace(t).map_err(|e| e.to_string())).collect::<Result<Vec<_>, _>>()?;
    let untraced = regions.iter().map(|r| RunRegions::from_regions(r).map_err(|e| e.to_string())).collect::<Result<Vec<_>, _>>()?;
    let p = compare(&traced, &untraced, compute, &Rule::default());
    let _ = std::fs::write(dir.join("perturbation.txt"), format_table(&p));
    let _ = serde_json::to_vec_pretty(&p).map(|j| std::fs::write(dir.join("perturbation.json"), j));
    Ok(p)
}

fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |x| format!("{x:.4}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |x| format!("{x:+.1}"))
}

/// The perturbation table (rows with a perturbation only): per case the
/// weighted median and total traced ÷ untraced ratio, systematic regions
/// of all matched, the regions-mode runs' median `wall_s` against the
/// plain runs', the offline error without and with the correction, and
/// the largest systematic region; then the error summaries.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<16} {:>7} {:>9} {:>9} {:>8} {:>11} {:>11} {:>10} {:>12}  {}\n",
        "program",
        "runs",
        "wmedian",
        "total",
        "sys/all",
        "regions_s",
        "measured_s",
        "offline_%",
        "corrected_%",
        "largest systematic region (ratio)"
    );
    for r in rows {
        let Some(p) = &r.perturbation else { continue };
        writeln!(
            out,
            "{:<16} {:>7} {:>9} {:>9} {:>8} {:>11} {:>11} {:>10} {:>12}  {}",
            r.name,
            format!("{}t/{}u", p.traced_runs, p.regions_runs),
            ratio(Some(p.weighted_median_ratio)),
            ratio(Some(p.total_ratio)),
            format!("{}/{}", p.systematic, p.regions),
            ratio(median(&p.regions_wall_s)),
            ratio(r.measured_s()),
            pct(r.offline_error_pct()),
            pct(r.corrected_error_pct()),
            p.largest.as_ref().map_or_else(|| "-".into(), |(k, x)| format!("{k} ({x:.3})"))
        )
        .expect("write to String");
    }
    let with: Vec<&Row> = rows.iter().filter(|r| r.corrected_s.is_some()).collect();
    for (label, s) in [
        ("offline", summarize(with.iter().map(|r| r.offline_error_pct()))),
        ("corrected", summarize(with.iter().map(|r| r.corrected_error_pct()))),
    ] {
        if let Some(s) = s {
            writeln!(out, "{label}: median |error| {:.1} %, max {:.1} % over {} rows", s.median_abs_pct, s.max_abs_pct, s.rows)
                .expect("write to String");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::report::PerturbSummary;

    #[test]
    fn the_table_sets_the_corrected_error_beside_the_offline_one() {
        let p = PerturbSummary {
            regions_runs: 3,
            traced_runs: 3,
            regions_wall_s: vec![1.0, 1.1, 0.9],
            weighted_median_ratio: 1.05,
            total_ratio: 1.04,
            matched_share: 1.0,
            regions: 4,
            systematic: 1,
            largest: Some(("a.c:1:a.c:2".into(), 1.08)),
        };
        let row = Row {
            name: "ring".into(),
            ranks: 2,
            measured: vec![1.0],
            offline_s: Some(1.1),
            corrected_s: Some(1.02),
            perturbation: Some(p),
            ..Row::default()
        };
        let t = table(&[row, Row { name: "none".into(), ..Row::default() }]);
        let line = t.lines().nth(1).unwrap();
        assert!(line.starts_with("ring") && line.contains("3t/3u") && line.contains("1/4"), "{t}");
        assert!(line.contains("+10.0") && line.contains("+2.0") && line.ends_with("a.c:1:a.c:2 (1.080)"), "{t}");
        assert!(!t.contains("none"), "{t}");
        assert!(t.contains("corrected: median |error| 2.0 %"), "{t}");
    }
}

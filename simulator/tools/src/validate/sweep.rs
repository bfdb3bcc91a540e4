//! The sensitivity sweep: does the prediction follow a change of the
//! network the way the real run does? Each case is re-predicted with the
//! network's latency or bandwidth scaled ([`super::predict::scale_network`]);
//! where a hook can change the real network (the `tc` rate of the two-host
//! setup), the case is also re-measured at the scaled bandwidth.

use std::fmt::Write as _;

/// The scalings re-predicted: `(latency factor, bandwidth factor)`.
pub const FACTORS: [(f64, f64); 4] = [(0.5, 1.0), (2.0, 1.0), (1.0, 0.5), (1.0, 2.0)];

/// One case at one scaling, seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    /// Case name.
    pub name: String,
    /// MPI ranks.
    pub ranks: u32,
    /// Latency factor.
    pub latency: f64,
    /// Bandwidth factor.
    pub bandwidth: f64,
    /// Offline prediction on the unscaled platform.
    pub base_predicted_s: f64,
    /// Offline prediction on the scaled platform.
    pub predicted_s: f64,
    /// Median plain run time on the unchanged network.
    pub base_measured_s: Option<f64>,
    /// Median plain run time with the real network changed by the same
    /// factor, when it could be changed (bandwidth only).
    pub measured_s: Option<f64>,
}

impl SweepRow {
    /// Predicted change, percent of the unscaled prediction.
    pub fn predicted_change_pct(&self) -> f64 {
        100.0 * (self.predicted_s / self.base_predicted_s - 1.0)
    }

    /// Measured change, percent of the unchanged measurement.
    pub fn measured_change_pct(&self) -> Option<f64> {
        match (self.measured_s, self.base_measured_s) {
            (Some(m), Some(b)) if b > 0.0 => Some(100.0 * (m / b - 1.0)),
            _ => None,
        }
    }

    /// How far the predicted change is from the measured one, percent of
    /// the measured change: `100 · |Δpred − Δmeas| / |Δmeas|`.
    pub fn change_error_pct(&self) -> Option<f64> {
        let m = self.measured_change_pct()?;
        (m != 0.0).then(|| 100.0 * (self.predicted_change_pct() - m).abs() / m.abs())
    }
}

fn opt(v: Option<f64>, digits: usize, sign: bool) -> String {
    match v {
        Some(x) if sign => format!("{x:+.digits$}"),
        Some(x) => format!("{x:.digits$}"),
        None => "n/a".into(),
    }
}

/// The sweep as a terminal table.
pub fn table(rows: &[SweepRow]) -> String {
    let mut out = format!(
        "{:<16} {:>5} {:>6} {:>6} {:>12} {:>10} {:>12} {:>10} {:>10}\n",
        "program", "ranks", "lat_x", "bw_x", "predicted_s", "pred_chg%", "measured_s", "meas_chg%", "chg_err%"
    );
    for r in rows {
        writeln!(
            out,
            "{:<16} {:>5} {:>6} {:>6} {:>12.4} {:>10.1} {:>12} {:>10} {:>10}",
            r.name,
            r.ranks,
            r.latency,
            r.bandwidth,
            r.predicted_s,
            r.predicted_change_pct(),
            opt(r.measured_s, 4, false),
            opt(r.measured_change_pct(), 1, true),
            opt(r.change_error_pct(), 1, false)
        )
        .expect("write to String");
    }
    out
}

/// The sweep in Markdown.
pub fn markdown(rows: &[SweepRow], preamble: &str) -> String {
    let mut out = format!("# Sensitivity sweep\n\n{preamble}\n\n");
    out.push_str("| program | ranks | latency × | bandwidth × | predicted (s) | predicted change % | measured (s) | measured change % | change error % |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        writeln!(
            out,
            "| {} | {} | {} | {} | {:.4} | {:+.1} | {} | {} | {} |",
            r.name,
            r.ranks,
            r.latency,
            r.bandwidth,
            r.predicted_s,
            r.predicted_change_pct(),
            opt(r.measured_s, 4, false),
            opt(r.measured_change_pct(), 1, true),
            opt(r.change_error_pct(), 1, false)
        )
        .expect("write to String");
    }
    out
}

/// Header of [`csv()`].
pub const CSV_HEADER: &str = "program,ranks,latency_factor,bandwidth_factor,base_predicted_s,predicted_s,predicted_change_pct,base_measured_s,measured_s,measured_change_pct,change_error_pct";

/// One line of [`csv()`], in [`CSV_HEADER`] order.
#[derive(serde::Serialize)]
struct CsvRow<'a> {
    program: &'a str,
    ranks: u32,
    latency_factor: String,
    bandwidth_factor: String,
    base_predicted_s: String,
    predicted_s: String,
    predicted_change_pct: String,
    base_measured_s: Option<String>,
    measured_s: Option<String>,
    measured_change_pct: Option<String>,
    change_error_pct: Option<String>,
}

/// The sweep as CSV (header [`CSV_HEADER`]): factors as given, seconds
/// and percents in `{:e}` notation, empty fields for values not measured.
pub fn csv(rows: &[SweepRow]) -> String {
    let e = |x: f64| format!("{x:e}");
    super::report::to_csv(
        CSV_HEADER,
        rows.iter().map(|r| CsvRow {
            program: &r.name,
            ranks: r.ranks,
            latency_factor: r.latency.to_string(),
            bandwidth_factor: r.bandwidth.to_string(),
            base_predicted_s: e(r.base_predicted_s),
            predicted_s: e(r.predicted_s),
            predicted_change_pct: e(r.predicted_change_pct()),
            base_measured_s: r.base_measured_s.map(e),
            measured_s: r.measured_s.map(e),
            measured_change_pct: r.measured_change_pct().map(e),
            change_error_pct: r.change_error_pct().map(e),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(measured: Option<f64>) -> SweepRow {
        SweepRow {
            name: "ring".into(),
            ranks: 2,
            latency: 1.0,
            bandwidth: 0.5,
            base_predicted_s: 1.0,
            predicted_s: 1.8,
            base_measured_s: Some(2.0),
            measured_s: measured,
        }
    }

    #[test]
    fn changes_are_compared_relative_to_the_measured_change() {
        let r = row(Some(4.0));
        assert!((r.predicted_change_pct() - 80.0).abs() < 1e-9);
        assert!((r.measured_change_pct().unwrap() - 100.0).abs() < 1e-9);
        assert!((r.change_error_pct().unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(row(None).change_error_pct(), None);
        assert_eq!(row(Some(2.0)).change_error_pct(), None);
    }

    #[test]
    fn tables_show_unmeasured_rows_as_na() {
        let rows = [row(Some(4.0)), row(None)];
        let t = table(&rows);
        assert!(t.lines().nth(1).unwrap().contains("+100.0") && t.lines().nth(2).unwrap().contains("n/a"), "{t}");
        assert!(markdown(&rows, "p").contains("| ring | 2 | 1 | 0.5 | 1.8000 | +80.0 | 4.0000 | +100.0 | 20.0 |"));
        let c = csv(&rows);
        assert_eq!(c.lines().count(), 3);
        assert!(c.starts_with(&format!("{CSV_HEADER}\nring,2,1,0.5,1e0,1.8e0,")) && c.ends_with(",2e0,,,\n"), "{c}");
    }
}

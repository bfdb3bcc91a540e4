//! The perturbation as a text table.

use super::Perturbation;

/// Region rows shown at most by [`format_table`] (the largest `|delta_s|`).
pub(crate) const TABLE_ROWS: usize = 15;

/// A summary line, then the regions with the largest difference
/// (at most 15): blocks per run, mean block in each kind
/// (microseconds), ratio, what tracing adds per run (milliseconds), and
/// whether the difference is systematic.
pub fn format_table(p: &Perturbation) -> String {
    let systematic = p.systematic().count();
    let mut s = format!(
        "{} traced and {} untraced runs; {} regions matched ({:.1} % of untraced block time); traced/untraced: weighted median {:.4}, total {:.4}; {} systematic\n",
        p.traced_runs,
        p.untraced_runs,
        p.regions.len(),
        100.0 * p.matched_share,
        p.weighted_median_ratio,
        p.total_ratio,
        systematic
    );
    s += &format!(
        "{:<56} {:>9} {:>9} {:>12} {:>12} {:>7} {:>10}  {}\n",
        "region (prev:next)", "blocks_t", "blocks_u", "traced_us", "untraced_us", "ratio", "delta_ms", "systematic"
    );
    for r in p.regions.iter().take(TABLE_ROWS) {
        s += &format!(
            "{:<56} {:>9} {:>9} {:>12.3} {:>12.3} {:>7.4} {:>10.4}  {}\n",
            r.region,
            r.traced_blocks,
            r.untraced_blocks,
            r.traced_mean_s * 1e6,
            r.untraced_mean_s * 1e6,
            r.ratio,
            r.delta_s * 1e3,
            r.why_not.as_deref().map_or_else(|| "yes".to_string(), |w| format!("no: {w}"))
        );
    }
    if p.regions.len() > TABLE_ROWS {
        s += &format!("({} more regions)\n", p.regions.len() - TABLE_ROWS);
    }
    s
}

//! `validate --sweep`: the cases re-predicted at scaled network speeds and,
//! with a hook, re-measured at scaled bandwidths.

use std::process::{Command, Stdio};

use anyhow::{bail, Context};
use indicatif::ProgressBar;

use super::super::predict;
use super::super::report::{self, Row};
use super::super::sweep::{SweepRow, FACTORS};
use super::{checked_run, plain_mode, predicted_s, Case, Ctx, Traced, ValidateArgs};

/// Bandwidth factors re-measured through `--sweep-hook`, the base first.
pub(super) const MEASURED_BW: [f64; 3] = [1.0, 0.5, 2.0];

/// Re-predicts every traced case at [`FACTORS`]; with a hook, re-measures
/// every case at the bandwidth factors, the factors interleaved run by run
/// (so that slow and fast phases of the machine fall on all of them) and
/// the base re-measured the same way.
pub(super) fn run_sweep(
    args: &ValidateArgs,
    ctx: &Ctx,
    cases: &[Case],
    results: &[(Row, Option<Traced>)],
    bar: &ProgressBar,
) -> anyhow::Result<Vec<SweepRow>> {
    let mut runs: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); MEASURED_BW.len()]; cases.len()];
    if let Some(hook) = &args.sweep_hook {
        for i in 0..ctx.reps {
            for (c, case) in cases.iter().enumerate() {
                for (k, &bw) in MEASURED_BW.iter().enumerate() {
                    set_network(hook, bw, bar)?;
                    bar.set_message(format!("{} plain at bandwidth x{bw} {}/{}", case.name, i + 1, ctx.reps));
                    let log = ctx.out.join("cases").join(format!("{}-np{}", case.name, case.ranks)).join(format!("sweep-bw{bw}-{i}.log"));
                    let mut row = Row::default();
                    let mode = plain_mode(case, ctx, log.parent().unwrap_or(&ctx.out), i);
                    let result = checked_run(case, &mode, &log, ctx, &mut row);
                    if !row.note.is_empty() {
                        bar.println(format!("sweep: {}: {}", case.name, row.note));
                    }
                    match result {
                        Ok(w) => runs[c][k].push(w),
                        Err(e) => bar.println(format!("sweep: {e}")),
                    }
                    bar.inc(1);
                }
            }
        }
        set_network(hook, 1.0, bar)?;
    }
    let mut rows = Vec::new();
    for (c, (row, traced)) in results.iter().enumerate() {
        // The sweep replays what the base prediction replays, corrected
        // as it is.
        let Some(t) = traced else { continue };
        let Some(base) = (if t.ratios.is_some() { row.corrected_s } else { row.offline_s }) else { continue };
        let base_measured_s = if args.sweep_hook.is_some() { report::median(&runs[c][0]) } else { row.measured_s() };
        for &(lat, bw) in &FACTORS {
            bar.set_message(format!("{} replay at latency x{lat}, bandwidth x{bw}", row.name));
            let scaled = predict::scale_network(&t.platform, lat, bw);
            let predicted = match &t.ratios {
                Some(r) => predict::replay_scaled(&scaled, &t.replayed, ctx.compute, r.clone()),
                None => predict::replay_predicted_runs(&scaled, &t.replayed, ctx.compute),
            };
            let predicted_s = predicted_s(&cases[c], &predicted.map_err(anyhow::Error::msg)?);
            let measured_s = match MEASURED_BW.iter().position(|&f| f == bw) {
                Some(k) if lat == 1.0 && bw != 1.0 => report::median(&runs[c][k]),
                _ => None,
            };
            rows.push(SweepRow {
                name: row.name.clone(),
                ranks: row.ranks,
                latency: lat,
                bandwidth: bw,
                base_predicted_s: base,
                predicted_s,
                base_measured_s,
                measured_s,
            });
        }
    }
    Ok(rows)
}

/// Calls the sweep hook with `factor`.
fn set_network(hook: &str, factor: f64, bar: &ProgressBar) -> anyhow::Result<()> {
    bar.set_message(format!("sweep hook: bandwidth x{factor}"));
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{hook} {factor}"))
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("--sweep-hook: cannot run sh -c '{hook} {factor}'"))?;
    if !status.success() {
        bail!("--sweep-hook: `{hook} {factor}` failed ({status})");
    }
    Ok(())
}

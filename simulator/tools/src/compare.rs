//! `simulator compare`: measured against predicted time, per rank and
//! phase, as Sunshot did for PIOsimHD (Kunkel).
//!
//! Measured, from an interposer trace (the thread that called `MPI_Init`):
//! - `end_s`: start of `MPI_Finalize` (or end of the last call), seconds
//!   since `MPI_Init` returned — what the replay calls a rank's end;
//! - `compute_s`: the compute blocks' wall time (or thread CPU time);
//! - `mpi_s`: time inside MPI calls other than `MPI_Init`/`MPI_Finalize`.
//!
//! Predicted, from a replay report: `compute_s` and `mpi_s = comm_s +
//! wait_s` (a trace cannot tell modelled transfer from waiting).

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use simulator::trace::ComputeTime;
use simulator::trace::{self, Op, TraceError};

/// One rank's phases, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Phases {
    /// End of the rank's run, seconds.
    pub end_s: f64,
    /// Computing, seconds.
    pub compute_s: f64,
    /// Inside MPI (communication and waiting), seconds.
    pub mpi_s: f64,
}

/// Measured phases of every rank of the trace directory `dir`.
///
/// # Errors
/// [`TraceError`] naming the first missing, truncated or corrupt file.
pub fn measure(dir: &Path, compute: ComputeTime) -> Result<Vec<Phases>, TraceError> {
    let (_, ranks) = trace::open_dir(dir)?;
    let mut out = Vec::with_capacity(ranks.len());
    for t in ranks {
        let mut p = Phases::default();
        for rec in t.records()? {
            let rec = rec?;
            p.compute_s += match compute {
                ComputeTime::Cpu => rec.compute_cpu_ns,
                ComputeTime::Wall => rec.compute_wall_ns,
            } as f64
                * 1e-9;
            match rec.op {
                Op::Init | Op::InitThread => {}
                Op::Finalize => p.end_s = rec.t_start_ns as f64 * 1e-9,
                _ => {
                    p.mpi_s += rec.t_end_ns.saturating_sub(rec.t_start_ns) as f64 * 1e-9;
                    p.end_s = rec.t_end_ns as f64 * 1e-9;
                }
            }
        }
        out.push(p);
    }
    Ok(out)
}

/// Predicted phases from a replay report as JSON (`simulator replay
/// --json`): its `ranks[].end_s`, `compute_s`, `comm_s` + `wait_s`.
///
/// # Errors
/// A message naming the first missing field.
pub fn predicted(report: &serde_json::Value) -> Result<Vec<Phases>, String> {
    let ranks = report["ranks"].as_array().ok_or("no `ranks` list (not a `simulator replay --json` report)")?;
    ranks
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let f = |k: &str| r[k].as_f64().ok_or(format!("ranks[{i}].{k} is missing or not a number"));
            Ok(Phases { end_s: f("end_s")?, compute_s: f("compute_s")?, mpi_s: f("comm_s")? + f("wait_s")? })
        })
        .collect()
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// World rank.
    pub rank: usize,
    /// From the trace.
    pub measured: Phases,
    /// From the replay.
    pub predicted: Phases,
}

/// Pairs `measured` and `predicted` rank by rank.
///
/// # Errors
/// A message when the rank counts differ.
pub fn rows(measured: &[Phases], predicted: &[Phases]) -> Result<Vec<Row>, String> {
    if measured.len() != predicted.len() {
        return Err(format!("the trace has {} ranks but the prediction {}", measured.len(), predicted.len()));
    }
    Ok(measured.iter().zip(predicted).enumerate().map(|(rank, (&m, &p))| Row { rank, measured: m, predicted: p }).collect())
}

/// Relative error of `p` against `m`, percent (NaN when `m` is 0).
fn err_pct(m: f64, p: f64) -> f64 {
    if m == 0.0 {
        f64::NAN
    } else {
        (p - m) / m * 100.0
    }
}

/// Writes the table: per rank and phase, measured, predicted and error %,
/// then the makespans (latest end).
///
/// # Errors
/// The writer's I/O error.
pub fn write_table<W: Write>(rows: &[Row], w: &mut W) -> io::Result<()> {
    writeln!(w, "{:>6}  {:<8}  {:>12}  {:>12}  {:>8}", "rank", "phase", "measured_s", "predicted_s", "error_%")?;
    let line = |w: &mut W, rank: &str, phase: &str, m: f64, p: f64| {
        writeln!(w, "{rank:>6}  {phase:<8}  {m:>12.6}  {p:>12.6}  {:>+8.1}", err_pct(m, p))
    };
    for r in rows {
        let k = r.rank.to_string();
        line(w, &k, "compute", r.measured.compute_s, r.predicted.compute_s)?;
        line(w, &k, "mpi", r.measured.mpi_s, r.predicted.mpi_s)?;
        line(w, &k, "end", r.measured.end_s, r.predicted.end_s)?;
    }
    let max = |f: fn(&Row) -> f64| rows.iter().map(f).fold(0.0, f64::max);
    line(w, "all", "makespan", max(|r| r.measured.end_s), max(|r| r.predicted.end_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_three_phases_per_rank_and_the_makespan() {
        let m = [Phases { end_s: 2.0, compute_s: 1.5, mpi_s: 0.5 }, Phases { end_s: 1.0, compute_s: 1.0, mpi_s: 0.0 }];
        let report = serde_json::json!({"makespan_s": 2.2, "ranks": [
            {"end_s": 2.2, "compute_s": 1.5, "comm_s": 0.5, "wait_s": 0.2},
            {"end_s": 1.1, "compute_s": 1.1, "comm_s": 0.0, "wait_s": 0.0}]});
        let r = rows(&m, &predicted(&report).unwrap()).unwrap();
        let mut out = Vec::new();
        write_table(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1 + 3 * 2 + 1, "{text}");
        assert!(text.contains("     0  mpi           0.500000      0.700000     +40.0"), "{text}");
        assert!(text.contains("   all  makespan      2.000000      2.200000     +10.0"), "{text}");
        assert!(rows(&m[..1], &predicted(&report).unwrap()).unwrap_err().contains("1 ranks but the prediction 2"));
        assert!(predicted(&serde_json::json!({"ranks": [{"end_s": 1}]})).unwrap_err().contains("ranks[0].compute_s"));
    }
}

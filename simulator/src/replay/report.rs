//! The replay's result: makespan and per-rank breakdown, as JSON or a table.

use std::io::{self, Write};

use serde::Serialize;

/// One rank's replayed time and traffic.
///
/// `compute_s + comm_s + wait_s = end_s` (up to rounding): every second
/// of a rank's simulated time is computing, modelled communication, or
/// waiting for a late partner. See [`crate::replay`] for the rule that
/// splits blocked time between `comm_s` and `wait_s`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankReport {
    /// World rank.
    pub rank: u32,
    /// Name of the platform host the rank is placed on.
    pub host: String,
    /// Simulated time of the rank's `MPI_Finalize` (or end of its actions), seconds.
    pub end_s: f64,
    /// Compute blocks, scaled by the host's speed ratio, seconds.
    pub compute_s: f64,
    /// Modelled communication: send overheads and the model's own
    /// transfer time of blocking waits, seconds.
    pub comm_s: f64,
    /// Rest of the time blocked in MPI, waiting for a late partner, seconds.
    pub wait_s: f64,
    /// Actions replayed.
    pub actions: u64,
    /// Point-to-point messages sent, including the steps of collectives.
    pub messages: u64,
    /// Bytes sent in those messages.
    pub bytes_sent: u64,
    /// Time in MPI-IO calls on the platform's file system, seconds; also
    /// counted in `comm_s` (and `wait_s`, a collective access's wait for
    /// its last member).
    pub io_s: f64,
}

/// Result of one replay; serialized as the one JSON object that
/// `simulator replay --json` prints (`makespan_s` comes first).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Predicted run time: the latest rank end time, seconds.
    pub makespan_s: f64,
    /// Energy of all hosts with a power range over `[0, makespan_s]`,
    /// joules (SimGrid's `host_energy` total; [`crate::energy`]); absent
    /// when no host has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// Per-host pstate and energy, in platform order; empty (and absent
    /// from the JSON) when no host has pstates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostReport>,
    /// Per-rank breakdown, in rank order.
    pub ranks: Vec<RankReport>,
    /// Actions replayed over all ranks.
    pub actions: u64,
    /// Discrete events processed (a rank resuming after a wait or after
    /// another rank ran; consecutive actions of the earliest rank need none).
    pub events: u64,
    /// The replay's own wall-clock run time, seconds.
    pub wall_clock_s: f64,
    /// How `--speed-ratios` applied, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_ratios: Option<RatioStats>,
    /// With several traced runs replayed as one (their blocks' medians,
    /// [`super::runs`]): each run's own makespan, seconds, in the order
    /// given; their range is the prediction's band.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_makespan_s: Option<Vec<f64>>,
    /// With several runs predicted by the median one alone (`simulator
    /// replay --merge runs`): its index in [`Self::runs_makespan_s`]; the
    /// report is that run's replay. `None`: the runs were replayed as one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_run: Option<usize>,
    /// Time in MPI-IO calls on the file system, summed over ranks, seconds.
    pub io_s: f64,
    /// Per server of the platform's file system, in server order: bytes
    /// and busy times; empty (and absent from the JSON) without one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub io_servers: Vec<crate::io::ServerStats>,
    /// MPI-IO calls replayed as their recorded duration because the
    /// platform has no file system (`[[fs]]`).
    pub io_recorded_calls: u64,
    /// With [`super::Replay::salvage`]: the ranks still waiting when every
    /// stream had ended, and on what (`None`: every rank finished).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub salvaged: Option<String>,
    /// The hosts given more ranks than cores, whose cores the ranks
    /// shared ([`crate::platform::WaitingRanks`]); empty (and absent from
    /// the JSON) when every rank had a core.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub oversubscribed: Vec<Oversubscribed>,
}

/// A host that the placement gave more ranks than it has cores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Oversubscribed {
    /// Host name.
    pub host: String,
    /// Ranks placed on it.
    pub ranks: u32,
    /// Its cores.
    pub cores: u32,
    /// What its waiting ranks did: `poll` or `yield`.
    pub waiting_ranks: crate::platform::WaitingRanks,
}

impl Oversubscribed {
    /// The one-line warning `simulator replay` prints on stderr.
    pub fn warning(&self) -> String {
        let w = match self.waiting_ranks {
            crate::platform::WaitingRanks::Poll => "poll",
            crate::platform::WaitingRanks::Yield => "yield",
        };
        format!(
            "host {} is oversubscribed: {} ranks on {} cores share them (waiting ranks {w}; --waiting-ranks)",
            self.host, self.ranks, self.cores
        )
    }
}

/// One host's running pstate and energy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostReport {
    /// Host name.
    pub name: String,
    /// The pstate it ran at.
    pub pstate: usize,
    /// Core speed at that pstate, flop/s.
    pub speed_flops: f64,
    /// Energy over `[0, makespan]`, joules; `None` without a power range.
    pub energy_j: Option<f64>,
}

/// The [`HostReport`]s of a replay: one per host when some host has
/// pstates, else none. `energy_j`: joules per host, if metered.
pub(crate) fn host_reports(platform: &crate::platform::Platform, energy_j: Option<&[Option<f64>]>) -> Vec<HostReport> {
    if platform.hosts.iter().all(|h| h.pstates.is_empty()) {
        return Vec::new();
    }
    platform
        .hosts
        .iter()
        .enumerate()
        .map(|(h, x)| HostReport {
            name: x.name.clone(),
            pstate: x.pstate,
            speed_flops: x.running_speed_flops().unwrap_or(f64::NAN),
            energy_j: energy_j.and_then(|e| e.get(h).copied().flatten()),
        })
        .collect()
}

/// How per-region speed ratios applied to the compute blocks of a replay.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RatioStats {
    /// Compute blocks seen.
    pub blocks: u64,
    /// Blocks whose region the ratio file does not name (kept at ratio 1).
    pub missing_blocks: u64,
    /// Distinct regions the ratio file does not name.
    pub missing_regions: u64,
}

impl ReplayReport {
    /// Replay speed: actions per wall-clock second (0 when too fast to time).
    pub fn actions_per_s(&self) -> f64 {
        if self.wall_clock_s > 0.0 {
            self.actions as f64 / self.wall_clock_s
        } else {
            0.0
        }
    }

    /// Writes a human-readable table: a summary line, then one row per rank.
    ///
    /// # Errors
    /// The writer's I/O error.
    pub fn write_table<W: Write>(&self, w: &mut W) -> io::Result<()> {
        writeln!(w, "makespan: {:.6} s  ({} ranks)", self.makespan_s, self.ranks.len())?;
        let host_width = self.ranks.iter().map(|r| r.host.len()).max().unwrap_or(0).max(4);
        writeln!(
            w,
            "{:>6}  {:<host_width$}  {:>12}  {:>12}  {:>12}  {:>12}  {:>10}  {:>10}  {:>14}",
            "rank", "host", "end_s", "compute_s", "comm_s", "wait_s", "actions", "messages", "bytes_sent"
        )?;
        for r in &self.ranks {
            writeln!(
                w,
                "{:>6}  {:<host_width$}  {:>12.6}  {:>12.6}  {:>12.6}  {:>12.6}  {:>10}  {:>10}  {:>14}",
                r.rank, r.host, r.end_s, r.compute_s, r.comm_s, r.wait_s, r.actions, r.messages, r.bytes_sent
            )?;
        }
        if !self.hosts.is_empty() {
            let hw = self.hosts.iter().map(|h| h.name.len()).max().unwrap_or(0).max(4);
            writeln!(w, "{:<hw$}  {:>6}  {:>14}  {:>16}", "host", "pstate", "speed_flops", "energy_j")?;
            for h in &self.hosts {
                let e = h.energy_j.map_or("-".to_string(), |e| format!("{e:.6}"));
                writeln!(w, "{:<hw$}  {:>6}  {:>14.6e}  {:>16}", h.name, h.pstate, h.speed_flops, e)?;
            }
        }
        if let Some(e) = self.energy_j {
            writeln!(w, "energy: {e:.6} J")?;
        }
        if self.io_s > 0.0 {
            writeln!(w, "MPI-IO on the file system: {:.6} s per rank on average", self.io_s / self.ranks.len().max(1) as f64)?;
        }
        for (i, s) in self.io_servers.iter().enumerate().filter(|(_, s)| s.requests > 0) {
            writeln!(
                w,
                "  server {i}: {} requests, {} B read, {} B written, disk busy {:.6} s, link busy {:.6} s",
                s.requests, s.bytes_read, s.bytes_written, s.disk_busy_s, s.link_busy_s
            )?;
        }
        if let Some(s) = &self.salvaged {
            writeln!(w, "salvaged: ended waiting: {s}")?;
        }
        if let Some(m) = &self.runs_makespan_s {
            let (lo, hi) = (m.iter().copied().fold(f64::INFINITY, f64::min), m.iter().copied().fold(0.0, f64::max));
            match self.median_run {
                Some(k) => {
                    writeln!(w, "traced run {} of {}, the median of their replays; the runs alone: {lo:.6} to {hi:.6} s", k + 1, m.len())?
                }
                None => writeln!(w, "blocks at the median of {} traced runs; the runs alone: {lo:.6} to {hi:.6} s", m.len())?,
            }
        }
        if let Some(t) = &self.speed_ratios {
            writeln!(
                w,
                "speed ratios: {} compute blocks, {} in {} regions not in the file (ratio 1)",
                t.blocks, t.missing_blocks, t.missing_regions
            )?;
        }
        writeln!(
            w,
            "replayed {} actions, {} events in {:.3} s ({:.3e} actions/s)",
            self.actions,
            self.events,
            self.wall_clock_s,
            self.actions_per_s()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> ReplayReport {
        let rank = |rank, end_s| RankReport {
            rank,
            host: "node0".into(),
            end_s,
            compute_s: end_s / 2.0,
            comm_s: end_s / 4.0,
            wait_s: end_s / 4.0,
            actions: 4,
            messages: 1,
            bytes_sent: 8,
            io_s: 0.0,
        };
        ReplayReport {
            makespan_s: 2.0,
            energy_j: None,
            hosts: Vec::new(),
            ranks: vec![rank(0, 2.0), rank(1, 1.0)],
            actions: 8,
            events: 3,
            wall_clock_s: 0.5,
            speed_ratios: None,
            runs_makespan_s: None,
            median_run: None,
            io_s: 0.0,
            io_servers: Vec::new(),
            io_recorded_calls: 0,
            salvaged: None,
            oversubscribed: Vec::new(),
        }
    }

    #[test]
    fn json_starts_with_makespan_and_table_has_a_row_per_rank() {
        let json = serde_json::to_string(&report()).unwrap();
        assert!(json.starts_with("{\"makespan_s\":2.0,\"ranks\":[{\"rank\":0,\"host\":\"node0\""), "{json}");
        let mut out = Vec::new();
        report().write_table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 5, "{text}");
        assert!(text.starts_with("makespan: 2.000000 s"), "{text}");
        assert!(text.contains("1.600e1 actions/s"), "{text}");
    }
}

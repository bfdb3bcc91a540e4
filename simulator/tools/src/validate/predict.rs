//! Offline predictions for validation: the traced run's placement carried
//! into the platform, the replay, and the platform's network scaled for
//! the sensitivity sweep.

use std::path::{Path, PathBuf};

use simulator::action::ComputeTime;
use simulator::network::P2pModel;
use simulator::platform::{Mapping, Platform};
use simulator::replay::{self, TraceInput};
use simulator::speed::SpeedRatios;

/// `platform` with the rank placement of the run traced in `trace`: when
/// every rank's recorded host name names a host of the platform (as when
/// the platform came from `calibrate network --hostfile` and the hostfile
/// names the nodes as they name themselves), an explicit mapping of each
/// rank to its host; otherwise the platform unchanged. Also returns one
/// line saying which.
///
/// # Errors
/// The trace's error (naming the file) when it cannot be opened.
pub fn placed(platform: &Platform, trace: &Path) -> Result<(Platform, String), String> {
    let (_, ranks) = simulator::trace::open_dir(trace).map_err(|e| e.to_string())?;
    let hosts: Vec<&str> = ranks.iter().map(|r| r.header.host.as_str()).collect();
    let index: Option<Vec<u32>> = hosts.iter().map(|h| platform.hosts.iter().position(|p| p.name == *h).map(|i| i as u32)).collect();
    match index {
        Some(index) if platform.hosts.len() > 1 => {
            let mut p = platform.clone();
            p.mapping = Mapping::Explicit { hosts: index };
            let mut distinct = hosts.clone();
            distinct.sort_unstable();
            distinct.dedup();
            Ok((p, format!("placement from the trace: {} ranks on {}", hosts.len(), distinct.join(", "))))
        }
        _ => Ok((platform.clone(), format!("placement: the platform's {:?} mapping", platform.mapping))),
    }
}

/// A replay's prediction of the program's run time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Predicted {
    /// The replay's makespan (`MPI_Init` to the last rank's end), seconds.
    pub makespan_s: f64,
    /// Rank 0's time from the end of its first `MPI_Barrier` to the end of
    /// its last one, seconds: the span the c-tests time themselves
    /// (`wall_s`, `c-tests/common.h`); `None` with fewer than two barriers.
    pub region_s: Option<f64>,
}

impl Predicted {
    /// What to set against the program's `wall_s`: the barrier-to-barrier
    /// region when there is one, else the makespan.
    pub fn seconds(&self) -> f64 {
        self.region_s.unwrap_or(self.makespan_s)
    }
}

/// Replays the interposer trace `trace` on `platform`, compute blocks
/// taking their `compute` duration (thread CPU or wall time).
///
/// The makespan also holds what the program does outside its timed region
/// (allocating and filling buffers before the first barrier, freeing them
/// after the last): `pingpong`'s 4 MiB `memset`, 3 ms of its 0.04 s. So the
/// prediction is also taken over the program's own region
/// ([`Predicted::region_s`]), as its `wall_s` is.
///
/// # Errors
/// The trace's or the replay's error, one line naming the file.
pub fn replay_predicted(platform: &Platform, trace: &Path, compute: ComputeTime) -> Result<Predicted, String> {
    predicted_of(platform, open_runs(std::slice::from_ref(&trace.to_path_buf()), compute)?, trace)
}

/// The action streams of one traced run (any trace format), or of several
/// runs of the same case replayed as one, each compute block at the
/// median of its durations ([`replay::runs`]).
fn open_runs(traces: &[PathBuf], compute: ComputeTime) -> Result<Vec<replay::ActionStream<'static, replay::InputError>>, String> {
    match traces {
        [] => Err("no traced run".into()),
        [one] => TraceInput::detect(one).map_err(|e| e.to_string())?.open(compute).map_err(|e| e.to_string()),
        _ => {
            let runs =
                traces.iter().map(|t| replay::open_trace_dir(t, compute).map_err(|e| e.to_string())).collect::<Result<Vec<_>, _>>()?;
            Ok(replay::merged_runs(runs))
        }
    }
}

/// [`replay_predicted`] of one traced run, or of several runs of the same
/// case replayed as one, each compute block at the median of its
/// durations ([`replay::runs`]).
///
/// # Errors
/// No run, a trace's error, runs that differ, or the replay's error, one
/// line naming the first trace.
pub fn replay_predicted_runs(platform: &Platform, traces: &[PathBuf], compute: ComputeTime) -> Result<Predicted, String> {
    let first = traces.first().ok_or("no traced run")?;
    predicted_of(platform, open_runs(traces, compute)?, first)
}

/// [`replay_predicted`] of one traced run, or [`replay_predicted_runs`]
/// of several, with each compute block of a region in `ratios` scaled by
/// its ratio ([`replay::apply_speed_ratios`], as `simulator replay
/// --speed-ratios`).
///
/// # Errors
/// As [`replay_predicted_runs`].
pub fn replay_scaled(platform: &Platform, traces: &[PathBuf], compute: ComputeTime, ratios: SpeedRatios) -> Result<Predicted, String> {
    let first = traces.first().ok_or("no traced run")?;
    let (streams, _) = replay::apply_speed_ratios(open_runs(traces, compute)?, ratios);
    predicted_of(platform, streams, first)
}

fn predicted_of(
    platform: &Platform,
    streams: Vec<replay::ActionStream<'static, replay::InputError>>,
    trace: &Path,
) -> Result<Predicted, String> {
    let (timeline, marks) = replay::Timeline::marks("MPI_Barrier");
    let report =
        replay::Replay::new(platform).timeline(timeline).run(streams).map_err(|e| format!("replay of {}: {e}", trace.display()))?;
    // A difference of two clocks: rounded to 1 fs so that spans the
    // network scaling leaves unchanged compare equal (rounding is
    // monotone; unrounded, they came out 1 ulp apart either way).
    let region_s = marks.ends(0).filter(|(first, last)| last > first).map(|(first, last)| ((last - first) * 1e15).round() / 1e15);
    Ok(Predicted { makespan_s: report.makespan_s, region_s })
}

/// `model` with its transfer latencies (the intercepts) multiplied by
/// `latency` and its bandwidths by `bandwidth`, and so its measured
/// one-sided movements (`rma`); the CPU overheads (`smpi/os`,
/// `smpi/or`) and the eager threshold stay. A negative intercept is no
/// latency but bytes that pass before the rate applies (a token bucket's
/// burst: time `(s − s0) / bw`, `s0 = −intercept × bw`): it keeps `s0`, so
/// it scales with the bandwidth.
pub fn scale_model(model: &P2pModel, latency: f64, bandwidth: f64) -> P2pModel {
    let mut m = model.clone();
    let rma = m.rma.iter_mut().flat_map(|r| [&mut r.put, &mut r.get, &mut r.accumulate]);
    for s in std::iter::once(&mut m.transfer).chain(rma).flat_map(|p| p.segments.iter_mut()) {
        s.intercept_s *= if s.intercept_s < 0.0 { 1.0 / bandwidth } else { latency };
        s.bandwidth_bytes_per_s *= bandwidth;
    }
    m
}

/// `platform` with the network between hosts scaled (see [`scale_model`]),
/// or the shared-memory network when the platform has no inter-node model
/// (one host): the link the run's messages cross.
pub fn scale_network(platform: &Platform, latency: f64, bandwidth: f64) -> Platform {
    let mut p = platform.clone();
    match &mut p.network.inter {
        Some(inter) => *inter = scale_model(inter, latency, bandwidth),
        None => p.network.intra = scale_model(&p.network.intra, latency, bandwidth),
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator::network::{Piecewise, Segment};
    use simulator::platform::Host;

    fn model() -> P2pModel {
        let seg = |max, a, bw| Segment { max_bytes: max, intercept_s: a, bandwidth_bytes_per_s: bw };
        P2pModel {
            eager_threshold_bytes: 4096,
            transfer: Piecewise { segments: vec![seg(Some(4096), 1e-6, 1e9), seg(None, 4e-6, 4e9)] },
            send_overhead: Piecewise { segments: vec![seg(None, 2e-7, f64::INFINITY)] },
            recv_overhead: Piecewise::default(),
            rma: None,
        }
    }

    fn platform(inter: bool) -> Platform {
        let h = |n: &str| Host::new(n, 2);
        let mut p = Platform::new("p", vec![h("a"), h("b")], model());
        p.network.inter = inter.then(model);
        p
    }

    #[test]
    fn scaling_touches_transfer_only() {
        let m = scale_model(&model(), 2.0, 0.5);
        assert_eq!(m.transfer.segments[1].intercept_s, 8e-6);
        assert_eq!(m.transfer.segments[1].bandwidth_bytes_per_s, 2e9);
        assert_eq!(m.send_overhead, model().send_overhead);
        // A 1 MiB message: latency doubled, bandwidth halved.
        let s = 1 << 20;
        assert!((m.transfer.eval(s) - (8e-6 + s as f64 / 2e9)).abs() < 1e-15);
    }

    #[test]
    fn a_burst_offset_scales_with_the_bandwidth() {
        // 2 MB at 50 MB/s after a 60 kB burst: (s - 60e3) / 50e6.
        let mut m = model();
        m.transfer.segments[1] = Segment { max_bytes: None, intercept_s: -60e3 / 50e6, bandwidth_bytes_per_s: 50e6 };
        let s = 2_000_000u64;
        let half = scale_model(&m, 0.5, 0.5);
        assert!((half.transfer.eval(s) - 2.0 * m.transfer.eval(s)).abs() < 1e-12, "half the rate: twice the time");
        assert_eq!(scale_model(&m, 2.0, 1.0).transfer.segments[1], m.transfer.segments[1], "no latency in it");
    }

    #[test]
    fn the_inter_node_network_is_scaled_when_there_is_one() {
        let p = scale_network(&platform(true), 1.0, 0.5);
        assert_eq!(p.network.intra, model());
        assert_eq!(p.network.inter.unwrap().transfer.segments[0].bandwidth_bytes_per_s, 0.5e9);
        let p = scale_network(&platform(false), 1.0, 0.5);
        assert_eq!(p.network.intra.transfer.segments[0].bandwidth_bytes_per_s, 0.5e9);
    }
}

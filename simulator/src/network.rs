//! Point-to-point network models.
//!
//! The piecewise-linear model follows SMPI's (Heinrich et al. 2017, §6.3,
//! Fig. 9; SimGrid options `smpi/os`, `smpi/or`, `smpi/async-small-thresh`,
//! `smpi/send-is-detached-thresh`): each quantity is `a_k + b_k · size` on
//! the size interval `k`, and the protocol switches from eager to
//! rendezvous at `eager_threshold_bytes`.

use serde::{Deserialize, Serialize};

pub mod lane;
pub mod loggp;
pub mod rma;
pub mod topology;

/// One interval of a piecewise-linear function of message size:
/// `value(s) = intercept_s + s / bandwidth_bytes_per_s` for `s < max_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Segment {
    /// Exclusive upper end of the interval, bytes; `None` (omitted in
    /// TOML) extends to infinity. Only the last segment may omit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// Constant term, seconds.
    pub intercept_s: f64,
    /// Inverse slope, bytes per second; `inf` means no size-dependent term.
    pub bandwidth_bytes_per_s: f64,
}

impl Segment {
    /// The latency phase, seconds, and the data-rate bound, bytes/s, of a
    /// transfer of `bytes` on this segment moved as a flow: the segment's
    /// own, except that a negative intercept (a fitted line through large
    /// sizes) becomes no latency and the bound that keeps the transfer's
    /// time alone, `intercept_s + bytes / bandwidth_bytes_per_s`.
    pub fn alone_phases(&self, bytes: u64) -> (f64, f64) {
        if self.intercept_s >= 0.0 {
            return (self.intercept_s, self.bandwidth_bytes_per_s);
        }
        let alone = (self.intercept_s + bytes as f64 / self.bandwidth_bytes_per_s).max(f64::MIN_POSITIVE);
        (0.0, bytes as f64 / alone)
    }
}

/// A piecewise-linear function of message size, in seconds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Piecewise {
    /// Segments in increasing `max_bytes` order.
    pub segments: Vec<Segment>,
}

impl Piecewise {
    /// Whether the function has no segment (it is then 0 everywhere).
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Seconds for a message of `bytes` bytes: the first segment whose
    /// `max_bytes` exceeds `bytes` applies (SimGrid's factor lookup rule),
    /// else the last. An empty function is 0.
    pub fn eval(&self, bytes: u64) -> f64 {
        match self.segment(bytes) {
            Some(s) => (s.intercept_s + bytes as f64 / s.bandwidth_bytes_per_s).max(0.0),
            None => 0.0,
        }
    }

    /// The segment that applies to `bytes` (see [`Piecewise::eval`]);
    /// `None` for an empty function.
    pub fn segment(&self, bytes: u64) -> Option<&Segment> {
        self.segments.iter().find(|s| s.max_bytes.is_none_or(|m| bytes < m)).or(self.segments.last())
    }

    /// Checks that segments are ordered and their numbers finite and ≥ 0.
    ///
    /// # Errors
    /// A message naming the first bad segment.
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        for (i, s) in self.segments.iter().enumerate() {
            // The value at the segment's start must be >= 0 (a LogGP segment
            // from 1 byte on has intercept o + L − G, which may be negative).
            let start = if i == 0 { 0 } else { self.segments[i - 1].max_bytes.unwrap_or(0) };
            if s.bandwidth_bytes_per_s.is_nan() || s.bandwidth_bytes_per_s <= 0.0 {
                return Err(format!("segment {i}: bandwidth_bytes_per_s must be > 0, got {}", s.bandwidth_bytes_per_s).into());
            }
            if !s.intercept_s.is_finite() {
                return Err(format!("segment {i}: intercept_s must be finite, got {}", s.intercept_s).into());
            }
            if s.intercept_s + start as f64 / s.bandwidth_bytes_per_s < 0.0 {
                let why = format!("segment {i}: the value at its first size {start} B must be >= 0, got intercept_s {}", s.intercept_s);
                return Err(why.into());
            }
            // The largest message read (2^53 bytes) must take a finite time.
            let last = s.max_bytes.unwrap_or(crate::limits::MAX_BYTES).min(crate::limits::MAX_BYTES);
            if !(s.intercept_s + last as f64 / s.bandwidth_bytes_per_s).is_finite() {
                let why =
                    format!("segment {i}: bandwidth_bytes_per_s {:e} makes a {last}-byte message take forever", s.bandwidth_bytes_per_s);
                return Err(why.into());
            }
            if i > 0 {
                match (self.segments[i - 1].max_bytes, s.max_bytes) {
                    (None, _) => return Err(format!("segment {}: only the last segment may omit max_bytes", i - 1).into()),
                    (Some(a), Some(b)) if b <= a => return Err(format!("segment {i}: max_bytes must increase").into()),
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// Point-to-point cost model of one link class (intra-node or inter-node).
///
/// Semantics used by the replay:
/// - **eager** (`bytes < eager_threshold_bytes`): the sender is busy
///   `send_overhead(bytes)` and continues; the message arrives at
///   `send_start + transfer(bytes)`; the receive completes at
///   `max(arrival, recv_post + recv_overhead(bytes))`.
/// - **rendezvous**: the transfer starts when both sides have posted and
///   both complete at `max(send_post, recv_post) + transfer(bytes)`.
///
/// In TOML, a model is either these fields or one `loggp` table
/// ([`loggp::LogGps`]), converted to them on load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "P2pToml")]
pub struct P2pModel {
    /// Messages strictly smaller than this are sent eagerly, bytes
    /// (mirrors `smpi/send-is-detached-thresh`).
    pub eager_threshold_bytes: u64,
    /// One-way transfer time, from send start to receive completion when
    /// the receiver is waiting (half a ping-pong round trip), seconds.
    pub transfer: Piecewise,
    /// Sender CPU time of an eager send (mirrors `smpi/os`), seconds.
    #[serde(default)]
    pub send_overhead: Piecewise,
    /// Receiver CPU time for an already-arrived message (mirrors `smpi/or`), seconds.
    #[serde(default)]
    pub recv_overhead: Piecewise,
    /// Measured one-sided data movement (the `rma` table); `None`: derived
    /// from the fields above ([`rma::RmaMove::cost`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rma: Option<rma::RmaCosts>,
}

/// The TOML form of [`P2pModel`]: its fields, or `loggp`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct P2pToml {
    eager_threshold_bytes: Option<u64>,
    transfer: Option<Piecewise>,
    #[serde(default)]
    send_overhead: Piecewise,
    #[serde(default)]
    recv_overhead: Piecewise,
    loggp: Option<loggp::LogGps>,
    rma: Option<rma::RmaCosts>,
}

impl TryFrom<P2pToml> for P2pModel {
    type Error = String;

    fn try_from(t: P2pToml) -> Result<P2pModel, String> {
        match (t.loggp, t.eager_threshold_bytes, t.transfer) {
            (Some(l), None, None) => l.validate().map(|()| P2pModel { rma: t.rma, ..l.to_p2p() }).map_err(|w| w.0),
            (Some(_), _, _) => Err("give either loggp or eager_threshold_bytes/transfer, not both".into()),
            (None, Some(eager_threshold_bytes), Some(transfer)) => {
                Ok(P2pModel { eager_threshold_bytes, transfer, send_overhead: t.send_overhead, recv_overhead: t.recv_overhead, rma: t.rma })
            }
            (None, None, _) => Err("missing field `eager_threshold_bytes` (or a `loggp` table)".into()),
            (None, _, None) => Err("missing field `transfer` (or a `loggp` table)".into()),
        }
    }
}

impl P2pModel {
    /// True when a message of `bytes` goes eagerly.
    pub fn is_eager(&self, bytes: u64) -> bool {
        bytes < self.eager_threshold_bytes
    }

    /// Checks every piecewise function (and the `rma` table's).
    ///
    /// # Errors
    /// A message naming the bad function and segment.
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        for (name, p) in [("transfer", &self.transfer), ("send_overhead", &self.send_overhead), ("recv_overhead", &self.recv_overhead)] {
            p.validate().map_err(|e| format!("{name}: {e}"))?;
        }
        if self.transfer.segments.is_empty() {
            return Err("transfer: at least one segment is required".into());
        }
        self.rma.as_ref().map_or(Ok(()), rma::RmaCosts::validate)
    }
}

/// Flow-level sharing of the hosts' links among concurrent inter-host
/// transfers, as SimGrid's CM02/SMPI model under max-min fairness
/// (Casanova et al., JPDC 2014, §4; SimGrid 3.32 `network_cm02.cpp`).
///
/// Each host has an up and a down link of capacity `link_bw_bytes_per_s`
/// (a `SPLITDUPLEX` cluster link). A transfer from host a to host b of
/// payload s first spends the latency part of its [`P2pModel::transfer`]
/// segment without using bandwidth, then moves s + `header_bytes` bytes at
/// a rate r that is at most that segment's bandwidth (the flow's bound)
/// and shares links: on a's up and b's down link it consumes r / f, and
/// on b's up and a's down link `crosstraffic` · r / f (the acknowledgement
/// traffic, SimGrid's `network/crosstraffic`), where the bandwidth factor f
/// = bound / `nominal_rate_bytes_per_s`. The uses r / f (SimGrid's
/// max-min variables) are max-min fair, so on a common bottleneck two
/// transfers of different factors get the same use and different rates;
/// they are recomputed whenever a transfer enters or leaves its bandwidth
/// phase.
///
/// In a platform TOML this is the `[links]` table: `bw_bytes_per_s`,
/// `crosstraffic` (default 0), `topology` (default crossbar); the other
/// fields default to what fits our own models (no bandwidth factor, no
/// header bytes, one latency per route).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSharing {
    /// Capacity of each host's up and down link, bytes/s.
    #[serde(rename = "bw_bytes_per_s")]
    pub link_bw_bytes_per_s: f64,
    /// Route rate before the bandwidth factor, min(bandwidth, TCP-gamma / 2·latency), bytes/s.
    /// 0 (as for our TOML's `[links]`): no bandwidth factor, f = 1: a flow
    /// at rate r uses r of each link of its route.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub nominal_rate_bytes_per_s: f64,
    /// Weight of the reverse traffic (SimGrid: 0.05), dimensionless.
    #[serde(default)]
    pub crosstraffic: f64,
    /// Bytes added to each payload (see `platform::simgrid::SMPI_HEADER_BYTES`).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub header_bytes: u64,
    /// Which links a transfer crosses (default: crossbar, one up and one
    /// down link per host); each link's capacity is `link_bw_bytes_per_s`
    /// times its [`topology::Topology::link_weights`].
    #[serde(default)]
    pub topology: topology::Topology,
    /// The model's latency is that of a two-link route (a crossbar's) and
    /// a route of k links gets k/2 of it, as SimGrid sums link latencies
    /// (set for SimGrid XML imports); a transfer's share of a bottleneck
    /// is then weighted by its route's latency too, as SimGrid's CM02
    /// sharing penalty (a route of twice the links gets half the use).
    /// `false`: every route gets the model's latency and the same weight.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency_per_link: bool,
}

impl FlowSharing {
    /// Links between hosts that never limit a transfer (infinite
    /// capacity, no bandwidth factor, no crosstraffic): the base of a
    /// network whose only shared resources are added links.
    pub fn unshared() -> FlowSharing {
        FlowSharing {
            link_bw_bytes_per_s: f64::INFINITY,
            nominal_rate_bytes_per_s: 0.0,
            crosstraffic: 0.0,
            header_bytes: 0,
            topology: topology::Topology::default(),
            latency_per_link: false,
        }
    }

    /// Checks the link capacity, the crosstraffic weight and the topology
    /// against `hosts` hosts.
    ///
    /// # Errors
    /// A message naming the bad field (TOML names, as in `[links]`).
    pub fn validate(&self, hosts: usize) -> Result<(), crate::error::Invalid> {
        if !(self.link_bw_bytes_per_s.is_finite() && self.link_bw_bytes_per_s > 0.0) {
            return Err("bw_bytes_per_s must be > 0".into());
        }
        if !(self.crosstraffic.is_finite() && self.crosstraffic >= 0.0) {
            return Err("crosstraffic must be >= 0".into());
        }
        if !(self.nominal_rate_bytes_per_s.is_finite() && self.nominal_rate_bytes_per_s >= 0.0) {
            return Err("nominal_rate_bytes_per_s must be finite and >= 0".into());
        }
        crate::limits::bytes("header_bytes", self.header_bytes)?;
        self.topology.validate(hosts).map_err(|w| w.within("topology: "))
    }
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_piece() -> Piecewise {
        Piecewise {
            segments: vec![
                Segment { max_bytes: Some(4096), intercept_s: 1e-6, bandwidth_bytes_per_s: 1e9 },
                Segment { max_bytes: None, intercept_s: 5e-6, bandwidth_bytes_per_s: 4e9 },
            ],
        }
    }

    #[test]
    fn eval_picks_the_interval_of_the_size() {
        let p = two_piece();
        assert!((p.eval(0) - 1e-6).abs() < 1e-15);
        assert!((p.eval(1000) - 2e-6).abs() < 1e-15);
        assert!((p.eval(4096) - (5e-6 + 4096.0 / 4e9)).abs() < 1e-15);
        assert_eq!(Piecewise::default().eval(10), 0.0);
    }

    #[test]
    fn validate_rejects_unordered_and_negative() {
        let mut p = two_piece();
        assert!(p.validate().is_ok());
        p.segments[1].max_bytes = Some(10);
        assert!(p.validate().unwrap_err().0.contains("segment 1"));
        let mut p = two_piece();
        p.segments[0].intercept_s = -1.0;
        assert!(p.validate().unwrap_err().0.contains("segment 0"));
    }
}

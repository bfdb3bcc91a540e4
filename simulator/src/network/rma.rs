//! Costs of one-sided (MPI RMA) data movement, shared by the offline
//! replay and online mode: measured per operation ([`RmaCosts`], from
//! `calibrate network`) when the platform has them, else derived from the
//! point-to-point model as SimGrid's SMPI does.

use serde::{Deserialize, Serialize};

use super::{P2pModel, Piecewise};

/// What a one-sided call moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmaMove {
    /// `MPI_Put` (and `MPI_Rput`): the data origin → target.
    Put,
    /// `MPI_Accumulate` (and `MPI_Raccumulate`): the data origin → target,
    /// combined there with the target's.
    Accumulate,
    /// `MPI_Get` (`MPI_Rget`): a request to the target, then the data back.
    Get,
    /// `MPI_Get_accumulate`, `MPI_Fetch_and_op`, `MPI_Compare_and_swap`
    /// (`MPI_Rget_accumulate`): the data each way.
    GetAccumulate,
}

/// Measured one-sided data movement of one link class, in a platform
/// TOML the optional `rma` table of a network model (`[network.intra.rma]`
/// with `put`, `get` and `accumulate`, each a list of segments as
/// `transfer`).
///
/// Each function gives, for `b` bytes, the seconds from the call's start
/// to the movement's completion at the origin's next synchronization,
/// without the calls' own cost (`[smpi] rma_call_s`): `calibrate network`
/// times passive-target epochs of `MPI_Win_lock`, one operation and
/// `MPI_Win_unlock` on a window made by `MPI_Win_create` and takes away
/// three calls. A one-sided component does not move data as the
/// point-to-point protocols do: Open MPI's `osc/rdma` over shared memory
/// copies with one cross-memory-attach system call per put or get
/// (`process_vm_writev`/`readv`) whatever the size, where point-to-point
/// messages go through shared buffers below the eager threshold and a
/// rendezvous above it; and it runs an accumulate as a lock of the
/// target's accumulate lock, a get, the operation and a put.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RmaCosts {
    /// `MPI_Put` of `b` bytes: until the data are at the target, seconds.
    pub put: Piecewise,
    /// `MPI_Get` of `b` bytes: until the data are at the origin, seconds.
    pub get: Piecewise,
    /// `MPI_Accumulate` of `b` bytes (also the get-accumulates, which
    /// fetch the target's data on the way): until the target holds the
    /// result, seconds.
    pub accumulate: Piecewise,
}

impl RmaCosts {
    /// Checks each function (at least one segment, ordered, finite, ≥ 0).
    ///
    /// # Errors
    /// A message naming the function (`rma.put`, …) and the segment.
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        for (name, p) in [("put", &self.put), ("get", &self.get), ("accumulate", &self.accumulate)] {
            if p.segments.is_empty() {
                return Err(format!("rma.{name}: at least one segment is required").into());
            }
            p.validate().map_err(|e| format!("rma.{name}: {e}"))?;
        }
        Ok(())
    }
}

/// Where the target of a one-sided call is, seen from its origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmaPeer {
    /// The origin itself: a local copy, which costs nothing beyond the
    /// call (SMPI's `Win::put` copies with `Datatype::copy`; MPI
    /// libraries do the same).
    Itself,
    /// Another rank on the origin's host.
    SameHost,
    /// A rank on another host.
    OtherHost,
}

impl RmaPeer {
    /// Where `target` is seen from `origin` (ranks; `same_host`: both on
    /// one host).
    pub fn of(origin: u32, target: u32, same_host: bool) -> RmaPeer {
        match (origin == target, same_host) {
            (true, _) => RmaPeer::Itself,
            (false, true) => RmaPeer::SameHost,
            (false, false) => RmaPeer::OtherHost,
        }
    }
}

/// The cost of one data movement, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RmaCost {
    /// The origin's CPU time in the call, seconds.
    pub busy_s: f64,
    /// From the call's start to the movement's completion (the data at the
    /// target, or back at the origin), seconds.
    pub done_after_s: f64,
}

impl RmaMove {
    /// The cost of moving `bytes` with `model` to `peer`.
    ///
    /// With measured costs (`model.rma`, [`RmaCosts`]) the movement takes
    /// their `put`, `get` or `accumulate` (a get-accumulate the last).
    /// Without, it follows the point-to-point model as SimGrid's SMPI,
    /// which runs a put or a get as one point-to-point message that the
    /// origin posts for both sides (`smpi_win.cpp`, `Win::put`/`Win::get`):
    /// a put or accumulate takes `transfer(bytes)`, a get
    /// `transfer(0) + transfer(bytes)`, a get-accumulate
    /// `2 transfer(bytes)`. Between hosts the network moves the data and
    /// the origin is busy only its send overhead; within a host the
    /// origin's CPU copies the data through shared memory (Open MPI's
    /// `osc/sm`, or a single copy with `process_vm_writev`), so it is busy
    /// until the movement completes. To itself a movement costs nothing.
    pub fn cost(self, model: &P2pModel, bytes: u64, peer: RmaPeer) -> RmaCost {
        if peer == RmaPeer::Itself {
            return RmaCost { busy_s: 0.0, done_after_s: 0.0 };
        }
        let done_after_s = match (&model.rma, self) {
            (Some(m), RmaMove::Put) => m.put.eval(bytes),
            (Some(m), RmaMove::Get) => m.get.eval(bytes),
            (Some(m), RmaMove::Accumulate | RmaMove::GetAccumulate) => m.accumulate.eval(bytes),
            (None, RmaMove::Put | RmaMove::Accumulate) => model.transfer.eval(bytes),
            (None, RmaMove::Get) => model.transfer.eval(0) + model.transfer.eval(bytes),
            (None, RmaMove::GetAccumulate) => 2.0 * model.transfer.eval(bytes),
        };
        let busy_s = match peer {
            RmaPeer::OtherHost => model.send_overhead.eval(bytes).min(done_after_s),
            _ => done_after_s,
        };
        RmaCost { busy_s, done_after_s }
    }

    /// The bytes it sends from the origin (0 for a get).
    pub fn bytes_sent(self, bytes: u64) -> u64 {
        match self {
            RmaMove::Get => 0,
            _ => bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Segment;

    fn line(intercept_s: f64, bandwidth_bytes_per_s: f64) -> Piecewise {
        Piecewise { segments: vec![Segment { max_bytes: None, intercept_s, bandwidth_bytes_per_s }] }
    }

    /// Transfer 1 µs + 1 ns/B, send overhead 0.1 µs.
    fn p2p() -> P2pModel {
        P2pModel {
            eager_threshold_bytes: 4096,
            transfer: line(1e-6, 1e9),
            send_overhead: line(1e-7, f64::INFINITY),
            recv_overhead: Piecewise::default(),
            rma: None,
        }
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-15, "{a} != {b}");
    }

    #[test]
    fn without_measured_costs_the_point_to_point_model_gives_them() {
        let m = p2p();
        let c = |k: RmaMove, peer| k.cost(&m, 1000, peer);
        close(c(RmaMove::Put, RmaPeer::SameHost).done_after_s, 2e-6);
        close(c(RmaMove::Accumulate, RmaPeer::SameHost).done_after_s, 2e-6);
        close(c(RmaMove::Get, RmaPeer::SameHost).done_after_s, 1e-6 + 2e-6);
        close(c(RmaMove::GetAccumulate, RmaPeer::SameHost).done_after_s, 4e-6);
        // Within a host the origin copies; between hosts it pays its send overhead.
        close(c(RmaMove::Put, RmaPeer::SameHost).busy_s, 2e-6);
        close(c(RmaMove::Put, RmaPeer::OtherHost).busy_s, 1e-7);
    }

    #[test]
    fn measured_costs_replace_the_point_to_point_ones() {
        // Put 1.3 µs + b / 10 GB/s, get 1.4 µs + b / 10 GB/s, accumulate 2.8 µs + b / 1 GB/s.
        let m =
            P2pModel { rma: Some(RmaCosts { put: line(1.3e-6, 1e10), get: line(1.4e-6, 1e10), accumulate: line(2.8e-6, 1e9) }), ..p2p() };
        let c = |k: RmaMove| k.cost(&m, 1000, RmaPeer::SameHost);
        close(c(RmaMove::Put).done_after_s, 1.4e-6);
        close(c(RmaMove::Get).done_after_s, 1.5e-6);
        close(c(RmaMove::Accumulate).done_after_s, 3.8e-6);
        close(c(RmaMove::GetAccumulate).done_after_s, 3.8e-6);
        close(c(RmaMove::Put).busy_s, 1.4e-6);
        close(RmaMove::Put.cost(&m, 1000, RmaPeer::OtherHost).busy_s, 1e-7);
    }

    #[test]
    fn a_movement_to_the_origin_itself_costs_nothing() {
        for k in [RmaMove::Put, RmaMove::Accumulate, RmaMove::Get, RmaMove::GetAccumulate] {
            assert_eq!(k.cost(&p2p(), 8192, RmaPeer::Itself), RmaCost { busy_s: 0.0, done_after_s: 0.0 });
        }
    }

    #[test]
    fn validate_names_the_bad_function() {
        let mut r = RmaCosts { put: line(1e-6, 1e9), get: line(1e-6, 1e9), accumulate: line(1e-6, 1e9) };
        assert!(r.validate().is_ok());
        r.get = Piecewise::default();
        assert!(r.validate().unwrap_err().0.contains("rma.get"));
        r.get = line(f64::NAN, 1e9);
        assert!(r.validate().unwrap_err().0.contains("rma.get: segment 0"));
    }
}

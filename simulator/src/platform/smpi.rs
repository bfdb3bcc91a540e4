//! SMPI settings that have no other place in the platform's schema
//! (`[smpi]`): the per-call CPU costs `calibrate network` measures.

use serde::{Deserialize, Serialize};

use super::{RmaCallKind, RmaCalls};

/// SMPI settings that have no other place in the schema (`[smpi]`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Smpi {
    /// Mirrors SMPI's `smpi/async-small-thresh`: an eager message of at
    /// least this many bytes starts its transfer only once the receive is
    /// posted (SMPI's default 0: every message). `None` (our default): an
    /// eager message starts at its send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub async_small_thresh_bytes: Option<u64>,
    /// CPU time of posting one `MPI_Irecv`, seconds (default 0): the rank
    /// is busy this long after each nonblocking receive it posts. Measured
    /// by `calibrate network` (netbench's `irecv` samples); the posting
    /// cost SimGrid charges as `smpi/or` at the receive, here at the post.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub irecv_s: f64,
    /// CPU time `MPI_Wait`/`MPI_Waitall` spend per request they complete,
    /// seconds (default 0), charged after the wait ends, also when every
    /// request had already completed. Measured by `calibrate network`
    /// (netbench's `wait` samples: `MPI_Wait` on a request whose message
    /// has arrived); mirrors SimGrid's `smpi/test`, the time injected in
    /// a call to `MPI_Test`.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub wait_s: f64,
    /// CPU time of one one-sided call (`MPI_Put`, `MPI_Get`, the
    /// accumulates, and the epoch calls: lock, unlock, flush, fence, post,
    /// start, complete, wait, free), seconds (default 0), charged at the
    /// call before its modelled transfer or synchronization. Measured by
    /// `calibrate network` (netbench's `rma` samples: half an empty
    /// lock / unlock epoch); the data movements' own time is the network
    /// model's `rma` table ([`crate::network::rma::RmaCosts`]).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub rma_call_s: f64,
    /// CPU time of one poll of the MPI library, seconds (default 0):
    /// an `MPI_Test`, `MPI_Testany`, `MPI_Testall` or `MPI_Testsome` that
    /// completes no request, or an `MPI_Iprobe` ([`crate::action::Action::Poll`]).
    /// Measured by `calibrate network` (netbench's `iprobe` samples: an
    /// `MPI_Iprobe` finding no message, one pass of the progress
    /// engine); mirrors SimGrid's `smpi/test` and `smpi/iprobe`, without
    /// their growth over repeated calls (`smpi/grow-injected-times`).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub poll_s: f64,
    /// Measured costs of the one-sided calls that do more than an empty
    /// call (lock, unlock, post, complete, a window's creation and free),
    /// seconds; the others take `rma_call_s` ([`RmaCalls`]).
    #[serde(default, skip_serializing_if = "RmaCalls::is_empty")]
    pub rma_calls: RmaCalls,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

impl Smpi {
    /// Checks the per-call costs.
    ///
    /// # Errors
    /// A message naming the bad field.
    pub fn validate(&self) -> Result<(), crate::error::Invalid> {
        for (name, v) in [("irecv_s", self.irecv_s), ("wait_s", self.wait_s), ("rma_call_s", self.rma_call_s), ("poll_s", self.poll_s)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} must be finite and >= 0, got {v}").into());
            }
        }
        for (name, v) in self.rma_calls.fields() {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(format!("rma_calls.{name} must be finite and >= 0, got {v}").into());
            }
        }
        Ok(())
    }

    /// CPU time of one-sided call `kind`, seconds: its measured cost in
    /// `rma_calls`, else `rma_call_s` (a window's creation: 0).
    pub fn rma_call_cost(&self, kind: RmaCallKind) -> f64 {
        match (self.rma_calls.get(kind), kind) {
            (Some(s), _) => s,
            (None, RmaCallKind::Create) => 0.0,
            (None, _) => self.rma_call_s,
        }
    }
}

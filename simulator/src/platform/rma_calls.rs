//! CPU costs of the one-sided calls that do more than an empty call
//! (`[smpi.rma_calls]`): the epoch calls that finish or announce work and
//! a window's creation and release.
//!
//! An `MPI_Win_unlock` after a put flushes it and releases the target's
//! lock; an `MPI_Win_post` or `MPI_Win_complete` sends a notice; an
//! `MPI_Win_create` exchanges the members' window addresses and sets up
//! the one-sided component's state. Each costs more than a call of an
//! empty lock/unlock epoch (`[smpi] rma_call_s`), a window's creation by
//! orders of magnitude. `calibrate network` measures them (netbench's
//! `rma_lock`, `rma_unlock`, `rma_post`, `rma_complete`, `rma_create` and
//! `rma_free` samples); a call without its own cost takes `rma_call_s`.
//! SimGrid's SMPI has no such costs: its one-sided calls cost what their
//! messages do.

use serde::{Deserialize, Serialize};

pub use crate::action::RmaCallKind;

/// Measured costs of single one-sided calls, seconds (`[smpi.rma_calls]`);
/// a call without one takes `[smpi] rma_call_s` (a window's creation: 0).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RmaCalls {
    /// `MPI_Win_lock` in an epoch that moves data, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_s: Option<f64>,
    /// `MPI_Win_unlock` after a data movement (the movement's own time is
    /// the network model's `rma` table), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlock_s: Option<f64>,
    /// `MPI_Win_post`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_s: Option<f64>,
    /// `MPI_Win_complete` (its movements' time apart), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete_s: Option<f64>,
    /// A window's creation, before its barrier, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_s: Option<f64>,
    /// `MPI_Win_free`, before its barrier, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_s: Option<f64>,
}

impl RmaCalls {
    /// Whether no call has a cost of its own.
    pub fn is_empty(&self) -> bool {
        *self == RmaCalls::default()
    }

    /// The cost of `kind` when it has its own.
    pub fn get(&self, kind: RmaCallKind) -> Option<f64> {
        match kind {
            RmaCallKind::Create => self.create_s,
            RmaCallKind::Free => self.free_s,
            RmaCallKind::Lock => self.lock_s,
            RmaCallKind::Unlock => self.unlock_s,
            RmaCallKind::Post => self.post_s,
            RmaCallKind::Complete => self.complete_s,
            RmaCallKind::Other => None,
        }
    }

    /// Each field's TOML name and value.
    pub fn fields(&self) -> [(&'static str, Option<f64>); 6] {
        [
            ("lock_s", self.lock_s),
            ("unlock_s", self.unlock_s),
            ("post_s", self.post_s),
            ("complete_s", self.complete_s),
            ("create_s", self.create_s),
            ("free_s", self.free_s),
        ]
    }
}

#[cfg(test)]
mod tests {
    use crate::action::{Action, RmaCallKind};
    use crate::trace::record::{CallRecord, Params};
    use crate::trace::Op;

    /// The one-sided calls with a cost of their own, by the action each
    /// MPI call becomes (online mode converts its calls the same way).
    #[test]
    fn nine_one_sided_calls_have_a_cost_of_their_own() {
        let mut own = 0;
        for &op in Op::ALL {
            let params = Params::Rma { win: 1, comm: 0, target: 0, disp: 0, bytes: 8, op: 0, assert: 0, request: 0, group: vec![0] };
            if let Ok(Some(Action::Rma { call, .. })) = crate::action::op_action(&CallRecord::bare(op, params)) {
                own += (call.cost_kind() != RmaCallKind::Other) as u32;
            }
        }
        assert_eq!(own, 9, "four creations, free, lock, unlock, post, complete");
    }
}

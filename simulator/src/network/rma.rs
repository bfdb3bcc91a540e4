//! Costs of one-sided (MPI RMA) data movement from a point-to-point
//! model, shared by the offline replay and online mode.

use super::P2pModel;

/// What a one-sided call moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmaMove {
    /// `MPI_Put`, `MPI_Accumulate` (and `MPI_Rput`, `MPI_Raccumulate`):
    /// the data origin → target.
    Put,
    /// `MPI_Get` (`MPI_Rget`): a request to the target, then the data back.
    Get,
    /// `MPI_Get_accumulate`, `MPI_Fetch_and_op`, `MPI_Compare_and_swap`
    /// (`MPI_Rget_accumulate`): the data each way.
    GetAccumulate,
}

/// The cost of one data movement, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RmaCost {
    /// The origin's CPU time in the call: `send_overhead(bytes)`, seconds.
    pub busy_s: f64,
    /// From the call's start to the movement's completion (the data at the
    /// target, or back at the origin), seconds.
    pub done_after_s: f64,
}

impl RmaMove {
    /// The cost of moving `bytes` with `model`: a put takes
    /// `transfer(bytes)`, a get `transfer(0) + transfer(bytes)`, a
    /// get-accumulate `2 transfer(bytes)`. Between hosts the network moves
    /// the data and the origin is busy only its send overhead; within a
    /// host (`same_host`) the origin's CPU copies the data through shared
    /// memory, as MPI libraries' shared-memory one-sided components do
    /// (Open MPI's `osc/sm`, or a single copy with `process_vm_writev`),
    /// so it is busy until the movement completes. SimGrid's SMPI runs a
    /// put or a get as one point-to-point message that the origin posts
    /// for both sides (`smpi_win.cpp`, `Win::put`/`Win::get`): the same
    /// transfer, without the target's CPU, on any pair of hosts.
    pub fn cost(self, model: &P2pModel, bytes: u64, same_host: bool) -> RmaCost {
        let done_after_s = match self {
            RmaMove::Put => model.transfer.eval(bytes),
            RmaMove::Get => model.transfer.eval(0) + model.transfer.eval(bytes),
            RmaMove::GetAccumulate => 2.0 * model.transfer.eval(bytes),
        };
        let busy_s = if same_host { done_after_s } else { model.send_overhead.eval(bytes).min(done_after_s) };
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

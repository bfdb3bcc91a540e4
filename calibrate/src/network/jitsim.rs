//! jitSim's three message-passing latencies from the fitted models.

use super::NetworkFit;

/// jitSim's message-passing latencies (De & Mann, jitSim §3.2), for its
/// tree barrier, in seconds, from 1-byte messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitsimLatencies {
    /// Shared-memory latency: one-way time between two ranks on one node
    /// (half ping-pong round trip).
    pub shared_memory_s: f64,
    /// MPI stack latency: blocking send plus receive overhead on one node;
    /// jitSim halves it into its send and receive costs.
    pub mpi_stack_s: f64,
    /// One-hop network latency: one-way time between two nodes minus the
    /// MPI stack latency (floored at 0); `None` without a two-node run.
    pub one_hop_network_s: Option<f64>,
}

impl JitsimLatencies {
    /// From the one-node fit and, if measured, the two-node fit.
    pub fn new(intra: &NetworkFit, inter: Option<&NetworkFit>) -> JitsimLatencies {
        let mpi_stack_s = intra.send.eval(1) + intra.recv.eval(1);
        JitsimLatencies {
            shared_memory_s: intra.transfer.eval(1),
            mpi_stack_s,
            one_hop_network_s: inter.map(|f| (f.transfer.eval(1) - mpi_stack_s).max(0.0)),
        }
    }

    /// One line for humans, in microseconds.
    pub fn summary(&self) -> String {
        let hop =
            self.one_hop_network_s.map_or_else(|| "skipped (needs two nodes: give --hostfile)".into(), |s| format!("{:.3} us", s * 1e6));
        format!(
            "jitSim latencies: shared memory {:.3} us, MPI stack {:.3} us (send/recv {:.3} us each), one-hop network {hop}",
            self.shared_memory_s * 1e6,
            self.mpi_stack_s * 1e6,
            self.mpi_stack_s * 0.5e6
        )
    }
}

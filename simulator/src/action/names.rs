//! The MPI function each action stands for, for timelines and OTF2
//! archives of the simulated run.

use super::{Action, IoCall, RmaCall};

impl Action {
    /// The MPI function this action stands for (`MPI_Allreduce`,
    /// `MPI_Iallreduce`, `MPI_File_write_all`, ...); `None` for compute.
    /// A poll is named `MPI_Test` (it stands for every failed test and
    /// `MPI_Iprobe`), a buffered send `MPI_Bsend` or `MPI_Ibsend`.
    pub fn mpi_name(&self) -> Option<&'static str> {
        Some(match self {
            Action::Compute { .. } | Action::Flops { .. } => return None,
            Action::Send { .. } => "MPI_Send",
            Action::Isend { .. } => "MPI_Isend",
            Action::Buffered(inner) => match **inner {
                Action::Isend { .. } => "MPI_Ibsend",
                _ => "MPI_Bsend",
            },
            Action::Recv { .. } => "MPI_Recv",
            Action::Irecv { .. } => "MPI_Irecv",
            Action::Wait { .. } => "MPI_Wait",
            Action::Waitall { .. } => "MPI_Waitall",
            Action::Sendrecv { .. } => "MPI_Sendrecv",
            // A nonblocking collective is one of the blocking ones (a
            // barrier's request when the trace had no other).
            Action::Icoll { coll, .. } => coll_name(coll).map_or("MPI_Ibarrier", nonblocking),
            Action::Cancel { .. } => "MPI_Cancel",
            Action::RequestFree { .. } => "MPI_Request_free",
            Action::Poll => "MPI_Test",
            Action::CommCreate { .. } => "MPI_Comm_create",
            Action::Io { call, .. } => io_name(call),
            Action::IoInfo { info, .. } => match (info.open_comm, info.sets_view) {
                (Some(_), _) => "MPI_File_open",
                (None, true) => "MPI_File_set_view",
                (None, false) => "MPI_File_set_info",
            },
            Action::Rma { call, .. } => rma_name(call),
            Action::Init => "MPI_Init",
            Action::Finalize => "MPI_Finalize",
            coll => coll_name(coll)?,
        })
    }
}

/// The blocking collectives' names.
fn coll_name(a: &Action) -> Option<&'static str> {
    Some(match a {
        Action::Barrier { .. } => "MPI_Barrier",
        Action::Bcast { .. } => "MPI_Bcast",
        Action::Reduce { .. } => "MPI_Reduce",
        Action::Allreduce { .. } => "MPI_Allreduce",
        Action::Alltoall { .. } => "MPI_Alltoall",
        Action::Alltoallv { .. } => "MPI_Alltoallv",
        Action::Allgather { .. } => "MPI_Allgather",
        Action::Allgatherv { .. } => "MPI_Allgatherv",
        Action::Gather { .. } => "MPI_Gather",
        Action::Scatter { .. } => "MPI_Scatter",
        Action::Scatterv { .. } => "MPI_Scatterv",
        Action::ReduceScatter { .. } => "MPI_Reduce_scatter",
        Action::Neighbor { .. } => "MPI_Neighbor_alltoallv",
        Action::Scan { exclusive: false, .. } => "MPI_Scan",
        Action::Scan { exclusive: true, .. } => "MPI_Exscan",
        _ => return None,
    })
}

/// The nonblocking form of a blocking collective's name.
fn nonblocking(name: &'static str) -> &'static str {
    match name {
        "MPI_Barrier" => "MPI_Ibarrier",
        "MPI_Bcast" => "MPI_Ibcast",
        "MPI_Reduce" => "MPI_Ireduce",
        "MPI_Allreduce" => "MPI_Iallreduce",
        "MPI_Alltoall" => "MPI_Ialltoall",
        "MPI_Alltoallv" => "MPI_Ialltoallv",
        "MPI_Allgather" => "MPI_Iallgather",
        "MPI_Allgatherv" => "MPI_Iallgatherv",
        "MPI_Gather" => "MPI_Igather",
        "MPI_Scatter" => "MPI_Iscatter",
        "MPI_Scatterv" => "MPI_Iscatterv",
        "MPI_Reduce_scatter" => "MPI_Ireduce_scatter",
        "MPI_Neighbor_alltoallv" => "MPI_Ineighbor_alltoallv",
        "MPI_Scan" => "MPI_Iscan",
        "MPI_Exscan" => "MPI_Iexscan",
        _ => "MPI_Ibarrier",
    }
}

fn io_name(call: &IoCall) -> &'static str {
    match call {
        IoCall::Open { .. } => "MPI_File_open",
        IoCall::Close => "MPI_File_close",
        IoCall::Sync => "MPI_File_sync",
        IoCall::Meta => "MPI_File_set_size",
        IoCall::Read => "MPI_File_read",
        IoCall::Write => "MPI_File_write",
        IoCall::ReadAll => "MPI_File_read_all",
        IoCall::WriteAll => "MPI_File_write_all",
        IoCall::Iread { .. } => "MPI_File_iread",
        IoCall::Iwrite { .. } => "MPI_File_iwrite",
    }
}

fn rma_name(call: &RmaCall) -> &'static str {
    match call {
        RmaCall::Create { .. } => "MPI_Win_create",
        RmaCall::Free => "MPI_Win_free",
        RmaCall::Put { .. } => "MPI_Put",
        RmaCall::Accumulate { .. } => "MPI_Accumulate",
        RmaCall::Get { .. } => "MPI_Get",
        RmaCall::GetAccumulate { .. } => "MPI_Get_accumulate",
        RmaCall::Fence => "MPI_Win_fence",
        RmaCall::Lock { .. } => "MPI_Win_lock",
        RmaCall::Unlock { .. } => "MPI_Win_unlock",
        RmaCall::LockAll => "MPI_Win_lock_all",
        RmaCall::UnlockAll => "MPI_Win_unlock_all",
        RmaCall::Flush { .. } => "MPI_Win_flush",
        RmaCall::Post { .. } => "MPI_Win_post",
        RmaCall::Start { .. } => "MPI_Win_start",
        RmaCall::Complete => "MPI_Win_complete",
        RmaCall::Wait => "MPI_Win_wait",
    }
}

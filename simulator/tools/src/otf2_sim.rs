//! `simulator replay --otf2 DIR`: the simulated run as an OTF2 archive
//! ([`crate::otf2_out`]), from the replay's action log
//! ([`simulator::replay::Replay::action_log`]): simulated timestamps in
//! nanoseconds, one region per action named after the MPI call it
//! stands for.

use std::collections::HashMap;
use std::path::Path;

use simulator::action::{Action, IoCall, RmaCall};

use crate::otf2_out::ArchiveOut;

/// The MPI function an action stands for; `None` for compute.
pub fn mpi_name(a: &Action) -> Option<String> {
    let s = match a {
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
        Action::Icoll { coll, .. } => {
            let blocking = mpi_name(coll).unwrap_or_else(|| "MPI_Barrier".into());
            return Some(format!("MPI_I{}", blocking.trim_start_matches("MPI_").to_ascii_lowercase()));
        }
        Action::Cancel { .. } => "MPI_Cancel",
        Action::RequestFree { .. } => "MPI_Request_free",
        Action::Poll => "MPI_Test",
        Action::CommCreate { .. } => "MPI_Comm_create",
        Action::Io { call, .. } => match call {
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
        },
        Action::IoInfo { info, .. } => match (info.open_comm, info.sets_view) {
            (Some(_), _) => "MPI_File_open",
            (None, true) => "MPI_File_set_view",
            (None, false) => "MPI_File_set_info",
        },
        Action::Rma { call, .. } => match call {
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
        },
        Action::Init => "MPI_Init",
        Action::Finalize => "MPI_Finalize",
    };
    Some(s.to_string())
}

/// The simulated run's archive being written.
pub struct SimArchive {
    out: ArchiveOut,
    names: HashMap<u64, String>,
    err: Option<otf2::Error>,
}

impl SimArchive {
    /// Creates `<dir>/traces.otf2` for `ranks` ranks; `names` gives the
    /// compute regions' call-site names by id.
    ///
    /// # Errors
    /// The archive exists already or cannot be created (naming it).
    pub fn create(dir: &Path, ranks: u32, names: HashMap<u64, String>) -> Result<SimArchive, otf2::Error> {
        Ok(SimArchive { out: ArchiveOut::create(dir, ranks)?, names, err: None })
    }

    /// Writes `rank`'s `action` over `[start_s, end_s]` of simulated time;
    /// the first error is kept for [`SimArchive::finish`].
    pub fn log(&mut self, rank: usize, action: &Action, start_s: f64, end_s: f64) {
        if self.err.is_some() {
            return;
        }
        let ns = |s: f64| (s * 1e9).round().max(0.0) as u64;
        let (start, end, r) = (ns(start_s), ns(end_s), rank as u32);
        let res = match (mpi_name(action), action) {
            (Some(name), _) => self.out.call(r, r as u64, &name, start, end, std::slice::from_ref(action)),
            (None, Action::Compute { region, .. }) if end > start => {
                let name = self.names.get(region).cloned().unwrap_or_else(|| {
                    if *region == 0 {
                        "compute".into()
                    } else {
                        format!("region {region:#x}")
                    }
                });
                self.out.compute(r as u64, &name, start, end)
            }
            (None, Action::Flops { .. }) if end > start => self.out.compute(r as u64, "compute (flops)", start, end),
            _ => Ok(()),
        };
        if let Err(e) = res {
            self.err = Some(e);
        }
    }

    /// Closes the archive.
    ///
    /// # Errors
    /// The first error met while writing, or closing fails.
    pub fn finish(self) -> Result<(), otf2::Error> {
        match self.err {
            Some(e) => Err(e),
            None => self.out.finish(),
        }
    }
}

//! The one way the tools wait for an MPI launcher they started:
//! bounded, and killing it (it tears its ranks down) when the bound is
//! passed.

use std::process::{Child, ExitStatus};
use std::time::Duration;

use wait_timeout::ChildExt;

/// Waits for `child` at most `timeout`: its exit status, or `None` after
/// killing and reaping it when it ran longer.
///
/// # Errors
/// The operating system's error from waiting or killing.
pub fn wait_bounded(child: &mut Child, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
    match child.wait_timeout(timeout)? {
        Some(status) => Ok(Some(status)),
        None => {
            child.kill()?;
            child.wait()?;
            Ok(None)
        }
    }
}

/// True when `log`, a failed `mpirun`'s output, is Open MPI 4's report of
/// a rank with PID 0 "exiting improperly": its runtime's race between a
/// rank's exit and the daemon's bookkeeping,
/// which fails a run whose ranks all finalized. Such a run may be made
/// again; a crash names the rank's real PID or a signal instead.
pub fn open_mpi_exit_race(log: &str) -> bool {
    log.contains("with PID 0 on") && log.contains("exiting improperly")
}

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

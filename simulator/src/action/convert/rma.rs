//! One-sided communication records (`Params::Rma`) as replay actions.

use crate::action::{Action, RmaCall};
use crate::trace::record::{Op, Params, COMM_UNKNOWN, LOCK_EXCLUSIVE, PROC_NULL};

/// The action of an RMA record: `Ok(None)` for calls on an unknown window
/// ([`COMM_UNKNOWN`], e.g. a failed creation) and for accesses to
/// `MPI_PROC_NULL`; `Err(op)` when the record is not an RMA one.
///
/// `MPI_Fetch_and_op` and `MPI_Compare_and_swap` replay as a
/// get-accumulate of one element, the local flushes as the remote ones.
pub fn rma_action(rec_op: Op, params: &Params) -> Result<Option<Action>, Op> {
    let Params::Rma { win, comm, target, bytes, op, request, group, .. } = params else { return Err(rec_op) };
    if *win == COMM_UNKNOWN || *target == PROC_NULL {
        return Ok(None);
    }
    let t = || (*target).max(0) as u32;
    let (bytes, req) = (*bytes, *request);
    let members = || group.iter().filter(|&&m| m >= 0).map(|&m| m as u32).collect();
    let call = match rec_op {
        Op::WinCreate | Op::WinAllocate | Op::WinAllocateShared | Op::WinCreateDynamic => RmaCall::Create { comm: *comm },
        Op::WinFree => RmaCall::Free,
        Op::Put | Op::Rput => RmaCall::Put { target: t(), bytes, req },
        Op::Accumulate | Op::Raccumulate => RmaCall::Accumulate { target: t(), bytes, req },
        Op::Get | Op::Rget => RmaCall::Get { target: t(), bytes, req },
        Op::GetAccumulate | Op::FetchAndOp | Op::CompareAndSwap | Op::RgetAccumulate => RmaCall::GetAccumulate { target: t(), bytes, req },
        Op::WinFence => RmaCall::Fence,
        Op::WinLock => RmaCall::Lock { target: t(), exclusive: *op == LOCK_EXCLUSIVE },
        Op::WinUnlock => RmaCall::Unlock { target: t() },
        Op::WinLockAll => RmaCall::LockAll,
        Op::WinUnlockAll => RmaCall::UnlockAll,
        Op::WinFlush | Op::WinFlushLocal => RmaCall::Flush { target: Some(t()) },
        Op::WinFlushAll | Op::WinFlushLocalAll => RmaCall::Flush { target: None },
        Op::WinPost => RmaCall::Post { origins: members() },
        Op::WinStart => RmaCall::Start { targets: members() },
        Op::WinComplete => RmaCall::Complete,
        Op::WinWait => RmaCall::Wait,
        op => return Err(op),
    };
    Ok(Some(Action::Rma { win: *win, call }))
}

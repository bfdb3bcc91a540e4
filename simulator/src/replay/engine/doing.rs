//! What a rank is doing, for deadlock reports.

use std::fmt;

/// What a rank is doing, for deadlock reports.
#[derive(Debug, Clone, Copy)]
pub(super) enum Doing {
    Start,
    Compute,
    Send { dst: u32, tag: i32, bytes: u64, comm: u32 },
    Recv { src: i32, tag: i32, comm: u32 },
    Wait { req: u64 },
    Waitall { n: usize },
    Sendrecv { dst: u32, src: i32, comm: u32 },
    Coll { name: &'static str, round: u32 },
    Rma { name: &'static str, win: u32 },
}

impl fmt::Display for Doing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Doing::Start => write!(f, "start"),
            Doing::Compute => write!(f, "compute"),
            Doing::Send { dst, tag, bytes, comm } => {
                write!(f, "MPI_Send(dst={dst}, tag={tag}, {bytes} B, comm={comm})")
            }
            Doing::Recv { src, tag, comm } => write!(f, "MPI_Recv(src={src}, tag={tag}, comm={comm})"),
            Doing::Wait { req } => write!(f, "MPI_Wait(req={req:#x})"),
            Doing::Waitall { n } => write!(f, "MPI_Waitall({n} requests)"),
            Doing::Sendrecv { dst, src, comm } => write!(f, "MPI_Sendrecv(dst={dst}, src={src}, comm={comm})"),
            Doing::Coll { name, round } => write!(f, "{name} round {round}"),
            Doing::Rma { name, win } => write!(f, "{name}(window {win})"),
        }
    }
}

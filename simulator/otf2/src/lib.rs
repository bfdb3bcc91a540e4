//! OTF2 archives (Open Trace Format 2: Eschweiler et al., "Open Trace
//! Format 2: The next generation of scalable trace formats and support
//! libraries", ParCo 2011), the format Score-P writes and Vampir reads,
//! through the OTF2 library (Debian `libopen-trace-format2-dev`).
//!
//! [`Writer`] streams events per location and writes the global
//! definitions at [`Writer::finish`]; [`read`] loads a whole archive's
//! definitions and events ([`Archive`]). Only the records the simulator
//! maps are modelled ([`Event`]): regions (enter/leave), MPI
//! point-to-point and collective events, and I/O operations; [`read`]
//! counts the others by kind ([`Archive::skipped`]).

mod error;
mod model;
mod read;
pub mod sys;
mod write;

pub use error::Error;
pub use model::{
    coll_op_name, Comm, Event, Group, IoHandle, Location, Posted, Region, COUNTS_ATTRIBUTE, IRECV_ATTRIBUTES, OFFSET_ATTRIBUTE,
};
pub use read::{read, Archive};
pub use write::Writer;

/// OTF2 constants the callers need, re-exported from [`sys`].
pub mod consts {
    pub use crate::sys::{
        OTF2_COLLECTIVE_OP_ALLGATHER as ALLGATHER, OTF2_COLLECTIVE_OP_ALLGATHERV as ALLGATHERV, OTF2_COLLECTIVE_OP_ALLREDUCE as ALLREDUCE,
        OTF2_COLLECTIVE_OP_ALLTOALL as ALLTOALL, OTF2_COLLECTIVE_OP_ALLTOALLV as ALLTOALLV, OTF2_COLLECTIVE_OP_ALLTOALLW as ALLTOALLW,
        OTF2_COLLECTIVE_OP_BARRIER as BARRIER, OTF2_COLLECTIVE_OP_BCAST as BCAST, OTF2_COLLECTIVE_OP_CREATE_HANDLE as CREATE_HANDLE,
        OTF2_COLLECTIVE_OP_DESTROY_HANDLE as DESTROY_HANDLE, OTF2_COLLECTIVE_OP_EXSCAN as EXSCAN, OTF2_COLLECTIVE_OP_GATHER as GATHER,
        OTF2_COLLECTIVE_OP_GATHERV as GATHERV, OTF2_COLLECTIVE_OP_REDUCE as REDUCE, OTF2_COLLECTIVE_OP_REDUCE_SCATTER as REDUCE_SCATTER,
        OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK as REDUCE_SCATTER_BLOCK, OTF2_COLLECTIVE_OP_SCAN as SCAN,
        OTF2_COLLECTIVE_OP_SCATTER as SCATTER, OTF2_COLLECTIVE_OP_SCATTERV as SCATTERV, OTF2_GROUP_TYPE_COMM_GROUP as GROUP_COMM_GROUP,
        OTF2_GROUP_TYPE_COMM_LOCATIONS as GROUP_COMM_LOCATIONS, OTF2_IO_OPERATION_FLAG_COLLECTIVE as IO_FLAG_COLLECTIVE,
        OTF2_IO_OPERATION_FLAG_NONE as IO_FLAG_NONE, OTF2_IO_OPERATION_FLAG_NON_BLOCKING as IO_FLAG_NON_BLOCKING,
        OTF2_IO_OPERATION_MODE_FLUSH as IO_MODE_FLUSH, OTF2_IO_OPERATION_MODE_READ as IO_MODE_READ,
        OTF2_IO_OPERATION_MODE_WRITE as IO_MODE_WRITE, OTF2_PARADIGM_MPI as PARADIGM_MPI, OTF2_PARADIGM_USER as PARADIGM_USER,
        OTF2_REGION_ROLE_CODE as ROLE_CODE, OTF2_REGION_ROLE_COLL_ALL2ALL as ROLE_COLL_ALL2ALL,
        OTF2_REGION_ROLE_COLL_ALL2ONE as ROLE_COLL_ALL2ONE, OTF2_REGION_ROLE_COLL_ONE2ALL as ROLE_COLL_ONE2ALL,
        OTF2_REGION_ROLE_COLL_OTHER as ROLE_COLL_OTHER, OTF2_REGION_ROLE_FILE_IO as ROLE_FILE_IO,
        OTF2_REGION_ROLE_FUNCTION as ROLE_FUNCTION, OTF2_REGION_ROLE_POINT2POINT as ROLE_POINT2POINT,
        OTF2_UNDEFINED_UINT32 as UNDEFINED_UINT32,
    };
}

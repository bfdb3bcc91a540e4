/*
 * Online mode, MPI side (interposer/src/online.rs keeps the virtual clock).
 *
 * The generated wrappers call IPR_ONLINE_<MPI_X>(op, p, rc, <arguments>)
 * after PMPI_X and their `post:` snippets, and IPR_ONLINE_PRE_<MPI_X>(op,
 * p, <arguments>) before PMPI_X, when this header defines them (both only
 * while recording; a status argument is the wrapper's `st`, never
 * MPI_STATUS_IGNORE). Calls without a macro only charge their compute
 * block. In list calls the macros read the wrapper's `ids`/`nids` (the
 * request handles before the call).
 */
#ifndef IPR_ONLINE_H
#define IPR_ONLINE_H
#include "support.h"

/* Nonzero once online mode runs on this process (set by ipr_online_start). */
extern int ipr_online_active;

void ipr_on_send(int op, const struct ipr_params *p, int rc, int dest, int tag);
void ipr_on_recv(int op, const struct ipr_params *p, int rc, const MPI_Status *st);
void ipr_on_isend(int op, const struct ipr_params *p, int rc, int dest, int tag);
void ipr_on_irecv(const struct ipr_params *p, int rc, int source);
void ipr_on_complete(int op, int rc, uint64_t n, const uint64_t *handles, const MPI_Status *statuses);
void ipr_on_sendrecv(int op, const struct ipr_params *p, int rc, int dest, int sendtag, const MPI_Status *st);
void ipr_on_coll(int op, const struct ipr_params *p, int rc, const uint64_t *list, uint64_t nlist, int nonblocking);
void ipr_on_persistent(int op, const struct ipr_params *p, int rc, int peer, int tag, int send);
void ipr_on_start(int rc, uint64_t n, const uint64_t *handles);
void ipr_on_comm_created(int rc, MPI_Comm created);
void ipr_on_some(int op, int rc, const uint64_t *ids, uint64_t nids, int done, const MPI_Status *sts);
void ipr_on_mprobe(const struct ipr_params *p, int rc, const MPI_Status *st);
void ipr_on_mrecv(int op, const struct ipr_params *p, int rc);
void ipr_on_imrecv(const struct ipr_params *p, int rc);
void ipr_online_unmodelled(int op);
void ipr_on_io(int op, const struct ipr_params *p, int rc, const uint64_t *list, uint64_t nlist);
void ipr_online_request_free(uint64_t req);
void ipr_online_poll(void);
void ipr_on_comm_free(uint32_t id);
MPI_Status *ipr_on_statuses(int count);
void ipr_online_start(void);
void ipr_online_finalize(void);
/* After ipr_finalize: with ghost ranks, once every rank's trace is
 * complete, rank 0 predicts the ghost ranks (interposer/src/online/ghost.rs). */
void ipr_online_ghosts(void);

#define IPR_ON(x) do { if (ipr_online_active) { x; } } while (0)
#define IPR_ON_SEND(op, p, rc, buf, count, datatype, dest, tag, comm) IPR_ON(ipr_on_send(op, p, rc, dest, tag))
#define IPR_ON_ISEND(op, p, rc, buf, count, datatype, dest, tag, comm, request) IPR_ON(ipr_on_isend(op, p, rc, dest, tag))

#define IPR_ONLINE_MPI_Send IPR_ON_SEND
#define IPR_ONLINE_MPI_Ssend IPR_ON_SEND
#define IPR_ONLINE_MPI_Bsend IPR_ON_SEND
#define IPR_ONLINE_MPI_Rsend IPR_ON_SEND
#define IPR_ONLINE_MPI_Isend IPR_ON_ISEND
#define IPR_ONLINE_MPI_Issend IPR_ON_ISEND
#define IPR_ONLINE_MPI_Ibsend IPR_ON_ISEND
#define IPR_ONLINE_MPI_Irsend IPR_ON_ISEND
#define IPR_ONLINE_MPI_Recv(op, p, rc, buf, count, datatype, source, tag, comm, st) IPR_ON(ipr_on_recv(op, p, rc, st))
#define IPR_ONLINE_MPI_Irecv(op, p, rc, buf, count, datatype, source, tag, comm, request) IPR_ON(ipr_on_irecv(p, rc, source))

/* Completions: the handles as they were before the call. */
#define IPR_ONLINE_MPI_Wait(op, p, rc, request, st) IPR_ON(ipr_on_complete(op, rc, 1, &(p)->request, st))
#define IPR_ONLINE_MPI_Test(op, p, rc, request, flag, st) \
    IPR_ON(if (*(flag)) ipr_on_complete(op, rc, 1, &(p)->request, st); else ipr_online_poll())
#define IPR_ON_STATUSES(sts, count) IPR_ON(if ((sts) == MPI_STATUSES_IGNORE) (sts) = ipr_on_statuses(count))
#define IPR_ONLINE_PRE_MPI_Waitall(op, p, count, reqs, sts) IPR_ON_STATUSES(sts, count)
#define IPR_ONLINE_PRE_MPI_Testall(op, p, count, reqs, flag, sts) IPR_ON_STATUSES(sts, count)
#define IPR_ONLINE_MPI_Waitall(op, p, rc, count, reqs, sts) IPR_ON(if (nids == (uint64_t)(count)) ipr_on_complete(op, rc, nids, ids, sts))
#define IPR_ONLINE_MPI_Testall(op, p, rc, count, reqs, flag, sts) \
    IPR_ON(if ((p)->root != 1) ipr_online_poll(); else if (nids == (uint64_t)(count)) ipr_on_complete(op, rc, nids, ids, sts))
#define IPR_ON_ANY(op, rc, index, st) \
    IPR_ON(if (*(index) != MPI_UNDEFINED && *(index) >= 0 && (uint64_t)*(index) < nids) ipr_on_complete(op, rc, 1, &ids[*(index)], st))
#define IPR_ONLINE_MPI_Waitany(op, p, rc, count, reqs, index, st) IPR_ON_ANY(op, rc, index, st)
#define IPR_ONLINE_MPI_Testany(op, p, rc, count, reqs, index, flag, st) \
    IPR_ON(if ((p)->root < 0) ipr_online_poll(); else IPR_ON_ANY(op, rc, index, st))
/* Waitsome/Testsome: the list holds the handles, then the completed indices (p->root of them). */
#define IPR_ONLINE_PRE_MPI_Waitsome(op, p, count, reqs, outcount, indices, sts) IPR_ON_STATUSES(sts, count)
#define IPR_ONLINE_PRE_MPI_Testsome(op, p, count, reqs, outcount, indices, sts) IPR_ON_STATUSES(sts, count)
#define IPR_ON_SOME(op, p, rc, count, reqs, outcount, indices, sts) IPR_ON(ipr_on_some(op, rc, ids, nids, (p)->root, sts))
#define IPR_ONLINE_MPI_Waitsome IPR_ON_SOME
#define IPR_ONLINE_MPI_Testsome(op, p, rc, count, reqs, outcount, indices, sts) \
    IPR_ON(if ((p)->root <= 0) ipr_online_poll(); else ipr_on_some(op, rc, ids, nids, (p)->root, sts))

/* A test that completed nothing and an MPI_Iprobe are polls (the clock's [smpi] poll_s). */
#define IPR_ONLINE_MPI_Iprobe(op, p, rc, source, tag, comm, flag, st) IPR_ON(ipr_online_poll())

/* Matched probes: the probe remembers the message's communicator, source
 * and tag; MPI_Mrecv takes its companion (MPI_Imrecv as MPI_Irecv does). */
#define IPR_ONLINE_MPI_Mprobe(op, p, rc, source, tag, comm, message, st) IPR_ON(ipr_on_mprobe(p, rc, st))
#define IPR_ONLINE_MPI_Improbe(op, p, rc, source, tag, comm, flag, message, st) IPR_ON(if (*(flag)) ipr_on_mprobe(p, rc, st))
#define IPR_ONLINE_MPI_Mrecv(op, p, rc, buf, count, datatype, message, st) IPR_ON(ipr_on_mrecv(op, p, rc))
#define IPR_ONLINE_MPI_Imrecv(op, p, rc, buf, count, datatype, message, request) IPR_ON(ipr_on_imrecv(p, rc))
#define IPR_ONLINE_MPI_Request_free(op, p, rc, request) IPR_ON(if ((rc) == MPI_SUCCESS) ipr_online_request_free((p)->request))

#define IPR_ONLINE_MPI_Sendrecv(op, p, rc, sb, sc, stype, dest, sendtag, rb, rcount, rtype, source, recvtag, comm, st) \
    IPR_ON(ipr_on_sendrecv(op, p, rc, dest, sendtag, st))
#define IPR_ONLINE_MPI_Sendrecv_replace(op, p, rc, buf, count, datatype, dest, sendtag, source, recvtag, comm, st) \
    IPR_ON(ipr_on_sendrecv(op, p, rc, dest, sendtag, st))

/* Collectives: the clock models those the replay can build from a trace
 * record on their members' entry times (the others cost no virtual time
 * and are listed in the report). */
#define IPR_ON_COLL(op, p, rc, ...) IPR_ON(ipr_on_coll(op, p, rc, NULL, 0, 0))
/* v-collectives: their byte counts are in the scratch list. */
#define IPR_ON_VCOLL(op, p, rc, ...) IPR_ON(ipr_on_coll(op, p, rc, ids, nids, 0))
#define IPR_ONLINE_MPI_Barrier IPR_ON_COLL
#define IPR_ONLINE_MPI_Bcast IPR_ON_COLL
#define IPR_ONLINE_MPI_Reduce IPR_ON_COLL
#define IPR_ONLINE_MPI_Allreduce IPR_ON_COLL
#define IPR_ONLINE_MPI_Gather IPR_ON_COLL
#define IPR_ONLINE_MPI_Gatherv IPR_ON_VCOLL
#define IPR_ONLINE_MPI_Scatter IPR_ON_COLL
#define IPR_ONLINE_MPI_Scatterv IPR_ON_VCOLL
#define IPR_ONLINE_MPI_Allgather IPR_ON_COLL
#define IPR_ONLINE_MPI_Allgatherv IPR_ON_VCOLL
#define IPR_ONLINE_MPI_Alltoall IPR_ON_COLL
#define IPR_ONLINE_MPI_Alltoallv IPR_ON_VCOLL
#define IPR_ONLINE_MPI_Alltoallw IPR_ON_VCOLL
#define IPR_ONLINE_MPI_Reduce_scatter IPR_ON_VCOLL
#define IPR_ONLINE_MPI_Reduce_scatter_block IPR_ON_COLL
#define IPR_ONLINE_MPI_Scan IPR_ON_COLL
#define IPR_ONLINE_MPI_Exscan IPR_ON_COLL
/* Nonblocking collectives: their members' post times, on their requests. */
#define IPR_ON_ICOLL(op, p, rc, ...) IPR_ON(ipr_on_coll(op, p, rc, NULL, 0, 1))
#define IPR_ON_IVCOLL(op, p, rc, ...) IPR_ON(ipr_on_coll(op, p, rc, ids, nids, 1))
#define IPR_ONLINE_MPI_Ibarrier IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Ibcast IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Ireduce IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Iallreduce IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Igather IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Igatherv IPR_ON_IVCOLL
#define IPR_ONLINE_MPI_Iscatter IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Iscatterv IPR_ON_IVCOLL
#define IPR_ONLINE_MPI_Iallgather IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Iallgatherv IPR_ON_IVCOLL
#define IPR_ONLINE_MPI_Ialltoall IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Ialltoallv IPR_ON_IVCOLL
#define IPR_ONLINE_MPI_Ialltoallw IPR_ON_IVCOLL
#define IPR_ONLINE_MPI_Ireduce_scatter IPR_ON_IVCOLL
#define IPR_ONLINE_MPI_Ireduce_scatter_block IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Iscan IPR_ON_ICOLL
#define IPR_ONLINE_MPI_Iexscan IPR_ON_ICOLL
/* Neighbourhood collectives cost no virtual time: listed in the report. */
#define IPR_ON_UNMODELLED(op, p, rc, ...) IPR_ON(if ((rc) == MPI_SUCCESS) ipr_online_unmodelled(op))
#define IPR_ONLINE_MPI_Neighbor_allgather IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Neighbor_allgatherv IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Neighbor_alltoall IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Neighbor_alltoallv IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Neighbor_alltoallw IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Ineighbor_allgather IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Ineighbor_allgatherv IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Ineighbor_alltoall IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Ineighbor_alltoallv IPR_ON_UNMODELLED
#define IPR_ONLINE_MPI_Ineighbor_alltoallw IPR_ON_UNMODELLED

/* MPI-IO: on the platform's file system (collective accesses gather
 * their members' entry times and parts on the file's communicator). */
#define IPR_ON_IO(op, p, rc, ...) IPR_ON(ipr_on_io(op, p, rc, NULL, 0))
/* Open, view and hints: their list (the view and hints given). */
#define IPR_ON_IO_INFO(op, p, rc, ...) IPR_ON(ipr_on_io(op, p, rc, ids, nids))
#define IPR_ONLINE_MPI_File_open IPR_ON_IO_INFO
#define IPR_ONLINE_MPI_File_set_view IPR_ON_IO_INFO
#define IPR_ONLINE_MPI_File_set_info IPR_ON_IO_INFO
#define IPR_ONLINE_MPI_File_close IPR_ON_IO
#define IPR_ONLINE_MPI_File_sync IPR_ON_IO
#define IPR_ONLINE_MPI_File_set_size IPR_ON_IO
#define IPR_ONLINE_MPI_File_preallocate IPR_ON_IO
#define IPR_ONLINE_MPI_File_delete IPR_ON_IO
#define IPR_ONLINE_MPI_File_read IPR_ON_IO
#define IPR_ONLINE_MPI_File_read_at IPR_ON_IO
#define IPR_ONLINE_MPI_File_read_all IPR_ON_IO
#define IPR_ONLINE_MPI_File_read_at_all IPR_ON_IO
#define IPR_ONLINE_MPI_File_write IPR_ON_IO
#define IPR_ONLINE_MPI_File_write_at IPR_ON_IO
#define IPR_ONLINE_MPI_File_write_all IPR_ON_IO
#define IPR_ONLINE_MPI_File_write_at_all IPR_ON_IO
#define IPR_ONLINE_MPI_File_iread IPR_ON_IO
#define IPR_ONLINE_MPI_File_iread_at IPR_ON_IO
#define IPR_ONLINE_MPI_File_iwrite IPR_ON_IO
#define IPR_ONLINE_MPI_File_iwrite_at IPR_ON_IO
/* One-sided communication (interposer/src/online/ffi.rs, ipr_online_rma):
 * a data movement charges the origin as the replay does and completes at
 * the next synchronization that covers its target (unlock, the flushes,
 * unlock_all, complete, fence, free). Every call costs its CPU time, as
 * in the replay. Creating, freeing and fencing a window also cost a
 * barrier on the window's communicator (p->comm), as in the replay. Lock
 * waits and PSCW notices cost no virtual time beyond their call (the
 * protocol carries no message for them) and are listed in the report. */
void ipr_online_rma(int op, const struct ipr_params *p);
static inline void ipr_on_win_barrier(const struct ipr_params *p, int rc) {
    struct ipr_params q;
    memset(&q, 0, sizeof q);
    q.comm = p->comm;
    q.root = -1;
    ipr_on_coll(IPR_OP_MPI_Barrier, &q, rc, NULL, 0, 0);
}
#define IPR_ON_RMA(op, p, rc, ...) IPR_ON(if ((rc) == MPI_SUCCESS) ipr_online_rma(op, p))
#define IPR_ON_WIN_BARRIER(op, p, rc, ...) IPR_ON(ipr_on_win_barrier(p, rc))
#define IPR_ON_WIN_SYNC(op, p, rc, ...) IPR_ON(if ((rc) == MPI_SUCCESS) { ipr_online_rma(op, p); ipr_on_win_barrier(p, rc); })
/* A window's creation: its call's cost, then the barrier (which a failed
 * call still passes to the protocol, as every collective does). */
#define IPR_ON_WIN_CREATE(op, p, rc, ...) IPR_ON(if ((rc) == MPI_SUCCESS) ipr_online_rma(op, p); ipr_on_win_barrier(p, rc))
#define IPR_ONLINE_MPI_Win_create IPR_ON_WIN_CREATE
#define IPR_ONLINE_MPI_Win_allocate IPR_ON_WIN_CREATE
#define IPR_ONLINE_MPI_Win_allocate_shared IPR_ON_WIN_CREATE
#define IPR_ONLINE_MPI_Win_create_dynamic IPR_ON_WIN_CREATE
#define IPR_ONLINE_MPI_Win_free IPR_ON_WIN_SYNC
#define IPR_ONLINE_MPI_Win_fence IPR_ON_WIN_SYNC
#define IPR_ONLINE_MPI_Put IPR_ON_RMA
#define IPR_ONLINE_MPI_Get IPR_ON_RMA
#define IPR_ONLINE_MPI_Accumulate IPR_ON_RMA
#define IPR_ONLINE_MPI_Get_accumulate IPR_ON_RMA
#define IPR_ONLINE_MPI_Fetch_and_op IPR_ON_RMA
#define IPR_ONLINE_MPI_Compare_and_swap IPR_ON_RMA
#define IPR_ONLINE_MPI_Rput IPR_ON_RMA
#define IPR_ONLINE_MPI_Rget IPR_ON_RMA
#define IPR_ONLINE_MPI_Raccumulate IPR_ON_RMA
#define IPR_ONLINE_MPI_Rget_accumulate IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_lock IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_unlock IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_lock_all IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_unlock_all IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_flush IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_flush_all IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_flush_local IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_flush_local_all IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_post IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_start IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_complete IPR_ON_RMA
#define IPR_ONLINE_MPI_Win_wait IPR_ON_RMA

/* Communicators: shadows follow the application's. */
#define IPR_ONLINE_MPI_Comm_dup(op, p, rc, comm, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Comm_split(op, p, rc, comm, color, key, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Comm_create(op, p, rc, comm, group, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Comm_create_group(op, p, rc, comm, group, tag, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Comm_split_type(op, p, rc, comm, split_type, key, info, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Intercomm_merge(op, p, rc, intercomm, high, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Cart_create(op, p, rc, comm, ndims, dims, periods, reorder, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Cart_sub(op, p, rc, comm, remain_dims, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Graph_create(op, p, rc, comm, nnodes, index, edges, reorder, newcomm) IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
#define IPR_ONLINE_MPI_Dist_graph_create_adjacent(op, p, rc, comm, indeg, srcs, sw, outdeg, dsts, dw, info, reorder, newcomm) \
    IPR_ON(ipr_on_comm_created(rc, *(newcomm)))
/* Persistent requests: the init call is remembered; each start posts it
 * as the Isend/Irecv it describes (companion message and all). */
#define IPR_ON_SEND_INIT(op, p, rc, buf, count, datatype, dest, tag, comm, request) \
    IPR_ON(ipr_on_persistent(op, p, rc, dest, tag, 1))
#define IPR_ONLINE_MPI_Send_init IPR_ON_SEND_INIT
#define IPR_ONLINE_MPI_Ssend_init IPR_ON_SEND_INIT
#define IPR_ONLINE_MPI_Bsend_init IPR_ON_SEND_INIT
#define IPR_ONLINE_MPI_Rsend_init IPR_ON_SEND_INIT
#define IPR_ONLINE_MPI_Recv_init(op, p, rc, buf, count, datatype, source, tag, comm, request) \
    IPR_ON(ipr_on_persistent(op, p, rc, source, tag, 0))
#define IPR_ONLINE_MPI_Start(op, p, rc, request) IPR_ON(ipr_on_start(rc, 1, &(p)->request))
#define IPR_ONLINE_MPI_Startall(op, p, rc, count, reqs) IPR_ON(if (nids == (uint64_t)(count)) ipr_on_start(rc, nids, ids))
#define IPR_ONLINE_MPI_Comm_free(op, p, rc, comm) IPR_ON(if ((rc) == MPI_SUCCESS) ipr_on_comm_free((p)->comm))

#endif

/*
 * PMPI wrappers of the interposer, written against the real <mpi.h> so the
 * same source builds with OpenMPI (pointer handles) and MPICH (int handles).
 *
 * Each wrapper takes its caller's return address, asks the Rust recorder
 * whether to record (ipr_begin), calls PMPI_X unchanged, then hands the
 * normalized plain values to Rust (ipr_end): world ranks, bytes, tag,
 * communicator id, request handle. The PMPI result is always returned as
 * is; nothing here changes what the application sees.
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

/* Op codes: must match simulator::trace::record::Op. */
enum {
    IPR_INIT = 1, IPR_INIT_THREAD = 2, IPR_FINALIZE = 3, IPR_COMM_RANK = 4, IPR_COMM_SIZE = 5,
    IPR_SEND = 10, IPR_RECV = 11, IPR_ISEND = 12, IPR_IRECV = 13, IPR_WAIT = 14, IPR_WAITALL = 15,
    IPR_SENDRECV = 16, IPR_BARRIER = 30, IPR_BCAST = 31, IPR_REDUCE = 32, IPR_ALLREDUCE = 33
};

/* Must match interposer::hooks::Params (repr C). */
struct ipr_params {
    int32_t peer, tag;
    uint64_t bytes;
    uint32_t comm;
    int32_t root;
    uint64_t request;
    int32_t peer2, tag2;
    uint64_t bytes2;
};

/* Rust side (interposer/src/hooks.rs). */
extern int ipr_begin(int op, const void *caller);
extern void ipr_end(int op, int rc, const struct ipr_params *p);
extern uint64_t *ipr_scratch(uint64_t n);
extern void ipr_end_waitall(int rc, uint64_t n);
extern void ipr_init(int rank, int size, const char *library);
extern void ipr_finalize(void);
extern uint32_t ipr_comm_id(uint64_t handle);
extern int ipr_calibration(int on);
extern int ipr_calibration_calls(void);

#define CALLER __builtin_return_address(0)

static uint64_t handle_u64(const void *h, size_t size) {
    uint64_t v = 0;
    memcpy(&v, h, size < sizeof v ? size : sizeof v);
    return v;
}

static uint64_t bytes_of(int count, MPI_Datatype dt) {
    int size = 0;
    if (count <= 0 || PMPI_Type_size(dt, &size) != MPI_SUCCESS || size < 0) return 0;
    return (uint64_t)count * (uint64_t)size;
}

static uint32_t comm_id(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) return 0;
    return ipr_comm_id(handle_u64(&comm, sizeof comm));
}

static int32_t tag_of(int tag) { return tag == MPI_ANY_TAG ? -1 : tag; }

/* Rank `r` of `comm` as a world rank; -1 any source, -2 proc null. */
static int32_t world_rank(MPI_Comm comm, int r) {
    if (r == MPI_ANY_SOURCE) return -1;
    if (r == MPI_PROC_NULL) return -2;
    if (r < 0 || comm == MPI_COMM_WORLD) return r;
    MPI_Group g, wg;
    int inter = 0, out = MPI_UNDEFINED;
    PMPI_Comm_test_inter(comm, &inter);
    if ((inter ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g)) != MPI_SUCCESS) return r;
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, 1, &r, wg, &out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    return out == MPI_UNDEFINED ? r : out;
}

static void started(void) {
    int rank = 0, size = 0, len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Get_library_version(lib, &len);
    ipr_init(rank, size, lib);
    /* Empty blocks through a real wrapper measure the recorder's own share
     * of each compute block (not recorded, subtracted from every block). */
    if (ipr_calibration(1)) {
        for (int i = 0, n = ipr_calibration_calls(); i < n; i++) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        ipr_calibration(0);
    }
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) started();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) started();
    return rc;
}

int MPI_Finalize(void) {
    if (ipr_begin(IPR_FINALIZE, CALLER)) ipr_finalize();
    return PMPI_Finalize();
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
    int on = ipr_begin(IPR_COMM_RANK, CALLER);
    int rc = PMPI_Comm_rank(comm, rank);
    if (on) { struct ipr_params p = {0}; p.comm = comm_id(comm); ipr_end(IPR_COMM_RANK, rc, &p); }
    return rc;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
    int on = ipr_begin(IPR_COMM_SIZE, CALLER);
    int rc = PMPI_Comm_size(comm, size);
    if (on) { struct ipr_params p = {0}; p.comm = comm_id(comm); ipr_end(IPR_COMM_SIZE, rc, &p); }
    return rc;
}

static void p2p(struct ipr_params *p, MPI_Comm comm, int peer, int tag, uint64_t bytes) {
    p->peer = world_rank(comm, peer);
    p->tag = tag_of(tag);
    p->bytes = bytes;
    p->comm = comm_id(comm);
}

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    int on = ipr_begin(IPR_SEND, CALLER);
    int rc = PMPI_Send(buf, count, dt, dest, tag, comm);
    if (on) { struct ipr_params p = {0}; p2p(&p, comm, dest, tag, bytes_of(count, dt)); ipr_end(IPR_SEND, rc, &p); }
    return rc;
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status *status) {
    MPI_Status local;
    int on = ipr_begin(IPR_RECV, CALLER);
    MPI_Status *st = (on && status == MPI_STATUS_IGNORE) ? &local : status;
    int rc = PMPI_Recv(buf, count, dt, source, tag, comm, st);
    if (on) {
        struct ipr_params p = {0};
        int got = count;
        if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) {
            source = st->MPI_SOURCE;
            tag = st->MPI_TAG;
            PMPI_Get_count(st, dt, &got);
            if (got == MPI_UNDEFINED) got = count;
        }
        p2p(&p, comm, source, tag, bytes_of(got, dt));
        ipr_end(IPR_RECV, rc, &p);
    }
    return rc;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    int on = ipr_begin(IPR_ISEND, CALLER);
    int rc = PMPI_Isend(buf, count, dt, dest, tag, comm, req);
    if (on) {
        struct ipr_params p = {0};
        p2p(&p, comm, dest, tag, bytes_of(count, dt));
        p.request = handle_u64(req, sizeof *req);
        ipr_end(IPR_ISEND, rc, &p);
    }
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request *req) {
    int on = ipr_begin(IPR_IRECV, CALLER);
    int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    if (on) {
        struct ipr_params p = {0};
        p2p(&p, comm, source, tag, bytes_of(count, dt));
        p.request = handle_u64(req, sizeof *req);
        ipr_end(IPR_IRECV, rc, &p);
    }
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    MPI_Status local;
    int on = ipr_begin(IPR_WAIT, CALLER);
    uint64_t handle = on ? handle_u64(req, sizeof *req) : 0;
    MPI_Status *st = (on && status == MPI_STATUS_IGNORE) ? &local : status;
    if (st == &local) local.MPI_SOURCE = MPI_ANY_SOURCE;
    int rc = PMPI_Wait(req, st);
    if (on) {
        struct ipr_params p = {0};
        p.request = handle;
        /* Communicator-local rank: the request's communicator is not known here. */
        p.peer = (rc == MPI_SUCCESS && st->MPI_SOURCE >= 0) ? st->MPI_SOURCE : -1;
        ipr_end(IPR_WAIT, rc, &p);
    }
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    int on = ipr_begin(IPR_WAITALL, CALLER);
    uint64_t *ids = (on && n > 0) ? ipr_scratch((uint64_t)n) : 0;
    if (ids)
        for (int i = 0; i < n; i++) ids[i] = handle_u64(&reqs[i], sizeof reqs[i]);
    int rc = PMPI_Waitall(n, reqs, statuses);
    if (on) ipr_end_waitall(rc, ids ? (uint64_t)n : 0);
    return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rdt, int source, int rtag,
                 MPI_Comm comm, MPI_Status *status) {
    MPI_Status local;
    int on = ipr_begin(IPR_SENDRECV, CALLER);
    MPI_Status *st = (on && status == MPI_STATUS_IGNORE) ? &local : status;
    int rc = PMPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, st);
    if (on) {
        struct ipr_params p = {0};
        p2p(&p, comm, dest, stag, bytes_of(scount, sdt));
        if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) source = st->MPI_SOURCE;
        p.peer2 = world_rank(comm, source);
        p.tag2 = tag_of(rtag);
        p.bytes2 = bytes_of(rcount, rdt);
        ipr_end(IPR_SENDRECV, rc, &p);
    }
    return rc;
}

static void coll(struct ipr_params *p, MPI_Comm comm, int root, uint64_t bytes) {
    p->comm = comm_id(comm);
    p->root = root < 0 ? -1 : world_rank(comm, root);
    p->bytes = bytes;
}

int MPI_Barrier(MPI_Comm comm) {
    int on = ipr_begin(IPR_BARRIER, CALLER);
    int rc = PMPI_Barrier(comm);
    if (on) { struct ipr_params p = {0}; coll(&p, comm, -1, 0); ipr_end(IPR_BARRIER, rc, &p); }
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    int on = ipr_begin(IPR_BCAST, CALLER);
    int rc = PMPI_Bcast(buf, count, dt, root, comm);
    if (on) { struct ipr_params p = {0}; coll(&p, comm, root, bytes_of(count, dt)); ipr_end(IPR_BCAST, rc, &p); }
    return rc;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm) {
    int on = ipr_begin(IPR_REDUCE, CALLER);
    int rc = PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
    if (on) { struct ipr_params p = {0}; coll(&p, comm, root, bytes_of(count, dt)); ipr_end(IPR_REDUCE, rc, &p); }
    return rc;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    int on = ipr_begin(IPR_ALLREDUCE, CALLER);
    int rc = PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
    if (on) { struct ipr_params p = {0}; coll(&p, comm, -1, bytes_of(count, dt)); ipr_end(IPR_ALLREDUCE, rc, &p); }
    return rc;
}

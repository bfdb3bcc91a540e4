/*
 * Helpers shared by the generated PMPI wrappers (build.rs, from mpi.tbl)
 * and the lifecycle wrappers (lifecycle.c). Written against the real
 * <mpi.h>, so one source builds with OpenMPI (pointer handles) and MPICH
 * (int handles). Everything here normalizes MPI values into plain ones for
 * the Rust recorder: world ranks, bytes, tags, ids.
 */
#ifndef IPR_SUPPORT_H
#define IPR_SUPPORT_H
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
extern void ipr_end_list(int op, int rc, uint64_t n, const struct ipr_params *p);
extern uint64_t *ipr_scratch(uint64_t n);
extern void ipr_init(int rank, int size, const char *library);
extern void ipr_finalize(void);
extern uint32_t ipr_comm_id(uint64_t handle);
extern int ipr_calibration(int on);
extern int ipr_calibration_calls(void);

#define IPR_CALLER __builtin_return_address(0)

static inline uint64_t handle_u64(const void *h, size_t size) {
    uint64_t v = 0;
    memcpy(&v, h, size < sizeof v ? size : sizeof v);
    return v;
}

static inline uint64_t bytes_of(int count, MPI_Datatype dt) {
    int size = 0;
    if (count <= 0 || PMPI_Type_size(dt, &size) != MPI_SUCCESS || size < 0) return 0;
    return (uint64_t)count * (uint64_t)size;
}

static inline uint32_t comm_id(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) return 0;
    return ipr_comm_id(handle_u64(&comm, sizeof comm));
}

static inline int32_t tag_of(int tag) { return tag == MPI_ANY_TAG ? -1 : tag; }

/* Rank `r` of `comm` (of its remote group for an intercommunicator) as a
 * world rank; -1 any source, -2 proc null. */
static inline int32_t world_rank(MPI_Comm comm, int r) {
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

static inline void p2p(struct ipr_params *p, MPI_Comm comm, int peer, int tag, uint64_t bytes) {
    p->peer = world_rank(comm, peer);
    p->tag = tag_of(tag);
    p->bytes = bytes;
    p->comm = comm_id(comm);
}

/* A completed receive or probe: source, tag and size from the status.
 * count < 0 means "size from the status only". */
static inline void recv_status(struct ipr_params *p, MPI_Comm comm, int source, int tag, int count,
                               MPI_Datatype dt, int rc, MPI_Status *st) {
    int got = count;
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) {
        source = st->MPI_SOURCE;
        tag = st->MPI_TAG;
        if (PMPI_Get_count(st, dt, &got) != MPI_SUCCESS || got == MPI_UNDEFINED) got = count;
    }
    p2p(p, comm, source, tag, bytes_of(got, dt));
}

static inline void sendrecv(struct ipr_params *p, MPI_Comm comm, int dest, int stag, uint64_t sbytes,
                            int source, int rtag, uint64_t rbytes, int rc, MPI_Status *st) {
    p2p(p, comm, dest, stag, sbytes);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) source = st->MPI_SOURCE;
    p->peer2 = world_rank(comm, source);
    p->tag2 = tag_of(rtag);
    p->bytes2 = rbytes;
}

static inline void coll(struct ipr_params *p, MPI_Comm comm, int root, uint64_t bytes) {
    p->comm = comm_id(comm);
    p->root = root < 0 ? -1 : world_rank(comm, root);
    p->bytes = bytes;
}

/* Bytes of a v-collective's count array: sum over the group of counts × size. */
static inline uint64_t sum_bytes(MPI_Comm comm, const int counts[], MPI_Datatype dt) {
    int n = 0, inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS) return 0;
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) sum += bytes_of(counts[i], dt);
    return sum;
}

/* Copies `count` request handles into the recorder's scratch list. */
static inline void handles(int count, const MPI_Request reqs[], uint64_t **ids, uint64_t *nids) {
    if (count <= 0) return;
    *ids = ipr_scratch((uint64_t)count);
    if (*ids == NULL) return;
    for (int i = 0; i < count; i++) (*ids)[i] = handle_u64(&reqs[i], sizeof reqs[i]);
    *nids = (uint64_t)count;
}

/* A new communicator: parent id in p->comm, new id in p->peer2 (-1 for
 * MPI_COMM_NULL), members as world ranks in the scratch list. */
static inline void comm_created(struct ipr_params *p, MPI_Comm parent, int rc, MPI_Comm created,
                                uint64_t **ids, uint64_t *nids) {
    p->comm = comm_id(parent);
    p->peer2 = -1;
    if (rc != MPI_SUCCESS || created == MPI_COMM_NULL) return;
    p->peer2 = (int32_t)comm_id(created);
    int n = 0;
    MPI_Group g, wg;
    if (PMPI_Comm_size(created, &n) != MPI_SUCCESS || n <= 0) return;
    int *in = malloc(2 * (size_t)n * sizeof(int));
    *ids = ipr_scratch((uint64_t)n);
    if (in == NULL || *ids == NULL) {
        free(in);
        return;
    }
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Comm_group(created, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, n, in, wg, in + n);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    for (int i = 0; i < n; i++) (*ids)[i] = (uint64_t)(uint32_t)in[n + i];
    *nids = (uint64_t)n;
    free(in);
}

#endif

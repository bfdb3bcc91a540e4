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

/* ipr_begin, ipr_end: the recorder's fast path. */
#include "fast.h"
/* Communicator ids and world-rank translations. */
#include "comms.h"

/* Rust side (interposer/src/hooks.rs). */
extern uint64_t *ipr_scratch(uint64_t n);
extern void ipr_init(int rank, int size, const char *library);
extern void ipr_finalize(void);
extern int ipr_calibration(int on);
extern int ipr_calibration_calls(void);
extern void ipr_started(void);
extern int ipr_isolate_wanted(int rank, int ranks_on_node, int cpus);
extern void ipr_isolate(uint32_t *word);

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

/* The table entry of comm; NULL for MPI_COMM_WORLD (id 0, ranks are
 * world ranks), for MPI_COMM_SELF (id IPR_COMM_SELF: MPI translates its
 * one rank) and when the table is full. */
static inline struct ipr_comm *comm_entry(MPI_Comm comm) {
    return comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF ? NULL : ipr_comm_of(comm);
}

/* The id of MPI_COMM_SELF (simulator::trace::record::COMM_SELF). */
#define IPR_COMM_SELF (UINT32_MAX - 1)

/* The id of comm, whose entry is c (comm_entry). */
static inline uint32_t comm_id_of(const struct ipr_comm *c, MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) return 0;
    if (comm == MPI_COMM_SELF) return IPR_COMM_SELF;
    return c != NULL ? c->id : UINT32_MAX;
}

static inline uint32_t comm_id(MPI_Comm comm) { return comm_id_of(comm_entry(comm), comm); }

static inline int32_t tag_of(int tag) { return tag == MPI_ANY_TAG ? -1 : tag; }

/* world_rank without the table: asks MPI on every call. */
static __attribute__((noinline, cold)) int32_t world_rank_uncached(MPI_Comm comm, int r) {
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

/* Rank `r` of `comm` (of its remote group for an intercommunicator), whose
 * entry is c, as a world rank; -1 any source, -2 proc null; r itself when
 * it names no rank. From the communicator's translation, made once. */
static inline int32_t world_rank_of(struct ipr_comm *c, MPI_Comm comm, int r) {
    if (r == MPI_ANY_SOURCE) return -1;
    if (r == MPI_PROC_NULL) return -2;
    if (r < 0 || comm == MPI_COMM_WORLD) return r;
    const struct ipr_ranks *t = ipr_comm_ranks(c, comm);
    if (t == NULL) return world_rank_uncached(comm, r);
    return r < t->n && t->world[r] != MPI_UNDEFINED ? t->world[r] : r;
}

static inline int32_t world_rank(MPI_Comm comm, int r) {
    if (r < 0 || comm == MPI_COMM_WORLD) return world_rank_of(NULL, comm, r);
    return world_rank_of(ipr_comm_of(comm), comm, r);
}

static inline void p2p(struct ipr_params *p, MPI_Comm comm, int peer, int tag, uint64_t bytes) {
    struct ipr_comm *c = comm_entry(comm);
    p->peer = world_rank_of(c, comm, peer);
    p->tag = tag_of(tag);
    p->bytes = bytes;
    p->comm = comm_id_of(c, comm);
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
    struct ipr_comm *c = comm_entry(comm);
    p->comm = comm_id_of(c, comm);
    p->root = root < 0 ? -1 : world_rank_of(c, comm, root);
    p->bytes = bytes;
}

/* Size of the group a v-collective's count arrays index: the remote
 * group's on an intercommunicator; 0 on error. */
static inline int group_size(MPI_Comm comm) {
    int n = 0, inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS || n < 0) return 0;
    return n;
}

/* This rank's rank in comm (-1 on an intercommunicator or error). */
static inline int my_rank(MPI_Comm comm) {
    int r = -1, inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter || PMPI_Comm_rank(comm, &r) != MPI_SUCCESS) return -1;
    return r;
}

/* True where a rooted collective's root-side arrays are significant: at
 * the root of an intracommunicator, at MPI_ROOT on an intercommunicator. */
static inline int is_root(MPI_Comm comm, int root) {
    return root == MPI_ROOT || (root >= 0 && root == my_rank(comm));
}

/* Starts a v-collective's record: root and comm in p, room for ns send
 * then nr receive byte counts in the scratch list (p->tag = ns). Returns
 * the list (zeroed), or NULL when the call failed or nothing records. */
static inline uint64_t *vcoll(struct ipr_params *p, MPI_Comm comm, int root, int rc, int ns, int nr,
                              uint64_t **ids, uint64_t *nids) {
    struct ipr_comm *c = comm_entry(comm);
    p->comm = comm_id_of(c, comm);
    p->root = root < 0 ? -1 : world_rank_of(c, comm, root);
    if (rc != MPI_SUCCESS || ns < 0 || nr < 0 || ns + nr == 0) return NULL;
    *ids = ipr_scratch((uint64_t)(ns + nr));
    if (*ids == NULL) return NULL;
    p->tag = ns;
    *nids = (uint64_t)(ns + nr);
    return *ids;
}

/* out[i] = counts[i] (or `count` when counts is NULL) × size of dt, i < n. */
static inline void counts_bytes(uint64_t *out, int n, const int counts[], int count, MPI_Datatype dt) {
    int size = 0;
    if (out == NULL || n <= 0 || PMPI_Type_size(dt, &size) != MPI_SUCCESS || size < 0) return;
    for (int i = 0; i < n; i++) {
        int c = counts ? counts[i] : count;
        out[i] = c > 0 ? (uint64_t)c * (uint64_t)size : 0;
    }
}

/* out[i] = counts[i] × size of types[i] (the w-collectives), i < n. */
static inline void counts_bytes_w(uint64_t *out, int n, const int counts[], const MPI_Datatype types[]) {
    if (out == NULL) return;
    for (int i = 0; i < n; i++) out[i] = bytes_of(counts[i], types[i]);
}

/* A neighbourhood collective's list: k destinations (world ranks), their
 * bytes, m sources, their bytes (p->tag = k). `send`/`recv` point at the
 * byte slots for the caller to fill; k = m = 0 without a topology. */
struct ipr_nbr { uint64_t *send, *recv; int k, m; };

/* Comm ranks (in[0..n), MPI_PROC_NULL allowed) of a topology
 * (intra)communicator as world ranks into out[0..n), -2 for MPI_PROC_NULL
 * and for ranks without one. From the communicator's translation; without
 * one, from MPI's groups, with `tmp` holding n ints. */
static inline void nbr_world(MPI_Comm comm, int n, const int *in, int *tmp, uint64_t *out) {
    const struct ipr_ranks *t = n > 0 ? ipr_comm_ranks(comm_entry(comm), comm) : NULL;
    MPI_Group g, wg;
    for (int i = 0; i < n; i++) tmp[i] = MPI_UNDEFINED;
    if (t != NULL) {
        for (int i = 0; i < n; i++) tmp[i] = in[i] >= 0 && in[i] < t->n ? t->world[in[i]] : MPI_UNDEFINED;
    } else if (n > 0 && PMPI_Comm_group(comm, &g) == MPI_SUCCESS) {
        PMPI_Comm_group(MPI_COMM_WORLD, &wg);
        PMPI_Group_translate_ranks(g, n, in, wg, tmp);
        PMPI_Group_free(&wg);
        PMPI_Group_free(&g);
    }
    for (int i = 0; i < n; i++) {
        int32_t w = in[i] == MPI_PROC_NULL ? -2 : tmp[i] == MPI_UNDEFINED || tmp[i] == MPI_PROC_NULL ? -2 : tmp[i];
        out[i] = (uint64_t)(uint32_t)w;
    }
}

static inline struct ipr_nbr neighbors(struct ipr_params *p, MPI_Comm comm, int rc, uint64_t **ids, uint64_t *nids) {
    struct ipr_nbr b = {NULL, NULL, 0, 0};
    int topo = MPI_UNDEFINED, k = 0, m = 0, nd = 0, weighted = 0, me = 0;
    p->comm = comm_id(comm);
    if (rc != MPI_SUCCESS || PMPI_Topo_test(comm, &topo) != MPI_SUCCESS) return b;
    if (topo == MPI_CART) {
        if (PMPI_Cartdim_get(comm, &nd) != MPI_SUCCESS) return b;
        k = m = 2 * nd;
    } else if (topo == MPI_GRAPH) {
        if (PMPI_Comm_rank(comm, &me) != MPI_SUCCESS || PMPI_Graph_neighbors_count(comm, me, &k) != MPI_SUCCESS) return b;
        m = k;
    } else if (topo == MPI_DIST_GRAPH) {
        if (PMPI_Dist_graph_neighbors_count(comm, &m, &k, &weighted) != MPI_SUCCESS) return b;
    } else {
        return b;
    }
    if (k < 0 || m < 0 || k + m == 0) return b;
    uint64_t *l = ipr_scratch(2 * (uint64_t)(k + m));
    if (l == NULL) return b;
    /* Comm ranks as ints in the byte slots (each holds two ints), then
     * translated into the peer slots: [dsts k | send k | srcs m | recv m]. */
    int *dst = (int *)(l + k), *src = (int *)(l + 2 * k + m);
    int ok = 1;
    if (topo == MPI_CART) {
        for (int d = 0; d < nd && ok; d++) {
            ok = PMPI_Cart_shift(comm, d, 1, &src[2 * d], &src[2 * d + 1]) == MPI_SUCCESS;
            dst[2 * d] = src[2 * d];
            dst[2 * d + 1] = src[2 * d + 1];
        }
    } else if (topo == MPI_GRAPH) {
        ok = PMPI_Graph_neighbors(comm, me, k, dst) == MPI_SUCCESS;
        for (int i = 0; i < k; i++) src[i] = dst[i];
    } else {
        /* Weights, when there are, go where the translation's output goes later. */
        if (weighted) {
            ok = PMPI_Dist_graph_neighbors(comm, m, src, src + m, k, dst, dst + k) == MPI_SUCCESS;
        } else {
/* OpenMPI's MPI_UNWEIGHTED is a small constant address, which GCC takes for an array of size 0. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
            ok = PMPI_Dist_graph_neighbors(comm, m, src, MPI_UNWEIGHTED, k, dst, MPI_UNWEIGHTED) == MPI_SUCCESS;
#pragma GCC diagnostic pop
        }
    }
    if (!ok) return b;
    nbr_world(comm, k, dst, dst + k, l);
    nbr_world(comm, m, src, src + m, l + 2 * k);
    for (int i = 0; i < k; i++) l[k + i] = 0;
    for (int i = 0; i < m; i++) l[2 * k + m + i] = 0;
    *ids = l;
    *nids = 2 * (uint64_t)(k + m);
    p->tag = k;
    b.send = l + k;
    b.recv = l + 2 * k + m;
    b.k = k;
    b.m = m;
    return b;
}

/* The v-collectives' lists (see simulator::trace::record::Params::Vcoll):
 * what MPI defines on this rank, MPI_IN_PLACE's ignored side replaced by
 * the in-place block. */
static inline void gatherv_counts(struct ipr_params *p, MPI_Comm comm, int root, int rc, const void *sendbuf,
                                  int sendcount, MPI_Datatype sendtype, const int recvcounts[], MPI_Datatype recvtype,
                                  uint64_t **ids, uint64_t *nids) {
    int at_root = is_root(comm, root), n = at_root ? group_size(comm) : 0, me = my_rank(comm);
    int ns = root == MPI_ROOT || root == MPI_PROC_NULL ? 0 : 1;
    uint64_t *v = vcoll(p, comm, root, rc, ns, n, ids, nids);
    if (v == NULL) return;
    if (ns) v[0] = sendbuf == MPI_IN_PLACE && me >= 0 && me < n ? bytes_of(recvcounts[me], recvtype) : bytes_of(sendcount, sendtype);
    counts_bytes(v + ns, n, recvcounts, 0, recvtype);
}

static inline void scatterv_counts(struct ipr_params *p, MPI_Comm comm, int root, int rc, const int sendcounts[],
                                   MPI_Datatype sendtype, const void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                   uint64_t **ids, uint64_t *nids) {
    int at_root = is_root(comm, root), n = at_root ? group_size(comm) : 0, me = my_rank(comm);
    int nr = root == MPI_ROOT || root == MPI_PROC_NULL ? 0 : 1;
    uint64_t *v = vcoll(p, comm, root, rc, n, nr, ids, nids);
    if (v == NULL) return;
    counts_bytes(v, n, sendcounts, 0, sendtype);
    if (nr) v[n] = recvbuf == MPI_IN_PLACE && me >= 0 && me < n ? v[me] : bytes_of(recvcount, recvtype);
}

static inline void allgatherv_counts(struct ipr_params *p, MPI_Comm comm, int rc, const void *sendbuf, int sendcount,
                                     MPI_Datatype sendtype, const int recvcounts[], MPI_Datatype recvtype,
                                     uint64_t **ids, uint64_t *nids) {
    int n = group_size(comm), me = my_rank(comm);
    uint64_t *v = vcoll(p, comm, -1, rc, 1, n, ids, nids);
    if (v == NULL) return;
    counts_bytes(v + 1, n, recvcounts, 0, recvtype);
    v[0] = sendbuf == MPI_IN_PLACE && me >= 0 && me < n ? v[1 + me] : bytes_of(sendcount, sendtype);
}

/* Alltoallv (types NULL) and Alltoallw (per-peer types). */
static inline void alltoallv_counts(struct ipr_params *p, MPI_Comm comm, int rc, const void *sendbuf,
                                    const int sendcounts[], MPI_Datatype sendtype, const MPI_Datatype sendtypes[],
                                    const int recvcounts[], MPI_Datatype recvtype, const MPI_Datatype recvtypes[],
                                    uint64_t **ids, uint64_t *nids) {
    int n = group_size(comm);
    uint64_t *v = vcoll(p, comm, -1, rc, n, n, ids, nids);
    if (v == NULL) return;
    if (recvtypes) counts_bytes_w(v + n, n, recvcounts, recvtypes);
    else counts_bytes(v + n, n, recvcounts, 0, recvtype);
    if (sendbuf == MPI_IN_PLACE) memcpy(v, v + n, (size_t)n * sizeof *v);
    else if (sendtypes) counts_bytes_w(v, n, sendcounts, sendtypes);
    else counts_bytes(v, n, sendcounts, 0, sendtype);
}

static inline void reduce_scatter_counts(struct ipr_params *p, MPI_Comm comm, int rc, const int recvcounts[],
                                         MPI_Datatype dt, uint64_t **ids, uint64_t *nids) {
    int n = group_size(comm);
    counts_bytes(vcoll(p, comm, -1, rc, 0, n, ids, nids), n, recvcounts, 0, dt);
}

/* Copies `count` request handles into the recorder's scratch list. */
static inline void handles(int count, const MPI_Request reqs[], uint64_t **ids, uint64_t *nids) {
    if (count <= 0) return;
    *ids = ipr_scratch((uint64_t)count);
    if (*ids == NULL) return;
    for (int i = 0; i < count; i++) (*ids)[i] = handle_u64(&reqs[i], sizeof reqs[i]);
    *nids = (uint64_t)count;
}

/* World ranks of the `n` members of group `g`, into out[0..n). */
static inline void group_members(MPI_Group g, int n, uint64_t *out) {
    int *in = malloc(2 * (size_t)n * sizeof(int));
    MPI_Group wg;
    if (in == NULL) return;
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, n, in, wg, in + n);
    PMPI_Group_free(&wg);
    for (int i = 0; i < n; i++) out[i] = (uint64_t)(uint32_t)in[n + i];
    free(in);
}

/* A new communicator: parent id in p->comm, new id in p->peer2 (-1 for
 * MPI_COMM_NULL), members as world ranks (those of `group_of`) in the
 * scratch list. */
static inline void comm_members(struct ipr_params *p, MPI_Comm parent, int rc, MPI_Comm created, MPI_Comm group_of,
                                uint64_t **ids, uint64_t *nids) {
    p->comm = comm_id(parent);
    p->peer2 = -1;
    if (rc != MPI_SUCCESS || created == MPI_COMM_NULL) return;
    struct ipr_comm *c = comm_entry(created);
    p->peer2 = (int32_t)comm_id_of(c, created);
    /* Translated now, once (not for Comm_idup's, which may not be used
     * before its request completes: on its first use then). */
    if (group_of == created) ipr_comm_ranks(c, created);
    int n = 0;
    MPI_Group g;
    if (PMPI_Comm_size(group_of, &n) != MPI_SUCCESS || n <= 0) return;
    *ids = ipr_scratch((uint64_t)n);
    if (*ids == NULL) return;
    PMPI_Comm_group(group_of, &g);
    group_members(g, n, *ids);
    PMPI_Group_free(&g);
    *nids = (uint64_t)n;
}

static inline void comm_created(struct ipr_params *p, MPI_Comm parent, int rc, MPI_Comm created,
                                uint64_t **ids, uint64_t *nids) {
    comm_members(p, parent, rc, created, created, ids, nids);
}

/* MPI_Comm_idup: the members come from the parent (the same group), since
 * the new communicator may not be used before the request completes. */
static inline void comm_idup_created(struct ipr_params *p, MPI_Comm parent, int rc, MPI_Comm created,
                                     uint64_t **ids, uint64_t *nids) {
    comm_members(p, parent, rc, created, parent, ids, nids);
}

/* A new intercommunicator: as comm_created, with the local group's
 * members then the remote group's in the scratch list, p->root local ones. */
static inline void intercomm_created(struct ipr_params *p, MPI_Comm local, int rc, MPI_Comm created,
                                     uint64_t **ids, uint64_t *nids) {
    p->comm = comm_id(local);
    p->peer2 = -1;
    if (rc != MPI_SUCCESS || created == MPI_COMM_NULL) return;
    struct ipr_comm *c = comm_entry(created);
    p->peer2 = (int32_t)comm_id_of(c, created);
    ipr_comm_ranks(c, created); /* translated now, once */
    int nl = 0, nr = 0;
    MPI_Group g;
    if (PMPI_Comm_size(created, &nl) != MPI_SUCCESS || PMPI_Comm_remote_size(created, &nr) != MPI_SUCCESS) return;
    if (nl <= 0 || nr < 0) return;
    *ids = ipr_scratch((uint64_t)(nl + nr));
    if (*ids == NULL) return;
    PMPI_Comm_group(created, &g);
    group_members(g, nl, *ids);
    PMPI_Group_free(&g);
    PMPI_Comm_remote_group(created, &g);
    group_members(g, nr, *ids + nl);
    PMPI_Group_free(&g);
    p->root = nl;
    *nids = (uint64_t)(nl + nr);
}

/* Bytes a completed receive moved, from its status (count × size when
 * the status says nothing). */
static inline uint64_t status_bytes(int rc, MPI_Status *st, int count, MPI_Datatype dt) {
    int got = count;
    if (rc == MPI_SUCCESS && (PMPI_Get_count(st, dt, &got) != MPI_SUCCESS || got == MPI_UNDEFINED)) got = count;
    return bytes_of(got, dt);
}

/* Waitsome/Testsome: room for the handles and as many indices. */
static inline void handles_some(int count, const MPI_Request reqs[], uint64_t **ids, uint64_t *nids) {
    if (count <= 0) return;
    *ids = ipr_scratch(2 * (uint64_t)count);
    if (*ids == NULL) return;
    for (int i = 0; i < count; i++) (*ids)[i] = handle_u64(&reqs[i], sizeof reqs[i]);
    *nids = (uint64_t)count;
}

/* Waitsome/Testsome: appends the completed indices; p->root = how many. */
static inline void some_done(struct ipr_params *p, int rc, int count, const int *outcount, const int indices[],
                             uint64_t *ids, uint64_t *nids) {
    p->root = 0;
    if (ids == NULL || count <= 0 || rc != MPI_SUCCESS || *outcount == MPI_UNDEFINED || *outcount <= 0) return;
    int m = *outcount < count ? *outcount : count;
    for (int i = 0; i < m; i++) ids[count + i] = (uint64_t)(uint32_t)indices[i];
    p->root = m;
    *nids = (uint64_t)(count + m);
}

/* MPI-IO: a file's id, from the communicators' table with the top bit set
 * on the handle, so that it never equals a communicator's id. */
static inline int32_t file_id(MPI_File fh) {
    if (fh == MPI_FILE_NULL) return -1;
    return (int32_t)ipr_comm_id(handle_u64(&fh, sizeof fh) ^ (1ull << 63));
}

/* True when the file has positions to ask about: not MPI_FILE_NULL, not
 * opened MPI_MODE_SEQUENTIAL (where the position queries are errors, which
 * an application's fatal error handler would turn into an abort). */
static inline int io_positioned(MPI_File fh) {
    int amode = 0;
    return fh != MPI_FILE_NULL && PMPI_File_get_amode(fh, &amode) == MPI_SUCCESS && !(amode & MPI_MODE_SEQUENTIAL);
}

/* Absolute byte offset of `offset` (etype units, relative to the view);
 * 0 when unknown. */
static inline uint64_t io_offset(MPI_File fh, MPI_Offset offset) {
    MPI_Offset b = 0;
    if (offset < 0 || !io_positioned(fh) || PMPI_File_get_byte_offset(fh, offset, &b) != MPI_SUCCESS || b < 0) return 0;
    return (uint64_t)b;
}

/* Absolute byte offset of the individual file pointer; 0 when unknown. */
static inline uint64_t io_pointer(MPI_File fh) {
    MPI_Offset o = 0;
    if (!io_positioned(fh) || PMPI_File_get_position(fh, &o) != MPI_SUCCESS) return 0;
    return io_offset(fh, o);
}

/* An MPI-IO record: file id in p->peer2, byte offset in p->bytes2, bytes. */
static inline void io(struct ipr_params *p, MPI_File fh, uint64_t offset, uint64_t bytes) {
    p->peer2 = file_id(fh);
    p->bytes2 = offset;
    p->bytes = bytes;
}

/* The MPI-IO hints a record keeps, in key order from 1 (the keys of
 * simulator::trace::record::hint). */
static const char *const ipr_hint_keys[] = {
    "cb_nodes",       "cb_buffer_size", "striping_unit",      "striping_factor",    "romio_cb_write",
    "romio_cb_read",  "romio_ds_write", "romio_ds_read",      "ind_wr_buffer_size", "ind_rd_buffer_size",
};
#define IPR_NHINTS ((int)(sizeof ipr_hint_keys / sizeof ipr_hint_keys[0]))

/* Hint `key` of `info`: its number, or 1/2/3 for enable/disable/automatic;
 * 0 when absent or unreadable. */
static inline uint64_t hint_value(MPI_Info info, const char *key) {
    char v[64];
    int flag = 0;
    if (info == MPI_INFO_NULL || PMPI_Info_get(info, key, (int)sizeof v - 1, v, &flag) != MPI_SUCCESS || !flag) return 0;
    v[sizeof v - 1] = '\0';
    if (strcmp(v, "enable") == 0) return 1;
    if (strcmp(v, "disable") == 0) return 2;
    if (strcmp(v, "automatic") == 0) return 3;
    char *end = NULL;
    unsigned long long x = strtoull(v, &end, 10);
    return end == v ? 0 : (uint64_t)x;
}

static inline uint64_t type_bytes(MPI_Datatype t) {
    int s = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &s) != MPI_SUCCESS || s < 0) return 0;
    return (uint64_t)s;
}

/* The longest contiguous run of data a filetype is built of, bytes, as
 * far as its constructor tells: a vector's block, a subarray's innermost
 * selected rows, a resized type's inner type; else its size. */
static uint64_t type_block(MPI_Datatype t, int depth) {
    int ni = 0, na = 0, nd = 0, combiner = 0;
    uint64_t size = type_bytes(t);
    if (depth > 4 || PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS || combiner == MPI_COMBINER_NAMED) return size;
    if (combiner != MPI_COMBINER_VECTOR && combiner != MPI_COMBINER_HVECTOR && combiner != MPI_COMBINER_SUBARRAY &&
        combiner != MPI_COMBINER_RESIZED)
        return size;
    int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
    uint64_t block = size;
    if (ints != NULL && aints != NULL && types != NULL && nd >= 1 &&
        PMPI_Type_get_contents(t, ni, na, nd, ints, aints, types) == MPI_SUCCESS) {
        uint64_t old = type_bytes(types[0]);
        if ((combiner == MPI_COMBINER_VECTOR || combiner == MPI_COMBINER_HVECTOR) && ni >= 2) {
            block = (uint64_t)(ints[1] > 0 ? ints[1] : 0) * old;
        } else if (combiner == MPI_COMBINER_SUBARRAY && ni >= 1) {
            /* ints: ndims, sizes[ndims], subsizes[ndims], starts[ndims], order. */
            int n = ints[0], c_order = ints[3 * n + 1] == MPI_ORDER_C;
            uint64_t run = old;
            for (int k = 0; k < n; k++) {
                int d = c_order ? n - 1 - k : k;
                run *= (uint64_t)(ints[1 + n + d] > 0 ? ints[1 + n + d] : 0);
                if (ints[1 + n + d] != ints[1 + d]) break;
            }
            block = run;
        } else if (combiner == MPI_COMBINER_RESIZED) {
            block = type_block(types[0], depth + 1);
        }
        for (int k = 0; k < nd; k++) {
            int ci = 0, ca = 0, cd = 0, cc = 0;
            if (PMPI_Type_get_envelope(types[k], &ci, &ca, &cd, &cc) == MPI_SUCCESS && cc != MPI_COMBINER_NAMED) PMPI_Type_free(&types[k]);
        }
    }
    free(ints);
    free(aints);
    free(types);
    return block == 0 || block > size ? size : block;
}

/* The list of an MPI-IO open, view or hints record: amode, the view's
 * displacement, etype size, filetype size, extent and contiguous block
 * (zeros without a filetype), then (key, value) of each hint given. */
static inline void io_info(int amode, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, MPI_Info info,
                           uint64_t **ids, uint64_t *nids) {
    uint64_t *l = ipr_scratch(6 + 2 * (uint64_t)IPR_NHINTS);
    if (l == NULL) return;
    MPI_Aint lb = 0, extent = 0;
    int typed = filetype != MPI_DATATYPE_NULL && PMPI_Type_get_extent(filetype, &lb, &extent) == MPI_SUCCESS && extent >= 0;
    l[0] = (uint64_t)(uint32_t)amode;
    l[1] = disp < 0 ? 0 : (uint64_t)disp;
    l[2] = type_bytes(etype);
    l[3] = typed ? type_bytes(filetype) : 0;
    l[4] = typed ? (uint64_t)extent : 0;
    l[5] = typed ? type_block(filetype, 0) : 0;
    uint64_t n = 6;
    for (int k = 0; k < IPR_NHINTS; k++) {
        uint64_t v = hint_value(info, ipr_hint_keys[k]);
        if (v != 0) {
            l[n++] = (uint64_t)(k + 1);
            l[n++] = v;
        }
    }
    *ids = l;
    *nids = n;
}
/* One-sided communication. */
#include "rma.h"

#endif

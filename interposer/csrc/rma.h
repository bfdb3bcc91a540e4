/*
 * One-sided communication (MPI RMA): window ids (and each window's
 * communicator id, recorded with every RMA call), the world rank of a
 * target, and the record of each RMA call (see Params::Rma in
 * simulator/src/trace/record.rs for which field means what).
 *
 * A window gets an id from the communicators' table (comms.h), keyed by
 * its handle with bit 62 set, so it never equals a communicator's or a
 * file's id. Its entry's translation is the window group's world ranks,
 * made when the window is created and dropped when it is freed, so a
 * target rank is translated without a PMPI call, as p2p peers are.
 */
#ifndef IPR_RMA_H
#define IPR_RMA_H
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

static inline uint64_t win_key(MPI_Win win) { return handle_u64(&win, sizeof win) ^ (1ull << 62); }

/* The table entry of `win`, registered on first sight; NULL for
 * MPI_WIN_NULL and when the table is full. */
static inline struct ipr_comm *win_entry(MPI_Win win) {
    if (win == MPI_WIN_NULL) return NULL;
    uint64_t k = win_key(win);
    struct ipr_comm *c = ipr_comm_find(k);
    return c != NULL ? c : ipr_comm_add(k);
}

/* World rank of each rank of the window's group; NULL when MPI cannot say. */
static inline struct ipr_ranks *win_translation(MPI_Win win) {
    MPI_Group g, wg;
    int n = 0;
    if (PMPI_Win_get_group(win, &g) != MPI_SUCCESS) return NULL;
    struct ipr_ranks *t = NULL;
    if (PMPI_Group_size(g, &n) == MPI_SUCCESS && n > 0) t = malloc(sizeof *t + (size_t)n * sizeof(int));
    int *in = t != NULL ? malloc((size_t)n * sizeof(int)) : NULL;
    if (in != NULL && PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS) {
        t->n = n;
        for (int i = 0; i < n; i++) in[i] = i;
        if (PMPI_Group_translate_ranks(g, n, in, wg, t->world) != MPI_SUCCESS) {
            free(t);
            t = NULL;
        }
        PMPI_Group_free(&wg);
    } else {
        free(t);
        t = NULL;
    }
    free(in);
    PMPI_Group_free(&g);
    return t;
}

/* Replaces the translation of window entry c by t (NULL: drops it). */
static inline void win_set_ranks(struct ipr_comm *c, struct ipr_ranks *t) {
    if (c == NULL) {
        free(t);
        return;
    }
    struct ipr_ranks *old = __atomic_exchange_n(&c->ranks, t, __ATOMIC_ACQ_REL);
    if (old != NULL && old != IPR_RANKS_BUSY) free(old);
}

/* Rank `r` of the window's group as a world rank (-2 for MPI_PROC_NULL). */
static inline int32_t win_target(struct ipr_comm *c, MPI_Win win, int r) {
    if (r == MPI_PROC_NULL) return -2;
    if (r < 0) return r;
    const struct ipr_ranks *t = c != NULL ? __atomic_load_n(&c->ranks, __ATOMIC_ACQUIRE) : NULL;
    if (t == NULL || t == IPR_RANKS_BUSY) {
        /* A window created before recording began: ask MPI. */
        MPI_Group g, wg;
        int out = MPI_UNDEFINED;
        if (PMPI_Win_get_group(win, &g) != MPI_SUCCESS) return r;
        PMPI_Comm_group(MPI_COMM_WORLD, &wg);
        PMPI_Group_translate_ranks(g, 1, &r, wg, &out);
        PMPI_Group_free(&g);
        PMPI_Group_free(&wg);
        return out == MPI_UNDEFINED ? r : out;
    }
    return r < t->n && t->world[r] != MPI_UNDEFINED ? t->world[r] : r;
}

/* The trace's code of a reduction operation (simulator's rma_op). */
static inline int32_t rma_op_code(MPI_Op op) {
    if (op == MPI_OP_NULL) return 0;
    if (op == MPI_SUM) return 1;
    if (op == MPI_PROD) return 2;
    if (op == MPI_MAX) return 3;
    if (op == MPI_MIN) return 4;
    if (op == MPI_LAND) return 5;
    if (op == MPI_BAND) return 6;
    if (op == MPI_LOR) return 7;
    if (op == MPI_BOR) return 8;
    if (op == MPI_LXOR) return 9;
    if (op == MPI_BXOR) return 10;
    if (op == MPI_MAXLOC) return 11;
    if (op == MPI_MINLOC) return 12;
    if (op == MPI_REPLACE) return 13;
    if (op == MPI_NO_OP) return 14;
    return 15;
}

/* A new window: its id in p->peer2 (-1 none), its communicator, its size
 * in bytes; its group is translated now. */
static inline void win_created(struct ipr_params *p, MPI_Comm comm, int rc, MPI_Win win, MPI_Aint size, int disp_unit) {
    (void)disp_unit;
    p->comm = comm_id(comm);
    p->peer = -1;
    p->peer2 = -1;
    p->bytes = size > 0 ? (uint64_t)size : 0;
    if (rc != MPI_SUCCESS || win == MPI_WIN_NULL) return;
    struct ipr_comm *c = win_entry(win);
    if (c == NULL) return;
    p->peer2 = (int32_t)c->id;
    c->win_comm = p->comm;
    win_set_ranks(c, win_translation(win));
}

/* The window's id in p->peer2 (-1 none) and its communicator's in p->comm. */
static inline void win_ids(struct ipr_params *p, const struct ipr_comm *c) {
    p->peer2 = c != NULL ? (int32_t)c->id : -1;
    p->comm = c != NULL ? c->win_comm : 0;
}

/* A data-movement call: window, target (world rank), displacement, bytes,
 * reduction operation. */
static inline void rma(struct ipr_params *p, MPI_Win win, int target, MPI_Aint disp, uint64_t bytes, MPI_Op op) {
    struct ipr_comm *c = win_entry(win);
    win_ids(p, c);
    p->peer = win_target(c, win, target);
    p->bytes2 = disp > 0 ? (uint64_t)disp : 0;
    p->bytes = bytes;
    p->tag = rma_op_code(op);
}

/* A synchronization: window, target (-1 for none), assert. */
static inline void win_sync(struct ipr_params *p, MPI_Win win, int target, int assert) {
    struct ipr_comm *c = win_entry(win);
    win_ids(p, c);
    p->peer = target == -1 ? -1 : win_target(c, win, target);
    p->root = assert;
}

/* Win_post/Win_start: as win_sync, with the group's world ranks in the
 * scratch list. */
static inline void win_group(struct ipr_params *p, MPI_Win win, MPI_Group g, int assert, uint64_t **ids, uint64_t *nids) {
    win_sync(p, win, -1, assert);
    int n = 0;
    if (g == MPI_GROUP_NULL || PMPI_Group_size(g, &n) != MPI_SUCCESS || n <= 0) return;
    *ids = ipr_scratch((uint64_t)n);
    if (*ids == NULL) return;
    group_members(g, n, *ids);
    *nids = (uint64_t)n;
}

/* Win_free, before MPI frees it: the id, and the translation goes. */
static inline void win_freed(struct ipr_params *p, MPI_Win win) {
    struct ipr_comm *c = win_entry(win);
    p->peer = -1;
    win_ids(p, c);
    win_set_ranks(c, NULL);
}

#endif

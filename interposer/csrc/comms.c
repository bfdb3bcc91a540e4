/*
 * The communicator table of comms.h: translations (once per communicator;
 * registration, which needs no MPI, is in common.c). Registration takes a
 * mutex but makes no PMPI call under it, so MPI's own locks (taken around
 * the attribute callback below) and that one are never held in the
 * opposite order.
 */
#include "comms.h"

#include <pthread.h>
#include <stdlib.h>

/* MPI frees a translated communicator: its translation goes. */
static int ranks_deleted(MPI_Comm comm, int keyval, void *attribute, void *extra) {
    (void)comm, (void)keyval, (void)extra;
    struct ipr_comm *c = attribute;
    struct ipr_ranks *t = __atomic_exchange_n(&c->ranks, NULL, __ATOMIC_ACQ_REL);
    if (t != IPR_RANKS_BUSY) free(t);
    return MPI_SUCCESS;
}

static int keyval = MPI_KEYVAL_INVALID;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

static void make_keyval(void) {
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ranks_deleted, &keyval, NULL) != MPI_SUCCESS)
        keyval = MPI_KEYVAL_INVALID;
}

/* World ranks of comm's ranks (of its remote group when it is an
 * intercommunicator); NULL when MPI cannot say. */
static struct ipr_ranks *translation(MPI_Comm comm) {
    int inter = 0, n = 0, ok = 0;
    MPI_Group g, wg;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return NULL;
    if ((inter ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g)) != MPI_SUCCESS) return NULL;
    struct ipr_ranks *t = NULL;
    int *in = NULL;
    if (PMPI_Group_size(g, &n) == MPI_SUCCESS && n >= 0) {
        t = malloc(sizeof *t + (size_t)n * sizeof(int));
        in = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    }
    if (t != NULL && in != NULL) {
        t->n = n;
        for (int i = 0; i < n; i++) {
            in[i] = i;
            t->world[i] = MPI_UNDEFINED;
        }
        if (PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS) {
            ok = n == 0 || PMPI_Group_translate_ranks(g, n, in, wg, t->world) == MPI_SUCCESS;
            PMPI_Group_free(&wg);
        }
    }
    PMPI_Group_free(&g);
    free(in);
    if (!ok) {
        free(t);
        return NULL;
    }
    return t;
}

const struct ipr_ranks *ipr_comm_translate(struct ipr_comm *c, MPI_Comm comm) {
    struct ipr_ranks *none = NULL;
    if (!__atomic_compare_exchange_n(&c->ranks, &none, IPR_RANKS_BUSY, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return none == IPR_RANKS_BUSY ? NULL : none;
    pthread_once(&keyval_once, make_keyval);
    struct ipr_ranks *t = keyval == MPI_KEYVAL_INVALID ? NULL : translation(comm);
    /* The attribute's delete callback takes the translation back when MPI
     * frees the communicator. */
    if (t != NULL && PMPI_Comm_set_attr(comm, keyval, c) != MPI_SUCCESS) {
        free(t);
        t = NULL;
    }
    __atomic_store_n(&c->ranks, t, __ATOMIC_RELEASE);
    return t;
}

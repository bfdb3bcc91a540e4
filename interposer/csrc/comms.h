/*
 * Communicator ids and world-rank translations, shared by all threads.
 *
 * Each communicator handle other than MPI_COMM_WORLD gets an id (from 1,
 * in the order handles are first seen; MPI-IO files share the numbering
 * with the top bit of their handle set) and, once, the world rank of each
 * of its ranks (of its remote group for an intercommunicator). A call
 * looks both up without a lock: an open-addressing table whose slots are
 * only ever added, each published with a release store of its handle, and
 * a translation published through an atomic pointer.
 *
 * A translation lives as long as its communicator: an MPI attribute on it
 * (a keyval whose delete callback runs whenever MPI frees it, by
 * MPI_Comm_free or otherwise) takes the translation back, so a handle
 * that MPI reuses for a new communicator is translated anew; its id stays.
 */
#ifndef IPR_COMMS_H
#define IPR_COMMS_H
#include <stdint.h>
#include <string.h>

/* Most handles the table names; later ones get no id (UINT32_MAX). */
#define IPR_COMMS_MAX 4096
#define IPR_COMM_SLOTS (2 * IPR_COMMS_MAX)

/* World rank of each of a communicator's n ranks, MPI_UNDEFINED where
 * there is none. */
struct ipr_ranks {
    int n;
    int world[];
};

/* `ranks` of a communicator whose translation one thread is making. */
#define IPR_RANKS_BUSY ((struct ipr_ranks *)1)

/* A named handle. `ranks`: its translation; NULL when none was made (or
 * MPI freed it), IPR_RANKS_BUSY while one is made. */
struct ipr_comm {
    uint32_t id;
    /* An RMA window's entry (csrc/rma.h): its communicator's id. */
    uint32_t win_comm;
    struct ipr_ranks *ranks;
};

struct ipr_comm_slot {
    uint64_t handle; /* 0: free */
    struct ipr_comm *comm;
};

extern struct ipr_comm_slot ipr_comm_slots[IPR_COMM_SLOTS];

/* The entry of `handle`, registering it on first sight; NULL when the
 * table is full (csrc/common.c, one table whichever MPI runs). */
extern struct ipr_comm *ipr_comm_add(uint64_t handle);
/* Id of `handle` (ipr_comm_add's); UINT32_MAX when the table is full. */
extern uint32_t ipr_comm_id(uint64_t handle);
static inline uint32_t ipr_comm_hash(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (uint32_t)h & (IPR_COMM_SLOTS - 1);
}

/* The entry of `handle`, NULL when it has none yet. Lock-free: a slot's
 * entry is written before its handle is stored (release). */
static inline struct ipr_comm *ipr_comm_find(uint64_t handle) {
    uint32_t i = ipr_comm_hash(handle);
    for (uint32_t k = 0; k < IPR_COMM_SLOTS; k++, i = (i + 1) & (IPR_COMM_SLOTS - 1)) {
        uint64_t h = __atomic_load_n(&ipr_comm_slots[i].handle, __ATOMIC_ACQUIRE);
        if (h == handle) return ipr_comm_slots[i].comm;
        if (h == 0) return NULL;
    }
    return NULL;
}

/* Below: what needs <mpi.h>; csrc/common.c, built once without an MPI,
 * defines IPR_NO_MPI. */
#ifndef IPR_NO_MPI
#include <mpi.h>

/* `c`'s translation, made now when it has none (comm is c's handle);
 * NULL when MPI cannot give one or another thread is making it. */
extern const struct ipr_ranks *ipr_comm_translate(struct ipr_comm *c, MPI_Comm comm);

/* The entry of a communicator other than MPI_COMM_WORLD; NULL when the
 * table is full. */
static inline struct ipr_comm *ipr_comm_of(MPI_Comm comm) {
    uint64_t h = 0;
    memcpy(&h, &comm, sizeof comm < sizeof h ? sizeof comm : sizeof h);
    struct ipr_comm *c = ipr_comm_find(h);
    return c != NULL ? c : ipr_comm_add(h);
}

/* The translation of `c` (the entry of comm), made on first use; NULL
 * when there is none to use (see ipr_comm_translate). */
static inline const struct ipr_ranks *ipr_comm_ranks(struct ipr_comm *c, MPI_Comm comm) {
    if (c == NULL) return NULL;
    const struct ipr_ranks *t = __atomic_load_n(&c->ranks, __ATOMIC_ACQUIRE);
    if (t == NULL) return ipr_comm_translate(c, comm);
    return t == IPR_RANKS_BUSY ? NULL : t;
}
#endif

#endif

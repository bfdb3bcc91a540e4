/*
 * The part of the interposer's C side that no MPI's ABI touches, built
 * once (without <mpi.h>) and shared by both ABI builds of the wrappers
 * (build.rs): the communicator table's registration (comms.h), the
 * fast path's thread-local state (fast.h) and the load-time clock mark.
 */
#define IPR_NO_MPI
#include "comms.h"
#include "types.h"

#include <pthread.h>

extern void ipr_clock_mark(void);

struct ipr_comm_slot ipr_comm_slots[IPR_COMM_SLOTS];
static struct ipr_comm comms[IPR_COMMS_MAX];
static uint32_t ncomms;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

struct ipr_comm *ipr_comm_add(uint64_t handle) {
    if (handle == 0) return NULL; /* the free-slot mark; no MPI handle is 0 */
    pthread_mutex_lock(&lock);
    struct ipr_comm *c = ipr_comm_find(handle);
    if (c == NULL && ncomms < IPR_COMMS_MAX) {
        uint32_t i = ipr_comm_hash(handle);
        while (ipr_comm_slots[i].handle != 0) i = (i + 1) & (IPR_COMM_SLOTS - 1);
        c = &comms[ncomms++];
        c->id = ncomms;
        ipr_comm_slots[i].comm = c;
        __atomic_store_n(&ipr_comm_slots[i].handle, handle, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
    return c;
}

uint32_t ipr_comm_id(uint64_t handle) {
    struct ipr_comm *c = ipr_comm_find(handle);
    if (c == NULL) c = ipr_comm_add(handle);
    return c != NULL ? c->id : UINT32_MAX;
}

__thread struct ipr_fast *ipr_fast_tls __attribute__((tls_model("initial-exec")));

/* Sets this thread's fast-path state (interposer/src/fast.rs); NULL: none. */
void ipr_fast_set(struct ipr_fast *f) { ipr_fast_tls = f; }

/* At load: the first (TSC, CLOCK_MONOTONIC) pair of the TSC frequency
 * measurement that MPI_Init completes (interposer/src/clock.rs). */
__attribute__((constructor)) static void ipr_loaded(void) { ipr_clock_mark(); }

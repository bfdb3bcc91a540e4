/*
 * Online mode, MPI side: shadow communicators and the nonblocking
 * operations on them that carry virtual times (see online.h; the clock
 * and its work queue are in interposer/src/online.rs and online/pump.rs,
 * the protocol's argument in docs/online-protocol.md).
 *
 * Every application communicator gets a shadow slot holding two
 * duplicates of it: `fwd` carries, after each payload and with the same
 * tag, a companion {virtual send time, bytes, buffered} from sender to receiver
 * (MPI's non-overtaking rule keeps each pair matched; the receiver takes
 * source and tag from the payload's status, so wildcards work), and the
 * gathers of collectives' entry times; `ack` carries the receiver's
 * virtual post time back to the sender of a message the model sends by
 * rendezvous. The hooks below read what the application's call did from
 * MPI (statuses, communicators, probed messages) and queue it in Rust;
 * the pump there posts and tests the shadow operations through the
 * ipr_sh_* primitives, never blocking. Slots, not communicator ids, name
 * shadows in the queue: an id freed and reused by a new communicator
 * gets a new slot while the old one's events are still queued. Only
 * PMPI_ calls are made here, so nothing is recorded.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "online.h"

#include <sched.h>
#include <stdio.h>

int ipr_online_active = 0;

/* Rust side (interposer/src/online.rs, online/ffi.rs). */
extern int ipr_online_enabled(void);
extern void ipr_online_comm(uint32_t slot, const int *members, int n);
extern void ipr_online_comm_free(uint32_t slot);
extern void ipr_online_send(int op, const struct ipr_params *p, uint32_t slot, int local, int tag);
extern void ipr_online_isend(int op, const struct ipr_params *p, uint32_t slot, int local, int tag);
extern void ipr_online_irecv(uint64_t req, uint32_t slot);
extern void ipr_online_recv(int op, uint32_t slot, int src, int tag);
extern void ipr_online_sendrecv(int op, const struct ipr_params *p, uint32_t slot, int dest, int sendtag, int src, int recvtag);
extern void ipr_online_completed(int op, uint64_t req, int src, int tag, int cancelled);
extern void ipr_online_wait(int op, const uint64_t *reqs, uint64_t n);
extern void ipr_online_request_free(uint64_t req);
extern void ipr_online_coll(int op, const struct ipr_params *p, uint32_t slot, const uint64_t *list, uint64_t nlist, int nonblocking);
extern void ipr_online_io(int op, const struct ipr_params *p, uint32_t slot, const uint64_t *list, uint64_t nlist);
extern void ipr_online_drain(int op);
extern void ipr_online_stats(double *out);
extern void ipr_online_reason(char *buf, int cap);
extern void ipr_online_report(const double *all, const char *reasons, int reason_len, int n);
extern void ipr_online_stop(void);
extern double ipr_online_wtime(double real);

#define IPR_STATS 14
#define IPR_REASON 256 /* bytes of each rank's stall reason in the report */
#define NO_SLOT UINT32_MAX

struct shadow {
    int used;
    MPI_Comm fwd, ack;
};

static struct shadow *shadows;
static uint32_t nshadows;
/* Slot + 1 of each communicator id's shadow (0: none). */
static uint32_t *slot_of_id;
static uint32_t nslot_of_id;
/* A duplicate of MPI_COMM_WORLD for finalize's report alone: whatever a
 * stopped rank left on the shadows, the report's collectives match. */
static MPI_Comm report_comm = MPI_COMM_NULL;
static MPI_Status *scratch_st;
static int scratch_stn;

static struct shadow *shadow_at(uint32_t slot) {
    return slot < nshadows && shadows[slot].used ? &shadows[slot] : NULL;
}

/* The shadow slot of communicator id `id`, NO_SLOT without one. */
static uint32_t slot_of(uint32_t id) {
    return id < nslot_of_id && slot_of_id[id] != 0 ? slot_of_id[id] - 1 : NO_SLOT;
}

MPI_Status *ipr_on_statuses(int count) {
    if (count <= 0) return MPI_STATUSES_IGNORE;
    if (count > scratch_stn) {
        MPI_Status *s = realloc(scratch_st, (size_t)count * sizeof *s);
        if (s == NULL) return MPI_STATUSES_IGNORE;
        scratch_st = s;
        scratch_stn = count;
    }
    return scratch_st;
}

static int grow(void **v, uint32_t *n, uint32_t want, size_t size) {
    if (want <= *n) return 1;
    uint32_t m = want + 16;
    void *g = realloc(*v, (size_t)m * size);
    if (g == NULL) return 0;
    memset((char *)g + (size_t)*n * size, 0, (size_t)(m - *n) * size);
    *v = g;
    *n = m;
    return 1;
}

/* Duplicates `comm` twice into a free shadow slot for communicator id
 * `id` and tells the clock its members. */
static void make_shadow(uint32_t id, MPI_Comm comm) {
    if (slot_of(id) != NO_SLOT) ipr_on_comm_free(id);
    uint32_t slot = 0;
    while (slot < nshadows && shadows[slot].used) slot++;
    if (!grow((void **)&shadows, &nshadows, slot + 1, sizeof *shadows) ||
        !grow((void **)&slot_of_id, &nslot_of_id, id + 1, sizeof *slot_of_id))
        return;
    struct shadow *s = &shadows[slot];
    if (PMPI_Comm_dup(comm, &s->fwd) != MPI_SUCCESS) return;
    if (PMPI_Comm_dup(comm, &s->ack) != MPI_SUCCESS) {
        PMPI_Comm_free(&s->fwd);
        return;
    }
    s->used = 1;
    slot_of_id[id] = slot + 1;
    int n = 0;
    PMPI_Comm_size(comm, &n);
    int *in = malloc(2 * (size_t)(n > 0 ? n : 1) * sizeof(int));
    if (in == NULL) return;
    MPI_Group g, wg;
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, n, in, wg, in + n);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    ipr_online_comm(slot, in + n, n);
    free(in);
}

/* Shadow primitives for the pump (online/shadow.rs). Requests travel as
 * uint64_t (an MPI_Request is a pointer in OpenMPI, an int in MPICH).
 * Each returns nonzero when the operation was posted. */
static MPI_Comm channel(uint32_t slot, int chan) {
    struct shadow *s = shadow_at(slot);
    return s == NULL ? MPI_COMM_NULL : chan == 0 ? s->fwd : s->ack;
}

static void put_req(uint64_t *out, MPI_Request r) {
    *out = 0;
    memcpy(out, &r, sizeof r);
}

static MPI_Request get_req(const uint64_t *in) {
    MPI_Request r;
    memcpy(&r, in, sizeof r);
    return r;
}

int ipr_sh_isend(uint32_t slot, int chan, int dest, int tag, const double *buf, int n, uint64_t *req) {
    MPI_Comm c = channel(slot, chan);
    MPI_Request r;
    if (c == MPI_COMM_NULL || PMPI_Isend(buf, n, MPI_DOUBLE, dest, tag, c, &r) != MPI_SUCCESS) return 0;
    put_req(req, r);
    return 1;
}

int ipr_sh_irecv(uint32_t slot, int chan, int src, int tag, double *buf, int n, uint64_t *req) {
    MPI_Comm c = channel(slot, chan);
    MPI_Request r;
    if (c == MPI_COMM_NULL || PMPI_Irecv(buf, n, MPI_DOUBLE, src, tag, c, &r) != MPI_SUCCESS) return 0;
    put_req(req, r);
    return 1;
}

/* Gathers `k` doubles from each of the `n` members of shadow `slot`. */
int ipr_sh_iallgather(uint32_t slot, const double *send, double *recv, int n, int k, uint64_t *req) {
    MPI_Comm c = channel(slot, 0);
    MPI_Request r;
    int size = 0;
    if (c == MPI_COMM_NULL || PMPI_Comm_size(c, &size) != MPI_SUCCESS || size != n ||
        PMPI_Iallgather(send, k, MPI_DOUBLE, recv, k, MPI_DOUBLE, c, &r) != MPI_SUCCESS)
        return 0;
    put_req(req, r);
    return 1;
}

/* Nonzero once MPI is finalized: requests are then gone. */
static int mpi_gone(void) {
    int done = 0;
    return PMPI_Finalized(&done) != MPI_SUCCESS || done;
}

/* 1 when the request completed (or failed, or MPI is finalized: it is
 * then gone too). */
int ipr_sh_test(uint64_t *req) {
    MPI_Request r = get_req(req);
    int flag = 0;
    if (mpi_gone()) return 1;
    if (PMPI_Test(&r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 1;
    put_req(req, r);
    return flag;
}

/* Gives up a request in flight: `kind` 1 a receive (cancelled and
 * completed), 0 a send (freed: it completes on its own), 2 a collective
 * (left to complete: MPI lets no one cancel or free it). */
void ipr_sh_cancel(uint64_t *req, int kind) {
    MPI_Request r = get_req(req);
    if (mpi_gone()) return;
    if (kind == 1) {
        PMPI_Cancel(&r);
        PMPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (kind == 0) {
        PMPI_Request_free(&r);
    }
}

void ipr_sh_free(uint32_t slot) {
    struct shadow *s = shadow_at(slot);
    if (s == NULL || slot == 0) return;
    PMPI_Comm_free(&s->fwd);
    PMPI_Comm_free(&s->ack);
    s->used = 0;
}

/* Compute isolation (interposer/src/isolate.rs): the node's token word,
 * in a shared window of the node's ranks. */
static MPI_Win isolate_win = MPI_WIN_NULL;
static MPI_Comm isolate_comm = MPI_COMM_NULL;

/* Ranks on this node, and CPUs they may run on (the union of their
 * affinity masks), decide whether they isolate; if so, they share a token. */
static void isolate_start(void) {
    int rank = 0, nlocal = 0, lrank = 0, cpus = 0;
    cpu_set_t mine, all;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &isolate_comm) != MPI_SUCCESS) return;
    PMPI_Comm_size(isolate_comm, &nlocal);
    PMPI_Comm_rank(isolate_comm, &lrank);
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);
    if (PMPI_Allreduce(&mine, &all, (int)sizeof mine, MPI_BYTE, MPI_BOR, isolate_comm) != MPI_SUCCESS) return;
    cpus = CPU_COUNT(&all);
    if (!ipr_isolate_wanted(rank, nlocal, cpus)) return;
    uint32_t *word = NULL;
    if (PMPI_Win_allocate_shared(lrank == 0 ? (MPI_Aint)sizeof *word : 0, 1, MPI_INFO_NULL, isolate_comm, &word, &isolate_win) !=
        MPI_SUCCESS)
        return;
    MPI_Aint size = 0;
    int unit = 0;
    if (PMPI_Win_shared_query(isolate_win, 0, &size, &unit, &word) != MPI_SUCCESS || word == NULL) return;
    if (lrank == 0) *word = 0;
    PMPI_Barrier(isolate_comm);
    ipr_isolate(word);
}

static void isolate_stop(void) {
    ipr_isolate(NULL);
    if (isolate_win != MPI_WIN_NULL) PMPI_Win_free(&isolate_win);
    if (isolate_comm != MPI_COMM_NULL) PMPI_Comm_free(&isolate_comm);
}

void ipr_online_start(void) {
    int level = MPI_THREAD_SINGLE, rank = 0;
    if (!ipr_online_enabled()) return;
    /* Companions must follow their payload from the same thread. */
    if (PMPI_Query_thread(&level) == MPI_SUCCESS && level == MPI_THREAD_MULTIPLE) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0)
            fprintf(stderr, "interposer: warning: online mode does not support MPI_THREAD_MULTIPLE; recording a trace only\n");
        return;
    }
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &report_comm) != MPI_SUCCESS) return;
    make_shadow(0, MPI_COMM_WORLD);
    ipr_online_active = slot_of(0) != NO_SLOT;
    if (ipr_online_active) isolate_start();
}

void ipr_on_comm_created(int rc, MPI_Comm created) {
    int inter = 0;
    if (rc != MPI_SUCCESS || created == MPI_COMM_NULL) return;
    if (PMPI_Comm_test_inter(created, &inter) != MPI_SUCCESS || inter) return;
    uint32_t id = comm_id(created);
    if (id != UINT32_MAX) make_shadow(id, created); /* UINT32_MAX: too many communicators to name */
}

void ipr_on_comm_free(uint32_t id) {
    uint32_t slot = slot_of(id);
    if (slot == NO_SLOT || id == 0) return;
    slot_of_id[id] = 0;
    ipr_online_comm_free(slot);
}

void ipr_on_send(int op, const struct ipr_params *p, int rc, int dest, int tag) {
    uint32_t slot = slot_of(p->comm);
    if (rc == MPI_SUCCESS && p->peer >= 0 && slot != NO_SLOT) ipr_online_send(op, p, slot, dest, tag);
}

void ipr_on_isend(int op, const struct ipr_params *p, int rc, int dest, int tag) {
    uint32_t slot = slot_of(p->comm);
    if (rc == MPI_SUCCESS && p->peer >= 0 && slot != NO_SLOT) ipr_online_isend(op, p, slot, dest, tag);
}

void ipr_on_recv(int op, const struct ipr_params *p, int rc, const MPI_Status *st) {
    uint32_t slot = slot_of(p->comm);
    if (rc == MPI_SUCCESS && p->peer >= 0 && slot != NO_SLOT && st->MPI_SOURCE >= 0)
        ipr_online_recv(op, slot, st->MPI_SOURCE, st->MPI_TAG);
}

void ipr_on_irecv(const struct ipr_params *p, int rc, int source) {
    uint32_t slot = slot_of(p->comm);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL && slot != NO_SLOT) ipr_online_irecv(p->request, slot);
}

/* Persistent requests by handle (open addressing): what MPI_Start posts. */
#define IPR_PERSISTENT 4096
static struct persistent {
    uint64_t handle;
    struct ipr_params p;
    int op, peer, tag, send;
} persistent[IPR_PERSISTENT];

static struct persistent *persistent_slot(uint64_t h, int insert) {
    size_t i = (size_t)((h >> 3) % IPR_PERSISTENT);
    for (size_t k = 0; k < IPR_PERSISTENT; k++, i = (i + 1) % IPR_PERSISTENT) {
        if (persistent[i].handle == h) return &persistent[i];
        if (persistent[i].handle == 0) return insert ? &persistent[i] : NULL;
    }
    return NULL;
}

void ipr_on_persistent(int op, const struct ipr_params *p, int rc, int peer, int tag, int send) {
    static int warned;
    if (rc != MPI_SUCCESS || p->request == 0) return;
    struct persistent *e = persistent_slot(p->request, 1);
    if (e == NULL) {
        if (!warned) fprintf(stderr, "interposer: warning: online mode tracks at most %d persistent requests; later starts carry no virtual time\n", IPR_PERSISTENT);
        warned = 1;
        return;
    }
    e->handle = p->request;
    e->p = *p;
    e->op = op;
    e->peer = peer;
    e->tag = tag;
    e->send = send;
}

void ipr_on_start(int rc, uint64_t n, const uint64_t *handles) {
    if (rc != MPI_SUCCESS || handles == NULL) return;
    for (uint64_t i = 0; i < n; i++) {
        struct persistent *e = persistent_slot(handles[i], 0);
        if (e == NULL) continue;
        if (e->send) ipr_on_isend(e->op, &e->p, rc, e->peer, e->tag);
        else ipr_on_irecv(&e->p, rc, e->peer);
    }
}

/* Requests `handles[0..n]` completed in call `op`: the receives among
 * them (known to the clock) await their companions, then the clock
 * waits for them all. */
void ipr_on_complete(int op, int rc, uint64_t n, const uint64_t *handles, const MPI_Status *statuses) {
    if (rc != MPI_SUCCESS || handles == NULL) return;
    for (uint64_t i = 0; i < n && statuses != MPI_STATUSES_IGNORE; i++) {
        int cancelled = 0;
        if (PMPI_Test_cancelled(&statuses[i], &cancelled) != MPI_SUCCESS) cancelled = 0;
        ipr_online_completed(op, handles[i], statuses[i].MPI_SOURCE, statuses[i].MPI_TAG, cancelled);
    }
    ipr_online_wait(op, handles, n);
}

/* MPI_Waitsome/Testsome: `ids` holds the `nids - done` handles, then the
 * indices of the `done` requests completed, whose statuses are `sts`. */
void ipr_on_some(int op, int rc, const uint64_t *ids, uint64_t nids, int done, const MPI_Status *sts) {
    static uint64_t *h;
    static uint64_t cap;
    if (rc != MPI_SUCCESS || ids == NULL || done <= 0 || (uint64_t)done > nids) return;
    uint64_t count = nids - (uint64_t)done, n = 0;
    if ((uint64_t)done > cap) {
        uint64_t *g = realloc(h, (size_t)done * sizeof *g);
        if (g == NULL) return;
        h = g;
        cap = (uint64_t)done;
    }
    for (int i = 0; i < done; i++)
        if (ids[count + i] < count) h[n++] = ids[ids[count + i]];
    if (n == (uint64_t)done) ipr_on_complete(op, rc, n, h, sts);
}

/* Messages matched by MPI_Mprobe/Improbe and not yet received, by
 * message handle: their communicator and the probe's status (source and
 * tag), which MPI_Mrecv/Imrecv do not name. */
struct probed {
    struct probed *next;
    uint64_t message;
    uint32_t comm;
    MPI_Status st;
};
static struct probed *probed;

static struct probed *probed_take(uint64_t message) {
    for (struct probed **e = &probed; *e != NULL; e = &(*e)->next)
        if ((*e)->message == message) {
            struct probed *found = *e;
            *e = found->next;
            return found;
        }
    return NULL;
}

/* A probe matched a message (handle p->request, status `st`). */
void ipr_on_mprobe(const struct ipr_params *p, int rc, const MPI_Status *st) {
    if (rc != MPI_SUCCESS || p->request == 0 || st->MPI_SOURCE < 0 || slot_of(p->comm) == NO_SLOT) return;
    struct probed *e = malloc(sizeof *e);
    if (e == NULL) return;
    e->message = p->request;
    e->comm = p->comm;
    e->st = *st;
    e->next = probed;
    probed = e;
}

/* MPI_Mrecv of the message a probe matched (handle in p->bytes2): a
 * blocking receive from the probe's source with its tag (as the replay
 * matches MPI_Mrecv: see online.rs). */
void ipr_on_mrecv(int op, const struct ipr_params *p, int rc) {
    struct probed *e = probed_take(p->bytes2);
    if (e == NULL) return;
    uint32_t slot = slot_of(e->comm);
    if (rc == MPI_SUCCESS && slot != NO_SLOT) ipr_online_recv(op, slot, e->st.MPI_SOURCE, e->st.MPI_TAG);
    free(e);
}

/* MPI_Imrecv: a nonblocking receive on the probe's communicator (its
 * completion awaits the companion, as for MPI_Irecv). */
void ipr_on_imrecv(const struct ipr_params *p, int rc) {
    struct probed *e = probed_take(p->bytes2);
    if (e == NULL) return;
    struct ipr_params q = *p;
    q.comm = e->comm;
    if (rc == MPI_SUCCESS && p->request != 0) ipr_on_irecv(&q, rc, e->st.MPI_SOURCE);
    free(e);
}

void ipr_on_sendrecv(int op, const struct ipr_params *p, int rc, int dest, int sendtag, const MPI_Status *st) {
    uint32_t slot = slot_of(p->comm);
    if (rc == MPI_SUCCESS && slot != NO_SLOT) ipr_online_sendrecv(op, p, slot, dest, sendtag, st->MPI_SOURCE, st->MPI_TAG);
}

/* A collective (or, `nonblocking`, its post): on a communicator without a
 * shadow it costs no virtual time. */
void ipr_on_coll(int op, const struct ipr_params *p, int rc, const uint64_t *list, uint64_t nlist, int nonblocking) {
    if (rc != MPI_SUCCESS) return;
    uint32_t slot = slot_of(p->comm);
    if (slot == NO_SLOT) ipr_online_unmodelled(op);
    else ipr_online_coll(op, p, slot, list, nlist, nonblocking);
}

/* An MPI-IO call: `File_open` names its communicator's shadow (the file's
 * collective accesses gather on it); the other calls find it by file id. */
void ipr_on_io(int op, const struct ipr_params *p, int rc, const uint64_t *list, uint64_t nlist) {
    if (rc != MPI_SUCCESS) return;
    ipr_online_io(op, p, op == IPR_OP_MPI_File_open ? slot_of(p->comm) : NO_SLOT, list, nlist);
}

/* MPI_Finalize: once every rank is here (so that none waits for a peer
 * that is still computing), the clock's work is drained (the watchdog
 * bounds it), and rank 0 reports every rank's figures. */
void ipr_online_finalize(void) {
    if (!ipr_online_active) return;
    isolate_stop();
    int rank = 0, n = 0, flag = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Request b;
    if (PMPI_Ibarrier(report_comm, &b) == MPI_SUCCESS)
        while (PMPI_Test(&b, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) {
            ipr_online_pump();
            sched_yield();
        }
    ipr_online_drain(IPR_OP_MPI_Finalize);
    /* Messages probed and never received (an erroneous program). */
    while (probed != NULL) {
        struct probed *e = probed;
        probed = e->next;
        free(e);
    }
    double mine[IPR_STATS];
    char why[IPR_REASON];
    double *all = rank == 0 ? malloc((size_t)n * IPR_STATS * sizeof *all) : NULL;
    char *whys = rank == 0 ? malloc((size_t)n * IPR_REASON) : NULL;
    ipr_online_stats(mine);
    ipr_online_reason(why, IPR_REASON);
    /* Every rank takes part in both gathers, whatever failed locally. */
    int ok = rank != 0 || (all != NULL && whys != NULL);
    if (PMPI_Gather(mine, IPR_STATS, MPI_DOUBLE, all, IPR_STATS, MPI_DOUBLE, 0, report_comm) != MPI_SUCCESS) ok = 0;
    if (PMPI_Gather(why, IPR_REASON, MPI_CHAR, whys, IPR_REASON, MPI_CHAR, 0, report_comm) != MPI_SUCCESS) ok = 0;
    if (rank == 0 && ok) ipr_online_report(all, whys, IPR_REASON, n);
    ipr_online_stop();
    free(all);
    free(whys);
    ipr_online_active = 0;
}

extern int ipr_ghost_wanted(void);
extern void ipr_ghost_predict(void);

void ipr_online_ghosts(void) {
    if (!ipr_ghost_wanted()) return;
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* Every rank's trace file is complete past this barrier. */
    if (PMPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return;
    if (rank == 0) ipr_ghost_predict();
}

/* MPI_Wtime: real time, unless INTERPOSER_VIRTUAL_WTIME=1 in online mode. */
double MPI_Wtime(void) {
    double t = PMPI_Wtime();
    return ipr_online_active ? ipr_online_wtime(t) : t;
}

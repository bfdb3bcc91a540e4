/*
 * Online mode, MPI side: shadow communicators and the messages that carry
 * virtual times (see online.h; the clock is in interposer/src/online.rs).
 *
 * Every application communicator (by the recorder's id) gets two shadow
 * duplicates: `fwd` carries, right after each payload and with the same
 * tag, a companion {virtual send time, bytes} from sender to receiver
 * (MPI's non-overtaking rule keeps each pair matched; the receiver takes
 * source and tag from the payload's status, so wildcards work), and the
 * entry-time allgather of collectives; `ack` carries the receiver's
 * virtual post time back to the sender of a message the model sends by
 * rendezvous. The clock asks for an acknowledgement only when it next
 * needs its own time (online.rs), and every wait on a shadow operation
 * completes this rank's finished receives meanwhile, so the protocol
 * waits only where the application itself would. A nonblocking
 * collective posts a nonblocking allgather of post times on `fwd` (never
 * a blocking exchange: the rank may go on to wait for a peer that has not
 * posted the collective yet), which the clock completes after the
 * application's request. A matched probe remembers its message's
 * communicator, source and tag, with which MPI_Mrecv/Imrecv take the
 * companion. Only PMPI_ calls are made here, so nothing is recorded.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "online.h"

#include <sched.h>
#include <stdio.h>

int ipr_online_active = 0;

/* Rust side (interposer/src/online.rs). */
extern int ipr_online_enabled(void);
extern void ipr_online_comm(uint32_t id, const int *members, int n);
extern double ipr_online_now(void);
extern int ipr_online_send(int32_t peer, uint64_t bytes, uint32_t comm, int local, int tag, double *post);
extern int ipr_online_recv(int32_t src, uint64_t bytes, double send_post, double *recv_post);
extern int ipr_online_isend(uint64_t req, int32_t peer, uint64_t bytes, uint32_t comm, int local, int tag, double *post);
extern void ipr_online_irecv(uint64_t req, uint32_t comm);
extern int ipr_online_pending(uint64_t req, uint32_t *comm, int *local, int *tag);
extern int ipr_online_recv_matched(uint64_t req, int32_t src, uint64_t bytes, double send_post, double *recv_post);
extern void ipr_online_wait(const uint64_t *reqs, uint64_t n);
extern int ipr_online_sendrecv(int32_t dst, uint64_t bytes, int32_t src, uint32_t comm, int local, int tag, double *post);
extern int ipr_online_sendrecv_recv(int32_t src, uint64_t bytes, double send_post, double *recv_post);
extern void ipr_online_sendrecv_end(void);
extern void ipr_online_coll(int op, const struct ipr_params *p, const double *entries, int n, const uint64_t *list, uint64_t nlist);
extern void ipr_online_stats(double *out);
extern void ipr_online_report(const double *all, int n);
extern uint64_t ipr_online_recvs(uint64_t *handles, uint32_t *comms, uint64_t cap);
extern int ipr_online_icoll(int op, const struct ipr_params *p, const uint64_t *list, uint64_t nlist, double *post);
extern void ipr_online_unmodelled(int op);
extern int ipr_online_request_free(uint64_t req);
extern double ipr_online_wtime(double real);
extern void ipr_online_hold(int on);

#define IPR_STATS 6

struct shadow {
    int used;
    MPI_Comm app, fwd, ack;
};

static struct shadow *shadows;
static uint32_t nshadows;
static double *scratch_d;
static int scratch_n;
static MPI_Status *scratch_st;
static int scratch_stn;

static struct shadow *shadow_of(uint32_t id) {
    return id < nshadows && shadows[id].used ? &shadows[id] : NULL;
}

static double *doubles(int n) {
    if (n > scratch_n) {
        double *d = realloc(scratch_d, (size_t)n * sizeof *d);
        if (d == NULL) return NULL;
        scratch_d = d;
        scratch_n = n;
    }
    return scratch_d;
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

/* Duplicates `comm` twice as shadow `id` and tells the clock its members. */
static void make_shadow(uint32_t id, MPI_Comm comm) {
    if (id >= nshadows) {
        uint32_t n = id + 16;
        struct shadow *s = realloc(shadows, n * sizeof *s);
        if (s == NULL) return;
        memset(s + nshadows, 0, (n - nshadows) * sizeof *s);
        shadows = s;
        nshadows = n;
    }
    struct shadow *s = &shadows[id];
    if (s->used) ipr_on_comm_free(id);
    if (PMPI_Comm_dup(comm, &s->fwd) != MPI_SUCCESS) return;
    if (PMPI_Comm_dup(comm, &s->ack) != MPI_SUCCESS) {
        PMPI_Comm_free(&s->fwd);
        return;
    }
    s->app = comm;
    s->used = 1;
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
    ipr_online_comm(id, in + n, n);
    free(in);
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
    make_shadow(0, MPI_COMM_WORLD);
    ipr_online_active = shadow_of(0) != NULL;
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
    struct shadow *s = shadow_of(id);
    if (s == NULL || id == 0) return;
    PMPI_Comm_free(&s->fwd);
    PMPI_Comm_free(&s->ack);
    s->used = 0;
}

/* Handles every pending nonblocking receive that MPI already completed
 * (MPI_Request_get_status leaves the request to the application): takes
 * its companion and acknowledges it now, so that no peer waits for this
 * rank's acknowledgement while this rank waits in a shadow operation. */
static void progress_receives(void);

/* Waits for shadow request `r`, completing this rank's finished receives
 * meanwhile (see progress_receives). */
static int wait_progress(MPI_Request *r) {
    int flag = 0;
    for (;;) {
        if (PMPI_Test(r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 0;
        if (flag) return 1;
        progress_receives();
        sched_yield();
    }
}

/* Receives the companion of a message whose payload status is `st` on
 * shadow `s`; returns 0 when there is none (MPI_PROC_NULL). */
static int companion(struct shadow *s, const MPI_Status *st, double msg[2]) {
    MPI_Request r;
    if (st->MPI_SOURCE < 0) return 0;
    if (PMPI_Irecv(msg, 2, MPI_DOUBLE, st->MPI_SOURCE, st->MPI_TAG, s->fwd, &r) != MPI_SUCCESS) return 0;
    return wait_progress(&r);
}

static void acknowledge(struct shadow *s, const MPI_Status *st, double recv_post) {
    PMPI_Send(&recv_post, 1, MPI_DOUBLE, st->MPI_SOURCE, st->MPI_TAG, s->ack);
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

/* Nonblocking receive `h` on shadow `s` completed with status `st`: takes
 * its companion and acknowledges a rendezvous message. A cancelled
 * receive has none (its clock request completes at once). */
static void recv_completed(uint64_t h, struct shadow *s, const MPI_Status *st) {
    double msg[2], recv_post = 0.0;
    int cancelled = 0;
    if (PMPI_Test_cancelled(st, &cancelled) == MPI_SUCCESS && cancelled) return;
    if (!companion(s, st, msg)) return;
    int32_t src = world_rank(s->app, st->MPI_SOURCE);
    if (!ipr_online_recv_matched(h, src, (uint64_t)msg[1], msg[0], &recv_post)) acknowledge(s, st, recv_post);
}

/* Handles the current wait or test completed: MPI freed them already. */
static const uint64_t *completing;
static uint64_t ncompleting;

static int is_completing(uint64_t h) {
    for (uint64_t i = 0; i < ncompleting; i++)
        if (completing[i] == h) return 1;
    return 0;
}

static void progress_receives(void) {
    enum { CAP = 64 };
    static int busy;
    uint64_t h[CAP];
    uint32_t comm[CAP];
    if (busy) return;
    busy = 1;
    uint64_t n = ipr_online_recvs(h, comm, CAP);
    for (uint64_t i = 0; i < n; i++) {
        struct shadow *s = shadow_of(comm[i]);
        MPI_Request r;
        MPI_Status st;
        int flag = 0;
        if (s == NULL || is_completing(h[i])) continue;
        memcpy(&r, &h[i], sizeof r);
        if (PMPI_Request_get_status(r, &flag, &st) == MPI_SUCCESS && flag) recv_completed(h[i], s, &st);
    }
    busy = 0;
}

/* Called by the clock when it needs the receiver's post time of a
 * rendezvous message sent to rank `local` of communicator `comm` with
 * `tag` (it asks as late as possible: see online.rs). */
int ipr_online_await_ack(uint32_t comm, int local, int tag, double *recv_post) {
    struct shadow *s = shadow_of(comm);
    MPI_Request r;
    if (s == NULL || PMPI_Irecv(recv_post, 1, MPI_DOUBLE, local, tag, s->ack, &r) != MPI_SUCCESS) return 0;
    return wait_progress(&r);
}

void ipr_on_send(const struct ipr_params *p, int rc, int dest, int tag) {
    struct shadow *s = shadow_of(p->comm);
    if (rc != MPI_SUCCESS || p->peer < 0 || s == NULL) return;
    double msg[2];
    ipr_online_send(p->peer, p->bytes, p->comm, dest, tag, &msg[0]);
    msg[1] = (double)p->bytes;
    PMPI_Send(msg, 2, MPI_DOUBLE, dest, tag, s->fwd);
}

void ipr_on_recv(const struct ipr_params *p, int rc, const MPI_Status *st) {
    struct shadow *s = shadow_of(p->comm);
    double msg[2], recv_post = 0.0;
    if (rc != MPI_SUCCESS || p->peer < 0 || s == NULL || !companion(s, st, msg)) return;
    if (!ipr_online_recv(p->peer, (uint64_t)msg[1], msg[0], &recv_post)) acknowledge(s, st, recv_post);
}

/* A blocking receive's online work (its companion, the clock, the
 * acknowledgement) waits for the entry of the next recorded call, or for
 * MPI_Wtime or MPI_Finalize: the compute block that follows the receive
 * then runs as the application left it (in time, its caches and branch
 * predictors), not after the model's code, which made ring's traced
 * blocks 18 ns instead of 3 and its online prediction +10 %. The clock
 * meets the same events in the same order: the receive's block was
 * charged at its end, the receive's rule runs next, and the running block
 * is held back (ipr_online_hold) until its own call charges it. A peer
 * waiting for the acknowledgement waits until this rank's next MPI call,
 * which any rank that can block on it makes first. */
int ipr_online_later = 0;
static struct {
    struct ipr_params p;
    int rc;
    MPI_Status st;
} later;

void ipr_on_recv_later(const struct ipr_params *p, int rc, const MPI_Status *st) {
    if (ipr_online_later) ipr_online_run_later();
    later.p = *p;
    later.rc = rc;
    later.st = *st;
    ipr_online_later = 1;
}

void ipr_online_run_later(void) {
    if (!ipr_online_later) return;
    ipr_online_later = 0;
    ipr_online_hold(1);
    ipr_on_recv(&later.p, later.rc, &later.st);
    ipr_online_hold(0);
}

void ipr_on_isend(const struct ipr_params *p, int rc, int dest, int tag) {
    struct shadow *s = shadow_of(p->comm);
    if (rc != MPI_SUCCESS || p->peer < 0 || s == NULL) return;
    double msg[2];
    ipr_online_isend(p->request, p->peer, p->bytes, p->comm, dest, tag, &msg[0]);
    msg[1] = (double)p->bytes;
    PMPI_Send(msg, 2, MPI_DOUBLE, dest, tag, s->fwd);
}

void ipr_on_irecv(const struct ipr_params *p, int rc, int source) {
    if (rc != MPI_SUCCESS || source == MPI_PROC_NULL || shadow_of(p->comm) == NULL) return;
    ipr_online_irecv(p->request, p->comm);
}

/* Persistent requests by handle (open addressing): what MPI_Start posts. */
#define IPR_PERSISTENT 4096
static struct persistent {
    uint64_t handle;
    struct ipr_params p;
    int peer, tag, send;
} persistent[IPR_PERSISTENT];

static struct persistent *persistent_slot(uint64_t h, int insert) {
    size_t i = (size_t)((h >> 3) % IPR_PERSISTENT);
    for (size_t k = 0; k < IPR_PERSISTENT; k++, i = (i + 1) % IPR_PERSISTENT) {
        if (persistent[i].handle == h) return &persistent[i];
        if (persistent[i].handle == 0) return insert ? &persistent[i] : NULL;
    }
    return NULL;
}

void ipr_on_persistent(const struct ipr_params *p, int rc, int peer, int tag, int send) {
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
    e->peer = peer;
    e->tag = tag;
    e->send = send;
}

void ipr_on_start(int rc, uint64_t n, const uint64_t *handles) {
    if (rc != MPI_SUCCESS || handles == NULL) return;
    for (uint64_t i = 0; i < n; i++) {
        struct persistent *e = persistent_slot(handles[i], 0);
        if (e == NULL) continue;
        if (e->send) ipr_on_isend(&e->p, rc, e->peer, e->tag);
        else ipr_on_irecv(&e->p, rc, e->peer);
    }
}

void ipr_on_complete(int rc, uint64_t n, const uint64_t *handles, const MPI_Status *statuses) {
    if (rc != MPI_SUCCESS || handles == NULL) return;
    /* Receives first, without waiting for anything of this rank's own:
     * their acknowledgements may be what the peer waits for. */
    completing = handles;
    ncompleting = n;
    for (uint64_t i = 0; i < n && statuses != MPI_STATUSES_IGNORE; i++) {
        uint32_t comm = 0;
        if (ipr_online_pending(handles[i], &comm, NULL, NULL) != 1) continue;
        struct shadow *s = shadow_of(comm);
        if (s != NULL) recv_completed(handles[i], s, &statuses[i]);
    }
    ncompleting = 0;
    ipr_online_wait(handles, n);
}

/* MPI_Waitsome/Testsome: `ids` holds the `nids - done` handles, then the
 * indices of the `done` requests completed, whose statuses are `sts`. */
void ipr_on_some(int rc, const uint64_t *ids, uint64_t nids, int done, const MPI_Status *sts) {
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
    if (n == (uint64_t)done) ipr_on_complete(rc, n, h, sts);
}

/* A probe matched a message (handle p->request, status `st`). */
void ipr_on_mprobe(const struct ipr_params *p, int rc, const MPI_Status *st) {
    if (rc != MPI_SUCCESS || p->request == 0 || st->MPI_SOURCE < 0 || shadow_of(p->comm) == NULL) return;
    struct probed *e = malloc(sizeof *e);
    if (e == NULL) return;
    e->message = p->request;
    e->comm = p->comm;
    e->st = *st;
    e->next = probed;
    probed = e;
}

/* MPI_Mrecv of the message a probe matched (handle in p->bytes2): a
 * blocking receive from the probe's source with its tag, whose companion
 * is taken now, in receive order (as the replay matches MPI_Mrecv: see
 * online.rs). */
void ipr_on_mrecv(const struct ipr_params *p, int rc) {
    struct probed *e = probed_take(p->bytes2);
    if (e == NULL) return;
    struct shadow *s = shadow_of(e->comm);
    MPI_Status st = e->st;
    double msg[2], recv_post = 0.0;
    free(e);
    if (rc != MPI_SUCCESS || s == NULL || !companion(s, &st, msg)) return;
    if (!ipr_online_recv(world_rank(s->app, st.MPI_SOURCE), (uint64_t)msg[1], msg[0], &recv_post))
        acknowledge(s, &st, recv_post);
}

/* MPI_Imrecv: a nonblocking receive on the probe's communicator (its
 * completion takes the companion, as for MPI_Irecv). */
void ipr_on_imrecv(const struct ipr_params *p, int rc) {
    struct probed *e = probed_take(p->bytes2);
    if (e == NULL) return;
    struct ipr_params q = *p;
    q.comm = e->comm;
    if (rc == MPI_SUCCESS && p->request != 0) ipr_on_irecv(&q, rc, e->st.MPI_SOURCE);
    free(e);
}

/* Nonblocking collectives whose shadow allgather of post times is in
 * flight, by application request (0 once the application freed it). */
struct nbc {
    struct nbc *next;
    uint64_t request;
    MPI_Request r;
    double post;
    int n;
    double entries[];
};
static struct nbc *nbcs;

void ipr_on_icoll(int op, const struct ipr_params *p, int rc, const uint64_t *list, uint64_t nlist) {
    struct shadow *s = shadow_of(p->comm);
    double post = 0.0;
    if (rc != MPI_SUCCESS) return;
    if (s == NULL) {
        ipr_online_unmodelled(op);
        return;
    }
    int n = ipr_online_icoll(op, p, list, nlist, &post);
    if (n <= 0) return;
    struct nbc *e = malloc(sizeof *e + (size_t)n * sizeof(double));
    if (e == NULL) return;
    e->request = p->request;
    e->post = post;
    e->n = n;
    if (PMPI_Iallgather(&e->post, 1, MPI_DOUBLE, e->entries, 1, MPI_DOUBLE, s->fwd, &e->r) != MPI_SUCCESS) {
        free(e);
        return;
    }
    e->next = nbcs;
    nbcs = e;
}

static struct nbc *nbc_take(uint64_t request) {
    for (struct nbc **e = &nbcs; *e != NULL; e = &(*e)->next)
        if ((*e)->request == request) {
            struct nbc *found = *e;
            *e = found->next;
            return found;
        }
    return NULL;
}

/* Called by the clock when it needs the post times of nonblocking
 * collective `req`'s `n` members (after its request completed). */
int ipr_online_await_coll(uint64_t req, double *entries, int n) {
    struct nbc *e = req != 0 ? nbc_take(req) : NULL;
    if (e == NULL) return 0;
    int ok = wait_progress(&e->r) && e->n == n;
    if (ok) memcpy(entries, e->entries, (size_t)n * sizeof(double));
    free(e);
    return ok;
}

/* MPI_Request_free: a nonblocking collective's exchange goes on unseen. */
void ipr_on_request_free(int rc, uint64_t req) {
    if (rc != MPI_SUCCESS || !ipr_online_request_free(req)) return;
    for (struct nbc *e = nbcs; e != NULL; e = e->next)
        if (e->request == req) e->request = 0;
}

void ipr_on_sendrecv(const struct ipr_params *p, int rc, int dest, int sendtag, const MPI_Status *st) {
    struct shadow *s = shadow_of(p->comm);
    if (rc != MPI_SUCCESS || s == NULL) return;
    double msg[2], in[2], recv_post = 0.0;
    ipr_online_sendrecv(p->peer, p->bytes, p->peer2, p->comm, dest, sendtag, &msg[0]);
    msg[1] = (double)p->bytes;
    if (p->peer >= 0) PMPI_Send(msg, 2, MPI_DOUBLE, dest, sendtag, s->fwd);
    if (p->peer2 >= 0 && companion(s, st, in) && !ipr_online_sendrecv_recv(p->peer2, (uint64_t)in[1], in[0], &recv_post))
        acknowledge(s, st, recv_post);
    ipr_online_sendrecv_end();
}

void ipr_on_coll(int op, const struct ipr_params *p, int rc, const uint64_t *list, uint64_t nlist) {
    struct shadow *s = shadow_of(p->comm);
    int n = 0;
    if (rc != MPI_SUCCESS) return;
    if (s == NULL) {
        ipr_online_unmodelled(op);
        return;
    }
    if (PMPI_Comm_size(s->fwd, &n) != MPI_SUCCESS) return;
    double entry = ipr_online_now(), *entries = doubles(n);
    if (entries == NULL) return;
    MPI_Request r;
    if (PMPI_Iallgather(&entry, 1, MPI_DOUBLE, entries, 1, MPI_DOUBLE, s->fwd, &r) == MPI_SUCCESS && wait_progress(&r))
        ipr_online_coll(op, p, entries, n, list, nlist);
}

void ipr_online_finalize(void) {
    struct shadow *w = shadow_of(0);
    if (!ipr_online_active || w == NULL) return;
    ipr_online_run_later();
    isolate_stop();
    int rank = 0, n = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    double mine[IPR_STATS], *all = rank == 0 ? doubles(n * IPR_STATS) : NULL;
    ipr_online_stats(mine);
    /* Exchanges of nonblocking collectives never waited (freed requests). */
    while (nbcs != NULL) {
        struct nbc *e = nbcs;
        nbcs = e->next;
        wait_progress(&e->r);
        free(e);
    }
    /* Messages probed and never received (an erroneous program). */
    while (probed != NULL) {
        struct probed *e = probed;
        probed = e->next;
        free(e);
    }
    MPI_Request r;
    int ok = PMPI_Igather(mine, IPR_STATS, MPI_DOUBLE, all, IPR_STATS, MPI_DOUBLE, 0, w->fwd, &r) == MPI_SUCCESS &&
             wait_progress(&r);
    if (rank == 0 && ok && all != NULL) ipr_online_report(all, n);
    ipr_online_active = 0;
}

/* MPI_Wtime: real time, unless INTERPOSER_VIRTUAL_WTIME=1 in online mode. */
double MPI_Wtime(void) {
    if (ipr_online_later) ipr_online_run_later();
    double t = PMPI_Wtime();
    return ipr_online_active ? ipr_online_wtime(t) : t;
}

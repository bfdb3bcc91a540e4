/*
 * The recorder's fast path: what every generated wrapper runs around its
 * PMPI call (ipr_begin before, ipr_end after), inlined.
 *
 * A call whose timing needs nothing but the TSC is kept as a raw record
 * (op, return address, entry and exit ticks, plain parameters) in the
 * thread's ring; the Rust recorder encodes the ring when it fills
 * (ipr_drain) or before any call it handles itself, in call order, with
 * the same rules as for a call it records live (interposer/src/fast.rs).
 * Everything else takes the slow path, the Rust recorder's own entry
 * points: a nested call, a thread without a ring, online mode, hardware
 * counters, a block or call long enough for its thread CPU time to be
 * read, and
 * the calls that carry a list (ipr_end_list).
 *
 * The two rdtsc are most of what remains; the rest is a dozen stores,
 * with no trip through Rust's thread-local state, no encoding and no
 * append (the slow path's costs).
 */
#ifndef IPR_FAST_H
#define IPR_FAST_H
#include <stdint.h>

#include "types.h" /* struct ipr_params, ipr_raw, ipr_fast */

/* This thread's fast-path state, NULL when it records nothing yet (set by
 * the Rust recorder through ipr_fast_set, in lifecycle.c). Initial-exec:
 * one load off %fs, where a global-dynamic variable costs a call. */
extern __thread struct ipr_fast *ipr_fast_tls __attribute__((tls_model("initial-exec")));

/* Rust side (interposer/src/hooks.rs). `tick`: the TSC at the call's
 * entry, 0 when not read. */
extern int ipr_begin_slow(int op, const void *caller, uint64_t tick);
extern void ipr_end_slow(int op, int rc, const struct ipr_params *p);
extern void ipr_end_list_slow(int op, int rc, uint64_t n, const struct ipr_params *p);
extern void ipr_drain(void);
extern void ipr_drain_some(void);

/* Calls that usually wait for another rank (blocking receives, waits,
 * synchronous sends, blocking collectives): on entry the recorder encodes
 * a few kept calls, in time the rank would spend polling for its peers.
 * Encoding the ring all at once when it fills puts the whole of it on
 * the critical path of whoever waits for this rank. */
#include "ops_gen.h" /* IPR_OP_<MPI name> and ipr_waits(op), from the op table */

#if defined(__x86_64__)
#include <x86intrin.h>
#define IPR_FAST 1
#endif

/* Online mode (interposer/src/online/pump.rs): the clock's queued work
 * runs at the entry of the next recorded call, after its start was read,
 * so that the compute block after a call runs as the application left it.
 * Online mode keeps the fast path off, so only the slow entry looks. */
extern int ipr_online_work;
extern void ipr_online_pump(void);

static inline int ipr_begin_slow_entry(int op, const void *caller, uint64_t tick) {
    int on = ipr_begin_slow(op, caller, tick);
    if (on && ipr_online_work) ipr_online_pump();
    return on;
}

/* A call the recorder began on its slow path: 2 in regions mode (the
 * thread's ring, which that call may have attached, says so), else 1. */
static inline int ipr_began_slow(int on) {
    struct ipr_fast *f = ipr_fast_tls;
    return on && f != NULL && f->lean ? 2 : on;
}

/* Starts a call; returns 0 when the wrapper must not record it, 1 when it
 * must collect the call's parameters and end it with ipr_end or
 * ipr_end_list, 2 (regions mode) when it must end it with ipr_end and
 * parameters all zero. */
static inline int ipr_begin(int op, const void *caller) {
#ifdef IPR_FAST
    struct ipr_fast *f = ipr_fast_tls;
    if (f != NULL) {
        if (f->in_call) return 0; /* nested: an MPI call made inside one */
        if (!f->on) return ipr_began_slow(ipr_begin_slow_entry(op, caller, f->tsc ? __rdtsc() : 0));
        uint64_t now = __rdtsc();
        if (now - f->last_end >= f->min_ticks) return ipr_began_slow(ipr_begin_slow_entry(op, caller, now));
        f->op = op;
        f->caller = (uint64_t)(uintptr_t)caller;
        f->start = now;
        f->in_call = 1;
        if (ipr_waits(op) && f->len != f->skip) ipr_drain_some();
        return 1 + (int)f->lean;
    }
#endif
    return ipr_began_slow(ipr_begin_slow_entry(op, caller, 0));
}

/* After the recorder's slow end: the next compute block starts now, when
 * the recorder's ticks are the TSC's (not before its own code returned,
 * which after a heavy call, such as one of online mode, runs cold). */
static inline void ipr_slow_ended(void) {
#ifdef IPR_FAST
    struct ipr_fast *f = ipr_fast_tls;
    if (f != NULL && f->tsc && !f->in_call) f->last_end = f->slow_end = __rdtsc();
#endif
}

/* Ends a call begun with ipr_begin; `rc` is the PMPI result. */
static inline void ipr_end(int op, int rc, const struct ipr_params *p) {
#ifdef IPR_FAST
    struct ipr_fast *f = ipr_fast_tls;
    if (f != NULL && f->in_call == 1) {
        uint64_t now = __rdtsc();
        if (now - f->start < f->min_ticks) {
            uint32_t n = f->len;
            struct ipr_raw *r = &f->ring[n];
            r->op = op;
            r->failed = rc != MPI_SUCCESS;
            r->caller = f->caller;
            r->start = f->start;
            r->end = now;
            /* Field by field: a struct copy loads 16 bytes at a time right
             * after the wrapper's narrow stores, a store-forwarding stall.
             * Regions mode reads no parameters (the ring's stay zero). */
            if (!f->lean) {
                r->params.peer = p->peer;
                r->params.tag = p->tag;
                r->params.bytes = p->bytes;
                r->params.comm = p->comm;
                r->params.root = p->root;
                r->params.request = p->request;
                r->params.peer2 = p->peer2;
                r->params.tag2 = p->tag2;
                r->params.bytes2 = p->bytes2;
            }
            f->last_end = now;
            /* After the record's stores: a signal handler on another
             * thread reads the records below len. */
            __atomic_store_n(&f->len, n + 1, __ATOMIC_RELEASE);
            f->in_call = 0;
            if (n + 1 >= f->cap) ipr_drain();
            return;
        }
    }
#endif
    ipr_end_slow(op, rc, p);
    ipr_slow_ended();
}

/* Ends a call whose list values are in the scratch list (always slow). */
static inline void ipr_end_list(int op, int rc, uint64_t n, const struct ipr_params *p) {
    ipr_end_list_slow(op, rc, n, p);
    ipr_slow_ended();
}

#endif

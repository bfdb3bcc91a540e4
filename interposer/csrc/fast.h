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
 * On the fast path the wrapper writes the call's parameters straight into
 * its ring slot, and everything is inlined into it: two rdtsc, a few loads
 * and compares and a dozen stores, with no call, no trip through Rust's
 * thread-local state, no encoding and no append (the slow path's costs).
 */
#ifndef IPR_FAST_H
#define IPR_FAST_H
#include <stdint.h>
#include <string.h>

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

/* The fast path is inlined into every wrapper; what it rarely runs is out
 * of line, so that the wrapper stays a leaf around its PMPI call. */
#define IPR_HOT static inline __attribute__((always_inline))
#define IPR_COLD static __attribute__((unused, noinline, cold))

/* `in_call` and `on` of struct ipr_fast read as one word: outside any
 * call, with the fast path on. */
#define IPR_GATE_OPEN ((uint64_t)1 << 32)
_Static_assert(__builtin_offsetof(struct ipr_fast, in_call) == 0 && __builtin_offsetof(struct ipr_fast, on) == 4,
               "ipr_begin reads in_call and on as one little-endian word");

/* ipr_begin's slow entry: the recorder's own. The wrapper collects the
 * call's parameters into `local`, zeroed. */
IPR_COLD int ipr_begin_cold(int op, const void *caller, uint64_t tick, struct ipr_params *local, struct ipr_params **pp) {
    memset(local, 0, sizeof *local);
    *pp = local;
    int on = ipr_begin_slow(op, caller, tick);
    if (on && ipr_online_work) ipr_online_pump();
    /* Regions mode: the thread's ring, which that call may have attached, says so. */
    struct ipr_fast *f = ipr_fast_tls;
    return on && f != NULL && f->lean ? 2 : on;
}

/* Starts a call; returns 0 when the wrapper must not record it, 1 when it
 * must collect the call's parameters into *pp and end it with ipr_end or
 * ipr_end_list, 2 (regions mode) when it must end it with ipr_end and
 * collect nothing. *pp is the record's own parameters in the ring on the
 * fast path (written in place), else `local`. */
IPR_HOT int ipr_begin(int op, const void *caller, struct ipr_params *local, struct ipr_params **pp) {
#ifdef IPR_FAST
    struct ipr_fast *f = ipr_fast_tls;
    if (__builtin_expect(f != NULL, 1)) {
        uint64_t gate;
        memcpy(&gate, f, sizeof gate);
        if (__builtin_expect(gate == IPR_GATE_OPEN, 1)) {
            uint64_t now = __rdtsc();
            if (__builtin_expect(now - f->last_end >= f->min_ticks, 0)) return ipr_begin_cold(op, caller, now, local, pp);
            f->in_call = 1;
            /* Before the slot is taken: encoding may empty the ring. */
            if (ipr_waits(op) && f->len != f->skip) ipr_drain_some();
            struct ipr_raw *r = &f->ring[f->len];
            r->op = op;
            r->caller = (uint64_t)(uintptr_t)caller;
            r->start = now;
            *pp = &r->params;
            /* Regions mode reads no parameters (the ring's stay zero). */
            if (f->lean) return 2;
            memset(&r->params, 0, sizeof r->params);
            return 1;
        }
        if (f->in_call) { /* nested: an MPI call made inside one */
            *pp = local;
            return 0;
        }
        return ipr_begin_cold(op, caller, f->tsc ? __rdtsc() : 0, local, pp);
    }
#endif
    return ipr_begin_cold(op, caller, 0, local, pp);
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

/* ipr_end's slow end. `p` may be the ring's slot, which the recorder may
 * reuse once it has encoded the calls before: it reads a copy. */
IPR_COLD void ipr_end_cold(int op, int rc, const struct ipr_params *p) {
    struct ipr_params copy = *p;
    ipr_end_slow(op, rc, &copy);
    ipr_slow_ended();
}

/* Ends a call begun with ipr_begin; `rc` is the PMPI result, `p` the *pp
 * ipr_begin gave. */
IPR_HOT void ipr_end(int op, int rc, const struct ipr_params *p) {
#ifdef IPR_FAST
    struct ipr_fast *f = ipr_fast_tls;
    if (__builtin_expect(f != NULL && f->in_call == 1, 1)) {
        uint64_t now = __rdtsc();
        uint32_t n = f->len;
        struct ipr_raw *r = &f->ring[n];
        if (__builtin_expect(now - r->start < f->min_ticks, 1)) {
            r->failed = rc != MPI_SUCCESS;
            r->end = now;
            f->last_end = now;
            /* After the record's stores: a signal handler on another
             * thread reads the records below len. */
            __atomic_store_n(&f->len, n + 1, __ATOMIC_RELEASE);
            f->in_call = 0;
            if (__builtin_expect(n + 1 >= f->cap, 0)) ipr_drain();
            return;
        }
    }
#endif
    ipr_end_cold(op, rc, p);
}

/* Ends a call whose list values are in the scratch list (always slow). */
IPR_COLD void ipr_end_list(int op, int rc, uint64_t n, const struct ipr_params *p) {
    struct ipr_params copy = *p;
    ipr_end_list_slow(op, rc, n, &copy);
    ipr_slow_ended();
}

#endif

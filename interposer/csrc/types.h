/*
 * The structs the C wrappers and the Rust recorder share. The Rust side
 * does not copy them: interposer/build.rs runs bindgen on this header
 * (no MPI in it), and src/ctypes.rs includes what it generates. Doc
 * comments here become the Rust fields' docs.
 */
#ifndef IPR_TYPES_H
#define IPR_TYPES_H
#include <stdint.h>

/** A call's plain parameters, as the wrapper fills them for the recorder. */
struct ipr_params {
    /** Peer as world rank (-1 any source, -2 proc null); Wait: status source. */
    int32_t peer;
    /** Tag (-1 any tag); v-collectives: how many list values are the send
     * side; neighbourhood collectives: the number of destinations. */
    int32_t tag;
    /** Bytes. */
    uint64_t bytes;
    /** Communicator id (0 = world). */
    uint32_t comm;
    /** Root as world rank, -1 for none; Test*, Wait*: the outcome;
     * Waitsome/Testsome: how many indices follow the handles in the list;
     * Intercomm_create: how many list members are local. */
    int32_t root;
    /** Request handle. */
    uint64_t request;
    /** Sendrecv: source world rank; new communicators: their id (-1 none);
     * MPI-IO: the file id (-1 none). */
    int32_t peer2;
    /** Sendrecv: receive tag. */
    int32_t tag2;
    /** Sendrecv: receive bytes; Mrecv/Imrecv: the message handle; MPI-IO:
     * the absolute byte offset. */
    uint64_t bytes2;
};

/** A call kept by the fast path, encoded later by the recorder. */
struct ipr_raw {
    /** Op code (simulator/src/trace/ops.tbl). */
    int32_t op;
    /** 1 when the PMPI call returned an error. */
    int32_t failed;
    /** Return address of the call. */
    uint64_t caller;
    /** Entry, ticks of the recorder's clock. */
    uint64_t start;
    /** Exit, ticks. */
    uint64_t end;
    /** The call's plain parameters, as the wrapper filled them. */
    struct ipr_params params;
};

/** A thread's fast-path state. Written by this thread only (the Rust
 * recorder updates it inside its own entry points), except `skip` (a
 * signal-time flush, under the recorder's busy flag). */
struct ipr_fast {
    /** 0 outside calls, 1 inside a call begun by the C side, 2 inside a
     * call the recorder handles itself. */
    uint32_t in_call;
    /** 1 when the C side may keep calls (set by the Rust recorder). */
    uint32_t on;
    /** Records in `ring`; `cap` is its length. A call begun by the C
     * side is written in place at `ring[len]` (op, return address, entry
     * tick, parameters) and counted when it ends there. */
    uint32_t len;
    /** Leading records already encoded: a few on entry to a call that
     * waits, or all by a signal-time flush. */
    uint32_t skip;
    /** Tick at which the running compute block started. */
    uint64_t last_end;
    /** Blocks and calls shorter than this (ticks) have their thread CPU
     * time estimated, not read: they may be kept here. UINT64_MAX when CPU
     * time is not measured (INTERPOSER_COUNTERS=off). */
    uint64_t min_ticks;
    /** Ring length. */
    uint32_t cap;
    /** 1 when the recorder's clock ticks are the TSC's: the slow path then
     * also takes its block ends here, around the recorder's own code
     * (ipr_begin_slow's tick, and slow_end). */
    uint32_t tsc;
    /** 1 in regions mode (set by the Rust recorder): the recorder uses no
     * call parameters, so the wrappers collect none (ipr_begin returns 2). */
    uint32_t lean;
    /** The TSC after the last slow end returned to the C side (0: none),
     * which the recorder takes as the next block's start. */
    uint64_t slow_end;
    /** The ring of kept calls, `cap` long. */
    struct ipr_raw *ring;
};

#endif

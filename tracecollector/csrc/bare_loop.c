/* Bare timestamp-reader loops, the reference for tracecollector's
 * resolution benchmark, with the same read instructions as the sampler.
 * tc_bare_<read>(reads, deltas) stores every delta (the caller applies
 * tracecollector's t_min rule to them); tc_bare_min_<read>(reads, &min) is
 * the textbook loop that keeps only the minimum. Both return the total
 * cycles elapsed. */
#include <stdint.h>
#include <x86intrin.h>

#define BARE_LOOP(name, READ)                                            \
    uint64_t tc_bare_##name(uint64_t reads, uint32_t *deltas) {          \
        uint64_t first = READ, prev = first, now, d, i;                  \
        for (i = 0; i < reads; i++) {                                    \
            now = READ;                                                  \
            d = now > prev ? now - prev : 0;                             \
            deltas[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;       \
            prev = now;                                                  \
        }                                                                \
        return prev - first;                                             \
    }                                                                    \
    uint64_t tc_bare_min_##name(uint64_t reads, uint64_t *min_out) {     \
        uint64_t first = READ, prev = first, now, d, i, min = UINT64_MAX;\
        for (i = 0; i < reads; i++) {                                    \
            now = READ;                                                  \
            d = now > prev ? now - prev : 0;                             \
            if (d < min) min = d;                                        \
            prev = now;                                                  \
        }                                                                \
        *min_out = min;                                                  \
        return prev - first;                                             \
    }

static inline uint64_t read_lfence(void) { _mm_lfence(); return __rdtsc(); }
static inline uint64_t read_rdtscp(void) { unsigned aux; return __rdtscp(&aux); }

BARE_LOOP(rdtsc, __rdtsc())
BARE_LOOP(lfence_rdtsc, read_lfence())
BARE_LOOP(rdtscp, read_rdtscp())

/*
 * interposer_sample.h: skip the rest of a compute loop once its
 * per-iteration time is known, and charge the skipped time to the trace
 * and the online virtual clock (opt-in; like SMPI_SAMPLE_LOCAL in SimGrid,
 * with dPerf's threshold-iteration rule, Cornea & Bourgeois: after `th`
 * iterations taking t_th in all, n iterations cost t_th / th × n).
 *
 *     #include "interposer_sample.h"
 *     long i;
 *     INTERPOSER_SAMPLE_FOR(i, n, 10, 0.02) {
 *         ... compute only: no MPI calls, no results needed later ...
 *     }
 *
 * runs iterations i = 0, 1, ... until `th` (here 10) have run, or earlier
 * once at least 3 have run and the standard error of their mean thread
 * CPU time is at most `rel` (here 2 %) of the mean (0 disables the early
 * stop); the n − ran iterations left are charged at the mean each through
 * `interposer_charge_compute`. Without the interposer (the weak symbol is
 * absent) every iteration runs. Only loops whose results the program does
 * not need may be sampled: the skipped iterations do not run.
 */
#ifndef INTERPOSER_SAMPLE_H
#define INTERPOSER_SAMPLE_H
#include <math.h>
#include <time.h>

/* In libinterposer.so: adds `seconds` of compute to the running block. */
extern void interposer_charge_compute(double seconds) __attribute__((weak));

struct interposer_sample {
    long n, ran, th;
    double rel, sum, sumsq, t0;
};

static inline double interposer_sample_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline struct interposer_sample interposer_sample_begin(long n, long th, double rel) {
    struct interposer_sample s = {n, 0, th < 1 ? 1 : th, rel, 0.0, 0.0, -1.0};
    return s;
}

/* True when the mean of the iterations so far is good enough to stop. */
static inline int interposer_sample_stable(const struct interposer_sample *s) {
    if (s->ran >= s->th) return 1;
    if (s->rel <= 0.0 || s->ran < 3) return 0;
    double k = (double)s->ran, mean = s->sum / k;
    double var = (s->sumsq - k * mean * mean) / (k - 1.0);
    return mean > 0.0 && sqrt(var > 0.0 ? var : 0.0) / sqrt(k) <= s->rel * mean;
}

/* Closes the iteration that ran (if any); sets *i and returns 1 when the
 * next one must run, else charges the rest and returns 0. */
static inline int interposer_sample_next(struct interposer_sample *s, long *i) {
    if (s->t0 >= 0.0) {
        double t = interposer_sample_cpu_s() - s->t0;
        s->sum += t;
        s->sumsq += t * t;
        s->ran++;
    }
    if (s->ran >= s->n) return 0;
    if (interposer_charge_compute != NULL && interposer_sample_stable(s)) {
        interposer_charge_compute(s->sum / (double)s->ran * (double)(s->n - s->ran));
        return 0;
    }
    *i = s->ran;
    s->t0 = interposer_sample_cpu_s();
    return 1;
}

#define INTERPOSER_SAMPLE_FOR(i, n, th, rel) \
    for (struct interposer_sample interposer_s_ = interposer_sample_begin((n), (th), (rel)); \
         interposer_sample_next(&interposer_s_, &(i));)

#endif

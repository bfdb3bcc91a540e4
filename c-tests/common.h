/* Shared helpers for the c-tests programs.
 *
 * Timing protocol (parsed by the demo and the tests): right after MPI_Init,
 * MPI_Barrier + t0 = MPI_Wtime(); the work; MPI_Barrier + t1 = MPI_Wtime();
 * then rank 0 prints exactly one line "wall_s=<seconds, %.6f>".
 */
#ifndef CTESTS_COMMON_H
#define CTESTS_COMMON_H

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Compute that is exact in a real run and under SimGrid's SMPI alike:
 * `seconds` of this thread's CPU time, spun on its CPU-time clock (a
 * block costs its CPU time whatever else the machine runs), or
 * smpi_execute() of the same seconds when built with smpicc. */
static inline void exact_compute(double seconds)
{
#ifdef SMPI_H
    smpi_execute(seconds);
#else
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    while ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) < seconds);
#endif
}

/* Parses argv[i] as an integer in [lo, hi] into *out, or keeps *out when
 * argc <= i. Returns 0 on success, -1 (after printing why on rank 0) on a
 * malformed or out-of-range value. */
static int parse_arg(int argc, char **argv, int i, const char *name, long lo, long hi, long *out, int rank)
{
    if (argc <= i)
        return 0;
    char *end = NULL;
    errno = 0;
    long v = strtol(argv[i], &end, 10);
    if (errno != 0 || end == argv[i] || *end != '\0' || v < lo || v > hi) {
        if (rank == 0)
            fprintf(stderr, "%s: bad %s '%s' (expected an integer in [%ld, %ld])\n", argv[0], name, argv[i], lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Prints usage on rank 0 and leaves with status 2 on every rank. */
static void usage_exit(const char *prog, const char *usage, int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: %s %s\n", prog, usage);
    MPI_Finalize();
    exit(2);
}

/* The start of the timed region: barrier, then MPI_Wtime. */
static double timed_start(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime();
}

/* The end of the timed region: barrier, MPI_Wtime, and rank 0 prints wall_s. */
static void timed_end(double t0, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (rank == 0) {
        printf("wall_s=%.6f\n", t1 - t0);
        fflush(stdout);
    }
}

#endif

/* A compute loop between two barriers, sampled or not (the test program of
 * interposer_sample.h). usage: sampled <iters> <sample: 0|1>
 * Rank 0 prints "ran=<iterations that ran>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "interposer_sample.h"

static volatile double sink;

static void work(void) {
    double acc = sink; /* a volatile read: every call computes */
    for (int k = 0; k < 400000; k++) acc = acc * 0.999999 + 1e-6;
    sink = acc;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long n = argc > 1 ? atol(argv[1]) : 100, ran = 0, i;
    int sample = argc > 2 && atoi(argv[2]) != 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (sample) {
        INTERPOSER_SAMPLE_FOR(i, n, 8, 0.0) {
            work();
            ran++;
        }
    } else {
        for (i = 0; i < n; i++) {
            work();
            ran++;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("ran=%ld\n", ran);
    MPI_Finalize();
    return 0;
}

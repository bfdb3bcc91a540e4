/* Rendezvous-size exchanges in the orders that make a naive online
 * protocol deadlock (the test program of online mode's acknowledgements).
 * usage: waits <iters>; ranks pair up (0-1, 2-3, ...). Each iteration:
 * Isend, Irecv, Wait(send), Wait(recv); then one side Sends (blocking)
 * while the other has an Irecv pending behind its own blocking Send.
 * Rank 0 prints "sum=<checksum>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 16384 /* doubles: 128 KiB */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = argc > 1 ? atol(argv[1]) : 10;
    int peer = rank ^ 1;
    double *a = calloc(N, sizeof *a), *b = calloc(N, sizeof *b), sum = 0.0;
    if (peer >= size) peer = MPI_PROC_NULL;
    for (long it = 0; it < iters; it++) {
        MPI_Request s, r;
        a[0] = (double)(rank + it);
        MPI_Isend(a, N, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &s);
        MPI_Irecv(b, N, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &r);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        sum += b[0];
        if (rank % 2 == 0) {
            MPI_Send(a, N, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD);
            MPI_Recv(b, N, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Irecv(b, N, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &r);
            MPI_Send(a, N, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        sum += b[0];
    }
    if (rank == 0) printf("sum=%.1f\n", sum);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}

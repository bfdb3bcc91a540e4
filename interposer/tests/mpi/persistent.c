/* Persistent requests meeting plain ones (the test program of online
 * mode's MPI_Start): usage: persistent <iters>. Ranks pair up (0-1, ...).
 * Each iteration the even rank sends with a persistent request (Start,
 * Wait) to a plain MPI_Recv, then receives with a persistent request
 * (Startall of two: small and rendezvous-size) what the odd rank sends
 * with MPI_Send and MPI_Isend. Rank 0 prints "sum=<checksum>". */
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
    if (peer >= size) peer = MPI_PROC_NULL;
    double small = 0.0, *big = calloc(N, sizeof *big), sum = 0.0;
    MPI_Request ps, pr[2];
    if (rank % 2 == 0) {
        MPI_Send_init(&small, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &ps);
        MPI_Recv_init(&small, 1, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &pr[0]);
        MPI_Recv_init(big, N, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &pr[1]);
    }
    for (long it = 0; it < iters; it++) {
        if (rank % 2 == 0) {
            small = (double)(rank + it);
            MPI_Start(&ps);
            MPI_Wait(&ps, MPI_STATUS_IGNORE);
            MPI_Startall(2, pr);
            MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
            sum += small + big[0];
        } else {
            MPI_Request r;
            MPI_Recv(&small, 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            big[0] = small * 2.0;
            MPI_Send(&small, 1, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD);
            MPI_Isend(big, N, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }
    if (rank % 2 == 0) {
        MPI_Request_free(&ps);
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
    }
    if (rank == 0) printf("sum=%.1f\n", sum);
    free(big);
    MPI_Finalize();
    return 0;
}

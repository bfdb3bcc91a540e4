/* mpi_calls: exercises the MPI calls the interposer records beyond the
 * basic ones (send modes, probes, tests, any-variants, v-collectives,
 * scans, communicator management, collectives on a sub-communicator), for
 * `iters` iterations. Needs an even number of ranks >= 2.
 *
 * usage: mpirun -np N mpi_calls [iters]
 * Rank 0 prints `calls <MPI_Name>=<count per rank>` lines (the same on
 * every rank), then `checksum=...` and `wall_s=...`.
 */
#include "common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 10;
    if (argc > 2 || parse_arg(argc, argv, 1, "iters", 1, 1000000, &iters, rank) != 0)
        usage_exit(argv[0], "[iters]", rank);
    if (size % 2 != 0) {
        if (rank == 0)
            fprintf(stderr, "mpi_calls: needs an even number of ranks, got %d\n", size);
        MPI_Finalize();
        return 2;
    }
    int peer = rank ^ 1;
    int *counts = malloc((size_t)size * sizeof(int));
    int *displs = malloc((size_t)size * sizeof(int));
    double *all = malloc((size_t)size * 4 * sizeof(double));
    double *all2 = malloc((size_t)size * 4 * sizeof(double));
    for (int i = 0; i < size; i++) {
        counts[i] = 2;
        displs[i] = 2 * i;
    }
    double x[4] = {rank, 1, 2, 3}, y[4] = {0}, sum = 0;
    MPI_Comm half;
    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        MPI_Request r[2];
        MPI_Status st, sts[2];
        int flag = 0, index = -1;
        /* send modes, paired with receives */
        if (rank % 2 == 0) {
            MPI_Ssend(x, 4, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD);
            MPI_Rsend(x, 4, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD);
        } else {
            MPI_Irecv(y, 4, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &r[0]);
            MPI_Recv(y, 4, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        }
        /* probe then receive; iprobe until found */
        MPI_Issend(x, 4, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &r[0]);
        MPI_Probe(peer, 3, MPI_COMM_WORLD, &st);
        MPI_Recv(y, 4, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Isend(x, 4, MPI_DOUBLE, peer, 4, MPI_COMM_WORLD, &r[0]);
        while (!flag)
            MPI_Iprobe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &flag, &st);
        MPI_Irecv(y, 4, MPI_DOUBLE, peer, 4, MPI_COMM_WORLD, &r[1]);
        /* one Test per request, then Testall until done */
        MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
        for (flag = 0; !flag;)
            MPI_Testall(2, r, &flag, sts);
        /* waitany twice over two requests */
        MPI_Irecv(y, 4, MPI_DOUBLE, peer, 5, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(x, 4, MPI_DOUBLE, peer, 5, MPI_COMM_WORLD, &r[1]);
        MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE);
        MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE);
        MPI_Sendrecv_replace(y, 4, MPI_DOUBLE, peer, 6, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* collectives */
        MPI_Gather(x, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Gatherv(x, 2, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Scatter(all, 2, MPI_DOUBLE, y, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Scatterv(all, counts, displs, MPI_DOUBLE, y, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Allgather(x, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Allgatherv(x, 2, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Alltoall(all, 2, MPI_DOUBLE, y, 2, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Alltoallv(all, counts, displs, MPI_DOUBLE, all2, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Reduce_scatter(all, y, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Reduce_scatter_block(all, y, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Scan(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Exscan(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        /* a sub-communicator: even and odd ranks */
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Allreduce(&x[0], &y[0], 1, MPI_DOUBLE, MPI_SUM, half);
        sum += y[0];
        MPI_Comm_free(&half);
    }
    timed_end(t0, rank);
    if (rank == 0) {
        const char *per_iter[] = {"MPI_Probe", "MPI_Test", "MPI_Sendrecv_replace", "MPI_Gather", "MPI_Gatherv",
                                  "MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv",
                                  "MPI_Alltoall", "MPI_Alltoallv", "MPI_Reduce_scatter",
                                  "MPI_Reduce_scatter_block", "MPI_Scan", "MPI_Exscan", "MPI_Comm_split",
                                  "MPI_Comm_free", "MPI_Issend"};
        for (size_t i = 0; i < sizeof per_iter / sizeof *per_iter; i++)
            printf("calls %s=%ld\n", per_iter[i], iters);
        printf("calls MPI_Waitany=%ld\n", 2 * iters);
        printf("checksum=%.1f\n", sum);
    }
    free(counts);
    free(displs);
    free(all);
    free(all2);
    MPI_Finalize();
    return 0;
}

/* A 2-D stencil skeleton: the communication of jacobi2d with a fixed
 * compute time per step, for checking extrapolation and replay at scale
 * against SMPI's emulation of the same program.
 *
 * usage: stencil2d [bytes=16384] [iters=100] [compute_us=100]
 * Ranks form a px x py grid from MPI_Dims_create. Every step: MPI_Irecv
 * and MPI_Isend of `bytes` bytes with each of the 4 neighbours
 * (MPI_PROC_NULL at the border), MPI_Waitall, `compute_us` microseconds
 * of compute, and one MPI_Allreduce of one double. The compute spins on
 * the thread's CPU clock, or, under SMPI (smpicc), is injected with
 * smpi_execute so that it costs no real time. Rank 0 prints the common
 * "wall_s=" line.
 */
#include <string.h>
#include <time.h>

#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long bytes = 16384, iters = 100, compute_us = 100;
    if (argc > 4 || parse_arg(argc, argv, 1, "bytes", 1, 1L << 30, &bytes, rank) != 0 ||
        parse_arg(argc, argv, 2, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 3, "compute_us", 0, 1L << 30, &compute_us, rank) != 0)
        usage_exit(argv[0], "[bytes=16384] [iters=100] [compute_us=100]", rank);

    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    int px = dims[1];
    int ry = rank / px, rx = rank % px;
    int peer[4] = {ry > 0 ? rank - px : MPI_PROC_NULL, ry < dims[0] - 1 ? rank + px : MPI_PROC_NULL,
                   rx > 0 ? rank - 1 : MPI_PROC_NULL, rx < px - 1 ? rank + 1 : MPI_PROC_NULL};
    char *sendbuf = calloc(4, (size_t)bytes), *recvbuf = calloc(4, (size_t)bytes);
    if (!sendbuf || !recvbuf) {
        fprintf(stderr, "stencil2d: rank %d: cannot allocate 8 x %ld bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    double local = 1.0, total = 0.0;
    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        MPI_Request req[8];
        for (int d = 0; d < 4; d++)
            MPI_Irecv(recvbuf + d * bytes, (int)bytes, MPI_BYTE, peer[d], d ^ 1, MPI_COMM_WORLD, &req[d]);
        for (int d = 0; d < 4; d++)
            MPI_Isend(sendbuf + d * bytes, (int)bytes, MPI_BYTE, peer[d], d, MPI_COMM_WORLD, &req[4 + d]);
        MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
        exact_compute(1e-6 * (double)compute_us);
        MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    timed_end(t0, rank);

    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return 0;
}

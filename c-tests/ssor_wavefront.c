/* An SSOR wavefront skeleton: the communication pattern of NPB LU's
 * triangular solves (many small pipelined messages along a 2-D process
 * grid), with a fixed compute time per plane.
 *
 * usage: ssor_wavefront [bytes=400] [iters=50] [planes=32] [compute_us=5]
 * Ranks form a px x py Cartesian grid (MPI_Dims_create, MPI_Cart_create).
 * Every iteration sweeps `planes` planes north-west to south-east: for
 * each plane a rank receives `bytes` bytes from its north and west
 * neighbours (MPI_Recv), computes `compute_us` microseconds and sends
 * `bytes` bytes to its south and east neighbours (MPI_Send); then the
 * same sweep back, south-east to north-west. Ranks on the grid's border
 * skip the neighbours they lack. Each iteration ends with an
 * MPI_Allreduce of 5 doubles (LU's residual norms). The compute spins on
 * the thread's CPU clock, or, under SMPI (smpicc), is injected with
 * smpi_execute so that it costs no real time. Rank 0 prints the common
 * "wall_s=" line.
 */
#include <time.h>

#include "common.h"

/* One sweep over `planes` planes: receive from each of `from` (2
 * neighbours, MPI_PROC_NULL where missing), compute, send to each of `to`.
 * Tags name the sweep so that the two sweeps' messages never match. */
static void sweep(MPI_Comm cart, const int from[2], const int to[2], int tag, char *buf, long bytes, long planes,
                  long compute_us)
{
    for (long k = 0; k < planes; k++) {
        for (int d = 0; d < 2; d++)
            if (from[d] != MPI_PROC_NULL)
                MPI_Recv(buf, (int)bytes, MPI_BYTE, from[d], tag, cart, MPI_STATUS_IGNORE);
        exact_compute(1e-6 * (double)compute_us);
        for (int d = 0; d < 2; d++)
            if (to[d] != MPI_PROC_NULL)
                MPI_Send(buf, (int)bytes, MPI_BYTE, to[d], tag, cart);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long bytes = 400, iters = 50, planes = 32, compute_us = 5;
    if (argc > 5 || parse_arg(argc, argv, 1, "bytes", 1, 1L << 30, &bytes, rank) != 0 ||
        parse_arg(argc, argv, 2, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 3, "planes", 1, 1L << 20, &planes, rank) != 0 ||
        parse_arg(argc, argv, 4, "compute_us", 0, 1L << 30, &compute_us, rank) != 0)
        usage_exit(argv[0], "[bytes=400] [iters=50] [planes=32] [compute_us=5]", rank);

    int dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    /* Dimension 0 runs north to south, dimension 1 west to east. */
    int north, south, west, east;
    MPI_Cart_shift(cart, 0, 1, &north, &south);
    MPI_Cart_shift(cart, 1, 1, &west, &east);
    const int nw[2] = {north, west}, se[2] = {south, east};
    char *buf = calloc(1, (size_t)bytes);
    if (!buf) {
        fprintf(stderr, "ssor_wavefront: rank %d: cannot allocate %ld bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    double norms[5] = {1.0, 1.0, 1.0, 1.0, 1.0}, total[5];
    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        sweep(cart, nw, se, 0, buf, bytes, planes, compute_us);
        sweep(cart, se, nw, 1, buf, bytes, planes, compute_us);
        MPI_Allreduce(norms, total, 5, MPI_DOUBLE, MPI_SUM, cart);
    }
    timed_end(t0, rank);

    free(buf);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}

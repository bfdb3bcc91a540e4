/* A multigrid V-cycle's communication on a periodic 3-D grid: the pattern
 * of NPB MG (Bailey et al., "The NAS Parallel Benchmarks"), which runs on
 * power-of-two rank counts only, so that below 64 ranks one side of the
 * grid is at most 2 long and the -1 and +1 neighbours along it are one
 * rank.
 *
 * usage: mg3d [edge=32] [cycles=10] [levels=4] [compute_us=100]
 * Ranks form a periodic grid from MPI_Dims_create(size, 3) and
 * MPI_Cart_create. Each rank owns edge^3 points at the finest level and
 * (edge >> l)^3 at level l (weak scaling). A cycle goes down the levels
 * and back up; at each level, per axis, one function exchanges the two
 * faces ((edge >> l)^2 doubles each): MPI_Irecv from the low and the high
 * neighbour, MPI_Isend to the high and the low one, MPI_Waitall; then
 * compute_us >> l microseconds of compute. At the coarsest level an
 * MPI_Allreduce of the residual norm. The compute spins on the thread's
 * CPU clock, or under SMPI (smpicc) is injected with smpi_execute. Rank 0
 * prints the common "wall_s=" line.
 */
#include "common.h"

/* The face exchange along `axis` with neighbours lo and hi, `count`
 * doubles each way. */
static void exchange(MPI_Comm cart, int lo, int hi, double *sbuf, double *rbuf, int count)
{
    MPI_Request q[4];
    MPI_Irecv(rbuf, count, MPI_DOUBLE, lo, 0, cart, &q[0]);
    MPI_Irecv(rbuf + count, count, MPI_DOUBLE, hi, 0, cart, &q[1]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, hi, 0, cart, &q[2]);
    MPI_Isend(sbuf + count, count, MPI_DOUBLE, lo, 0, cart, &q[3]);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
}

/* One level: the three axes' exchanges, then its compute. */
static void level(MPI_Comm cart, const int lo[3], const int hi[3], double *sbuf, double *rbuf, long edge, int l,
                  long compute_us)
{
    long side = edge >> l > 0 ? edge >> l : 1;
    for (int axis = 0; axis < 3; axis++) exchange(cart, lo[axis], hi[axis], sbuf, rbuf, (int)(side * side));
    exact_compute(1e-6 * (double)(compute_us >> l));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long edge = 32, cycles = 10, levels = 4, compute_us = 100;
    if (argc > 5 || parse_arg(argc, argv, 1, "edge", 1, 1024, &edge, rank) != 0 ||
        parse_arg(argc, argv, 2, "cycles", 1, LONG_MAX, &cycles, rank) != 0 ||
        parse_arg(argc, argv, 3, "levels", 1, 10, &levels, rank) != 0 ||
        parse_arg(argc, argv, 4, "compute_us", 0, 1L << 30, &compute_us, rank) != 0)
        usage_exit(argv[0], "[edge=32] [cycles=10] [levels=4] [compute_us=100]", rank);

    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, lo[3], hi[3];
    MPI_Dims_create(size, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    for (int axis = 0; axis < 3; axis++) MPI_Cart_shift(cart, axis, 1, &lo[axis], &hi[axis]);
    double *sbuf = calloc((size_t)(2 * edge * edge), sizeof(double));
    double *rbuf = calloc((size_t)(2 * edge * edge), sizeof(double));
    if (!sbuf || !rbuf) {
        fprintf(stderr, "mg3d: rank %d: cannot allocate the face buffers\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    double t0 = timed_start();
    for (long c = 0; c < cycles; c++) {
        for (int l = 0; l < (int)levels; l++) level(cart, lo, hi, sbuf, rbuf, edge, l, compute_us);
        double norm = 1.0 / (double)(c + 1), total;
        MPI_Allreduce(&norm, &total, 1, MPI_DOUBLE, MPI_SUM, cart);
        for (int l = (int)levels - 1; l >= 0; l--) level(cart, lo, hi, sbuf, rbuf, edge, l, compute_us);
    }
    timed_end(t0, rank);

    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}

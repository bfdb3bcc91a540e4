/* A conjugate-gradient skeleton: the communication pattern of NPB CG on
 * its 2-D process grid, with a fixed amount of compute shared by the ranks.
 *
 * usage: cg [n=4096] [iters=3] [steps=5] [compute_us=2000]
 * The rank count must be a power of two. The ranks form a grid of nprows
 * rows and npcols columns, the larger and the smaller side of
 * MPI_Dims_create(size, 2) (npcols = nprows, or 2 nprows when the count
 * is an odd power of two), numbered row by row: rank = row * npcols + col.
 * Each of the `steps` CG steps of an iteration:
 *   - the matrix-vector product's compute (compute_us / size µs);
 *   - the sum of the row's partial products by recursive halving:
 *     log2(npcols) exchanges (MPI_Irecv, MPI_Send, MPI_Wait) of the row
 *     block, 8 n / nprows bytes, with the rank of column
 *     col XOR (npcols >> (i + 1)) at exchange i, each followed by the
 *     add's compute;
 *   - the transpose exchange with the rank that holds the transposed
 *     block, 8 n / npcols bytes (itself on a 2 x 1 grid);
 *   - two dot products, each log2(npcols) exchanges of one double along
 *     the row, in the same order.
 * Each iteration ends with the residual norm, log2(npcols) exchanges of
 * two doubles. The loops' trip counts thus change with the rank count:
 * one exchange per sum at 2 and 4 ranks, two at 8 and 16, three at 32
 * and 64. The compute spins on the thread's CPU clock, or, under SMPI
 * (smpicc), is injected with smpi_execute. Rank 0 prints the common
 * "wall_s=" line.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long n = 4096, iters = 3, steps = 5, compute_us = 2000;
    if (argc > 5 || parse_arg(argc, argv, 1, "n", 1, 1L << 26, &n, rank) != 0 ||
        parse_arg(argc, argv, 2, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 3, "steps", 1, 1L << 20, &steps, rank) != 0 ||
        parse_arg(argc, argv, 4, "compute_us", 0, 1L << 30, &compute_us, rank) != 0)
        usage_exit(argv[0], "[n=4096] [iters=3] [steps=5] [compute_us=2000]", rank);
    if ((size & (size - 1)) != 0) {
        if (rank == 0)
            fprintf(stderr, "cg: the rank count must be a power of two, got %d\n", size);
        MPI_Finalize();
        return 2;
    }

    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    const int npcols = dims[0], nprows = dims[1];
    int l2npcols = 0;
    while ((1 << l2npcols) < npcols)
        l2npcols++;
    const int col = rank % npcols, row = rank / npcols;
    /* Pairs of columns (one column on a square grid) form an nprows x
     * nprows grid of blocks; the transpose exchange swaps the block's
     * place across the diagonal. */
    const int q = npcols / nprows, block = rank / q;
    const int exch = q * ((block % nprows) * nprows + block / nprows) + rank % q;

    const long row_len = n / nprows, col_len = n / npcols;
    double *w = calloc((size_t)row_len, sizeof *w), *r = calloc((size_t)row_len, sizeof *r);
    double *t = calloc((size_t)col_len, sizeof *t), *u = calloc((size_t)col_len, sizeof *u);
    if (!w || !r || !t || !u) {
        fprintf(stderr, "cg: rank %d: cannot allocate vectors of %ld doubles\n", rank, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const double matvec_s = 1e-6 * (double)compute_us / size;
    double rho[2] = {1.0, 1.0}, got[2];
    MPI_Request req;

    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        for (long s = 0; s < steps; s++) {
            exact_compute(matvec_s);
            for (int i = 0; i < l2npcols; i++) {
                const int partner = row * npcols + (col ^ (npcols >> (i + 1)));
                MPI_Irecv(r, (int)row_len, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD, &req);
                MPI_Send(w, (int)row_len, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                exact_compute(matvec_s / 16);
            }
            MPI_Irecv(u, (int)col_len, MPI_DOUBLE, exch, 2, MPI_COMM_WORLD, &req);
            MPI_Send(t, (int)col_len, MPI_DOUBLE, exch, 2, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            exact_compute(matvec_s / 8);
            for (int i = 0; i < l2npcols; i++) {
                const int partner = row * npcols + (col ^ (npcols >> (i + 1)));
                MPI_Irecv(got, 1, MPI_DOUBLE, partner, 3, MPI_COMM_WORLD, &req);
                MPI_Send(rho, 1, MPI_DOUBLE, partner, 3, MPI_COMM_WORLD);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            exact_compute(matvec_s / 8);
            for (int i = 0; i < l2npcols; i++) {
                const int partner = row * npcols + (col ^ (npcols >> (i + 1)));
                MPI_Irecv(got, 1, MPI_DOUBLE, partner, 4, MPI_COMM_WORLD, &req);
                MPI_Send(rho, 1, MPI_DOUBLE, partner, 4, MPI_COMM_WORLD);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        }
        for (int i = 0; i < l2npcols; i++) {
            const int partner = row * npcols + (col ^ (npcols >> (i + 1)));
            MPI_Irecv(got, 2, MPI_DOUBLE, partner, 5, MPI_COMM_WORLD, &req);
            MPI_Send(rho, 2, MPI_DOUBLE, partner, 5, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
    }
    timed_end(t0, rank);

    free(w);
    free(r);
    free(t);
    free(u);
    MPI_Finalize();
    return 0;
}

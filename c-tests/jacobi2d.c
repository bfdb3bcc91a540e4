/* 2-D Jacobi relaxation of the Laplace equation with a 2-D domain
 * decomposition.
 *
 * usage: jacobi2d [n=1024] [iters=200]
 * The global grid is n x n interior points with fixed boundary values
 * (1.0 on the top edge, 0.0 elsewhere). Ranks form a px x py grid from
 * MPI_Dims_create; each owns a block of rows x cols points plus a one-point
 * halo. Every iteration: halo exchange with the 4 neighbours (MPI_Isend /
 * MPI_Irecv / MPI_Waitall, MPI_PROC_NULL at the border), a 5-point update,
 * and one MPI_Allreduce of the sum of squared updates (MPI_DOUBLE, 1
 * element). Rank 0 prints "residual=<sqrt of the last sum>" and the common
 * "wall_s=" line.
 */
#include <math.h>
#include <string.h>

#include "common.h"

/* Rows or columns owned by block `i` of `p` when splitting `n` points. */
static int block_len(int n, int p, int i) { return n / p + (i < n % p ? 1 : 0); }
/* First global index of block `i`. */
static int block_start(int n, int p, int i) { return i * (n / p) + (i < n % p ? i : n % p); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long n = 1024, iters = 200;
    if (argc > 3 || parse_arg(argc, argv, 1, "n", 1, 1L << 20, &n, rank) != 0 ||
        parse_arg(argc, argv, 2, "iters", 1, LONG_MAX, &iters, rank) != 0)
        usage_exit(argv[0], "[n=1024] [iters=200]", rank);

    int dims[2] = {0, 0}; /* dims[0] = py (rows of ranks), dims[1] = px */
    MPI_Dims_create(size, 2, dims);
    int py = dims[0], px = dims[1];
    if (n < py || n < px) {
        if (rank == 0)
            fprintf(stderr, "jacobi2d: n=%ld is smaller than the %d x %d rank grid\n", n, py, px);
        usage_exit(argv[0], "[n=1024] [iters=200]", rank);
    }
    int ry = rank / px, rx = rank % px;
    int rows = block_len((int)n, py, ry), cols = block_len((int)n, px, rx);
    int row0 = block_start((int)n, py, ry);
    int up = ry > 0 ? rank - px : MPI_PROC_NULL;
    int down = ry < py - 1 ? rank + px : MPI_PROC_NULL;
    int left = rx > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rx < px - 1 ? rank + 1 : MPI_PROC_NULL;

    /* (rows + 2) x (cols + 2) with halo; element (i, j) at i * ld + j. */
    int ld = cols + 2;
    size_t cells = (size_t)(rows + 2) * (size_t)ld;
    double *u = calloc(cells, sizeof(double));
    double *unew = calloc(cells, sizeof(double));
    double *sendl = malloc((size_t)rows * sizeof(double)), *sendr = malloc((size_t)rows * sizeof(double));
    double *recvl = malloc((size_t)rows * sizeof(double)), *recvr = malloc((size_t)rows * sizeof(double));
    if (!u || !unew || !sendl || !sendr || !recvl || !recvr) {
        fprintf(stderr, "jacobi2d: rank %d: cannot allocate a %d x %d block\n", rank, rows, cols);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Fixed boundary: the top edge of the global domain is 1.0. The halo
     * rows and columns at the domain border are never overwritten. */
    if (row0 == 0)
        for (int j = 0; j < ld; j++)
            u[j] = unew[j] = 1.0;

    double global_sq = 0.0;
    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        MPI_Request req[8];
        int nreq = 0;
        for (int i = 0; i < rows; i++) {
            sendl[i] = u[(size_t)(i + 1) * ld + 1];
            sendr[i] = u[(size_t)(i + 1) * ld + cols];
        }
        MPI_Irecv(&u[1], cols, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Irecv(&u[(size_t)(rows + 1) * ld + 1], cols, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Irecv(recvl, rows, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Irecv(recvr, rows, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &req[nreq++]);
        /* Tags name the direction of travel as seen by the receiver. */
        MPI_Isend(&u[(size_t)1 * ld + 1], cols, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Isend(&u[(size_t)rows * ld + 1], cols, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Isend(sendl, rows, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Isend(sendr, rows, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[nreq++]);
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        if (left != MPI_PROC_NULL)
            for (int i = 0; i < rows; i++)
                u[(size_t)(i + 1) * ld] = recvl[i];
        if (right != MPI_PROC_NULL)
            for (int i = 0; i < rows; i++)
                u[(size_t)(i + 1) * ld + cols + 1] = recvr[i];

        double local_sq = 0.0;
        for (int i = 1; i <= rows; i++) {
            const double *c = &u[(size_t)i * ld], *nn = c - ld, *s = c + ld;
            double *o = &unew[(size_t)i * ld];
            for (int j = 1; j <= cols; j++) {
                double v = 0.25 * (nn[j] + s[j] + c[j - 1] + c[j + 1]);
                double d = v - c[j];
                local_sq += d * d;
                o[j] = v;
            }
        }
        /* Swap interiors; halo cells of unew keep the fixed boundary. */
        double *tmp = u;
        u = unew;
        unew = tmp;
        MPI_Allreduce(&local_sq, &global_sq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    timed_end(t0, rank);

    if (rank == 0)
        printf("residual=%.9e\n", sqrt(global_sq));
    free(u);
    free(unew);
    free(sendl);
    free(sendr);
    free(recvl);
    free(recvr);
    MPI_Finalize();
    return 0;
}

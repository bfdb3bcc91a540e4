/* 3-D 7-point Jacobi sweep on a periodic domain with a 3-D Cartesian
 * decomposition: the halo exchange of stencil and multigrid codes.
 *
 * usage: halo3d [edge=48] [iters=40]
 * Each rank owns edge^3 points plus a one-point halo. The ranks form a
 * periodic grid from MPI_Dims_create(size, 3) and MPI_Cart_create; along
 * each axis MPI_Cart_shift gives the two neighbours, which at small rank
 * counts are the rank itself (2 ranks: a 2 x 1 x 1 grid, so the y and z
 * neighbours are self, and the x neighbours are one rank twice). Every
 * iteration, per axis: pack both faces, MPI_Irecv from both neighbours,
 * MPI_Send to both (the order that needs receives posted first), then
 * MPI_Waitall and unpack; then the 7-point update. Every 5 iterations an
 * MPI_Allreduce of the squared update. Rank 0 prints
 * "residual=<sqrt of the last sum>" and the common "wall_s=" line.
 */
#include <math.h>
#include <string.h>

#include "common.h"

static int n; /* edge + 2 */
#define AT(u, i, j, k) (u)[((size_t)(i) * n + (j)) * n + (k)]

/* Copies face `side` (0: low, 1: high) of the interior along `axis` to
 * or from `buf`; `halo` selects the halo layer instead of the interior one. */
static void face(double *u, int axis, int side, int halo, double *buf, int pack)
{
    int e = n - 2, layer = side == 0 ? (halo ? 0 : 1) : (halo ? n - 1 : n - 2);
    size_t m = 0;
    for (int a = 1; a <= e; a++)
        for (int b = 1; b <= e; b++) {
            double *p = axis == 0 ? &AT(u, layer, a, b) : axis == 1 ? &AT(u, a, layer, b) : &AT(u, a, b, layer);
            if (pack)
                buf[m++] = *p;
            else
                *p = buf[m++];
        }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long edge = 48, iters = 40;
    if (argc > 3 || parse_arg(argc, argv, 1, "edge", 2, 1024, &edge, rank) != 0 ||
        parse_arg(argc, argv, 2, "iters", 1, LONG_MAX, &iters, rank) != 0)
        usage_exit(argv[0], "[edge=48] [iters=40]", rank);
    n = (int)edge + 2;
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, lo[3], hi[3];
    MPI_Dims_create(size, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    for (int axis = 0; axis < 3; axis++) MPI_Cart_shift(cart, axis, 1, &lo[axis], &hi[axis]);

    size_t cells = (size_t)n * n * n, fsize = (size_t)edge * edge;
    double *u = calloc(cells, sizeof(double)), *v = calloc(cells, sizeof(double));
    double *send[2], *recv[2];
    for (int s = 0; s < 2; s++) {
        send[s] = malloc(fsize * sizeof(double));
        recv[s] = malloc(fsize * sizeof(double));
    }
    if (!u || !v || !send[0] || !send[1] || !recv[0] || !recv[1]) {
        fprintf(stderr, "halo3d: rank %d: cannot allocate %ld^3 points\n", rank, edge);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* A bump that differs by rank, so that halos carry information. */
    for (int i = 1; i < n - 1; i++)
        for (int j = 1; j < n - 1; j++)
            for (int k = 1; k < n - 1; k++) AT(u, i, j, k) = sin(0.1 * (i + rank * edge)) + 0.01 * j - 0.02 * k;

    double sum = 0.0;
    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        for (int axis = 0; axis < 3; axis++) {
            MPI_Request q[2];
            face(u, axis, 0, 0, send[0], 1);
            face(u, axis, 1, 0, send[1], 1);
            MPI_Irecv(recv[0], (int)fsize, MPI_DOUBLE, lo[axis], 100 + axis, cart, &q[0]);
            MPI_Irecv(recv[1], (int)fsize, MPI_DOUBLE, hi[axis], 200 + axis, cart, &q[1]);
            MPI_Send(send[1], (int)fsize, MPI_DOUBLE, hi[axis], 100 + axis, cart);
            MPI_Send(send[0], (int)fsize, MPI_DOUBLE, lo[axis], 200 + axis, cart);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
            face(u, axis, 0, 1, recv[0], 0);
            face(u, axis, 1, 1, recv[1], 0);
        }
        double local = 0.0;
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                for (int k = 1; k < n - 1; k++) {
                    double nv = (AT(u, i - 1, j, k) + AT(u, i + 1, j, k) + AT(u, i, j - 1, k) + AT(u, i, j + 1, k) +
                                 AT(u, i, j, k - 1) + AT(u, i, j, k + 1)) / 6.0;
                    double d = nv - AT(u, i, j, k);
                    local += d * d;
                    AT(v, i, j, k) = nv;
                }
        double *t = u;
        u = v;
        v = t;
        if (it % 5 == 4 || it == iters - 1) MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, cart);
    }
    timed_end(t0, rank);
    if (rank == 0) printf("residual=%.10e\n", sqrt(sum));
    free(u);
    free(v);
    for (int s = 0; s < 2; s++) {
        free(send[s]);
        free(recv[s]);
    }
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}

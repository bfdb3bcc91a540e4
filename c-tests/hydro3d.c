/* A 3-D hydrodynamics proxy's communication: the pattern of LULESH 2.0
 * (Karlin et al., LLNL), whose boundary ranks skip the neighbours they
 * lack instead of sending to MPI_PROC_NULL.
 *
 * usage: hydro3d [edge=16] [iters=20] [compute_us=200]
 * Ranks form a non-periodic grid from MPI_Dims_create(size, 3) and
 * MPI_Cart_create (LULESH itself takes cube counts only: 1, 8, 27, ...;
 * here any count works). Each rank owns edge^3 elements (weak scaling).
 * Every iteration: MPI_Irecv from each of the up to 26 neighbours that
 * exist (faces edge^2 doubles, edges `edge` doubles, corners one double),
 * `compute_us` microseconds of compute, MPI_Isend of the same to each,
 * MPI_Waitall; then an MPI_Allreduce (MPI_MIN) of the time step, as
 * LULESH's CalcTimeConstraints. The compute spins on the thread's CPU
 * clock, or under SMPI (smpicc) is injected with smpi_execute. Rank 0
 * prints "dt=<the last time step>" and the common "wall_s=" line.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long edge = 16, iters = 20, compute_us = 200;
    if (argc > 4 || parse_arg(argc, argv, 1, "edge", 1, 1024, &edge, rank) != 0 ||
        parse_arg(argc, argv, 2, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 3, "compute_us", 0, 1L << 30, &compute_us, rank) != 0)
        usage_exit(argv[0], "[edge=16] [iters=20] [compute_us=200]", rank);

    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, me[3];
    MPI_Dims_create(size, 3, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 3, me);

    /* The neighbours that exist and each one's message length (doubles). */
    int peer[26], count[26], k = 0;
    for (int dx = -1; dx <= 1; dx++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dz = -1; dz <= 1; dz++) {
                int c[3] = {me[0] + dx, me[1] + dy, me[2] + dz}, zeros = (dx == 0) + (dy == 0) + (dz == 0);
                if (zeros == 3 || c[0] < 0 || c[0] >= dims[0] || c[1] < 0 || c[1] >= dims[1] || c[2] < 0 || c[2] >= dims[2])
                    continue;
                MPI_Cart_rank(cart, c, &peer[k]);
                count[k++] = zeros == 2 ? (int)(edge * edge) : zeros == 1 ? (int)edge : 1;
            }
    double *sbuf = calloc((size_t)(26 * edge * edge), sizeof(double));
    double *rbuf = calloc((size_t)(26 * edge * edge), sizeof(double));
    if (!sbuf || !rbuf) {
        fprintf(stderr, "hydro3d: rank %d: cannot allocate the halo buffers\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    double dt = 1.0;
    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        MPI_Request q[52];
        size_t off = 0;
        for (int i = 0; i < k; i++) {
            MPI_Irecv(rbuf + off, count[i], MPI_DOUBLE, peer[i], 0, cart, &q[i]);
            off += (size_t)count[i];
        }
        exact_compute(1e-6 * (double)compute_us);
        off = 0;
        for (int i = 0; i < k; i++) {
            MPI_Isend(sbuf + off, count[i], MPI_DOUBLE, peer[i], 0, cart, &q[k + i]);
            off += (size_t)count[i];
        }
        MPI_Waitall(2 * k, q, MPI_STATUSES_IGNORE);
        double local = 1.0 / (double)(it + rank % 7 + 1);
        MPI_Allreduce(&local, &dt, 1, MPI_DOUBLE, MPI_MIN, cart);
    }
    timed_end(t0, rank);
    if (rank == 0)
        printf("dt=%g\n", dt);

    free(sbuf);
    free(rbuf);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}

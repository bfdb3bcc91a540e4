/* skeleton: a 2-D Cartesian stencil skeleton whose compute is exact in a
 * real MPI run and under SimGrid's SMPI alike, so that an extrapolated
 * prediction can be checked against SMPI's emulation at many ranks.
 *
 * usage: skeleton [steps] [compute_us] [halo_bytes] [variability_pct] [seed]
 *   steps           iterations (default 100)
 *   compute_us      each rank's compute per step, microseconds (default 200)
 *   halo_bytes      bytes of each halo message (default 8192)
 *   variability_pct per-rank, per-step deviation of the compute, a
 *                   uniform draw in [-pct, +pct] % (default 0)
 *   seed            seed of those draws (default 1)
 *
 * The ranks form a non-periodic 2-D grid (MPI_Dims_create,
 * MPI_Cart_create, MPI_Cart_shift). Each step: a compute block, a halo
 * exchange with the up to 4 neighbours (MPI_Irecv, MPI_Isend, MPI_Waitall;
 * MPI_PROC_NULL at the border), and an MPI_Allreduce of one double.
 *
 * The compute block spins on the thread's CPU-time clock in a real run
 * (so a block costs its CPU time whatever else the machine runs), and is
 * smpi_execute() of the same seconds when built with smpicc. A step's
 * deviation is a hash of (seed, rank, step): the same in both worlds and
 * at every rank count.
 */
#include "common.h"

#include <stdint.h>
#include <time.h>

/* SplitMix64 of (seed, rank, step): a uniform draw in [-1, 1). */
static double deviation(uint64_t seed, uint64_t rank, uint64_t step)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + rank * 0xbf58476d1ce4e5b9ULL + step * 0x94d049bb133111ebULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) / (double)(1ULL << 52) - 1.0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long steps = 100, compute_us = 200, halo = 8192, pct = 0, seed = 1;
    if (argc > 6 || parse_arg(argc, argv, 1, "steps", 1, 100000000, &steps, rank) ||
        parse_arg(argc, argv, 2, "compute_us", 0, 100000000, &compute_us, rank) ||
        parse_arg(argc, argv, 3, "halo_bytes", 1, 1 << 30, &halo, rank) ||
        parse_arg(argc, argv, 4, "variability_pct", 0, 99, &pct, rank) ||
        parse_arg(argc, argv, 5, "seed", 0, LONG_MAX, &seed, rank))
        usage_exit(argv[0], "[steps] [compute_us] [halo_bytes] [variability_pct] [seed]", rank);

    int dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    int up, down, left, right;
    MPI_Cart_shift(grid, 0, 1, &up, &down);
    MPI_Cart_shift(grid, 1, 1, &left, &right);
    int peers[4] = {up, down, left, right};

    char *send = calloc(4, (size_t)halo), *recv = calloc(4, (size_t)halo);
    if (send == NULL || recv == NULL) {
        fprintf(stderr, "skeleton: cannot allocate 8 x %ld bytes\n", halo);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t0 = timed_start(), sum = 0.0;
    for (long s = 0; s < steps; s++) {
        double v = (double)pct / 100.0 * deviation((uint64_t)seed, (uint64_t)rank, (uint64_t)s);
        exact_compute(1e-6 * (double)compute_us * (1.0 + v));
        MPI_Request req[8];
        int n = 0;
        for (int k = 0; k < 4; k++)
            MPI_Irecv(recv + (size_t)k * halo, (int)halo, MPI_BYTE, peers[k], k ^ 1, grid, &req[n++]);
        for (int k = 0; k < 4; k++)
            MPI_Isend(send + (size_t)k * halo, (int)halo, MPI_BYTE, peers[k], k, grid, &req[n++]);
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        double local = (double)recv[0] + 1.0, global = 0.0;
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, grid);
        sum += global;
    }
    timed_end(t0, rank);
    if (rank == 0 && sum != (double)steps * size)
        fprintf(stderr, "skeleton: checksum %g, expected %g\n", sum, (double)steps * size);
    free(send);
    free(recv);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}

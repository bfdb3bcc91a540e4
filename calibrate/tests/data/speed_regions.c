/* Two compute regions per iteration, for the `calibrate speed` acceptance
 * test: region A (before MPI_Allreduce) and region B (before MPI_Barrier).
 * With SLOW_B=<k> in the environment, region B does k times the work.
 *
 * usage: mpirun -np N speed_regions [iterations] [work]
 *   iterations  default 20;  work: loop trips per region, default 400000. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double work(long trips)
{
    volatile double x = 0.0;
    for (long i = 0; i < trips; i++)
        x += (double)i * 0.5;
    return x;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    long trips = argc > 2 ? atol(argv[2]) : 400000;
    const char *slow = getenv("SLOW_B");
    long factor = slow != NULL && atol(slow) > 0 ? atol(slow) : 1;
    double sum = 0.0, in = 1.0;
    for (int it = 0; it < iters; it++) {
        in = work(trips); /* region A */
        MPI_Allreduce(&in, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        in = work(trips * factor); /* region B */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("speed_regions: %d iterations, SLOW_B=%ld, checksum %g\n", iters, factor, sum + in);
    MPI_Finalize();
    return 0;
}

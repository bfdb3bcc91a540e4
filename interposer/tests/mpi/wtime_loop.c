/* One rank times a loop of its own with MPI_Wtime while the other waits
 * for it in MPI_Bcast, after a row of reductions both took part in (the
 * shape of HPC Challenge's single-process tests). The timing rank prints
 * `reads=<n>` and `elapsed_s=<seconds between its first and last read>`.
 *
 * usage: mpirun -np 2 wtime_loop [reads]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reads = argc > 1 ? atoi(argv[1]) : 50;
    double x = rank, sum = 0.0, elapsed = 0.0;
    for (int i = 0; i < 10; i++)
        MPI_Reduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int timer = size - 1;
    MPI_Bcast(&timer, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == timer) {
        volatile double sink = 0.0;
        double t0 = MPI_Wtime(), t = t0;
        for (int i = 0; i < reads; i++) {
            for (int k = 0; k < 1000; k++)
                sink += k * 1e-9;
            t = MPI_Wtime();
        }
        elapsed = t - t0;
    }
    MPI_Bcast(&elapsed, 1, MPI_DOUBLE, timer, MPI_COMM_WORLD);
    if (rank == timer)
        printf("reads=%d\nelapsed_s=%.9f\n", reads, elapsed);
    MPI_Finalize();
    return 0;
}

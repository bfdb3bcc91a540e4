/* A compute / MPI_Allreduce loop.
 *
 * usage: allreduce_loop [iters=1000] [count=1024]
 * Each iteration runs a few microseconds of arithmetic on a local vector of
 * `count` doubles, then one MPI_Allreduce (MPI_SUM, MPI_DOUBLE, `count`
 * elements) whose result feeds the next iteration (the sum stays bounded
 * for any rank count). Rank 0 prints a checksum
 * and the common "wall_s=" line.
 */
#include "common.h"

/* Multiply-adds per iteration: a few microseconds on a current core. */
#define WORK_FLOPS 4000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long iters = 1000, count = 1024;
    if (argc > 3 || parse_arg(argc, argv, 1, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 2, "count", 1, INT_MAX / 8, &count, rank) != 0)
        usage_exit(argv[0], "[iters=1000] [count=1024]", rank);

    double *local = malloc((size_t)count * sizeof(double));
    double *global = malloc((size_t)count * sizeof(double));
    if (local == NULL || global == NULL) {
        fprintf(stderr, "allreduce_loop: rank %d: cannot allocate 2 x %ld doubles\n", rank, count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long j = 0; j < count; j++)
        global[j] = (double)(j % 7) / (double)size;

    double t0 = timed_start();
    for (long i = 0; i < iters; i++) {
        /* Compute: a serial dependency chain the compiler cannot remove. */
        double acc = global[i % count];
        for (int k = 0; k < WORK_FLOPS; k++)
            acc = acc * 0.999999 + 1e-6;
        for (long j = 0; j < count; j++)
            local[j] = (0.5 * global[j] + acc * 1e-3) / (double)size;
        MPI_Allreduce(local, global, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    timed_end(t0, rank);

    if (rank == 0)
        printf("checksum=%.9e\n", global[0] + global[count - 1]);
    free(local);
    free(global);
    MPI_Finalize();
    return 0;
}

/* overhead: the interposer's cost per call. Ranks 0 and 1 ping-pong a
 * 1-byte message `iters` times (2 calls per rank per iteration), then each
 * rank calls MPI_Iprobe `iters` times with no message pending.
 *
 * usage: mpirun -np 2 overhead [iters]
 * Rank 0 prints `pingpong_ns_per_call=<ns>` and `iprobe_ns_per_call=<ns>`,
 * each from the fastest of five passes of iters/5.
 */
#include "common.h"

#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 1000000;
    if (argc > 2 || parse_arg(argc, argv, 1, "iters", 1, 1000000000, &iters, rank) != 0 || size != 2)
        usage_exit(argv[0], "[iters]  (2 ranks)", rank);
    char b = 0;
    int flag;
    /* Five passes of iters/5 each; the fastest pass counts (a preempted
     * pass on a shared machine only adds time). */
    const int passes = 5;
    long n = iters / passes > 0 ? iters / passes : 1;
    double best_pp = 1e30, best_ip = 1e30;
    for (int k = 0; k < passes; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
        }
        double t1 = MPI_Wtime();
        for (long i = 0; i < n; i++)
            MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        double t2 = MPI_Wtime();
        /* A ping-pong iteration is 4 calls on the critical path (2 per rank). */
        if ((t1 - t0) / (4.0 * n) < best_pp) best_pp = (t1 - t0) / (4.0 * n);
        if ((t2 - t1) / n < best_ip) best_ip = (t2 - t1) / n;
    }
    if (rank == 0) {
        printf("pingpong_ns_per_call=%.1f\n", best_pp * 1e9);
        printf("iprobe_ns_per_call=%.1f\n", best_ip * 1e9);
    }
    MPI_Finalize();
    return 0;
}

/* overhead: the interposer's cost per call. Ranks 0 and 1 ping-pong a
 * 1-byte message `iters` times (2 calls per rank per iteration), then each
 * rank calls MPI_Iprobe `iters` times with no message pending and, when
 * `rank_calls` is given, MPI_Comm_rank that many times.
 *
 * usage: mpirun -np 2 overhead [iters [rank_calls]]
 * Rank 0 prints `pingpong_ns_per_call=<ns>`, `iprobe_ns_per_call=<ns>`
 * and (with rank_calls) `comm_rank_ns_per_call=<ns>`, each from the
 * fastest of five passes, and the same for the loops of one rank alone
 * in thread CPU time (`iprobe_cpu_ns_per_call=`, `comm_rank_cpu_ns_per_call=`),
 * which a preemption on a shared machine does not lengthen.
 */
#include "common.h"

#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 1000000, rank_calls = 0;
    if (argc > 3 || parse_arg(argc, argv, 1, "iters", 1, 1000000000, &iters, rank) != 0 ||
        parse_arg(argc, argv, 2, "rank_calls", 0, 1000000000, &rank_calls, rank) != 0 || size != 2)
        usage_exit(argv[0], "[iters [rank_calls]]  (2 ranks)", rank);
    char b = 0;
    int flag, me;
    /* Five passes of iters/5 each; the fastest pass counts (a preempted
     * pass on a shared machine only adds time). */
    const int passes = 5;
    long n = iters / passes > 0 ? iters / passes : 1, m = rank_calls / passes;
    double best_pp = 1e30, best_ip = 1e30, best_cr = 1e30, best_ip_cpu = 1e30, best_cr_cpu = 1e30;
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
        double t1 = MPI_Wtime(), c1 = cpu_now();
        for (long i = 0; i < n; i++)
            MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        double t2 = MPI_Wtime(), c2 = cpu_now();
        for (long i = 0; i < m; i++)
            MPI_Comm_rank(MPI_COMM_WORLD, &me);
        double t3 = MPI_Wtime(), c3 = cpu_now();
        /* A ping-pong iteration is 4 calls on the critical path (2 per rank). */
        if ((t1 - t0) / (4.0 * n) < best_pp) best_pp = (t1 - t0) / (4.0 * n);
        if ((t2 - t1) / n < best_ip) best_ip = (t2 - t1) / n;
        if ((c2 - c1) / n < best_ip_cpu) best_ip_cpu = (c2 - c1) / n;
        if (m > 0 && (t3 - t2) / m < best_cr) best_cr = (t3 - t2) / m;
        if (m > 0 && (c3 - c2) / m < best_cr_cpu) best_cr_cpu = (c3 - c2) / m;
    }
    if (rank == 0) {
        printf("pingpong_ns_per_call=%.1f\n", best_pp * 1e9);
        printf("iprobe_ns_per_call=%.1f\n", best_ip * 1e9);
        printf("iprobe_cpu_ns_per_call=%.1f\n", best_ip_cpu * 1e9);
        if (m > 0) {
            printf("comm_rank_ns_per_call=%.1f\n", best_cr * 1e9);
            printf("comm_rank_cpu_ns_per_call=%.1f\n", best_cr_cpu * 1e9);
        }
    }
    MPI_Finalize();
    return 0;
}

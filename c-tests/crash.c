/* crash: ranks 0 and 1 ping-pong `iters` times; at iteration `at` rank 1
 * dies by `mode`: `term` (raise SIGTERM), `segv` (a null write) or `heap`
 * (a null write after overwriting the C heap's top chunk header, so that
 * the next malloc served from it aborts). Tests check that the
 * interposer's trace of rank 1 still holds every call made before the
 * signal, and that the rank dies of its own signal.
 *
 * usage: mpirun -np 2 crash <term|segv|heap> [iters] [at]
 * Rank 1 prints `sends_before_signal=<n>` just before dying.
 */
#include "common.h"

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 1000, at = 500;
    int segv = argc > 1 && strcmp(argv[1], "segv") == 0;
    int heap = argc > 1 && strcmp(argv[1], "heap") == 0;
    if (argc < 2 || argc > 4 || (!segv && !heap && strcmp(argv[1], "term") != 0) ||
        parse_arg(argc, argv, 2, "iters", 1, 100000000, &iters, rank) != 0 ||
        parse_arg(argc, argv, 3, "at", 0, iters - 1, &at, rank) != 0 || size < 2)
        usage_exit(argv[0], "<term|segv|heap> [iters] [at]  (2 or more ranks)", rank);
    double v = 0;
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(&v, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(&v, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            v += 1;
            MPI_Send(&v, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
            if (i == at) {
                printf("sends_before_signal=%ld\n", i + 1);
                fflush(stdout);
                if (heap) {
                    /* A block carved from the top chunk, written past its
                     * end over the top chunk's size field. */
                    char *p = malloc(24);
                    memset(p, 0xff, 48);
                }
                if (segv || heap)
                    *(volatile int *)0 = 1;
                else
                    raise(SIGTERM);
            }
        }
    }
    MPI_Finalize();
    return 0;
}

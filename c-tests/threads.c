/* threads: MPI_THREAD_MULTIPLE with `nthreads` threads per rank, each
 * making `iters` pairs of MPI_Comm_size and MPI_Sendrecv (to itself, with
 * its own tag). Tests check that every call of every thread is recorded.
 *
 * usage: mpirun -np N threads [iters] [nthreads]
 * Rank 0 prints `calls <MPI_Name>=<count per rank>` lines and `wall_s=`.
 */
#include "common.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

static long iters = 1000;

static void *work(void *arg)
{
    int tag = (int)(long)arg, rank, size;
    double out = tag, in = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (long i = 0; i < iters; i++) {
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Sendrecv(&out, 1, MPI_DOUBLE, rank, tag, &in, 1, MPI_DOUBLE, rank, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long nthreads = 4;
    if (argc > 3 || parse_arg(argc, argv, 1, "iters", 1, 100000000, &iters, rank) != 0 ||
        parse_arg(argc, argv, 2, "nthreads", 1, 256, &nthreads, rank) != 0)
        usage_exit(argv[0], "[iters] [nthreads]", rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            fprintf(stderr, "threads: the MPI library does not provide MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 2;
    }
    pthread_t t[256];
    double t0 = timed_start();
    for (long i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, work, (void *)(i + 1));
    for (long i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    timed_end(t0, rank);
    if (rank == 0) {
        printf("calls MPI_Comm_size=%ld\n", iters * nthreads);
        printf("calls MPI_Sendrecv=%ld\n", iters * nthreads);
    }
    MPI_Finalize();
    return 0;
}

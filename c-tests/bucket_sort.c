/* A bucket sort skeleton: the communication pattern of NPB IS (integer
 * sort), with a fixed compute time per rank and iteration.
 *
 * usage: bucket_sort [keys=16384] [iters=10] [compute_us=500]
 * Each rank holds `keys` keys (weak scaling); the rank count must divide
 * it. Every iteration: the keys' generation and bucketing
 * (compute_us µs), MPI_Allreduce of the 1024 bucket sizes, MPI_Alltoall
 * of the counts each rank sends to each other, MPI_Alltoallv of the keys
 * (the keys are spread evenly: keys / size to each rank, its own
 * included), then the local sort (compute_us / 2 µs). A last
 * MPI_Reduce gathers the keys' checksum on rank 0. The compute spins on
 * the thread's CPU clock, or, under SMPI (smpicc), is injected with
 * smpi_execute. Rank 0 prints the common "wall_s=" line.
 */
#include "common.h"

#define BUCKETS 1024

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long keys = 16384, iters = 10, compute_us = 500;
    if (argc > 4 || parse_arg(argc, argv, 1, "keys", 1, 1L << 26, &keys, rank) != 0 ||
        parse_arg(argc, argv, 2, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 3, "compute_us", 0, 1L << 30, &compute_us, rank) != 0)
        usage_exit(argv[0], "[keys=16384] [iters=10] [compute_us=500]", rank);
    if (keys % size != 0) {
        if (rank == 0)
            fprintf(stderr, "bucket_sort: the rank count (%d) must divide the keys per rank (%ld)\n", size, keys);
        MPI_Finalize();
        return 2;
    }

    int *key = malloc((size_t)keys * sizeof *key), *sorted = malloc((size_t)keys * sizeof *sorted);
    int *scount = malloc((size_t)size * sizeof *scount), *rcount = malloc((size_t)size * sizeof *rcount);
    int *sdispl = malloc((size_t)size * sizeof *sdispl), *rdispl = malloc((size_t)size * sizeof *rdispl);
    int bucket[BUCKETS] = {0}, total[BUCKETS];
    if (!key || !sorted || !scount || !rcount || !sdispl || !rdispl) {
        fprintf(stderr, "bucket_sort: rank %d: cannot allocate %ld keys\n", rank, keys);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    long checksum = 0;
    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        /* Key i goes to rank (i + rank) mod size: keys / size to each. */
        for (int d = 0; d < size; d++)
            scount[d] = 0;
        for (long i = 0; i < keys; i++) {
            int d = (int)((i + rank) % size);
            key[(long)d * (keys / size) + scount[d]++] = (int)((i * 7919 + it) % BUCKETS);
        }
        for (int d = 0; d < size; d++)
            sdispl[d] = d * (int)(keys / size);
        for (int b = 0; b < BUCKETS; b++)
            bucket[b] = (int)(keys / BUCKETS);
        exact_compute(1e-6 * (double)compute_us);
        MPI_Allreduce(bucket, total, BUCKETS, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
        rdispl[0] = 0;
        for (int d = 1; d < size; d++)
            rdispl[d] = rdispl[d - 1] + rcount[d - 1];
        MPI_Alltoallv(key, scount, sdispl, MPI_INT, sorted, rcount, rdispl, MPI_INT, MPI_COMM_WORLD);
        exact_compute(0.5e-6 * (double)compute_us);
        checksum += sorted[0] + total[0];
    }
    long all = 0;
    MPI_Reduce(&checksum, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    timed_end(t0, rank);

    free(key);
    free(sorted);
    free(scount);
    free(rcount);
    free(sdispl);
    free(rdispl);
    MPI_Finalize();
    return 0;
}

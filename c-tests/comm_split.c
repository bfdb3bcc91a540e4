/* Collectives and point-to-point on sub-communicators.
 *
 * usage: comm_split [iters=100] [count=1024]
 * The ranks form a px x py grid (MPI_Dims_create). Each iteration: a few
 * microseconds of arithmetic, an MPI_Allreduce of one double on the row
 * communicator (MPI_Comm_split by row), an MPI_Bcast of `count` doubles
 * from the column's first rank on the column communicator, an
 * MPI_Sendrecv of `count` doubles around a ring on an MPI_Comm_dup of
 * MPI_COMM_WORLD, and an MPI_Barrier on the column. Rank 0 prints
 * `grid=<px>x<py>`, a checksum and the common "wall_s=" line.
 */
#include "common.h"

#define WORK_FLOPS 4000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long iters = 100, count = 1024;
    if (argc > 3 || parse_arg(argc, argv, 1, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 2, "count", 1, INT_MAX / 8, &count, rank) != 0)
        usage_exit(argv[0], "[iters=100] [count=1024]", rank);

    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    int px = dims[1], row_id = rank / px, col_id = rank % px;
    MPI_Comm row, col, ring;
    MPI_Comm_split(MPI_COMM_WORLD, row_id, col_id, &row);
    MPI_Comm_split(MPI_COMM_WORLD, col_id, row_id, &col);
    MPI_Comm_dup(MPI_COMM_WORLD, &ring);

    double *buf = malloc((size_t)count * sizeof(double));
    double *in = malloc((size_t)count * sizeof(double));
    if (buf == NULL || in == NULL) {
        fprintf(stderr, "comm_split: rank %d: cannot allocate 2 x %ld doubles\n", rank, count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long j = 0; j < count; j++)
        buf[j] = (double)(rank + j % 5);

    double acc = 0.0, total = 0.0;
    double t0 = timed_start();
    for (long i = 0; i < iters; i++) {
        for (int k = 0; k < WORK_FLOPS; k++)
            acc = acc * 0.999999 + 1e-6;
        double mine = acc + rank, sum = 0.0;
        MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, row);
        total += sum * 1e-9;
        MPI_Bcast(buf, (int)count, MPI_DOUBLE, 0, col);
        MPI_Sendrecv(buf, (int)count, MPI_DOUBLE, (rank + 1) % size, 7, in, (int)count, MPI_DOUBLE,
                     (rank + size - 1) % size, 7, ring, MPI_STATUS_IGNORE);
        buf[i % count] = 0.5 * (buf[i % count] + in[i % count]);
        MPI_Barrier(col);
    }
    timed_end(t0, rank);

    if (rank == 0)
        printf("grid=%dx%d\nchecksum=%.9e\n", px, dims[0], total + buf[0]);
    free(buf);
    free(in);
    MPI_Comm_free(&ring);
    MPI_Comm_free(&col);
    MPI_Comm_free(&row);
    MPI_Finalize();
    return 0;
}

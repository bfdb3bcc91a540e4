/* A nonblocking neighbour exchange loop: the latency-bound pattern whose
 * cost is mostly posting requests and waiting on them.
 *
 * usage: nbexchange [iters=100000] [bytes=8] [allreduce_every=0]
 * The ranks form a ring. Every iteration each rank posts MPI_Irecv from
 * both neighbours, then MPI_Isend of `bytes` bytes to both, then one
 * MPI_Waitall on the four requests; the received bytes feed the next
 * message. With allreduce_every = k > 0, every k-th iteration ends with an
 * MPI_Allreduce (MPI_SUM) of one double over MPI_COMM_WORLD: a ring with a
 * periodic reduction, as in a solver's convergence check. At 1 rank both
 * neighbours are the rank itself. Rank 0 prints "checksum=<sum of its last
 * received bytes>" and the common "wall_s=" line.
 */
#include <string.h>

#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long iters = 100000, bytes = 8, every = 0;
    if (argc > 4 || parse_arg(argc, argv, 1, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 2, "bytes", 1, 1 << 20, &bytes, rank) != 0 ||
        parse_arg(argc, argv, 3, "allreduce_every", 0, LONG_MAX, &every, rank) != 0)
        usage_exit(argv[0], "[iters=100000] [bytes=8] [allreduce_every=0]", rank);

    unsigned char *out = malloc((size_t)bytes), *in_l = malloc((size_t)bytes), *in_r = malloc((size_t)bytes);
    if (out == NULL || in_l == NULL || in_r == NULL) {
        fprintf(stderr, "nbexchange: rank %d: cannot allocate 3 x %ld bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(out, rank + 1, (size_t)bytes);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;

    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        MPI_Request req[4];
        MPI_Irecv(in_l, (int)bytes, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(in_r, (int)bytes, MPI_BYTE, right, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(out, (int)bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(out, (int)bytes, MPI_BYTE, left, 2, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        for (long b = 0; b < bytes; b++)
            out[b] = (unsigned char)(in_l[b] + in_r[b]);
        if (every > 0 && (it + 1) % every == 0) {
            double local = (double)out[0], global = 0.0;
            MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            out[0] = (unsigned char)((long)global % 251);
        }
    }
    timed_end(t0, rank);
    if (rank == 0) {
        unsigned long sum = 0;
        for (long b = 0; b < bytes; b++)
            sum += in_l[b] + in_r[b];
        printf("checksum=%lu\n", sum);
    }
    free(out);
    free(in_l);
    free(in_r);
    MPI_Finalize();
    return 0;
}

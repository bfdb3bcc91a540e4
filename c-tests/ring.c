/* A token passed around all ranks, `iters` laps.
 *
 * usage: ring [iters=10000] [bytes=8]
 * Rank 0 sends to rank 1 and receives from rank size-1; every other rank
 * receives from its predecessor and sends to its successor. Each rank makes
 * exactly `iters` MPI_Send and `iters` MPI_Recv calls.
 */
#include <string.h>

#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const char *usage = "[iters=10000] [bytes=8]";
    long iters = 10000, bytes = 8;
    if (argc > 3 || parse_arg(argc, argv, 1, "iters", 1, LONG_MAX, &iters, rank) != 0 ||
        parse_arg(argc, argv, 2, "bytes", 1, INT_MAX, &bytes, rank) != 0)
        usage_exit(argv[0], usage, rank);
    if (size < 2)
        usage_exit(argv[0], "[iters=10000] [bytes=8]  (needs at least 2 ranks)", rank);

    char *token = malloc((size_t)bytes);
    if (token == NULL) {
        fprintf(stderr, "ring: rank %d: cannot allocate %ld bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(token, 0, (size_t)bytes);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    double t0 = timed_start();
    for (long i = 0; i < iters; i++) {
        if (rank == 0) {
            token[0]++;
            MPI_Send(token, (int)bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
            MPI_Recv(token, (int)bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(token, (int)bytes, MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(token, (int)bytes, MPI_BYTE, next, 0, MPI_COMM_WORLD);
        }
    }
    timed_end(t0, rank);

    free(token);
    MPI_Finalize();
    return 0;
}

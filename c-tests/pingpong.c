/* Ping-pong between ranks 0 and 1 for sizes 1 B .. 4 MiB (powers of two).
 *
 * usage: pingpong [reps=100]
 * Rank 0 prints one line per size, "size_bytes=<n> half_rtt_s=<t>", the
 * mean half round-trip time over `reps` timed round trips (after one
 * untimed warm-up round trip), then the common "wall_s=" line. Ranks >= 2
 * only take part in the barriers.
 */
#include <string.h>

#include "common.h"

#define MAX_BYTES (4L << 20)
#define NSIZES 23 /* 2^0 .. 2^22 */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long reps = 100;
    if (argc > 2 || parse_arg(argc, argv, 1, "reps", 1, 1000000, &reps, rank) != 0)
        usage_exit(argv[0], "[reps=100]", rank);
    if (size < 2)
        usage_exit(argv[0], "[reps=100]  (needs at least 2 ranks)", rank);

    char *buf = malloc(MAX_BYTES);
    if (buf == NULL) {
        fprintf(stderr, "pingpong: rank %d: cannot allocate %ld bytes\n", rank, MAX_BYTES);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, rank, MAX_BYTES);
    double half_rtt[NSIZES] = {0};

    double t0 = timed_start();
    if (rank <= 1) {
        int peer = 1 - rank;
        for (int k = 0; k < NSIZES; k++) {
            int bytes = 1 << k;
            double start = 0.0;
            for (long r = 0; r <= reps; r++) { /* r == 0 is the warm-up */
                if (r == 1)
                    start = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(buf, bytes, MPI_BYTE, peer, k, MPI_COMM_WORLD);
                    MPI_Recv(buf, bytes, MPI_BYTE, peer, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(buf, bytes, MPI_BYTE, peer, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, bytes, MPI_BYTE, peer, k, MPI_COMM_WORLD);
                }
            }
            half_rtt[k] = (MPI_Wtime() - start) / (2.0 * (double)reps);
        }
    }
    timed_end(t0, rank);

    if (rank == 0)
        for (int k = 0; k < NSIZES; k++)
            printf("size_bytes=%d half_rtt_s=%.9e\n", 1 << k, half_rtt[k]);
    free(buf);
    MPI_Finalize();
    return 0;
}

/* One-sided communication (MPI RMA): fence epochs, passive-target lock
 * epochs and PSCW epochs on a ring, with Put, Get and Accumulate.
 *
 * usage: rma [iters=200] [elems=1024] [work=20000]
 * Each iteration: a compute block of `work` multiply-adds, then
 *   - fence epoch: Put `elems` doubles into the right neighbour's slot,
 *     Get the left neighbour's slot, Accumulate (MPI_SUM) 1 into rank 0;
 *   - lock epoch: exclusive lock on rank 0, Accumulate 1, Get, unlock;
 *     shared lock on the right neighbour, Get `elems` doubles, unlock;
 *   - PSCW epoch: post to the left neighbour, start on the right one,
 *     Put `elems` doubles, complete, wait.
 * Once, at the end: Fetch_and_op, Compare_and_swap, Get_accumulate, Rput
 * and Rget (waited), Raccumulate and Rget_accumulate under lock_all,
 * flush, flush_local, flush_all, flush_local_all, unlock_all.
 * Rank 0 checks the counters (fence and lock epochs: iters × size each,
 * then the final calls) and prints "check=ok", then the common "wall_s=".
 * A wrong result aborts.
 */
#include <stdint.h>
#include <string.h>

#include "common.h"

/* Slots of the window's doubles: [0, elems) the fence epoch's puts,
 * [elems, 2 elems) the PSCW epoch's, then the counters. */
enum { FENCE_COUNT, LOCK_COUNT, FINAL_COUNT, CAS_SLOT, NCOUNT };

static double work_block(long work, double x)
{
    for (long i = 0; i < work; i++)
        x = x * 1.0000001 + 1e-9;
    return x;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 200, elems = 1024, work = 20000;
    const char *usage = "[iters=200] [elems=1024] [work=20000]";
    if (argc > 4 || parse_arg(argc, argv, 1, "iters", 1, 10000000, &iters, rank) != 0 ||
        parse_arg(argc, argv, 2, "elems", 1, 1 << 22, &elems, rank) != 0 ||
        parse_arg(argc, argv, 3, "work", 0, 1000000000, &work, rank) != 0)
        usage_exit(argv[0], usage, rank);

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Aint n = 2 * elems + NCOUNT;
    double *base = calloc((size_t)n, sizeof(double));
    double *src = malloc((size_t)elems * sizeof(double));
    double *dst = malloc((size_t)elems * sizeof(double));
    if (base == NULL || src == NULL || dst == NULL) {
        fprintf(stderr, "rma: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < elems; i++)
        src[i] = rank + i * 1e-3;
    MPI_Win win;
    MPI_Win_create(base, n * (MPI_Aint)sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Group world, left_g, right_g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &left_g);
    MPI_Group_incl(world, 1, &right, &right_g);
    double one = 1.0, x = 1.0, got = 0.0;

    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        x = work_block(work, x);
        /* Fence epoch. */
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        MPI_Put(src, (int)elems, MPI_DOUBLE, right, 0, (int)elems, MPI_DOUBLE, win);
        MPI_Get(dst, (int)elems, MPI_DOUBLE, left, 0, (int)elems, MPI_DOUBLE, win);
        MPI_Accumulate(&one, 1, MPI_DOUBLE, 0, 2 * elems + FENCE_COUNT, 1, MPI_DOUBLE, MPI_SUM, win);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        /* Passive target. */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Accumulate(&one, 1, MPI_DOUBLE, 0, 2 * elems + LOCK_COUNT, 1, MPI_DOUBLE, MPI_SUM, win);
        MPI_Get(&got, 1, MPI_DOUBLE, 0, 2 * elems + LOCK_COUNT, 1, MPI_DOUBLE, win);
        MPI_Win_unlock(0, win);
        MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
        MPI_Get(dst, (int)elems, MPI_DOUBLE, right, 0, (int)elems, MPI_DOUBLE, win);
        MPI_Win_unlock(right, win);
        /* PSCW: exposed to the left neighbour, accessing the right one. */
        MPI_Win_post(left_g, 0, win);
        MPI_Win_start(right_g, 0, win);
        MPI_Put(src, (int)elems, MPI_DOUBLE, right, elems, (int)elems, MPI_DOUBLE, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
    }

    /* Once: the other data movements and synchronizations. */
    double old = 0.0, res[2] = {0, 0};
    /* Compare-and-swap takes integer types only (MPI 3.1, section 11.3.4):
     * the 8-byte slot, zero from calloc, is compared as an int64_t. */
    int64_t swap_in = 1, cmp = 0, swapped = 0;
    MPI_Request req[4];
    MPI_Win_lock_all(0, win);
    MPI_Fetch_and_op(&one, &old, MPI_DOUBLE, 0, 2 * elems + FINAL_COUNT, MPI_SUM, win);
    MPI_Win_flush(0, win);
    MPI_Compare_and_swap(&swap_in, &cmp, &swapped, MPI_INT64_T, right, 2 * elems + CAS_SLOT, win);
    MPI_Win_flush_local(right, win);
    MPI_Get_accumulate(&one, 1, MPI_DOUBLE, &res[0], 1, MPI_DOUBLE, 0, 2 * elems + FINAL_COUNT, 1, MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_flush_all(win);
    MPI_Rput(src, (int)elems, MPI_DOUBLE, right, 0, (int)elems, MPI_DOUBLE, win, &req[0]);
    MPI_Rget(dst, (int)elems, MPI_DOUBLE, left, 0, (int)elems, MPI_DOUBLE, win, &req[1]);
    MPI_Raccumulate(&one, 1, MPI_DOUBLE, 0, 2 * elems + FINAL_COUNT, 1, MPI_DOUBLE, MPI_SUM, win, &req[2]);
    MPI_Rget_accumulate(&one, 1, MPI_DOUBLE, &res[1], 1, MPI_DOUBLE, 0, 2 * elems + FINAL_COUNT, 1, MPI_DOUBLE, MPI_SUM, win, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    MPI_Win_flush_local_all(win);
    MPI_Win_unlock_all(win);
    timed_end(t0, rank);

    if (rank == 0) {
        double want = (double)iters * size;
        double *c = base + 2 * elems;
        if (c[FENCE_COUNT] != want || c[LOCK_COUNT] != want || c[FINAL_COUNT] != 4.0 * size) {
            fprintf(stderr, "rma: wrong counters %g %g %g (want %g %g %g)\n", c[FENCE_COUNT], c[LOCK_COUNT],
                    c[FINAL_COUNT], want, want, 4.0 * size);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        printf("check=ok\n");
    }
    /* The neighbours' puts landed: the left one's values in both slots. */
    for (long i = 0; i < elems; i++)
        if (base[i] != left + i * 1e-3 || base[elems + i] != left + i * 1e-3) {
            fprintf(stderr, "rma: rank %d: slot %ld holds %g, want %g\n", rank, i, base[i], left + i * 1e-3);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    if (x < 0)
        printf("%g\n", x); /* keeps the compute blocks */

    MPI_Group_free(&left_g);
    MPI_Group_free(&right_g);
    MPI_Group_free(&world);
    MPI_Win_free(&win);
    MPI_Win win2;
    double *mem = NULL;
    MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win2);
    MPI_Win_free(&win2);
    free(base);
    free(src);
    free(dst);
    MPI_Finalize();
    return 0;
}

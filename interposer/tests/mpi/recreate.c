/* Communicators freed and created again (MPI often reuses the freed
 * handle) with other members and rank orders each time, intra- and
 * intercommunicators. Each iteration makes a ring Sendrecv on a split of
 * WORLD, then one across an intercommunicator between the split's two
 * halves; for each, rank r prints `expect@<r> <dst> <src>`, the world
 * ranks of its destination and source, from MPI's own groups.
 * usage: recreate <iters>  (an even number of ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int world_of(MPI_Comm comm, int r, int remote) {
    MPI_Group g, wg;
    int w = MPI_UNDEFINED;
    if (remote) MPI_Comm_remote_group(comm, &g);
    else MPI_Comm_group(comm, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_translate_ranks(g, 1, &r, wg, &w);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    return w;
}

/* A ring step on comm (remote: its remote group), printed. */
static void ring(MPI_Comm comm, int remote, int rank) {
    int me, n, x = rank, y = -1;
    MPI_Comm_rank(comm, &me);
    if (remote) MPI_Comm_remote_size(comm, &n);
    else MPI_Comm_size(comm, &n);
    int dst = (me + 1) % n, src = (me + n - 1) % n;
    MPI_Sendrecv(&x, 1, MPI_INT, dst, 5, &y, 1, MPI_INT, src, 5, comm, MPI_STATUS_IGNORE);
    printf("expect@%d %d %d\n", rank, world_of(comm, dst, remote), world_of(comm, src, remote));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = argc > 1 ? atol(argv[1]) : 10;
    int *all = malloc((size_t)size * sizeof *all);
    for (long it = 0; it < iters; it++) {
        /* Halves by parity or by position; ranks in world or reversed order. */
        int color = it % 2 ? rank % 2 : rank < size / 2;
        int key = it % 3 ? rank : size - rank;
        MPI_Comm sub, inter;
        MPI_Comm_split(MPI_COMM_WORLD, color, key, &sub);
        ring(sub, 0, rank);
        /* The other half's leader: the world rank of its rank 0. */
        int sr, mine, leader = -1;
        MPI_Comm_rank(sub, &sr);
        mine = sr == 0 ? color : -1;
        MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            if (all[r] == 1 - color) leader = r;
        MPI_Intercomm_create(sub, 0, MPI_COMM_WORLD, leader, 9, &inter);
        ring(inter, 1, rank);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&sub);
    }
    free(all);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

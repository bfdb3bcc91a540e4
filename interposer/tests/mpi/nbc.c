/* Nonblocking collectives and matched receives for online mode.
 * usage: nbc <iters> <work>; any number of ranks >= 2. Each iteration:
 * - an Ibcast (root rotating) whose root then blocks in a rendezvous-size
 *   Send to the next rank, which posts the Ibcast only after receiving it
 *   (legal: a post must not block, or this deadlocks);
 * - an Iallreduce and a 64 KiB Ibcast overlapped with compute;
 * - an Iallgather, an Ialltoall and a ring Isend/Irecv in one Waitall,
 *   in mixed order; an Ireduce and an Igather completed by Testall; an
 *   Iscan and an Iexscan by Waitany; the v-forms (equal counts on every
 *   rank) and Ireduce_scatter(_block) by Waitsome; an Ibarrier by Test;
 * - two messages of one tag from the left neighbour (eager, then
 *   rendezvous size), matched by Mprobe in order and received in reverse
 *   order by Mrecv; one matched by Improbe (any source) and received by
 *   Imrecv and Wait.
 * Rank 0 prints "sum=<checksum>" (every rank's results folded in). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG 32768 /* doubles: 256 KiB, rendezvous in any MPI */
#define MID 8192  /* doubles: 64 KiB */

static volatile double sink;

static void compute(long work) {
    double a = 1.0;
    for (long i = 0; i < work * 10000; i++) a = a * 1.0000001 + 1e-9;
    sink = a;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = argc > 1 ? atol(argv[1]) : 5, work = argc > 2 ? atol(argv[2]) : 10;
    MPI_Comm w = MPI_COMM_WORLD;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double *big = calloc(BIG, sizeof *big), *mid = calloc(MID, sizeof *mid), *in = calloc(BIG, sizeof *in);
    size_t n = (size_t)size;
    double *gat = calloc(2 * n, sizeof(double)), *a2a_s = calloc(n, sizeof(double)), *a2a_r = calloc(n, sizeof(double));
    double *gath = calloc(n, sizeof(double)), *gv = calloc(2 * n, sizeof(double)), *agv = calloc(2 * n, sizeof(double));
    double *vs = calloc(3 * n, sizeof(double)), *vr = calloc(3 * n, sizeof(double));
    int *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int));
    int *two = malloc(n * sizeof(int)), *twod = malloc(n * sizeof(int));
    int *rcounts = malloc(n * sizeof(int)), *rdispls = malloc(n * sizeof(int));
    for (int i = 0, d = 0; i < size; i++) {
        counts[i] = 1 + i % 3; /* what every rank sends to rank i */
        displs[i] = d;
        d += counts[i];
        two[i] = 2;
        twod[i] = 2 * i;
        a2a_s[i] = rank * 100 + i;
    }
    for (int i = 0; i < size; i++) {
        rcounts[i] = counts[rank]; /* what rank i sends here */
        rdispls[i] = i * counts[rank];
    }
    for (int i = 0; i < 3 * size; i++) vs[i] = rank + i;
    double sum = 0.0;
    for (long it = 0; it < iters; it++) {
        MPI_Request q[6];
        double x[4] = {rank + it, 1, 2, 3}, y[4] = {0}, z[4] = {0}, s1 = 0, s2 = 0;
        int root = (int)(it % size), next = (root + 1) % size;

        /* Ibcast, then the root's rendezvous send to a rank not yet in it. */
        double v = rank == root ? 10.0 * it : -1.0;
        if (rank == root) {
            MPI_Ibcast(&v, 1, MPI_DOUBLE, root, w, &q[0]);
            big[0] = it;
            MPI_Send(big, BIG, MPI_DOUBLE, next, 7, w);
        } else if (rank == next) {
            MPI_Recv(in, BIG, MPI_DOUBLE, root, 7, w, MPI_STATUS_IGNORE);
            sum += in[0];
            MPI_Ibcast(&v, 1, MPI_DOUBLE, root, w, &q[0]);
        } else {
            MPI_Ibcast(&v, 1, MPI_DOUBLE, root, w, &q[0]);
        }
        compute(work);
        MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        sum += v;

        /* Overlap: Iallreduce and a large Ibcast behind compute. */
        MPI_Iallreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, w, &q[0]);
        if (rank == root) mid[0] = it + 0.5;
        MPI_Ibcast(mid, MID, MPI_DOUBLE, root, w, &q[1]);
        compute(2 * work);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        sum += y[0] + mid[0];

        /* Two outstanding collectives and a ring exchange, one Waitall. */
        MPI_Iallgather(x, 2, MPI_DOUBLE, gat, 2, MPI_DOUBLE, w, &q[0]);
        MPI_Irecv(z, 4, MPI_DOUBLE, left, 3, w, &q[1]);
        MPI_Ialltoall(a2a_s, 1, MPI_DOUBLE, a2a_r, 1, MPI_DOUBLE, w, &q[2]);
        MPI_Isend(x, 4, MPI_DOUBLE, right, 3, w, &q[3]);
        compute(work / 2);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        sum += gat[2 * (size - 1)] + z[0] + a2a_r[size - 1];

        /* Rooted ones by Testall. */
        int flag = 0;
        MPI_Ireduce(x, y, 4, MPI_DOUBLE, MPI_MAX, size - 1, w, &q[0]);
        MPI_Igather(x, 1, MPI_DOUBLE, gath, 1, MPI_DOUBLE, root, w, &q[1]);
        while (!flag) MPI_Testall(2, q, &flag, MPI_STATUSES_IGNORE);
        if (rank == size - 1) sum += y[0];
        if (rank == root) sum += gath[size - 1];

        /* Scans by Waitany. */
        MPI_Iscan(&x[0], &s1, 1, MPI_DOUBLE, MPI_SUM, w, &q[0]);
        MPI_Iexscan(&x[0], &s2, 1, MPI_DOUBLE, MPI_SUM, w, &q[1]);
        for (int k = 0, idx; k < 2; k++) MPI_Waitany(2, q, &idx, MPI_STATUS_IGNORE);
        sum += s1 + (rank > 0 ? s2 : 0);

        /* v-forms and reduce-scatters by Waitsome. */
        double rs[4] = {0}, rsb[2] = {0};
        MPI_Igatherv(x, 2, MPI_DOUBLE, gv, two, twod, MPI_DOUBLE, root, w, &q[0]);
        MPI_Iallgatherv(x, 2, MPI_DOUBLE, agv, two, twod, MPI_DOUBLE, w, &q[1]);
        MPI_Ialltoallv(vs, counts, displs, MPI_DOUBLE, vr, rcounts, rdispls, MPI_DOUBLE, w, &q[2]);
        MPI_Ireduce_scatter(vs, rs, counts, MPI_DOUBLE, MPI_SUM, w, &q[3]);
        MPI_Ireduce_scatter_block(vs, rsb, 2, MPI_DOUBLE, MPI_SUM, w, &q[4]);
        compute(work / 2);
        for (int left_ = 5, out, idx[5]; left_ > 0; left_ -= out) MPI_Waitsome(5, q, &out, idx, MPI_STATUSES_IGNORE);
        sum += agv[2 * size - 2] + vr[0] + rs[0] + rsb[0] + (rank == root ? gv[2 * size - 2] : 0);

        /* Ibarrier by Test. */
        flag = 0;
        MPI_Ibarrier(w, &q[0]);
        while (!flag) MPI_Test(&q[0], &flag, MPI_STATUS_IGNORE);

        /* Matched probes: two of one tag in order, received in reverse. */
        MPI_Message m1, m2;
        MPI_Status st1, st2;
        double e = rank + 0.25, got = 0;
        big[0] = rank + 0.75;
        MPI_Isend(&e, 1, MPI_DOUBLE, right, 5, w, &q[0]);
        MPI_Isend(big, BIG, MPI_DOUBLE, right, 5, w, &q[1]);
        MPI_Mprobe(left, 5, w, &m1, &st1);
        MPI_Mprobe(left, 5, w, &m2, &st2);
        MPI_Mrecv(in, BIG, MPI_DOUBLE, &m2, MPI_STATUS_IGNORE);
        MPI_Mrecv(&got, 1, MPI_DOUBLE, &m1, MPI_STATUS_IGNORE);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        sum += got + in[0];
        MPI_Isend(x, 4, MPI_DOUBLE, right, 6, w, &q[0]);
        flag = 0;
        MPI_Message m3;
        MPI_Status st3;
        while (!flag) MPI_Improbe(MPI_ANY_SOURCE, 6, w, &flag, &m3, &st3);
        MPI_Imrecv(z, 4, MPI_DOUBLE, &m3, &q[1]);
        compute(work / 4);
        MPI_Wait(&q[1], MPI_STATUS_IGNORE);
        MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        sum += z[0];
    }
    double total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, w);
    if (rank == 0) printf("sum=%.3f\n", total);
    free(big), free(mid), free(in), free(gat), free(a2a_s), free(a2a_r), free(gath), free(gv), free(agv), free(vs), free(vr);
    free(counts), free(displs), free(two), free(twod), free(rcounts), free(rdispls);
    MPI_Finalize();
    return 0;
}

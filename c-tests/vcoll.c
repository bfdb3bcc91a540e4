/* vcoll: the v- and w-collectives with uneven counts (Gatherv, Scatterv,
 * Allgatherv, Alltoallv, Alltoallw, Reduce_scatter and their nonblocking
 * forms), the neighbourhood collectives on a periodic 1-D Cartesian ring,
 * a distributed graph (a directed ring) and a graph (an undirected ring),
 * and Comm_idup/Comm_split_type. Needs >= 3 ranks (distinct neighbours).
 *
 * usage: mpirun -np N vcoll [iters [full]]
 * With full = 0, only the blocking v- and w-collectives on MPI_COMM_WORLD
 * run (what a SimGrid TI trace can express); default 1.
 * Rank 0 prints, for every rank r: `calls@r <MPI_Name>=<count>` for each
 * function it calls, and `rec@r <MPI_Name> send=.. recv=.. [dsts=.. srcs=..]`:
 * the byte counts (and neighbours as world ranks) the call was given, as
 * the trace should record them (comma-separated, `-` for an empty list);
 * `nbr@r`/`dist@r`/`graph@r` lines with the neighbours (world ranks) of
 * the ring, directed ring and graph calls, `errors@r <n>` (received
 * values that were wrong: 0), then `wall_s=...`.
 */
#include "common.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAXB 4096
#define TEXT 16384

static char text[TEXT];
static size_t used;
static int errors;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(text + used, TEXT - used, fmt, ap);
    va_end(ap);
    if (k > 0 && used + (size_t)k < TEXT) used += (size_t)k;
}

/* `key=a,b,c` (counts × size bytes), `-` when n == 0. */
static void list(const char *key, int n, const int *counts, const int *sizes) {
    out(" %s=", key);
    if (n == 0) out("-");
    for (int i = 0; i < n; i++) out("%s%lld", i ? "," : "", (long long)counts[i] * sizes[i]);
}

static void rec(int me_world, const char *name, int ns, const int *sc, const int *ss, int nr, const int *rc, const int *rs) {
    out("rec@%d %s", me_world, name);
    list("send", ns, sc, ss);
    list("recv", nr, rc, rs);
    out("\n");
}

static void peers(const char *key, int n, const int *w) {
    out(" %s=", key);
    if (n == 0) out("-");
    for (int i = 0; i < n; i++) out("%s%d", i ? "," : "", w[i]);
}

static void expect(int got, int want) {
    if (got != want) errors++;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long iters = 2;
    long full = 1;
    if (parse_arg(argc, argv, 1, "iters", 1, 1000000, &iters, me) != 0 || parse_arg(argc, argv, 2, "full", 0, 1, &full, me) != 0)
        usage_exit(argv[0], "[iters [full]]", me);
    if (n < 3 || n > 16) usage_exit(argv[0], "[iters] (3 to 16 ranks)", me);
    static int sbuf[MAXB], rbuf[MAXB], sc[64], rc[64], sd[64], rd[64], ssz[64], rsz[64];
    static MPI_Datatype st[64], rt[64];
    const int I = (int)sizeof(int), D = (int)sizeof(double);
    for (int i = 0; i < MAXB; i++) sbuf[i] = me;
    int one = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    const int root = n - 1, left = (me + n - 1) % n, right = (me + 1) % n;
    /* Topologies: a periodic ring, a directed ring, an undirected ring. */
    MPI_Comm cart, dist, graph, dup, shared;
    int periodic = 1;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &periodic, 0, &cart);
    int weight = 1; /* weighted, so that the interposer's weighted query path runs */
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &weight, 1, &right, &weight, MPI_INFO_NULL, 0, &dist);
    int index[64], edges[128];
    for (int i = 0; i < n; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + n - 1) % n;
        edges[2 * i + 1] = (i + 1) % n;
    }
    MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &graph);
    MPI_Request req;
    MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &shared);
    for (int i = 0; i < n; i++) ssz[i] = I, rsz[i] = I;

    for (long it = 0; it < iters; it++) {
        int block;
        for (int nb = 0; nb < (full ? 2 : 1); nb++) {
            MPI_Request *r = nb ? &req : NULL;
#define DONE() do { if (r) MPI_Wait(r, MPI_STATUS_IGNORE); } while (0)
            int first = it == 0;
            /* Gatherv to `root`: rank i sends i + 1 ints. */
            block = 0;
            for (int i = 0; i < n; i++) rc[i] = i + 1, rd[i] = block, block += rc[i];
            sc[0] = me + 1;
            if (r) MPI_Igatherv(sbuf, sc[0], MPI_INT, rbuf, rc, rd, MPI_INT, root, MPI_COMM_WORLD, r);
            else MPI_Gatherv(sbuf, sc[0], MPI_INT, rbuf, rc, rd, MPI_INT, root, MPI_COMM_WORLD);
            DONE();
            if (me == root) for (int i = 0; i < n; i++) expect(rbuf[rd[i] + i], i);
            if (first) rec(me, r ? "MPI_Igatherv" : "MPI_Gatherv", 1, sc, ssz, me == root ? n : 0, rc, rsz);
            /* Scatterv from 0: rank i gets 2 i + 1 ints. */
            for (int i = 0; i < n; i++) sc[i] = 2 * i + 1;
            rc[0] = 2 * me + 1;
            if (r) MPI_Iscatterv(sbuf, sc, rd, MPI_INT, rbuf, rc[0], MPI_INT, 0, MPI_COMM_WORLD, r);
            else MPI_Scatterv(sbuf, sc, rd, MPI_INT, rbuf, rc[0], MPI_INT, 0, MPI_COMM_WORLD);
            DONE();
            expect(rbuf[rc[0] - 1], 0);
            if (first) rec(me, r ? "MPI_Iscatterv" : "MPI_Scatterv", me == 0 ? n : 0, sc, ssz, 1, rc, rsz);
            /* Allgatherv: rank i contributes i + 2 ints. */
            block = 0;
            for (int i = 0; i < n; i++) rc[i] = i + 2, rd[i] = block, block += rc[i];
            sc[0] = me + 2;
            if (r) MPI_Iallgatherv(sbuf, sc[0], MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD, r);
            else MPI_Allgatherv(sbuf, sc[0], MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD);
            DONE();
            for (int i = 0; i < n; i++) expect(rbuf[rd[i] + rc[i] - 1], i);
            if (first) rec(me, r ? "MPI_Iallgatherv" : "MPI_Allgatherv", 1, sc, ssz, n, rc, rsz);
            /* Alltoallv: i sends i + j + 1 ints to j. */
            block = 0;
            for (int j = 0; j < n; j++) sc[j] = me + j + 1, sd[j] = block, block += sc[j];
            block = 0;
            for (int j = 0; j < n; j++) rc[j] = j + me + 1, rd[j] = block, block += rc[j];
            if (r) MPI_Ialltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD, r);
            else MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD);
            DONE();
            for (int j = 0; j < n; j++) expect(rbuf[rd[j]], j);
            if (first) rec(me, r ? "MPI_Ialltoallv" : "MPI_Alltoallv", n, sc, ssz, n, rc, rsz);
            /* Alltoallw: to j, j + 1 elements of an int (even j) or a double (odd j). */
            int sw[64], rw[64], sb = 0, rb = 0;
            for (int j = 0; j < n; j++) {
                st[j] = j % 2 ? MPI_DOUBLE : MPI_INT;
                sw[j] = j % 2 ? D : I;
                sc[j] = j + 1;
                sd[j] = sb;
                sb += sc[j] * sw[j];
                rt[j] = me % 2 ? MPI_DOUBLE : MPI_INT;
                rw[j] = me % 2 ? D : I;
                rc[j] = me + 1;
                rd[j] = rb;
                rb += rc[j] * rw[j];
            }
            if (r) MPI_Ialltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD, r);
            else MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD);
            DONE();
            if (first) rec(me, r ? "MPI_Ialltoallw" : "MPI_Alltoallw", n, sc, sw, n, rc, rw);
            /* Reduce_scatter: rank i gets i + 1 doubles of the sum. */
            static double dsend[MAXB], drecv[MAXB];
            int dsz[64], total = 0;
            for (int i = 0; i < n; i++) rc[i] = i + 1, dsz[i] = D, total += rc[i];
            for (int i = 0; i < total; i++) dsend[i] = 1.0;
            if (r) MPI_Ireduce_scatter(dsend, drecv, rc, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, r);
            else MPI_Reduce_scatter(dsend, drecv, rc, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            DONE();
            expect((int)drecv[me], n);
            if (first) rec(me, r ? "MPI_Ireduce_scatter" : "MPI_Reduce_scatter", 0, sc, dsz, n, rc, dsz);

            if (!full) continue;
            /* Neighbourhood collectives on the ring: neighbours [left, right]. */
            int nbrs[2] = {left, right};
            const char *nm;
            sc[0] = sc[1] = 3;
            rc[0] = rc[1] = 3;
            nm = r ? "MPI_Ineighbor_allgather" : "MPI_Neighbor_allgather";
            if (r) MPI_Ineighbor_allgather(sbuf, 3, MPI_INT, rbuf, 3, MPI_INT, cart, r);
            else MPI_Neighbor_allgather(sbuf, 3, MPI_INT, rbuf, 3, MPI_INT, cart);
            DONE();
            expect(rbuf[0], left);
            expect(rbuf[3], right);
            if (first) { rec(me, nm, 2, sc, ssz, 2, rc, rsz); out("nbr@%d %s", me, nm); peers("dsts", 2, nbrs); peers("srcs", 2, nbrs); out("\n"); }
            /* allgatherv: rank i sends i + 1 ints to both neighbours. */
            sc[0] = sc[1] = me + 1;
            rc[0] = left + 1, rc[1] = right + 1, rd[0] = 0, rd[1] = rc[0];
            nm = r ? "MPI_Ineighbor_allgatherv" : "MPI_Neighbor_allgatherv";
            if (r) MPI_Ineighbor_allgatherv(sbuf, me + 1, MPI_INT, rbuf, rc, rd, MPI_INT, cart, r);
            else MPI_Neighbor_allgatherv(sbuf, me + 1, MPI_INT, rbuf, rc, rd, MPI_INT, cart);
            DONE();
            expect(rbuf[rd[1]], right);
            if (first) { rec(me, nm, 2, sc, ssz, 2, rc, rsz); out("nbr@%d %s", me, nm); peers("dsts", 2, nbrs); peers("srcs", 2, nbrs); out("\n"); }
            sc[0] = sc[1] = rc[0] = rc[1] = 2;
            nm = r ? "MPI_Ineighbor_alltoall" : "MPI_Neighbor_alltoall";
            if (r) MPI_Ineighbor_alltoall(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, cart, r);
            else MPI_Neighbor_alltoall(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, cart);
            DONE();
            expect(rbuf[2], right);
            if (first) { rec(me, nm, 2, sc, ssz, 2, rc, rsz); out("nbr@%d %s", me, nm); peers("dsts", 2, nbrs); peers("srcs", 2, nbrs); out("\n"); }
            /* alltoallv: i sends i + 1 ints left and 2 i + 3 right. */
            sc[0] = me + 1, sc[1] = 2 * me + 3, sd[0] = 0, sd[1] = sc[0];
            rc[0] = 2 * left + 3, rc[1] = right + 1, rd[0] = 0, rd[1] = rc[0];
            nm = r ? "MPI_Ineighbor_alltoallv" : "MPI_Neighbor_alltoallv";
            if (r) MPI_Ineighbor_alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, cart, r);
            else MPI_Neighbor_alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, cart);
            DONE();
            expect(rbuf[rd[1] + rc[1] - 1], right);
            if (first) { rec(me, nm, 2, sc, ssz, 2, rc, rsz); out("nbr@%d %s", me, nm); peers("dsts", 2, nbrs); peers("srcs", 2, nbrs); out("\n"); }
            /* alltoallw: ints, 1 to the left and 2 to the right. */
            MPI_Aint sda[2] = {0, I}, rda[2] = {0, 2 * I};
            MPI_Datatype t2[2] = {MPI_INT, MPI_INT};
            sc[0] = 1, sc[1] = 2, rc[0] = 2, rc[1] = 1;
            nm = r ? "MPI_Ineighbor_alltoallw" : "MPI_Neighbor_alltoallw";
            if (r) MPI_Ineighbor_alltoallw(sbuf, sc, sda, t2, rbuf, rc, rda, t2, cart, r);
            else MPI_Neighbor_alltoallw(sbuf, sc, sda, t2, rbuf, rc, rda, t2, cart);
            DONE();
            expect(rbuf[2], right);
            if (first) { rec(me, nm, 2, sc, ssz, 2, rc, rsz); out("nbr@%d %s", me, nm); peers("dsts", 2, nbrs); peers("srcs", 2, nbrs); out("\n"); }
#undef DONE
        }
        /* The directed ring (to the right, from the left) and the graph. */
        if (!full) continue;
        sc[0] = rc[0] = 5;
        MPI_Neighbor_alltoall(sbuf, 5, MPI_INT, rbuf, 5, MPI_INT, dist);
        expect(rbuf[0], left);
        MPI_Neighbor_allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, graph);
        expect(rbuf[1], right);
    }
    /* The dist-graph and graph calls above, after the Cartesian ones. */
    int l1[1] = {left}, r1[1] = {right}, lr[2] = {left, right};
    out("dist@%d MPI_Neighbor_alltoall", me);
    peers("dsts", 1, r1);
    peers("srcs", 1, l1);
    out(" send=%d recv=%d\n", 5 * I, 5 * I);
    out("graph@%d MPI_Neighbor_allgather", me);
    peers("dsts", 2, lr);
    peers("srcs", 2, lr);
    out(" send=%d,%d recv=%d,%d\n", I, I, I, I);
    int shared_size = 0;
    MPI_Comm_size(shared, &shared_size);
    out("shared@%d %d\n", me, shared_size);

    const char *once[] = {"MPI_Comm_idup", "MPI_Comm_split_type", "MPI_Dist_graph_create_adjacent", "MPI_Graph_create"};
    for (int i = 0; i < 4; i++) out("calls@%d %s=%d\n", me, once[i], one);
    const char *each[] = {"MPI_Gatherv", "MPI_Scatterv", "MPI_Allgatherv", "MPI_Alltoallv", "MPI_Alltoallw",
                          "MPI_Reduce_scatter", "MPI_Igatherv", "MPI_Iscatterv", "MPI_Iallgatherv", "MPI_Ialltoallv",
                          "MPI_Ialltoallw", "MPI_Ireduce_scatter", "MPI_Neighbor_allgatherv",
                          "MPI_Neighbor_alltoallv", "MPI_Neighbor_alltoallw", "MPI_Ineighbor_allgather",
                          "MPI_Ineighbor_allgatherv", "MPI_Ineighbor_alltoall", "MPI_Ineighbor_alltoallv",
                          "MPI_Ineighbor_alltoallw"};
    for (int i = 0; i < 20; i++) out("calls@%d %s=%ld\n", me, each[i], i < 6 || full ? iters : 0);
    /* Blocking allgather and alltoall run on the ring and on the graphs. */
    long nb2 = full ? 2 * iters : 0;
    out("calls@%d MPI_Neighbor_allgather=%ld\ncalls@%d MPI_Neighbor_alltoall=%ld\n", me, nb2, me, nb2);
    out("errors@%d %d\n", me, errors);

    MPI_Comm_free(&shared);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&graph);
    MPI_Comm_free(&dist);
    MPI_Comm_free(&cart);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    static char all[64 * TEXT];
    MPI_Gather(text, TEXT, MPI_CHAR, all, TEXT, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (me == 0) {
        for (int i = 0; i < n; i++) fputs(all + (size_t)i * TEXT, stdout);
        printf("wall_s=%.6f\n", t1 - t0);
    }
    MPI_Finalize();
    return 0;
}

/* mpi_more: exercises the MPI calls of the interposer's wider coverage:
 * persistent requests (Send/Ssend/Bsend/Rsend/Recv_init, Start,
 * Startall, Request_free), Waitsome/Testsome, Cancel, matched probes
 * (Mprobe/Improbe, Mrecv/Imrecv), every nonblocking collective,
 * Cart_create/Cart_sub, Comm_create_group, Intercomm_create/merge with
 * point-to-point on the intercommunicator, and MPI-IO (open, set_view,
 * seek, read/write in their _all, _at and nonblocking forms, close) on
 * `file`. Needs an even number of ranks >= 2.
 *
 * usage: mpirun -np N mpi_more [iters [file]]
 * Rank 0 prints `calls@<rank> <MPI_Name>=<count>` for every rank and
 * every function it counts (some counts vary by rank and run), then
 * `wall_s=...`.
 */
#include "common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    C_SEND_INIT, C_SSEND_INIT, C_BSEND_INIT, C_RSEND_INIT, C_RECV_INIT, C_START, C_STARTALL, C_REQUEST_FREE,
    C_WAITSOME, C_TESTSOME, C_CANCEL, C_MPROBE, C_IMPROBE, C_MRECV, C_IMRECV,
    C_IBARRIER, C_IBCAST, C_IREDUCE, C_IALLREDUCE, C_IGATHER, C_IGATHERV, C_ISCATTER, C_ISCATTERV,
    C_IALLGATHER, C_IALLGATHERV, C_IALLTOALL, C_IALLTOALLV, C_IREDUCE_SCATTER, C_IREDUCE_SCATTER_BLOCK,
    C_ISCAN, C_IEXSCAN, C_CART_CREATE, C_CART_SUB, C_COMM_CREATE_GROUP, C_INTERCOMM_CREATE,
    C_INTERCOMM_MERGE, C_FILE_OPEN, C_FILE_CLOSE, C_FILE_SEEK, C_FILE_SET_VIEW, C_FILE_READ,
    C_FILE_READ_ALL, C_FILE_READ_AT, C_FILE_READ_AT_ALL, C_FILE_WRITE, C_FILE_WRITE_ALL, C_FILE_WRITE_AT,
    C_FILE_WRITE_AT_ALL, C_FILE_IREAD, C_FILE_IWRITE, C_FILE_IREAD_AT, C_FILE_IWRITE_AT, C_N
};
static const char *names[C_N] = {
    "MPI_Send_init", "MPI_Ssend_init", "MPI_Bsend_init", "MPI_Rsend_init", "MPI_Recv_init", "MPI_Start",
    "MPI_Startall", "MPI_Request_free", "MPI_Waitsome", "MPI_Testsome", "MPI_Cancel", "MPI_Mprobe",
    "MPI_Improbe", "MPI_Mrecv", "MPI_Imrecv", "MPI_Ibarrier", "MPI_Ibcast", "MPI_Ireduce", "MPI_Iallreduce",
    "MPI_Igather", "MPI_Igatherv", "MPI_Iscatter", "MPI_Iscatterv", "MPI_Iallgather", "MPI_Iallgatherv",
    "MPI_Ialltoall", "MPI_Ialltoallv", "MPI_Ireduce_scatter", "MPI_Ireduce_scatter_block", "MPI_Iscan",
    "MPI_Iexscan", "MPI_Cart_create", "MPI_Cart_sub", "MPI_Comm_create_group", "MPI_Intercomm_create",
    "MPI_Intercomm_merge", "MPI_File_open", "MPI_File_close", "MPI_File_seek", "MPI_File_set_view",
    "MPI_File_read", "MPI_File_read_all", "MPI_File_read_at", "MPI_File_read_at_all", "MPI_File_write",
    "MPI_File_write_all", "MPI_File_write_at", "MPI_File_write_at_all", "MPI_File_iread", "MPI_File_iwrite",
    "MPI_File_iread_at", "MPI_File_iwrite_at"};
static int calls[C_N];
#define COUNT(c, call) (calls[c]++, (call))

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "mpi_more: %s failed (%d)\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Waits for all `n` requests with Waitsome, counting its calls. */
static void waitsome_all(int n, MPI_Request *r)
{
    int idx[8], out = 0;
    for (int left = n; left > 0;) {
        COUNT(C_WAITSOME, MPI_Waitsome(n, r, &out, idx, MPI_STATUSES_IGNORE));
        if (out == MPI_UNDEFINED)
            break;
        left -= out;
    }
}

/* Every nonblocking collective once, each completed by MPI_Wait. */
static void nonblocking_collectives(int size, double *x, double *y, double *all, double *all2, int *counts, int *displs)
{
    MPI_Request q;
    MPI_Comm w = MPI_COMM_WORLD;
    COUNT(C_IBARRIER, MPI_Ibarrier(w, &q)), MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IBCAST, MPI_Ibcast(x, 4, MPI_DOUBLE, 0, w, &q)), MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IREDUCE, MPI_Ireduce(x, y, 4, MPI_DOUBLE, MPI_SUM, size - 1, w, &q)), MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IALLREDUCE, MPI_Iallreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, w, &q)), MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IGATHER, MPI_Igather(x, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, w, &q)), MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IGATHERV, MPI_Igatherv(x, 2, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, w, &q));
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_ISCATTER, MPI_Iscatter(all, 2, MPI_DOUBLE, y, 2, MPI_DOUBLE, 0, w, &q)), MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_ISCATTERV, MPI_Iscatterv(all, counts, displs, MPI_DOUBLE, y, 2, MPI_DOUBLE, 0, w, &q));
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IALLGATHER, MPI_Iallgather(x, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, w, &q));
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IALLGATHERV, MPI_Iallgatherv(x, 2, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, w, &q));
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IALLTOALL, MPI_Ialltoall(all, 2, MPI_DOUBLE, all2, 2, MPI_DOUBLE, w, &q));
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IALLTOALLV, MPI_Ialltoallv(all, counts, displs, MPI_DOUBLE, all2, counts, displs, MPI_DOUBLE, w, &q));
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IREDUCE_SCATTER, MPI_Ireduce_scatter(all, y, counts, MPI_DOUBLE, MPI_SUM, w, &q));
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IREDUCE_SCATTER_BLOCK, MPI_Ireduce_scatter_block(all, y, 2, MPI_DOUBLE, MPI_SUM, w, &q));
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_ISCAN, MPI_Iscan(x, y, 1, MPI_DOUBLE, MPI_SUM, w, &q)), MPI_Wait(&q, MPI_STATUS_IGNORE);
    COUNT(C_IEXSCAN, MPI_Iexscan(x, y, 1, MPI_DOUBLE, MPI_SUM, w, &q)), MPI_Wait(&q, MPI_STATUS_IGNORE);
}

/* Cartesian grid 2 x size/2, its rows; a group communicator; even and
 * odd ranks as an intercommunicator (even rank 2i talks to odd rank
 * 2i+1 as remote rank i), then merged. */
static void communicators(int rank, int size)
{
    int dims[2] = {2, size / 2}, periods[2] = {0, 1}, remain[2] = {0, 1};
    MPI_Comm cart, row, half, inter, merged, grp;
    COUNT(C_CART_CREATE, MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    COUNT(C_CART_SUB, MPI_Cart_sub(cart, remain, &row));
    MPI_Barrier(row);
    MPI_Comm_free(&row);
    MPI_Comm_free(&cart);

    MPI_Group world, mine;
    int *members = malloc((size_t)size / 2 * sizeof(int));
    for (int i = 0; i < size / 2; i++)
        members[i] = 2 * i + rank % 2;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, size / 2, members, &mine);
    COUNT(C_COMM_CREATE_GROUP, MPI_Comm_create_group(MPI_COMM_WORLD, mine, 7, &grp));
    MPI_Comm_free(&grp);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    free(members);

    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    COUNT(C_INTERCOMM_CREATE, MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 21, &inter));
    double v = rank, got = -1;
    MPI_Sendrecv(&v, 1, MPI_DOUBLE, rank / 2, 22, &got, 1, MPI_DOUBLE, rank / 2, 22, inter, MPI_STATUS_IGNORE);
    if ((int)got != (rank ^ 1)) {
        fprintf(stderr, "mpi_more: rank %d got %g over the intercommunicator\n", rank, got);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    COUNT(C_INTERCOMM_MERGE, MPI_Intercomm_merge(inter, rank % 2, &merged));
    MPI_Barrier(merged);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

/* MPI-IO: a view of doubles after a 64-byte header; rank r's blocks of 4
 * doubles at element (it * size + r) * 4 (explicit offsets) and in a
 * second region after them (individual pointer). */
static void file_io(MPI_File fh, int rank, int size, long it, double *x, double *y)
{
    MPI_Request q;
    MPI_Offset base = (MPI_Offset)(it * size + rank) * 4, second = (MPI_Offset)1000 * size * 4 + base;
    check(COUNT(C_FILE_WRITE_AT, MPI_File_write_at(fh, base, x, 4, MPI_DOUBLE, MPI_STATUS_IGNORE)), "write_at");
    check(COUNT(C_FILE_WRITE_AT_ALL, MPI_File_write_at_all(fh, base, x, 4, MPI_DOUBLE, MPI_STATUS_IGNORE)), "write_at_all");
    check(COUNT(C_FILE_IWRITE_AT, MPI_File_iwrite_at(fh, base, x, 4, MPI_DOUBLE, &q)), "iwrite_at");
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    check(COUNT(C_FILE_SEEK, MPI_File_seek(fh, second, MPI_SEEK_SET)), "seek");
    check(COUNT(C_FILE_WRITE, MPI_File_write(fh, x, 4, MPI_DOUBLE, MPI_STATUS_IGNORE)), "write");
    check(COUNT(C_FILE_SEEK, MPI_File_seek(fh, second, MPI_SEEK_SET)), "seek");
    check(COUNT(C_FILE_WRITE_ALL, MPI_File_write_all(fh, x, 4, MPI_DOUBLE, MPI_STATUS_IGNORE)), "write_all");
    check(COUNT(C_FILE_SEEK, MPI_File_seek(fh, second, MPI_SEEK_SET)), "seek");
    check(COUNT(C_FILE_IWRITE, MPI_File_iwrite(fh, x, 4, MPI_DOUBLE, &q)), "iwrite");
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    check(COUNT(C_FILE_READ_AT, MPI_File_read_at(fh, base, y, 4, MPI_DOUBLE, MPI_STATUS_IGNORE)), "read_at");
    check(COUNT(C_FILE_READ_AT_ALL, MPI_File_read_at_all(fh, base, y, 4, MPI_DOUBLE, MPI_STATUS_IGNORE)), "read_at_all");
    check(COUNT(C_FILE_IREAD_AT, MPI_File_iread_at(fh, base, y, 4, MPI_DOUBLE, &q)), "iread_at");
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    check(COUNT(C_FILE_SEEK, MPI_File_seek(fh, second, MPI_SEEK_SET)), "seek");
    check(COUNT(C_FILE_READ, MPI_File_read(fh, y, 4, MPI_DOUBLE, MPI_STATUS_IGNORE)), "read");
    check(COUNT(C_FILE_SEEK, MPI_File_seek(fh, second, MPI_SEEK_SET)), "seek");
    check(COUNT(C_FILE_READ_ALL, MPI_File_read_all(fh, y, 4, MPI_DOUBLE, MPI_STATUS_IGNORE)), "read_all");
    check(COUNT(C_FILE_SEEK, MPI_File_seek(fh, second, MPI_SEEK_SET)), "seek");
    check(COUNT(C_FILE_IREAD, MPI_File_iread(fh, y, 4, MPI_DOUBLE, &q)), "iread");
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (memcmp(x, y, 4 * sizeof *x) != 0) {
        fprintf(stderr, "mpi_more: rank %d read back other data\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 3;
    if (argc > 3 || parse_arg(argc, argv, 1, "iters", 1, 1000, &iters, rank) != 0)
        usage_exit(argv[0], "[iters [file]]", rank);
    const char *path = argc > 2 ? argv[2] : "mpi_more.dat";
    if (size % 2 != 0) {
        if (rank == 0)
            fprintf(stderr, "mpi_more: needs an even number of ranks, got %d\n", size);
        MPI_Finalize();
        return 2;
    }
    int peer = rank ^ 1;
    int *counts = malloc((size_t)size * sizeof(int)), *displs = malloc((size_t)size * sizeof(int));
    double *all = malloc((size_t)size * 4 * sizeof(double)), *all2 = malloc((size_t)size * 4 * sizeof(double));
    for (int i = 0; i < size; i++) {
        counts[i] = 2;
        displs[i] = 2 * i;
        all[2 * i] = all[2 * i + 1] = i;
    }
    double x[4] = {rank, 1, 2, 3}, y[4] = {0}, z[4] = {0};
    int bsize = 4 * (4 * (int)sizeof(double) + MPI_BSEND_OVERHEAD);
    void *bbuf = malloc((size_t)bsize);
    MPI_Buffer_attach(bbuf, bsize);

    /* persistent: a pair exchange (tag 10) started with Startall, and one
     * send of each mode, started with Start, into receives already posted */
    MPI_Request pair[2], modes[3];
    COUNT(C_SEND_INIT, MPI_Send_init(x, 4, MPI_DOUBLE, peer, 10, MPI_COMM_WORLD, &pair[0]));
    COUNT(C_RECV_INIT, MPI_Recv_init(y, 4, MPI_DOUBLE, peer, 10, MPI_COMM_WORLD, &pair[1]));
    COUNT(C_SSEND_INIT, MPI_Ssend_init(x, 4, MPI_DOUBLE, peer, 11, MPI_COMM_WORLD, &modes[0]));
    COUNT(C_BSEND_INIT, MPI_Bsend_init(x, 4, MPI_DOUBLE, peer, 12, MPI_COMM_WORLD, &modes[1]));
    COUNT(C_RSEND_INIT, MPI_Rsend_init(x, 4, MPI_DOUBLE, peer, 13, MPI_COMM_WORLD, &modes[2]));
    MPI_File fh;
    check(COUNT(C_FILE_OPEN, MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh)), "open");
    check(COUNT(C_FILE_SET_VIEW, MPI_File_set_view(fh, 64, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL)), "set_view");

    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        MPI_Request r[6];
        MPI_Status st;
        MPI_Message msg;
        int flag = 0;
        COUNT(C_STARTALL, MPI_Startall(2, pair));
        MPI_Waitall(2, pair, MPI_STATUSES_IGNORE);
        for (int k = 0; k < 3; k++)
            MPI_Irecv(z, 4, MPI_DOUBLE, peer, 11 + k, MPI_COMM_WORLD, &r[k]);
        MPI_Barrier(MPI_COMM_WORLD); /* the ready send's receive is posted */
        for (int k = 0; k < 3; k++) {
            COUNT(C_START, MPI_Start(&modes[k]));
            r[3 + k] = modes[k];
        }
        waitsome_all(6, r);
        /* Testsome until an exchange is done */
        MPI_Isend(x, 4, MPI_DOUBLE, peer, 14, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(z, 4, MPI_DOUBLE, peer, 14, MPI_COMM_WORLD, &r[1]);
        for (int left = 2, out = 0, idx[2]; left > 0; left -= out == MPI_UNDEFINED ? left : out)
            COUNT(C_TESTSOME, MPI_Testsome(2, r, &out, idx, MPI_STATUSES_IGNORE));
        /* matched probes */
        MPI_Isend(x, 4, MPI_DOUBLE, peer, 15, MPI_COMM_WORLD, &r[0]);
        COUNT(C_MPROBE, MPI_Mprobe(peer, 15, MPI_COMM_WORLD, &msg, &st));
        COUNT(C_MRECV, MPI_Mrecv(z, 4, MPI_DOUBLE, &msg, MPI_STATUS_IGNORE));
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Isend(x, 2, MPI_DOUBLE, peer, 16, MPI_COMM_WORLD, &r[0]);
        while (!flag)
            COUNT(C_IMPROBE, MPI_Improbe(MPI_ANY_SOURCE, 16, MPI_COMM_WORLD, &flag, &msg, &st));
        COUNT(C_IMRECV, MPI_Imrecv(z, 2, MPI_DOUBLE, &msg, &r[1]));
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        /* a receive that never matches, cancelled; a send freed unwaited */
        MPI_Irecv(z, 4, MPI_DOUBLE, peer, 99, MPI_COMM_WORLD, &r[0]);
        COUNT(C_CANCEL, MPI_Cancel(&r[0]));
        MPI_Wait(&r[0], &st);
        MPI_Test_cancelled(&st, &flag);
        if (!flag) {
            fprintf(stderr, "mpi_more: rank %d: cancel did not cancel\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Isend(x, 4, MPI_DOUBLE, peer, 17, MPI_COMM_WORLD, &r[0]);
        COUNT(C_REQUEST_FREE, MPI_Request_free(&r[0]));
        MPI_Recv(z, 4, MPI_DOUBLE, peer, 17, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        nonblocking_collectives(size, x, y, all, all2, counts, displs);
        communicators(rank, size);
        file_io(fh, rank, size, it, x, y);
    }
    timed_end(t0, rank);
    for (int k = 0; k < 2; k++)
        COUNT(C_REQUEST_FREE, MPI_Request_free(&pair[k]));
    for (int k = 0; k < 3; k++)
        COUNT(C_REQUEST_FREE, MPI_Request_free(&modes[k]));
    check(COUNT(C_FILE_CLOSE, MPI_File_close(&fh)), "close");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_File_delete(path, MPI_INFO_NULL);
    MPI_Buffer_detach(&bbuf, &bsize);
    free(bbuf);

    int *every = malloc((size_t)size * C_N * sizeof(int));
    MPI_Gather(calls, C_N, MPI_INT, every, C_N, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < size; r++)
            for (int c = 0; c < C_N; c++)
                printf("calls@%d %s=%d\n", r, names[c], every[r * C_N + c]);
    free(every);
    free(counts);
    free(displs);
    free(all);
    free(all2);
    MPI_Finalize();
    return 0;
}

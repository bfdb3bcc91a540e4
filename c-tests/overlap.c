/* overlap: the replayable shape of the wider coverage. A ring halo
 * exchange on persistent requests (Startall, compute, Waitall), an
 * Iallreduce overlapped with compute, an Ibarrier completed by Test,
 * a matched probe and receive, a cancelled receive and a Waitsome, for
 * `iters` iterations of `work` compute units each.
 *
 * usage: mpirun -np N overlap [iters [work]]
 * Rank 0 prints `calls MPI_Startall=<iters>`, `calls MPI_Iallreduce=...`,
 * `checksum=...` and `wall_s=...`.
 */
#include "common.h"

#include <mpi.h>
#include <stdio.h>

static volatile double sink;

/* About `work` × 10^4 floating-point operations. */
static void compute(long work)
{
    double a = 1.0;
    for (long i = 0; i < work * 10000; i++)
        a = a * 1.0000001 + 1e-9;
    sink = a;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 20, work = 10;
    if (argc > 3 || parse_arg(argc, argv, 1, "iters", 1, 1000000, &iters, rank) != 0 ||
        parse_arg(argc, argv, 2, "work", 0, 1000000, &work, rank) != 0)
        usage_exit(argv[0], "[iters [work]]", rank);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double halo_out[2][64] = {{0}}, halo_in[2][64] = {{0}}, sum = 0, local, global, z[8];
    MPI_Request halo[4];
    MPI_Send_init(halo_out[0], 64, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &halo[0]);
    MPI_Send_init(halo_out[1], 64, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &halo[1]);
    MPI_Recv_init(halo_in[0], 64, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &halo[2]);
    MPI_Recv_init(halo_in[1], 64, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &halo[3]);
    double t0 = timed_start();
    for (long it = 0; it < iters; it++) {
        MPI_Request r[2], q;
        MPI_Message msg;
        MPI_Status st;
        int flag = 0, out, idx[2];
        halo_out[0][0] = halo_out[1][0] = rank + it;
        MPI_Startall(4, halo);
        compute(work);
        MPI_Waitall(4, halo, MPI_STATUSES_IGNORE);
        local = halo_in[0][0] + halo_in[1][0];
        MPI_Iallreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
        compute(work);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        sum += global;
        MPI_Ibarrier(MPI_COMM_WORLD, &q);
        while (!flag)
            MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
        MPI_Isend(&local, 1, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &r[0]);
        MPI_Mprobe(left, 3, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(z, 1, MPI_DOUBLE, &msg, MPI_STATUS_IGNORE);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Irecv(z, 8, MPI_DOUBLE, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &q);
        MPI_Cancel(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Isend(&local, 1, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(z, 1, MPI_DOUBLE, right, 4, MPI_COMM_WORLD, &r[1]);
        for (int n = 2; n > 0; n -= out)
            MPI_Waitsome(2, r, &out, idx, MPI_STATUSES_IGNORE);
    }
    timed_end(t0, rank);
    for (int k = 0; k < 4; k++)
        MPI_Request_free(&halo[k]);
    if (rank == 0) {
        printf("calls MPI_Startall=%ld\ncalls MPI_Iallreduce=%ld\ncalls MPI_Ibarrier=%ld\n", iters, iters, iters);
        printf("calls MPI_Mprobe=%ld\ncalls MPI_Mrecv=%ld\ncalls MPI_Cancel=%ld\n", iters, iters, iters);
        printf("calls MPI_Send_init=2\ncalls MPI_Recv_init=2\ncalls MPI_Request_free=4\n");
        printf("checksum=%.1f\n", sum);
    }
    MPI_Finalize();
    return 0;
}

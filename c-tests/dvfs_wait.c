/* DVFS around communication under SimGrid's SMPI (build with smpicc):
 * ranks exchange a message in a ring for ITERS rounds, rank r computing
 * FLOPS x (r + 1) flops per round, so the lighter ranks wait. Around each
 * receive a rank lowers its host to pstate WAIT_PSTATE
 * (sg_host_set_pstate) and restores its pstate after: what
 * `simulator replay --dvfs wait=WAIT_PSTATE` predicts from the program's
 * TI trace. One rank per host; run with --cfg=plugin:host_energy.
 *
 * Usage: dvfs_wait [iters] [mflops] [bytes] [wait_pstate]
 */
#include <simgrid/host.h>
#include <smpi/smpi.h>

#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = 4, mflops = 100, bytes = 1024, wait_pstate = 2;
    if (parse_arg(argc, argv, 1, "iters", 1, 1000000, &iters, rank) || parse_arg(argc, argv, 2, "mflops", 0, 1000000, &mflops, rank) ||
        parse_arg(argc, argv, 3, "bytes", 1, 1 << 28, &bytes, rank) ||
        parse_arg(argc, argv, 4, "wait_pstate", 0, 64, &wait_pstate, rank))
        MPI_Abort(MPI_COMM_WORLD, 2);
    char *buf = calloc((size_t)bytes, 1);
    sg_host_t host = sg_host_self();
    unsigned long own = sg_host_get_pstate(host);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (long i = 0; i < iters; i++) {
        smpi_execute_flops(1e6 * (double)mflops * (rank + 1));
        MPI_Request req;
        MPI_Isend(buf, (int)bytes, MPI_CHAR, next, 0, MPI_COMM_WORLD, &req);
        sg_host_set_pstate(host, (unsigned long)wait_pstate);
        MPI_Recv(buf, (int)bytes, MPI_CHAR, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        sg_host_set_pstate(host, own);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}

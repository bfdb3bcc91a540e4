/*
 * A program the platform model deadlocks on but MPI runs: both ranks send
 * 2 KiB to each other, then receive. Open MPI sends 2 KiB eagerly over
 * shared memory, so the run ends; on a platform whose eager threshold is
 * 1 KiB both sends are rendezvous and wait for receives that come after
 * them. Online mode's watchdog must stop the prediction and let the run
 * finish with its output.
 */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; double a[256], b[256];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 256; i++) a[i] = rank + i;
    int peer = 1 - rank;
    MPI_Send(a, 256, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD);
    MPI_Recv(b, 256, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d got %g\n", rank, b[255]);
    MPI_Finalize();
    return 0;
}

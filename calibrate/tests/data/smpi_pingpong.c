/* A ping-pong over sizes 1 B .. 1 MiB, for the SimGrid round-trip test:
 * smpirun must accept the calibrated platform and run it. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  static char buf[1 << 20];
  double t = MPI_Wtime();
  for (int s = 1; s <= (1 << 20); s *= 32) {
    if (r == 0) { MPI_Send(buf, s, MPI_BYTE, 1, 0, MPI_COMM_WORLD); MPI_Recv(buf, s, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
    else { MPI_Recv(buf, s, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, s, MPI_BYTE, 0, 0, MPI_COMM_WORLD); }
  }
  if (r == 0) printf("simulated_s %.9e\n", MPI_Wtime() - t);
  MPI_Finalize();
}

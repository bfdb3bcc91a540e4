/* A checkpointing loop: `steps` times, compute then write this rank's
 * block of `kib` KiB to a shared file at offset rank * kib KiB of the
 * step's region, collectively (MPI_File_write_at_all) or independently
 * (MPI_File_write_at), then MPI_File_sync; at the end every rank reads its
 * last block back and checks it.
 *
 * usage: mpirun -np N checkpoint [dir=.] [kib=1024] [steps=4] [collective=1]
 * Rank 0 prints `wall_s=...` and `checked=<blocks that read back right>`.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *usage = "[dir=.] [kib=1024] [steps=4] [collective=1]";
    const char *dir = argc > 1 ? argv[1] : ".";
    long kib = 1024, steps = 4, collective = 1;
    if (argc > 5 || parse_arg(argc, argv, 2, "kib", 1, 1 << 20, &kib, rank) != 0 ||
        parse_arg(argc, argv, 3, "steps", 1, 1000000, &steps, rank) != 0 ||
        parse_arg(argc, argv, 4, "collective", 0, 1, &collective, rank) != 0)
        usage_exit(argv[0], usage, rank);
    size_t n = (size_t)kib * 1024 / sizeof(double);
    double *block = malloc(n * sizeof *block), *back = malloc(n * sizeof *back);
    if (block == NULL || back == NULL) {
        fprintf(stderr, "checkpoint: rank %d: cannot allocate %ld KiB\n", rank, kib);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long pid = (long)getpid(); /* rank 0's: one file name for the run */
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoint.%ld.dat", dir, pid);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
        fprintf(stderr, "checkpoint: rank %d: cannot open %s\n", rank, path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t0 = timed_start();
    double x = rank;
    for (long s = 0; s < steps; s++) {
        for (size_t i = 0; i < n; i++) {
            x = x * 0.999999 + 1e-6 * (double)(i % 97);
            block[i] = x + (double)s;
        }
        MPI_Offset at = ((MPI_Offset)s * size + rank) * (MPI_Offset)n * (MPI_Offset)sizeof(double);
        if (collective)
            MPI_File_write_at_all(fh, at, block, (int)n, MPI_DOUBLE, MPI_STATUS_IGNORE);
        else
            MPI_File_write_at(fh, at, block, (int)n, MPI_DOUBLE, MPI_STATUS_IGNORE);
        MPI_File_sync(fh);
    }
    MPI_Offset last = ((MPI_Offset)(steps - 1) * size + rank) * (MPI_Offset)n * (MPI_Offset)sizeof(double);
    MPI_File_read_at(fh, last, back, (int)n, MPI_DOUBLE, MPI_STATUS_IGNORE);
    int ok = memcmp(back, block, n * sizeof *block) == 0, all = 0;
    timed_end(t0, rank);
    MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    if (rank == 0) {
        printf("checked=%d\n", all);
        MPI_File_delete(path, MPI_INFO_NULL);
    }
    free(block);
    free(back);
    MPI_Finalize();
    return 0;
}

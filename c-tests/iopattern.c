/* IOR-like access patterns on one shared file: each rank writes `count`
 * transfers of `kib` KiB, then reads them back (read after write) and
 * checks them.
 *
 *   layout 0 (contiguous, IOR's segmented layout): rank r's transfers are
 *            one block, at (r * count + i) * xfer;
 *   layout 1 (strided, IOR's -s): transfers of the ranks interleave, at
 *            (i * size + r) * xfer.
 *   collective 0: MPI_File_write_at / read_at; 1: write_at_all / read_at_all.
 *   sync 1: MPI_File_sync after the writes (the read then comes from storage
 *           as far as the file system knows).
 *   view 1 (with layout 1): a strided file view (each rank sees its own
 *           transfers) and one call of all `count` transfers each way.
 *   hints 1: open with cb_nodes=1, cb_buffer_size=1 MiB, romio_ds_write=enable.
 *
 * usage: mpirun -np N iopattern [dir=.] [kib=64] [count=64] [layout=0]
 *                               [collective=0] [sync=1] [view=0] [hints=0]
 * Rank 0 prints `wall_s=...` (write and read phases) and `checked=<ranks
 * whose data read back right>`.
 */
#include <string.h>
#include <unistd.h>

#include "common.h"

/* One access of `n` bytes at `at`: written (`write`) or read, collectively or not. */
static void transfer(MPI_File fh, MPI_Offset at, char *buf, int n, int collective, int write)
{
    if (write && collective)
        MPI_File_write_at_all(fh, at, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
    else if (write)
        MPI_File_write_at(fh, at, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
    else if (collective)
        MPI_File_read_at_all(fh, at, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
    else
        MPI_File_read_at(fh, at, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
}

/* Byte offset of rank `rank`'s transfer `i` in `layout` (0 contiguous, 1 strided). */
static MPI_Offset slot_at(long layout, int rank, int size, long count, long i, int n)
{
    long slot = layout == 0 ? rank * count + i : i * size + rank;
    return (MPI_Offset)slot * n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *usage = "[dir=.] [kib=64] [count=64] [layout=0|1] [collective=0|1] [sync=0|1] [view=0|1] [hints=0|1]";
    const char *dir = argc > 1 ? argv[1] : ".";
    long kib = 64, count = 64, layout = 0, collective = 0, sync = 1, view = 0, hints = 0;
    if (argc > 9 || parse_arg(argc, argv, 2, "kib", 1, 1 << 20, &kib, rank) != 0 ||
        parse_arg(argc, argv, 3, "count", 1, 1 << 20, &count, rank) != 0 ||
        parse_arg(argc, argv, 4, "layout", 0, 1, &layout, rank) != 0 ||
        parse_arg(argc, argv, 5, "collective", 0, 1, &collective, rank) != 0 ||
        parse_arg(argc, argv, 6, "sync", 0, 1, &sync, rank) != 0 ||
        parse_arg(argc, argv, 7, "view", 0, 1, &view, rank) != 0 || parse_arg(argc, argv, 8, "hints", 0, 1, &hints, rank) != 0 ||
        (view && !layout))
        usage_exit(argv[0], usage, rank);
    int n = (int)(kib * 1024);
    size_t all = view ? (size_t)n * (size_t)count : (size_t)n;
    char *buf = malloc(all), *back = malloc(all);
    if (buf == NULL || back == NULL) {
        fprintf(stderr, "iopattern: rank %d: cannot allocate %ld KiB\n", rank, kib);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long pid = (long)getpid(); /* rank 0's: one file name for the run */
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    char path[4096];
    snprintf(path, sizeof path, "%s/iopattern.%ld.dat", dir, pid);
    MPI_Info info = MPI_INFO_NULL;
    if (hints) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "cb_nodes", "1");
        MPI_Info_set(info, "cb_buffer_size", "1048576");
        MPI_Info_set(info, "romio_ds_write", "enable");
    }
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) != MPI_SUCCESS) {
        fprintf(stderr, "iopattern: rank %d: cannot open %s\n", rank, path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    double t0 = timed_start();
    int ok = 1;
    MPI_Datatype block = MPI_DATATYPE_NULL, strided = MPI_DATATYPE_NULL;
    if (view) {
        /* Rank r's transfers: every size-th block of n bytes from block r. */
        MPI_Type_contiguous(n, MPI_BYTE, &block);
        MPI_Type_create_resized(block, 0, (MPI_Aint)n * size, &strided);
        MPI_Type_commit(&strided);
        MPI_File_set_view(fh, (MPI_Offset)rank * n, MPI_BYTE, strided, "native", MPI_INFO_NULL);
        for (long i = 0; i < count; i++) memset(buf + (size_t)i * n, (int)((rank * 31 + i) & 0xff), (size_t)n);
        transfer(fh, 0, buf, (int)all, collective, 1);
        if (sync) MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        transfer(fh, 0, back, (int)all, collective, 0);
        ok = memcmp(back, buf, all) == 0;
    } else {
        for (long i = 0; i < count; i++) {
            memset(buf, (int)((rank * 31 + i) & 0xff), (size_t)n);
            transfer(fh, slot_at(layout, rank, size, count, i, n), buf, n, collective, 1);
        }
        if (sync) MPI_File_sync(fh);
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < count; i++) {
            transfer(fh, slot_at(layout, rank, size, count, i, n), back, n, collective, 0);
            memset(buf, (int)((rank * 31 + i) & 0xff), (size_t)n);
            ok &= memcmp(back, buf, (size_t)n) == 0;
        }
    }
    timed_end(t0, rank);
    int good = 0;
    MPI_Reduce(&ok, &good, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (view) {
        MPI_Type_free(&strided);
        MPI_Type_free(&block);
    }
    MPI_File_close(&fh);
    if (rank == 0) {
        printf("checked=%d\n", good);
        MPI_File_delete(path, MPI_INFO_NULL);
    }
    free(buf);
    free(back);
    MPI_Finalize();
    return 0;
}

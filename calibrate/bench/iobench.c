/* iobench: MPI-IO samples for `calibrate io`.
 *
 * usage: mpirun -np N iobench <dir> <plan> <out.csv> <warmup> <library.txt>
 *   <dir>      directory on the file system to measure; every entry uses a
 *              file of its own there (iobench-<entry>.dat), deleted after;
 *   <plan>     text file, one "<case> <size_bytes>" per line, in the order
 *              to measure (the caller shuffles and repeats);
 *   <out.csv>  written by rank 0: "case,size_bytes,seconds";
 *   <warmup>   number of leading plan entries measured but not written;
 *   <library.txt> written by rank 0: "library=<first line of
 *              MPI_Get_library_version>" and "ompi_mca_io=<$OMPI_MCA_io>"
 *              (Open MPI's io component choice; mpirun --mca io passes it
 *              so), from which the caller tells ROMIO from OMPIO.
 *
 * Every rank accesses its own contiguous block of size_bytes at offset
 * rank * size_bytes (write16, read16: 2 × size_bytes at 2 × that offset). A
 * sample is the longest time any rank spent between a barrier (write16,
 * read16: its untimed calls) and the end of the timed calls (MPI_Wtime,
 * reduced by MAX):
 *   write           MPI_File_write_at
 *   write_sync      MPI_File_write_at, MPI_File_sync
 *   write16         a stream of 32 MPI_File_write_at of size_bytes / 16,
 *                   one after the other at consecutive offsets, of which
 *                   the last 16 are timed: a running stream's steady cost,
 *                   without a new file's first write or the state the
 *                   previous cases left (writes just after a large write
 *                   cost more)
 *   read            MPI_File_read_at of data written, synced and dropped
 *                   from the page cache (posix_fadvise DONTNEED) before
 *   write_all       MPI_File_write_at_all
 *   write_all_sync  MPI_File_write_at_all, MPI_File_sync
 *   read_all        MPI_File_read_at_all, prepared as read
 *   read_cached     MPI_File_read_at of data just written (no sync), which
 *                   the page cache still holds
 *   read16          a stream of 32 MPI_File_read_at of size_bytes / 16 into
 *                   one buffer, of 2 × size_bytes written before (no sync)
 *                   and since out of the CPU's private caches, of which the
 *                   last 16 are timed: a running stream of reads of data the
 *                   page cache holds
 *   openclose       MPI_File_open (create) and MPI_File_close, size 0
 *   sync0           MPI_File_sync of an empty file, size 0
 * Exit status 0 on success, 2 on bad usage or input, with a one-line
 * message on stderr; an MPI-IO error aborts with "iobench: <case> <file>:
 * <MPI error string>".
 */
#define _POSIX_C_SOURCE 200112L
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank;
/* Memory written over before a read16 stream, bytes (16 × a 4 MiB L2). */
#define FLUSH_BYTES (64u << 20)
static char *flush;
static const char *cur_case = "";
static char cur_file[4096];

static void check(int rc) {
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "iobench: %s %s: %s\n", cur_case, cur_file, msg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static void usage_error(const char *what) {
    if (rank == 0) fprintf(stderr, "iobench: %s\n", what);
    MPI_Finalize();
    exit(2);
}

static MPI_File open_file(int amode) {
    MPI_File f;
    check(MPI_File_open(MPI_COMM_WORLD, cur_file, amode, MPI_INFO_NULL, &f));
    return f;
}

static void delete_file(void) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) check(MPI_File_delete(cur_file, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Writes this rank's block, syncs, closes and drops it from the page cache. */
static void prepare_read(char *buf, long long size) {
    MPI_File f = open_file(MPI_MODE_CREATE | MPI_MODE_RDWR);
    check(MPI_File_write_at(f, (MPI_Offset)rank * size, buf, (int)size, MPI_BYTE, MPI_STATUS_IGNORE));
    check(MPI_File_sync(f));
    check(MPI_File_close(&f));
    int fd = open(cur_file, O_RDONLY);
    if (fd >= 0) {
        posix_fadvise(fd, (off_t)rank * size, (off_t)size, POSIX_FADV_DONTNEED);
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* One sample of `c` at `size` bytes: this rank's elapsed seconds. */
static double measure(const char *c, long long size, char *buf) {
    MPI_Offset off = (MPI_Offset)rank * size;
    int n = (int)size;
    int wr = MPI_MODE_CREATE | MPI_MODE_WRONLY;
    double t0, t;
    MPI_File f;
    if (!strcmp(c, "openclose")) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        f = open_file(wr);
        check(MPI_File_close(&f));
        t = MPI_Wtime() - t0;
    } else if (!strcmp(c, "sync0")) {
        f = open_file(wr);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        check(MPI_File_sync(f));
        t = MPI_Wtime() - t0;
        check(MPI_File_close(&f));
    } else if (!strcmp(c, "read") || !strcmp(c, "read_all")) {
        prepare_read(buf, size);
        f = open_file(MPI_MODE_RDONLY);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (!strcmp(c, "read"))
            check(MPI_File_read_at(f, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        else
            check(MPI_File_read_at_all(f, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        t = MPI_Wtime() - t0;
        check(MPI_File_close(&f));
    } else if (!strcmp(c, "write16")) {
        /* This rank's stream covers 2 × size_bytes from 2 × off: the first
         * 16 writes are not timed (the stream is already running when the
         * timed 16 start, so neither a new file's first write nor what the
         * cases before left in the kernel weighs on them). */
        f = open_file(wr);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Offset at = 2 * off;
        t0 = 0.0;
        for (int i = 0; i < 32; i++) {
            if (i == 16) t0 = MPI_Wtime();
            check(MPI_File_write_at(f, at + (MPI_Offset)i * (n / 16), buf + (size_t)(i % 16) * (n / 16), n / 16, MPI_BYTE, MPI_STATUS_IGNORE));
        }
        t = MPI_Wtime() - t0;
        check(MPI_File_close(&f));
    } else if (!strcmp(c, "read16")) {
        /* This rank writes 2 × size_bytes from 2 × off, then writes over
         * FLUSH_BYTES of memory (the data leave the CPU's private caches, as
         * an application's data written long before have), then reads the
         * 2 × size_bytes back in 32 reads of a sixteenth into one buffer;
         * the last 16 are timed. */
        f = open_file(MPI_MODE_CREATE | MPI_MODE_RDWR);
        MPI_Offset at = 2 * off;
        check(MPI_File_write_at(f, at, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        check(MPI_File_write_at(f, at + n, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        memset(flush, rank + 1, FLUSH_BYTES);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = 0.0;
        for (int i = 0; i < 32; i++) {
            if (i == 16) t0 = MPI_Wtime();
            check(MPI_File_read_at(f, at + (MPI_Offset)i * (n / 16), buf, n / 16, MPI_BYTE, MPI_STATUS_IGNORE));
        }
        t = MPI_Wtime() - t0;
        check(MPI_File_close(&f));
    } else if (!strcmp(c, "read_cached")) {
        f = open_file(MPI_MODE_CREATE | MPI_MODE_RDWR);
        check(MPI_File_write_at(f, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        check(MPI_File_read_at(f, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        t = MPI_Wtime() - t0;
        check(MPI_File_close(&f));
    } else {
        int all = !strncmp(c, "write_all", 9), sync = strstr(c, "sync") != NULL;
        if (strcmp(c, "write") && strcmp(c, "write_sync") && strcmp(c, "write_all") && strcmp(c, "write_all_sync")) {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown case `%s` in the plan", c);
            usage_error(msg);
        }
        f = open_file(wr);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        if (all)
            check(MPI_File_write_at_all(f, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        else
            check(MPI_File_write_at(f, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE));
        if (sync) check(MPI_File_sync(f));
        t = MPI_Wtime() - t0;
        check(MPI_File_close(&f));
    }
    delete_file();
    return t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 6) usage_error("usage: iobench <dir> <plan> <out.csv> <warmup> <library.txt>");
    const char *dir = argv[1];
    int warmup = atoi(argv[4]);
    FILE *plan = fopen(argv[2], "r");
    if (!plan) usage_error("cannot open the plan file");
    int cap = 64, count = 0;
    char(*cases)[32] = malloc(cap * sizeof *cases);
    long long *sizes = malloc(cap * sizeof *sizes), max = 0;
    char name[32];
    long long size;
    while (fscanf(plan, "%31s %lld", name, &size) == 2) {
        if (size < 0 || size > 1LL << 30) usage_error("plan: size out of range (0 ..= 1 GiB)");
        if (count == cap) {
            cap *= 2;
            cases = realloc(cases, cap * sizeof *cases);
            sizes = realloc(sizes, cap * sizeof *sizes);
        }
        strcpy(cases[count], name);
        sizes[count++] = size;
        if (size > max) max = size;
    }
    fclose(plan);
    char *buf = malloc(max > 0 ? max : 1);
    flush = malloc(FLUSH_BYTES);
    if (!buf || !flush) usage_error("cannot allocate the buffers");
    for (long long i = 0; i < max; i++) buf[i] = (char)(i * 131 + rank);
    FILE *out = NULL;
    if (rank == 0) {
        out = fopen(argv[3], "w");
        if (!out) usage_error("cannot create the output CSV");
        fprintf(out, "case,size_bytes,seconds\n");
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(version, &len);
        version[strcspn(version, "\r\n")] = '\0';
        const char *io = getenv("OMPI_MCA_io");
        FILE *lib = fopen(argv[5], "w");
        if (!lib) usage_error("cannot create the library file");
        fprintf(lib, "library=%s\nompi_mca_io=%s\n", version, io ? io : "");
        fclose(lib);
    }
    for (int i = 0; i < count; i++) {
        cur_case = cases[i];
        snprintf(cur_file, sizeof cur_file, "%s/iobench-%d.dat", dir, i);
        double t = measure(cases[i], sizes[i], buf), longest = 0;
        MPI_Reduce(&t, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0 && i >= warmup) fprintf(out, "%s,%lld,%.9e\n", cases[i], sizes[i], longest);
    }
    if (rank == 0) fclose(out);
    free(buf);
    free(flush);
    MPI_Finalize();
    return 0;
}

/* netbench: point-to-point samples for `calibrate network`.
 *
 * usage: mpirun -np 2 netbench <plan> <out.csv> <warmup> [<n> <d_s> | allreduce | clean]
 *   <plan>     text file, one message size in bytes per line, in the order
 *              to measure (the caller shuffles and repeats sizes);
 *   <out.csv>  written by rank 0: "op,size_bytes,start_s,duration_s";
 *   <warmup>   number of leading plan entries measured but not written;
 *   <n> <d_s>  PRTT mode (netgauge's LogGP assessment, Hoefler et al.,
 *              IPDPS 2007): instead of the three samples below, every entry
 *              gives prtt1 = PRTT(1,0,s), prttn = PRTT(n,0,s) and
 *              prttd = PRTT(n,d,s), where PRTT(n,d,s) is the time rank 0
 *              takes to send n messages of s bytes, spinning d seconds after
 *              each but the last, and receive one s-byte reply that rank 1
 *              sends after receiving all n.
 *   allreduce  instead of the samples below, every entry (a multiple of 8
 *              bytes) gives one `allreduce` sample: Barrier; AR_WARM
 *              untimed MPI_Allreduce (MPI_DOUBLE, MPI_SUM, size/8 doubles,
 *              MPI_COMM_WORLD), then AR_BURST (AR_BURST_LARGE above
 *              AR_SMALL_MAX_BYTES) timed back to back; duration = their
 *              mean (rank 0), as a loop of allreduces pays them. The
 *              reduction cost is fitted from these (calibrate/src/network/gamma.rs).
 *   clean      the samples below, but pingpong and exchange send from a
 *              buffer no rank writes after start-up and receive into
 *              another (as OSU's osu_latency and most bandwidth benchmarks
 *              do) instead of sending back what was received: the sender's
 *              data is in no core's cache as modified lines.
 *
 * For every plan entry of `size` bytes, these samples:
 *   pingpong  Barrier; rank 0 spins SYNC_SETTLE_S so that rank 1's Recv is
 *             surely posted; untimed round trips, then timed round trips
 *             back to back (rank 0 Send, rank 1 Recv then Send back, rank 0
 *             Recv); duration = the timed loop's mean round trip / 2 (rank
 *             0), its occasional slow round trips included, as a program
 *             pays them (a preempted loop is left out by the fit,
 *             calibrate/src/segmented.rs). This is the steady-state latency
 *             of a communicating phase: on shared memory a round trip right
 *             after a long idle poll is about twice slower (0.33 vs 0.17 us
 *             here), which would make the model over-predict
 *             communication-bound loops. Loop lengths follow OSU's
 *             osu_latency (long loops with skipped warm-up iterations up to
 *             8 KiB, short ones above), scaled down: up to PP_LONG_MAX_BYTES
 *             PP_WARM_LONG untimed and PP_BURST_LONG timed round trips, else
 *             PP_WARM untimed (one above PP_WARM_MAX_BYTES) and PP_BURST
 *             timed. Sizes come in random order, so a small message's sample
 *             often follows a large one's, and its latency carries that for
 *             tens of round trips (8 B after a 1 MiB ping-pong, here:
 *             0.169-0.178 us median over 16 timed round trips after 16
 *             untimed, 0.163 over 256, 0.161-0.162 in a loop of 100000 in
 *             the same run; a ring of 8-byte messages: 0.163 us per hop).
 *   exchange  Barrier; both ranks call MPI_Sendrecv of `size` bytes to and
 *             from the other at once, each sending what it received in the
 *             previous exchange (as pingpong sends back what it received:
 *             data its own core wrote, as a program sends what it
 *             computed), with the same untimed and timed loop lengths as
 *             pingpong; duration = the timed loop's mean per exchange (rank
 *             0): each direction's transfer while the other one runs, which
 *             on shared memory share the host's copy rate.
 *   pair      Barrier; rank 1 posts two MPI_Irecv of `size` bytes, rank 0
 *             two MPI_Isend of them (tags 11, 12, from two buffers), both
 *             MPI_Waitall, with the same untimed and timed loop lengths as
 *             pingpong; duration = the timed loop's mean per pair (rank 0):
 *             two transfers into one rank at once, which a shared-memory
 *             transport that copies on the receiving process moves one
 *             after the other.
 *   send      Barrier; rank 1 posts its blocking Recv; rank 0 spins
 *             SYNC_SETTLE_S so the Recv is surely posted, then times one
 *             blocking MPI_Send (measured on rank 0).
 *   isend     like send, timing one MPI_Isend (its MPI_Wait untimed).
 *   wtime     one MPI_Wtime call: the mean of CALL_BURST calls (rank 0;
 *             size 0).
 *   iprobe    one MPI_Iprobe finding no message: mean of CALL_BURST calls
 *             (rank 0; size 0).
 *   irecv     posting one MPI_Irecv (8 bytes, no message yet): mean of
 *             CALL_BURST posts (rank 0; size 0).
 *   wait      one MPI_Wait on a request already satisfied: after the
 *             irecv posts, Barrier; rank 1 sends the CALL_BURST 8-byte
 *             messages; Barrier; rank 0 spins RECV_SETTLE_S so they have
 *             surely arrived, then times MPI_Wait on each request in turn:
 *             the mean per request (rank 0; size 0).
 *   rma       one one-sided call: rank 0 times CALL_BURST empty
 *             passive-target epochs, MPI_Win_lock (shared) then
 *             MPI_Win_unlock, on rank 1's window; the mean per call (half
 *             an epoch; size 0). The window is made by MPI_Win_create over
 *             the program's memory, as most programs make theirs (Open
 *             MPI gives it osc/rdma; an MPI_Win_allocate window may get a
 *             faster component, osc/sm).
 *   rma_put   one epoch of MPI_Win_lock (shared), an MPI_Put of `size` bytes
 *             and MPI_Win_unlock on rank 1's window, after one untimed: the
 *             mean of CALL_BURST epochs (RMA_BURST_LARGE above
 *             PP_WARM_MAX_BYTES; rank 0).
 *   rma_get   the same with an MPI_Get of `size` bytes.
 *   rma_acc   the same with an MPI_Accumulate (MPI_SUM) of max(1, size / 8)
 *             doubles; its size is their bytes.
 *   rma_lock  both ranks at once run CALL_BURST passive-target epochs on
 *             each other's window (MPI_Win_lock shared, an 8-byte MPI_Put,
 *             MPI_Win_unlock); rank 0's mean lock, timed alone (size 0;
 *             each duration holds one MPI_Wtime call, as do the next five).
 *   rma_unlock  the MPI_Win_unlock of the same epochs, timed alone.
 *   rma_post  both ranks at once run CALL_BURST PSCW epochs (MPI_Win_post
 *             and MPI_Win_start to the peer, an 8-byte MPI_Put,
 *             MPI_Win_complete, MPI_Win_wait); rank 0's mean post.
 *   rma_complete  the MPI_Win_complete of the same epochs.
 *   rma_create  one MPI_Win_create of a 64-byte window (rank 0).
 *   rma_free  its MPI_Win_free (rank 0).
 *   recv      rank 0 MPI_Isend; Barrier; rank 1 spins RECV_SETTLE_S so an eager
 *             message has surely arrived, then times one MPI_Recv (measured
 *             on rank 1); rank 0 MPI_Wait. For rendezvous sizes the Recv
 *             includes the whole transfer.
 * start_s is the sample start on the measuring rank's MPI_Wtime, relative
 * to its time after the initial barrier. Exit status 0 on success, 2 on bad
 * usage or input, with a one-line message on stderr.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Spin before a timed operation so the peer is surely ready: its Recv
 * posted (pingpong, send) or an eager message arrived (recv), seconds. */
#define SYNC_SETTLE_S 10e-6
#define PP_BURST 16 /* timed round trips above PP_LONG_MAX_BYTES */
#define PP_WARM 16 /* untimed round trips before them up to PP_WARM_MAX_BYTES */
#define PP_WARM_MAX_BYTES 65536 /* above: one (a round trip is >= 10 us) */
#define PP_LONG_MAX_BYTES 8192 /* OSU's small-message limit */
#define PP_WARM_LONG 100 /* untimed round trips up to PP_LONG_MAX_BYTES (OSU's skip) */
#define PP_BURST_LONG 256 /* timed round trips up to PP_LONG_MAX_BYTES */
#define CALL_BURST 32
#define RMA_BURST_LARGE 4
#define REC 38 /* doubles per plan entry in rec[] */
#define RECV_SETTLE_S 30e-6
#define AR_WARM 8
#define AR_BURST 64
#define AR_BURST_LARGE 8
#define AR_SMALL_MAX_BYTES 65536
#define MAX_SIZE (1L << 30)

static void spin(double seconds)
{
    double end = MPI_Wtime() + seconds;
    while (MPI_Wtime() < end) {
    }
}

/* PRTT(n, d, s) on rank 0 (seconds; rank 1 returns 0); see the header. */
static double prtt(int rank, char *buf, int s, int n, double d)
{
    int peer = 1 - rank;
    double t = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        spin(SYNC_SETTLE_S);
        t = MPI_Wtime();
        for (int k = 0; k < n; k++) {
            MPI_Send(buf, s, MPI_BYTE, peer, 5, MPI_COMM_WORLD);
            if (k + 1 < n && d > 0.0)
                spin(d);
        }
        MPI_Recv(buf, s, MPI_BYTE, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t = MPI_Wtime() - t;
    } else {
        for (int k = 0; k < n; k++)
            MPI_Recv(buf, s, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, s, MPI_BYTE, peer, 6, MPI_COMM_WORLD);
    }
    return t;
}

/* Doubles an rma_acc sample of `size` bytes accumulates: max(1, size / 8). */
static int acc_count(long size)
{
    return size < 16 ? 1 : (int)(size / 8);
}

static void die(int rank, const char *msg, const char *detail)
{
    if (rank == 0)
        fprintf(stderr, "netbench: %s%s%s\n", msg, detail ? ": " : "", detail ? detail : "");
    MPI_Finalize();
    exit(2);
}

/* The mean time of one MPI_Allreduce of `bytes` / 8 doubles over `burst`
 * back-to-back calls after `warm` untimed ones, seconds (rank 0). */
static double allreduce_mean(double *a, double *b, long bytes, int warm, int burst)
{
    int count = (int)(bytes / 8);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 0; w < warm; w++)
        MPI_Allreduce(a, b, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int k = 0; k < burst; k++)
        MPI_Allreduce(a, b, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return (MPI_Wtime() - t) / burst;
}

/* Reads the plan on rank 0; returns the sizes (count in *n) or NULL after
 * printing why. */
static long *read_plan(const char *path, long *n)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "netbench: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    long cap = 1024, len = 0, v;
    long *sizes = malloc((size_t)cap * sizeof(long));
    int rc;
    while (sizes != NULL && (rc = fscanf(f, "%ld", &v)) == 1) {
        if (v < 0 || v > MAX_SIZE) {
            fprintf(stderr, "netbench: %s: entry %ld: size %ld out of [0, %ld]\n", path, len + 1, v, MAX_SIZE);
            free(sizes);
            fclose(f);
            return NULL;
        }
        if (len == cap) {
            cap *= 2;
            long *grown = realloc(sizes, (size_t)cap * sizeof(long));
            if (grown == NULL)
                free(sizes);
            sizes = grown;
            if (sizes == NULL)
                break;
        }
        sizes[len++] = v;
    }
    if (sizes != NULL && !feof(f)) {
        fprintf(stderr, "netbench: %s: entry %ld is not an integer\n", path, len + 1);
        free(sizes);
        sizes = NULL;
    }
    fclose(f);
    *n = len;
    return sizes;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 4 || argc > 6)
        die(rank, "usage: netbench <plan> <out.csv> <warmup> [<n> <d_s> | allreduce | clean]", NULL);
    int ar_mode = argc == 5 && strcmp(argv[4], "allreduce") == 0;
    int clean = argc == 5 && strcmp(argv[4], "clean") == 0;
    if (argc == 5 && !ar_mode && !clean)
        die(rank, "bad mode (allreduce or clean)", argv[4]);
    if (nranks != 2)
        die(rank, "needs exactly 2 ranks", NULL);
    char *end = NULL;
    long warmup = strtol(argv[3], &end, 10);
    if (end == argv[3] || *end != '\0' || warmup < 0)
        die(rank, "bad <warmup>", argv[3]);
    int prtt_n = 0;
    double prtt_d = 0.0;
    if (argc == 6) {
        prtt_n = (int)strtol(argv[4], &end, 10);
        if (end == argv[4] || *end != '\0' || prtt_n < 2)
            die(rank, "bad <n> (an integer >= 2)", argv[4]);
        prtt_d = strtod(argv[5], &end);
        if (end == argv[5] || *end != '\0' || prtt_d < 0.0 || prtt_d > 1.0)
            die(rank, "bad <d_s> (seconds in [0, 1])", argv[5]);
    }

    /* Rank 0 reads the plan and broadcasts it (n = -1 on failure). */
    long n = 0, *plan = NULL;
    if (rank == 0) {
        plan = read_plan(argv[1], &n);
        if (plan == NULL)
            n = -1;
    }
    MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (n < 0) {
        MPI_Finalize();
        return 2;
    }
    if (rank != 0)
        plan = malloc((size_t)(n > 0 ? n : 1) * sizeof(long));
    MPI_Bcast(plan, (int)n, MPI_LONG, 0, MPI_COMM_WORLD);
    if (warmup > n)
        die(rank, "<warmup> exceeds the plan length", argv[3]);

    FILE *out = NULL;
    if (rank == 0 && (out = fopen(argv[2], "w")) == NULL)
        fprintf(stderr, "netbench: %s: %s\n", argv[2], strerror(errno));
    int ok = out != NULL || rank != 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        MPI_Finalize();
        return 2;
    }

    long max = 8; /* an rma_acc sample reads one double */
    for (long i = 0; i < n; i++)
        if (plan[i] > max)
            max = plan[i];
    char *buf = malloc((size_t)max);
    /* A second buffer: the allreduce's result, the exchange's receive. */
    char *buf2 = malloc((size_t)max);
    /* Per entry, rank 0: start/duration of pingpong, send, isend, wtime,
     * iprobe (PRTT mode: start, prtt1, prttn, prttd); rank 1: recv
     * start/duration packed two per entry. */
    double *rec = malloc((size_t)(n > 0 ? n : 1) * REC * sizeof(double));
    if (buf == NULL || buf2 == NULL || rec == NULL) {
        fprintf(stderr, "netbench: rank %d: cannot allocate %ld bytes\n", rank, max);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, rank + 1, (size_t)max);
    int peer = 1 - rank;

    /* The window of the rma samples (ping-pong mode), when the MPI has a
     * one-sided component for this network (Open MPI has none over TCP):
     * else no rma samples. It holds the largest put and accumulate. */
    MPI_Win win = MPI_WIN_NULL;
    long winbytes = max < 64 ? 64 : max + 8;
    char *winbase = NULL;
    if (prtt_n == 0 && !ar_mode) {
        winbase = calloc((size_t)winbytes, 1);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int ok = MPI_Win_create(winbase, winbase != NULL ? winbytes : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS;
        int all = 0;
        ok = ok && winbase != NULL;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all && win != MPI_WIN_NULL)
            MPI_Win_free(&win);
        if (!all)
            win = MPI_WIN_NULL;
    }
    /* The PSCW samples' group: the peer alone. */
    MPI_Group world_group, peer_group = MPI_GROUP_NULL;
    if (win != MPI_WIN_NULL) {
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        MPI_Group_incl(world_group, 1, &peer, &peer_group);
        MPI_Group_free(&world_group);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; prtt_n > 0 && i < n; i++) {
        int s = (int)plan[i];
        double *r = &rec[REC * i];
        r[0] = MPI_Wtime() - t0;
        r[1] = prtt(rank, buf, s, 1, 0.0);
        r[2] = prtt(rank, buf, s, prtt_n, 0.0);
        r[3] = prtt(rank, buf, s, prtt_n, prtt_d);
    }
    for (long i = 0; ar_mode && i < n; i++) {
        double *r = &rec[REC * i];
        long s = plan[i] - plan[i] % 8;
        int small = s <= AR_SMALL_MAX_BYTES;
        r[0] = MPI_Wtime() - t0;
        r[1] = allreduce_mean((double *)buf, (double *)buf2, s, small ? AR_WARM : 1, small ? AR_BURST : AR_BURST_LARGE);
    }
    for (long i = 0; prtt_n == 0 && !ar_mode && i < n; i++) {
        int s = (int)plan[i];
        double *r = &rec[REC * i];
        double t;

        /* pingpong: rank 1 is already waiting in its Recv; each rank
         * sends back what it received unless the buffers are clean */
        char *back = clean ? buf2 : buf;
        int small = s <= PP_LONG_MAX_BYTES;
        int warm = small ? PP_WARM_LONG : s <= PP_WARM_MAX_BYTES ? PP_WARM : 1;
        int burst = small ? PP_BURST_LONG : PP_BURST;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            spin(SYNC_SETTLE_S);
            for (int w = 0; w < warm; w++) {
                MPI_Send(buf, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(back, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            t = MPI_Wtime();
            r[0] = t - t0;
            for (int k = 0; k < burst; k++) {
                MPI_Send(buf, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(back, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            r[1] = (MPI_Wtime() - t) / (2.0 * burst);
        } else {
            for (int k = 0; k < burst + warm; k++) {
                MPI_Recv(back, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, s, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            }
        }

        /* exchange: both directions at once; each rank sends what it
         * received last, as pingpong does (data its own core wrote),
         * unless the buffers are clean */
        {
            char *from = buf, *into = buf2, *swap;
            MPI_Barrier(MPI_COMM_WORLD);
            for (int k = -warm; k < burst; k++) {
                if (k == 0) {
                    t = MPI_Wtime();
                    r[22] = t - t0;
                }
                MPI_Sendrecv(from, s, MPI_BYTE, peer, 10, into, s, MPI_BYTE, peer, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (!clean) {
                    swap = from;
                    from = into;
                    into = swap;
                }
            }
            r[23] = (MPI_Wtime() - t) / burst;
        }

        /* pair: two transfers into rank 1 at once */
        {
            MPI_Request reqs[2];
            MPI_Barrier(MPI_COMM_WORLD);
            for (int k = -warm; k < burst; k++) {
                if (k == 0) {
                    t = MPI_Wtime();
                    r[24] = t - t0;
                }
                for (int m = 0; m < 2; m++) {
                    char *b = m == 0 ? buf : buf2;
                    if (rank == 0)
                        MPI_Isend(b, s, MPI_BYTE, peer, 11 + m, MPI_COMM_WORLD, &reqs[m]);
                    else
                        MPI_Irecv(b, s, MPI_BYTE, peer, 11 + m, MPI_COMM_WORLD, &reqs[m]);
                }
                MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
            }
            r[25] = (MPI_Wtime() - t) / burst;
        }

        /* send: the receiver is already waiting */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            spin(SYNC_SETTLE_S);
            t = MPI_Wtime();
            MPI_Send(buf, s, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
            r[2] = t - t0;
            r[3] = MPI_Wtime() - t;
        } else {
            MPI_Recv(buf, s, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }

        /* isend: the receiver is already waiting; the Wait is not timed */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Request req;
            spin(SYNC_SETTLE_S);
            t = MPI_Wtime();
            MPI_Isend(buf, s, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req);
            r[4] = t - t0;
            r[5] = MPI_Wtime() - t;
            MPI_Wait(&req, MPI_STATUS_IGNORE);

            /* wtime, iprobe: per-call costs, no message pending (tag 8) */
            int flag;
            t = MPI_Wtime();
            for (int k = 0; k < CALL_BURST; k++)
                (void)MPI_Wtime();
            r[6] = t - t0;
            r[7] = (MPI_Wtime() - t) / CALL_BURST;
            t = MPI_Wtime();
            for (int k = 0; k < CALL_BURST; k++)
                MPI_Iprobe(peer, 8, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            r[8] = t - t0;
            r[9] = (MPI_Wtime() - t) / CALL_BURST;
        } else {
            MPI_Recv(buf, s, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }

        /* irecv, wait: posting a receive, and waiting on a satisfied one (tag 9) */
        {
            static char small[CALL_BURST][8];
            MPI_Request reqs[CALL_BURST];
            if (rank == 0) {
                t = MPI_Wtime();
                for (int k = 0; k < CALL_BURST; k++)
                    MPI_Irecv(small[k], 8, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &reqs[k]);
                r[10] = t - t0;
                r[11] = (MPI_Wtime() - t) / CALL_BURST;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 1)
                for (int k = 0; k < CALL_BURST; k++)
                    MPI_Send(small[k], 8, MPI_BYTE, peer, 9, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                spin(RECV_SETTLE_S);
                t = MPI_Wtime();
                for (int k = 0; k < CALL_BURST; k++)
                    MPI_Wait(&reqs[k], MPI_STATUS_IGNORE);
                r[12] = t - t0;
                r[13] = (MPI_Wtime() - t) / CALL_BURST;
            }
        }

        /* rma: empty lock, unlock epochs on rank 1's window; rma_put,
         * rma_get, rma_acc: epochs of one operation of this size */
        if (rank == 0 && win != MPI_WIN_NULL) {
            t = MPI_Wtime();
            for (int k = 0; k < CALL_BURST; k++) {
                MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
                MPI_Win_unlock(peer, win);
            }
            r[14] = t - t0;
            r[15] = (MPI_Wtime() - t) / (2.0 * CALL_BURST);
            int burst = s <= PP_WARM_MAX_BYTES ? CALL_BURST : RMA_BURST_LARGE;
            for (int kind = 0; kind < 3; kind++) {
                for (int k = -1; k < burst; k++) {
                    if (k == 0)
                        t = MPI_Wtime();
                    MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
                    if (kind == 0)
                        MPI_Put(buf, s, MPI_BYTE, peer, 0, s, MPI_BYTE, win);
                    else if (kind == 1)
                        MPI_Get(buf, s, MPI_BYTE, peer, 0, s, MPI_BYTE, win);
                    else
                        MPI_Accumulate(buf, acc_count(s), MPI_DOUBLE, peer, 0, acc_count(s), MPI_DOUBLE, MPI_SUM, win);
                    MPI_Win_unlock(peer, win);
                }
                r[16 + 2 * kind] = t - t0;
                r[17 + 2 * kind] = (MPI_Wtime() - t) / burst;
            }
        }

        /* recv: the message has already arrived (eager sizes) */
        if (rank == 0) {
            MPI_Request req;
            MPI_Isend(buf, s, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            spin(RECV_SETTLE_S);
            t = MPI_Wtime();
            MPI_Recv(buf, s, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            rec[2 * i] = t - t0; /* packed (start, duration) pairs */
            rec[2 * i + 1] = MPI_Wtime() - t;
        }

        /* rma_lock, rma_unlock, rma_post, rma_complete: epochs both ways at
         * once; rma_create, rma_free: a 64-byte window made and freed */
        if (win != MPI_WIN_NULL) {
            /* rma_lock, rma_unlock: each call timed alone, in epochs of an
             * 8-byte put that both ranks run at once on each other's window */
            double lock = 0.0, unlock = 0.0, at = 0.0;
            MPI_Barrier(MPI_COMM_WORLD);
            for (int k = -1; k < CALL_BURST; k++) {
                double a = MPI_Wtime();
                MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
                double b = MPI_Wtime();
                MPI_Put(buf, 8, MPI_BYTE, peer, 16, 8, MPI_BYTE, win);
                double c = MPI_Wtime();
                MPI_Win_unlock(peer, win);
                double d = MPI_Wtime();
                if (k == 0)
                    at = a - t0;
                if (k >= 0) {
                    lock += b - a;
                    unlock += d - c;
                }
            }
            double post = 0.0, complete = 0.0, start = 0.0;
            MPI_Barrier(MPI_COMM_WORLD);
            for (int k = -1; k < CALL_BURST; k++) {
                double a = MPI_Wtime();
                MPI_Win_post(peer_group, 0, win);
                double b = MPI_Wtime();
                MPI_Win_start(peer_group, 0, win);
                MPI_Put(buf, 8, MPI_BYTE, peer, 8, 8, MPI_BYTE, win);
                double c = MPI_Wtime();
                MPI_Win_complete(win);
                double d = MPI_Wtime();
                MPI_Win_wait(win);
                if (k == 0)
                    start = a - t0;
                if (k >= 0) {
                    post += b - a;
                    complete += d - c;
                }
            }
            char small_base[64];
            MPI_Win small_win;
            MPI_Barrier(MPI_COMM_WORLD);
            double a = MPI_Wtime();
            MPI_Win_create(small_base, sizeof small_base, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &small_win);
            double b = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            double c = MPI_Wtime();
            MPI_Win_free(&small_win);
            double d = MPI_Wtime();
            if (rank == 0) {
                r[26] = at;
                r[27] = lock / CALL_BURST;
                r[28] = at;
                r[29] = unlock / CALL_BURST;
                r[30] = start;
                r[31] = post / CALL_BURST;
                r[32] = start;
                r[33] = complete / CALL_BURST;
                r[34] = a - t0;
                r[35] = b - a;
                r[36] = c - t0;
                r[37] = d - c;
            }
        }
    }

    /* Rank 1's recv samples go to rank 0, which writes everything. */
    int status = 0;
    if (ar_mode) {
        if (rank == 0) {
            fprintf(out, "op,size_bytes,start_s,duration_s\n");
            for (long i = warmup; i < n; i++)
                fprintf(out, "allreduce,%ld,%.9f,%.9e\n", plan[i] - plan[i] % 8, rec[REC * i], rec[REC * i + 1]);
            if (fclose(out) != 0) {
                fprintf(stderr, "netbench: %s: %s\n", argv[2], strerror(errno));
                status = 2;
            }
        }
    } else if (prtt_n > 0) {
        if (rank == 0) {
            fprintf(out, "op,size_bytes,start_s,duration_s\n");
            for (long i = warmup; i < n; i++) {
                double *r = &rec[REC * i];
                fprintf(out, "prtt1,%ld,%.9f,%.9e\n", plan[i], r[0], r[1]);
                fprintf(out, "prttn,%ld,%.9f,%.9e\n", plan[i], r[0], r[2]);
                fprintf(out, "prttd,%ld,%.9f,%.9e\n", plan[i], r[0], r[3]);
            }
            if (fclose(out) != 0) {
                fprintf(stderr, "netbench: %s: %s\n", argv[2], strerror(errno));
                status = 2;
            }
        }
    } else if (rank == 1) {
        MPI_Send(rec, (int)(2 * n), MPI_DOUBLE, 0, 4, MPI_COMM_WORLD);
    } else {
        double *recv1 = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof(double));
        if (recv1 == NULL)
            MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_Recv(recv1, (int)(2 * n), MPI_DOUBLE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fprintf(out, "op,size_bytes,start_s,duration_s\n");
        for (long i = warmup; i < n; i++) {
            double *r = &rec[REC * i];
            fprintf(out, "pingpong,%ld,%.9f,%.9e\n", plan[i], r[0], r[1]);
            fprintf(out, "exchange,%ld,%.9f,%.9e\n", plan[i], r[22], r[23]);
            fprintf(out, "pair,%ld,%.9f,%.9e\n", plan[i], r[24], r[25]);
            fprintf(out, "send,%ld,%.9f,%.9e\n", plan[i], r[2], r[3]);
            fprintf(out, "recv,%ld,%.9f,%.9e\n", plan[i], recv1[2 * i], recv1[2 * i + 1]);
            fprintf(out, "isend,%ld,%.9f,%.9e\n", plan[i], r[4], r[5]);
            fprintf(out, "wtime,0,%.9f,%.9e\n", r[6], r[7]);
            fprintf(out, "iprobe,0,%.9f,%.9e\n", r[8], r[9]);
            fprintf(out, "irecv,0,%.9f,%.9e\n", r[10], r[11]);
            fprintf(out, "wait,0,%.9f,%.9e\n", r[12], r[13]);
            if (win != MPI_WIN_NULL) {
                fprintf(out, "rma,0,%.9f,%.9e\n", r[14], r[15]);
                fprintf(out, "rma_put,%ld,%.9f,%.9e\n", plan[i], r[16], r[17]);
                fprintf(out, "rma_get,%ld,%.9f,%.9e\n", plan[i], r[18], r[19]);
                fprintf(out, "rma_acc,%d,%.9f,%.9e\n", 8 * acc_count(plan[i]), r[20], r[21]);
                fprintf(out, "rma_lock,0,%.9f,%.9e\n", r[26], r[27]);
                fprintf(out, "rma_unlock,0,%.9f,%.9e\n", r[28], r[29]);
                fprintf(out, "rma_post,0,%.9f,%.9e\n", r[30], r[31]);
                fprintf(out, "rma_complete,0,%.9f,%.9e\n", r[32], r[33]);
                fprintf(out, "rma_create,0,%.9f,%.9e\n", r[34], r[35]);
                fprintf(out, "rma_free,0,%.9f,%.9e\n", r[36], r[37]);
            }
        }
        if (fclose(out) != 0) {
            fprintf(stderr, "netbench: %s: %s\n", argv[2], strerror(errno));
            status = 2;
        }
        free(recv1);
    }
    if (win != MPI_WIN_NULL) {
        MPI_Group_free(&peer_group);
        MPI_Win_free(&win);
    }
    free(winbase);
    free(buf);
    free(buf2);
    free(rec);
    free(plan);
    MPI_Finalize();
    return status;
}

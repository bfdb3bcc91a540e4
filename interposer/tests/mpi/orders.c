/*
 * Every order of posting and completing point-to-point operations that
 * MPI allows, one case after another, each between two barriers: the
 * online-mode test matrix (tests/mpi/matrix.rs) runs it in online mode
 * under a timeout and checks that it ends, prints what the plain run
 * prints, and predicts what the offline replay of its trace predicts.
 *
 * Usage: orders <count> <other|self>
 *   count  doubles per message (8: eager sizes; 32768: rendezvous sizes)
 *   other  peers are the ring neighbours (rank ± 1), self: the rank itself
 *
 * Rank 0 prints one line per case: its name and the sum over all ranks of
 * what each received, so that a wrong or missing message changes it.
 * MPI_Init_thread asks for MPI_THREAD_FUNNELED: the last case computes on
 * a second thread while the main thread communicates.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, count, left, right;
static double *sbuf, *rbuf[4];

static void fill(int tag) {
    for (int i = 0; i < count; i++) sbuf[i] = rank * 1000.0 + i % 97 + tag;
    for (int k = 0; k < 4; k++) memset(rbuf[k], 0, (size_t)count * sizeof(double));
}

static double got(int k) {
    double s = 0.0;
    for (int i = 0; i < count; i += 97) s += rbuf[k][i];
    return s + rbuf[k][count - 1];
}

static void report(const char *name, double mine) {
    double all = 0.0;
    MPI_Reduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("case %s %.1f\n", name, all);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void irecv_first(void) {
    MPI_Request q;
    fill(1);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &q);
    MPI_Send(sbuf, count, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("irecv_first", got(0));
}

/* The halo exchange of stencil codes: two receives, two blocking sends. */
static void halo(void) {
    MPI_Request q[2];
    fill(2);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 1100, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(rbuf[1], count, MPI_DOUBLE, right, 1100, MPI_COMM_WORLD, &q[1]);
    MPI_Send(sbuf, count, MPI_DOUBLE, right, 1100, MPI_COMM_WORLD);
    MPI_Send(sbuf, count, MPI_DOUBLE, left, 1100, MPI_COMM_WORLD);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    MPI_Wait(&q[1], MPI_STATUS_IGNORE);
    report("halo", got(0) + got(1));
}

static void isend_recv(void) {
    MPI_Request q;
    fill(3);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &q);
    MPI_Recv(rbuf[0], count, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("isend_recv", got(0));
}

/* Two sends on two tags, received in the other order. */
static void send_send_wait_wait(void) {
    MPI_Request q[4];
    fill(4);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 41, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 42, MPI_COMM_WORLD, &q[1]);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 42, MPI_COMM_WORLD, &q[2]);
    MPI_Irecv(rbuf[1], count, MPI_DOUBLE, left, 41, MPI_COMM_WORLD, &q[3]);
    MPI_Wait(&q[3], MPI_STATUS_IGNORE);
    MPI_Wait(&q[2], MPI_STATUS_IGNORE);
    MPI_Wait(&q[1], MPI_STATUS_IGNORE);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    report("send_send_wait_wait", got(0) + got(1));
}

/* Three receives outstanding on one peer and tag, then three sends. */
static void same_tag(void) {
    MPI_Request q[3];
    fill(5);
    for (int k = 0; k < 3; k++) MPI_Irecv(rbuf[k], count, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &q[k]);
    for (int k = 0; k < 3; k++) {
        sbuf[0] = k;
        MPI_Send(sbuf, count, MPI_DOUBLE, right, 5, MPI_COMM_WORLD);
    }
    MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
    report("same_tag", got(0) + 2 * got(1) + 3 * got(2));
}

static void sendrecv(void) {
    fill(6);
    MPI_Sendrecv(sbuf, count, MPI_DOUBLE, right, 6, rbuf[0], count, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    memcpy(rbuf[1], sbuf, (size_t)count * sizeof(double));
    MPI_Sendrecv_replace(rbuf[1], count, MPI_DOUBLE, right, 7, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    report("sendrecv", got(0) + got(1));
}

/* Synchronous, buffered and ready sends, each to a posted receive. */
static void send_modes(void) {
    MPI_Request q;
    int bsize = count * (int)sizeof(double) + MPI_BSEND_OVERHEAD;
    void *b = malloc((size_t)bsize), *old;
    fill(8);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &q);
    MPI_Ssend(sbuf, count, MPI_DOUBLE, right, 8, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Buffer_attach(b, bsize);
    MPI_Bsend(sbuf, count, MPI_DOUBLE, right, 9, MPI_COMM_WORLD);
    MPI_Recv(rbuf[1], count, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Buffer_detach(&old, &bsize);
    free(b);
    MPI_Irecv(rbuf[2], count, MPI_DOUBLE, left, 10, MPI_COMM_WORLD, &q);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Rsend(sbuf, count, MPI_DOUBLE, right, 10, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("send_modes", got(0) + got(1) + got(2));
}

/* Waitany, Waitsome, Testall, Testany and Testsome loops. */
static void completion_loops(void) {
    MPI_Request q[4];
    int idx, n, out, ids[4], flag;
    double sum = 0.0;
    fill(11);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(rbuf[1], count, MPI_DOUBLE, left, 12, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 12, MPI_COMM_WORLD, &q[2]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &q[3]);
    for (n = 0; n < 4; n++) MPI_Waitany(4, q, &idx, MPI_STATUS_IGNORE);
    sum += got(0) + got(1);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 13, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 13, MPI_COMM_WORLD, &q[1]);
    for (n = 0; n < 2; n += out) {
        MPI_Waitsome(2, q, &out, ids, MPI_STATUSES_IGNORE);
        if (out == MPI_UNDEFINED) break;
    }
    sum += got(0);
    MPI_Irecv(rbuf[2], count, MPI_DOUBLE, left, 14, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 14, MPI_COMM_WORLD, &q[1]);
    do MPI_Testall(2, q, &flag, MPI_STATUSES_IGNORE);
    while (!flag);
    sum += got(2);
    MPI_Irecv(rbuf[3], count, MPI_DOUBLE, left, 15, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 15, MPI_COMM_WORLD, &q[1]);
    for (n = 0; n < 2;) {
        MPI_Testany(2, q, &idx, &flag, MPI_STATUS_IGNORE);
        if (flag && idx != MPI_UNDEFINED) n++;
    }
    sum += got(3);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 16, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 16, MPI_COMM_WORLD, &q[1]);
    for (n = 0; n < 2;) {
        MPI_Testsome(2, q, &out, ids, MPI_STATUSES_IGNORE);
        if (out != MPI_UNDEFINED) n += out;
    }
    sum += got(0);
    report("completion_loops", sum);
}

/* Wildcard source and tag. */
static void wildcards(void) {
    MPI_Request q;
    MPI_Status st;
    fill(17);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, MPI_ANY_SOURCE, 17, MPI_COMM_WORLD, &q);
    MPI_Send(sbuf, count, MPI_DOUBLE, right, 17, MPI_COMM_WORLD);
    MPI_Wait(&q, &st);
    MPI_Irecv(rbuf[1], count, MPI_DOUBLE, left, MPI_ANY_TAG, MPI_COMM_WORLD, &q);
    MPI_Send(sbuf, count, MPI_DOUBLE, right, 18, MPI_COMM_WORLD);
    MPI_Wait(&q, &st);
    report("wildcards", got(0) + got(1) + st.MPI_TAG);
}

/* Probe, Iprobe, Mprobe and Improbe, then the receive. */
static void probes(void) {
    MPI_Request q, r;
    MPI_Message m;
    MPI_Status st;
    int flag = 0;
    fill(19);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 19, MPI_COMM_WORLD, &q);
    MPI_Probe(left, 19, MPI_COMM_WORLD, &st);
    MPI_Recv(rbuf[0], count, MPI_DOUBLE, st.MPI_SOURCE, 19, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 20, MPI_COMM_WORLD, &q);
    do MPI_Iprobe(MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &flag, &st);
    while (!flag);
    MPI_Recv(rbuf[1], count, MPI_DOUBLE, st.MPI_SOURCE, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 21, MPI_COMM_WORLD, &q);
    MPI_Mprobe(left, 21, MPI_COMM_WORLD, &m, &st);
    MPI_Mrecv(rbuf[2], count, MPI_DOUBLE, &m, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 22, MPI_COMM_WORLD, &q);
    flag = 0;
    do MPI_Improbe(left, 22, MPI_COMM_WORLD, &flag, &m, &st);
    while (!flag);
    MPI_Imrecv(rbuf[3], count, MPI_DOUBLE, &m, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("probes", got(0) + got(1) + got(2) + got(3));
}

static void persistent(void) {
    MPI_Request q[2];
    double sum = 0.0;
    fill(23);
    MPI_Recv_init(rbuf[0], count, MPI_DOUBLE, left, 23, MPI_COMM_WORLD, &q[0]);
    MPI_Send_init(sbuf, count, MPI_DOUBLE, right, 23, MPI_COMM_WORLD, &q[1]);
    for (int k = 0; k < 3; k++) {
        sbuf[0] = k;
        MPI_Startall(2, q);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        sum += got(0);
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    report("persistent", sum);
}

/* A receive nobody sends to, cancelled; then a message that does come. */
static void cancelled(void) {
    MPI_Request q;
    MPI_Status st;
    int was = 0;
    fill(24);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 999, MPI_COMM_WORLD, &q);
    MPI_Cancel(&q);
    MPI_Wait(&q, &st);
    MPI_Test_cancelled(&st, &was);
    MPI_Irecv(rbuf[1], count, MPI_DOUBLE, left, 24, MPI_COMM_WORLD, &q);
    MPI_Send(sbuf, count, MPI_DOUBLE, right, 24, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    report("cancelled", was + got(1));
}

/* Nonblocking collectives interleaved with point-to-point. */
static void nbc_mix(void) {
    MPI_Request q[5];
    double x = rank + 1.0, sum = 0.0, root = rank == 0 ? 42.0 : 0.0;
    fill(25);
    MPI_Iallreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(rbuf[0], count, MPI_DOUBLE, left, 25, MPI_COMM_WORLD, &q[1]);
    MPI_Ibcast(&root, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q[2]);
    MPI_Isend(sbuf, count, MPI_DOUBLE, right, 25, MPI_COMM_WORLD, &q[3]);
    MPI_Ibarrier(MPI_COMM_WORLD, &q[4]);
    MPI_Wait(&q[1], MPI_STATUS_IGNORE);
    MPI_Waitall(5, q, MPI_STATUSES_IGNORE);
    MPI_Sendrecv(sbuf, count, MPI_DOUBLE, right, 26, rbuf[1], count, MPI_DOUBLE, left, 26, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    report("nbc_mix", got(0) + got(1) + sum + root);
}

static void *spin(void *arg) {
    double *acc = arg;
    for (int i = 0; i < 2000000; i++) *acc = *acc * 0.999999 + 1e-6;
    return NULL;
}

/* MPI_THREAD_FUNNELED: a second thread computes during a halo exchange. */
static void funneled(void) {
    pthread_t t;
    double acc = 1.0;
    pthread_create(&t, NULL, spin, &acc);
    halo();
    pthread_join(t, NULL);
    report("funneled", acc > 0.0);
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    count = argc > 1 ? atoi(argv[1]) : 8;
    int self = argc > 2 && strcmp(argv[2], "self") == 0;
    if (count < 1) count = 1;
    left = self ? rank : (rank + size - 1) % size;
    right = self ? rank : (rank + 1) % size;
    sbuf = malloc((size_t)count * sizeof(double));
    for (int k = 0; k < 4; k++) rbuf[k] = malloc((size_t)count * sizeof(double));
    irecv_first();
    halo();
    isend_recv();
    send_send_wait_wait();
    same_tag();
    sendrecv();
    send_modes();
    completion_loops();
    wildcards();
    probes();
    persistent();
    cancelled();
    nbc_mix();
    if (provided >= MPI_THREAD_FUNNELED) funneled();
    MPI_Finalize();
    return 0;
}

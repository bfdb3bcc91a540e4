/* tcp-pingpong: the plain TCP latency of a path, to set against the MPI
 * latency `calibrate network` fits over the same path (two-hosts.sh).
 *
 * usage: tcp-pingpong server <port>
 *        tcp-pingpong client <addr> <port> [round_trips=20000] [bytes=1]
 * The client connects (TCP_NODELAY on both sides), makes 200 untimed round
 * trips, then times every round trip of `bytes` bytes and prints
 * "half_rtt_s=<median>" and "half_rtt_p10_s=<10th percentile>". The server
 * echoes until the client closes. Both sides busy-poll their socket
 * (MSG_DONTWAIT), as MPI's TCP transport does, so that the figure is the
 * path's latency and not a sleeping thread's wake-up time (tens of µs on
 * an idle VM). Exit status 2 on bad usage or a failed
 * socket call, with a one-line message on stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(2);
}

static int full(int fd, char *buf, size_t n, int sending)
{
    size_t done = 0;
    while (done < n) {
        ssize_t k = sending ? send(fd, buf + done, n - done, MSG_DONTWAIT) : recv(fd, buf + done, n - done, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int one = 1;
    if (argc == 3 && strcmp(argv[1], "server") == 0) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0)
            die("tcp-pingpong server: bind/listen");
        int c = accept(s, NULL, NULL);
        if (c < 0)
            die("tcp-pingpong server: accept");
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char buf[1 << 16];
        for (;;) {
            ssize_t k = recv(c, buf, sizeof buf, MSG_DONTWAIT);
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                continue;
            if (k <= 0 || full(c, buf, (size_t)k, 1) != 0)
                break;
        }
        return 0;
    }
    if (argc < 4 || argc > 6 || strcmp(argv[1], "client") != 0) {
        fprintf(stderr, "usage: %s server <port> | client <addr> <port> [round_trips] [bytes]\n", argv[0]);
        return 2;
    }
    long n = argc > 4 ? atol(argv[4]) : 20000, bytes = argc > 5 ? atol(argv[5]) : 1;
    if (n < 1 || bytes < 1 || bytes > (1 << 16)) {
        fprintf(stderr, "tcp-pingpong: round_trips must be >= 1 and bytes in 1..65536\n");
        return 2;
    }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[3]))};
    if (s < 0 || inet_pton(AF_INET, argv[2], &a.sin_addr) != 1)
        die("tcp-pingpong client: address");
    for (int tries = 0; connect(s, (struct sockaddr *)&a, sizeof a) != 0; tries++) {
        if (tries > 100)
            die("tcp-pingpong client: connect");
        usleep(20000);
    }
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char buf[1 << 16] = {0};
    double *t = malloc(sizeof(double) * (size_t)n);
    if (t == NULL)
        die("tcp-pingpong client: malloc");
    for (long i = -200; i < n; i++) {
        double t0 = now();
        if (full(s, buf, (size_t)bytes, 1) != 0 || full(s, buf, (size_t)bytes, 0) != 0)
            die("tcp-pingpong client: round trip");
        if (i >= 0)
            t[i] = (now() - t0) / 2;
    }
    qsort(t, (size_t)n, sizeof(double), cmp);
    printf("half_rtt_s=%.9g\nhalf_rtt_p10_s=%.9g\n", t[n / 2], t[n / 10]);
    return 0;
}

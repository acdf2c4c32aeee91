/* A move of rows between two processes on two cores, three ways, in one
 * run (see scripts/copy-rates.sh):
 *   readv:    the receiver pulls the sender's rows with process_vm_readv,
 *             as Open MPI's CMA single copy does for a large message (one
 *             core copies);
 *   split:    the receiver pulls the back half with process_vm_readv while
 *             the sender pushes the front half with process_vm_writev (both
 *             cores copy once, straight from rows to rows: what mheta's
 *             on-node move does);
 *   pipeline: the sender copies its rows into NBUF shared buffers of CHUNK
 *             KiB and the receiver copies them out as they fill (both
 *             cores copy at once, and the small buffers stay in the
 *             cache).
 * Both ends' rows are resident small (4 KiB) pages, and the receiver
 * writes 96 MiB of other memory before each move so that neither starts
 * from the cache. Prints the median and range of REPS moves each way, in
 * GB/s (decimal). The sender is pinned to core 1, the receiver to core 0.
 * Spin-waits: it needs one core per process. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EVICT (96u << 20)

struct ctl {
    _Atomic long go;          /* the move the receiver has started */
    _Atomic long ready;       /* the sender's rows are written */
    char *_Atomic src;        /* the sender's rows, in its address space */
    char *_Atomic dst;        /* the receiver's rows, in its address space */
    _Atomic long pushed;      /* split moves whose front half the sender wrote */
    _Atomic long full[64];    /* chunk held by buffer b, or -1 */
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static void pin(int core) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(core, &s);
    if (sched_setaffinity(0, sizeof s, &s)) perror("pipe-copy: sched_setaffinity");
}
static int by_value(const void *x, const void *y) {
    double d = *(const double *)x - *(const double *)y;
    return d < 0 ? -1 : d > 0;
}
static void report(const char *what, double *g, int n) {
    qsort(g, n, sizeof(double), by_value);
    printf("%-9s %8.2f GB/s median (%.2f-%.2f)\n", what, g[n / 2], g[0], g[n - 1]);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: pipe-copy MIB CHUNK_KIB NBUF REPS\n");
        return 2;
    }
    const size_t total = (size_t)atol(argv[1]) << 20, chunk = (size_t)atol(argv[2]) << 10;
    const int nbuf = atoi(argv[3]), reps = atoi(argv[4]);
    if (!total || !chunk || total % chunk || nbuf < 1 || nbuf > 64 || reps < 1) {
        fprintf(stderr, "pipe-copy: MIB a multiple of CHUNK_KIB, 1 <= NBUF <= 64, REPS >= 1\n");
        return 2;
    }
    const size_t nch = total / chunk;
    struct ctl *c = mmap(0, sizeof *c + nbuf * chunk, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (c == MAP_FAILED) {
        perror("pipe-copy: mmap");
        return 1;
    }
    char *buf = (char *)(c + 1);
    for (int b = 0; b < nbuf; b++) c->full[b] = -1;
    pid_t pid = fork();
    if (pid == 0) { /* the sender */
        pin(1);
        char *src = malloc(total);
        memset(src, 1, total);
        c->src = src;
        c->ready = 1;
        for (long r = 0; r < reps; r++) {
            /* move 3r+1: readv (the receiver does it all); 3r+2: pipeline;
             * 3r+3: split */
            while (c->go < 3 * r + 2) sched_yield();
            for (size_t k = 0; k < nch; k++) {
                int b = k % nbuf;
                while (c->full[b] != -1) {}
                memcpy(buf + b * chunk, src + k * chunk, chunk);
                c->full[b] = (long)k;
            }
            while (c->go < 3 * r + 3) {}
            char *dst = c->dst;
            for (size_t k = 0; k < nch / 2; k++) {
                struct iovec l = {src + k * chunk, chunk}, rem = {dst + k * chunk, chunk};
                if (process_vm_writev(getppid(), &l, 1, &rem, 1, 0) != (ssize_t)chunk) {
                    perror("pipe-copy: process_vm_writev");
                    _exit(1);
                }
            }
            c->pushed = r + 1;
        }
        /* the receiver may still be pulling the last move's back half */
        while (c->go < 3L * reps + 1) sched_yield();
        _exit(0);
    }
    pin(0);
    char *dst = malloc(total), *ev = malloc(EVICT);
    double *g_readv = malloc(sizeof(double) * reps), *g_pipe = malloc(sizeof(double) * reps);
    memset(dst, 0, total);
    c->dst = dst;
    double *g_split = malloc(sizeof(double) * reps);
    while (!c->ready) {}
    char *src = c->src;
    for (int r = 0; r < reps; r++) {
        memset(ev, r, EVICT);
        double t = now();
        c->go = 3L * r + 1;
        for (size_t k = 0; k < nch; k++) {
            struct iovec l = {dst + k * chunk, chunk}, rem = {src + k * chunk, chunk};
            if (process_vm_readv(pid, &l, 1, &rem, 1, 0) != (ssize_t)chunk) {
                perror("pipe-copy: process_vm_readv");
                return 1;
            }
        }
        g_readv[r] = total / (now() - t) / 1e9;
        memset(ev, r + 1, EVICT);
        t = now();
        c->go = 3L * r + 2;
        for (size_t k = 0; k < nch; k++) {
            int b = k % nbuf;
            while (c->full[b] != (long)k) {}
            memcpy(dst + k * chunk, buf + b * chunk, chunk);
            c->full[b] = -1;
        }
        g_pipe[r] = total / (now() - t) / 1e9;
        if (dst[total - 1] != 1) {
            fprintf(stderr, "pipe-copy: the rows did not arrive\n");
            return 1;
        }
        memset(dst, 0, total);
        memset(ev, r + 2, EVICT);
        t = now();
        c->go = 3L * r + 3;
        for (size_t k = nch / 2; k < nch; k++) {
            struct iovec l = {dst + k * chunk, chunk}, rem = {src + k * chunk, chunk};
            if (process_vm_readv(pid, &l, 1, &rem, 1, 0) != (ssize_t)chunk) {
                perror("pipe-copy: process_vm_readv");
                return 1;
            }
        }
        while (c->pushed < r + 1) {}
        g_split[r] = total / (now() - t) / 1e9;
        if (dst[0] != 1 || dst[total - 1] != 1) {
            fprintf(stderr, "pipe-copy: the split rows did not arrive\n");
            return 1;
        }
        memset(dst, 0, total);
    }
    c->go = 3L * reps + 1;
    waitpid(pid, 0, 0);
    printf("# %zu MiB, %d x %zu KiB shared buffers, %d moves each way\n", total >> 20, nbuf,
           chunk >> 10, reps);
    report("readv", g_readv, reps);
    report("pipeline", g_pipe, reps);
    report("split", g_split, reps);
    return 0;
}

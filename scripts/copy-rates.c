/* What one node's memory allows a move of rows, outside MPI: the copies
 * behind scripts/copy-rates.sh (see there). Linux only. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HUGE (2UL << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* n bytes, 2 MiB aligned, advised huge or not; populated unless fresh. */
static char *region(size_t n, int huge, int fresh) {
    char *r = mmap(0, n + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) { perror("mmap"); exit(1); }
    char *p = (char *)(((uintptr_t)r + HUGE - 1) & ~(HUGE - 1));
    madvise(p, n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    if (!fresh) memset(p, 1, n);
    return p;
}

/* Push the last-level cache out. */
static void evict(void) {
    static char *big;
    if (!big) big = region(256 << 20, 0, 0);
    memset(big, 2, 256 << 20);
}

static void report(const char *what, size_t n, double s) {
    printf("%-34s %5zu MiB %8.2f GB/s\n", what, n >> 20, n / s / 1e9);
}

int main(int argc, char **argv) {
    size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 64) << 20;
    for (int huge = 0; huge < 2; huge++) {
        const char *pg = huge ? "2M" : "4K";
        char what[64];
        /* The other process first: a fork after this one's buffers would
         * make them copy-on-write, and every copy into them a fault. */
        int p2c[2], c2p[2];
        if (pipe(p2c) || pipe(c2p)) { perror("pipe"); return 1; }
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); return 1; }
        if (pid == 0) {
            char *src = region(n, huge, 0);
            if (write(c2p[1], &src, sizeof src) != sizeof src) _exit(1);
            char x;
            if (read(p2c[0], &x, 1) != 1) _exit(1);
            _exit(0);
        }
        char *src;
        if (read(c2p[0], &src, sizeof src) != sizeof src) return 1;
        /* memcpy between resident buffers out of the cache. */
        char *s = region(n, huge, 0), *d = region(n, huge, 0);
        evict();
        double t = now();
        memcpy(d, s, n);
        snprintf(what, sizeof what, "memcpy, %s pages", pg);
        report(what, n, now() - t);
        /* memcpy into memory never touched. */
        char *f = region(n, huge, 1);
        evict();
        t = now();
        memcpy(f, s, n);
        snprintf(what, sizeof what, "memcpy into fresh %s pages", pg);
        report(what, n, now() - t);
        /* Populating fresh memory in one call. */
        char *g = region(n, huge, 1);
        t = now();
        madvise(g, n, MADV_POPULATE_WRITE);
        snprintf(what, sizeof what, "populate fresh %s pages", pg);
        report(what, n, now() - t);
        /* process_vm_readv from the other process's resident buffer into
         * a resident one here (what Open MPI's CMA does for a large
         * on-node message). */
        evict();
        t = now();
        struct iovec l = {d, n}, r = {src, n};
        if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)n) { perror("process_vm_readv"); return 1; }
        snprintf(what, sizeof what, "process_vm_readv, %s pages", pg);
        report(what, n, now() - t);
        if (write(p2c[1], "x", 1) != 1) return 1;
        waitpid(pid, 0, 0);
        munmap(s, n); munmap(d, n); munmap(f, n); munmap(g, n);
    }
    return 0;
}

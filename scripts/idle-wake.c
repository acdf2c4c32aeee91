/* How late a sleeping thread wakes on a core where a neighbour computes
 * under SCHED_IDLE, as the apps' ranks do on an oversubscribed node
 * (apps/src/emulate.rs, Emulation::work). See scripts/idle-wake.sh.
 *
 * The neighbour loops: switch to SCHED_IDLE, [sched_yield,] compute 2 ms,
 * switch back to the normal policy, sleep 4 ms (a paced rank's rest).
 * The measured thread, under the normal policy, sleeps 50 us N times and
 * counts the gaps between wake-ups above 0.5 and 1 ms. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static void policy(int idle) {
    struct sched_param sp = {0};
    if (sched_setscheduler(0, idle ? SCHED_IDLE : SCHED_OTHER, &sp)) {
        perror("idle-wake: sched_setscheduler");
        exit(1);
    }
}
static void sleep_ns(long ns) {
    struct timespec ts = {0, ns};
    nanosleep(&ts, 0);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: idle-wake YIELD(0|1) SAMPLES\n");
        return 2;
    }
    int yield = atoi(argv[1]), n = atoi(argv[2]);
    if (n < 1) {
        fprintf(stderr, "idle-wake: SAMPLES must be positive\n");
        return 2;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one)) {
        perror("idle-wake: sched_setaffinity");
        return 1;
    }
    pid_t p = fork();
    if (p == 0) {
        volatile double x = 0;
        for (;;) {
            policy(1);
            if (yield)
                sched_yield();
            double t0 = now();
            while (now() - t0 < 2e-3)
                x += 1;
            policy(0);
            sleep_ns(4000000);
        }
    }
    usleep(100000);
    int over_half = 0, over_1 = 0;
    double worst = 0, last = now();
    for (int i = 0; i < n; i++) {
        sleep_ns(50000);
        double t = now(), gap = (t - last) * 1e6;
        last = t;
        over_half += gap > 500;
        over_1 += gap > 1000;
        if (gap > worst)
            worst = gap;
    }
    kill(p, SIGKILL);
    printf("%-9s %8d %10d %8d %9.0f\n", yield ? "yield" : "no yield", n, over_half, over_1, worst);
    return 0;
}

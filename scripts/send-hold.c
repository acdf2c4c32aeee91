/* What a sender's transport still holds when its request completes, in
 * two patterns (scripts/send-hold.sh runs it):
 *
 *   ping:  rank 1 posts its receive, then rank 0 sends; the other ranks
 *          wait quietly;
 *   ramp:  the same after four messages each of 256 KiB, 512 KiB, 1 MiB
 *          and 2 MiB between the two, untimed (a connection that has
 *          carried growing messages first, as `mheta bench`'s sweep does
 *          before it measures `send_buffer_bytes`);
 *   chain: every rank but the last sends to the next, waits for its send,
 *          stands still SHIFT_MS (a move's shift of the rows it keeps),
 *          then posts its receive from the one before (a move toward the
 *          last rank).
 *
 * Every rank waits by MPI_Test and a 50 us sleep, as the runtime's moves
 * do. Each rank prints, per repeat, its clock (CLOCK_REALTIME, shared by
 * ranks of one kernel) when its send completed, when it posted its
 * receive and when the receive completed:
 *
 *   MODE REP RANK send_done post recv_done
 *
 * usage: send-hold ping|ramp|chain KIB SHIFT_MS REPS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)(t.tv_sec % 100000) + t.tv_nsec * 1e-9;
}

static void quiet_wait(MPI_Request *r) {
    int done = 0;
    for (;;) {
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done) return;
        usleep(50);
    }
}

static void quiet_barrier(void) {
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    quiet_wait(&r);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc != 5 || (strcmp(argv[1], "ping") && strcmp(argv[1], "ramp") && strcmp(argv[1], "chain")) ||
        p < 2) {
        if (me == 0) fprintf(stderr, "usage: send-hold ping|ramp|chain KIB SHIFT_MS REPS (2 ranks or more)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int chain = strcmp(argv[1], "chain") == 0;
    size_t bytes = (size_t)atol(argv[2]) << 10;
    double shift = atof(argv[3]) * 1e-3;
    int reps = atoi(argv[4]);
    size_t room = bytes > ((size_t)2 << 20) ? bytes : (size_t)2 << 20;
    char *sb = malloc(room), *rb = malloc(room);
    memset(sb, 1, room);
    memset(rb, 2, room);
    if (strcmp(argv[1], "ramp") == 0 && me < 2) {
        for (size_t k = 256 << 10; k <= ((size_t)2 << 20); k *= 2) {
            for (int i = 0; i < 4; i++) {
                MPI_Request r;
                if (me == 0) {
                    MPI_Isend(sb, (int)k, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r);
                    quiet_wait(&r);
                    MPI_Irecv(rb, (int)k, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r);
                } else {
                    MPI_Irecv(rb, (int)k, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r);
                    quiet_wait(&r);
                    MPI_Isend(sb, (int)k, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r);
                }
                quiet_wait(&r);
            }
        }
    }
    for (int rep = 0; rep < reps; rep++) {
        double sent = 0, post = 0, got = 0;
        MPI_Request r;
        if (chain) {
            quiet_barrier();
            if (me < p - 1) {
                MPI_Isend(sb, (int)bytes, MPI_BYTE, me + 1, 1, MPI_COMM_WORLD, &r);
                quiet_wait(&r);
                sent = now();
            }
            if (me > 0) {
                double t = now();
                while (now() - t < shift) {
                }
                post = now();
                MPI_Irecv(rb, (int)bytes, MPI_BYTE, me - 1, 1, MPI_COMM_WORLD, &r);
                quiet_wait(&r);
                got = now();
            }
        } else {
            if (me == 1) {
                MPI_Irecv(rb, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r);
                post = now();
            }
            quiet_barrier();
            if (me == 0) {
                post = now();
                MPI_Isend(sb, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r);
                quiet_wait(&r);
                sent = now();
            } else if (me == 1) {
                quiet_wait(&r);
                got = now();
            }
        }
        printf("%s %d %d %.6f %.6f %.6f\n", argv[1], rep, me, sent, post, got);
        fflush(stdout);
        quiet_barrier();
    }
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}

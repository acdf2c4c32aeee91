/* Whether a lab's hosts carry several streams at once, and a stream
 * each way at once, at their links' rate (scripts/duplex.sh runs it). Of
 * SIZE ranks, one a host, S = SIZE / 2 streams of MIB each run at once:
 *
 *   chain: ranks 1..S each send to the rank before, so ranks 1..S-1 send
 *          and receive at once (a move toward rank 0 with each block
 *          keeping its rows in place: runtime/src/redistribute.rs);
 *   pairs: rank 2k+1 sends to rank 2k, so no rank does both;
 *   one:   rank 1 sends to rank 0 alone.
 *
 * chain and pairs run the same streams and bytes: only the ranks that do
 * both differ; one is a stream with the lab to itself.
 *
 * After a barrier every rank posts its send and receive (MPI_Isend,
 * MPI_Irecv) and waits as the runtime's moves do: MPI_Test, and after
 * 200 us of that a 50 us sleep between tests. Rank 0 prints, per repeat,
 * the slowest rank's time and each stream's rate over it:
 *
 *   MODE REP seconds MB/s-a-stream
 *
 * usage: duplex chain|pairs|one MIB REPS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void quiet_wait(int n, MPI_Request *r) {
    double t0 = MPI_Wtime();
    int done = 0;
    for (;;) {
        MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE);
        if (done)
            return;
        if (MPI_Wtime() - t0 > 200e-6)
            usleep(50);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4 ||
        (strcmp(argv[1], "chain") && strcmp(argv[1], "pairs") && strcmp(argv[1], "one")) ||
        atol(argv[2]) <= 0 || atoi(argv[3]) <= 0 || size < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: duplex chain|pairs|one MIB REPS (at least 3 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int chain = !strcmp(argv[1], "chain"), one = !strcmp(argv[1], "one");
    int reps = atoi(argv[3]);
    size_t bytes = (size_t)atol(argv[2]) << 20;
    char *out = malloc(bytes), *in = malloc(bytes);
    if (!out || !in)
        MPI_Abort(MPI_COMM_WORLD, 3);
    memset(out, 1, bytes);
    memset(in, 0, bytes);
    int streams = size / 2;
    int sends = chain ? rank >= 1 && rank <= streams : one ? rank == 1 : rank % 2 == 1;
    int recvs = chain ? rank < streams : one ? rank == 0 : rank % 2 == 0 && rank + 1 < size;
    for (int rep = 0; rep < reps; rep++) {
        MPI_Request req[2];
        int n = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        if (recvs)
            MPI_Irecv(in, (int)bytes, MPI_BYTE, rank + 1, 7, MPI_COMM_WORLD, &req[n++]);
        if (sends)
            MPI_Isend(out, (int)bytes, MPI_BYTE, rank - 1, 7, MPI_COMM_WORLD, &req[n++]);
        quiet_wait(n, req);
        double mine = MPI_Wtime() - t, worst;
        MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%s %d %.6f %.1f\n", argv[1], rep, worst, bytes / worst / 1e6);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}

/* MPI-IO with prefetching (MHETA fig. 6): each rank owns a block of a file
 * and sweeps it in chunks; chunk k+1 is prefetched with MPI_File_iread_at
 * while chunk k is computed on for COMPUTE_US microseconds; results are
 * written back with MPI_File_write_at. Also uses read/write(_all), seek
 * and iwrite. Prints a checksum that must not change under the interposer.
 * Usage: mpiio FILE [COMPUTE_US] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "mheta_markers.h"
#include "count.h"

#define CHUNK 4096
#define CHUNKS 6

static void spin_us(long us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do { clock_gettime(CLOCK_MONOTONIC, &b); }
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_File fh;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) { if (rank == 0) fprintf(stderr, "usage: mpiio FILE [COMPUTE_US]\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    long compute_us = argc > 2 ? atol(argv[2]) : 2000;
    static double buf[2][CHUNK], out[CHUNK];
    MPI_Offset base = (MPI_Offset)rank * CHUNKS * CHUNK * sizeof(double);
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    for (int c = 0; c < CHUNKS; c++) {
        for (int i = 0; i < CHUNK; i++) out[i] = rank + c + i * 1e-4;
        MPI_File_write_at(fh, base + (MPI_Offset)c * CHUNK * sizeof(double), out, CHUNK, MPI_DOUBLE, &st);
    }
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    double acc = 0.0;
    for (int it = 0; it < 6; it++) {
        MPI_Request req;
        mheta_iteration_begin();
        mheta_stage_begin();
        MPI_File_read_at(fh, base, buf[0], CHUNK, MPI_DOUBLE, MPI_STATUS_IGNORE);
        for (int c = 0; c < CHUNKS; c++) {
            int cur = c % 2;
            if (c + 1 < CHUNKS)
                MPI_File_iread_at(fh, base + (MPI_Offset)(c + 1) * CHUNK * sizeof(double), buf[1 - cur], CHUNK, MPI_DOUBLE, &req);
            spin_us(compute_us);
            for (int i = 0; i < CHUNK; i++) { out[i] = 0.5 * buf[cur][i] + 1.0; acc += out[i]; }
            if (c + 1 < CHUNKS) {
                count_t count = -1;
                MPI_Wait(&req, &st);
                MPI_Get_count(&st, MPI_DOUBLE, &count);
                if (count != CHUNK) { fprintf(stderr, "rank %d: prefetch count %lld\n", rank, (long long)count); MPI_Abort(MPI_COMM_WORLD, 3); }
            }
            MPI_File_write_at(fh, base + (MPI_Offset)c * CHUNK * sizeof(double), out, CHUNK, MPI_DOUBLE, MPI_STATUS_IGNORE);
        }
        mheta_stage_end();
        mheta_iteration_end();
    }
    /* the other forms once */
    MPI_File_seek(fh, base, MPI_SEEK_SET);
    MPI_File_read(fh, buf[0], CHUNK, MPI_DOUBLE, &st);
    acc += buf[0][7];
    MPI_File_seek(fh, base, MPI_SEEK_SET);
    MPI_File_read_all(fh, buf[0], CHUNK, MPI_DOUBLE, &st);
    MPI_File_read_at_all(fh, base, buf[1], CHUNK, MPI_DOUBLE, &st);
    acc += buf[0][9] + buf[1][11];
    MPI_File_seek(fh, base, MPI_SEEK_SET);
    MPI_File_write(fh, buf[1], CHUNK, MPI_DOUBLE, &st);
    MPI_File_seek(fh, base, MPI_SEEK_SET);
    MPI_File_write_all(fh, buf[1], CHUNK, MPI_DOUBLE, &st);
    MPI_File_write_at_all(fh, base, buf[1], CHUNK, MPI_DOUBLE, &st);
    MPI_Request r2;
    MPI_File_iwrite_at(fh, base, buf[1], CHUNK, MPI_DOUBLE, &r2);
    MPI_Wait(&r2, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, base, MPI_SEEK_SET);
    MPI_File_iread(fh, buf[0], CHUNK, MPI_DOUBLE, &r2);
    MPI_Wait(&r2, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, base, MPI_SEEK_SET);
    MPI_File_iwrite(fh, buf[0], CHUNK, MPI_DOUBLE, &r2);
    MPI_Wait(&r2, MPI_STATUS_IGNORE);
    acc += buf[0][13];
    MPI_File_close(&fh);
    double total;
    MPI_Allreduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("mpiio np=%d checksum=%.17g\n", size, total);
    MPI_Finalize();
    return 0;
}

/* mheta.h: the C API of mheta (libmheta.so; Fortran: module mheta in
 * capi/fortran/mheta.f90, the same calls).
 *
 * A program started under `mheta run` (the interposer recording) declares
 * its GEN_BLOCK arrays and exchanges, marks its iterations and stages, and
 * lets mheta plan with the MHETA model and move every declared array:
 *
 *   MPI_Init(&argc, &argv);
 *   mheta_init("myapp", n, NULL);                  // Block to start
 *   int u = mheta_array("u", n + 2, 0, 1);         // written, stencil
 *   mheta_exchange(MHETA_HALO, MHETA_CONSTANT, 8 * (n + 2), 2);
 *   mheta_exchange(MHETA_REDUCTION, MHETA_CONSTANT, 8, 1);
 *   for (it = 0; it < iters; it++) {
 *       double *x = mheta_data(u);                 // re-read: rows move
 *       uint64_t first = mheta_first_row(), rows = mheta_local_rows();
 *       mheta_iteration_begin();
 *       ... halo exchange ...
 *       mheta_stage_begin(); mheta_work_begin(); ... compute ...;
 *       mheta_work_end(); mheta_stage_end();
 *       ... reduction ...
 *       mheta_iteration_end();
 *       if (auto_on) mheta_auto(it, iters);        // plans once, moves if it pays
 *   }
 *   mheta_finalize();
 *   MPI_Finalize();
 *
 * Every call returns 0 (or an id, or 1 for "moved") on success and -1 on
 * error; mheta_error() says why. Arrays hold doubles, row-major, owned by
 * mheta; a pointer from mheta_data is valid until the next move.
 * Environment: MHETA_PROFILE (cluster profile from `mheta bench`, needed
 * to plan), MHETA_CLUSTER (a built-in cluster name or TOML file whose
 * cpu_power mheta_work_end emulates). Link: -lmheta.
 */
#ifndef MHETA_H
#define MHETA_H
#define MHETA_API 1

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exchange kinds and scalings for mheta_exchange. */
enum { MHETA_HALO = 0, MHETA_ALLGATHER = 1, MHETA_REDUCTION = 2, MHETA_PIPELINE = 3 };
enum { MHETA_CONSTANT = 0, MHETA_SENDER_ROWS = 1 };

/* After MPI_Init, on MPI_COMM_WORLD: the app's name, its rows, and its
 * distribution (one row count per rank; NULL for Block). */
int mheta_init(const char *app, uint64_t rows, const uint64_t *dist);
/* A distributed array of values_per_row doubles per row, zeroed; returns
 * its id. read_only: the iterations do not change it; halo: a stencil
 * reads its neighbours' edge rows. */
int mheta_array(const char *name, uint64_t values_per_row, int read_only, int halo);
/* This rank's rows of array id (NULL for an unknown id). */
double *mheta_data(int id);
/* This rank's first global row (0-based) and row count, now. */
uint64_t mheta_first_row(void);
uint64_t mheta_local_rows(void);
/* The distribution in force, one count per rank. */
int mheta_dist(uint64_t *dist);
/* One exchange of an iteration: kind, scaling, bytes (per row with
 * MHETA_SENDER_ROWS), and how many per iteration. */
int mheta_exchange(int kind, int scaling, uint64_t bytes, uint32_t per_iteration);
/* Marks (MPI_Pcontrol 100/101 and 110/111). */
int mheta_iteration_begin(void);
int mheta_iteration_end(void);
int mheta_stage_begin(void);
int mheta_stage_end(void);
/* Around real work: under MHETA_CLUSTER a rank of cpu_power p spins after
 * it until the work has taken 1/p of its CPU time. */
int mheta_work_begin(void);
int mheta_work_end(void);
/* After mheta_iteration_end of iteration it (0-based) of iters: right
 * after the recorded iterations, plan and move if the gain over the
 * remaining iterations exceeds the move's cost. 1: rows moved; 0: not. */
int mheta_auto(uint64_t it, uint64_t iters);
/* The same in two steps (collective): whether to move (*moves) and where
 * (dist, one count per rank); then move every array there. */
int mheta_plan(uint64_t remaining, int *moves, uint64_t *dist);
int mheta_move(const uint64_t *dist);
/* The last plan as one JSON line (rank 0 has every field); "" before. */
const char *mheta_report(void);
/* Why the last failing call failed. */
const char *mheta_error(void);
/* Free mheta's arrays (before MPI_Finalize). */
int mheta_finalize(void);

#ifdef __cplusplus
}
#endif

#endif

/*
 * mheta_markers.h: iteration and stage markers for C programs profiled by
 * mheta, header only (no library to link). Programs that use the full C
 * API (capi/include/mheta.h, -lmheta) get the same markers from it.
 *
 * The markers are MPI_Pcontrol levels. Without libmheta_interpose.so loaded
 * MPI_Pcontrol does nothing, so a marked program runs unchanged. Levels 0-2
 * keep mpiP's meanings (off, on, reset); mheta's own start at 100. The Rust
 * twins live in the crates mheta-trace (pcontrol) and mheta-runtime (markers).
 */
#ifndef MHETA_MARKERS_H
#define MHETA_MARKERS_H

#include <mpi.h>

#define MHETA_PCONTROL_OFF 0
#define MHETA_PCONTROL_ON 1
#define MHETA_PCONTROL_RESET 2
#define MHETA_ITER_BEGIN 100
#define MHETA_ITER_END 101
#define MHETA_RECORD_ON 102   /* record on after the counted iterations ... */
#define MHETA_RECORD_DONE 103 /* ... until this: write the trace now */
#define MHETA_STAGE_BEGIN 110
#define MHETA_STAGE_END 111

#ifndef MHETA_API /* mheta.h declares these (returning int) */
/* An iteration of the main loop begins. */
static inline void mheta_iteration_begin(void) { MPI_Pcontrol(MHETA_ITER_BEGIN); }
/* The iteration ends; the instrumented one's trace is on disk on return. */
static inline void mheta_iteration_end(void) { MPI_Pcontrol(MHETA_ITER_END); }
/* A stage (computation and I/O, no communication) begins. */
static inline void mheta_stage_begin(void) { MPI_Pcontrol(MHETA_STAGE_BEGIN); }
/* The stage ends. */
static inline void mheta_stage_end(void) { MPI_Pcontrol(MHETA_STAGE_END); }
#endif

#endif

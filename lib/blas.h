/* blas: the one place that talks to OpenBLAS beyond CBLAS (thread count, kernel, build).
 *
 * epar parallelises over jobs, row blocks and seeds with OpenMP; BLAS calls inside those jobs must be
 * single-threaded, or OpenBLAS's own threads spin against the OpenMP ones. cmd/main.c therefore sets
 * one BLAS thread for the whole process; code that wants BLAS threads sets and restores them here. */
#ifndef EPAR_BLAS_H
#define EPAR_BLAS_H

/* Set OpenBLAS's thread count to n (>= 1); returns the previous count. */
int epar_blas_threads(int n);
/* The kernel OpenBLAS selected for this CPU (e.g. "Haswell", "SkylakeX"). */
const char *epar_blas_core(void);
/* OpenBLAS's build configuration string (version, threading, ...). */
const char *epar_blas_config(void);

#endif

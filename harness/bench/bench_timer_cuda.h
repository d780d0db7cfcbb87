// bench_timer_cuda.h: the CUDA side of bench_timer.h (bench_timer.cu; bench_timer_without_cuda.c in a
// CPU-only build), which bench_timer.c calls for a CUDA execution context. Same contracts as the
// functions of bench_timer.h without "_cuda".
#ifndef PARITY_BENCH_TIMER_CUDA_H
#define PARITY_BENCH_TIMER_CUDA_H

#include "harness/bench/bench_timer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_bench_cuda_timer parity_bench_cuda_timer;

parity_error *parity_bench_cuda_timer_open(const parity_exec *exec, parity_bench_cuda_timer **out);
void parity_bench_cuda_timer_close(parity_bench_cuda_timer *timer);
size_t parity_bench_cuda_timer_flush_bytes(const parity_bench_cuda_timer *timer);
parity_error *parity_bench_cuda_timer_measure(parity_bench_cuda_timer *timer, parity_bench_step step, parity_bench_step after,
                                              void *context, int warmup, int runs, parity_bench_timing *out);
parity_error *parity_bench_cuda_copy_ceiling(parity_bench_cuda_timer *timer, size_t bytes, int runs,
                                             parity_bench_timing *timing, double *gigabytes_per_second);
parity_error *parity_bench_cuda_gemm_ceiling(parity_bench_cuda_timer *timer, int64_t n, int runs,
                                             parity_bench_timing *timing, double *teraflops);

#ifdef __cplusplus
}
#endif
#endif

// bench_timer.h: timing for `parity bench`, on the device of the bench's execution context
// (bench_timer.c). On a CUDA context (bench_timer.cu; bench_timer_without_cuda.c answers UNAVAILABLE in
// a CPU-only build) each measured call is preceded by an L2 flush (a write of a buffer at least 4x the
// L2, so no input is still cached) and timed with CUDA events around the call alone, all on the
// context's stream; on the cpu the monotonic clock around the call, after a write of a buffer 4x the
// last-level cache. Warm-up calls come first. Also the two ceilings every result is compared with,
// measured in the same process: copy bandwidth (bytes read + written; device-to-device, or memcpy)
// and the GEMM rate (cuBLAS bf16 via parity_cuda_gemm, or OpenBLAS fp32; 2 n^3 flops).
#ifndef PARITY_BENCH_TIMER_H
#define PARITY_BENCH_TIMER_H

#include <stddef.h>
#include <stdint.h>

#include "harness/bench/bench_stats.h"
#include "ops/core/error.h"
#include "ops/core/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_bench_timer parity_bench_timer;

// A step of a benchmark: the timed call, or the untimed clean-up after it. NULL error = success.
typedef parity_error *(*parity_bench_step)(void *context);

// A timer on `exec` (a CUDA context the caller keeps until parity_bench_timer_close): the flush, the
// events and the ceilings' work go on its stream, as do the timed calls.
parity_error *parity_bench_timer_open(const parity_exec *exec, parity_bench_timer **out);
void parity_bench_timer_close(parity_bench_timer *timer);
size_t parity_bench_timer_flush_bytes(const parity_bench_timer *timer);

// `warmup` then `runs` calls of step(context), each after an L2 flush; `after` (NULL: none) runs
// untimed after every call. The per-run times (CUDA events around the call) are summarized in *out.
parity_error *parity_bench_timer_measure(parity_bench_timer *timer, parity_bench_step step, parity_bench_step after,
                                         void *context, int warmup, int runs, parity_bench_timing *out);

// Device-to-device copy of `bytes` (cudaMemcpyAsync): GB/s counting bytes read + written.
parity_error *parity_bench_copy_ceiling(parity_bench_timer *timer, size_t bytes, int runs, parity_bench_timing *timing,
                                        double *gigabytes_per_second);
// cuBLAS bf16 GEMM n x n x n with f32 accumulation on random normal inputs: TFLOP/s of 2 n^3.
parity_error *parity_bench_gemm_ceiling(parity_bench_timer *timer, int64_t n, int runs, parity_bench_timing *timing,
                                        double *teraflops);

#ifdef __cplusplus
}
#endif
#endif

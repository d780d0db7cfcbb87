// bench_timer_without_cuda.c: the GPU timer of a CPU-only build: every call reports that parity was
// built without CUDA (left out of CUDA builds, which use bench_timer.cu).
#include "harness/bench/bench_timer_cuda.h"

static parity_error *without_cuda(void) {
    return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "parity bench: parity was built without CUDA");
}

parity_error *parity_bench_cuda_timer_open(const parity_exec *exec, parity_bench_cuda_timer **out) {
    *out = NULL;
    return without_cuda();
}

void parity_bench_cuda_timer_close(parity_bench_cuda_timer *timer) {}

size_t parity_bench_cuda_timer_flush_bytes(const parity_bench_cuda_timer *timer) { return 0; }

parity_error *parity_bench_cuda_timer_measure(parity_bench_cuda_timer *timer, parity_bench_step step, parity_bench_step after,
                                         void *context, int warmup, int runs, parity_bench_timing *out) {
    return without_cuda();
}

parity_error *parity_bench_cuda_copy_ceiling(parity_bench_cuda_timer *timer, size_t bytes, int runs, parity_bench_timing *timing,
                                        double *gigabytes_per_second) {
    return without_cuda();
}

parity_error *parity_bench_cuda_gemm_ceiling(parity_bench_cuda_timer *timer, int64_t n, int runs, parity_bench_timing *timing,
                                        double *teraflops) {
    return without_cuda();
}

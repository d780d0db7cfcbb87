// bench_timer.cu: CUDA events, the L2 flush and the two ceilings of bench_timer.h on a CUDA device
// (bench_timer_cuda.h; bench_timer.c dispatches to them), on the stream of the
// bench's execution context.
#include <algorithm>
#include <vector>

#include "ops/core/cuda/cuda_check.h"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "harness/bench/bench_timer_cuda.h"
#include "ops/core/cuda/blas.h"
#include "ops/core/rng.h"
#include "ops/core/tensor.h"
}

static const double min_warmup_ms = 200; // device time of warm-up calls per measurement
static const int max_warmup_calls = 20000;
static const int busy_writes = 400; // 400 back-to-back writes of the flush buffer: some 30 ms of device time

struct parity_bench_cuda_timer {
    const parity_exec *exec;
    cudaStream_t stream; // exec's
    int device;
    void *flush;
    size_t flush_bytes;
    cudaEvent_t start, stop;
};

extern "C" parity_error *parity_bench_cuda_timer_open(const parity_exec *exec, parity_bench_cuda_timer **out) {
    *out = nullptr;
    if (exec->device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "parity bench: the timer needs a CUDA execution context");
    int device_index = exec->device.index;
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    int l2_bytes = 0;
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device_index));
    parity_bench_cuda_timer *timer = new parity_bench_cuda_timer();
    timer->exec = exec;
    timer->stream = parity_cuda_stream(exec);
    timer->device = device_index;
    timer->flush_bytes = std::max<size_t>((size_t)4 * (size_t)l2_bytes, (size_t)256 << 20);
    cudaError_t status = cudaMalloc(&timer->flush, timer->flush_bytes);
    if (status == cudaSuccess) status = cudaEventCreate(&timer->start);
    if (status == cudaSuccess) status = cudaEventCreate(&timer->stop);
    if (status != cudaSuccess) {
        parity_bench_cuda_timer_close(timer);
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "parity bench: setting up the timer on cuda:%d failed: %s", device_index,
                            cudaGetErrorString(status));
    }
    *out = timer;
    return NULL;
}

extern "C" void parity_bench_cuda_timer_close(parity_bench_cuda_timer *timer) {
    if (!timer) return;
    cudaSetDevice(timer->device);
    if (timer->flush) cudaFree(timer->flush);
    if (timer->start) cudaEventDestroy(timer->start);
    if (timer->stop) cudaEventDestroy(timer->stop);
    delete timer;
}

extern "C" size_t parity_bench_cuda_timer_flush_bytes(const parity_bench_cuda_timer *timer) { return timer ? timer->flush_bytes : 0; }

extern "C" parity_error *parity_bench_cuda_timer_measure(parity_bench_cuda_timer *timer, parity_bench_step step,
                                                    parity_bench_step after, void *context, int warmup, int runs,
                                                    parity_bench_timing *out) {
    PARITY_CUDA_TRY(cudaSetDevice(timer->device));
    std::vector<double> times;
    // Warm-up: `warmup` calls, and more until they add up to min_warmup_ms of device time, so clocks
    // have ramped up whatever ran before (a few calls of a 0.1 ms kernel are not enough).
    // First keep the device busy for a moment with back-to-back writes of the flush buffer (no host
    // round trips), then warm up the call itself.
    PARITY_CUDA_TRY(cudaEventRecord(timer->start, timer->stream));
    for (int i = 0; i < busy_writes; i++)
        PARITY_CUDA_TRY(cudaMemsetAsync(timer->flush, i & 0xff, timer->flush_bytes, timer->stream));
    PARITY_CUDA_TRY(cudaEventRecord(timer->stop, timer->stream));
    PARITY_CUDA_TRY(cudaEventSynchronize(timer->stop));
    double warm_ms = 0;
    int warm_calls = 0;
    for (int i = 0; warm_calls < warmup || (warmup > 0 && warm_ms < min_warmup_ms && warm_calls < max_warmup_calls);
         i++, warm_calls++) {
        PARITY_CUDA_TRY(cudaEventRecord(timer->start, timer->stream));
        parity_error *error = step(context);
        PARITY_CUDA_TRY(cudaEventRecord(timer->stop, timer->stream));
        if (!error && after) error = after(context);
        cudaError_t status = cudaEventSynchronize(timer->stop);
        if (error) return error;
        if (status != cudaSuccess)
            return PARITY_ERROR(PARITY_ERROR_DEVICE, "parity bench: a warm-up call failed on the device: %s",
                                cudaGetErrorString(status));
        float milliseconds = 0;
        PARITY_CUDA_TRY(cudaEventElapsedTime(&milliseconds, timer->start, timer->stop));
        warm_ms += milliseconds;
    }
    for (int i = 0; i < runs; i++) {
        // The flush writes every byte of a buffer >= 4x the L2: nothing of the inputs stays cached.
        PARITY_CUDA_TRY(cudaMemsetAsync(timer->flush, i & 0xff, timer->flush_bytes, timer->stream));
        PARITY_CUDA_TRY(cudaEventRecord(timer->start, timer->stream));
        parity_error *error = step(context);
        PARITY_CUDA_TRY(cudaEventRecord(timer->stop, timer->stream));
        if (!error && after) error = after(context);
        cudaError_t status = cudaEventSynchronize(timer->stop);
        if (error) return error;
        if (status != cudaSuccess)
            return PARITY_ERROR(PARITY_ERROR_DEVICE, "parity bench: a timed call failed on the device: %s",
                                cudaGetErrorString(status));
        PARITY_CUDA_TRY(cudaGetLastError());
        float milliseconds = 0;
        PARITY_CUDA_TRY(cudaEventElapsedTime(&milliseconds, timer->start, timer->stop));
        times.push_back(milliseconds);
    }
    *out = parity_bench_summarize(times.data(), (int)times.size());
    return NULL;
}

namespace {

struct copy_context {
    void *destination;
    const void *source;
    size_t bytes;
    cudaStream_t stream;
};

parity_error *copy_step(void *raw) {
    copy_context *context = (copy_context *)raw;
    PARITY_CUDA_TRY(cudaMemcpyAsync(context->destination, context->source, context->bytes, cudaMemcpyDeviceToDevice,
                                    context->stream));
    return NULL;
}

struct gemm_context {
    const parity_exec *exec;
    parity_cuda_gemm_desc desc;
};

parity_error *gemm_step(void *raw) {
    gemm_context *context = (gemm_context *)raw;
    return parity_cuda_gemm(context->exec, &context->desc);
}

} // namespace

extern "C" parity_error *parity_bench_cuda_copy_ceiling(parity_bench_cuda_timer *timer, size_t bytes, int runs,
                                                   parity_bench_timing *timing, double *gigabytes_per_second) {
    PARITY_CUDA_TRY(cudaSetDevice(timer->device));
    void *source = nullptr, *destination = nullptr;
    PARITY_CUDA_TRY(cudaMalloc(&source, bytes));
    cudaError_t status = cudaMalloc(&destination, bytes);
    if (status == cudaSuccess) status = cudaMemsetAsync(source, 0x5a, bytes, timer->stream);
    parity_error *error = status == cudaSuccess ? NULL
                                                : PARITY_ERROR(PARITY_ERROR_DEVICE, "parity bench: copy buffers of %zu bytes: %s",
                                                               bytes, cudaGetErrorString(status));
    copy_context context = {destination, source, bytes, timer->stream};
    if (!error) error = parity_bench_cuda_timer_measure(timer, copy_step, NULL, &context, 3, runs, timing);
    if (!error) *gigabytes_per_second = 2.0 * (double)bytes / (timing->median_ms * 1e-3) / 1e9;
    cudaFree(source);
    if (destination) cudaFree(destination);
    return error;
}

extern "C" parity_error *parity_bench_cuda_gemm_ceiling(parity_bench_cuda_timer *timer, int64_t n, int runs,
                                                   parity_bench_timing *timing, double *teraflops) {
    parity_device device = {PARITY_DEVICE_CUDA, timer->device};
    parity_tensor a = {}, b = {}, c = {};
    int64_t shape[2] = {n, n};
    parity_error *error = parity_tensor_alloc(&a, PARITY_BF16, device, 2, shape);
    if (!error) error = parity_tensor_alloc(&b, PARITY_BF16, device, 2, shape);
    if (!error) error = parity_tensor_alloc(&c, PARITY_BF16, device, 2, shape);
    if (!error)
        error = parity_rng_fill(timer->exec, &a, parity_rng_stream_named(1, "bench gemm a"), PARITY_RNG_NORMAL, 0, 1);
    if (!error)
        error = parity_rng_fill(timer->exec, &b, parity_rng_stream_named(1, "bench gemm b"), PARITY_RNG_NORMAL, 0, 1);
    if (!error) {
        gemm_context context = {timer->exec,
                                parity_cuda_gemm_packed(PARITY_BF16, 1, n, n, n, false, false, a.data, b.data, c.data)};
        error = parity_bench_cuda_timer_measure(timer, gemm_step, NULL, &context, 3, runs, timing);
    }
    if (!error) *teraflops = 2.0 * (double)n * (double)n * (double)n / (timing->median_ms * 1e-3) / 1e12;
    parity_tensor_release(&a);
    parity_tensor_release(&b);
    parity_tensor_release(&c);
    return error;
}

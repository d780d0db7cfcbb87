// bench_timer.c: the timer of bench_timer.h for either kind of execution context: a CUDA one goes
// to bench_timer.cu (CUDA events on its stream, the L2 flush); a CPU one is timed here with the
// monotonic clock around each call, the caches flushed before every run by writing a buffer of
// 4x the last-level cache (at least 256 MiB), and the CPU's ceilings: memcpy bandwidth and OpenBLAS's
// fp32 GEMM rate.
#include "harness/bench/bench_timer.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/bench/bench_timer_cuda.h"

static const double min_warmup_ms = 200; // wall time of warm-up calls per measurement, as on the GPU
static const int max_warmup_calls = 20000;

struct parity_bench_timer {
    const parity_exec *exec;
    parity_bench_cuda_timer *cuda; // a CUDA context's timer; NULL on the cpu
    unsigned char *flush;          // cpu: the cache flush buffer
    size_t flush_bytes;
};

// The last-level cache of cpu0 from sysfs (0 when it cannot be read).
static size_t last_level_cache_bytes(void) {
    size_t largest = 0;
    for (int index = 0; index < 8; index++) {
        char path[96], text[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        FILE *file = fopen(path, "r");
        if (!file) break;
        if (fgets(text, sizeof text, file)) {
            char *end = NULL;
            unsigned long long value = strtoull(text, &end, 10);
            size_t bytes = (size_t)value * (end && (*end == 'K' || *end == 'k') ? 1024 : end && *end == 'M' ? 1048576 : 1);
            if (bytes > largest) largest = bytes;
        }
        fclose(file);
    }
    return largest;
}

parity_error *parity_bench_timer_open(const parity_exec *exec, parity_bench_timer **out) {
    *out = NULL;
    parity_bench_timer *timer = calloc(1, sizeof *timer);
    if (!timer) return PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: the timer");
    timer->exec = exec;
    if (exec->device.type == PARITY_DEVICE_CUDA) {
        parity_error *error = parity_bench_cuda_timer_open(exec, &timer->cuda);
        if (error) {
            free(timer);
            return error;
        }
    } else if (exec->device.type == PARITY_DEVICE_CPU) {
        size_t cache = last_level_cache_bytes();
        timer->flush_bytes = 4 * cache > ((size_t)256 << 20) ? 4 * cache : (size_t)256 << 20;
        timer->flush = malloc(timer->flush_bytes);
        if (!timer->flush) {
            size_t bytes = timer->flush_bytes;
            free(timer);
            return PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: a cache flush buffer of %zu bytes", bytes);
        }
        memset(timer->flush, 1, timer->flush_bytes);
    } else {
        free(timer);
        return PARITY_ERROR(PARITY_ERROR_USAGE, "parity bench: the timer needs a cpu or CUDA execution context");
    }
    *out = timer;
    return NULL;
}

void parity_bench_timer_close(parity_bench_timer *timer) {
    if (!timer) return;
    parity_bench_cuda_timer_close(timer->cuda);
    free(timer->flush);
    free(timer);
}

size_t parity_bench_timer_flush_bytes(const parity_bench_timer *timer) {
    if (!timer) return 0;
    return timer->cuda ? parity_bench_cuda_timer_flush_bytes(timer->cuda) : timer->flush_bytes;
}

static double now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e3 + (double)now.tv_nsec * 1e-6;
}

// One call timed on the clock (CPU work is synchronous), `after` untimed.
static parity_error *timed_call(parity_bench_step step, parity_bench_step after, void *context, double *milliseconds) {
    double start = now_ms();
    parity_error *error = step(context);
    *milliseconds = now_ms() - start;
    if (!error && after) error = after(context);
    return error;
}

parity_error *parity_bench_timer_measure(parity_bench_timer *timer, parity_bench_step step, parity_bench_step after,
                                         void *context, int warmup, int runs, parity_bench_timing *out) {
    if (timer->cuda) return parity_bench_cuda_timer_measure(timer->cuda, step, after, context, warmup, runs, out);
    double warm_ms = 0, milliseconds;
    for (int calls = 0; calls < warmup || (warmup > 0 && warm_ms < min_warmup_ms && calls < max_warmup_calls); calls++) {
        PARITY_TRY(timed_call(step, after, context, &milliseconds));
        warm_ms += milliseconds;
    }
    double *times = calloc(runs > 0 ? (size_t)runs : 1, sizeof *times);
    if (!times) return PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: %d run times", runs);
    for (int i = 0; i < runs; i++) {
        memset(timer->flush, i & 0xff, timer->flush_bytes); // nothing of the inputs stays cached
        parity_error *error = timed_call(step, after, context, &times[i]);
        if (error) {
            free(times);
            return error;
        }
    }
    *out = parity_bench_summarize(times, runs);
    free(times);
    return NULL;
}

typedef struct copy_context {
    void *destination;
    const void *source;
    size_t bytes;
} copy_context;

static parity_error *copy_step(void *raw) {
    copy_context *context = raw;
    memcpy(context->destination, context->source, context->bytes);
    return NULL;
}

parity_error *parity_bench_copy_ceiling(parity_bench_timer *timer, size_t bytes, int runs, parity_bench_timing *timing,
                                        double *gigabytes_per_second) {
    if (timer->cuda) return parity_bench_cuda_copy_ceiling(timer->cuda, bytes, runs, timing, gigabytes_per_second);
    copy_context context = {malloc(bytes), malloc(bytes), bytes};
    parity_error *error = NULL;
    if (!context.destination || !context.source)
        error = PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: copy buffers of %zu bytes", bytes);
    if (!error) {
        memset((void *)context.source, 0x5a, bytes);
        memset(context.destination, 0, bytes);
        error = parity_bench_timer_measure(timer, copy_step, NULL, &context, 3, runs, timing);
    }
    if (!error) *gigabytes_per_second = 2.0 * (double)bytes / (timing->median_ms * 1e-3) / 1e9;
    free(context.destination);
    free((void *)context.source);
    return error;
}

typedef struct gemm_context {
    int n;
    const float *a, *b;
    float *c;
} gemm_context;

static parity_error *gemm_step(void *raw) {
    gemm_context *g = raw;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b, g->n, 0.0f, g->c, g->n);
    return NULL;
}

parity_error *parity_bench_gemm_ceiling(parity_bench_timer *timer, int64_t n, int runs, parity_bench_timing *timing,
                                        double *teraflops) {
    if (timer->cuda) return parity_bench_cuda_gemm_ceiling(timer->cuda, n, runs, timing, teraflops);
    size_t elements = (size_t)n * (size_t)n;
    float *a = malloc(elements * sizeof *a), *b = malloc(elements * sizeof *b), *c = malloc(elements * sizeof *c);
    parity_error *error = NULL;
    if (!a || !b || !c) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "parity bench: GEMM operands of %lld^2", (long long)n);
    if (!error) {
        for (size_t i = 0; i < elements; i++) {
            a[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
            b[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
        }
        gemm_context context = {(int)n, a, b, c};
        error = parity_bench_timer_measure(timer, gemm_step, NULL, &context, 3, runs, timing);
    }
    if (!error) *teraflops = 2.0 * (double)n * (double)n * (double)n / (timing->median_ms * 1e-3) / 1e12;
    free(a);
    free(b);
    free(c);
    return error;
}

// rng.c: CPU fills from named Philox streams; CUDA tensors are handed to the GPU fill. Large CPU
// fills are split over the processor's cores: element i's value depends on i alone (counter-based
// Philox), so the split changes nothing but the time (~100 ns an element on one core).
#include "ops/core/rng.h"

#include <pthread.h>
#include <unistd.h>

#include "ops/core/rng_value.h"

enum { parallel_fill_min_elements = 1 << 20, parallel_fill_max_threads = 32 };

typedef struct fill_range {
    parity_tensor *tensor;
    parity_rng_stream stream;
    parity_rng_distribution distribution;
    double parameter_a, parameter_b;
    int64_t begin, end;
} fill_range;

static void *fill_range_run(void *raw) {
    const fill_range *range = raw;
    for (int64_t i = range->begin; i < range->end; i++)
        parity_tensor_set(range->tensor, i,
                          parity_rng_value(range->stream, range->distribution, range->parameter_a, range->parameter_b, (uint64_t)i));
    return NULL;
}

// Fills [0, numel) on up to the online cores; a thread that cannot start leaves its range to this one.
static void fill_cpu(parity_tensor *tensor, parity_rng_stream stream, parity_rng_distribution distribution, double a, double b) {
    long cores = tensor->numel >= parallel_fill_min_elements ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    int threads = cores < 1 ? 1 : cores > parallel_fill_max_threads ? parallel_fill_max_threads : (int)cores;
    fill_range ranges[parallel_fill_max_threads];
    pthread_t workers[parallel_fill_max_threads];
    bool started[parallel_fill_max_threads] = {false};
    for (int t = 0; t < threads; t++) {
        ranges[t] = (fill_range){tensor, stream, distribution, a, b, tensor->numel * t / threads, tensor->numel * (t + 1) / threads};
        if (t > 0) started[t] = pthread_create(&workers[t], NULL, fill_range_run, &ranges[t]) == 0;
    }
    fill_range_run(&ranges[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(workers[t], NULL);
        else fill_range_run(&ranges[t]);
    }
}

parity_rng_stream parity_rng_stream_named(uint64_t seed, const char *name) {
    parity_rng_stream stream = {seed, parity_philox_hash_name(name)};
    return stream;
}

void parity_rng_words(parity_rng_stream stream, uint64_t offset, uint32_t *out, int64_t count) {
    for (int64_t i = 0; i < count; i++) out[i] = parity_philox_word(stream.seed, stream.name_hash, offset + (uint64_t)i);
}

parity_error *parity_rng_fill(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream,
                              parity_rng_distribution distribution, double parameter_a, double parameter_b) {
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "random fill of a %s tensor: use parity_rng_fill_integers",
                            parity_dtype_name(tensor->dtype));
    if (!parity_tensor_is_contiguous(tensor)) return PARITY_ERROR(PARITY_ERROR_SHAPE, "random fill needs a contiguous tensor");
    if (tensor->device.type == PARITY_DEVICE_CUDA)
        return parity_rng_fill_cuda(exec, tensor, stream, distribution, parameter_a, parameter_b);
    if (tensor->device.type != PARITY_DEVICE_CPU) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "needs an Ascend NPU build");
    fill_cpu(tensor, stream, distribution, parameter_a, parameter_b);
    return NULL;
}

parity_error *parity_rng_nudge_ulps(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream) {
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "ulp nudge of a %s tensor: float dtypes only", parity_dtype_name(tensor->dtype));
    if (!parity_tensor_is_contiguous(tensor)) return PARITY_ERROR(PARITY_ERROR_SHAPE, "ulp nudge needs a contiguous tensor");
    if (tensor->device.type == PARITY_DEVICE_CUDA) return parity_rng_nudge_ulps_cuda(exec, tensor, stream);
    if (tensor->device.type != PARITY_DEVICE_CPU) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "needs an Ascend NPU build");
    for (int64_t i = 0; i < tensor->numel; i++) {
        int direction = parity_rng_nudge_direction(stream, (uint64_t)i);
        if (!direction) continue;
        switch (tensor->dtype) {
        case PARITY_F64: {
            uint64_t *bits = (uint64_t *)tensor->data + i, sign = *bits & (UINT64_C(1) << 63);
            *bits = sign | parity_rng_nudged_magnitude(*bits & ~sign, UINT64_C(0x7ff0000000000000), direction);
            break;
        }
        case PARITY_F32: {
            uint32_t *bits = (uint32_t *)tensor->data + i, sign = *bits & UINT32_C(0x80000000);
            *bits = sign | (uint32_t)parity_rng_nudged_magnitude(*bits & ~sign, UINT64_C(0x7f800000), direction);
            break;
        }
        case PARITY_BF16:
        case PARITY_F16: {
            uint16_t *bits = (uint16_t *)tensor->data + i, sign = *bits & 0x8000u;
            uint64_t infinity = tensor->dtype == PARITY_BF16 ? 0x7f80u : 0x7c00u;
            *bits = (uint16_t)(sign | parity_rng_nudged_magnitude(*bits & 0x7fffu, infinity, direction));
            break;
        }
        default: break;
        }
    }
    return NULL;
}

parity_error *parity_rng_fill_integers(parity_tensor *tensor, parity_rng_stream stream, int64_t bound) {
    if (tensor->dtype != PARITY_I64 && tensor->dtype != PARITY_I32)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "integer fill of a %s tensor", parity_dtype_name(tensor->dtype));
    int64_t limit = tensor->dtype == PARITY_I32 ? INT64_C(1) << 31 : INT64_C(1) << 32;
    if (bound <= 0 || bound > limit)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "integer bound %lld outside 1..%lld for %s", (long long)bound, (long long)limit,
                            parity_dtype_name(tensor->dtype));
    if (tensor->device.type != PARITY_DEVICE_CPU) return PARITY_ERROR(PARITY_ERROR_USAGE, "integer fill is CPU-only; copy afterwards");
    for (int64_t i = 0; i < tensor->numel; i++) {
        uint64_t word = parity_philox_word(stream.seed, stream.name_hash, (uint64_t)i);
        int64_t value = (int64_t)((word * (uint64_t)bound) >> 32); // Lemire's multiply-shift, bias < 2^-32 * bound
        if (tensor->dtype == PARITY_I64) ((int64_t *)tensor->data)[parity_tensor_offset(tensor, i)] = value;
        else ((int32_t *)tensor->data)[parity_tensor_offset(tensor, i)] = (int32_t)value;
    }
    return NULL;
}

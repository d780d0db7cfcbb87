// rng.c: CPU fills from named Philox streams; CUDA tensors are handed to the GPU fill.
#include "ops/core/rng.h"

#include "ops/core/rng_value.h"

parity_rng_stream parity_rng_stream_named(uint64_t seed, const char *name) {
    parity_rng_stream stream = {seed, parity_philox_hash_name(name)};
    return stream;
}

void parity_rng_words(parity_rng_stream stream, uint64_t offset, uint32_t *out, int64_t count) {
    for (int64_t i = 0; i < count; i++) out[i] = parity_philox_word(stream.seed, stream.name_hash, offset + (uint64_t)i);
}

parity_error *parity_rng_fill(parity_tensor *tensor, parity_rng_stream stream, parity_rng_distribution distribution,
                              double parameter_a, double parameter_b) {
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "random fill of a %s tensor: use parity_rng_fill_integers",
                            parity_dtype_name(tensor->dtype));
    if (!parity_tensor_is_contiguous(tensor)) return PARITY_ERROR(PARITY_ERROR_SHAPE, "random fill needs a contiguous tensor");
    if (tensor->device.type == PARITY_DEVICE_CUDA)
        return parity_rng_fill_cuda(tensor, stream, distribution, parameter_a, parameter_b);
    if (tensor->device.type != PARITY_DEVICE_CPU) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "needs an Ascend NPU build");
    for (int64_t i = 0; i < tensor->numel; i++)
        parity_tensor_set(tensor, i, parity_rng_value(stream, distribution, parameter_a, parameter_b, (uint64_t)i));
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

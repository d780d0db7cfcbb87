// rng_fill.cu: GPU fills from named Philox streams: the same rng_value.h formula as the CPU, one
// thread per element, rounding once to the tensor's dtype, on the caller's execution context's stream.
#include <stdint.h>

#include "ops/core/cuda/cuda_check.h"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "ops/core/rng_value.h"
}

template <typename Store>
__global__ void rng_fill_kernel(Store store, parity_rng_stream stream, parity_rng_distribution distribution, double a,
                                double b, int64_t count) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        store(i, parity_rng_value(stream, distribution, a, b, (uint64_t)i));
}

struct store_f64 { double *out; __device__ void operator()(int64_t i, double v) const { out[i] = v; } };
struct store_f32 { float *out; __device__ void operator()(int64_t i, double v) const { out[i] = __double2float_rn(v); } };
struct store_bf16 { uint16_t *out; __device__ void operator()(int64_t i, double v) const { out[i] = parity_f64_to_bf16(v); } };
struct store_f16 { uint16_t *out; __device__ void operator()(int64_t i, double v) const { out[i] = parity_f64_to_f16(v); } };

// One unit in the last place per element (parity_rng_nudge_ulps), on the value's bits.
template <typename Bits>
__global__ void rng_nudge_kernel(Bits *data, Bits sign_bit, uint64_t infinity_bits, parity_rng_stream stream, int64_t count) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        int direction = parity_rng_nudge_direction(stream, (uint64_t)i);
        if (!direction) continue;
        Bits sign = data[i] & sign_bit;
        data[i] = (Bits)(sign | (Bits)parity_rng_nudged_magnitude((uint64_t)(data[i] & (Bits)~sign_bit), infinity_bits, direction));
    }
}

__global__ void rng_words_kernel(parity_rng_stream stream, uint64_t offset, uint32_t *out, int64_t count) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = parity_philox_word(stream.seed, stream.name_hash, offset + (uint64_t)i);
}

static unsigned grid_for(int64_t count) {
    int64_t blocks = (count + 255) / 256;
    return (unsigned)(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

extern "C" parity_error *parity_rng_fill_cuda(const parity_exec *exec, parity_tensor *tensor, parity_rng_stream stream,
                                              parity_rng_distribution distribution, double a, double b) {
    PARITY_CUDA_TRY(cudaSetDevice(tensor->device.index));
    unsigned grid = grid_for(tensor->numel);
    cudaStream_t on = parity_cuda_stream(exec);
    switch (tensor->dtype) {
    case PARITY_F64:
        rng_fill_kernel<<<grid, 256, 0, on>>>(store_f64{(double *)tensor->data}, stream, distribution, a, b,
                                              tensor->numel);
        break;
    case PARITY_F32:
        rng_fill_kernel<<<grid, 256, 0, on>>>(store_f32{(float *)tensor->data}, stream, distribution, a, b,
                                              tensor->numel);
        break;
    case PARITY_BF16:
        rng_fill_kernel<<<grid, 256, 0, on>>>(store_bf16{(uint16_t *)tensor->data}, stream, distribution, a, b,
                                              tensor->numel);
        break;
    case PARITY_F16:
        rng_fill_kernel<<<grid, 256, 0, on>>>(store_f16{(uint16_t *)tensor->data}, stream, distribution, a, b,
                                              tensor->numel);
        break;
    default: return PARITY_ERROR(PARITY_ERROR_USAGE, "random fill of a %s tensor", parity_dtype_name(tensor->dtype));
    }
    PARITY_CUDA_TRY_LAUNCH("rng_fill_kernel");
    PARITY_CUDA_TRY(cudaStreamSynchronize(on));
    return NULL;
}

extern "C" parity_error *parity_rng_nudge_ulps_cuda(const parity_exec *exec, parity_tensor *tensor,
                                                    parity_rng_stream stream) {
    if (tensor->numel == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(tensor->device.index));
    unsigned grid = grid_for(tensor->numel);
    cudaStream_t on = parity_cuda_stream(exec);
    switch (tensor->dtype) {
    case PARITY_F64:
        rng_nudge_kernel<uint64_t><<<grid, 256, 0, on>>>((uint64_t *)tensor->data, UINT64_C(1) << 63,
                                                         UINT64_C(0x7ff0000000000000), stream, tensor->numel);
        break;
    case PARITY_F32:
        rng_nudge_kernel<uint32_t>
            <<<grid, 256, 0, on>>>((uint32_t *)tensor->data, 0x80000000u, 0x7f800000u, stream, tensor->numel);
        break;
    case PARITY_BF16:
        rng_nudge_kernel<uint16_t>
            <<<grid, 256, 0, on>>>((uint16_t *)tensor->data, 0x8000u, 0x7f80u, stream, tensor->numel);
        break;
    case PARITY_F16:
        rng_nudge_kernel<uint16_t>
            <<<grid, 256, 0, on>>>((uint16_t *)tensor->data, 0x8000u, 0x7c00u, stream, tensor->numel);
        break;
    default: return PARITY_ERROR(PARITY_ERROR_USAGE, "ulp nudge of a %s tensor", parity_dtype_name(tensor->dtype));
    }
    PARITY_CUDA_TRY_LAUNCH("rng_nudge_kernel");
    return NULL;
}

extern "C" parity_error *parity_rng_words_cuda(const parity_exec *exec, parity_rng_stream stream, uint64_t offset,
                                               uint32_t *device_out, int64_t count) {
    if (!exec || exec->device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "rng words on the GPU: needs a CUDA execution context");
    PARITY_CUDA_TRY(cudaSetDevice(exec->device.index));
    cudaStream_t on = parity_cuda_stream(exec);
    rng_words_kernel<<<grid_for(count), 256, 0, on>>>(stream, offset, device_out, count);
    PARITY_CUDA_TRY_LAUNCH("rng_words_kernel");
    PARITY_CUDA_TRY(cudaStreamSynchronize(on));
    return NULL;
}

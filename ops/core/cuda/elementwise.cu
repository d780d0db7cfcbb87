// elementwise.cu: the device-side tensor helpers of elementwise.h (add into, dtype conversion,
// fill), one thread per element over a grid-stride loop; the sum of squares and the sketch reduce in
// a fixed order.
// Every launch goes on the caller's execution context's stream.
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"

extern "C" {
#include "ops/core/cuda/elementwise.h"
}

namespace {

// Loads element i of any dtype as f64 (exact for every dtype parity stores, int64 up to 2^53).
__device__ double load_any(const void *data, parity_dtype dtype, int64_t i) {
    switch (dtype) {
    case PARITY_F64: return ((const double *)data)[i];
    case PARITY_F32: return ((const float *)data)[i];
    case PARITY_BF16: return parity_bf16_to_f64(((const uint16_t *)data)[i]);
    case PARITY_F16: return parity_f16_to_f64(((const uint16_t *)data)[i]);
    case PARITY_I64: return (double)((const int64_t *)data)[i];
    case PARITY_I32: return ((const int32_t *)data)[i];
    case PARITY_U8: return ((const uint8_t *)data)[i];
    default: return NAN;
    }
}

// Stores an f64 value into a float dtype with one rounding.
__device__ void store_float(void *data, parity_dtype dtype, int64_t i, double value) {
    switch (dtype) {
    case PARITY_F64: ((double *)data)[i] = value; break;
    case PARITY_F32: ((float *)data)[i] = __double2float_rn(value); break;
    case PARITY_BF16: ((uint16_t *)data)[i] = parity_f64_to_bf16(value); break;
    case PARITY_F16: ((uint16_t *)data)[i] = parity_f64_to_f16(value); break;
    default: break;
    }
}

__global__ void add_into_kernel(void *destination, const void *source, parity_dtype dtype, int64_t count) {
    PARITY_CUDA_FOR_EACH(i, count) store_float(destination, dtype, i, load_any(destination, dtype, i) + load_any(source, dtype, i));
}

// int64/int32 -> int64/int32 exactly (values outside int32 wrap, as a C cast).
__global__ void convert_integer_kernel(void *destination, parity_dtype to, const void *source, parity_dtype from,
                                       int64_t count) {
    PARITY_CUDA_FOR_EACH(i, count) {
        int64_t value = from == PARITY_I64 ? ((const int64_t *)source)[i] : from == PARITY_I32 ? ((const int32_t *)source)[i]
                                                                                             : ((const uint8_t *)source)[i];
        if (to == PARITY_I64) ((int64_t *)destination)[i] = value;
        else if (to == PARITY_I32) ((int32_t *)destination)[i] = (int32_t)value;
        else ((uint8_t *)destination)[i] = (uint8_t)value;
    }
}

__global__ void convert_to_float_kernel(void *destination, parity_dtype to, const void *source, parity_dtype from,
                                        int64_t count) {
    PARITY_CUDA_FOR_EACH(i, count) store_float(destination, to, i, load_any(source, from, i));
}

__global__ void fill_kernel(void *data, parity_dtype dtype, double value, int64_t count) {
    PARITY_CUDA_FOR_EACH(i, count) store_float(data, dtype, i, value);
}

// The CUDA device of `tensor` (cuda:0 for a tensor elsewhere): the device its call runs on.
parity_device cuda_device_of(const parity_tensor *tensor) {
    parity_device device = {PARITY_DEVICE_CUDA, tensor->device.type == PARITY_DEVICE_CUDA ? tensor->device.index : 0};
    return device;
}

parity_error *check_pair(const char *what, const parity_tensor *destination, const parity_tensor *source) {
    const parity_device device = cuda_device_of(destination);
    PARITY_TRY(parity_cuda_check_tensor(what, "destination", destination, device));
    PARITY_TRY(parity_cuda_check_tensor(what, "source", source, device));
    char a[200], b[200];
    if (!parity_tensor_same_shape(destination, source))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s: %s and %s must have one shape", what,
                            parity_tensor_describe(source, a, sizeof a), parity_tensor_describe(destination, b, sizeof b));
    return NULL;
}

} // namespace

extern "C" parity_error *parity_cuda_add_into(const parity_exec *exec, parity_tensor *destination,
                                              const parity_tensor *source) {
    PARITY_TRY(check_pair("cuda add_into", destination, source));
    char a[200];
    if (destination->dtype != source->dtype || !parity_dtype_is_float(destination->dtype))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "cuda add_into: %s into %s: needs one float dtype",
                            parity_dtype_name(source->dtype), parity_tensor_describe(destination, a, sizeof a));
    if (destination->numel == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(destination->device.index));
    add_into_kernel<<<parity_cuda::grid_for(destination->numel), 256, 0, parity_cuda_stream(exec)>>>(
        destination->data, source->data, destination->dtype, destination->numel);
    PARITY_CUDA_TRY_LAUNCH("add_into_kernel");
    return NULL;
}

extern "C" parity_error *parity_cuda_convert(const parity_exec *exec, parity_tensor *destination,
                                             const parity_tensor *source) {
    PARITY_TRY(check_pair("cuda convert", destination, source));
    bool to_float = parity_dtype_is_float(destination->dtype), from_float = parity_dtype_is_float(source->dtype);
    if (from_float && !to_float)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "cuda convert: %s to %s would truncate", parity_dtype_name(source->dtype),
                            parity_dtype_name(destination->dtype));
    if (destination->numel == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(destination->device.index));
    unsigned grid = parity_cuda::grid_for(destination->numel);
    cudaStream_t stream = parity_cuda_stream(exec);
    if (to_float)
        convert_to_float_kernel<<<grid, 256, 0, stream>>>(destination->data, destination->dtype, source->data,
                                                          source->dtype, destination->numel);
    else
        convert_integer_kernel<<<grid, 256, 0, stream>>>(destination->data, destination->dtype, source->data,
                                                         source->dtype, destination->numel);
    PARITY_CUDA_TRY_LAUNCH("convert kernel");
    return NULL;
}

extern "C" parity_error *parity_cuda_fill(const parity_exec *exec, parity_tensor *tensor, double value) {
    PARITY_TRY(parity_cuda_check_tensor("cuda fill", "tensor", tensor, cuda_device_of(tensor)));
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "cuda fill: %s tensor (float dtypes only)", parity_dtype_name(tensor->dtype));
    if (tensor->numel == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(tensor->device.index));
    fill_kernel<<<parity_cuda::grid_for(tensor->numel), 256, 0, parity_cuda_stream(exec)>>>(tensor->data, tensor->dtype,
                                                                                            value, tensor->numel);
    PARITY_CUDA_TRY_LAUNCH("fill_kernel");
    return NULL;
}

namespace {

constexpr int squares_threads = 256;
constexpr int64_t squares_max_blocks = 1024;

// partials[b] = sum of x^2 over elements b*256 + t + k * (blocks * 256), tree-summed in the block.
__global__ void sum_of_squares_kernel(const void *data, parity_dtype dtype, int64_t count, double *partials) {
    __shared__ double sums[squares_threads];
    double sum = 0;
    for (int64_t i = blockIdx.x * (int64_t)squares_threads + threadIdx.x; i < count; i += (int64_t)gridDim.x * squares_threads) {
        const double value = load_any(data, dtype, i);
        sum += value * value;
    }
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (int half = squares_threads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
}

} // namespace

extern "C" parity_error *parity_cuda_sum_of_squares(const parity_exec *exec, const parity_tensor *tensor, double *out) {
    *out = 0;
    PARITY_TRY(parity_cuda_check_tensor("cuda sum of squares", "tensor", tensor, cuda_device_of(tensor)));
    if (!exec) return PARITY_ERROR(PARITY_ERROR_USAGE, "cuda sum of squares: needs an execution context (its scratch)");
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "cuda sum of squares: %s tensor (float dtypes only)",
                            parity_dtype_name(tensor->dtype));
    if (tensor->numel == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(tensor->device.index));
    int64_t blocks = (tensor->numel + squares_threads - 1) / squares_threads;
    if (blocks > squares_max_blocks) blocks = squares_max_blocks;
    // Partials in the context's scratch (no cudaMalloc/cudaFree per call): device side written by the
    // kernel, copied to the page-locked host side on the same stream, read once the stream is done.
    void *device_partials = nullptr, *host_partials = nullptr;
    PARITY_TRY(parity_exec_device_scratch(exec, (size_t)blocks * sizeof(double), &device_partials));
    PARITY_TRY(parity_exec_host_scratch(exec, (size_t)blocks * sizeof(double), &host_partials));
    double *partials = (double *)device_partials, *host = (double *)host_partials;
    cudaStream_t stream = parity_cuda_stream(exec);
    sum_of_squares_kernel<<<(unsigned)blocks, squares_threads, 0, stream>>>(tensor->data, tensor->dtype, tensor->numel,
                                                                            partials);
    cudaError_t status = cudaGetLastError();
    if (status == cudaSuccess)
        status = cudaMemcpyAsync(host, partials, (size_t)blocks * sizeof(double), cudaMemcpyDeviceToHost, stream);
    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
    if (status != cudaSuccess)
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "cuda sum of squares of %lld elements: %s", (long long)tensor->numel,
                            cudaGetErrorString(status));
    double sum = 0;
    for (int64_t b = 0; b < blocks; b++) sum += host[b];
    *out = sum;
    return NULL;
}

namespace {

constexpr int sketch_threads = 256;
constexpr int64_t sketch_max_blocks = 1024;

// partials[b * K + j] = sum of r_j(i) * x_i over the elements of the sum of squares' layout (i =
// b*256 + t + k * (blocks * 256)), each of the K sums tree-summed in the block as the sum of squares is.
__global__ void sketch_kernel(const void *data, parity_dtype dtype, int64_t count, uint64_t name_hash, double *partials) {
    __shared__ double sums[PARITY_SKETCH_K][sketch_threads];
    double sum[PARITY_SKETCH_K] = {0};
    for (int64_t i = blockIdx.x * (int64_t)sketch_threads + threadIdx.x; i < count; i += (int64_t)gridDim.x * sketch_threads)
        parity_sketch_add(sum, parity_sketch_signs(name_hash, (uint64_t)i), load_any(data, dtype, i));
    for (int j = 0; j < PARITY_SKETCH_K; j++) sums[j][threadIdx.x] = sum[j];
    __syncthreads();
    for (int half = sketch_threads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            for (int j = 0; j < PARITY_SKETCH_K; j++) sums[j][threadIdx.x] += sums[j][threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        for (int j = 0; j < PARITY_SKETCH_K; j++) partials[blockIdx.x * PARITY_SKETCH_K + j] = sums[j][0];
}

} // namespace

extern "C" parity_error *parity_cuda_sketch(const parity_exec *exec, const parity_tensor *tensor, uint64_t name_hash,
                                            double out[PARITY_SKETCH_K]) {
    for (int j = 0; j < PARITY_SKETCH_K; j++) out[j] = 0;
    PARITY_TRY(parity_cuda_check_tensor("cuda sketch", "tensor", tensor, cuda_device_of(tensor)));
    if (!exec) return PARITY_ERROR(PARITY_ERROR_USAGE, "cuda sketch: needs an execution context (its scratch)");
    if (!parity_dtype_is_float(tensor->dtype))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "cuda sketch: %s tensor (float dtypes only)", parity_dtype_name(tensor->dtype));
    if (tensor->numel == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(tensor->device.index));
    int64_t blocks = (tensor->numel + sketch_threads - 1) / sketch_threads;
    if (blocks > sketch_max_blocks) blocks = sketch_max_blocks;
    const size_t bytes = (size_t)blocks * PARITY_SKETCH_K * sizeof(double);
    // Partials in the context's scratch, as the sum of squares keeps them.
    void *device_partials = nullptr, *host_partials = nullptr;
    PARITY_TRY(parity_exec_device_scratch(exec, bytes, &device_partials));
    PARITY_TRY(parity_exec_host_scratch(exec, bytes, &host_partials));
    double *partials = (double *)device_partials, *host = (double *)host_partials;
    cudaStream_t stream = parity_cuda_stream(exec);
    sketch_kernel<<<(unsigned)blocks, sketch_threads, 0, stream>>>(tensor->data, tensor->dtype, tensor->numel, name_hash,
                                                                   partials);
    cudaError_t status = cudaGetLastError();
    if (status == cudaSuccess) status = cudaMemcpyAsync(host, partials, bytes, cudaMemcpyDeviceToHost, stream);
    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
    if (status != cudaSuccess)
        return PARITY_ERROR(PARITY_ERROR_DEVICE, "cuda sketch of %lld elements: %s", (long long)tensor->numel,
                            cudaGetErrorString(status));
    double sum[PARITY_SKETCH_K] = {0};
    for (int64_t b = 0; b < blocks; b++)
        for (int j = 0; j < PARITY_SKETCH_K; j++) sum[j] += host[b * PARITY_SKETCH_K + j];
    for (int j = 0; j < PARITY_SKETCH_K; j++) out[j] = sum[j];
    return NULL;
}

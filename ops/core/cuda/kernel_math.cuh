// kernel_math.cuh: what every parity CUDA kernel shares (fused_rows.cuh and eager_support.cuh build
// on it). For .cu files only.
//   - scalar<D, FORM>: the one set of dtype traits: storage and compute types of a float dtype and
//     its conversions. bf16 arithmetic runs in f32, as PyTorch's bf16 kernels do; f64 runs stay f64.
//     bf16 has two forms: uint16_t bits with dtype.h's bit-level conversions (the eager kernels: the
//     CPU's bits, NaN payloads included) or cuda_bf16.h's __nv_bfloat16 with the hardware's (the
//     fused kernels: one cvt.rn.bf16.f32 a store, the same round-to-nearest-even).
//   - dispatch_float: one templated launch instantiated for f64, f32 and bf16.
//   - parity_cuda_check_tensor (device_args.h): the one check of a call's tensors (on the call's CUDA
//     device: USAGE otherwise; contiguous with data: SHAPE otherwise).
//   - grid sizes, deterministic block reductions (fixed tree order, so runs are bitwise repeatable).
//   - exp/log/... of a compute value through f64 and one rounding, so f32 results match the CPU
//     eager's f64-then-round emulation instead of carrying the fast f32 functions' ulp errors.
#ifndef PARITY_CUDA_KERNEL_MATH_CUH
#define PARITY_CUDA_KERNEL_MATH_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <initializer_list>
#include <math.h>
#include <stdint.h>

#include "ops/core/cuda/cuda_check.h"

extern "C" {
#include "ops/core/cuda/device_args.h"
#include "ops/core/device.h"
#include "ops/core/dtype.h"
}

// PARITY_SHAPE for C++: expands to `ndim, shape` (the array lives until the end of the full expression).
#define PARITY_CUDA_SHAPE(...)                                                                      \
    (int)std::initializer_list<int64_t>{__VA_ARGS__}.size(), std::initializer_list<int64_t>{__VA_ARGS__}.begin()

namespace parity_cuda {

// How a kernel holds bf16 (f64 and f32 are the same in both forms). The storage type matters beyond
// the conversions: the compiler packs and unpacks __nv_bfloat16 vectors in fewer instructions.
enum class bf16_form { bits, hardware };

template <parity_dtype D, bf16_form FORM = bf16_form::bits> struct scalar;

template <bf16_form FORM> struct scalar<PARITY_F64, FORM> {
    using storage = double;
    using compute = double;
    __device__ __forceinline__ static compute load(storage value) { return value; }
    __device__ __forceinline__ static storage store(compute value) { return value; }
    __device__ __forceinline__ static storage from_f64(double value) { return value; }
};

template <bf16_form FORM> struct scalar<PARITY_F32, FORM> {
    using storage = float;
    using compute = float;
    __device__ __forceinline__ static compute load(storage value) { return value; }
    __device__ __forceinline__ static storage store(compute value) { return value; }
    __device__ __forceinline__ static storage from_f64(double value) { return __double2float_rn(value); }
};

template <> struct scalar<PARITY_BF16, bf16_form::bits> {
    using storage = uint16_t;
    using compute = float;
    __device__ __forceinline__ static compute load(storage value) { return parity_bf16_to_f32(value); }
    __device__ __forceinline__ static storage store(compute value) { return parity_f32_to_bf16(value); }
    __device__ __forceinline__ static storage from_f64(double value) { return parity_f64_to_bf16(value); }
};

// Loads are exact in both forms and stores round to nearest even in both: the same bits for every
// value but a NaN (whose payload the hardware need not keep).
template <> struct scalar<PARITY_BF16, bf16_form::hardware> {
    using storage = __nv_bfloat16;
    using compute = float;
    __device__ __forceinline__ static compute load(storage value) { return __bfloat162float(value); }
    __device__ __forceinline__ static storage store(compute value) { return __float2bfloat16_rn(value); }
};

// Rounds a compute value to what the storage dtype holds, staying in the compute type.
template <parity_dtype D, bf16_form FORM = bf16_form::bits>
__device__ __forceinline__ typename scalar<D, FORM>::compute round_storage(typename scalar<D, FORM>::compute v) {
    return scalar<D, FORM>::load(scalar<D, FORM>::store(v));
}

// The CPU eager's parity_round_compute: an f64 result rounded once to the compute type.
template <parity_dtype D> __device__ __forceinline__ typename scalar<D>::compute to_compute(double v) {
    return (typename scalar<D>::compute)v;
}

// A value as a tensor of the dtype holds it after an operation computed in f64: rounded to the
// compute type, then to storage (the CPU eager's stored(): f64 -> f32 -> bf16, two roundings).
template <parity_dtype D> __device__ __forceinline__ typename scalar<D>::compute stored_f64(double v) {
    return round_storage<D>(to_compute<D>(v));
}

template <parity_dtype D> struct dtype_tag {
    static constexpr parity_dtype value = D;
};

// Calls fn(dtype_tag<D>{}) for the float dtype D == dtype; USAGE error naming `what` otherwise.
template <typename Fn> parity_error *dispatch_float(parity_dtype dtype, const char *what, Fn &&fn) {
    switch (dtype) {
    case PARITY_F64: return fn(dtype_tag<PARITY_F64>{});
    case PARITY_F32: return fn(dtype_tag<PARITY_F32>{});
    case PARITY_BF16: return fn(dtype_tag<PARITY_BF16>{});
    default:
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: dtype %s is not supported on cuda (fp64, fp32, bf16)", what,
                            parity_dtype_name(dtype));
    }
}

// Makes `device` current for the launches that follow.
inline parity_error *use_device(parity_device device) {
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    return NULL;
}

// A 1-d grid of `threads`-wide blocks covering `count` elements (capped; kernels grid-stride).
inline unsigned grid_for(int64_t count, int threads = 256) {
    int64_t blocks = (count + threads - 1) / threads;
    if (blocks < 1) blocks = 1;
    if (blocks > 65535 * 16) blocks = 65535 * 16;
    return (unsigned)blocks;
}

// Grid-stride loop over [0, count).
#define PARITY_CUDA_FOR_EACH(index, count)                                                          \
    for (int64_t index = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; index < (count);            \
         index += (int64_t)gridDim.x * blockDim.x)

// Sum over the block in a fixed order; every thread gets the result. `scratch` holds 32 values;
// blockDim.x is a multiple of 32, at most 1024.
template <typename T> __device__ T block_sum(T value, T *scratch) {
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads(); // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = value;
    __syncthreads();
    T total = lane < warps ? scratch[lane] : T(0);
    for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_xor_sync(0xffffffffu, total, offset);
    return total;
}

template <typename T> __device__ T block_max(T value, T *scratch) {
    for (int offset = 16; offset > 0; offset >>= 1) value = fmax(value, __shfl_xor_sync(0xffffffffu, value, offset));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) scratch[warp] = value;
    __syncthreads();
    T total = lane < warps ? scratch[lane] : T(-INFINITY);
    for (int offset = 16; offset > 0; offset >>= 1) total = fmax(total, __shfl_xor_sync(0xffffffffu, total, offset));
    return total;
}

// A product rounded on its own, never contracted into an fma with a following add (the CPU eager
// rounds every product before the sum that uses it).
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// Transcendentals of a compute value: f64 evaluation, one rounding to the compute type.
__device__ __forceinline__ double precise_exp(double x) { return exp(x); }
__device__ __forceinline__ float precise_exp(float x) { return __double2float_rn(exp((double)x)); }
__device__ __forceinline__ double precise_log(double x) { return log(x); }
__device__ __forceinline__ float precise_log(float x) { return __double2float_rn(log((double)x)); }
__device__ __forceinline__ double precise_cos(double x) { return cos(x); }
__device__ __forceinline__ float precise_cos(float x) { return __double2float_rn(cos((double)x)); }
__device__ __forceinline__ double precise_sin(double x) { return sin(x); }
__device__ __forceinline__ float precise_sin(float x) { return __double2float_rn(sin((double)x)); }

} // namespace parity_cuda

#endif

// silu.cuh: SiLU and its derivative on the device with the CPU eager's rounding (ops/swiglu/silu.h):
// step by step in the compute type, exp evaluated in f64 and rounded once. Shared by the CUDA eager
// ops that apply silu (swiglu, rms_norm_gated). For .cu files only.
#ifndef PARITY_SILU_CUH
#define PARITY_SILU_CUH

#include "ops/core/cuda/kernel_math.cuh"

namespace parity_cuda {

// x / (1 + exp(-x))
template <typename C> __device__ __forceinline__ C silu_value(C x) {
    C e = precise_exp(-x);
    return x / (C(1) + e);
}

// dy * s * (1 + x * (1 - s)), s = 1 / (1 + exp(-x)); the slope is one fma, as nvcc contracts it in ATen.
template <typename C> __device__ __forceinline__ C silu_gradient(C dy, C x) {
    C e = precise_exp(-x);
    C s = C(1) / (C(1) + e);
    C slope = fma(x, C(1) - s, C(1));
    return mul_rn(mul_rn(dy, s), slope);
}

} // namespace parity_cuda

#endif

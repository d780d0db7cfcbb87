// grouped_math.cuh: the small device helpers both grouped-GEMM families share (grouped_gemm.cuh's
// mma.sync kernels of fused_triton and sm90_gemm.cuh's wgmma kernels of fused_quack): the SwiGLU
// math, the tile -> expert search over tile_offsets, bf16 pair stores and loads, the epilogue kinds.
// Device code only, no kernels (so both .cu files may include it).
#ifndef PARITY_MOE_GROUPED_MATH_CUH
#define PARITY_MOE_GROUPED_MATH_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "ops/core/cuda/eager_support.cuh"

namespace parity_moe {

using bf16 = __nv_bfloat16;

// silu and torch's silu_backward (dy * s * (1 + x (1 - s)), s = sigmoid(x)) in f32.
__device__ __forceinline__ float silu_f32(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float silu_backward_f32(float dy, float x) {
    float s = 1.0f / (1.0f + expf(-x));
    return dy * s * (1.0f + x * (1.0f - s));
}

// The expert e whose tiles hold `tile`: tile_offsets (E + 1) nondecreasing, tile < tile_offsets[E];
// the largest e with tile_offsets[e] <= tile (empty experts have no tile and are skipped).
__device__ __forceinline__ int expert_of_tile(const int64_t *tile_offsets, int experts, int64_t tile) {
    return (int)parity_cuda::document_of(tile_offsets, experts, tile); // the same search over boundaries
}

// Epilogue kinds of the row-grouped GEMM.
enum epilogue_kind {
    EPILOGUE_STORE = 0,          // C (R, N) = bf16(acc)
    EPILOGUE_SWIGLU = 1,         // gated: gate_up (R, 2I) = bf16([gate, up]), h (R, I) = bf16(silu(gate) * up)
    EPILOGUE_SWIGLU_BACKWARD = 2 // acc = dh: dgate_up (R, 2I) from the saved gate_up
};

__device__ __forceinline__ void store_pair(bf16 *target, float low, float high) {
    *reinterpret_cast<__nv_bfloat162 *>(target) = __floats2bfloat162_rn(low, high);
}
__device__ __forceinline__ float2 load_pair(const bf16 *source) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(source));
}
__device__ __forceinline__ float round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

} // namespace parity_moe

#endif

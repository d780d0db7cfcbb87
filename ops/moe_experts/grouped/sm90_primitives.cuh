// sm90_primitives.cuh: the SM90 instructions fused_quack's grouped GEMMs issue (sm90_gemm.cuh), each
// checked against the PTX ISA: mbarrier (bulk_copy.cuh's, plus a plain arrive), TMA tensor loads
// (cp.async.bulk.tensor 2D/3D/4D), wgmma fence / commit /
// wait and wgmma.mma_async m64n128k16 bf16 -> f32. A separate header so that a host emulator can
// stand in for exactly these instructions and run the kernel's own scheduling, pipeline, descriptor
// and epilogue code (done while writing it: one OS thread per CUDA thread, TMA as a swizzled box
// copy, wgmma deferred to wait_group and decoded from the descriptors). Needs sm_90a.
#ifndef PARITY_MOE_SM90_PRIMITIVES_CUH
#define PARITY_MOE_SM90_PRIMITIVES_CUH

#include <cuda.h> // CUtensorMap (the type only: the encoder is fetched through the runtime)
#include <stdint.h>

#include "ops/core/cuda/bulk_copy.cuh"

namespace parity_moe {
namespace sm90 {

using parity_fused::shared_address;
using parity_fused::barrier_arrive_expect;
using parity_fused::barrier_init;
using parity_fused::barrier_init_fence;
using parity_fused::barrier_wait;

__device__ __forceinline__ void barrier_arrive(uint64_t *barrier) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(barrier)) : "memory");
}

// ---- TMA: box loads of a tensor map (coordinates innermost first, in elements; out-of-bounds
// elements are written as zeros and still count toward the barrier's transaction bytes) ----
__device__ __forceinline__ void tma_load_2d(uint32_t destination, const CUtensorMap *map, int32_t c0, int32_t c1,
                                            uint64_t *barrier) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(destination), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1),
                 "r"(shared_address(barrier))
                 : "memory");
}
__device__ __forceinline__ void tma_load_3d(uint32_t destination, const CUtensorMap *map, int32_t c0, int32_t c1,
                                            int32_t c2, uint64_t *barrier) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(destination), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2),
                 "r"(shared_address(barrier))
                 : "memory");
}
__device__ __forceinline__ void tma_load_4d(uint32_t destination, const CUtensorMap *map, int32_t c0, int32_t c1,
                                            int32_t c2, int32_t c3, uint64_t *barrier) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                 ::"r"(destination), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
                 "r"(shared_address(barrier))
                 : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// The accumulators' registers as if rewritten here: ordinary code that reads them (the epilogue)
// cannot be moved above the wgmma.wait_group that precedes this (both are volatile asm, kept in
// order, and the reads depend on this one's outputs).
__device__ __forceinline__ void fence_accumulators(float (&d)[64]) {
#pragma unroll
    for (int i = 0; i < 64; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// d (64 x 128, f32) = A (64 x 16, K-major, descriptor a) B (16 x 128, K-major = B^T stored [n][k],
// descriptor b) + (accumulate ? d : 0). imm-scale-a = imm-scale-b = 1, imm-trans-a = imm-trans-b = 0
// (both operands K-major, no transpose). Fragment of d (thread t of the warpgroup, warp w = t / 32,
// lane l = t % 32): d[4 j + 2 h + i] is row 16 w + l / 4 + 8 h, column 8 j + 2 (l % 4) + i
// (j in [0, 16), h, i in {0, 1}).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
        "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
        "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
          "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
          "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
          "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
          "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"(accumulate)
        : "memory");
}

} // namespace sm90
} // namespace parity_moe

#endif

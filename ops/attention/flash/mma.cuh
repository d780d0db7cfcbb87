// mma.cuh: the SM80+ warp-level tensor-core primitives the flash kernels are written in (for .cu
// files only): 16-byte cp.async copies into shared memory with zero fill, ldmatrix (plain and
// transposed) and mma.sync m16n8k16 with bf16 operands and f32 accumulators.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), lane = 4 g + t:
//   A 16x16 (row):  a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
//   B 16x8  (col):  b0 (k 2t..2t+1, n g)  b1 (k 2t+8.., n g)
//   C 16x8:         c0 c1 (g, 2t..2t+1)   c2 c3 (g+8, 2t..2t+1)
// So the C fragments of two adjacent 16x8 tiles are, packed to bf16 pairs, the A fragment of the
// 16x16 tile they form: P = softmax(S) feeds P V straight from registers.
#ifndef PARITY_ATTENTION_FLASH_MMA_CUH
#define PARITY_ATTENTION_FLASH_MMA_CUH

#include <cuda_bf16.h>
#include <stdint.h>

namespace parity_flash {

__device__ __forceinline__ uint32_t shared_address(const void *pointer) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// 16 bytes global -> shared; `valid` false writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void copy_16(void *shared, const void *global, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)), "l"(global),
                 "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `pending` committed groups are still in flight.
template <int pending> __device__ __forceinline__ void copy_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 address the rows of matrix i, register i holds its
// (lane / 4, 2 (lane % 4) .. +1) pair (transposed: its (2 (lane % 4) .. +1, lane / 4) pair).
__device__ __forceinline__ void load_matrix_x4(uint32_t (&r)[4], const void *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}
__device__ __forceinline__ void load_matrix_x4_transposed(uint32_t (&r)[4], const void *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}

// c += a b for one 16x8x16 tile.
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats rounded to nearest-even bf16, `low` in the low half (the lower column).
__device__ __forceinline__ uint32_t pack_bf16(float low, float high) {
    __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
    return *reinterpret_cast<uint32_t *>(&pair);
}

// A-operand tile (16 rows x 16 columns of the contraction) at `tile` (row-major, `stride` elements a
// row): lane l addresses row l % 16, column 8 (l / 16).
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const __nv_bfloat16 *tile, int stride, int lane) {
    load_matrix_x4(a, tile + (lane % 16) * stride + (lane / 16) * 8);
}

// B operands of two adjacent n-tiles (16 n x 16 k) stored n-major ([n][k], `stride` a row), e.g.
// keys x head dims for S = Q K^T: b[0], b[1] for n 0..7 and b[2], b[3] for n 8..15.
__device__ __forceinline__ void load_b_nk(uint32_t (&b)[4], const __nv_bfloat16 *tile, int stride, int lane) {
    load_matrix_x4(b, tile + ((lane % 8) + (lane / 16) * 8) * stride + ((lane / 8) % 2) * 8);
}

// B operands of two adjacent n-tiles stored k-major ([k][n], `stride` a row), e.g. keys x value dims
// for O = P V: transposed loads, b[0], b[1] for n 0..7 and b[2], b[3] for n 8..15.
__device__ __forceinline__ void load_b_kn(uint32_t (&b)[4], const __nv_bfloat16 *tile, int stride, int lane) {
    load_matrix_x4_transposed(b, tile + ((lane % 8) + ((lane / 8) % 2) * 8) * stride + (lane / 16) * 8);
}

} // namespace parity_flash

#endif

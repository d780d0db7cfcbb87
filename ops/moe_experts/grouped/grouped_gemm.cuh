// grouped_gemm.cuh: the device side of the MoE grouped GEMMs (grouped_gemm.cu launches them; for .cu
// files only). bf16 operands on tensor cores (mma.sync m16n8k16, f32 accumulate) through the
// primitives of ops/attention/flash/mma.cuh, a 3-stage cp.async pipeline with zero fill at the edges.
//   tile       BM = 128 rows x BN = 128 columns x BK = 32 of the contraction, 8 warps as 2 (M) x 4 (N),
//              each warp 64 x 32 (the gated gate_up GEMM: 64 gate + 64 up columns, each warp 64 x 16
//              of both halves, so one thread holds a gate element and its up element)
//   smem rows  padded by 8 elements (80 or 272 bytes a row): 16-byte aligned, ldmatrix conflict free
// This header adds what mma.cuh lacks: load_a_transposed, the A operand of a 16x16 tile stored
// k-major ([k][m]), for the weight gradients dW = dY^T X whose A = dY^T is dY (rows, M) as stored.
#ifndef PARITY_MOE_GROUPED_GEMM_CUH
#define PARITY_MOE_GROUPED_GEMM_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "ops/attention/flash/mma.cuh"

namespace parity_moe {

using bf16 = __nv_bfloat16;

constexpr int kTileM = 128, kTileN = 128, kTileK = 32, kStages = 3, kThreads = 256;
constexpr int kPad = 8;
constexpr int kRowMajorStride = kTileK + kPad;  // 40: a [rows][BK] tile (A of the row-grouped GEMMs, B n-major)
constexpr int kKMajorStride = kTileN + kPad;    // 136: a [BK][128] tile (B k-major, both k-grouped operands)
constexpr int kOperandElements = kTileM * kRowMajorStride; // 5120 >= kTileK * kKMajorStride (4352)
constexpr int kStageElements = 2 * kOperandElements;       // A then B
constexpr int kSharedBytes = kStages * kStageElements * (int)sizeof(bf16); // 61440

// A operand (16 m x 16 k) stored k-major at `tile` ([k][m], `stride` elements a k row). From the
// fragment layout of mma.cuh: a0 = (m g, k 2t..2t+1), a1 = (m g+8, ..), a2 = (m g, k 2t+8..),
// a3 = (m g+8, k 2t+8..). A transposed ldmatrix of the stored 8x8 block (k rows r0.., m columns
// c0..) hands lane 4g+t the pair (k r0+2t..+1, m c0+g), so matrix i must be the stored block
//   0: k 0..7, m 0..7    1: k 0..7, m 8..15    2: k 8..15, m 0..7    3: k 8..15, m 8..15
// and lanes 8i..8i+7 address its rows: k row (lane % 8) + 8 (lane / 16), m column 8 ((lane / 8) % 2).
__device__ __forceinline__ void load_a_transposed(uint32_t (&a)[4], const bf16 *tile, int stride, int lane) {
    parity_flash::load_matrix_x4_transposed(a, tile + ((lane % 8) + (lane / 16) * 8) * stride + ((lane / 8) % 2) * 8);
}

// silu and torch's silu_backward (dy * s * (1 + x (1 - s)), s = sigmoid(x)) in f32.
__device__ __forceinline__ float silu_f32(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float silu_backward_f32(float dy, float x) {
    float s = 1.0f / (1.0f + expf(-x));
    return dy * s * (1.0f + x * (1.0f - s));
}

// The expert e whose tiles hold `tile`: tile_offsets (E + 1) nondecreasing, tile < tile_offsets[E];
// the largest e with tile_offsets[e] <= tile (empty experts have no tile and are skipped).
__device__ __forceinline__ int expert_of_tile(const int64_t *tile_offsets, int experts, int64_t tile) {
    int low = 0, high = experts - 1;
    while (low < high) {
        int middle = (low + high + 1) / 2;
        if (tile_offsets[middle] <= tile) low = middle;
        else high = middle - 1;
    }
    return low;
}

// One BK slice of the warp's tile: acc[h][mi][ni] (h: B half, mi: 16-row tile, ni: 8-column tile)
// += A B. A_KMAJOR: A stored [BK][BM] (else [BM][BK]); B_KMAJOR: B stored [BK][BN] (else [BN][BK]),
// half h of the B tile starting at n row h * half_rows (n-major only). Warp tile: rows wm * 64,
// columns wn * (8 NI) of each half.
template <bool A_KMAJOR, bool B_KMAJOR, int NB, int NI>
__device__ __forceinline__ void mma_slice(float (&acc)[NB][4][NI][4], const bf16 *As, const bf16 *Bs, int wm, int wn,
                                          int lane, int half_rows) {
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 16) {
        uint32_t a[4][4];
#pragma unroll
        for (int mi = 0; mi < 4; mi++) {
            int m = wm * 64 + mi * 16;
            if (A_KMAJOR) load_a_transposed(a[mi], As + kk * kKMajorStride + m, kKMajorStride, lane);
            else parity_flash::load_a(a[mi], As + m * kRowMajorStride + kk, kRowMajorStride, lane);
        }
#pragma unroll
        for (int h = 0; h < NB; h++)
#pragma unroll
            for (int nj = 0; nj < NI / 2; nj++) {
                uint32_t b[4];
                int n = wn * NI * 8 + nj * 16;
                if (B_KMAJOR) parity_flash::load_b_kn(b, Bs + kk * kKMajorStride + n, kKMajorStride, lane);
                else parity_flash::load_b_nk(b, Bs + (h * half_rows + n) * kRowMajorStride + kk, kRowMajorStride, lane);
#pragma unroll
                for (int mi = 0; mi < 4; mi++) {
                    parity_flash::mma_16816(acc[h][mi][2 * nj], a[mi], b[0], b[1]);
                    parity_flash::mma_16816(acc[h][mi][2 * nj + 1], a[mi], b[2], b[3]);
                }
            }
    }
}

// Epilogue kinds of the row-grouped GEMM.
enum epilogue_kind {
    EPILOGUE_STORE = 0,          // C (R, N) = bf16(acc)
    EPILOGUE_SWIGLU = 1,         // gated: gate_up (R, 2I) = bf16([gate, up]), h (R, I) = bf16(silu(gate) * up)
    EPILOGUE_SWIGLU_BACKWARD = 2 // acc = dh: dgate_up (R, 2I) from the saved gate_up
};

struct row_grouped_params {
    const bf16 *a;              // (rows, k_size) in sorted order, or the gathered source (tokens, k_size)
    const int64_t *gather;      // NULL, or source row of sorted position p = gather[p] / gather_divisor
    int64_t gather_divisor;     // top_k
    const bf16 *b;              // (E, ...) expert weights, b_expert_stride elements each
    int64_t b_expert_stride;
    int64_t k_size, n_size;     // contraction; output columns (I for the SwiGLU kinds)
    const int64_t *expert_offsets, *tile_offsets; // (E + 1) each (dispatch.h)
    int experts;
    bf16 *c;                    // STORE: (R, n_size); SWIGLU: h (R, I)
    bf16 *gate_up;              // SWIGLU: written; SWIGLU_BACKWARD: read (R, 2I)
    bf16 *dgate_up;             // SWIGLU_BACKWARD: written (R, 2I)
};

struct k_grouped_params {
    const bf16 *a;              // (rows, m_size) sorted: A = this^T
    const bf16 *b;              // (rows, n_size) sorted, or gathered source (tokens, n_size)
    const int64_t *gather;      // NULL, or source row of sorted position p = gather[p] / gather_divisor
    int64_t gather_divisor;
    int64_t m_size, n_size;
    const int64_t *expert_offsets; // (E + 1)
    bf16 *out;                  // (E, m_size, n_size), every element written (zeros for an empty expert)
};

} // namespace parity_moe

#endif

// grouped_gemm.cuh: the device side of the MoE grouped GEMMs (helpers, parameters, kernels), included by
// grouped_gemm.cu alone (its launchers). bf16 operands on tensor cores (mma.sync m16n8k16, f32
// accumulate) through the primitives of ops/attention/flash/mma.cuh, a 3-stage cp.async pipeline with
// zero fill at the edges.
//   tile       BM = 128 rows x BN = 128 columns x BK = 32 of the contraction, 8 warps as 2 (M) x 4 (N),
//              each warp 64 x 32 (the gated gate_up GEMM: 64 gate + 64 up columns, each warp 64 x 16
//              of both halves, so one thread holds a gate element and its up element)
//   smem rows  padded by 8 elements (80 or 272 bytes a row): 16-byte aligned, ldmatrix conflict free
// The SwiGLU math, expert_of_tile and the pair stores are grouped_math.cuh's (shared with sm90_gemm.cuh).
// This header adds what mma.cuh lacks: load_a_transposed, the A operand of a 16x16 tile stored
// k-major ([k][m]), for the weight gradients dW = dY^T X whose A = dY^T is dY (rows, M) as stored.
#ifndef PARITY_MOE_GROUPED_GEMM_CUH
#define PARITY_MOE_GROUPED_GEMM_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "ops/attention/flash/mma.cuh"
#include "ops/moe_experts/grouped/grouped_math.cuh"

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

// ---- the kernels (launched by grouped_gemm.cu) ----

using parity_flash::copy_16;
using parity_flash::copy_commit;
using parity_flash::copy_wait;

// C tile of one row tile of one expert: see grouped_gemm.h for the three epilogues.
template <int EPI, bool B_KMAJOR>
__global__ void __launch_bounds__(kThreads) row_grouped_kernel(row_grouped_params p) {
    constexpr int NB = EPI == EPILOGUE_SWIGLU ? 2 : 1; // B halves: gate rows, up rows
    constexpr int NI = NB == 2 ? 2 : 4;                // 8-column tiles a warp holds (per half)
    constexpr int BN = kTileN / NB;                    // output columns of the block
    static_assert(!(NB == 2 && B_KMAJOR), "the gated GEMM reads W (2I, H) n-major");
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    bf16 *shared = reinterpret_cast<bf16 *>(shared_bytes);

    const int64_t tile = blockIdx.x;
    if (tile >= p.tile_offsets[p.experts]) return; // the worst-case grid's spare tiles
    const int e = expert_of_tile(p.tile_offsets, p.experts, tile);
    const int64_t row_begin = p.expert_offsets[e] + (tile - p.tile_offsets[e]) * kTileM, row_end = p.expert_offsets[e + 1];
    const int64_t n0 = (int64_t)blockIdx.y * BN;
    const bf16 *b = p.b + e * p.b_expert_stride;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wm = warp / 4, wn = warp % 4;

    // This thread's two 16-byte chunks of A ([BM][BK]: row c / 4, column 8 (c % 4)) and of B.
    const bf16 *a_row[2], *b_row[2];
    bool a_ok[2], b_ok[2];
    int a_shared[2], b_shared[2], a_col[2], b_col[2];
    int64_t b_n[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        int c = tid + i * kThreads, r = c / 4;
        a_col[i] = (c % 4) * 8;
        int64_t position = row_begin + r;
        a_ok[i] = position < row_end;
        int64_t source = !a_ok[i] ? 0 : p.gather ? p.gather[position] / p.gather_divisor : position;
        a_row[i] = p.a + source * p.k_size;
        a_shared[i] = r * kRowMajorStride + a_col[i];
        if (!B_KMAJOR) { // [BN][BK]: n row r (half r / 64 when gated), k column 8 (c % 4)
            int64_t column = n0 + (NB == 2 ? r % (kTileN / 2) : r);
            int64_t weight_row = NB == 2 ? (r / (kTileN / 2)) * p.n_size + column : column;
            b_ok[i] = column < p.n_size;
            b_row[i] = b + (b_ok[i] ? weight_row : 0) * p.k_size;
            b_col[i] = (c % 4) * 8;
            b_shared[i] = r * kRowMajorStride + b_col[i];
        } else { // [BK][BN]: k row c / 16, n column 8 (c % 16)
            b_col[i] = c / 16;
            b_n[i] = n0 + (c % 16) * 8;
            b_ok[i] = b_n[i] < p.n_size;
            b_row[i] = b;
            b_shared[i] = (c / 16) * kKMajorStride + (c % 16) * 8;
        }
    }
    auto load_stage = [&](int stage, int64_t k0) {
        bf16 *As = shared + stage * kStageElements, *Bs = As + kOperandElements;
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int64_t k = k0 + a_col[i];
            bool ok = a_ok[i] && k < p.k_size;
            copy_16(As + a_shared[i], ok ? a_row[i] + k : p.a, ok);
            if (!B_KMAJOR) {
                int64_t kb = k0 + b_col[i];
                bool okb = b_ok[i] && kb < p.k_size;
                copy_16(Bs + b_shared[i], okb ? b_row[i] + kb : p.b, okb);
            } else {
                int64_t kb = k0 + b_col[i];
                bool okb = b_ok[i] && kb < p.k_size;
                copy_16(Bs + b_shared[i], okb ? b + kb * p.n_size + b_n[i] : p.b, okb);
            }
        }
    };

    float acc[NB][4][NI][4];
#pragma unroll
    for (int h = 0; h < NB; h++)
#pragma unroll
        for (int mi = 0; mi < 4; mi++)
#pragma unroll
            for (int ni = 0; ni < NI; ni++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[h][mi][ni][j] = 0.0f;

    const int64_t slices = (p.k_size + kTileK - 1) / kTileK;
#pragma unroll
    for (int s = 0; s < kStages - 1; s++) {
        if (s < slices) load_stage(s, (int64_t)s * kTileK);
        copy_commit();
    }
    for (int64_t kt = 0; kt < slices; kt++) {
        copy_wait<kStages - 2>();
        __syncthreads();
        int64_t next = kt + kStages - 1;
        if (next < slices) load_stage((int)(next % kStages), next * kTileK);
        copy_commit();
        const bf16 *As = shared + (int)(kt % kStages) * kStageElements;
        mma_slice<false, B_KMAJOR, NB, NI>(acc, As, As + kOperandElements, wm, wn, lane, kTileN / 2);
    }
    copy_wait<0>();

    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int64_t position = row_begin + wm * 64 + mi * 16 + g + 8 * half;
            if (position >= row_end) continue;
#pragma unroll
            for (int ni = 0; ni < NI; ni++) {
                int64_t column = n0 + wn * NI * 8 + ni * 8 + 2 * t;
                if (column >= p.n_size) continue;
                float v0 = acc[0][mi][ni][2 * half], v1 = acc[0][mi][ni][2 * half + 1];
                if (EPI == EPILOGUE_STORE) {
                    store_pair(p.c + position * p.n_size + column, v0, v1);
                } else if (EPI == EPILOGUE_SWIGLU) {
                    const int64_t I = p.n_size;
                    float u0 = acc[NB - 1][mi][ni][2 * half], u1 = acc[NB - 1][mi][ni][2 * half + 1];
                    float g0 = round_bf16(v0), g1 = round_bf16(v1), up0 = round_bf16(u0), up1 = round_bf16(u1);
                    store_pair(p.gate_up + position * 2 * I + column, g0, g1);
                    store_pair(p.gate_up + position * 2 * I + I + column, up0, up1);
                    store_pair(p.c + position * I + column, silu_f32(g0) * up0, silu_f32(g1) * up1);
                } else { // SWIGLU_BACKWARD: v = dh
                    const int64_t I = p.n_size;
                    float2 gate = load_pair(p.gate_up + position * 2 * I + column);
                    float2 up = load_pair(p.gate_up + position * 2 * I + I + column);
                    store_pair(p.dgate_up + position * 2 * I + column, silu_backward_f32(v0 * up.x, gate.x),
                               silu_backward_f32(v1 * up.y, gate.y));
                    store_pair(p.dgate_up + position * 2 * I + I + column, v0 * silu_f32(gate.x), v1 * silu_f32(gate.y));
                }
            }
        }
}

// dW_e tile (m0, n0) = sum over the expert's rows of a[p]^T b'[p] (grouped_gemm.h).
__global__ void __launch_bounds__(kThreads) k_grouped_kernel(k_grouped_params p) {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    bf16 *shared = reinterpret_cast<bf16 *>(shared_bytes);
    const int e = blockIdx.z;
    const int64_t n0 = (int64_t)blockIdx.x * kTileN, m0 = (int64_t)blockIdx.y * kTileM;
    const int64_t row_begin = p.expert_offsets[e], row_end = p.expert_offsets[e + 1];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wm = warp / 4, wn = warp % 4;

    // Both operands are [BK][128] tiles: this thread's chunks are k row c / 16, column 8 (c % 16).
    int k_row[2], shared_offset[2];
    bool m_ok[2], n_ok[2];
    int64_t m_col[2], n_col[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        int c = tid + i * kThreads;
        k_row[i] = c / 16;
        m_col[i] = m0 + (c % 16) * 8;
        n_col[i] = n0 + (c % 16) * 8;
        m_ok[i] = m_col[i] < p.m_size;
        n_ok[i] = n_col[i] < p.n_size;
        shared_offset[i] = k_row[i] * kKMajorStride + (c % 16) * 8;
    }
    auto load_stage = [&](int stage, int64_t r0) {
        bf16 *As = shared + stage * kStageElements, *Bs = As + kOperandElements;
#pragma unroll
        for (int i = 0; i < 2; i++) {
            int64_t position = r0 + k_row[i];
            bool row_ok = position < row_end;
            bool ok_a = row_ok && m_ok[i], ok_b = row_ok && n_ok[i];
            copy_16(As + shared_offset[i], ok_a ? p.a + position * p.m_size + m_col[i] : p.a, ok_a);
            int64_t source = !ok_b ? 0 : p.gather ? p.gather[position] / p.gather_divisor : position;
            copy_16(Bs + shared_offset[i], ok_b ? p.b + source * p.n_size + n_col[i] : p.b, ok_b);
        }
    };

    float acc[1][4][4][4];
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[0][mi][ni][j] = 0.0f;

    const int64_t slices = (row_end - row_begin + kTileK - 1) / kTileK;
#pragma unroll
    for (int s = 0; s < kStages - 1; s++) {
        if (s < slices) load_stage(s, row_begin + (int64_t)s * kTileK);
        copy_commit();
    }
    for (int64_t kt = 0; kt < slices; kt++) {
        copy_wait<kStages - 2>();
        __syncthreads();
        int64_t next = kt + kStages - 1;
        if (next < slices) load_stage((int)(next % kStages), row_begin + next * kTileK);
        copy_commit();
        const bf16 *As = shared + (int)(kt % kStages) * kStageElements;
        mma_slice<true, true, 1, 4>(acc, As, As + kOperandElements, wm, wn, lane, 0);
    }
    copy_wait<0>();

    const int g = lane / 4, t = lane % 4;
    bf16 *out = p.out + (int64_t)e * p.m_size * p.n_size;
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int64_t m = m0 + wm * 64 + mi * 16 + g + 8 * half;
            if (m >= p.m_size) continue;
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                int64_t n = n0 + wn * 32 + ni * 8 + 2 * t;
                if (n < p.n_size) store_pair(out + m * p.n_size + n, acc[0][mi][ni][2 * half], acc[0][mi][ni][2 * half + 1]);
            }
        }
}

} // namespace parity_moe

#endif

// grouped_gemm.cu: the MoE grouped GEMM kernels and their launchers (grouped_gemm.h): one launch
// covers every expert, no host loop and no device-to-host read.
//   row-grouped  grid (ceil(R / BM) + E, ceil(N / BN)): block x is a row tile of the padded sorted
//                order (tile_offsets), so a tile never straddles two experts; tiles past the last
//                expert's exit. The A rows are loaded once per thread (optionally gathered through
//                permuted_rows), B is the tile's expert weight.
//   k-grouped    grid (ceil(N / BN), ceil(M / BM), E): block (x, y, e) owns dW_e's tile and contracts
//                over all the expert's rows in BK slices, so each output element has one owner and a
//                fixed summation order (deterministic, no atomics); an expert without rows stores zeros.
// Pipeline (both): kStages cp.async stages; at slice kt the wait leaves kStages - 2 groups in flight,
// the barrier frees the stage slice kt - 1 used, which then receives slice kt + kStages - 1.
#include "ops/moe_experts/grouped/grouped_gemm.h"

#include "ops/core/cuda/cuda_check.h"
#include "ops/moe_experts/grouped/grouped_gemm.cuh"

namespace parity_moe {

namespace {

using parity_flash::copy_16;
using parity_flash::copy_commit;
using parity_flash::copy_wait;

__device__ __forceinline__ void store_pair(bf16 *target, float low, float high) {
    *reinterpret_cast<__nv_bfloat162 *>(target) = __floats2bfloat162_rn(low, high);
}
__device__ __forceinline__ float2 load_pair(const bf16 *source) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(source));
}
__device__ __forceinline__ float round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

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

template <int EPI, bool B_KMAJOR>
parity_error *launch_rows(const grouped_rows &g, const row_grouped_params &p, int64_t block_columns, cudaStream_t stream,
                          const char *name) {
    if (g.rows == 0) return NULL;
    int64_t tiles = (g.rows + kTileM - 1) / kTileM + g.experts; // every expert adds at most one partial tile
    int64_t column_tiles = (p.n_size + block_columns - 1) / block_columns;
    if (tiles > 0x7fffffff || column_tiles > 65535)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_triton: %s grid (%lld x %lld tiles) is too large",
                            name, (long long)tiles, (long long)column_tiles);
    PARITY_CUDA_TRY(cudaFuncSetAttribute(row_grouped_kernel<EPI, B_KMAJOR>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         kSharedBytes));
    row_grouped_kernel<EPI, B_KMAJOR><<<dim3((unsigned)tiles, (unsigned)column_tiles), kThreads, kSharedBytes, stream>>>(p);
    PARITY_CUDA_TRY_LAUNCH(name);
    return NULL;
}

row_grouped_params rows_params(const grouped_rows &g) {
    row_grouped_params p = {};
    p.expert_offsets = g.expert_offsets;
    p.tile_offsets = g.tile_offsets;
    p.experts = g.experts;
    p.gather_divisor = 1;
    return p;
}

} // namespace

parity_error *moe_gemm_gate_up_swiglu(const grouped_rows &g, const bf16 *hidden, const int64_t *permuted_rows, int64_t top_k,
                                      const bf16 *gate_up_proj, int64_t hidden_size, int64_t intermediate, bf16 *gate_up,
                                      bf16 *h, cudaStream_t stream) {
    row_grouped_params p = rows_params(g);
    p.a = hidden;
    p.gather = permuted_rows;
    p.gather_divisor = top_k;
    p.b = gate_up_proj;
    p.b_expert_stride = 2 * intermediate * hidden_size;
    p.k_size = hidden_size;
    p.n_size = intermediate;
    p.c = h;
    p.gate_up = gate_up;
    return launch_rows<EPILOGUE_SWIGLU, false>(g, p, kTileN / 2, stream, "moe grouped gate_up GEMM + SwiGLU");
}

parity_error *moe_gemm_rows(const grouped_rows &g, const bf16 *a, const bf16 *b, bool b_kmajor, int64_t k_size, int64_t n_size,
                            bf16 *c, cudaStream_t stream) {
    row_grouped_params p = rows_params(g);
    p.a = a;
    p.b = b;
    p.b_expert_stride = k_size * n_size;
    p.k_size = k_size;
    p.n_size = n_size;
    p.c = c;
    if (b_kmajor) return launch_rows<EPILOGUE_STORE, true>(g, p, kTileN, stream, "moe grouped GEMM (B k-major)");
    return launch_rows<EPILOGUE_STORE, false>(g, p, kTileN, stream, "moe grouped GEMM (B n-major)");
}

parity_error *moe_gemm_down_dgrad_swiglu(const grouped_rows &g, const bf16 *dy, const bf16 *down_proj, int64_t hidden_size,
                                         int64_t intermediate, const bf16 *gate_up, bf16 *dgate_up, cudaStream_t stream) {
    row_grouped_params p = rows_params(g);
    p.a = dy;
    p.b = down_proj; // (E, H, I): [k = H][n = I]
    p.b_expert_stride = hidden_size * intermediate;
    p.k_size = hidden_size;
    p.n_size = intermediate;
    p.gate_up = const_cast<bf16 *>(gate_up);
    p.dgate_up = dgate_up;
    return launch_rows<EPILOGUE_SWIGLU_BACKWARD, true>(g, p, kTileN, stream, "moe grouped down dgrad + SwiGLU backward");
}

parity_error *moe_gemm_weight_grad(const grouped_rows &g, const bf16 *a, const bf16 *b, const int64_t *gather,
                                   int64_t gather_divisor, int64_t m_size, int64_t n_size, bf16 *out, cudaStream_t stream) {
    k_grouped_params p = {};
    p.a = a;
    p.b = b;
    p.gather = gather;
    p.gather_divisor = gather ? gather_divisor : 1;
    p.m_size = m_size;
    p.n_size = n_size;
    p.expert_offsets = g.expert_offsets;
    p.out = out;
    int64_t column_tiles = (n_size + kTileN - 1) / kTileN, row_tiles = (m_size + kTileM - 1) / kTileM;
    if (column_tiles > 0x7fffffff || row_tiles > 65535 || g.experts > 65535)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_triton: weight-gradient grid too large");
    PARITY_CUDA_TRY(cudaFuncSetAttribute(k_grouped_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
    k_grouped_kernel<<<dim3((unsigned)column_tiles, (unsigned)row_tiles, (unsigned)g.experts), kThreads, kSharedBytes, stream>>>(p);
    PARITY_CUDA_TRY_LAUNCH("moe grouped weight-gradient GEMM");
    return NULL;
}

} // namespace parity_moe

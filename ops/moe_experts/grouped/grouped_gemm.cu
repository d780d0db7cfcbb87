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

static_assert(kTileM == kGroupTileRows, "grouped_gemm.h promises the dispatch this tile size");

namespace {

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

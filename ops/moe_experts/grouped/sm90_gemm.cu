// sm90_gemm.cu: fused_quack's grouped GEMM launchers (sm90_gemm.h) and their TMA tensor maps.
// Built for sm_90a alone (the Makefile's SM90A_CU_SOURCES): wgmma has no sm_90 or PTX fallback.
//   tensor maps  made on the host per call by cuTensorMapEncodeTiled, fetched from the driver
//                through cudaGetDriverEntryPointByVersion (no -lcuda link); bf16, 128-byte swizzle,
//                box inner extent 64 elements = 128 bytes, out-of-bounds elements zero-filled.
//                Requirements (CUDA driver API, cuTensorMapEncodeTiled): global address 16-byte
//                aligned, every global stride a multiple of 16 bytes (so K multiples of 8), box
//                extents <= 256, box inner extent x 2 bytes <= 128 for the 128-byte swizzle.
//   grid         persistent: min(SM count, the worst-case tile count (ceil(R / 128) + E) x n_tiles;
//                E x m_tiles x n_tiles for the weight gradient) CTAs of 384 threads; the real row
//                tile count tile_offsets[E] is read on the device, so nothing comes back to the host.
#include "ops/moe_experts/grouped/sm90_gemm.h"

#include <mutex>

#include "ops/core/cuda/cuda_check.h"
#include "ops/moe_experts/grouped/sm90_gemm.cuh"

namespace parity_moe {

static_assert(sm90::kBM == kGroupTileRows, "the dispatch's tile_offsets count tiles of kGroupTileRows rows");

namespace {

// cuTensorMapEncodeTiled's signature (CUDA driver API, unchanged since CUDA 12.0).
typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

parity_error *encoder(encode_tiled_fn *out) {
    static encode_tiled_fn function = nullptr;
    static cudaError_t status = cudaSuccess;
    static std::once_flag once;
    std::call_once(once, [] {
        void *pointer = nullptr;
        cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
        status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &pointer, 12000, cudaEnableDefault, &query);
        if (status == cudaSuccess && query == cudaDriverEntryPointSuccess) function = (encode_tiled_fn)pointer;
    });
    if (!function)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_quack: the driver has no cuTensorMapEncodeTiled (%s)",
                            cudaGetErrorString(status));
    *out = function;
    return NULL;
}

// A bf16 tensor map of `rank` dimensions: dims innermost first (elements), strides of dims 1.. in
// bytes, box extents in elements.
parity_error *make_map(CUtensorMap *map, const void *base, int rank, const uint64_t *dims, const uint64_t *strides,
                       const uint32_t *box, const char *what) {
    encode_tiled_fn encode;
    PARITY_TRY(encoder(&encode));
    cuuint64_t global_dims[4], global_strides[3];
    cuuint32_t box_dims[4], element_strides[4];
    for (int i = 0; i < rank; i++) {
        global_dims[i] = dims[i];
        box_dims[i] = box[i];
        element_strides[i] = 1;
        if (i > 0) global_strides[i - 1] = strides[i - 1];
    }
    CUresult result = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, (cuuint32_t)rank, const_cast<void *>(base), global_dims,
                             global_strides, box_dims, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != CUDA_SUCCESS)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_quack: cuTensorMapEncodeTiled failed (%d) for %s",
                            (int)result, what);
    return NULL;
}

// A (R, K) row-major: 2D (K, R), box (64, 128).
parity_error *rows_map(CUtensorMap *map, const bf16 *a, int64_t rows, int64_t k_size, const char *what) {
    const uint64_t dims[2] = {(uint64_t)k_size, (uint64_t)rows};
    const uint64_t strides[1] = {(uint64_t)k_size * 2};
    const uint32_t box[2] = {sm90::kBK, sm90::kBM};
    return make_map(map, a, 2, dims, strides, box, what);
}

// B (E, N, K) row-major: 3D (K, N, E), box (64, 128, 1).
parity_error *experts_map(CUtensorMap *map, const bf16 *b, int64_t experts, int64_t n_size, int64_t k_size, const char *what) {
    const uint64_t dims[3] = {(uint64_t)k_size, (uint64_t)n_size, (uint64_t)experts};
    const uint64_t strides[2] = {(uint64_t)k_size * 2, (uint64_t)(n_size * k_size) * 2};
    const uint32_t box[3] = {sm90::kBK, sm90::kBN, 1};
    return make_map(map, b, 3, dims, strides, box, what);
}

// worst_tiles: an upper bound of the kernel's tile count (the grid never exceeds it).
template <int EPI>
parity_error *launch(const CUtensorMap &a_map, const CUtensorMap &b_map, const sm90::params &p, int64_t worst_tiles,
                     const char *name, cudaStream_t stream) {
    int device = 0, sms = 0;
    PARITY_CUDA_TRY(cudaGetDevice(&device));
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int64_t grid = worst_tiles < sms ? worst_tiles : sms;
    if (grid <= 0) return NULL;
    PARITY_CUDA_TRY(cudaFuncSetAttribute(sm90::grouped_kernel<EPI>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         sm90::kSharedBytes));
    sm90::grouped_kernel<EPI><<<(unsigned)grid, sm90::kThreads, sm90::kSharedBytes, stream>>>(a_map, b_map, p);
    PARITY_CUDA_TRY_LAUNCH(name);
    return NULL;
}

// The row-grouped kinds' worst case: every expert adds at most one partial row tile.
int64_t row_tiles(const grouped_rows &g, int64_t n_size, int64_t columns) {
    return ((g.rows + sm90::kBM - 1) / sm90::kBM + g.experts) * ((n_size + columns - 1) / columns);
}

sm90::params params_of(const grouped_rows &g, int64_t k_size, int64_t n_size) {
    sm90::params p = {};
    p.rows = g.rows;
    p.k_size = k_size;
    p.n_size = n_size;
    p.expert_offsets = g.expert_offsets;
    p.tile_offsets = g.tile_offsets;
    p.experts = g.experts;
    return p;
}

// TMA coordinates are int32: every extent the kernels index must fit.
parity_error *check_extents(const grouped_rows &g, int64_t k_size, int64_t n_size) {
    if (g.rows >= INT32_MAX || k_size >= INT32_MAX || 2 * n_size >= INT32_MAX)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_quack: sizes past int32 TMA coordinates");
    return NULL;
}

} // namespace

parity_error *sm90_gather_rows(const bf16 *hidden, const int64_t *permuted_rows, int64_t top_k, int64_t rows,
                               int64_t hidden_size, bf16 *out, cudaStream_t stream) {
    int64_t work = rows * (hidden_size / 8);
    if (work == 0) return NULL;
    int64_t blocks = (work + 255) / 256;
    if (blocks > 65535 * 8) blocks = 65535 * 8;
    sm90::gather_rows_kernel<<<(unsigned)blocks, 256, 0, stream>>>(hidden, permuted_rows, top_k, rows, hidden_size, out);
    PARITY_CUDA_TRY_LAUNCH("moe fused_quack gather");
    return NULL;
}

parity_error *sm90_transpose_experts(const bf16 *in, int64_t experts, int64_t rows, int64_t cols, bf16 *out,
                                     cudaStream_t stream) {
    if (experts == 0 || rows == 0 || cols == 0) return NULL;
    int64_t bx = (cols + 31) / 32, by = (rows + 31) / 32;
    if (bx > 0x7fffffff || by > 65535 || experts > 65535)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_quack: weight transpose grid too large");
    sm90::transpose_kernel<<<dim3((unsigned)bx, (unsigned)by, (unsigned)experts), dim3(32, 8), 0, stream>>>(in, rows, cols, out);
    PARITY_CUDA_TRY_LAUNCH("moe fused_quack weight transpose");
    return NULL;
}

parity_error *sm90_gemm_gate_up_swiglu(const grouped_rows &g, const bf16 *x_sorted, const bf16 *gate_up_proj,
                                       int64_t hidden_size, int64_t intermediate, bf16 *gate_up, bf16 *h,
                                       cudaStream_t stream) {
    if (g.rows == 0) return NULL;
    PARITY_TRY(check_extents(g, hidden_size, intermediate));
    CUtensorMap a_map, b_map;
    PARITY_TRY(rows_map(&a_map, x_sorted, g.rows, hidden_size, "x (R, H)"));
    // gate_up_proj (E, 2I, H) as 4D (H, I, 2, E): half 0 = gate rows, half 1 = up rows; box (64, 64, 1, 1).
    const uint64_t H = (uint64_t)hidden_size, I = (uint64_t)intermediate;
    const uint64_t dims[4] = {H, I, 2, (uint64_t)g.experts};
    const uint64_t strides[3] = {H * 2, I * H * 2, 2 * I * H * 2};
    const uint32_t box[4] = {sm90::kBK, sm90::kBN / 2, 1, 1};
    PARITY_TRY(make_map(&b_map, gate_up_proj, 4, dims, strides, box, "gate_up_proj (E, 2, I, H)"));
    sm90::params p = params_of(g, hidden_size, intermediate);
    p.c = h;
    p.gate_up = gate_up;
    return launch<EPILOGUE_SWIGLU>(a_map, b_map, p, row_tiles(g, intermediate, sm90::kBN / 2),
                                   "moe fused_quack gate_up GEMM + SwiGLU", stream);
}

parity_error *sm90_gemm_rows(const grouped_rows &g, const bf16 *a, const bf16 *b, int64_t k_size, int64_t n_size, bf16 *c,
                             cudaStream_t stream) {
    if (g.rows == 0) return NULL;
    PARITY_TRY(check_extents(g, k_size, n_size));
    CUtensorMap a_map, b_map;
    PARITY_TRY(rows_map(&a_map, a, g.rows, k_size, "A (R, K)"));
    PARITY_TRY(experts_map(&b_map, b, g.experts, n_size, k_size, "B (E, N, K)"));
    sm90::params p = params_of(g, k_size, n_size);
    p.c = c;
    return launch<EPILOGUE_STORE>(a_map, b_map, p, row_tiles(g, n_size, sm90::kBN), "moe fused_quack grouped GEMM", stream);
}

parity_error *sm90_gemm_down_dgrad_swiglu(const grouped_rows &g, const bf16 *dy, const bf16 *down_t, int64_t hidden_size,
                                          int64_t intermediate, const bf16 *gate_up, bf16 *dgate_up, cudaStream_t stream) {
    if (g.rows == 0) return NULL;
    PARITY_TRY(check_extents(g, hidden_size, intermediate));
    CUtensorMap a_map, b_map;
    PARITY_TRY(rows_map(&a_map, dy, g.rows, hidden_size, "dy (R, H)"));
    PARITY_TRY(experts_map(&b_map, down_t, g.experts, intermediate, hidden_size, "down_proj^T (E, I, H)"));
    sm90::params p = params_of(g, hidden_size, intermediate);
    p.gate_up = const_cast<bf16 *>(gate_up);
    p.dgate_up = dgate_up;
    return launch<EPILOGUE_SWIGLU_BACKWARD>(a_map, b_map, p, row_tiles(g, intermediate, sm90::kBN),
                                            "moe fused_quack down dgrad + SwiGLU backward", stream);
}

int64_t sm90_padded_rows(const grouped_rows &g) { return ((g.rows + sm90::kBM - 1) / sm90::kBM + g.experts) * sm90::kBM; }

parity_error *sm90_transpose_padded(const grouped_rows &g, const bf16 *src, const int64_t *gather, int64_t gather_divisor,
                                    int64_t m_size, bf16 *out, cudaStream_t stream) {
    const int64_t padded = sm90_padded_rows(g), column_blocks = (padded + 31) / 32, row_blocks = (m_size + 31) / 32;
    if (column_blocks > 0x7fffffff || row_blocks > 65535)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_quack: padded transpose grid too large");
    sm90::transpose_padded_kernel<<<dim3((unsigned)column_blocks, (unsigned)row_blocks), dim3(32, 8),
                                    sm90::kTransposeSharedBytes, stream>>>(src, gather, gather ? gather_divisor : 1, m_size,
                                                                           padded, g.expert_offsets, g.tile_offsets,
                                                                           g.experts, out);
    PARITY_CUDA_TRY_LAUNCH("moe fused_quack padded transpose");
    return NULL;
}

parity_error *sm90_gemm_weight_grad(const grouped_rows &g, const bf16 *a, const bf16 *b, const int64_t *gather,
                                    int64_t gather_divisor, int64_t m_size, int64_t n_size, bf16 *a_t, bf16 *b_t, bf16 *out,
                                    cudaStream_t stream) {
    const int64_t padded = sm90_padded_rows(g);
    if (padded >= INT32_MAX || m_size >= INT32_MAX || n_size >= INT32_MAX)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "moe_experts: fused_quack: sizes past int32 TMA coordinates");
    PARITY_TRY(sm90_transpose_padded(g, a, nullptr, 1, m_size, a_t, stream));
    PARITY_TRY(sm90_transpose_padded(g, b, gather, gather_divisor, n_size, b_t, stream));
    CUtensorMap a_map, b_map;
    PARITY_TRY(rows_map(&a_map, a_t, m_size, padded, "A^T (M, padded rows)"));
    PARITY_TRY(rows_map(&b_map, b_t, n_size, padded, "B^T (N, padded rows)"));
    sm90::params p = params_of(g, padded, n_size);
    p.m_size = m_size;
    p.c = out;
    const int64_t tiles = (int64_t)g.experts * ((m_size + sm90::kBM - 1) / sm90::kBM) * ((n_size + sm90::kBN - 1) / sm90::kBN);
    return launch<sm90::kWeightGrad>(a_map, b_map, p, tiles, "moe fused_quack weight-gradient GEMM", stream);
}

} // namespace parity_moe

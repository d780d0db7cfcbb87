// sm90_gemm.h: the launchers of fused_quack's grouped MoE GEMMs on SM90 (sm90_gemm.cu): TMA
// (cp.async.bulk.tensor, 128-byte swizzle) into a shared-memory ring guarded by mbarriers, wgmma
// (m64n128k16, bf16 in, f32 accumulate), a persistent grid of one CTA per SM walking the tiles.
// For .cu files only; the device code needs sm_90a (the Makefile builds sm90_gemm.cu alone for it).
// Every launcher queues work on `stream` and reads nothing back to the host.
//
// Rows are in the dispatch's sorted order (dispatch.h): expert e owns sorted rows
// [expert_offsets[e], expert_offsets[e + 1]), its row tiles of kGroupTileRows = 128 rows are tiles
// [tile_offsets[e], tile_offsets[e + 1]) (grouped_rows of grouped_gemm.h, the same struct).
// Every row-grouped GEMM is C (R x N) = A (R x K) B_e^T with A (R, K) and B_e (N, K) both K-major (row-major
// [rows][K]): wgmma reads both without a transpose. The backward's B operands that are stored the
// other way (down_proj for dh = dy D_e, gate_up_proj for dx = dgate_up W_e) are transposed once per
// call into scratch by sm90_transpose_experts.
// Sizes: H and I multiples of 8 (16-byte TMA global strides), operands 16-byte aligned; the K
// extent need not be a multiple of the 64-element K tile (TMA zero-fills past the end).
#ifndef PARITY_MOE_SM90_GEMM_H
#define PARITY_MOE_SM90_GEMM_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "ops/moe_experts/grouped/grouped_gemm.h"

extern "C" {
#include "ops/core/error.h"
}

namespace parity_moe {

// out[p] = hidden[permuted_rows[p] / top_k] for p in [0, rows): x in sorted order (TMA cannot gather).
// hidden (tokens, hidden_size), out (rows, hidden_size); hidden_size a multiple of 8.
parity_error *sm90_gather_rows(const __nv_bfloat16 *hidden, const int64_t *permuted_rows, int64_t top_k, int64_t rows,
                               int64_t hidden_size, __nv_bfloat16 *out, cudaStream_t stream);

// out (E, cols, rows) = in (E, rows, cols) transposed per expert.
parity_error *sm90_transpose_experts(const __nv_bfloat16 *in, int64_t experts, int64_t rows, int64_t cols,
                                     __nv_bfloat16 *out, cudaStream_t stream);

// gate_up (R, 2I) = bf16(x_sorted W_e^T), W_e = gate_up_proj[e] (2I, H), and h (R, I) =
// bf16(silu(gate) * up) from the bf16-rounded gate and up (fused_triton's rounding).
parity_error *sm90_gemm_gate_up_swiglu(const grouped_rows &g, const __nv_bfloat16 *x_sorted,
                                       const __nv_bfloat16 *gate_up_proj, int64_t hidden_size, int64_t intermediate,
                                       __nv_bfloat16 *gate_up, __nv_bfloat16 *h, cudaStream_t stream);

// c (R, n) = bf16(a B_e^T): a (R, k) sorted, b (E, n, k).
parity_error *sm90_gemm_rows(const grouped_rows &g, const __nv_bfloat16 *a, const __nv_bfloat16 *b, int64_t k_size,
                             int64_t n_size, __nv_bfloat16 *c, cudaStream_t stream);

// dh = dy D_e computed as dy (D_e^T)^T with down_t (E, I, H) = down_proj transposed (f32, never
// stored), then from the saved gate_up (R, 2I), as fused_triton's moe_gemm_down_dgrad_swiglu:
//   dgate_up[p, i] = bf16(silu_backward(dh up, gate))    dgate_up[p, I + i] = bf16(dh silu(gate)).
parity_error *sm90_gemm_down_dgrad_swiglu(const grouped_rows &g, const __nv_bfloat16 *dy, const __nv_bfloat16 *down_t,
                                          int64_t hidden_size, int64_t intermediate, const __nv_bfloat16 *gate_up,
                                          __nv_bfloat16 *dgate_up, cudaStream_t stream);

// The k-grouped weight gradient out (E, m, n) = bf16(sum over expert e's rows p of a[p]^T b'[p]),
// a (R, m) sorted, b'[p] = b[p] (R, n) or b[gather[p] / gather_divisor] when gather is not NULL;
// experts without rows get zeros (every element is written). Both operands are first transposed
// into a_t (m, P) and b_t (n, P), P = sm90_padded_rows(g), expert e's rows at the padded columns
// [tile_offsets[e] 128, + its count), zeros up to the next multiple of 128: then dW_e = a_t,e b_t,e^T
// is the same K-major wgmma GEMM as the others, K running over the expert's padded columns.
int64_t sm90_padded_rows(const grouped_rows &g);
parity_error *sm90_gemm_weight_grad(const grouped_rows &g, const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                                    const int64_t *gather, int64_t gather_divisor, int64_t m_size, int64_t n_size,
                                    __nv_bfloat16 *a_t, __nv_bfloat16 *b_t, __nv_bfloat16 *out, cudaStream_t stream);

} // namespace parity_moe

#endif

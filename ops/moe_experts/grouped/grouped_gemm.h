// grouped_gemm.h: the launchers of the MoE grouped GEMMs (grouped_gemm.cu), bf16 on tensor cores
// (SM80+), f32 accumulation, one rounding to bf16 at the store. For .cu files only. Rows are in the
// dispatch's sorted order (dispatch.h): expert e owns sorted rows [expert_offsets[e], expert_offsets[e + 1]),
// and its row tiles of kTileM rows are tiles [tile_offsets[e], tile_offsets[e + 1]) of a fixed grid of
// ceil(R / kTileM) + E tiles (tiles past tile_offsets[E] exit at once: no device-to-host read).
//   row-grouped  C_e = A_e B_e per expert over its rows; B n-major ([N][K], x W^T) or k-major ([K][N], dy W)
//   k-grouped    dW_e = A_e^T B_e (M x N per expert), contracted over the expert's rows
// Every size must be a multiple of 8 (16-byte rows for cp.async); the backend checks before calling.
#ifndef PARITY_MOE_GROUPED_GEMM_H
#define PARITY_MOE_GROUPED_GEMM_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "ops/core/error.h"
}

namespace parity_moe {

// Rows of a row tile of the row-grouped GEMMs: the dispatch's tile_offsets must count tiles of this size.
constexpr int kGroupTileRows = 128;

struct grouped_rows {
    int64_t rows;                   // R = N K (the grid covers them and every expert's partial tile)
    int experts;                    // E
    const int64_t *expert_offsets;  // (E + 1) device
    const int64_t *tile_offsets;    // (E + 1) device, in kTileM tiles (grouped_gemm.cuh)
};

// gate_up (R, 2I) = bf16(x_p W_e^T) with x_p = hidden[permuted_rows[p] / top_k] (the gather) and
// W_e = gate_up_proj[e] (2I, H), and h (R, I) = bf16(silu(gate) * up) from the bf16-rounded gate and up.
parity_error *moe_gemm_gate_up_swiglu(const grouped_rows &g, const __nv_bfloat16 *hidden, const int64_t *permuted_rows,
                                      int64_t top_k, const __nv_bfloat16 *gate_up_proj, int64_t hidden_size,
                                      int64_t intermediate, __nv_bfloat16 *gate_up, __nv_bfloat16 *h, cudaStream_t stream);

// c (R, n) = bf16(a_p B_e): a (R, k) sorted; b (E, n, k) n-major (b_kmajor false: a B_e^T) or
// (E, k, n) k-major (b_kmajor true: a B_e).
parity_error *moe_gemm_rows(const grouped_rows &g, const __nv_bfloat16 *a, const __nv_bfloat16 *b, bool b_kmajor,
                            int64_t k_size, int64_t n_size, __nv_bfloat16 *c, cudaStream_t stream);

// The dgrad of the down projection with SwiGLU's backward fused: dh = dy_p D_e (dy (R, H) sorted,
// down_proj (E, H, I) k-major, f32, never stored), then from the saved gate_up (R, 2I)
//   dgate_up[p, i] = bf16(silu_backward(dh up, gate))    dgate_up[p, I + i] = bf16(dh silu(gate)).
parity_error *moe_gemm_down_dgrad_swiglu(const grouped_rows &g, const __nv_bfloat16 *dy, const __nv_bfloat16 *down_proj,
                                         int64_t hidden_size, int64_t intermediate, const __nv_bfloat16 *gate_up,
                                         __nv_bfloat16 *dgate_up, cudaStream_t stream);

// out (E, m, n) = bf16(sum over expert e's rows p of a[p]^T b'[p]): a (R, m) sorted; b'[p] = b[p] (R, n)
// or b[gather[p] / gather_divisor] when gather is not NULL. Experts without rows get zeros.
parity_error *moe_gemm_weight_grad(const grouped_rows &g, const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                                   const int64_t *gather, int64_t gather_divisor, int64_t m_size, int64_t n_size,
                                   __nv_bfloat16 *out, cudaStream_t stream);

} // namespace parity_moe

#endif

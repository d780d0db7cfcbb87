// dispatch.h: the token permutation of the grouped MoE experts, split from the expert compute so an
// expert-parallel all-to-all can go between them (issue 14, point 3). For .cu files only; every
// launcher queues its kernels on `stream` and reads nothing back to the host.
//   dispatch   a STABLE counting sort of the R = N K rows (row r = t K + k, token-major) by expert:
//              expert_offsets (E + 1): expert e owns sorted positions [expert_offsets[e], expert_offsets[e + 1]);
//              permuted_rows (R): the row r at each sorted position (an expert's rows in ascending r);
//              row_position (R): its inverse; tile_offsets (E + 1): the experts' first row tiles of
//              tile_rows rows in the padded order the grouped GEMMs walk (grouped_gemm.h).
//              Deterministic without atomic order: per chunk of kChunkRows rows a count per expert
//              (integer shared-memory counts, order-free), one block scans them expert-major then
//              chunk-minor, and a row's rank is the count of the same expert's earlier rows in its chunk.
//              An index outside [0, E) (the check is the caller's; the CPU checks its indices) sorts
//              after every expert, past expert_offsets[E], where no GEMM reads and combine adds 0.
//   combine    output[t] = bf16(sum_k w[t, k] y[row_position[t K + k]]), f32 in k order.
//   backward   combine's: dy[p] = bf16(doutput[t] w[t, k]) and dw[t, k] = sum_h doutput[t, h] y[p, h]
//              (f32, one warp a row, a fixed shuffle tree); dispatch's: dhidden[t] = bf16(sum_k dx[p]).
#ifndef PARITY_MOE_DISPATCH_H
#define PARITY_MOE_DISPATCH_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "ops/core/dtype.h"
#include "ops/core/error.h"
}

namespace parity_moe {

constexpr int kChunkRows = 256;

struct dispatch_plan {
    int64_t *expert_offsets; // (E + 1)
    int64_t *tile_offsets;   // (E + 1)
    int64_t *permuted_rows;  // (R)
    int64_t *row_position;   // (R)
};

// Scratch the dispatch needs: int32 counts and int64 chunk bases, (chunks, E + 1) each.
inline int64_t dispatch_chunks(int64_t rows) { return (rows + kChunkRows - 1) / kChunkRows; }

// expert_indices (R) int64 on the device; counts, bases: dispatch_chunks(R) * (E + 1) elements each.
parity_error *moe_dispatch(const int64_t *expert_indices, int64_t rows, int experts, int tile_rows, int *counts,
                           int64_t *bases, const dispatch_plan &plan, cudaStream_t stream);

// output (N, H) from y (R, H) in sorted order; weights (N, K) of weights_dtype (bf16 or f32).
parity_error *moe_combine(const __nv_bfloat16 *y, const int64_t *row_position, const int64_t *expert_offsets, int experts,
                          const void *weights, parity_dtype weights_dtype, int64_t tokens, int64_t top_k, int64_t hidden_size,
                          __nv_bfloat16 *output, cudaStream_t stream);

// dy (R, H) sorted, and dweights (N, K) of weights_dtype when not NULL.
parity_error *moe_combine_backward(const __nv_bfloat16 *doutput, const __nv_bfloat16 *y, const int64_t *row_position,
                                   const int64_t *expert_offsets, int experts, const void *weights, void *dweights,
                                   parity_dtype weights_dtype, int64_t tokens, int64_t top_k, int64_t hidden_size,
                                   __nv_bfloat16 *dy, cudaStream_t stream);

// dhidden (N, H) = bf16(sum_k dx[row_position[t K + k]]) from dx (R, H) sorted.
parity_error *moe_dispatch_backward(const __nv_bfloat16 *dx, const int64_t *row_position, const int64_t *expert_offsets,
                                    int experts, int64_t tokens, int64_t top_k, int64_t hidden_size, __nv_bfloat16 *dhidden,
                                    cudaStream_t stream);

} // namespace parity_moe

#endif

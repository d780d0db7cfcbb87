// routing_math.h: the per-row pieces of MoE routing shared by the moe_router and
// load_balancing_loss eager backends: softmax with exact compute-precision rounding, and top-k
// with PyTorch's tie rule. Rows are plain f64 arrays (see ops/core/cpu_math.h for the rounding
// model: f64 runs are pure f64, everything else rounds each operation to f32).
#ifndef PARITY_ROUTING_MATH_H
#define PARITY_ROUTING_MATH_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

// probabilities = softmax(logits) over `count` values, as the CUDA kernel computes it in the
// compute precision of `storage`: m = max, e_j = exp(x_j - m), s = sum e_j (left to right),
// p_j = e_j / s. Each value is then rounded once to `storage` (the dtype the softmax writes).
void parity_routing_softmax(const double *logits, int64_t count, parity_dtype storage, double *probabilities);

// dlogits = softmax backward for one row, as PyTorch's CUDA kernel (softmax_warp_backward) forms it:
//   t_j = g_j * p_j rounded to `probability_dtype` (the dtype the softmax wrote, bf16 for a bf16
//   softmax), s = sum t_j in the compute precision, dlogits_j = t_j - p_j * s (compute precision).
// Algebraically p * (g - s), but the bf16 rounding of t_j is visible: with it, a bf16 softmax's
// gradient matches HF bit for bit. The caller rounds dlogits once into its output dtype. dlogits may
// be the same array as dprobabilities.
void parity_routing_softmax_backward(const double *probabilities, const double *dprobabilities, int64_t count,
                                     parity_dtype probability_dtype, double *dlogits);

// The k largest of `values`: indices[0..k) in descending value order, exact ties broken towards the
// lower index (what torch.topk(sorted=True) gives on distinct values; the rule we fix for ties).
// -INFINITY values are ordinary (smallest) values. Needs k <= count.
void parity_routing_top_k_sorted(const double *values, int64_t count, int64_t k, int64_t *indices);

// The same set as parity_routing_top_k_sorted, in the order CUDA's torch.topk(sorted=False) writes
// it (gatherTopK): first every chosen index whose value is strictly greater than the k-th largest,
// in ascending index order, then the chosen indices equal to it, in ascending index order.
void parity_routing_top_k_unsorted(const double *values, int64_t count, int64_t k, int64_t *indices);

#ifdef __cplusplus
}
#endif
#endif

// cross_entropy_cpu.h: the block math both CPU backends share (internal to ops/cross_entropy).
// eager runs it once over all N tokens; chunk_loss runs it chunk by chunk. Every step rounds
// exactly where the PyTorch GPU path stores a tensor:
//   logits  = round_storage(hidden @ weight^T)             (bf16 GEMM, f32 accumulation)
//   logp    = log_softmax(float(logits))                   (compute precision: f32, or f64)
//   nll sum = sum over valid rows of -logp[row, target]    (compute precision, in row order)
//   dlogits = round_storage(log_softmax_backward(g * onehot))  (the .float() cast's backward)
// with g = -(dloss / divisor) on valid rows and 0 on ignored rows.
#ifndef PARITY_CROSS_ENTROPY_CPU_H
#define PARITY_CROSS_ENTROPY_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/dtype.h"
#include "ops/core/error.h"
#include "ops/cross_entropy/cross_entropy.h"

// C (m, n) = op(A) @ op(B), rounded once to `storage`. A is (m, k) row-major, or (k, m) when
// transpose_a; B is (k, n), or (n, k) when transpose_b. parity_cpu_gemm (ops/core/cpu_gemm.h): f64
// uses cblas_dgemm; f32 and bf16 use cblas_sgemm on f32 copies (f32 accumulation), the result
// rounded to the storage dtype.
parity_error *parity_cross_entropy_cpu_gemm(parity_dtype storage, bool transpose_a, bool transpose_b, int64_t m,
                                            int64_t n, int64_t k, const double *a, const double *b, double *c);

// log_probs (rows, V) = log_softmax of each row of logits, in the compute precision of `storage`.
void parity_cross_entropy_cpu_log_softmax(parity_dtype storage, int64_t rows, int64_t vocab, const double *logits,
                                          double *log_probs);

// Sum over rows whose target is not ignore_index of -log_probs[row, target], in row order.
double parity_cross_entropy_cpu_nll_sum(parity_dtype storage, int64_t rows, int64_t vocab, const double *log_probs,
                                        const int64_t *targets, int64_t ignore_index);

// The divisor of the reduction: num_items_in_batch when > 0, else the valid count (may be 0).
double parity_cross_entropy_cpu_divisor(parity_dtype storage, int64_t num_items_in_batch, int64_t valid_count);

// dlogits (rows, V), rounded to `storage`: for a valid row with target t and g = d(loss)/d(logp[t]),
// dlogits[j] = g * [j == t] - exp(logp[j]) * g (log_softmax backward); ignored rows are 0.
void parity_cross_entropy_cpu_dlogits(parity_dtype storage, int64_t rows, int64_t vocab, const double *log_probs,
                                      const int64_t *targets, int64_t ignore_index, double g, double *dlogits);

#endif

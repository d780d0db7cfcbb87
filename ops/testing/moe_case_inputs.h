// moe_case_inputs.h: inputs the MoE op rows (router, experts, load-balancing loss) share:
// router logits with clear gaps between experts, and inputs retyped away from the run's dtype.
// Top-k routing is discontinuous where two scores tie; the rows keep every decision (top-k,
// DeepSeek-V3 group choice) at least a clear margin away from a tie, so central finite differences
// (h ~ 1e-6) never flip a choice and every precision makes the same choices.
#ifndef PARITY_MOE_CASE_INPUTS_H
#define PARITY_MOE_CASE_INPUTS_H

#include <stdbool.h>

#include "ops/testing/op_check.h"

// Decides whether one row of candidate logits (E values) is acceptable; `context` is the caller's.
typedef bool (*moe_logits_accept)(const double *logits, int64_t experts, const void *context);

// Overwrites the (rows, E) input `name` (already filled with a small random jitter) so that row n
// holds spacing * (rank_n(j) - (E - 1) / 2) + jitter[n, j], where rank_n is a permutation of
// 0..E-1. The first permutation `accept` takes (NULL: the first) is kept; the values are rounded to
// the run's input precision, so runs that share it share the logits. Fails when no permutation of
// 1000 is accepted.
parity_error *moe_separate_logits(op_check_state *state, const char *name, double spacing, moe_logits_accept accept,
                                  const void *context);

// Replaces the input `name` (created in the run's dtype) and its gradient by tensors of `dtype`
// holding the same values: e.g. DeepSeek-V3's f32 router logits in a bf16 run.
parity_error *moe_retype_input(op_check_state *state, const char *name, parity_dtype dtype);

// Zero-filled tensors for invalid-call rows, released together. The first allocation error is
// kept in `error` (later allocations are skipped) and returned by the call that checks it.
typedef struct moe_tensor_bag {
    parity_tensor tensors[8];
    int count;
    parity_error *error;
} moe_tensor_bag;

parity_tensor *moe_bag_zeros(moe_tensor_bag *bag, parity_dtype dtype, int ndim, const int64_t *shape);
void moe_bag_release(moe_tensor_bag *bag);

#endif

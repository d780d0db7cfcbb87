// upstream_compare.h: what every comparison with transformers' reference data shares: relative
// errors, error text for assertion messages, and the one table of gradient bounds. Bounds: 1e-5
// relative L2 per parameter gradient, except qwen3_5's A_log / dt_bias / in_proj_a, whose reference
// values come from transformers' float32 gated delta rule (diagnosis in test_upstream_hybrid.c and
// tools/gdn_gate_diagnosis): 3x the reproduced f32 error.
#ifndef PARITY_UPSTREAM_COMPARE_H
#define PARITY_UPSTREAM_COMPARE_H

#include "ops/core/error.h"
#include "ops/core/tensor.h"

#define UPSTREAM_GRADIENT_BOUND 1e-5

double upstream_relative(double value, double reference);
// ||value - reference|| / ||reference|| over same-sized CPU tensors (any float dtypes).
double upstream_relative_l2(const parity_tensor *value, const parity_tensor *reference);
// Formats and frees `error` (a static buffer: one message at a time).
const char *upstream_error_text(parity_error *error);
// The bound of parameter `name`'s gradient of `model` against transformers.
double upstream_gradient_bound(const char *model, const char *name);

#endif

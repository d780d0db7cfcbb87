// upstream_compare.h: what every comparison with transformers' reference data (golden/upstream/, made
// by tools/make_upstream_reference.py) shares: the list of shipped cases, relative errors, a running
// maximum that keeps NaN, error text for assertion messages, the fp64 bound, and parity's fp32 / bf16
// eager run against transformers' eager run in the same dtype.
#ifndef PARITY_UPSTREAM_COMPARE_H
#define PARITY_UPSTREAM_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "models/checkpoint/safetensors.h"
#include "models/step_result.h"
#include "ops/core/dtype.h"
#include "ops/core/error.h"
#include "ops/core/tensor.h"

#define UPSTREAM "golden/upstream"

// fp64 against transformers' fp64 run (float64 from end to end, the loss included): loss, aux_loss,
// grad_norm and per-parameter gradient norms relative, every gradient tensor and the logits relative L2.
// Reached on the CPU: <= 2e-14 everywhere except qwen3_5's A_log / dt_bias gradients, 1.1e-11, where
// transformers' own dg graph cancels (test_upstream_hybrid.c).
#define UPSTREAM_FP64_BOUND 1e-10

double upstream_relative(double value, double reference);
// ||value - reference|| / ||reference|| over same-sized CPU tensors (any float dtypes); NaN if any
// element is NaN.
double upstream_relative_l2(const parity_tensor *value, const parity_tensor *reference);
// The running maximum *worst of errors, NaN-propagating: a NaN error becomes the maximum and stays
// (every later `worst <= bound` fails). True when `error` became the maximum.
bool upstream_take_worst(double *worst, double error);
// Expects every tensor of `file` (grads.safetensors, logits.safetensors) to be stored as F64: the fp64
// reference is float64 data, not float32 widened on load.
void upstream_expect_float64_file(const char *label, const parity_safetensors_file *file);
// Formats and frees `error` (a static buffer: one message at a time).
const char *upstream_error_text(parity_error *error);

// Case directories of golden/upstream/ (every subdirectory), sorted; *count of them. Fails the
// test when the directory cannot be read. Free with upstream_case_names_free.
char **upstream_case_names(size_t *count);
void upstream_case_names_free(char **names, size_t count);
// Whether golden/upstream/<name>/<file> exists.
bool upstream_case_has(const char *name, const char *file);
// The case-coverage check both CPU test files run: every case of golden/upstream/ that `mine` says
// belongs to this file (by its files) is in `table`, and every row of `table` is such a case.
void upstream_expect_table_covers(const char *const *table, size_t rows, bool (*mine)(const char *case_name),
                                  const char *what);

// parity's all-eager `step` in `dtype` (fp32 or bf16) against transformers' eager run `tag` in the same
// dtype ("fp32_eager", "bf16_eager", "packed_fp32_eager"), both measured from transformers' fp64
// run `truth`, by harness/tolerance.h's rule with transformers' error as the eager term:
//   |parity - truth| <= max(k * |transformers - truth|, c * u(dtype) * |truth|)
// (k = 2 loss, aux_loss; 3 grad_norm and every parameter's gradient norm). Expects every metric
// within it; logs the worst ratio. Returns the worst ratio (NaN propagates).
double upstream_expect_within_transformers_error(const char *label, const char *directory, const char *tag,
                                                 parity_dtype dtype, const parity_step_result *step,
                                                 const parity_step_result *truth);

// parity's all-eager bf16 `logits` against transformers' bf16 eager logits (logits_bf16.safetensors) of
// the same checkpoint and batch. parity's eager bf16 rounds where transformers' bf16 recipe rounds,
// both on the CPU, so most logits are the same bf16 numbers; they differ only where an f32 sum, taken
// in another order, lands on the other side of a bf16 rounding boundary (or a token then routes to
// another expert). Expected: at least UPSTREAM_BF16_SAME_LOGITS of them identical. Measured: 100% on
// six of the nine cases, 98.8% qwen3_5_moe_tiny, 74.8% deepseek_v3_tiny; with one rounding point of
// eager RMSNorm dropped (x_hat not rounded to bf16 before the weight), 23-31% on the six models with
// that norm: two recipes that round at different points agree only by chance. Logs the fraction and
// ||parity - transformers|| / ||transformers - fp64||.
#define UPSTREAM_BF16_SAME_LOGITS 0.5
void upstream_expect_bf16_logits_follow_transformers(const char *label, const char *directory, const parity_tensor *logits);

#endif

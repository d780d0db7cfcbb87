// frequencies.h: the inverse frequencies and the cos/sin scaling a rope description implies, as HF
// transformers' modeling_rope_utils.py computes them (default, linear, llama3, yarn). Kept apart
// from the rotary op so each rope type can be tested against hand-computed values.
#ifndef PARITY_ROTARY_FREQUENCIES_H
#define PARITY_ROTARY_FREQUENCIES_H

#include <stdint.h>

#include "ops/core/dtype.h"
#include "ops/core/error.h"
#include "ops/rotary/rope_description.h"

#ifdef __cplusplus
extern "C" {
#endif

// rotary_dim = int(head_dim * partial_rotary_factor), as HF computes it. SHAPE error naming "rotary"
// when the factor is outside (0, 1] or the result is not an even number >= 2.
parity_error *parity_rope_rotary_dim(const parity_rope_description *rope, int64_t head_dim, int64_t *rotary_dim);

// Validates the description (theta, factors, context length) and writes inv_freq[0 .. rotary_dim/2)
// and the factor HF multiplies cos and sin by (attention_scaling: 1 except for yarn).
// `precision` PARITY_F64 computes in pure f64 (parity's truth); PARITY_F32 (also used for bf16
// activations) emulates HF's float32 computation step by step: every tensor operation rounded to f32,
// Python scalars rounded to f32 where they meet an f32 tensor, scalar / tensor as
// reciprocal(tensor) * scalar (torch's __rtruediv__), Python-float bookkeeping (yarn's correction
// range, attention_factor) in f64. Checked against transformers 5.17: f32 inv_freq bit-exact for
// default, partial, linear, llama3 (all three bands) and four yarn variants.
parity_error *parity_rotary_frequencies(const parity_rope_description *rope, int64_t rotary_dim, parity_dtype precision,
                                        double *inv_freq, double *attention_scaling);

#ifdef __cplusplus
}
#endif
#endif

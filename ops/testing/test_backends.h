// test_backends.h: deliberately wrong backends that prove the harness can see (capability
// PARITY_CAP_TEST_ONLY). Each wraps the CPU eager kernel of its op and adds one realistic bug:
//   rms_norm  "test_perturbed"            output * (1 + 1e-3), applied before the output is rounded
//   rms_norm  "test_perturbed_bf16_unit"  output * (1 + 2^-8), the same, by one unit of bf16 roundoff
//   rms_norm  "test_wrong_eps"            eps = 1e-2 instead of the model's
//   rms_norm  "test_flipped_dw"           the weight gradient's sign flipped (forward and dx exact)
//   rms_norm  "test_flipped_dx"           the input gradient's sign flipped (forward and dw exact)
//   rotary    "test_position_off_by_one"  the query is rotated at position + 1 (the key is not)
//   attention "test_scale_1pct"           softmax scale * 1.01
// Shifting query AND key positions by the same amount is an exact symmetry of RoPE (scores depend
// only on m - n), so an all-positions shift would be invisible by construction; the off-by-one
// here is the query-side bug that does change the model. A flipped sign leaves every norm of the
// gradient it flips as it was (and the loss: the forward is exact), so only a metric of direction
// sees it (the gradient sketches, models/step_result.h).
// They are registered only by parity_test_backends_register (`parity run --with-test-backends`,
// tests), never by parity_registry_register_builtins, and the combo enumeration skips TEST_ONLY
// values unless asked for them.
#ifndef PARITY_TEST_BACKENDS_H
#define PARITY_TEST_BACKENDS_H

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_TEST_PERTURBATION 1e-3            // test_perturbed: relative change of the rms_norm output
#define PARITY_TEST_PERTURBATION_BF16_UNIT 0x1p-8 // test_perturbed_bf16_unit: the same, 2^-8 = bf16's unit roundoff
#define PARITY_TEST_WRONG_EPS 1e-2               // test_wrong_eps: the eps used instead of the model's
#define PARITY_TEST_SCALE_FACTOR 1.01            // test_scale_1pct: softmax scale multiplier
#define PARITY_TEST_POSITION_OFFSET 1            // test_position_off_by_one: query position shift

// Registers the seven test-only CPU backends (idempotent; needs the built-ins registered first).
parity_error *parity_test_backends_register(void);

#ifdef __cplusplus
}
#endif
#endif

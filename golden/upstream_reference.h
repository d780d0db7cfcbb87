// upstream_reference.h: what upstream HF transformers computed on the shipped tiny checkpoints
// (golden/upstream/<case>/reference.json, grads.safetensors, logits.safetensors; made by
// tools/make_upstream_reference.py). One run of reference.json: loss, aux_loss, grad_norm and
// per-parameter gradient norms, read into a step result (models/step_result.h: release it with
// parity_step_result_release, look a norm up with parity_step_result_norm).
#ifndef PARITY_UPSTREAM_REFERENCE_H
#define PARITY_UPSTREAM_REFERENCE_H

#include "models/step_result.h"
#include "ops/core/error.h"

// Reads run `tag` ("fp64_eager", "packed_fp32_eager", ...) of DIR/reference.json (no logits, no
// logits_sum: NAN).
parity_error *parity_upstream_run_read(const char *directory, const char *tag, parity_step_result *out);

#endif

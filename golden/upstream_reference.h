// upstream_reference.h: what upstream HF transformers computed on the shipped tiny checkpoints
// (golden/upstream/<case>/reference.json, grads.safetensors, logits.safetensors; made by
// tools/make_upstream_reference.py). One run of reference.json: loss, aux_loss, grad_norm and
// per-parameter gradient norms.
#ifndef PARITY_UPSTREAM_REFERENCE_H
#define PARITY_UPSTREAM_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"

typedef struct parity_upstream_run {
    double loss, aux_loss, grad_norm;
    bool has_aux_loss;
    size_t parameter_count;
    char (*parameter_names)[160];
    double *parameter_grad_norms;
} parity_upstream_run;

// Reads run `tag` ("fp64_eager", "packed_fp32_eager", ...) of DIR/reference.json.
parity_error *parity_upstream_run_read(const char *directory, const char *tag, parity_upstream_run *out);
void parity_upstream_run_release(parity_upstream_run *run);
// The gradient norm recorded for `name`; false when the run has none.
bool parity_upstream_run_norm(const parity_upstream_run *run, const char *name, double *out);

#endif

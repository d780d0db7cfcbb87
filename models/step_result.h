// step_result.h: the record of one forward + backward, the one type the tree passes around for it:
// the model step fills it (models/model.h), a golden stores it (golden/golden.h: the fp64 expected
// values and each precision's eager values), upstream transformers' reference runs are read into it
// (golden/upstream_reference.h), and the runner compares one with another (harness/run/). One copy,
// one release and one lookup by parameter name serve all of them. It lives in models/ because the
// model step, the lowest of its users, makes it; golden/ and harness/ sit above models/.
#ifndef PARITY_STEP_RESULT_H
#define PARITY_STEP_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"
#include "ops/core/tensor.h"

#define PARITY_STEP_NAME_SIZE 160

typedef struct parity_step_result {
    double loss;
    double aux_loss;                 // NAN when has_aux_loss is false
    bool has_aux_loss;
    double grad_norm;                // L2 over every parameter gradient
    double logits_sum;               // NAN unless logits were produced
    size_t parameter_count;
    char (*parameter_names)[PARITY_STEP_NAME_SIZE]; // parameter_count entries, HF order (malloc'ed)
    double *parameter_grad_norms;    // per parameter, same order (malloc'ed)
    // The logits kept with the values: a step's (N, V) in fp64 on the CPU when requested and produced;
    // a golden's optional logits_sample (a few rows in the values' own dtype); else zeroed.
    parity_tensor logits;
    char first_non_finite[192];      // the first tensor where NaN/Inf appeared ("" when none)
} parity_step_result;

// A deep copy of everything but the logits (out->logits is zeroed): the values a result is compared
// on, kept after the step that made them is released.
parity_error *parity_step_result_copy(const parity_step_result *source, parity_step_result *out);
// Frees the name and norm arrays and the logits, and zeroes the result. Safe on a zeroed one.
void parity_step_result_release(parity_step_result *result);
// The gradient norm of parameter `name`, NAN when the result has none (index `hint` is tried first,
// so walking two results of the same model in step costs one comparison a name).
double parity_step_result_norm(const parity_step_result *result, const char *name, size_t hint);

#endif

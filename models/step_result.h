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
#include "ops/core/sketch.h"
#include "ops/core/tensor.h"

#define PARITY_STEP_NAME_SIZE 160
// The name of the loss's input gradient where it is compared as a pseudo-parameter
// ("grad_sketch:loss_input[0]"); no HF parameter name is a single word.
#define PARITY_STEP_LOSS_INPUT "loss_input"

typedef struct parity_step_result {
    double loss;
    double aux_loss;                 // NAN when has_aux_loss is false
    bool has_aux_loss;
    double grad_norm;                // L2 over every parameter gradient
    double logits_sum;               // NAN unless logits were produced
    size_t parameter_count;
    char (*parameter_names)[PARITY_STEP_NAME_SIZE]; // parameter_count entries, HF order (malloc'ed)
    double *parameter_grad_norms;    // per parameter, same order (malloc'ed)
    // (parameter_count, PARITY_SKETCH_K), row-major, same order (malloc'ed): each gradient's sketch
    // (ops/core/sketch.h: K fixed +-1 projections, signs from the parameter's name), which sees the
    // gradient's direction where its norm cannot (a flipped sign). NULL in a result that has none
    // (upstream transformers' reference runs).
    double *parameter_grad_sketches;
    // Each gradient's element count, same order (malloc'ed), from the model: the fp64 floor of a
    // sketch component scales with it (harness/tolerance.h). NULL where the values were read from a
    // file (goldens, upstream references): the model compared against them has the counts.
    int64_t *parameter_numels;
    // The loss's input gradient, d loss / d h for the final hidden state h (N, H) that lm_head or the
    // fused linear + cross-entropy reads: its norm and sketch (signs of PARITY_STEP_LOSS_INPUT), when
    // the model exposes it (has_loss_input; else NAN). It checks the cross-entropy's backward apart
    // from the lm_head gradient.
    bool has_loss_input;
    double loss_input_grad_norm;
    double loss_input_grad_sketch[PARITY_SKETCH_K];
    int64_t loss_input_numel;        // N * H when has_loss_input (else 0)
    // The logits kept with the values: a step's (N, V) in fp64 on the CPU when requested and produced;
    // a golden's optional logits_sample (a few rows in the values' own dtype); else zeroed.
    parity_tensor logits;
    char first_non_finite[192];      // the first tensor where NaN/Inf appeared ("" when none)
} parity_step_result;

// A deep copy of everything but the logits (out->logits is zeroed): the values a result is compared
// on, kept after the step that made them is released.
parity_error *parity_step_result_copy(const parity_step_result *source, parity_step_result *out);
// Frees the name, norm and sketch arrays and the logits, and zeroes the result. Safe on a zeroed one.
void parity_step_result_release(parity_step_result *result);
// The gradient norm of parameter `name`, NAN when the result has none (index `hint` is tried first,
// so walking two results of the same model in step costs one comparison a name).
double parity_step_result_norm(const parity_step_result *result, const char *name, size_t hint);
// The gradient sketch (PARITY_SKETCH_K values) of parameter `name`, NULL when the result has no such
// parameter or no sketches (`hint` as for the norm).
const double *parity_step_result_sketch(const parity_step_result *result, const char *name, size_t hint);
// The element count of parameter `name`'s gradient, 0 when the result has no such parameter or no
// counts (`hint` as for the norm).
int64_t parity_step_result_numel(const parity_step_result *result, const char *name, size_t hint);
// The cosine of two sketches, a . b / (|a| |b|): the cosine between the two gradients they sketch,
// estimated from K projections (1 for identical directions, -1 for a flipped sign). 1 when both are
// zero (the same zero gradient), 0 when only one is; NaN when any component is NaN or infinite.
double parity_sketch_cosine(const double a[PARITY_SKETCH_K], const double b[PARITY_SKETCH_K]);

#endif

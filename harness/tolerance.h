// tolerance.h: when does a combo's metric agree with the golden? Two rules (README "Tolerance"):
//
//   parity (default): |x - golden| <= max(k * max(|eager_same_dtype - golden|, spread), floor(dtype, golden))
//     eager_same_dtype: the eager combo of the same model, batch, dtype and device in the same run;
//     spread (fp32, bf16): the largest |jittered eager - eager| over the suite's jitter_runs (default PARITY_JITTER_RUNS = 3) more eager runs
//       whose embedding table was nudged by one unit in the last place at random (parity_rng_nudge_ulps):
//       how far eager itself moves under rounding-size changes. One eager sample understates that where
//       a discrete choice follows (MoE top-k routing: a token near a tie changes experts), so a backend
//       that only rounds differently could land several eager errors away; 0 in fp64;
//     k = 2 for loss-like values (loss, aux_loss), 3 for gradient values (grad_norm, per-parameter
//       norms, sketch components, sketch cosines);
//     floor(dtype, golden) = c(dtype) * u(dtype) * |golden|, u the unit roundoff of the dtype
//     (2^-53, 2^-24, 2^-8), c = 64 for fp64/fp32 and 2 for bf16 (docs/tolerance.md derives them).
//     A gradient sketch component s_j ("grad_sketch:<name>[j]", ops/core/sketch.h) is one of K
//     exchangeable random projections of the same gradient, so its error is a projection of one
//     error vector e, of size ~|e| whatever s_j is; its terms are the gradient's, not the
//     component's (parity_tolerance_check_sketch): the eager term is the largest |eager_j - golden_j|
//     over the K components (one component's eager error is a single draw, near 0 by chance one time
//     in ten: an honest backend then fails), the spread the largest over the components, and the
//     floor c * u * |g| of the golden gradient's norm (a component near 0 would give a floor near 0).
//     In fp64 the floor is the whole tolerance (eager is the golden: its error and spread are 0), so
//     there it bounds what a reordered sum may move a projection: with every one of the gradient's n
//     elements within c * u relative, a component moves by at most c * u * |g|_1 <= c * u * sqrt(n) * |g|
//     (Cauchy-Schwarz), and the fp64 floor is that (a flipped sign or a 1e-12 bug is still far above it).
//     In fp32 and bf16 the eager term measures the rounding and the floor stays c * u * |g|.
//     A sketch cosine ("grad_cosine:<name>", value cos(sketch, golden sketch), golden 1) is checked by
//     the plain rule on |cos - 1| against eager's cosine and its jitter spread: its floor is c * u.
//   veomni: VeOmni's test_models_patch: |x - reference| <= atol + rtol * |reference|,
//     rtol = atol = 1e-2, the reference being the suite's first mode (the eager combo).
//
// Every check fills a parity_metric (value, golden, error, tolerance, ratio = error / tolerance,
// pass, and the basis: which term set the tolerance). A NaN or Inf value never passes.
#ifndef PARITY_TOLERANCE_H
#define PARITY_TOLERANCE_H

#include <stdbool.h>

#include "ops/core/dtype.h"
#include "reports/results.h"

typedef enum parity_tolerance_rule {
    PARITY_RULE_PARITY = 0,
    PARITY_RULE_VEOMNI,
    PARITY_RULE_VEOMNI_PARALLEL, // veomni under a multi-rank layout: test_e2e_parallel's 0.1 against the
                                 // single-device eager of the golden (a suite says veomni; never parsed)
} parity_tolerance_rule;

typedef enum parity_metric_kind {
    PARITY_METRIC_LOSS_LIKE = 0, // loss, aux_loss: k = 2
    PARITY_METRIC_GRADIENT,      // grad_norm, per-parameter gradient norms: k = 3
} parity_metric_kind;

// Jittered eager runs behind the spread: the default, and the most a suite's `jitter_runs` may ask.
#define PARITY_JITTER_RUNS 3
#define PARITY_MAX_JITTER_RUNS 64

#define PARITY_VEOMNI_RTOL 1e-2
#define PARITY_VEOMNI_ATOL 1e-2
#define PARITY_VEOMNI_PARALLEL_TOL 0.1 // rtol = atol in VeOmni's tests/e2e/test_e2e_parallel.py

// "parity", "veomni"; parse accepts the same names.
const char *parity_tolerance_rule_name(parity_tolerance_rule rule);
bool parity_tolerance_rule_parse(const char *name, parity_tolerance_rule *out);
// One line for reports: the formula with its constants.
const char *parity_tolerance_rule_description(parity_tolerance_rule rule);

double parity_tolerance_k(parity_metric_kind kind);
// The unit roundoff u of a float dtype: 2^-53 (fp64), 2^-24 (fp32), 2^-8 (bf16), 2^-11 (fp16).
double parity_unit_roundoff(parity_dtype dtype);
// c(dtype): how many units of roundoff the floor allows.
double parity_tolerance_floor_units(parity_dtype dtype);
// c(dtype) * u(dtype) * |golden|.
double parity_tolerance_floor(parity_dtype dtype, double golden);

// The parity rule. `name` is the metric's name ("loss", "grad_norm:model.norm.weight").
void parity_tolerance_check(const char *name, parity_metric_kind kind, parity_dtype dtype, double value, double golden,
                            double eager_same_dtype, double spread, parity_metric *out);
// The parity rule for a sketch component (k = 3, a gradient value) with the gradient's terms:
// |value - golden| <= max(3 * max(eager_error, spread), c * u * |golden_norm|), where eager_error is
// the largest |eager_j - golden_j| and spread the largest jitter spread over the sketch's components,
// golden_norm the golden gradient's norm, numel its element count (fp64 floor: c * u * sqrt(numel) *
// |golden_norm|; numel <= 1 or unknown: c * u * |golden_norm|). A NaN eager_error or spread counts as none (the other
// terms decide: a NaN never widens a tolerance); a NaN golden_norm makes the tolerance NaN: nothing
// passes.
void parity_tolerance_check_sketch(const char *name, parity_dtype dtype, double value, double golden, double eager_error,
                                   double spread, double golden_norm, int64_t numel, parity_metric *out);
// The veomni rule against `reference` (stored in out->golden).
void parity_tolerance_check_veomni(const char *name, double value, double reference, parity_metric *out);
// The same with rtol = atol = `tolerance` (PARITY_VEOMNI_PARALLEL_TOL for the layouts).
void parity_tolerance_check_veomni_at(const char *name, double value, double reference, double tolerance,
                                      parity_metric *out);

#endif

// tolerance.c: the two comparison rules of tolerance.h.
#include "harness/tolerance.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *parity_tolerance_rule_name(parity_tolerance_rule rule) {
    return rule == PARITY_RULE_VEOMNI || rule == PARITY_RULE_VEOMNI_PARALLEL ? "veomni" : "parity";
}

bool parity_tolerance_rule_parse(const char *name, parity_tolerance_rule *out) {
    if (strcmp(name, "parity") == 0) *out = PARITY_RULE_PARITY;
    else if (strcmp(name, "veomni") == 0) *out = PARITY_RULE_VEOMNI;
    else return false;
    return true;
}

const char *parity_tolerance_rule_description(parity_tolerance_rule rule) {
    if (rule == PARITY_RULE_VEOMNI)
        return "veomni: |x - first mode| <= 1e-2 + 1e-2 * |first mode| on loss and grad_norm (first mode = the eager "
               "combo, same dtype and device); under a parallel layout 0.1 + 0.1 * |single-device eager| "
               "(VeOmni's test_e2e_parallel), the golden's eager of the same dtype";
    return "parity: |x - golden| <= max(k * max(|eager_same_dtype - golden|, jitter spread), c * u(dtype) * |golden|); "
           "k = 2 loss-like, 3 gradients; c = 64 (fp64, fp32), 2 (bf16); jitter spread (fp32, bf16) = largest "
           "|eager - eager with the embedding table nudged by 1 ulp at random| over the suite's jitter_runs";
}

double parity_tolerance_k(parity_metric_kind kind) { return kind == PARITY_METRIC_LOSS_LIKE ? 2.0 : 3.0; }

double parity_unit_roundoff(parity_dtype dtype) {
    switch (dtype) {
    case PARITY_F64: return ldexp(1.0, -53);
    case PARITY_F32: return ldexp(1.0, -24);
    case PARITY_BF16: return ldexp(1.0, -8);
    case PARITY_F16: return ldexp(1.0, -11);
    default: return 0.0;
    }
}

double parity_tolerance_floor_units(parity_dtype dtype) { return dtype == PARITY_BF16 || dtype == PARITY_F16 ? 2.0 : 64.0; }

double parity_tolerance_floor(parity_dtype dtype, double golden) {
    return parity_tolerance_floor_units(dtype) * parity_unit_roundoff(dtype) * fabs(golden);
}

// error / tolerance, with 0/0 = 0 (exact agreement) and x/0 = inf; inf when either is NaN.
static double ratio_of(double error, double tolerance) {
    if (isnan(error) || isnan(tolerance)) return INFINITY;
    if (error == 0.0) return 0.0;
    return tolerance > 0.0 ? error / tolerance : INFINITY;
}

static void fill(parity_metric *out, const char *name, double value, double golden, double tolerance, const char *basis) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->basis, sizeof out->basis, "%s", basis);
    out->value = value;
    out->golden = golden;
    out->error = isfinite(value) ? fabs(value - golden) : INFINITY;
    out->tolerance = tolerance;
    out->ratio = ratio_of(out->error, tolerance);
    out->pass = isfinite(value) && out->error <= tolerance; // (false for a NaN error or tolerance)
}

// The rule from its terms: max(k * max(eager_error, spread), c * u * |floor_magnitude|).
static void check_terms(const char *name, parity_metric_kind kind, parity_dtype dtype, double value, double golden,
                        double eager_error, double spread, double floor_magnitude, parity_metric *out) {
    const char *basis = "eager error";
    if (isfinite(spread) && spread > eager_error) {
        eager_error = spread;
        basis = "jitter spread";
    }
    double scaled = isfinite(eager_error) ? parity_tolerance_k(kind) * eager_error : 0.0;
    double floor = parity_tolerance_floor(dtype, floor_magnitude);
    if (isnan(floor)) {
        fill(out, name, value, golden, NAN, "floor");
        return;
    }
    fill(out, name, value, golden, scaled > floor ? scaled : floor, scaled > floor ? basis : "floor");
}

void parity_tolerance_check(const char *name, parity_metric_kind kind, parity_dtype dtype, double value, double golden,
                            double eager_same_dtype, double spread, parity_metric *out) {
    check_terms(name, kind, dtype, value, golden, fabs(eager_same_dtype - golden), spread, golden, out);
}

void parity_tolerance_check_sketch(const char *name, parity_dtype dtype, double value, double golden, double eager_error,
                                   double spread, double golden_norm, int64_t numel, parity_metric *out) {
    double magnitude = dtype == PARITY_F64 && numel > 1 ? golden_norm * sqrt((double)numel) : golden_norm;
    check_terms(name, PARITY_METRIC_GRADIENT, dtype, value, golden, eager_error, spread, magnitude, out);
}

void parity_tolerance_check_veomni(const char *name, double value, double reference, parity_metric *out) {
    fill(out, name, value, reference, PARITY_VEOMNI_ATOL + PARITY_VEOMNI_RTOL * fabs(reference), "veomni");
}

void parity_tolerance_check_veomni_at(const char *name, double value, double reference, double tolerance,
                                      parity_metric *out) {
    fill(out, name, value, reference, tolerance + tolerance * fabs(reference), "veomni");
}

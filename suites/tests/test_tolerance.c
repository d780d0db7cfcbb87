// test_tolerance.c: the comparison rules of harness/tolerance.h, as a table: which term decides the
// tolerance (k * eager error, k * jitter spread or the dtype floor), k per metric kind, NaN, exact agreement, the
// sketch components' variant (the gradient's terms: the floor on the gradient's norm), and VeOmni's
// fixed rtol = atol = 1e-2.
#include <criterion/criterion.h>
#include <math.h>

#include "harness/tolerance.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

// A metric has the row's tolerance, ratio, verdict and basis (NaN tolerance / infinite ratio expected
// as such).
static void expect_metric(const parity_metric *metric, const char *what, double tolerance, double ratio, bool pass,
                          const char *basis) {
    if (isnan(tolerance)) cr_expect(isnan(metric->tolerance), "%s: tolerance %g", what, metric->tolerance);
    else
        cr_expect_float_eq(metric->tolerance, tolerance, 1e-12 * (1 + tolerance), "%s: tolerance %.17g", what,
                           metric->tolerance);
    if (isinf(ratio)) cr_expect(isinf(metric->ratio), "%s: ratio %g", what, metric->ratio);
    else cr_expect_float_eq(metric->ratio, ratio, 1e-9, "%s: ratio %.17g", what, metric->ratio);
    cr_expect_eq(metric->pass, pass, "%s", what);
    cr_expect_str_eq(metric->basis, basis, "%s: tolerance from %s, expected %s", what, metric->basis, basis);
}

Test(tolerance, unit_roundoff_and_floors) {
    cr_expect_eq(parity_unit_roundoff(PARITY_F64), ldexp(1.0, -53));
    cr_expect_eq(parity_unit_roundoff(PARITY_F32), ldexp(1.0, -24));
    cr_expect_eq(parity_unit_roundoff(PARITY_BF16), ldexp(1.0, -8));
    cr_expect_eq(parity_tolerance_floor(PARITY_BF16, -6.0), 2 * ldexp(1.0, -8) * 6.0, "c = 2 for bf16, on |golden|");
    cr_expect_eq(parity_tolerance_floor(PARITY_F32, 2.0), 64 * ldexp(1.0, -24) * 2.0, "c = 64 for fp32");
    cr_expect_eq(parity_tolerance_floor(PARITY_F64, 1.0), 64 * ldexp(1.0, -53));
    cr_expect_eq(parity_tolerance_k(PARITY_METRIC_LOSS_LIKE), 2.0);
    cr_expect_eq(parity_tolerance_k(PARITY_METRIC_GRADIENT), 3.0);
}

Test(tolerance, parity_rule_table) {
    static const struct {
        const char *what;
        parity_metric_kind kind;
        parity_dtype dtype;
        double value, golden, eager, spread, tolerance, ratio;
        bool pass;
        const char *basis; // the term that set the tolerance
    } rows[] = {
        {"k * eager decides (loss, fp32)", PARITY_METRIC_LOSS_LIKE, PARITY_F32, 1.0015, 1.0, 1.001, 0.0, 0.002, 0.75, true, "eager error"},
        {"k * eager exceeded (loss, fp32)", PARITY_METRIC_LOSS_LIKE, PARITY_F32, 1.0025, 1.0, 1.001, 0.0, 0.002, 1.25, false, "eager error"},
        {"k = 3 for gradients", PARITY_METRIC_GRADIENT, PARITY_F32, 1.0025, 1.0, 1.001, 0.0, 0.003, 2.5 / 3.0, true, "eager error"},
        {"bf16 floor decides", PARITY_METRIC_LOSS_LIKE, PARITY_BF16, 6.04, 6.0, 6.001, 0.0, 0.046875, 0.04 / 0.046875, true, "floor"},
        {"bf16 floor exceeded", PARITY_METRIC_GRADIENT, PARITY_BF16, 6.05, 6.0, 6.001, 0.0, 0.046875, 0.05 / 0.046875, false, "floor"},
        {"fp32 floor when eager is exact", PARITY_METRIC_GRADIENT, PARITY_F32, 2.0 + 4e-6, 2.0, 2.0, 0.0, 128.0 / 16777216.0,
         4e-6 / (128.0 / 16777216.0), true, "floor"},
        {"eager below golden counts by magnitude", PARITY_METRIC_LOSS_LIKE, PARITY_F32, 0.998, 1.0, 0.999, 0.0, 0.002, 1.0, true, "eager error"},
        {"exact agreement", PARITY_METRIC_GRADIENT, PARITY_F64, 3.0, 3.0, 3.0, 0.0, 64 * 3.0 * 0x1p-53, 0.0, true, "floor"},
        {"zero golden, zero eager, nonzero value", PARITY_METRIC_LOSS_LIKE, PARITY_F64, 1e-300, 0.0, 0.0, 0.0, 0.0, INFINITY, false, "floor"},
        {"NaN never passes", PARITY_METRIC_LOSS_LIKE, PARITY_BF16, NAN, 6.0, 6.001, 0.0, 0.046875, INFINITY, false, "floor"},
        {"Inf never passes", PARITY_METRIC_GRADIENT, PARITY_F32, INFINITY, 1.0, 1.001, 0.0, 0.003, INFINITY, false, "eager error"},
        {"jitter spread above the eager error decides", PARITY_METRIC_GRADIENT, PARITY_BF16, 1.05, 1.0, 1.001, 0.02, 0.06,
         0.05 / 0.06, true, "jitter spread"},
        {"jitter spread exceeded", PARITY_METRIC_GRADIENT, PARITY_BF16, 1.07, 1.0, 1.001, 0.02, 0.06, 0.07 / 0.06, false, "jitter spread"},
        {"jitter spread below the eager error changes nothing", PARITY_METRIC_LOSS_LIKE, PARITY_F32, 1.0025, 1.0, 1.001,
         0.0005, 0.002, 1.25, false, "eager error"},
        {"NaN spread is ignored", PARITY_METRIC_LOSS_LIKE, PARITY_F32, 1.0015, 1.0, 1.001, NAN, 0.002, 0.75, true, "eager error"},
        {"NaN golden never passes", PARITY_METRIC_GRADIENT, PARITY_F32, 1.0, NAN, 1.0, 0.0, NAN, INFINITY, false, "floor"},
        {"NaN eager: the floor alone", PARITY_METRIC_GRADIENT, PARITY_F32, 1.0 + 1e-3, 1.0, NAN, 0.0, 64.0 / 16777216.0,
         1e-3 / (64.0 / 16777216.0), false, "floor"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_metric metric;
        parity_tolerance_check("m", rows[row].kind, rows[row].dtype, rows[row].value, rows[row].golden, rows[row].eager,
                               rows[row].spread, &metric);
        expect_metric(&metric, rows[row].what, rows[row].tolerance, rows[row].ratio, rows[row].pass, rows[row].basis);
        cr_expect_str_eq(metric.name, "m");
        if (isnan(rows[row].golden)) cr_expect(isnan(metric.golden));
        else cr_expect_eq(metric.golden, rows[row].golden);
    }
}

// A sketch component: k = 3 on the largest eager error and spread of the sketch's components, the
// floor c * u * |g| on the golden gradient's norm (times sqrt(n) in fp64), never on the component itself.
Test(tolerance, sketch_component_table) {
    const double fp64_floor = 64 * 0x1p-53, bf16_floor = 2 * 0x1p-8;
    static const double nan = NAN;
    const struct {
        const char *what;
        parity_dtype dtype;
        double value, golden, eager_error, spread, norm;
        int64_t numel;
        double tolerance, ratio;
        bool pass;
        const char *basis;
    } rows[] = {
        {"a component near 0: the floor is the norm's (fp64)", PARITY_F64, 5e-15, 0.0, 0.0, 0.0, 1.0, 1, fp64_floor, 5e-15 / fp64_floor,
         true, "floor"},
        {"a component near 0: one not near the norm's floor fails", PARITY_F64, 1e-9, 0.0, 0.0, 0.0, 1.0, 1, fp64_floor,
         1e-9 / fp64_floor, false, "floor"},
        {"a floor on |s_j| would have been 0 here", PARITY_F64, 1e-15, 1e-300, 0.0, 0.0, 2.0, 1, 2 * fp64_floor,
         (1e-15 - 1e-300) / (2 * fp64_floor), true, "floor"},
        {"the largest component eager error decides", PARITY_BF16, 0.105, 0.1, 0.004, 0.001, 0.14, 4096, 0.012, 0.005 / 0.012, true,
         "eager error"},
        {"the largest spread decides", PARITY_BF16, 0.12, 0.1, 0.004, 0.008, 0.14, 4096, 0.024, 0.02 / 0.024, true, "jitter spread"},
        {"a flipped sign: error 2 |s_j|", PARITY_BF16, -0.1, 0.1, 0.004, 0.008, 0.14, 4096, 0.024, 0.2 / 0.024, false, "jitter spread"},
        {"NaN eager error and spread: the floor alone", PARITY_BF16, 0.1005, 0.1, nan, nan, 0.14, 4096, bf16_floor * 0.14,
         0.0005 / (bf16_floor * 0.14), true, "floor"},
        {"NaN norm: nothing passes", PARITY_F32, 0.1, 0.1, 0.0, 0.0, nan, 4096, nan, INFINITY, false, "floor"},
        {"NaN value never passes", PARITY_F32, nan, 0.1, 0.004, 0.0, 0.14, 4096, 0.012, INFINITY, false, "eager error"},
        // fp64: the floor is c * u * sqrt(n) * |g| (eager is the golden there, so the floor must hold a
        // reordered sum: each element within c * u moves a projection by at most c * u * sqrt(n) * |g|)
        {"fp64, 4096 elements: a reordering's 7e-15 |g| passes", PARITY_F64, 7e-15, 0.0, 0.0, 0.0, 1.0, 4096, 64 * fp64_floor,
         7e-15 / (64 * fp64_floor), true, "floor"},
        {"fp64, 4096 elements: a 1e-12 bug still fails", PARITY_F64, 1e-12, 0.0, 0.0, 0.0, 1.0, 4096, 64 * fp64_floor,
         1e-12 / (64 * fp64_floor), false, "floor"},
        {"fp64, a flipped sign fails by far", PARITY_F64, -0.5, 0.5, 0.0, 0.0, 1.0, 1 << 20, 1024 * fp64_floor,
         1.0 / (1024 * fp64_floor), false, "floor"},
        {"bf16: no sqrt(n) (the eager term measures rounding there)", PARITY_BF16, 0.1005, 0.1, nan, nan, 0.14, 1 << 20,
         bf16_floor * 0.14, 0.0005 / (bf16_floor * 0.14), true, "floor"},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_metric metric;
        parity_tolerance_check_sketch("grad_sketch:w[0]", rows[row].dtype, rows[row].value, rows[row].golden, rows[row].eager_error,
                                      rows[row].spread, rows[row].norm, rows[row].numel, &metric);
        expect_metric(&metric, rows[row].what, rows[row].tolerance, rows[row].ratio, rows[row].pass, rows[row].basis);
        cr_expect_str_eq(metric.name, "grad_sketch:w[0]");
    }
}

Test(tolerance, veomni_rule_table) {
    static const struct {
        double value, reference, tolerance;
        bool pass;
    } rows[] = {
        {1.015, 1.0, 0.02, true},   // rtol * |ref| + atol
        {1.021, 1.0, 0.02, false},
        {0.0, 0.005, 0.01005, true}, // atol dominates near zero
        {100.5, 100.0, 1.01, true},
        {NAN, 1.0, 0.02, false},
    };
    for (size_t row = 0; row < ROWS(rows); row++) {
        parity_metric metric;
        parity_tolerance_check_veomni("loss", rows[row].value, rows[row].reference, &metric);
        cr_expect_float_eq(metric.tolerance, rows[row].tolerance, 1e-12, "row %zu", row);
        cr_expect_eq(metric.pass, rows[row].pass, "row %zu", row);
        cr_expect_eq(metric.golden, rows[row].reference, "the reference is recorded as the golden");
    }
}

Test(tolerance, rule_names_round_trip) {
    parity_tolerance_rule rule;
    cr_expect(parity_tolerance_rule_parse("veomni", &rule) && rule == PARITY_RULE_VEOMNI);
    cr_expect(parity_tolerance_rule_parse("parity", &rule) && rule == PARITY_RULE_PARITY);
    cr_expect_not(parity_tolerance_rule_parse("strict", &rule));
    cr_expect_str_eq(parity_tolerance_rule_name(PARITY_RULE_VEOMNI), "veomni");
}

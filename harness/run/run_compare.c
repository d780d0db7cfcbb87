// run_compare.c: a combo's step against its golden (run_internal.h): every metric under the suite's
// tolerance rule (per gradient: norm, sketch components, sketch cosine), and the verdict.
#include "harness/run/run_internal.h"

#include <math.h>
#include <string.h>

#include "harness/text.h"

// One gradient's values as a result holds them: its norm and sketch (NULL when absent).
typedef struct gradient_values {
    double norm;
    const double *sketch;
    int64_t numel; // 0 where the result has no counts (a golden)
} gradient_values;

static gradient_values parameter_values(const parity_step_result *result, const char *name, size_t hint) {
    return (gradient_values){parity_step_result_norm(result, name, hint), parity_step_result_sketch(result, name, hint),
                             parity_step_result_numel(result, name, hint)};
}

static gradient_values loss_input_values(const parity_step_result *result) {
    if (!result->has_loss_input) return (gradient_values){NAN, NULL, 0};
    return (gradient_values){result->loss_input_grad_norm, result->loss_input_grad_sketch, result->loss_input_numel};
}

// The cosine spread of parameter `name` (index `hint` tried first), NAN when the spread lacks it (no spread).
static double spread_cosine_of(const parity_run_spread *spread, const char *name, size_t hint) {
    const parity_step_result *values = &spread->values;
    if (hint < values->parameter_count && strcmp(values->parameter_names[hint], name) == 0) return spread->cosines[hint];
    for (size_t i = 0; i < values->parameter_count; i++)
        if (strcmp(values->parameter_names[i], name) == 0) return spread->cosines[i];
    return NAN;
}

static double component(const double *sketch, int j) { return sketch ? sketch[j] : NAN; }

// The larger of a and b, NaN when either is NaN.
static double max_nan(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }

static double cosine_or_nan(const double *a, const double *b) { return a && b ? parity_sketch_cosine(a, b) : NAN; }

// The metrics of one gradient `name` (a parameter, or the loss input): its norm, each sketch
// component (with the gradient's terms: the largest eager error and spread over the components, the
// floor on the golden norm: harness/tolerance.h) and the sketch's cosine with the golden's (golden
// 1). `spread` NULL without a jitter spread; spread_cosine its cosine's spread.
static parity_error *compare_gradient(parity_dtype dtype, const char *name, gradient_values golden, gradient_values value,
                                      gradient_values eager, const gradient_values *spread, double spread_cosine,
                                      parity_combo_result *result) {
    parity_metric metric;
    char label[192];
    parity_text_format(label, sizeof label, "grad_norm:%s", name);
    parity_tolerance_check(label, PARITY_METRIC_GRADIENT, dtype, value.norm, golden.norm, eager.norm, spread ? spread->norm : 0.0,
                           &metric);
    PARITY_TRY(parity_metric_add(result, &metric));
    double eager_error = 0, spread_largest = 0;
    for (int j = 0; j < PARITY_SKETCH_K; j++) {
        eager_error = max_nan(eager_error, fabs(component(eager.sketch, j) - component(golden.sketch, j)));
        if (spread) spread_largest = max_nan(spread_largest, component(spread->sketch, j));
    }
    for (int j = 0; j < PARITY_SKETCH_K; j++) {
        parity_text_format(label, sizeof label, "grad_sketch:%s[%d]", name, j);
        parity_tolerance_check_sketch(label, dtype, component(value.sketch, j), component(golden.sketch, j), eager_error,
                                      spread_largest, golden.norm, value.numel, &metric);
        PARITY_TRY(parity_metric_add(result, &metric));
    }
    parity_text_format(label, sizeof label, "grad_cosine:%s", name);
    parity_tolerance_check(label, PARITY_METRIC_GRADIENT, dtype, cosine_or_nan(value.sketch, golden.sketch), 1.0,
                           cosine_or_nan(eager.sketch, golden.sketch), spread ? spread_cosine : 0.0, &metric);
    return parity_metric_add(result, &metric);
}

parity_error *parity_run_compare(parity_tolerance_rule rule, parity_dtype dtype, const parity_step_result *golden,
                                 const parity_step_result *value, const parity_step_result *eager,
                                 const parity_run_spread *spread, parity_combo_result *result) {
    parity_metric metric;
    if (rule == PARITY_RULE_VEOMNI || rule == PARITY_RULE_VEOMNI_PARALLEL) {
        const double tolerance = rule == PARITY_RULE_VEOMNI_PARALLEL ? PARITY_VEOMNI_PARALLEL_TOL : PARITY_VEOMNI_RTOL;
        parity_tolerance_check_veomni_at("loss", value->loss, eager->loss, tolerance, &metric);
        PARITY_TRY(parity_metric_add(result, &metric));
        parity_tolerance_check_veomni_at("grad_norm", value->grad_norm, eager->grad_norm, tolerance, &metric);
        return parity_metric_add(result, &metric);
    }
    const parity_step_result *spread_values = spread ? &spread->values : NULL;
    parity_tolerance_check("loss", PARITY_METRIC_LOSS_LIKE, dtype, value->loss, golden->loss, eager->loss,
                           spread_values ? spread_values->loss : 0.0, &metric);
    PARITY_TRY(parity_metric_add(result, &metric));
    if (golden->has_aux_loss) {
        parity_tolerance_check("aux_loss", PARITY_METRIC_LOSS_LIKE, dtype, value->has_aux_loss ? value->aux_loss : NAN,
                               golden->aux_loss, eager->aux_loss, spread_values ? spread_values->aux_loss : 0.0, &metric);
        PARITY_TRY(parity_metric_add(result, &metric));
    }
    parity_tolerance_check("grad_norm", PARITY_METRIC_GRADIENT, dtype, value->grad_norm, golden->grad_norm, eager->grad_norm,
                           spread_values ? spread_values->grad_norm : 0.0, &metric);
    PARITY_TRY(parity_metric_add(result, &metric));
    for (size_t i = 0; i < golden->parameter_count; i++) {
        const char *parameter = golden->parameter_names[i];
        gradient_values spread_gradient = spread ? parameter_values(spread_values, parameter, i) : (gradient_values){0};
        PARITY_TRY(compare_gradient(dtype, parameter, parameter_values(golden, parameter, i), parameter_values(value, parameter, i),
                                    parameter_values(eager, parameter, i), spread ? &spread_gradient : NULL,
                                    spread ? spread_cosine_of(spread, parameter, i) : 0.0, result));
    }
    if (golden->has_loss_input) {
        gradient_values spread_gradient = spread ? loss_input_values(spread_values) : (gradient_values){0};
        PARITY_TRY(compare_gradient(dtype, PARITY_STEP_LOSS_INPUT, loss_input_values(golden), loss_input_values(value),
                                    loss_input_values(eager), spread ? &spread_gradient : NULL,
                                    spread ? spread->loss_input_cosine : 0.0, result));
    }
    return NULL;
}

void parity_run_judge(parity_combo_result *result, const parity_step_result *value) {
    if (value->first_non_finite[0]) {
        result->status = PARITY_COMBO_FAIL;
        parity_text_format(result->reason, sizeof result->reason, "NaN/Inf first appeared in %s", value->first_non_finite);
        return;
    }
    const parity_metric *worst = NULL;
    size_t failing = 0;
    for (size_t i = 0; i < result->metric_count; i++) {
        const parity_metric *metric = &result->metrics[i];
        if (!metric->pass) failing++;
        if (!worst || metric->ratio > worst->ratio || (isnan(metric->value) && !isnan(worst->value))) worst = metric;
    }
    if (!failing) {
        result->status = PARITY_COMBO_PASS;
        return;
    }
    result->status = PARITY_COMBO_FAIL;
    if (isnan(worst->value))
        parity_text_format(result->reason, sizeof result->reason, "%s: no value (the combo did not report it)", worst->name);
    else
        parity_text_format(result->reason, sizeof result->reason,
                           "%zu metric%s out of tolerance; worst %s: error %.3g > tolerance %.3g (ratio %.3g)", failing,
                           failing == 1 ? "" : "s", worst->name, worst->error, worst->tolerance, worst->ratio);
}

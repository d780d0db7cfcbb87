// run_compare.c: a combo's step against its golden (run_internal.h): the values compared, every
// metric under the suite's tolerance rule, and the verdict.
#include "harness/run/run_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/text.h"

void parity_run_values_release(parity_run_values *values) {
    free(values->names);
    free(values->norms);
    memset(values, 0, sizeof *values);
}

parity_error *parity_run_values_copy(const parity_step_result *step, parity_run_values *out) {
    memset(out, 0, sizeof *out);
    out->loss = step->loss;
    out->aux_loss = step->aux_loss;
    out->has_aux_loss = step->has_aux_loss;
    out->grad_norm = step->grad_norm;
    out->count = step->parameter_count;
    parity_text_format(out->first_non_finite, sizeof out->first_non_finite, "%s", step->first_non_finite);
    out->names = calloc(out->count ? out->count : 1, sizeof *out->names);
    out->norms = calloc(out->count ? out->count : 1, sizeof *out->norms);
    if (!out->names || !out->norms) {
        parity_run_values_release(out);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying step values");
    }
    memcpy(out->names, step->parameter_names, out->count * sizeof *out->names);
    memcpy(out->norms, step->parameter_grad_norms, out->count * sizeof *out->norms);
    return NULL;
}

parity_error *parity_run_values_copy_shape(const parity_run_values *source, parity_run_values *out) {
    memset(out, 0, sizeof *out);
    out->has_aux_loss = source->has_aux_loss;
    out->count = source->count;
    out->names = calloc(out->count ? out->count : 1, sizeof *out->names);
    out->norms = calloc(out->count ? out->count : 1, sizeof *out->norms);
    if (!out->names || !out->norms) {
        parity_run_values_release(out);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "jitter spread values");
    }
    memcpy(out->names, source->names, out->count * sizeof *out->names);
    return NULL;
}

void parity_run_values_from_golden(const parity_golden_values *golden, parity_run_values *out) {
    memset(out, 0, sizeof *out);
    out->loss = golden->loss;
    out->aux_loss = golden->aux_loss;
    out->has_aux_loss = golden->has_aux_loss;
    out->grad_norm = golden->grad_norm;
    out->count = golden->parameter_count;
    out->names = golden->parameter_names; // borrowed: never released
    out->norms = golden->parameter_grad_norms;
}

double parity_run_norm_named(const parity_run_values *values, const char *name, size_t hint) {
    if (hint < values->count && strcmp(values->names[hint], name) == 0) return values->norms[hint];
    for (size_t i = 0; i < values->count; i++)
        if (strcmp(values->names[i], name) == 0) return values->norms[i];
    return NAN;
}

static parity_error *add_metric(parity_combo_result *result, const parity_metric *metric) {
    return parity_metric_add(result, metric);
}

parity_error *parity_run_compare(parity_tolerance_rule rule, parity_dtype dtype, const parity_golden_values *golden_values,
                                 const parity_run_values *value, const parity_run_values *eager, const parity_run_values *spread,
                                 parity_combo_result *result) {
    parity_run_values golden;
    parity_run_values_from_golden(golden_values, &golden);
    parity_metric metric;
    if (rule == PARITY_RULE_VEOMNI) {
        parity_tolerance_check_veomni("loss", value->loss, eager->loss, &metric);
        PARITY_TRY(add_metric(result, &metric));
        parity_tolerance_check_veomni("grad_norm", value->grad_norm, eager->grad_norm, &metric);
        return add_metric(result, &metric);
    }
    parity_tolerance_check("loss", PARITY_METRIC_LOSS_LIKE, dtype, value->loss, golden.loss, eager->loss,
                           spread ? spread->loss : 0.0, &metric);
    PARITY_TRY(add_metric(result, &metric));
    if (golden.has_aux_loss) {
        parity_tolerance_check("aux_loss", PARITY_METRIC_LOSS_LIKE, dtype, value->has_aux_loss ? value->aux_loss : NAN,
                               golden.aux_loss, eager->aux_loss, spread ? spread->aux_loss : 0.0, &metric);
        PARITY_TRY(add_metric(result, &metric));
    }
    parity_tolerance_check("grad_norm", PARITY_METRIC_GRADIENT, dtype, value->grad_norm, golden.grad_norm, eager->grad_norm,
                           spread ? spread->grad_norm : 0.0, &metric);
    PARITY_TRY(add_metric(result, &metric));
    for (size_t i = 0; i < golden.count; i++) {
        char name[192];
        parity_text_format(name, sizeof name, "grad_norm:%s", golden.names[i]);
        parity_tolerance_check(name, PARITY_METRIC_GRADIENT, dtype, parity_run_norm_named(value, golden.names[i], i),
                               golden.norms[i], parity_run_norm_named(eager, golden.names[i], i),
                               spread ? parity_run_norm_named(spread, golden.names[i], i) : 0.0, &metric);
        PARITY_TRY(add_metric(result, &metric));
    }
    return NULL;
}

void parity_run_judge(parity_combo_result *result, const parity_run_values *value) {
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

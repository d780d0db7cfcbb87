// run_compare.c: a combo's step against its golden (run_internal.h): every metric under the suite's
// tolerance rule, and the verdict.
#include "harness/run/run_internal.h"

#include <math.h>

#include "harness/text.h"

parity_error *parity_run_compare(parity_tolerance_rule rule, parity_dtype dtype, const parity_step_result *golden,
                                 const parity_step_result *value, const parity_step_result *eager,
                                 const parity_step_result *spread, parity_combo_result *result) {
    parity_metric metric;
    if (rule == PARITY_RULE_VEOMNI) {
        parity_tolerance_check_veomni("loss", value->loss, eager->loss, &metric);
        PARITY_TRY(parity_metric_add(result, &metric));
        parity_tolerance_check_veomni("grad_norm", value->grad_norm, eager->grad_norm, &metric);
        return parity_metric_add(result, &metric);
    }
    parity_tolerance_check("loss", PARITY_METRIC_LOSS_LIKE, dtype, value->loss, golden->loss, eager->loss,
                           spread ? spread->loss : 0.0, &metric);
    PARITY_TRY(parity_metric_add(result, &metric));
    if (golden->has_aux_loss) {
        parity_tolerance_check("aux_loss", PARITY_METRIC_LOSS_LIKE, dtype, value->has_aux_loss ? value->aux_loss : NAN,
                               golden->aux_loss, eager->aux_loss, spread ? spread->aux_loss : 0.0, &metric);
        PARITY_TRY(parity_metric_add(result, &metric));
    }
    parity_tolerance_check("grad_norm", PARITY_METRIC_GRADIENT, dtype, value->grad_norm, golden->grad_norm, eager->grad_norm,
                           spread ? spread->grad_norm : 0.0, &metric);
    PARITY_TRY(parity_metric_add(result, &metric));
    for (size_t i = 0; i < golden->parameter_count; i++) {
        const char *parameter = golden->parameter_names[i];
        char name[192];
        parity_text_format(name, sizeof name, "grad_norm:%s", parameter);
        parity_tolerance_check(name, PARITY_METRIC_GRADIENT, dtype, parity_step_result_norm(value, parameter, i),
                               golden->parameter_grad_norms[i], parity_step_result_norm(eager, parameter, i),
                               spread ? parity_step_result_norm(spread, parameter, i) : 0.0, &metric);
        PARITY_TRY(parity_metric_add(result, &metric));
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

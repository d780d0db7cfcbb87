// test_run_compare.c: the metrics a combo is judged on (harness/run/run_compare.c), on step results
// made by hand: their names and order (per gradient: norm, K sketch components, sketch cosine; the
// loss input last), the sketch's terms (the largest eager error and spread over the components, the
// floor on the golden norm), the cosine against eager's cosine, and what a flipped gradient, a
// turned one, a NaN or a missing sketch does. VeOmni's rule stays loss and grad_norm.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/run/run_internal.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define P 2

// A result of two parameters: norms (1, 2); sketches row i = norm_i * base (a direction of norm ~1).
typedef struct hand_result {
    char names[P][PARITY_STEP_NAME_SIZE];
    double norms[P], sketches[P * PARITY_SKETCH_K];
    parity_step_result result;
} hand_result;

static const double base[PARITY_SKETCH_K] = {0.6, -0.5, 0.4, -0.48};

static void make(hand_result *h, double scale) {
    memset(h, 0, sizeof *h);
    snprintf(h->names[0], sizeof h->names[0], "model.norm.weight");
    snprintf(h->names[1], sizeof h->names[1], "lm_head.weight");
    for (int i = 0; i < P; i++) {
        h->norms[i] = (i + 1) * scale;
        for (int j = 0; j < PARITY_SKETCH_K; j++) h->sketches[i * PARITY_SKETCH_K + j] = (i + 1) * base[j] * scale;
    }
    h->result = (parity_step_result){.loss = 5.0 * scale, .aux_loss = NAN, .grad_norm = sqrt(5.0) * scale, .logits_sum = NAN,
                                     .parameter_count = P, .parameter_names = h->names, .parameter_grad_norms = h->norms,
                                     .parameter_grad_sketches = h->sketches, .has_loss_input = true,
                                     .loss_input_grad_norm = 0.02 * scale};
    for (int j = 0; j < PARITY_SKETCH_K; j++) h->result.loss_input_grad_sketch[j] = 0.02 * base[j] * scale;
}

static const parity_metric *metric(const parity_combo_result *combo, const char *name) {
    for (size_t i = 0; i < combo->metric_count; i++)
        if (strcmp(combo->metrics[i].name, name) == 0) return &combo->metrics[i];
    cr_assert_fail("no metric %s", name);
    return NULL;
}

static void compare(parity_dtype dtype, const hand_result *golden, const hand_result *value, const hand_result *eager,
                    const parity_run_spread *spread, parity_combo_result *combo) {
    memset(combo, 0, sizeof *combo);
    parity_error *error =
        parity_run_compare(PARITY_RULE_PARITY, dtype, &golden->result, &value->result, &eager->result, spread, combo);
    cr_assert_null(error);
}

static void release(parity_combo_result *combo) { free(combo->metrics); }

Test(run_compare, metric_names_and_order) {
    hand_result golden, value;
    make(&golden, 1.0);
    make(&value, 1.0);
    parity_combo_result combo;
    compare(PARITY_F32, &golden, &value, &golden, NULL, &combo);
    const char *const expected[] = {
        "loss", "grad_norm",
        "grad_norm:model.norm.weight", "grad_sketch:model.norm.weight[0]", "grad_sketch:model.norm.weight[1]",
        "grad_sketch:model.norm.weight[2]", "grad_sketch:model.norm.weight[3]", "grad_cosine:model.norm.weight",
        "grad_norm:lm_head.weight", "grad_sketch:lm_head.weight[0]", "grad_sketch:lm_head.weight[1]",
        "grad_sketch:lm_head.weight[2]", "grad_sketch:lm_head.weight[3]", "grad_cosine:lm_head.weight",
        "grad_norm:loss_input", "grad_sketch:loss_input[0]", "grad_sketch:loss_input[1]", "grad_sketch:loss_input[2]",
        "grad_sketch:loss_input[3]", "grad_cosine:loss_input"};
    cr_assert_eq(combo.metric_count, ROWS(expected), "2 + 6 per parameter + 6 for the loss input: %zu", combo.metric_count);
    for (size_t i = 0; i < ROWS(expected); i++) {
        cr_expect_str_eq(combo.metrics[i].name, expected[i]);
        cr_expect(combo.metrics[i].pass, "%s: an identical result passes", expected[i]);
    }
    const parity_metric *cosine = metric(&combo, "grad_cosine:lm_head.weight");
    cr_expect_eq(cosine->golden, 1.0);
    cr_expect_float_eq(cosine->value, 1.0, 1e-15);
    release(&combo);
    // a golden without a loss input compares none
    golden.result.has_loss_input = false;
    compare(PARITY_F32, &golden, &value, &golden, NULL, &combo);
    cr_expect_eq(combo.metric_count, ROWS(expected) - 6);
    release(&combo);
    // VeOmni's rule: loss and grad_norm, nothing else
    memset(&combo, 0, sizeof combo);
    cr_assert_null(parity_run_compare(PARITY_RULE_VEOMNI, PARITY_F32, &golden.result, &value.result, &golden.result, NULL, &combo));
    cr_expect_eq(combo.metric_count, 2);
    release(&combo);
}

// A flipped weight gradient keeps every norm and the loss: only its sketch and cosine see it.
Test(run_compare, a_flipped_gradient_fails_its_sketch_and_cosine_only) {
    hand_result golden, eager, value;
    make(&golden, 1.0);
    make(&eager, 1.0 + 1e-6);
    make(&value, 1.0 + 1e-6);
    for (int j = 0; j < PARITY_SKETCH_K; j++) value.sketches[PARITY_SKETCH_K + j] *= -1; // lm_head's gradient, sign flipped
    parity_combo_result combo;
    compare(PARITY_F32, &golden, &value, &eager, NULL, &combo);
    for (size_t i = 0; i < combo.metric_count; i++) {
        bool flipped = strstr(combo.metrics[i].name, "lm_head") && !strstr(combo.metrics[i].name, "grad_norm:");
        cr_expect_eq(combo.metrics[i].pass, !flipped, "%s: ratio %g", combo.metrics[i].name, combo.metrics[i].ratio);
    }
    cr_expect_float_eq(metric(&combo, "grad_cosine:lm_head.weight")->value, -1.0, 1e-15);
    cr_expect_float_eq(metric(&combo, "grad_cosine:lm_head.weight")->error, 2.0, 1e-15);
    release(&combo);
}

// The sketch's terms are the gradient's: a component whose own eager error is 0 still gets the
// tolerance of the largest component error; a component near 0 gets the floor of the norm.
Test(run_compare, sketch_tolerances_come_from_the_whole_gradient) {
    hand_result golden, eager, value;
    make(&golden, 1.0);
    make(&eager, 1.0);
    make(&value, 1.0);
    eager.sketches[0] += 1e-3;                    // model.norm.weight: component 0 off by 1e-3, the others exact
    value.sketches[2] += 2.5e-3;                  // this combo: component 2 off by 2.5e-3 (< 3 * 1e-3)
    golden.sketches[PARITY_SKETCH_K + 3] = 0;     // lm_head: a component exactly 0 in the golden
    eager.sketches[PARITY_SKETCH_K + 3] = 0;
    value.sketches[PARITY_SKETCH_K + 3] = 1e-6;   // 1e-6 of a norm-2 gradient: within fp32's 64 u |g| = 7.6e-6
    parity_combo_result combo;
    compare(PARITY_F32, &golden, &value, &eager, NULL, &combo);
    const parity_metric *component = metric(&combo, "grad_sketch:model.norm.weight[2]");
    cr_expect_float_eq(component->tolerance, 3e-3, 1e-12, "3 x the largest eager component error: %g", component->tolerance);
    cr_expect_str_eq(component->basis, "eager error");
    cr_expect(component->pass);
    const parity_metric *zero = metric(&combo, "grad_sketch:lm_head.weight[3]");
    cr_expect_float_eq(zero->tolerance, 64 * 0x1p-24 * 2.0, 1e-18, "the floor on the golden norm 2: %g", zero->tolerance);
    cr_expect_str_eq(zero->basis, "floor");
    cr_expect(zero->pass, "ratio %g", zero->ratio);
    release(&combo);
    // with a jitter spread larger than the eager error, the largest spread component sets it
    hand_result spread_values;
    make(&spread_values, 0.0);
    spread_values.sketches[1] = 2e-3;
    double cosines[P] = {0, 0};
    parity_run_spread spread = {.values = spread_values.result, .cosines = cosines};
    compare(PARITY_F32, &golden, &value, &eager, &spread, &combo);
    component = metric(&combo, "grad_sketch:model.norm.weight[2]");
    cr_expect_float_eq(component->tolerance, 6e-3, 1e-12, "3 x the largest spread component: %g", component->tolerance);
    cr_expect_str_eq(component->basis, "jitter spread");
    release(&combo);
}

// The cosine: golden 1, checked on |cos - 1| against eager's own cosine (and its spread), floor c * u.
Test(run_compare, cosine_against_eager_and_its_spread) {
    hand_result golden, eager, value;
    make(&golden, 1.0);
    make(&eager, 1.0);
    make(&value, 1.0);
    eager.sketches[0] += 0.02; // eager turned a little: 1 - cos = a
    value.sketches[0] += 0.03; // the combo a little more
    double eager_cosine = parity_sketch_cosine(eager.sketches, golden.sketches);
    double value_cosine = parity_sketch_cosine(value.sketches, golden.sketches);
    parity_combo_result combo;
    compare(PARITY_BF16, &golden, &value, &eager, NULL, &combo);
    const parity_metric *cosine = metric(&combo, "grad_cosine:model.norm.weight");
    cr_expect_float_eq(cosine->value, value_cosine, 1e-15);
    double floor = 2 * 0x1p-8, scaled = 3 * (1 - eager_cosine);
    cr_expect_float_eq(cosine->tolerance, fmax(floor, scaled), 1e-15, "tolerance %g (eager 1 - cos %g)", cosine->tolerance,
                       1 - eager_cosine);
    release(&combo);
    // a spread of the cosine larger than eager's own distance sets it
    hand_result zero;
    make(&zero, 0.0);
    double cosines[P] = {0.01, 0};
    parity_run_spread spread = {.values = zero.result, .cosines = cosines};
    compare(PARITY_BF16, &golden, &value, &eager, &spread, &combo);
    cosine = metric(&combo, "grad_cosine:model.norm.weight");
    cr_expect_float_eq(cosine->tolerance, 0.03, 1e-15);
    cr_expect_str_eq(cosine->basis, "jitter spread");
    release(&combo);
}

Test(run_compare, nan_and_missing_sketches_never_pass) {
    hand_result golden, eager, value;
    make(&golden, 1.0);
    make(&eager, 1.0);
    make(&value, 1.0);
    value.sketches[1] = NAN;
    parity_combo_result combo;
    compare(PARITY_F32, &golden, &value, &eager, NULL, &combo);
    cr_expect_not(metric(&combo, "grad_sketch:model.norm.weight[1]")->pass);
    cr_expect_not(metric(&combo, "grad_cosine:model.norm.weight")->pass, "a NaN component makes the cosine NaN");
    cr_expect(isnan(metric(&combo, "grad_cosine:model.norm.weight")->value));
    release(&combo);
    // a combo without sketches, or without the loss input: those metrics have no value and fail
    value.result.parameter_grad_sketches = NULL;
    value.result.has_loss_input = false;
    compare(PARITY_F32, &golden, &value, &eager, NULL, &combo);
    size_t failing = 0;
    for (size_t i = 0; i < combo.metric_count; i++)
        if (!combo.metrics[i].pass) {
            failing++;
            cr_expect(isnan(combo.metrics[i].value), "%s", combo.metrics[i].name);
        }
    cr_expect_eq(failing, P * (PARITY_SKETCH_K + 1) + PARITY_SKETCH_K + 2, "every sketch and cosine, and the loss input's three");
    release(&combo);
    // a NaN in eager's sketch or in the spread widens nothing: the floor alone remains
    make(&value, 1.0);
    value.sketches[0] += 1e-3;
    eager.sketches[3] = NAN;
    hand_result spread_values;
    make(&spread_values, 0.0);
    spread_values.sketches[2] = NAN;
    double cosines[P] = {NAN, 0};
    parity_run_spread spread = {.values = spread_values.result, .cosines = cosines};
    compare(PARITY_F32, &golden, &value, &eager, &spread, &combo);
    const parity_metric *component = metric(&combo, "grad_sketch:model.norm.weight[0]");
    cr_expect_str_eq(component->basis, "floor");
    cr_expect_not(component->pass, "1e-3 > the fp32 floor of a norm-1 gradient");
    release(&combo);
}

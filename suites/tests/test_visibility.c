// test_visibility.c: the harness can see. suites/tests-visibility.yaml runs with the test-only
// backends of ops/testing next to the honest ones (eager, sdpa), on qwen3_tiny and qwen3_moe_tiny,
// plain and packed, fp32 and bf16. Asserted, combo by combo, under the parity rule:
//   - every honest combo passes;
//   - every combo with a wrong backend fails, with one documented exception: in bf16 the 1e-3
//     RMSNorm perturbation (test_perturbed alone) is at bf16's own rounding noise (u = 2^-8 =
//     3.9e-3 > 1e-3): its exact effect on these models is at most ~1.2 units of bf16 rounding,
//     inside the bf16 floor (2 units) that honest backends need (sdpa differs from eager by up to
//     ~1.1 units), so it may fail or pass. Asserted: caught in every fp32 combo; in bf16 its worst
//     ratio stays below 3 (docs/tolerance.md has the numbers);
//   - the perturbation of one bf16 unit (test_perturbed_bf16_unit: RMSNorm output * (1 + 2^-8))
//     fails in every combo, bf16 included: the table of caught combos counts every one, and its
//     bf16 worst ratios are printed next to the 1e-3 ones.
//   - a flipped sign of RMSNorm's weight gradient (test_flipped_dw) or input gradient
//     (test_flipped_dx) fails every combo in both dtypes; the weight one only through the
//     direction metrics (gradient sketches and cosines: without them, no metric of the parity rule
//     sees it, which the "by norms" column shows).
// It also prints, and asserts, what VeOmni's fixed rule (rtol = atol = 1e-2 on loss and grad_norm
// against the eager run) would have caught: the wrong eps, and the flipped input gradient in some
// of the combos but not all (where it moves grad_norm by more than ~1.4%: 6 of 8 in each dtype on
// the checkpoints of issue 21); never the flipped weight gradient.
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_runner.h"
#include "harness/tolerance.h"
#include "reports/results.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))

static const char *const perturbations[] = {"test_perturbed",           "test_perturbed_bf16_unit", "test_wrong_eps",
                                            "test_position_off_by_one", "test_scale_1pct",          "test_flipped_dw",
                                            "test_flipped_dx"};

// The test-only value of a combo (NULL when honest); *several when it has more than one.
static const char *test_value(const parity_combo_result *combo, bool *several) {
    const char *found = NULL;
    *several = false;
    for (size_t i = 0; i < combo->field_count; i++)
        if (strncmp(combo->fields[i].value, "test_", 5) == 0) {
            if (found) *several = true;
            found = combo->fields[i].value;
        }
    return found;
}

static const parity_combo_result *baseline_of(const parity_results *results, const parity_combo_result *combo) {
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *other = &results->combos[i];
        if (other->is_eager_baseline && strcmp(other->model, combo->model) == 0 && strcmp(other->batch, combo->batch) == 0 &&
            strcmp(other->dtype, combo->dtype) == 0 && strcmp(other->device, combo->device) == 0)
            return other;
    }
    return NULL;
}

static const parity_metric *metric_named(const parity_combo_result *combo, const char *name) {
    for (size_t i = 0; i < combo->metric_count; i++)
        if (strcmp(combo->metrics[i].name, name) == 0) return &combo->metrics[i];
    return NULL;
}

// The parity rule without the direction metrics (loss, aux_loss, grad_norm and the gradient norms
// only: what it compared before the sketches): does some such metric fail?
static bool norms_catch(const parity_combo_result *combo) {
    for (size_t i = 0; i < combo->metric_count; i++) {
        const char *name = combo->metrics[i].name;
        bool direction = strncmp(name, "grad_sketch:", 12) == 0 || strncmp(name, "grad_cosine:", 12) == 0;
        if (!direction && !combo->metrics[i].pass) return true;
    }
    return false;
}

// VeOmni's test_models_patch verdict: loss and grad_norm within rtol = atol = 1e-2 of the eager run.
static bool veomni_catches(const parity_results *results, const parity_combo_result *combo) {
    const parity_combo_result *eager = baseline_of(results, combo);
    cr_assert_not_null(eager, "%s has an eager baseline", combo->id);
    static const char *const names[] = {"loss", "grad_norm"};
    for (size_t i = 0; i < ROWS(names); i++) {
        const parity_metric *mine = metric_named(combo, names[i]), *reference = metric_named(eager, names[i]);
        cr_assert(mine && reference, "%s reports %s", combo->id, names[i]);
        parity_metric verdict;
        parity_tolerance_check_veomni(names[i], mine->value, reference->value, &verdict);
        if (!verdict.pass) return true;
    }
    return false;
}

Test(visibility, wrong_backends_fail_honest_ones_pass, .timeout = 600) {
    char folder[] = "/tmp/parity-visibility-XXXXXX";
    cr_assert_not_null(mkdtemp(folder));
    char arguments[512];
    snprintf(arguments, sizeof arguments, "golden generate --suite tests-visibility --golden-dir %s/golden", folder);
    command_result generated = run_parity(arguments);
    cr_assert_eq(generated.exit_code, 0, "%s", generated.output);
    free(generated.output);
    snprintf(arguments, sizeof arguments,
             "run --suite tests-visibility --with-test-backends --golden-dir %s/golden --out %s/out", folder, folder);
    command_result run = run_parity(arguments);
    cr_expect_eq(run.exit_code, 1, "the wrong backends fail the run:\n%s", run.output);
    free(run.output);

    char path[256];
    snprintf(path, sizeof path, "%s/out/results.json", folder);
    parity_results results;
    parity_error *error = parity_results_read_json(path, &results);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");

    // caught[p][d][rule]: perturbation p alone (other fields eager or honest), dtype d (0 fp32, 1 bf16),
    // rule 0 parity, 1 veomni, 2 parity without the direction metrics; counts of combos caught and seen.
    size_t caught[ROWS(perturbations)][2][3] = {{{0}}}, seen[ROWS(perturbations)][2] = {{0}};
    size_t honest = 0, wrong = 0;
    for (size_t i = 0; i < results.combo_count; i++) {
        const parity_combo_result *combo = &results.combos[i];
        if (combo->status == PARITY_COMBO_NOT_SUPPORTED || combo->status == PARITY_COMBO_EXCLUDED) continue;
        cr_expect_neq(combo->status, PARITY_COMBO_ERROR, "%s: %s", combo->id, combo->reason);
        bool several;
        const char *value = test_value(combo, &several);
        bool bf16 = strcmp(combo->dtype, "bf16") == 0;
        if (!value) {
            honest++;
            cr_expect_eq(combo->status, PARITY_COMBO_PASS, "honest %s: %s", combo->id, combo->reason);
            continue;
        }
        wrong++;
        cr_assert_gt(combo->metric_count, 0, "%s reports its metrics", combo->id);
        const parity_metric *worst = &combo->metrics[0];
        for (size_t m = 1; m < combo->metric_count; m++)
            if (combo->metrics[m].ratio > worst->ratio) worst = &combo->metrics[m];
        // The two RMSNorm scales (1e-3, 2^-8) in bf16: their worst ratios, printed side by side.
        if (bf16 && !several && strncmp(value, "test_perturbed", strlen("test_perturbed")) == 0)
            printf("bf16 %-84s %s, worst ratio %.2f (%s)\n", combo->id, parity_combo_status_name(combo->status), worst->ratio,
                   worst->name);
        if (bf16 && !several && strcmp(value, "test_perturbed") == 0) {
            // Either verdict happens: the 1e-3 effect is at bf16's rounding noise. What holds is
            // that it stays near the tolerance, unlike a real bug: worst ratio below 3.
            cr_expect_lt(worst->ratio, 3.0, "%s: a 1e-3 RMSNorm error is documented as at bf16's noise level (ratio %.2f): "
                                            "update docs/tolerance.md and this test", combo->id, worst->ratio);
        } else {
            cr_expect_eq(combo->status, PARITY_COMBO_FAIL, "wrong %s passed", combo->id);
        }
        if (several) continue;
        for (size_t p = 0; p < ROWS(perturbations); p++) {
            if (strcmp(value, perturbations[p]) != 0) continue;
            seen[p][bf16]++;
            caught[p][bf16][0] += combo->status == PARITY_COMBO_FAIL;
            caught[p][bf16][1] += veomni_catches(&results, combo);
            caught[p][bf16][2] += norms_catch(combo);
        }
    }
    cr_expect_eq(honest, 2 * 2 * 2 * 2, "eager and sdpa for 2 models x 2 batches x 2 dtypes");
    cr_expect_gt(wrong, 100);

    printf("perturbation               dtype  combos  parity rule caught  of which by norms  VeOmni 1e-2 caught\n");
    for (size_t p = 0; p < ROWS(perturbations); p++)
        for (int d = 0; d < 2; d++)
            printf("%-26s %-6s %6zu  %18zu  %17zu  %18zu\n", perturbations[p], d ? "bf16" : "fp32", seen[p][d], caught[p][d][0],
                   caught[p][d][2], caught[p][d][1]);
    for (size_t p = 0; p < ROWS(perturbations); p++) {
        bool is_wrong_eps = strcmp(perturbations[p], "test_wrong_eps") == 0;
        bool below_bf16_unit = strcmp(perturbations[p], "test_perturbed") == 0;
        bool flipped_dw = strcmp(perturbations[p], "test_flipped_dw") == 0, flipped_dx = strcmp(perturbations[p], "test_flipped_dx") == 0;
        for (int d = 0; d < 2; d++) {
            size_t expected = strcmp(perturbations[p], "test_scale_1pct") == 0 ? 4 : 8; // attention is the swept op itself
            cr_expect_eq(seen[p][d], expected, "%s alone: (2 attentions x) 2 models x 2 batches", perturbations[p]);
            // The parity rule catches every combo but the 1e-3 RMSNorm scale in bf16 (checked above).
            if (!(below_bf16_unit && d == 1))
                cr_expect_eq(caught[p][d][0], seen[p][d], "parity rule on %s (%s)", perturbations[p], d ? "bf16" : "fp32");
            // A flipped weight gradient keeps the loss and every gradient norm: only the sketches and
            // their cosines see it. Every other bug is seen by the norms already.
            cr_expect_eq(caught[p][d][2], flipped_dw ? 0 : caught[p][d][0], "%s (%s): caught by norms alone", perturbations[p],
                         d ? "bf16" : "fp32");
            // VeOmni's fixed 1e-2 on loss and grad norm sees the wrong eps in every combo, never the
            // flipped weight gradient, and the flipped input gradient only where it happens to move
            // grad_norm by more than 1e-2 + 1e-2 |grad_norm| (measured on the checkpoints of issue 21:
            // 6 of 8 in each dtype): some of those combos it must miss, while the parity rule fails all.
            if (flipped_dx) {
                cr_expect_lt(caught[p][d][1], seen[p][d], "VeOmni rule on %s (%s) misses some", perturbations[p], d ? "bf16" : "fp32");
                cr_expect_gt(caught[p][d][1], 0, "VeOmni rule on %s (%s): grad_norm moves in some", perturbations[p],
                             d ? "bf16" : "fp32");
            } else {
                size_t veomni = is_wrong_eps ? seen[p][d] : 0;
                cr_expect_eq(caught[p][d][1], veomni, "VeOmni rule on %s (%s)", perturbations[p], d ? "bf16" : "fp32");
            }
        }
    }
    parity_results_release(&results);
    snprintf(arguments, sizeof arguments, "rm -rf '%s'", folder);
    cr_assert_eq(system(arguments), 0);
}

// test_run_library.c: the runner in process (harness/runner.h), for what the command line cannot
// set up: a backend that produces NaN fails its combo naming where NaN/Inf first appeared (the
// forward output or the backward's gradient, with its op and backend) while the run goes on; the
// veomni rule compares with the first mode on loss and grad_norm only; an unselected baseline still
// runs so a --filter'ed combo has its tolerance (tolerances set by the eager term, above the floor,
// equal to the unfiltered run's); the jitter spread widens bf16 tolerances past
// k * eager error where eager moves more under 1-ulp noise, never in fp64.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/golden_case.h"
#include "harness/runner.h"
#include "harness/tolerance.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"

static char folder[64];

// A suite file in a fresh folder and the goldens of its cases under <folder>/golden.
static parity_suite *suite_with_goldens(const char *body) {
    snprintf(folder, sizeof folder, "/tmp/parity-runlib-XXXXXX");
    cr_assert_not_null(mkdtemp(folder));
    char root[1024], path[256], text[4096];
    cr_assert_not_null(getcwd(root, sizeof root));
    snprintf(path, sizeof path, "%s/suite.yaml", folder);
    snprintf(text, sizeof text,
             "suite: lib\ndevices: [cpu]\nwarmup: 0\nrepeats: 2\n%s"
             "models:\n  - name: qwen3_tiny\n    checkpoint: %s/golden/upstream/qwen3_tiny\n"
             "    batches: [{name: plain, file: %s/golden/upstream/qwen3_tiny/batch.safetensors}]\n",
             body, root, root);
    FILE *file = fopen(path, "w");
    cr_assert_not_null(file);
    fputs(text, file);
    fclose(file);
    cr_assert_null(parity_registry_register_builtins());
    parity_suite *suite = NULL;
    parity_error *error = parity_suite_load(path, &suite);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    parity_case c;
    cr_assert_null(parity_case_prepare(suite, &suite->models[0], &suite->models[0].batches[0], &c));
    parity_provenance provenance;
    char *command_line[] = {"parity-tests", "run_library"};
    parity_provenance_collect(PARITY_CPU, 2, command_line, &provenance);
    parity_golden golden;
    cr_assert_null(parity_golden_compute(&c, PARITY_CPU, &provenance, &golden));
    char golden_path[512], goldens[256], command[512];
    snprintf(command, sizeof command, "mkdir -p %s/golden/lib/qwen3_tiny", folder);
    cr_assert_eq(system(command), 0);
    snprintf(goldens, sizeof goldens, "%s/golden", folder);
    parity_golden_path_of(goldens, "lib", "qwen3_tiny", "plain", golden_path, sizeof golden_path);
    parity_error *written = parity_golden_write(golden_path, &golden, false);
    cr_assert_null(written, "%s", written ? parity_error_message(written) : "");
    parity_golden_release(&golden);
    parity_case_release(&c);
    return suite;
}

static void run(parity_suite *suite, const char *filter, bool with_test_backends, parity_results *results) {
    char goldens[128];
    snprintf(goldens, sizeof goldens, "%s/golden", folder);
    parity_run_options options = {.golden_dir = goldens, .filter = filter, .with_test_backends = with_test_backends};
    parity_run_plan plan;
    parity_error *error = parity_run_plan_build(suite, &options, &plan);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    memset(results, 0, sizeof *results);
    error = parity_run_execute(suite, &plan, &options, results);
    cr_assert_null(error, "%s", error ? parity_error_message(error) : "");
    parity_run_plan_release(&plan);
}

static void cleanup(parity_suite *suite) {
    parity_suite_free(suite);
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    cr_assert_eq(system(command), 0);
}

static const parity_combo_result *find(const parity_results *results, const char *id) {
    for (size_t i = 0; i < results->combo_count; i++)
        if (strcmp(results->combos[i].id, id) == 0) return &results->combos[i];
    return NULL;
}

// rms_norm "nan_norm": eager, with one NaN in its output.
static parity_error *nan_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    const parity_rms_norm_kernels *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU)->kernels;
    PARITY_TRY(eager->forward(exec, args, saved));
    parity_tensor_set(args->output, 0, NAN);
    return NULL;
}
static parity_error *nan_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                  const parity_rms_norm_grads *grads) {
    const parity_rms_norm_kernels *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU)->kernels;
    return eager->backward(exec, args, saved, grads);
}
static const parity_rms_norm_kernels nan_kernels = {nan_forward, nan_backward};

Test(run_library, nan_fails_its_combo_naming_the_first_tensor_and_the_run_goes_on) {
    parity_suite *suite = suite_with_goldens("dtypes: [fp32]\nsweep: [rms_norm, ce]\n");
    const parity_backend *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU);
    cr_assert_null(parity_registry_add(&(parity_backend){
        .op = PARITY_OP_RMS_NORM, .name = "nan_norm", .device = PARITY_DEVICE_CPU, .dtypes = eager->dtypes,
        .capabilities = eager->capabilities | PARITY_CAP_TEST_ONLY, .kernels = &nan_kernels, .description = "test: NaN"}));
    parity_results results;
    run(suite, NULL, true, &results);
    const parity_combo_result *broken = find(&results, "qwen3_tiny/plain/ce=eager,rms_norm=nan_norm/fp32/cpu");
    cr_assert_not_null(broken);
    cr_expect_eq(broken->status, PARITY_COMBO_FAIL);
    cr_expect(strstr(broken->reason, "NaN/Inf first appeared in ") != NULL, "%s", broken->reason);
    cr_expect(strstr(broken->reason, "(forward of rms_norm, nan_norm)") != NULL, "the op that made it: %s", broken->reason);
    const parity_combo_result *after = find(&results, "qwen3_tiny/plain/ce=chunk_loss,rms_norm=eager/fp32/cpu");
    cr_assert_not_null(after, "the combos after the broken one ran");
    cr_expect_eq(after->status, PARITY_COMBO_PASS, "%s", after->reason);
    cr_expect_eq(after->sample_count, 2);
    parity_results_release(&results);
    cleanup(suite);
}

// rms_norm "nan_grad_norm": eager, with one NaN in the input gradient of its backward.
static parity_error *nan_grad_backward(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                                       const parity_rms_norm_grads *grads) {
    const parity_rms_norm_kernels *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU)->kernels;
    PARITY_TRY(eager->backward(exec, args, saved, grads));
    if (grads->dinput) parity_tensor_set(grads->dinput, 0, NAN);
    return NULL;
}
static parity_error *eager_forward(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved) {
    const parity_rms_norm_kernels *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU)->kernels;
    return eager->forward(exec, args, saved);
}
static const parity_rms_norm_kernels nan_grad_kernels = {eager_forward, nan_grad_backward};

// NaN/Inf is named where it first appeared, not at the first parameter gradient it spoils (which
// in HF order is the embedding's): a forward output names its op and backend, a gradient the
// backward that wrote it.
Test(run_library, nan_is_named_where_it_first_appeared) {
    static const struct {
        const char *backend;
        const parity_rms_norm_kernels *kernels;
        const char *expected;
    } rows[] = {
        {"nan_norm", &nan_kernels, "model.layers.0.input_layernorm (forward of rms_norm, nan_norm)"},
        {"nan_grad_norm", &nan_grad_kernels, "gradient of model.layers.1 (backward of rms_norm, nan_grad_norm)"},
    };
    cr_assert_null(parity_registry_register_builtins());
    const parity_backend *eager = parity_registry_find(PARITY_OP_RMS_NORM, "eager", PARITY_DEVICE_CPU);
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        cr_assert_null(parity_registry_add(&(parity_backend){
            .op = PARITY_OP_RMS_NORM, .name = rows[row].backend, .device = PARITY_DEVICE_CPU, .dtypes = eager->dtypes,
            .capabilities = eager->capabilities | PARITY_CAP_TEST_ONLY, .kernels = rows[row].kernels,
            .description = "test: NaN"}));
        parity_op_names names = {0};
        names.name[PARITY_OP_ID_RMS_NORM] = rows[row].backend;
        parity_evaluation_options options = {
            .checkpoint = "golden/upstream/qwen3_tiny", .batch_path = "golden/upstream/qwen3_tiny/batch.safetensors",
            .dtype = PARITY_F32, .device = PARITY_CPU, .names = &names, .eager_baseline = true,
        };
        parity_evaluation evaluation;
        parity_error *error = parity_evaluate(&options, &evaluation);
        cr_assert_null(error, "%s: %s", rows[row].backend, error ? parity_error_message(error) : "");
        cr_expect_str_eq(evaluation.step.first_non_finite, rows[row].expected, "%s", rows[row].backend);
        parity_evaluation_release(&evaluation);
    }
}

Test(run_library, a_filtered_combo_still_gets_its_eager_baseline) {
    parity_suite *suite = suite_with_goldens("dtypes: [bf16]\nsweep: [attn]\n");
    parity_results results;
    run(suite, "*attn=sdpa*", false, &results);
    cr_assert_eq(results.combo_count, 1, "only the selected combo is recorded");
    const parity_combo_result *sdpa = &results.combos[0];
    cr_expect_str_eq(sdpa->id, "qwen3_tiny/plain/attn=sdpa/bf16/cpu");
    cr_expect_eq(sdpa->status, PARITY_COMBO_PASS, "%s", sdpa->reason);
    // The unselected eager baseline ran: some tolerances come from its term (k * eager's error, or the
    // jitter spread of its jittered reruns) and exceed the floor, which is all a combo without a
    // baseline would get.
    size_t from_eager = 0;
    for (size_t m = 0; m < sdpa->metric_count; m++) {
        const parity_metric *metric = &sdpa->metrics[m];
        if (strcmp(metric->basis, "eager error") != 0 && strcmp(metric->basis, "jitter spread") != 0) continue;
        from_eager++;
        cr_expect_gt(metric->tolerance, parity_tolerance_floor(PARITY_BF16, metric->golden), "%s: basis %s, tolerance %.3e",
                     metric->name, metric->basis, metric->tolerance);
    }
    cr_expect_gt(from_eager, 0, "no tolerance of the filtered combo came from the eager baseline");
    // And they are the tolerances of the same combo in the unfiltered run.
    parity_results all;
    run(suite, NULL, false, &all);
    const parity_combo_result *unfiltered = find(&all, sdpa->id);
    cr_assert_not_null(unfiltered);
    cr_assert_eq(unfiltered->metric_count, sdpa->metric_count);
    for (size_t m = 0; m < sdpa->metric_count; m++) {
        cr_expect_str_eq(sdpa->metrics[m].name, unfiltered->metrics[m].name);
        cr_expect_eq(sdpa->metrics[m].tolerance, unfiltered->metrics[m].tolerance, "%s: %.17g filtered, %.17g unfiltered",
                     sdpa->metrics[m].name, sdpa->metrics[m].tolerance, unfiltered->metrics[m].tolerance);
        cr_expect_str_eq(sdpa->metrics[m].basis, unfiltered->metrics[m].basis, "%s", sdpa->metrics[m].name);
    }
    parity_results_release(&all);
    parity_results_release(&results);
    cleanup(suite);
}

Test(run_library, the_jitter_spread_sets_some_bf16_tolerances_and_no_fp64_one) {
    parity_suite *suite = suite_with_goldens("dtypes: [fp64, bf16]\nsweep: [attn]\n");
    parity_results results;
    run(suite, NULL, false, &results);
    const parity_combo_result *eager = find(&results, "qwen3_tiny/plain/attn=eager/bf16/cpu");
    cr_assert_not_null(eager);
    size_t from_spread = 0;
    for (size_t i = 0; i < results.combo_count; i++) {
        const parity_combo_result *combo = &results.combos[i];
        if (combo->status == PARITY_COMBO_NOT_SUPPORTED) continue;
        cr_expect_eq(combo->status, PARITY_COMBO_PASS, "%s: %s", combo->id, combo->reason);
        bool bf16 = strcmp(combo->dtype, "bf16") == 0;
        for (size_t m = 0; m < combo->metric_count; m++) {
            const parity_metric *metric = &combo->metrics[m];
            cr_expect(metric->basis[0], "%s %s: no basis recorded", combo->id, metric->name);
            if (strcmp(metric->basis, "jitter spread") != 0) continue;
            cr_expect(bf16, "%s %s: an fp64 tolerance from the jitter spread", combo->id, metric->name);
            if (!bf16 || combo->is_eager_baseline) continue;
            from_spread++;
            // k * spread > k * |eager - golden|: the spread widened this tolerance past the eager error.
            const parity_metric *same = &eager->metrics[m];
            cr_assert_str_eq(same->name, metric->name);
            double k = strcmp(metric->name, "loss") == 0 || strcmp(metric->name, "aux_loss") == 0 ? 2.0 : 3.0;
            cr_expect_gt(metric->tolerance / k, fabs(same->value - same->golden), "%s %s", combo->id, metric->name);
        }
    }
    cr_expect_gt(from_spread, 0, "no bf16 tolerance came from the jitter spread");
    parity_results_release(&results);
    cleanup(suite);
}

// jitter_runs: the spread is a largest distance over seeds 1..N, so N = 6 runs seeds 1..3 and more:
// no tolerance narrows, some widen, and the context names the count.
Test(run_library, more_jitter_runs_never_narrow_a_tolerance_and_the_context_names_their_count) {
    parity_results few, many;
    parity_suite *suite = suite_with_goldens("dtypes: [bf16]\nsweep: [attn]\njitter_runs: 1\n");
    run(suite, NULL, false, &few);
    cleanup(suite);
    suite = suite_with_goldens("dtypes: [bf16]\nsweep: [attn]\njitter_runs: 6\n");
    run(suite, NULL, false, &many);
    cr_expect(strstr(few.context.tolerance_rule, "over 1 run)") != NULL, "%s", few.context.tolerance_rule);
    cr_expect(strstr(many.context.tolerance_rule, "over 6 runs)") != NULL, "%s", many.context.tolerance_rule);
    cr_assert_eq(few.combo_count, many.combo_count);
    size_t widened = 0;
    for (size_t i = 0; i < many.combo_count; i++) {
        const parity_combo_result *a = &few.combos[i], *b = &many.combos[i];
        cr_assert_str_eq(a->id, b->id);
        if (b->status == PARITY_COMBO_NOT_SUPPORTED) continue;
        cr_assert_eq(a->metric_count, b->metric_count, "%s", b->id);
        for (size_t m = 0; m < b->metric_count; m++) {
            cr_expect_geq(b->metrics[m].tolerance, a->metrics[m].tolerance, "%s %s", b->id, b->metrics[m].name);
            widened += b->metrics[m].tolerance > a->metrics[m].tolerance;
        }
    }
    cr_expect_gt(widened, 0, "6 jittered runs widened no tolerance over 1");
    parity_results_release(&few);
    parity_results_release(&many);
    cleanup(suite);
}

// A model's own warmup / repeats replace the suite's for its combos, and the context says so.
Test(run_library, a_models_own_repeats_replace_the_suites) {
    parity_suite *suite = suite_with_goldens("dtypes: [fp32]\nsweep: [attn]\n");
    suite->models[0].warmup = 0; // as `warmup: 0, repeats: 1` in the model's entry (suite_parsing reads those)
    suite->models[0].repeats = 1;
    parity_results results;
    run(suite, NULL, false, &results);
    cr_assert_gt(results.combo_count, 0);
    for (size_t i = 0; i < results.combo_count; i++) {
        const parity_combo_result *combo = &results.combos[i];
        if (combo->status == PARITY_COMBO_NOT_SUPPORTED) continue;
        cr_expect_eq(combo->sample_count, 1, "%s: %zu samples, the model says 1", combo->id, combo->sample_count);
        cr_expect_eq(combo->warmup_count, 0, "%s", combo->id);
    }
    cr_expect(strstr(results.context.timing_method, "qwen3_tiny: 0 warm-up, median of 1") != NULL, "%s",
              results.context.timing_method);
    parity_results_release(&results);
    cleanup(suite);
}

// adaptive_repeats: an unreachable noise target takes every combo to its sample cap, a target every
// run meets (noise <= 99%) leaves the repeats as asked, and a time cap already spent stops at once.
Test(run_library, adaptive_repeats_stop_at_the_noise_target_or_a_cap) {
    static const struct {
        const char *label;
        double noise, seconds;
        size_t samples; // every timed combo's
    } rows[] = {
        {"unreachable target: the sample cap", 1e-12, 1000, 5},
        {"a met target: the repeats asked", 0.99, 1000, 2},
        {"the time cap spent: the repeats asked", 1e-12, 1e-9, 2},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        parity_suite *suite = suite_with_goldens("dtypes: [fp32]\nsweep: [attn]\n"); // repeats: 2
        suite->adaptive = (parity_adaptive_timing){.noise_target = rows[r].noise, .max_steps = 5,
                                                   .time_cap_ms = rows[r].seconds * 1e3};
        parity_results results;
        run(suite, NULL, false, &results);
        size_t timed = 0;
        for (size_t i = 0; i < results.combo_count; i++) {
            const parity_combo_result *combo = &results.combos[i];
            if (combo->status == PARITY_COMBO_NOT_SUPPORTED) continue;
            timed++;
            cr_expect_eq(combo->sample_count, rows[r].samples, "%s: %s has %zu samples", rows[r].label, combo->id,
                         combo->sample_count);
        }
        cr_expect_gt(timed, 0, "%s", rows[r].label);
        cr_expect(strstr(results.context.timing_method, "adaptive: more timed steps while noise") != NULL, "%s",
                  results.context.timing_method);
        parity_results_release(&results);
        cleanup(suite);
    }
}

Test(run_library, the_veomni_rule_compares_with_the_first_mode_on_loss_and_grad_norm) {
    parity_suite *suite = suite_with_goldens("dtypes: [bf16]\ntolerance: veomni\nmodes:\n"
                                             "  - {name: reference, ops: {attn: eager}}\n"
                                             "  - {name: sdpa, ops: {attn: sdpa, ce: chunk_loss}}\n");
    parity_results results;
    run(suite, NULL, false, &results);
    cr_assert_eq(results.combo_count, 2);
    const parity_combo_result *reference = &results.combos[0], *sdpa = &results.combos[1];
    cr_expect(reference->is_eager_baseline);
    cr_assert_eq(sdpa->metric_count, 2, "loss and grad_norm only, as VeOmni");
    cr_expect_str_eq(sdpa->metrics[0].name, "loss");
    cr_expect_str_eq(sdpa->metrics[1].name, "grad_norm");
    const parity_metric *reference_loss = &reference->metrics[0];
    cr_expect_eq(sdpa->metrics[0].golden, reference_loss->value, "the first mode is the reference");
    cr_expect_float_eq(sdpa->metrics[0].tolerance, 1e-2 + 1e-2 * fabs(reference_loss->value), 1e-12);
    cr_expect_eq(sdpa->status, PARITY_COMBO_PASS);
    cr_expect_str_eq(results.context.tolerance_rule,
                     "veomni: |x - first mode| <= 1e-2 + 1e-2 * |first mode| on loss and grad_norm (first mode = the eager "
                     "combo, same dtype and device); under a parallel layout 0.1 + 0.1 * |single-device eager| "
                     "(VeOmni's test_e2e_parallel), the golden's eager of the same dtype");
    parity_results_release(&results);
    cleanup(suite);
}

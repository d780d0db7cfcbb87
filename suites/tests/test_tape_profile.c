// test_tape_profile.c: `profile_ops` (models/autograd/tape_profile.h) on the CPU, one row per tiny
// checkpoint: the profiled step leaves the measured step's results as they are (bitwise), every node
// of the profiled step lands in a row (forward calls = backward calls, per op and backend), and the
// times are non-negative with a positive total.
#include <criterion/criterion.h>
#include <string.h>

#include "harness/evaluate.h"
#include "upstream_compare.h"

static const char *const models[] = {"qwen3_tiny", "qwen3_moe_tiny", "qwen3_5_moe_tiny"};

static void evaluate(const char *model, bool profile, parity_evaluation *out) {
    char directory[256], batch[320];
    snprintf(directory, sizeof directory, "golden/upstream/%s", model);
    snprintf(batch, sizeof batch, "%s/batch.safetensors", directory);
    parity_evaluation_options options = {.checkpoint = directory, .batch_path = batch, .dtype = PARITY_F32,
                                         .device = PARITY_CPU, .eager_baseline = true, .profile_ops = profile};
    parity_error *error = parity_evaluate(&options, out);
    cr_assert_null(error, "%s: %s", model, error ? upstream_error_text(error) : "");
}

Test(tape_profile, profiled_step_counts_every_node_and_changes_no_result) {
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        parity_evaluation plain, profiled;
        evaluate(models[m], false, &plain);
        evaluate(models[m], true, &profiled);
        cr_expect(!plain.has_op_profile, "%s: no profile unless asked", models[m]);
        cr_assert(profiled.has_op_profile, "%s: profile asked for", models[m]);
        cr_expect(plain.step.loss == profiled.step.loss && plain.step.grad_norm == profiled.step.grad_norm,
                  "%s: profiling changed the measured step (loss %.17g vs %.17g)", models[m], plain.step.loss,
                  profiled.step.loss);
        const parity_tape_profile *profile = &profiled.op_profile;
        cr_expect(profile->count >= 5, "%s: only %zu (op, backend) rows", models[m], profile->count);
        double total = 0;
        bool saw_linear = false, saw_rms_norm = false;
        for (size_t i = 0; i < profile->count; i++) {
            const parity_op_time *row = &profile->rows[i];
            cr_expect(row->forward_calls > 0, "%s: %s/%s recorded no forward", models[m], row->op, row->backend);
            cr_expect_eq(row->forward_calls, row->backward_calls, "%s: %s/%s: %lld forward calls, %lld backward", models[m],
                         row->op, row->backend, (long long)row->forward_calls, (long long)row->backward_calls);
            cr_expect(row->forward_ms >= 0 && row->backward_ms >= 0, "%s: %s/%s negative time", models[m], row->op, row->backend);
            total += row->forward_ms + row->backward_ms;
            saw_linear |= strcmp(row->op, "linear") == 0 && strcmp(row->backend, "eager") == 0;
            saw_rms_norm |= strcmp(row->op, "rms_norm") == 0 && strcmp(row->backend, "eager") == 0;
        }
        cr_expect(saw_linear && saw_rms_norm, "%s: linear and rms_norm (eager) missing from the profile", models[m]);
        cr_expect(total > 0, "%s: total profiled time %g ms", models[m], total);
        parity_evaluation_release(&plain);
        parity_evaluation_release(&profiled);
    }
}

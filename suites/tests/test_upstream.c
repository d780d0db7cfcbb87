// test_upstream.c: the reference models against upstream HF transformers on the shipped tiny
// checkpoints (golden/upstream/). Each row is (case, batch kind, dtype, kernel selection); every
// row runs one forward + backward on the CPU and compares with what transformers computed:
//   fp64: loss, aux_loss, grad_norm <= 1e-6 relative; every parameter's gradient <= 1e-5 relative L2
//         against grads.safetensors (plain batch) or its norm against reference.json (packed batch);
//         logits <= 1e-6 relative L2 (plain batch, eager cross-entropy)
//   fp32: loss <= 1e-5, grad_norm <= 1e-4 relative to the fp64 truth
// Packed batches are compared with transformers run document by document (attention confined to
// each document, which is what cu_seqlens means).
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "golden/upstream_reference.h"
#include "harness/config/ops_override.h"
#include "harness/evaluate.h"
#include "models/checkpoint/safetensors.h"
#include "upstream_compare.h"

#define UPSTREAM "golden/upstream"

typedef struct upstream_row {
    const char *model;
    bool packed;
    parity_dtype dtype;
    const char *ops; // --ops string, "" for all-eager
} upstream_row;

static const char *const attention_models[] = {"llama3_tiny", "qwen2_tiny", "qwen3_tiny", "qwen3_moe_tiny", "deepseek_v3_tiny",
                                               "seed_oss_tiny"};
static const char *const selections[] = {"", "attn=sdpa", "ce=chunk_loss", "attn=sdpa,ce=chunk_loss"};

typedef struct row_report {
    double loss, aux, grad_norm, worst_parameter, logits;
    char worst_name[160];
} row_report;

static void check_row(const upstream_row *row, row_report *report) {
    memset(report, 0, sizeof *report);
    char directory[256], batch[320], label[256];
    snprintf(directory, sizeof directory, UPSTREAM "/%s", row->model);
    snprintf(batch, sizeof batch, "%s/%s.safetensors", directory, row->packed ? "batch_packed" : "batch");
    snprintf(label, sizeof label, "%s %s %s [%s]", row->model, row->packed ? "packed" : "plain", parity_dtype_name(row->dtype),
             row->ops[0] ? row->ops : "eager");
    parity_ops_settings settings = {0};
    if (row->ops[0]) cr_assert_null(parity_ops_override_parse(row->ops, &settings), "%s", label);
    bool logits = !row->packed && row->dtype == PARITY_F64 && !strstr(row->ops, "chunk_loss");
    bool gradients = !row->packed && row->dtype == PARITY_F64;
    parity_evaluation_options options = {.checkpoint = directory, .batch_path = batch, .dtype = row->dtype, .device = PARITY_CPU,
                                         .settings = &settings, .eager_baseline = true, .want_logits = logits,
                                         .keep_gradients = gradients};
    parity_evaluation evaluation;
    parity_error *error = parity_evaluate(&options, &evaluation);
    parity_ops_settings_free(&settings);
    cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");

    parity_step_result truth;
    error = parity_upstream_run_read(directory, row->packed ? "packed_fp64_eager" : "fp64_eager", &truth);
    cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");
    const parity_step_result *step = &evaluation.step;
    report->loss = upstream_relative(step->loss, truth.loss);
    report->grad_norm = upstream_relative(step->grad_norm, truth.grad_norm);
    cr_expect_eq(step->has_aux_loss, truth.has_aux_loss, "%s: aux loss presence differs from transformers", label);
    if (truth.has_aux_loss) report->aux = upstream_relative(step->aux_loss, truth.aux_loss);
    cr_expect_eq(step->parameter_count, truth.parameter_count, "%s: %zu parameters with gradients, transformers has %zu", label,
                 step->parameter_count, truth.parameter_count);

    if (row->dtype == PARITY_F64) {
        if (gradients) { // every gradient tensor against grads.safetensors
            parity_safetensors_file file;
            char path[320];
            snprintf(path, sizeof path, "%s/grads.safetensors", directory);
            cr_assert_null(parity_safetensors_open(path, &file));
            for (size_t i = 0; i < evaluation.gradients.count; i++) {
                parity_tensor reference;
                error = parity_safetensors_load(&file, evaluation.gradients.items[i].name, PARITY_F64, &reference);
                cr_assert_null(error, "%s: %s", label, error ? upstream_error_text(error) : "");
                double difference = upstream_relative_l2(&evaluation.gradients.items[i].value, &reference);
                if (difference > report->worst_parameter || isnan(difference)) {
                    report->worst_parameter = isnan(difference) ? INFINITY : difference;
                    snprintf(report->worst_name, sizeof report->worst_name, "%s", evaluation.gradients.items[i].name);
                }
                parity_tensor_release(&reference);
            }
            cr_expect_eq(evaluation.gradients.count, file.entry_count, "%s: %zu gradients, grads.safetensors has %zu", label,
                         evaluation.gradients.count, file.entry_count);
            parity_safetensors_close(&file);
        } else { // packed: the per-parameter norms transformers recorded
            for (size_t i = 0; i < step->parameter_count; i++) {
                double norm = parity_step_result_norm(&truth, step->parameter_names[i], i);
                cr_assert(!isnan(norm), "%s: transformers has no '%s'", label, step->parameter_names[i]);
                double difference = upstream_relative(step->parameter_grad_norms[i], norm);
                if (difference > report->worst_parameter) {
                    report->worst_parameter = difference;
                    snprintf(report->worst_name, sizeof report->worst_name, "%s", step->parameter_names[i]);
                }
            }
        }
        if (logits) {
            parity_safetensors_file file;
            char path[320];
            snprintf(path, sizeof path, "%s/logits.safetensors", directory);
            cr_assert_null(parity_safetensors_open(path, &file));
            parity_tensor reference;
            cr_assert_null(parity_safetensors_load(&file, "logits", PARITY_F64, &reference));
            report->logits = upstream_relative_l2(&step->logits, &reference);
            parity_tensor_release(&reference);
            parity_safetensors_close(&file);
        }
        cr_log_info("%-52s loss %.1e aux %.1e grad_norm %.1e worst gradient %.1e (%s) logits %.1e", label, report->loss,
                    report->aux, report->grad_norm, report->worst_parameter, report->worst_name, report->logits);
        cr_expect(report->loss <= 1e-6, "%s: loss relative error %.2e > 1e-6", label, report->loss);
        cr_expect(report->aux <= 1e-6, "%s: aux_loss relative error %.2e > 1e-6", label, report->aux);
        cr_expect(report->grad_norm <= 1e-6, "%s: grad_norm relative error %.2e > 1e-6", label, report->grad_norm);
        cr_expect(report->worst_parameter <= 1e-5, "%s: gradient of %s relative error %.2e > 1e-5", label, report->worst_name,
                  report->worst_parameter);
        cr_expect(report->logits <= 1e-6, "%s: logits relative error %.2e > 1e-6", label, report->logits);
    } else {
        cr_log_info("%-52s loss %.1e aux %.1e grad_norm %.1e", label, report->loss, report->aux, report->grad_norm);
        cr_expect(report->loss <= 1e-5, "%s: loss relative error %.2e > 1e-5", label, report->loss);
        cr_expect(report->aux <= 1e-5, "%s: aux_loss relative error %.2e > 1e-5", label, report->aux);
        cr_expect(report->grad_norm <= 1e-4, "%s: grad_norm relative error %.2e > 1e-4", label, report->grad_norm);
    }
    parity_step_result_release(&truth);
    parity_evaluation_release(&evaluation);
}

// One test per (model): every batch kind x dtype x selection of that model.
static void check_model(const char *model) {
    const parity_dtype dtypes[] = {PARITY_F64, PARITY_F32};
    int rows = 0;
    for (int packed = 0; packed < 2; packed++)
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
            for (size_t s = 0; s < sizeof selections / sizeof selections[0]; s++) {
                upstream_row row = {model, packed, dtypes[d], selections[s]};
                row_report report;
                check_row(&row, &report);
                rows++;
            }
    cr_assert_eq(rows, 16);
}

Test(upstream, llama3_tiny) { check_model("llama3_tiny"); }
Test(upstream, qwen2_tiny) { check_model("qwen2_tiny"); }
Test(upstream, qwen3_tiny) { check_model("qwen3_tiny"); }
Test(upstream, qwen3_moe_tiny) { check_model("qwen3_moe_tiny"); }
Test(upstream, deepseek_v3_tiny) { check_model("deepseek_v3_tiny"); }
Test(upstream, seed_oss_tiny) { check_model("seed_oss_tiny"); }

// Every attention-only case of golden/upstream has a test above.
Test(upstream, every_attention_case_is_covered) {
    cr_expect_eq(sizeof attention_models / sizeof attention_models[0], 6);
}

// results_sample.c: the sample results of results_sample.h, one table row per combo.
#include "results_sample.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct sample_row {
    const char *model;
    const char *fields;           // "attn=sdpa,ce=chunk_loss": the id's middle and the field choices
    parity_combo_status status;
    bool baseline;
    const char *reason;
    double error_scale;           // metric errors = error_scale * tolerance (before the row's twist)
    double median_ms;             // 0: not timed
    int twist;                    // 0 none, 1 the failing metric over tolerance, 2 a NaN loss
} sample_row;

static const sample_row rows[] = {
    {"qwen3_tiny", "attn=eager,ce=eager", PARITY_COMBO_PASS, true, "", 0.5, 12.0, 0},
    {"qwen3_tiny", "attn=sdpa,ce=eager", PARITY_COMBO_PASS, false, "", 0.21, 7.5, 0},
    {"qwen3_tiny", "attn=sdpa,ce=chunk_loss", PARITY_COMBO_PASS, false, "", 0.93, 6.1, 0},
    {"qwen3_tiny", "attn=sdpa,ce=perturbed_1e-3", PARITY_COMBO_FAIL, false, SAMPLE_FAILING_METRIC ": error 3.1x its tolerance", 0.3,
     6.0, 1},
    {"qwen3_tiny", "attn=flash_attention_3,ce=eager", PARITY_COMBO_NOT_SUPPORTED, false, "needs SM90+ (a CUDA device)", 0, 0, 0},
    {"qwen3_tiny", "attn=flash_attention_2,ce=eager", PARITY_COMBO_NOT_SUPPORTED, false, SAMPLE_ESCAPE_REASON, 0, 0, 0},
    {"qwen3_moe_tiny", "attn=eager,moe=eager,ce=eager", PARITY_COMBO_PASS, true, "", 0.5, 30.0, 0},
    {"qwen3_moe_tiny", "attn=sdpa,moe=fused_triton,ce=eager", PARITY_COMBO_PASS, false, "", 0.05, 18.0, 0},
    {"qwen3_moe_tiny", "attn=sdpa,moe=wrong_eps,ce=eager", PARITY_COMBO_FAIL, false, "NaN in model.layers.1.mlp.experts output", 0.4, 21.0,
     2},
    {"qwen3_moe_tiny", "attn=flash_attention_3,moe=eager,ce=eager", PARITY_COMBO_NOT_SUPPORTED, false, "needs SM90+ (a CUDA device)", 0, 0,
     0},
    {"qwen3_moe_tiny", "attn=sdpa,moe=quack,ce=eager", PARITY_COMBO_ERROR, false, "golden/smoke/qwen3_moe_tiny/packed.h5: truncated", 0, 0,
     0},
    {"qwen3_moe_tiny", "attn=eager,moe=eager,ce=liger_kernel", PARITY_COMBO_EXCLUDED, false, "liger CE needs a CUDA device (suite exclusion)",
     0, 0, 0},
};

static const char *const parameters[] = {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                                         "model.layers.0.mlp.up_proj.weight", "lm_head.weight"};

static void add_metric(parity_combo_result *combo, const char *name, double golden, double tolerance, double scale) {
    parity_metric metric = {0};
    snprintf(metric.name, sizeof metric.name, "%s", name);
    metric.golden = golden;
    metric.tolerance = tolerance;
    metric.error = scale * tolerance;
    metric.value = golden + metric.error;
    metric.ratio = metric.error / metric.tolerance;
    snprintf(metric.basis, sizeof metric.basis, "eager error");
    metric.pass = metric.ratio <= 1;
    cr_assert_null(parity_metric_add(combo, &metric));
}

static void add_metrics(parity_combo_result *combo, const sample_row *row, size_t index) {
    double scale = row->error_scale * (1.0 + 0.01 * (double)index);
    add_metric(combo, "loss", 10.3 + 0.1 * (double)index, 2.5e-3, scale);
    if (strstr(row->model, "moe")) add_metric(combo, "aux_loss", 1.02, 4e-4, scale * 0.7);
    add_metric(combo, "grad_norm", 3.75, 1.2e-2, scale * 0.9);
    for (size_t p = 0; p < sizeof parameters / sizeof parameters[0]; p++) { // as parity run lists them: norm, sketch, cosine
        char name[192];
        snprintf(name, sizeof name, "grad_norm:%s", parameters[p]);
        bool failing = row->twist == 1 && strcmp(name, SAMPLE_FAILING_METRIC) == 0;
        add_metric(combo, name, 0.5 + 0.25 * (double)p, 3e-3, failing ? 3.1 : scale * (0.4 + 0.15 * (double)p));
        for (int j = 0; j < 4; j++) {
            snprintf(name, sizeof name, "grad_sketch:%s[%d]", parameters[p], j);
            failing = row->twist == 1 && strcmp(name, SAMPLE_FAILING_SKETCH) == 0;
            add_metric(combo, name, (j % 2 ? -0.3 : 0.45) * (1.0 + (double)p), 4e-3, failing ? 2.0 : scale * (0.3 + 0.1 * (double)j));
        }
        snprintf(name, sizeof name, "grad_cosine:%s", parameters[p]);
        add_metric(combo, name, 1.0, 7.8125e-3, scale * 0.2);
    }
    if (row->twist == 2) { // a NaN loss: NaN value, error and ratio
        parity_metric *loss = &combo->metrics[0];
        loss->value = NAN;
        loss->error = NAN;
        loss->ratio = NAN;
        loss->pass = false;
    }
}

static void add_timing(parity_combo_result *combo, const sample_row *row, size_t index) {
    if (row->median_ms <= 0) {
        combo->median_ms = NAN;
        combo->noise = NAN;
        return;
    }
    double samples[7];
    for (int s = 0; s < 7; s++) samples[s] = row->median_ms * (1.0 + 0.004 * (s - 3)) + 1e-9 * (double)index;
    cr_assert_null(parity_combo_set_samples(combo, samples, 7));
    combo->warmup_count = 2;
    combo->median_ms = samples[3];
    combo->noise = (samples[6] - samples[0]) / samples[3];
    combo->peak_memory_bytes = (int64_t)(row->median_ms * 3.3e6);
    combo->tokens = 256;
}

static void parse_fields(parity_combo_result *combo, const char *fields) {
    char copy[256];
    snprintf(copy, sizeof copy, "%s", fields);
    for (char *saved = NULL, *pair = strtok_r(copy, ",", &saved); pair; pair = strtok_r(NULL, ",", &saved)) {
        char *equals = strchr(pair, '=');
        cr_assert_not_null(equals);
        *equals = '\0';
        parity_field_choice *choice = &combo->fields[combo->field_count++];
        snprintf(choice->field, sizeof choice->field, "%s", pair);
        snprintf(choice->value, sizeof choice->value, "%s", equals + 1);
    }
}

void sample_results_build(parity_results *results) {
    memset(results, 0, sizeof *results);
    parity_results_context *context = &results->context;
    context->schema_version = PARITY_RESULTS_SCHEMA_VERSION;
    snprintf(context->suite, sizeof context->suite, "smoke");
    snprintf(context->git_sha, sizeof context->git_sha, "ed95add0123456789abcdef0123456789abcdef0");
    snprintf(context->host, sizeof context->host, "ci-runner-7");
    snprintf(context->device, sizeof context->device, "cpu (16 cores)");
    snprintf(context->libraries, sizeof context->libraries, "OpenBLAS 0.3.21, HDF5 1.10.8, cJSON 1.7.15");
    snprintf(context->command, sizeof context->command, "parity run --suite smoke --device cpu --out reports/out/x");
    snprintf(context->started, sizeof context->started, "2025-01-02T03:04:05Z");
    snprintf(context->finished, sizeof context->finished, "2025-01-02T03:05:15Z");
    snprintf(context->tolerance_rule, sizeof context->tolerance_rule,
             "parity: |x - golden| <= max(k * |eager_bf16 - golden|, floor); k = 2 loss-like, 3 gradients");
    snprintf(context->timing_method, sizeof context->timing_method, "wall clock, 2 warm-up, median of 7; noise = (max - min) / median");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const sample_row *row = &rows[i];
        parity_combo_result *combo = parity_results_add_combo(results);
        cr_assert_not_null(combo);
        snprintf(combo->id, sizeof combo->id, "%s/%s/bf16/cpu", row->model, row->fields);
        snprintf(combo->suite, sizeof combo->suite, "smoke");
        snprintf(combo->model, sizeof combo->model, "%s", row->model);
        snprintf(combo->batch, sizeof combo->batch, "packed_2x128");
        snprintf(combo->dtype, sizeof combo->dtype, "bf16");
        snprintf(combo->device, sizeof combo->device, "cpu");
        parse_fields(combo, row->fields);
        combo->is_eager_baseline = row->baseline;
        combo->status = row->status;
        snprintf(combo->reason, sizeof combo->reason, "%s", row->reason);
        if (row->status == PARITY_COMBO_PASS || row->status == PARITY_COMBO_FAIL) add_metrics(combo, row, i);
        add_timing(combo, row, i);
    }
}

// ---- a large crafted run ----

static const char *const large_attn[] = {"eager", "sdpa", "flash_attention_2", "flash_attention_3", "flash_attention_4",
                                         "flex_attention", "native-sparse", "npu", "ring", "ulysses"};
static const char *const large_ce[] = {"eager", "chunk_loss", "liger_kernel", "npu", "fused_1", "fused_2", "fused_3",
                                       "fused_4", "fused_5", "fused_6", "fused_7", "fused_8", "fused_9"};

void sample_results_build_large(parity_results *results, size_t combo_count, size_t metric_count) {
    memset(results, 0, sizeof *results);
    results->context.schema_version = PARITY_RESULTS_SCHEMA_VERSION;
    snprintf(results->context.suite, sizeof results->context.suite, "crafted");
    snprintf(results->context.device, sizeof results->context.device, "cpu");
    enum { PER_MODEL = 130 };
    for (size_t i = 0; i < combo_count; i++) {
        size_t within = i % PER_MODEL;
        const char *attn = large_attn[within % 10], *ce = large_ce[(within / 10) % 13];
        parity_combo_result *combo = parity_results_add_combo(results);
        cr_assert_not_null(combo);
        snprintf(combo->model, sizeof combo->model, "model_%zu_tiny", i / PER_MODEL);
        snprintf(combo->id, sizeof combo->id, "%s/packed/attn=%s,ce=%s/bf16/cpu", combo->model, attn, ce);
        snprintf(combo->suite, sizeof combo->suite, "crafted");
        snprintf(combo->batch, sizeof combo->batch, "packed");
        snprintf(combo->dtype, sizeof combo->dtype, "bf16");
        snprintf(combo->device, sizeof combo->device, "cpu");
        snprintf(combo->fields[0].field, sizeof combo->fields[0].field, "attn_implementation");
        snprintf(combo->fields[0].value, sizeof combo->fields[0].value, "%s", attn);
        snprintf(combo->fields[1].field, sizeof combo->fields[1].field, "cross_entropy_loss_implementation");
        snprintf(combo->fields[1].value, sizeof combo->fields[1].value, "%s", ce);
        combo->field_count = 2;
        combo->is_eager_baseline = within == 0;
        bool failing = within % 50 == 7;
        combo->status = failing ? PARITY_COMBO_FAIL : PARITY_COMBO_PASS;
        if (!combo->is_eager_baseline && within % 13 == 5) { // not supported, no metrics, not timed
            combo->status = PARITY_COMBO_NOT_SUPPORTED;
            snprintf(combo->reason, sizeof combo->reason, "needs a CUDA device");
            combo->median_ms = NAN;
            combo->noise = NAN;
            continue;
        }
        for (size_t m = 0; m < metric_count; m++) {
            char name[192];
            if (m == 0) snprintf(name, sizeof name, "loss");
            else snprintf(name, sizeof name, "grad_sketch:model.layers.%zu.mlp.up_proj.weight[%zu]", m / 4, m % 4);
            add_metric(combo, name, 1.0 + 0.001 * (double)m, 1e-3, failing ? 2.0 + 0.01 * (double)m : 0.1 + 0.4 * (double)((i + m) % 7) / 7);
        }
        if (failing) snprintf(combo->reason, sizeof combo->reason, "loss: error 2x its tolerance");
        double samples[5];
        double median = 10.0 * (1.0 + 0.05 * (double)(within % 10));
        for (int s = 0; s < 5; s++) samples[s] = median * (1.0 + 0.01 * (s - 2));
        cr_assert_null(parity_combo_set_samples(combo, samples, 5));
        combo->median_ms = median;
        combo->noise = 0.04;
        combo->tokens = 512;
        combo->peak_memory_bytes = 3 << 20;
    }
}

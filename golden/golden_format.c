// golden_format.c: parity_golden_describe, the readable view of a golden that `parity golden show`
// prints: where it came from, what was run, the expected fp64 values, and how far eager lands from
// them in each lower precision (the error the tolerance rule scales), overall and per parameter (its
// norm's relative error and the cosine of its sketch with the fp64 one).
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "golden/golden.h"

// |value - reference| / |reference|; 0 when both agree exactly, inf when only the reference is 0.
static double relative_error(double value, double reference) {
    double error = fabs(value - reference);
    if (error == 0) return 0;
    return reference == 0 ? INFINITY : error / fabs(reference);
}

static void print_row(FILE *stream, const char *label, const char *value) { fprintf(stream, "  %-16s %s\n", label, value); }

// "qwen3, hidden_size 64, num_hidden_layers 2, ..." from the config text (the keys that are present).
static void describe_config(FILE *stream, const char *text) {
    static const char *keys[] = {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                                 "num_key_value_heads", "head_dim", "vocab_size", "num_experts", "n_routed_experts",
                                 "num_experts_per_tok", "max_position_embeddings"};
    fprintf(stream, "  %-16s %zu bytes of config.json", "config", text ? strlen(text) : 0);
    cJSON *config = text ? cJSON_Parse(text) : NULL;
    const char *separator = ": ";
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(config, keys[i]);
        if (!cJSON_IsNumber(item)) continue;
        fprintf(stream, "%s%s %.0f", separator, keys[i], item->valuedouble);
        separator = ", ";
    }
    cJSON_Delete(config);
    fputc('\n', stream);
}

// Batch shape, tokens that count in the loss (labels != -100) and, for packed rows, documents.
static void describe_batch(FILE *stream, const parity_golden *golden) {
    char shape[64], line[256];
    const parity_tensor *input_ids = &golden->input_ids;
    snprintf(line, sizeof line, "%s int64", parity_tensor_shape_string(input_ids, shape, sizeof shape));
    print_row(stream, "input_ids", line);
    int64_t counted = 0;
    for (int64_t i = 0; i < golden->labels.numel; i++) counted += parity_tensor_get(&golden->labels, i) != -100;
    snprintf(line, sizeof line, "%s int64, %lld of %lld tokens counted in the loss (label != -100)",
             parity_tensor_shape_string(&golden->labels, shape, sizeof shape), (long long)counted, (long long)golden->labels.numel);
    print_row(stream, "labels", line);
    if (golden->position_ids.ndim > 0 && golden->position_ids.numel > 0) {
        int64_t documents = 0;
        for (int64_t i = 0; i < golden->position_ids.numel; i++) documents += parity_tensor_get(&golden->position_ids, i) == 0;
        snprintf(line, sizeof line, "%s int64, %lld documents (positions restarting at 0)",
                 parity_tensor_shape_string(&golden->position_ids, shape, sizeof shape), (long long)documents);
        print_row(stream, "position_ids", line);
    } else print_row(stream, "position_ids", "none (each row is one sequence, positions 0..T-1)");
}

static void print_value(FILE *stream, const char *label, double value, bool present, const char *absent) {
    if (!present) fprintf(stream, "  %-16s %s\n", label, absent);
    else fprintf(stream, "  %-16s %.17g\n", label, value);
}

static void describe_sample(FILE *stream, const parity_tensor *sample) {
    if (sample->ndim == 0 || sample->numel == 0) return;
    char description[96];
    fprintf(stream, "  %-16s %s, first values", "logits_sample", parity_tensor_describe(sample, description, sizeof description));
    for (int64_t i = 0; i < sample->numel && i < 4; i++) fprintf(stream, " %.6g", parity_tensor_get(sample, i));
    fputc('\n', stream);
}

// One line of the per-dtype block: value, |eager - fp64|, relative.
static void print_error_row(FILE *stream, const char *label, double value, double reference) {
    if (isnan(value) || isnan(reference)) {
        fprintf(stream, "    %-14s %-24s %-14s %s\n", label, isnan(value) ? "not computed" : "", "-", "-");
        return;
    }
    char text[32];
    snprintf(text, sizeof text, "%.17g", value);
    fprintf(stream, "    %-14s %-24s %-14.3e %.3e\n", label, text, fabs(value - reference), relative_error(value, reference));
}

static void describe_precision(FILE *stream, const parity_golden_precision *precision, const parity_step_result *expected) {
    const parity_step_result *eager = &precision->eager;
    fprintf(stream, "  eager %s\n", precision->dtype);
    fprintf(stream, "    %-14s %-24s %-14s %s\n", "", "value", "|eager - fp64|", "relative");
    print_error_row(stream, "loss", eager->loss, expected->loss);
    if (expected->has_aux_loss) print_error_row(stream, "aux_loss", eager->aux_loss, expected->aux_loss);
    print_error_row(stream, "grad_norm", eager->grad_norm, expected->grad_norm);
    print_error_row(stream, "logits_sum", eager->logits_sum, expected->logits_sum);
    double worst = 0;
    size_t worst_index = 0;
    for (size_t i = 0; i < eager->parameter_count && i < expected->parameter_count; i++) {
        double relative = relative_error(eager->parameter_grad_norms[i], expected->parameter_grad_norms[i]);
        if (relative > worst) worst = relative, worst_index = i;
    }
    if (eager->parameter_count > 0)
        fprintf(stream, "    %-14s %.3e relative, %s\n", "worst norm", worst, eager->parameter_names[worst_index]);
    double lowest = INFINITY;
    size_t lowest_index = 0;
    for (size_t i = 0; i < eager->parameter_count && i < expected->parameter_count; i++) {
        double cosine = parity_sketch_cosine(eager->parameter_grad_sketches + i * PARITY_SKETCH_K,
                                             expected->parameter_grad_sketches + i * PARITY_SKETCH_K);
        if (cosine < lowest) lowest = cosine, lowest_index = i;
    }
    if (eager->parameter_count > 0)
        fprintf(stream, "    %-14s %.17g (1 - cosine %.3e), %s\n", "lowest cosine", lowest, 1 - lowest,
                eager->parameter_names[lowest_index]);
    if (expected->has_loss_input && eager->has_loss_input) {
        print_error_row(stream, "loss_input", eager->loss_input_grad_norm, expected->loss_input_grad_norm);
        double cosine = parity_sketch_cosine(eager->loss_input_grad_sketch, expected->loss_input_grad_sketch);
        fprintf(stream, "    %-14s %.17g (1 - cosine %.3e)\n", "loss_input cos", cosine, 1 - cosine);
    }
    if (eager->logits.ndim > 0 && eager->logits.numel > 0) {
        char description[96];
        fprintf(stream, "    %-14s %s\n", "logits_sample", parity_tensor_describe(&eager->logits, description, sizeof description));
    }
}

// The per-parameter table: fp64 norm, then each precision's relative error.
static void describe_norms(FILE *stream, const parity_golden *golden) {
    const parity_step_result *expected = &golden->expected;
    int width = 9; // "parameter"
    for (size_t i = 0; i < expected->parameter_count; i++) {
        int length = (int)strlen(expected->parameter_names[i]);
        if (length > width) width = length;
    }
    fprintf(stream, "\nper-parameter gradient norms (%zu)\n", expected->parameter_count);
    fprintf(stream, golden->precision_count ? "  %-*s  %-24s" : "  %-*s  %s", width, "parameter", "fp64 norm");
    for (size_t p = 0; p < golden->precision_count; p++) {
        char header[32];
        snprintf(header, sizeof header, "%s rel. error", golden->precisions[p].dtype);
        fprintf(stream, p + 1 < golden->precision_count ? "  %-15s" : "  %s", header);
    }
    fputc('\n', stream);
    for (size_t i = 0; i < expected->parameter_count; i++) {
        char value[32];
        snprintf(value, sizeof value, "%.17g", expected->parameter_grad_norms[i]);
        // (no trailing blanks after the last column)
        fprintf(stream, golden->precision_count ? "  %-*s  %-24s" : "  %-*s  %s", width, expected->parameter_names[i], value);
        for (size_t p = 0; p < golden->precision_count; p++) {
            const parity_step_result *eager = &golden->precisions[p].eager;
            char error[32] = "-";
            if (i < eager->parameter_count)
                snprintf(error, sizeof error, "%.3e", relative_error(eager->parameter_grad_norms[i], expected->parameter_grad_norms[i]));
            fprintf(stream, p + 1 < golden->precision_count ? "  %-15s" : "  %s", error);
        }
        fputc('\n', stream);
    }
}

void parity_golden_describe(const parity_golden *golden, FILE *stream) {
    fprintf(stream, "parity golden, schema_version %d\n", golden->schema_version);
    fprintf(stream, "\nprovenance\n");
    print_row(stream, "git sha", golden->git_sha);
    print_row(stream, "created", golden->created);
    print_row(stream, "host", golden->host);
    print_row(stream, "device", golden->device);
    print_row(stream, "compiler", golden->compiler);
    print_row(stream, "libraries", golden->libraries);
    print_row(stream, "command", golden->command);
    if (golden->migrated[0]) print_row(stream, "migrated", golden->migrated);

    fprintf(stream, "\nrun\n");
    print_row(stream, "suite", golden->suite);
    char line[256];
    snprintf(line, sizeof line, "%s (model_type %s)", golden->model, golden->model_type);
    print_row(stream, "model", line);
    print_row(stream, "case", golden->case_name);
    describe_config(stream, golden->model_config_json);
    print_row(stream, "weights", golden->weight_source);
    print_row(stream, "weight sha256", golden->weight_sha256);
    snprintf(line, sizeof line, "%llu", (unsigned long long)golden->weight_seed);
    print_row(stream, "weight seed", line);
    print_row(stream, "batch", golden->batch_source);
    print_row(stream, "batch sha256", golden->batch_sha256);
    describe_batch(stream, golden);

    const parity_step_result *expected = &golden->expected;
    fprintf(stream, "\nexpected (eager, fp64)\n");
    print_value(stream, "loss", expected->loss, true, "");
    print_value(stream, "aux_loss", expected->aux_loss, expected->has_aux_loss, "none (the model has no auxiliary loss)");
    print_value(stream, "grad_norm", expected->grad_norm, true, "");
    print_value(stream, "logits_sum", expected->logits_sum, !isnan(expected->logits_sum), "not computed");
    print_value(stream, "loss_input norm", expected->loss_input_grad_norm, expected->has_loss_input,
                "none (the model exposes no loss input)");
    if (expected->has_loss_input) {
        fprintf(stream, "  %-16s", "  (its sketch)");
        for (int j = 0; j < PARITY_SKETCH_K; j++) fprintf(stream, " %.17g", expected->loss_input_grad_sketch[j]);
        fputc('\n', stream);
    }
    describe_sample(stream, &expected->logits);

    fprintf(stream, "\neager in lower precision: error against fp64 (the tolerance rule scales it)\n");
    if (golden->precision_count == 0) fprintf(stream, "  none recorded\n");
    for (size_t p = 0; p < golden->precision_count; p++) describe_precision(stream, &golden->precisions[p], expected);
    describe_norms(stream, golden);
}

// compare_json.c: the JSON of compare_json.h (cJSON; numbers in the shortest form that reads back).
#include "reports/compare/compare_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/file.h"
#include "reports/report_analysis.h"

static void add_number(cJSON *object, const char *name, double value) {
    if (!isfinite(value)) {
        cJSON_AddNullToObject(object, name);
        return;
    }
    char text[40];
    cJSON_AddItemToObject(object, name, cJSON_CreateRaw(parity_report_format_exact(text, sizeof text, value)));
}

static void add_count(cJSON *object, const char *name, size_t value) { cJSON_AddNumberToObject(object, name, (double)value); }

static void add_status(cJSON *object, const char *name, bool present, parity_combo_status status) {
    if (present) cJSON_AddStringToObject(object, name, parity_combo_status_name(status));
    else cJSON_AddNullToObject(object, name);
}

static cJSON *run_json(const char *label, const parity_results_context *context) {
    cJSON *object = cJSON_CreateObject();
    cJSON_AddStringToObject(object, "label", label);
    cJSON_AddStringToObject(object, "suite", context->suite);
    cJSON_AddStringToObject(object, "git_sha", context->git_sha);
    cJSON_AddStringToObject(object, "host", context->host);
    cJSON_AddStringToObject(object, "device", context->device);
    cJSON_AddStringToObject(object, "started", context->started);
    return object;
}

static cJSON *counts_json(const parity_comparison_counts *counts) {
    cJSON *object = cJSON_CreateObject();
    add_count(object, "combos", counts->combos);
    add_count(object, "new_failures", counts->new_failures);
    add_count(object, "regressions", counts->regressions);
    add_count(object, "fixed", counts->fixed);
    add_count(object, "speedups", counts->speedups);
    add_count(object, "support_changed", counts->support_changed);
    add_count(object, "failure_changed", counts->failure_changed);
    add_count(object, "only_base", counts->only_base);
    add_count(object, "only_new", counts->only_new);
    add_count(object, "ratio_drifts", counts->ratio_drifts);
    add_count(object, "timed", counts->timed);
    add_count(object, "unchanged", counts->unchanged);
    return object;
}

static cJSON *combo_json(const parity_combo_comparison *combo) {
    cJSON *object = cJSON_CreateObject();
    cJSON_AddStringToObject(object, "id", combo->id);
    cJSON_AddBoolToObject(object, "in_base", combo->in_base);
    cJSON_AddBoolToObject(object, "in_new", combo->in_new);
    add_status(object, "base_status", combo->in_base, combo->base_status);
    add_status(object, "new_status", combo->in_new, combo->new_status);
    cJSON_AddStringToObject(object, "status_change", parity_status_change_name(combo->status_change));
    cJSON_AddStringToObject(object, "reason", combo->reason);
    cJSON *ratio = cJSON_AddObjectToObject(object, "ratio");
    add_number(ratio, "base", combo->base_has_metrics ? combo->base_ratio : NAN);
    add_number(ratio, "new", combo->new_has_metrics ? combo->new_ratio : NAN);
    cJSON_AddStringToObject(ratio, "metric", combo->metric);
    cJSON_AddBoolToObject(ratio, "drift", combo->ratio_drift);
    cJSON *time = cJSON_AddObjectToObject(object, "time");
    cJSON_AddStringToObject(time, "verdict", parity_time_verdict_name(combo->time.verdict));
    add_number(time, "base_ms", combo->time.base_ms);
    add_number(time, "new_ms", combo->time.new_ms);
    add_number(time, "change", combo->time.change);
    add_number(time, "base_noise", combo->time.base_noise);
    add_number(time, "new_noise", combo->time.new_noise);
    add_number(time, "combined", combo->time.combined);
    add_number(time, "limit", combo->time.limit);
    cJSON_AddBoolToObject(object, "notable", parity_combo_comparison_notable(combo));
    return object;
}

parity_error *parity_compare_json(const parity_comparison *comparison, const char *base_label, const char *new_label, char **out) {
    *out = NULL;
    const parity_comparison_counts *counts = &comparison->counts;
    cJSON *root = cJSON_CreateObject();
    if (!root) return PARITY_ERROR(PARITY_ERROR_MEMORY, "comparison JSON: out of memory");
    bool failed = parity_comparison_failed(comparison);
    char verdict[1024];
    cJSON_AddStringToObject(root, "verdict", failed ? "regression" : counts->unchanged == counts->combos ? "no_change" : "ok");
    cJSON_AddStringToObject(root, "summary", parity_comparison_verdict(comparison, verdict, sizeof verdict));
    cJSON_AddNumberToObject(root, "exit_status", failed ? 1 : 0);
    cJSON *options = cJSON_AddObjectToObject(root, "options");
    add_number(options, "threshold", comparison->options.threshold);
    add_number(options, "noise_factor", comparison->options.noise_factor);
    add_number(options, "ratio_drift", comparison->options.ratio_drift);
    cJSON_AddItemToObject(root, "base", run_json(base_label, &comparison->base_context));
    cJSON_AddItemToObject(root, "new", run_json(new_label, &comparison->new_context));
    cJSON_AddItemToObject(root, "counts", counts_json(counts));
    cJSON *run = cJSON_AddObjectToObject(root, "run");
    add_count(run, "timed", comparison->run.timed);
    add_number(run, "median_change", comparison->run.change);
    add_number(run, "spread", comparison->run.spread);
    cJSON_AddStringToObject(run, "verdict", parity_time_verdict_name(comparison->run.verdict));
    cJSON *combos = cJSON_AddArrayToObject(root, "combos");
    for (size_t i = 0; combos && i < comparison->combo_count; i++) cJSON_AddItemToArray(combos, combo_json(&comparison->combos[i]));
    char *text = combos ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return PARITY_ERROR(PARITY_ERROR_MEMORY, "comparison JSON: out of memory");
    *out = text;
    return NULL;
}

parity_error *parity_compare_write_json(const char *path, const parity_comparison *comparison, const char *base_label,
                                        const char *new_label) {
    char *text;
    PARITY_TRY(parity_compare_json(comparison, base_label, new_label, &text));
    size_t length = strlen(text);
    text[length] = '\n'; // cJSON_Print ends without one; the NUL is replaced and the length kept
    parity_error *error = parity_write_file_atomic(path, text, length + 1, true);
    free(text);
    return error;
}

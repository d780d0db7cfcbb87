// report_analysis.c: baselines, relative times, worst metrics, reason groups and formatting shared by
// the reports.
#include "reports/report_analysis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool parity_report_same_group(const parity_combo_result *a, const parity_combo_result *b) {
    return strcmp(a->model, b->model) == 0 && strcmp(a->batch, b->batch) == 0 && strcmp(a->dtype, b->dtype) == 0 &&
           strcmp(a->device, b->device) == 0;
}

const parity_combo_result *parity_report_baseline(const parity_results *results, const parity_combo_result *combo) {
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *candidate = &results->combos[i];
        if (candidate->is_eager_baseline && parity_report_same_group(candidate, combo)) return candidate;
    }
    return NULL;
}

bool parity_report_is_timed(const parity_combo_result *combo) { return isfinite(combo->median_ms) && combo->median_ms > 0; }

double parity_report_relative_time(const parity_results *results, const parity_combo_result *combo) {
    const parity_combo_result *baseline = parity_report_baseline(results, combo);
    if (!baseline || !parity_report_is_timed(baseline) || !parity_report_is_timed(combo)) return NAN;
    return combo->median_ms / baseline->median_ms;
}

double parity_report_tokens_per_second(const parity_combo_result *combo) {
    if (!parity_report_is_timed(combo) || combo->tokens <= 0) return NAN;
    return (double)combo->tokens / (combo->median_ms / 1000.0);
}

static double known(double noise) { return isfinite(noise) && noise > 0 ? noise : 0; }

double parity_report_combined_noise(const parity_combo_result *a, const parity_combo_result *b) {
    return sqrt(known(a->noise) * known(a->noise) + known(b->noise) * known(b->noise));
}

bool parity_report_within_noise(double relative, double combined_noise) {
    return isfinite(relative) && fabs(relative - 1) <= known(combined_noise);
}

parity_report_fastest parity_report_fastest_in_group(const parity_results *results, const parity_combo_result *member) {
    parity_report_fastest out = {0};
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (!parity_report_same_group(combo, member) || combo->status != PARITY_COMBO_PASS || !parity_report_is_timed(combo)) continue;
        if (!out.fastest || combo->median_ms < out.fastest->median_ms) {
            out.runner_up = out.fastest;
            out.fastest = combo;
        } else if (!out.runner_up || combo->median_ms < out.runner_up->median_ms) {
            out.runner_up = combo;
        }
    }
    if (!out.fastest) return out;
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (combo == out.fastest || !parity_report_same_group(combo, member) || combo->status != PARITY_COMBO_PASS ||
            !parity_report_is_timed(combo))
            continue;
        out.tied += parity_report_within_noise(combo->median_ms / out.fastest->median_ms, parity_report_combined_noise(combo, out.fastest));
    }
    out.significant = !out.runner_up || !parity_report_within_noise(out.runner_up->median_ms / out.fastest->median_ms,
                                                                    parity_report_combined_noise(out.runner_up, out.fastest));
    return out;
}

double parity_report_ratio_rank(double ratio) { return isnan(ratio) ? INFINITY : ratio; }

const parity_metric *parity_report_worst_metric(const parity_combo_result *combo, const char *prefix) {
    const parity_metric *worst = NULL;
    size_t prefix_length = prefix ? strlen(prefix) : 0;
    for (size_t i = 0; i < combo->metric_count; i++) {
        const parity_metric *metric = &combo->metrics[i];
        if (prefix && strncmp(metric->name, prefix, prefix_length) != 0) continue;
        if (!worst || parity_report_ratio_rank(metric->ratio) > parity_report_ratio_rank(worst->ratio)) worst = metric;
    }
    return worst;
}

const parity_metric *parity_report_find_metric(const parity_combo_result *combo, const char *name) {
    for (size_t i = 0; i < combo->metric_count; i++)
        if (strcmp(combo->metrics[i].name, name) == 0) return &combo->metrics[i];
    return NULL;
}

static const char *const heatmap_columns[PARITY_REPORT_HEATMAP_COLUMNS] = {"loss",           "aux_loss",     "grad_norm",
                                                                          "worst parameter", "worst sketch", "worst cosine"};
static const char *const heatmap_prefixes[PARITY_REPORT_HEATMAP_COLUMNS] = {
    NULL, NULL, NULL, PARITY_REPORT_PARAMETER_PREFIX, PARITY_REPORT_SKETCH_PREFIX, PARITY_REPORT_COSINE_PREFIX};

const char *parity_report_heatmap_column(int column) {
    return column >= 0 && column < PARITY_REPORT_HEATMAP_COLUMNS ? heatmap_columns[column] : "?";
}

const parity_metric *parity_report_heatmap_metric(const parity_combo_result *combo, int column) {
    if (column < 0 || column >= PARITY_REPORT_HEATMAP_COLUMNS) return NULL;
    if (heatmap_prefixes[column]) return parity_report_worst_metric(combo, heatmap_prefixes[column]);
    return parity_report_find_metric(combo, heatmap_columns[column]);
}

// The length of "grad_sketch:<name>" in a component's metric name (up to its last '['), 0 if it is none.
static size_t sketch_stem(const char *name) {
    if (strncmp(name, PARITY_REPORT_SKETCH_PREFIX, strlen(PARITY_REPORT_SKETCH_PREFIX)) != 0) return 0;
    const char *bracket = strrchr(name, '[');
    return bracket && bracket[strlen(bracket) - 1] == ']' ? (size_t)(bracket - name) : 0;
}

size_t parity_report_sketch_run(const parity_combo_result *combo, size_t index) {
    if (index >= combo->metric_count) return 0;
    size_t stem = sketch_stem(combo->metrics[index].name), run = 1;
    if (!stem) return 1;
    while (index + run < combo->metric_count && sketch_stem(combo->metrics[index + run].name) == stem &&
           strncmp(combo->metrics[index + run].name, combo->metrics[index].name, stem) == 0)
        run++;
    return run;
}

bool parity_report_same_reason(const parity_combo_result *a, const parity_combo_result *b) {
    return a->status == b->status && strcmp(a->reason, b->reason) == 0;
}

size_t parity_report_next_reason_group(const parity_results *results, parity_combo_status status, size_t from) {
    for (size_t i = from; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (combo->status != status) continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) seen = parity_report_same_reason(&results->combos[j], combo);
        if (!seen) return i;
    }
    return results->combo_count;
}

size_t parity_report_reason_group_size(const parity_results *results, size_t leader) {
    size_t count = 0;
    for (size_t j = leader; j < results->combo_count; j++)
        count += parity_report_same_reason(&results->combos[leader], &results->combos[j]);
    return count;
}

void parity_report_short_label(const parity_combo_result *combo, char *label, size_t size) {
    if (combo->is_eager_baseline) {
        snprintf(label, size, "%.40s/%.40s/%.15s/%.30s: eager", combo->model, combo->batch, combo->dtype, combo->device);
        return;
    }
    const char *fields = NULL;
    for (const char *segment = combo->id; segment && *segment; segment = strchr(segment, '/') ? strchr(segment, '/') + 1 : NULL) {
        const char *slash = strchr(segment, '/'), *equals = strchr(segment, '=');
        if (equals && (!slash || equals < slash)) {
            fields = segment;
            break;
        }
    }
    size_t used = 0;
    label[0] = '\0';
    for (const char *pair = fields; pair && *pair && *pair != '/';) {
        size_t length = strcspn(pair, ",/");
        const char *equals = memchr(pair, '=', length);
        bool eager = equals && (size_t)(pair + length - equals - 1) == 5 && strncmp(equals + 1, "eager", 5) == 0;
        if (!eager && used + length + 2 < size) {
            used += (size_t)snprintf(label + used, size - used, "%s%.*s", used ? "," : "", (int)length, pair);
        }
        pair += length;
        if (*pair == ',') pair++;
    }
    if (!used) snprintf(label, size, "%.150s", combo->id);
}

const char *parity_report_format(char *buffer, size_t size, const char *format, double value) {
    if (isnan(value)) snprintf(buffer, size, "NaN");
    else if (isinf(value)) snprintf(buffer, size, value > 0 ? "inf" : "-inf");
    else snprintf(buffer, size, format, value);
    return buffer;
}

const char *parity_report_format_bytes(char *buffer, size_t size, int64_t bytes) {
    if (bytes <= 0) snprintf(buffer, size, "-");
    else if (bytes < 1024) snprintf(buffer, size, "%lld B", (long long)bytes);
    else if (bytes < 1024 * 1024) snprintf(buffer, size, "%.1f KiB", (double)bytes / 1024.0);
    else if (bytes < 1024LL * 1024 * 1024) snprintf(buffer, size, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
    else snprintf(buffer, size, "%.2f GiB", (double)bytes / (1024.0 * 1024.0 * 1024.0));
    return buffer;
}

const char *parity_report_status_label(parity_combo_status status) {
    switch (status) {
    case PARITY_COMBO_PASS: return "pass";
    case PARITY_COMBO_FAIL: return "FAIL";
    case PARITY_COMBO_NOT_SUPPORTED: return "not supported";
    case PARITY_COMBO_ERROR: return "error";
    case PARITY_COMBO_EXCLUDED: return "excluded";
    }
    return "unknown";
}

const char *parity_report_format_exact(char *buffer, size_t size, double value) {
    for (int precision = 15; precision <= 17; precision++) {
        snprintf(buffer, size, "%.*g", precision, value);
        if (strtod(buffer, NULL) == value) break;
    }
    return buffer;
}

// markdown.c: summary.md (GitHub-flavored Markdown). Sections:
//   header (suite, git sha, device, date, tolerance rule, timing), counts by status,
//   failures (combo, metric, error, tolerance, its basis, ratio), errors, the 10 passing metrics closest to
//   their tolerance, the fastest passing combo per model/batch/dtype/device vs its eager baseline
//   (median ms, speed-up, tokens/s; "within noise" when the speed-up is inside the combined noise of
//   the two, and the fastest is marked not significant when the runner-up is within noise), not-supported and excluded reasons grouped.
#include "reports/markdown.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/file.h"
#include "reports/report_analysis.h"
#include "reports/text_buffer.h"

enum { TIGHTEST_COUNT = 10, FAILING_METRICS_PER_COMBO = 5, EXAMPLES_PER_REASON = 5 };

static void append_context_row(parity_text *md, const char *name, const char *value) {
    if (!value[0]) return;
    parity_text_appendf(md, "| %s | ", name);
    parity_text_append_markdown_cell(md, value);
    parity_text_append(md, " |\n");
}

static void append_header(parity_text *md, const parity_results *results) {
    const parity_results_context *context = &results->context;
    parity_text_append(md, "# parity: suite ");
    parity_text_append_markdown_code(md, context->suite[0] ? context->suite : "?");
    parity_text_append(md, " on ");
    parity_text_append_markdown_cell(md, context->device[0] ? context->device : "?");
    parity_text_append(md, "\n\n| | |\n|---|---|\n");
    append_context_row(md, "git sha", context->git_sha);
    append_context_row(md, "host", context->host);
    append_context_row(md, "device", context->device);
    char versions[96] = "";
    if (context->driver_version[0] || context->cuda_version[0])
        snprintf(versions, sizeof versions, "driver %s, CUDA %s", context->driver_version[0] ? context->driver_version : "-",
                 context->cuda_version[0] ? context->cuda_version : "-");
    append_context_row(md, "driver", versions);
    append_context_row(md, "libraries", context->libraries);
    char date[80] = "";
    if (context->started[0]) snprintf(date, sizeof date, "%s to %s", context->started, context->finished[0] ? context->finished : "?");
    append_context_row(md, "date", date);
    append_context_row(md, "interrupted", context->interrupted);
    append_context_row(md, "stopped", context->stopped);
    append_context_row(md, "command", context->command);
    append_context_row(md, "plugins", context->plugins);
    append_context_row(md, "tolerance rule", context->tolerance_rule);
    append_context_row(md, "timing", context->timing_method);
    parity_text_append(md, "\n");
}

static void append_counts(parity_text *md, const parity_results *results) {
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(results, counts);
    if (results->context.interrupted[0]) {
        parity_text_append(md, "**Interrupted by ");
        parity_text_append_markdown_cell(md, results->context.interrupted);
        parity_text_appendf(md, ": %zu of %zu combos finished; this report is about those.**\n\n", results->combo_count,
                            results->context.combos_selected);
    }
    if (results->context.stopped[0]) {
        parity_text_append(md, "**Stopped by a rank failure (");
        parity_text_append_markdown_cell(md, results->context.stopped);
        parity_text_appendf(md, "): %zu of %zu combos finished; this report is about those.**\n\n", results->combo_count,
                            results->context.combos_selected);
    }
    parity_text_appendf(md, "**%zu combos: %zu pass, %zu fail, %zu not supported, %zu error, %zu excluded**\n\n", results->combo_count,
                        counts[PARITY_COMBO_PASS], counts[PARITY_COMBO_FAIL], counts[PARITY_COMBO_NOT_SUPPORTED],
                        counts[PARITY_COMBO_ERROR], counts[PARITY_COMBO_EXCLUDED]);
    parity_text_append(md, "| status | combos |\n|---|---:|\n");
    for (int status = 0; status < PARITY_COMBO_STATUS_COUNT; status++)
        parity_text_appendf(md, "| %s | %zu |\n", parity_combo_status_name((parity_combo_status)status), counts[status]);
    parity_text_append(md, "\n");
}

static void append_metric_cells(parity_text *md, const parity_metric *metric) {
    char error[32], tolerance[32], ratio[32];
    parity_text_append(md, " | ");
    parity_text_append_markdown_code(md, metric->name);
    parity_text_appendf(md, " | %s | %s | %s | %s |\n", parity_report_format(error, sizeof error, "%.3e", metric->error),
                        parity_report_format(tolerance, sizeof tolerance, "%.3e", metric->tolerance),
                        metric->basis[0] ? metric->basis : "-", parity_report_format(ratio, sizeof ratio, "%.3g", metric->ratio));
}

// Failing metrics of a combo, worst first, at most FAILING_METRICS_PER_COMBO (the rest counted).
static void append_failure_rows(parity_text *md, const parity_combo_result *combo) {
    size_t failed = 0;
    for (size_t i = 0; i < combo->metric_count; i++) failed += !combo->metrics[i].pass;
    if (failed == 0) {
        parity_text_append(md, "| ");
        parity_text_append_markdown_code(md, combo->id);
        parity_text_append(md, " | ");
        parity_text_append_markdown_cell(md, combo->reason[0] ? combo->reason : "failed (no reason recorded)");
        parity_text_append(md, " | | | | |\n");
        return;
    }
    const parity_metric **order = malloc(failed * sizeof *order);
    if (!order) {
        parity_text_append(md, "| (out of memory listing metrics) | | | | | |\n");
        return;
    }
    size_t count = 0;
    for (size_t i = 0; i < combo->metric_count; i++)
        if (!combo->metrics[i].pass) order[count++] = &combo->metrics[i];
    for (size_t i = 1; i < count; i++) // insertion sort, worst ratio first (stable)
        for (size_t j = i; j > 0 && parity_report_ratio_rank(order[j]->ratio) > parity_report_ratio_rank(order[j - 1]->ratio); j--) {
            const parity_metric *swap = order[j];
            order[j] = order[j - 1];
            order[j - 1] = swap;
        }
    for (size_t i = 0; i < count && i < FAILING_METRICS_PER_COMBO; i++) {
        parity_text_append(md, "| ");
        parity_text_append_markdown_code(md, combo->id);
        append_metric_cells(md, order[i]);
    }
    if (count > FAILING_METRICS_PER_COMBO) {
        parity_text_append(md, "| ");
        parity_text_append_markdown_code(md, combo->id);
        parity_text_appendf(md, " | ... %zu more failing metrics (see results.json) | | | | |\n", count - FAILING_METRICS_PER_COMBO);
    }
    free(order);
}

static void append_failures(parity_text *md, const parity_results *results, const size_t counts[]) {
    if (counts[PARITY_COMBO_FAIL] == 0) return;
    parity_text_append(md, "## Failures\n\n| combo | metric | error | tolerance | tolerance from | ratio |\n|---|---|---:|---:|---|---:|\n");
    for (size_t i = 0; i < results->combo_count; i++)
        if (results->combos[i].status == PARITY_COMBO_FAIL) append_failure_rows(md, &results->combos[i]);
    parity_text_append(md, "\n");
}

static void append_errors(parity_text *md, const parity_results *results, const size_t counts[]) {
    if (counts[PARITY_COMBO_ERROR] == 0) return;
    parity_text_append(md, "## Errors\n\n| combo | reason |\n|---|---|\n");
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (combo->status != PARITY_COMBO_ERROR) continue;
        parity_text_append(md, "| ");
        parity_text_append_markdown_code(md, combo->id);
        parity_text_append(md, " | ");
        parity_text_append_markdown_cell(md, combo->reason);
        parity_text_append(md, " |\n");
    }
    parity_text_append(md, "\n");
}

typedef struct ranked_metric {
    const parity_combo_result *combo;
    const parity_metric *metric;
} ranked_metric;

// The metrics of passing combos (other than the eager baselines, whose ratios are 1/k by
// construction) with the largest finite ratios: how close the backends come to their tolerance.
static void append_tightest(parity_text *md, const parity_results *results) {
    ranked_metric top[TIGHTEST_COUNT];
    size_t count = 0;
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (combo->is_eager_baseline || combo->status != PARITY_COMBO_PASS) continue;
        for (size_t m = 0; m < combo->metric_count; m++) {
            const parity_metric *metric = &combo->metrics[m];
            if (!metric->pass || !isfinite(metric->ratio)) continue;
            size_t at = count < TIGHTEST_COUNT ? count++ : TIGHTEST_COUNT;
            if (at == TIGHTEST_COUNT) {
                if (metric->ratio <= top[TIGHTEST_COUNT - 1].metric->ratio) continue;
                at = TIGHTEST_COUNT - 1;
            }
            for (; at > 0 && top[at - 1].metric->ratio < metric->ratio; at--) top[at] = top[at - 1];
            top[at] = (ranked_metric){combo, metric};
        }
    }
    parity_text_append(md, "## Tightest tolerance ratios (passing metrics closest to 1)\n\n");
    if (count == 0) {
        parity_text_append(md, "No passing combo other than the eager baselines.\n\n");
        return;
    }
    parity_text_append(md, "| # | combo | metric | error | tolerance | tolerance from | ratio |\n|---:|---|---|---:|---:|---|---:|\n");
    for (size_t i = 0; i < count; i++) {
        parity_text_appendf(md, "| %zu | ", i + 1);
        parity_text_append_markdown_code(md, top[i].combo->id);
        append_metric_cells(md, top[i].metric);
    }
    parity_text_append(md, "\n");
}

static bool group_seen_before(const parity_results *results, size_t index) {
    for (size_t i = 0; i < index; i++)
        if (parity_report_same_group(&results->combos[i], &results->combos[index])) return true;
    return false;
}

static void append_speed(parity_text *md, const parity_results *results) {
    parity_text_append(md, "## Speed: fastest passing combo per model vs eager\n\n");
    size_t rows = 0;
    for (size_t g = 0; g < results->combo_count; g++) {
        if (group_seen_before(results, g)) continue;
        const parity_combo_result *baseline = parity_report_baseline(results, &results->combos[g]);
        parity_report_fastest ranking = parity_report_fastest_in_group(results, &results->combos[g]);
        const parity_combo_result *fastest = ranking.fastest;
        if (!fastest) continue;
        if (rows++ == 0)
            parity_text_append(md, "| model | batch | dtype | device | eager ms | fastest combo | ms | noise | speed-up | tokens/s |\n"
                                   "|---|---|---|---|---:|---|---:|---:|---:|---:|\n");
        char eager_ms[32] = "-", fastest_ms[32], noise[32], speedup[32] = "-", tokens[32];
        if (baseline && parity_report_is_timed(baseline)) {
            snprintf(eager_ms, sizeof eager_ms, "%.3f", baseline->median_ms);
            double noise_band = parity_report_combined_noise(baseline, fastest);
            if (fastest == baseline) snprintf(speedup, sizeof speedup, "eager");
            else if (parity_report_within_noise(fastest->median_ms / baseline->median_ms, noise_band)) snprintf(speedup, sizeof speedup, "within noise");
            else snprintf(speedup, sizeof speedup, "%.2fx \xc2\xb1%.1f%%", baseline->median_ms / fastest->median_ms, 100 * noise_band);
        }
        snprintf(fastest_ms, sizeof fastest_ms, "%.3f", fastest->median_ms);
        parity_report_format(noise, sizeof noise, "%.1f%%", 100.0 * fastest->noise);
        parity_report_format(tokens, sizeof tokens, "%.0f", parity_report_tokens_per_second(fastest));
        parity_text_append(md, "| ");
        parity_text_append_markdown_cell(md, fastest->model);
        parity_text_append(md, " | ");
        parity_text_append_markdown_cell(md, fastest->batch);
        parity_text_append(md, " | ");
        parity_text_append_markdown_cell(md, fastest->dtype);
        parity_text_append(md, " | ");
        parity_text_append_markdown_cell(md, fastest->device);
        parity_text_appendf(md, " | %s | ", eager_ms);
        parity_text_append_markdown_code(md, fastest->id);
        if (!ranking.significant)
            parity_text_appendf(md, " (not significant: %zu other%s within noise)", ranking.tied, ranking.tied == 1 ? "" : "s");
        parity_text_appendf(md, " | %s | %s | %s | %s |\n", fastest_ms, noise, speedup, strcmp(tokens, "NaN") == 0 ? "-" : tokens);
    }
    parity_text_append(md, rows ? "\n" : "No timed passing combos.\n\n");
}

// Combos of `status` grouped by identical reason, in order of first appearance.
static void append_reasons(parity_text *md, const parity_results *results, parity_combo_status status, const char *title) {
    size_t first = parity_report_next_reason_group(results, status, 0);
    if (first == results->combo_count) return;
    parity_text_appendf(md, "## %s\n\n| reason | combos | examples |\n|---|---:|---|\n", title);
    for (size_t i = first; i < results->combo_count; i = parity_report_next_reason_group(results, status, i + 1)) {
        const parity_combo_result *leader = &results->combos[i];
        size_t count = parity_report_reason_group_size(results, i);
        parity_text_append(md, "| ");
        parity_text_append_markdown_cell(md, leader->reason[0] ? leader->reason : "(no reason recorded)");
        parity_text_appendf(md, " | %zu | ", count);
        size_t shown = 0;
        for (size_t j = i; j < results->combo_count && shown < EXAMPLES_PER_REASON; j++) {
            if (!parity_report_same_reason(leader, &results->combos[j])) continue;
            if (shown++) parity_text_append(md, "<br>");
            parity_text_append_markdown_code(md, results->combos[j].id);
        }
        if (count > shown) parity_text_appendf(md, "<br>... %zu more", count - shown);
        parity_text_append(md, " |\n");
    }
    parity_text_append(md, "\n");
}

parity_error *parity_report_write_markdown(const char *path, const parity_results *results) {
    parity_text md = {0};
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(results, counts);
    append_header(&md, results);
    append_counts(&md, results);
    append_failures(&md, results, counts);
    append_errors(&md, results, counts);
    append_tightest(&md, results);
    append_speed(&md, results);
    append_reasons(&md, results, PARITY_COMBO_NOT_SUPPORTED, "Not supported");
    append_reasons(&md, results, PARITY_COMBO_EXCLUDED, "Excluded by the suite");
    parity_text_append(&md, "Rendered from results.json; every metric of every combo is there and in report.html.\n");
    parity_error *error = parity_text_check(&md, path);
    if (!error) error = parity_write_file_atomic(path, md.data, md.length, true);
    parity_text_free(&md);
    return error;
}

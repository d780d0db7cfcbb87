// html.c: report.html, laid out to be read at a glance. First the verdict line (counts, the worst
// tolerance ratio, the fastest combo vs eager when that claim is outside noise) and the grid (one
// cell per model and field value, colours and counts), both on the first screen; then failures
// grouped per combo with their worst metrics, the two charts (svg_chart.h, no gnuplot needed), the
// combos that ran in a sortable table (timing "same" when within noise, the noise shown as +-),
// not-supported and excluded combos folded into counts per reason, and the run's context. Every
// metric of every combo stays in results.json; this page lists a failing combo's worst five.
#include "reports/html.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/file.h"
#include "reports/html_charts.h"
#include "reports/html_grid.h"
#include "reports/html_style.h"
#include "reports/report_analysis.h"
#include "reports/text_buffer.h"

enum { WORST_METRICS_PER_COMBO = 5, IDS_PER_REASON = 12 };

static void escaped(parity_text *html, const char *text) { parity_text_append_xml(html, text); }

static const char *ratio_class(double ratio) {
    if (isnan(ratio) || ratio > 1) return "r-over";
    return ratio > 0.5 ? "r-near" : "r-ok";
}

static void append_pill(parity_text *html, parity_combo_status status) {
    parity_text_appendf(html, "<span class=\"pill %s\">%s</span>", parity_html_status_class(status), parity_report_status_label(status));
}

static void append_head(parity_text *html, const parity_results *results) {
    const parity_results_context *context = &results->context;
    parity_text_append(html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>parity: ");
    escaped(html, context->suite);
    parity_text_append(html, " on ");
    escaped(html, context->device);
    parity_text_append(html, "</title>\n");
    parity_text_append(html, parity_html_style);
    parity_text_append(html, "</head>\n<body>\n<main>\n<h1>parity: suite <code>");
    escaped(html, context->suite[0] ? context->suite : "?");
    parity_text_append(html, "</code></h1>\n<p class=\"sub\">");
    escaped(html, context->device[0] ? context->device : "unknown device");
    if (context->started[0]) {
        parity_text_append(html, " &middot; ");
        escaped(html, context->started);
    }
    if (context->git_sha[0]) {
        parity_text_append(html, " &middot; git <code>");
        escaped(html, context->git_sha);
        parity_text_append(html, "</code>");
    }
    parity_text_append(html, "</p>\n");
    if (context->interrupted[0]) {
        parity_text_append(html, "<div class=\"verdict bad\">Interrupted by ");
        escaped(html, context->interrupted);
        parity_text_appendf(html, ": %zu of %zu combos finished; this report is about those</div>\n", results->combo_count,
                            context->combos_selected);
    }
    if (context->stopped[0]) {
        parity_text_append(html, "<div class=\"verdict bad\">Stopped by a rank failure (");
        escaped(html, context->stopped);
        parity_text_appendf(html, "): %zu of %zu combos finished; this report is about those</div>\n", results->combo_count,
                            context->combos_selected);
    }
}

// The best speed-up over eager that is outside noise, across groups; and how many groups have a
// fastest combo that beats its runner-up beyond noise.
typedef struct speed_claim {
    const parity_combo_result *combo;
    double speedup, noise;
    size_t groups, clear_groups;
} speed_claim;

static speed_claim best_speedup(const parity_results *results) {
    speed_claim claim = {0};
    for (size_t g = 0; g < results->combo_count; g++) {
        bool seen = false;
        for (size_t j = 0; j < g && !seen; j++) seen = parity_report_same_group(&results->combos[j], &results->combos[g]);
        if (seen) continue;
        parity_report_fastest ranking = parity_report_fastest_in_group(results, &results->combos[g]);
        if (!ranking.fastest) continue;
        claim.groups++;
        claim.clear_groups += ranking.significant && ranking.runner_up;
        const parity_combo_result *baseline = parity_report_baseline(results, ranking.fastest);
        if (!baseline || baseline == ranking.fastest || !parity_report_is_timed(baseline)) continue;
        double relative = ranking.fastest->median_ms / baseline->median_ms, noise = parity_report_combined_noise(baseline, ranking.fastest);
        if (!ranking.significant || parity_report_within_noise(relative, noise) || relative > 1) continue;
        if (!claim.combo || 1 / relative > claim.speedup) {
            claim.combo = ranking.fastest;
            claim.speedup = 1 / relative;
            claim.noise = noise;
        }
    }
    return claim;
}

// " <small title="the id">(model: its non-eager choices)</small>": a combo named in the verdict line,
// short so the line stays one or two lines; the full id on hover and in the tables below.
static void append_verdict_combo(parity_text *html, const parity_combo_result *combo) {
    char label[200];
    parity_report_short_label(combo, label, sizeof label);
    parity_text_append(html, " <small title=\"");
    parity_text_append_xml_attribute(html, combo->id);
    parity_text_append(html, "\">(");
    if (!combo->is_eager_baseline) {
        escaped(html, combo->model);
        parity_text_append(html, ": ");
    }
    escaped(html, label);
    parity_text_append(html, ")</small>");
}

static void append_verdict(parity_text *html, const parity_results *results, const size_t counts[]) {
    size_t ran = counts[PARITY_COMBO_PASS] + counts[PARITY_COMBO_FAIL];
    bool bad = counts[PARITY_COMBO_FAIL] || counts[PARITY_COMBO_ERROR];
    parity_text_appendf(html, "<p class=\"verdict %s\" id=\"verdict\">", bad ? "bad" : ran ? "good" : "none");
    if (!ran && !counts[PARITY_COMBO_ERROR]) parity_text_append(html, "No combo ran &middot; ");
    parity_text_appendf(html, "%zu pass, %zu fail", counts[PARITY_COMBO_PASS], counts[PARITY_COMBO_FAIL]);
    if (counts[PARITY_COMBO_ERROR]) parity_text_appendf(html, ", %zu error", counts[PARITY_COMBO_ERROR]);
    parity_text_appendf(html, " &middot; %zu not supported", counts[PARITY_COMBO_NOT_SUPPORTED]);
    if (counts[PARITY_COMBO_EXCLUDED]) parity_text_appendf(html, " &middot; %zu excluded", counts[PARITY_COMBO_EXCLUDED]);
    const parity_combo_result *worst_combo = NULL;
    const parity_metric *worst = NULL;
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (combo->is_eager_baseline) continue;
        const parity_metric *metric = parity_report_worst_metric(combo, NULL);
        if (metric && (!worst || parity_report_ratio_rank(metric->ratio) > parity_report_ratio_rank(worst->ratio))) {
            worst = metric;
            worst_combo = combo;
        }
    }
    char number[32];
    if (worst) {
        parity_text_appendf(html, " &middot; worst ratio %s", parity_report_format(number, sizeof number, "%.2f", worst->ratio));
        append_verdict_combo(html, worst_combo);
    }
    speed_claim claim = best_speedup(results);
    if (claim.combo) {
        parity_text_appendf(html, " &middot; fastest vs eager %.2fx &plusmn;%.1f%%", claim.speedup, 100 * claim.noise);
        append_verdict_combo(html, claim.combo);
    } else if (claim.groups) {
        parity_text_append(html, " &middot; no combo faster than eager beyond noise");
    }
    if (claim.groups)
        parity_text_appendf(html, " &middot; a clear fastest in %zu of %zu group%s", claim.clear_groups, claim.groups, claim.groups == 1 ? "" : "s");
    parity_text_append(html, "</p>\n");
}

static void append_context_item(parity_text *html, const char *name, const char *value) {
    if (!value[0]) return;
    parity_text_appendf(html, "<dt>%s</dt><dd>", name);
    escaped(html, value);
    parity_text_append(html, "</dd>\n");
}

static void append_context(parity_text *html, const parity_results_context *context) {
    parity_text_append(html, "<h2>Context</h2>\n<div class=\"panel\"><dl class=\"context\">\n");
    append_context_item(html, "suite", context->suite);
    append_context_item(html, "git sha", context->git_sha);
    append_context_item(html, "host", context->host);
    append_context_item(html, "device", context->device);
    append_context_item(html, "driver", context->driver_version);
    append_context_item(html, "CUDA", context->cuda_version);
    append_context_item(html, "libraries", context->libraries);
    append_context_item(html, "plugins", context->plugins);
    append_context_item(html, "command", context->command);
    append_context_item(html, "started", context->started);
    append_context_item(html, "finished", context->finished);
    append_context_item(html, "interrupted", context->interrupted);
    append_context_item(html, "stopped", context->stopped);
    append_context_item(html, "tolerance rule", context->tolerance_rule);
    append_context_item(html, "timing", context->timing_method);
    parity_text_append(html, "</dl></div>\n");
}

// A failing metric, one line: name, ratio, error / tolerance and its basis.
static void append_failing_metric(parity_text *html, const parity_metric *metric) {
    char error[32], tolerance[32], ratio[32];
    parity_text_append(html, "<div><code>");
    escaped(html, metric->name);
    parity_text_appendf(html, "</code> <b class=\"%s\">%s</b> <small>%s / %s, %s</small></div>", ratio_class(metric->ratio),
                        parity_report_format(ratio, sizeof ratio, "%.3g", metric->ratio),
                        parity_report_format(error, sizeof error, "%.2e", metric->error),
                        parity_report_format(tolerance, sizeof tolerance, "%.2e", metric->tolerance), metric->basis[0] ? metric->basis : "-");
}

// One row per failing (or erroring) combo: how many metrics failed, the worst ratio, the worst five.
static void append_failure_row(parity_text *html, const parity_combo_result *combo) {
    const parity_metric *order[WORST_METRICS_PER_COMBO];
    size_t failed = 0, shown = 0;
    for (size_t m = 0; m < combo->metric_count; m++) {
        const parity_metric *metric = &combo->metrics[m];
        if (metric->pass) continue;
        failed++;
        size_t at = shown < WORST_METRICS_PER_COMBO ? shown++ : WORST_METRICS_PER_COMBO;
        if (at == WORST_METRICS_PER_COMBO) {
            if (parity_report_ratio_rank(metric->ratio) <= parity_report_ratio_rank(order[at - 1]->ratio)) continue;
            at--;
        }
        for (; at > 0 && parity_report_ratio_rank(order[at - 1]->ratio) < parity_report_ratio_rank(metric->ratio); at--) order[at] = order[at - 1];
        order[at] = metric;
    }
    char ratio[32];
    parity_text_append(html, "<tr><td class=\"id\">");
    escaped(html, combo->id);
    parity_text_append(html, "</td><td>");
    append_pill(html, combo->status);
    parity_text_appendf(html, "</td><td class=\"num\">%zu of %zu</td>", failed, combo->metric_count);
    if (shown) {
        double worst = parity_report_ratio_rank(order[0]->ratio);
        parity_text_appendf(html, "<td class=\"num %s\" data-v=\"%.6g\">%s</td><td>", ratio_class(order[0]->ratio), isinf(worst) ? 1e300 : worst,
                            parity_report_format(ratio, sizeof ratio, "%.3g", order[0]->ratio));
        for (size_t i = 0; i < shown; i++) append_failing_metric(html, order[i]);
        if (failed > shown) parity_text_appendf(html, "<div class=\"muted\">&hellip; %zu more failing (results.json has each)</div>", failed - shown);
    } else {
        parity_text_append(html, "<td class=\"num\">-</td><td>");
    }
    if (combo->reason[0] && (combo->status == PARITY_COMBO_ERROR || !shown)) {
        parity_text_append(html, "<div class=\"reason\">");
        escaped(html, combo->reason);
        parity_text_append(html, "</div>");
    } else if (!shown) {
        parity_text_append(html, "<div class=\"reason\">(no reason recorded)</div>");
    }
    parity_text_append(html, "</td></tr>\n");
}

static void append_failures(parity_text *html, const parity_results *results, const size_t counts[]) {
    if (!counts[PARITY_COMBO_FAIL] && !counts[PARITY_COMBO_ERROR]) return;
    parity_text_appendf(html, "<h2 id=\"failures\">Failures <small>%zu combos, worst %d metrics each</small></h2>\n"
                              "<div class=\"panel\"><table class=\"sortable\">\n<thead><tr><th>combo</th><th>status</th>"
                              "<th class=\"num\">failing metrics</th><th class=\"num\">worst ratio</th><th>worst metrics: ratio, error / tolerance, "
                              "tolerance from</th></tr></thead>\n<tbody>\n",
                        counts[PARITY_COMBO_FAIL] + counts[PARITY_COMBO_ERROR], WORST_METRICS_PER_COMBO);
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (combo->status == PARITY_COMBO_FAIL || combo->status == PARITY_COMBO_ERROR) append_failure_row(html, combo);
    }
    parity_text_append(html, "</tbody></table></div>\n");
}

// "same ±3.4%" within noise, else "0.51x ±3.4%"; "eager" for the baseline. data-v: the ratio, to sort.
static void append_relative_cell(parity_text *html, const parity_results *results, const parity_combo_result *combo) {
    double relative = parity_report_relative_time(results, combo);
    if (!isfinite(relative)) {
        parity_text_append(html, "<td>-</td>");
        return;
    }
    if (combo->is_eager_baseline) {
        parity_text_append(html, "<td data-v=\"1\">eager</td>");
        return;
    }
    double noise = parity_report_combined_noise(combo, parity_report_baseline(results, combo));
    bool same = parity_report_within_noise(relative, noise);
    const char *class = same || combo->status != PARITY_COMBO_PASS ? "" : relative < 1 ? " class=\"faster\"" : " class=\"slower\"";
    parity_text_appendf(html, "<td%s data-v=\"%.4f\">", class, relative);
    if (same) parity_text_append(html, "same");
    else parity_text_appendf(html, "%.2fx", relative);
    parity_text_appendf(html, " \xc2\xb1%.1f%%</td>", 100 * noise);
}

// One row of the combos table, lean (a run may have a thousand): the numeric columns are
// right-aligned by the table's CSS, not per cell.
static void append_combo_row(parity_text *html, const parity_results *results, size_t index) {
    const parity_combo_result *combo = &results->combos[index];
    char cell[64];
    parity_text_appendf(html, "<tr class=\"s-%s\"><td class=\"id\">", parity_html_status_class(combo->status));
    escaped(html, combo->id);
    if (combo->is_eager_baseline) parity_text_append(html, " <i>eager baseline</i>");
    parity_text_appendf(html, "</td><td>%s</td>", parity_report_status_label(combo->status));
    const parity_metric *worst = parity_report_worst_metric(combo, NULL);
    if (worst) {
        parity_text_append(html, "<td><code>");
        escaped(html, worst->name);
        parity_text_appendf(html, "</code></td><td class=\"%s\">%s</td>", ratio_class(worst->ratio),
                            parity_report_format(cell, sizeof cell, "%.3g", worst->ratio));
    } else {
        parity_text_append(html, "<td></td><td>-</td>");
    }
    if (parity_report_is_timed(combo)) {
        parity_text_appendf(html, "<td>%.3f \xc2\xb1%s</td>", combo->median_ms, parity_report_format(cell, sizeof cell, "%.1f%%", 100 * combo->noise));
        append_relative_cell(html, results, combo);
        double tokens = parity_report_tokens_per_second(combo);
        parity_text_appendf(html, "<td>%s</td>", isfinite(tokens) ? parity_report_format(cell, sizeof cell, "%.0f", tokens) : "-");
        parity_text_appendf(html, "<td data-v=\"%lld\">%s</td>", (long long)combo->peak_memory_bytes,
                            parity_report_format_bytes(cell, sizeof cell, combo->peak_memory_bytes));
    } else {
        parity_text_append(html, "<td>-</td><td>-</td><td>-</td><td>-</td>");
    }
    parity_text_append(html, "</tr>\n");
}

static void append_combos(parity_text *html, const parity_results *results, const size_t counts[]) {
    size_t ran = counts[PARITY_COMBO_PASS] + counts[PARITY_COMBO_FAIL] + counts[PARITY_COMBO_ERROR];
    if (!ran) return;
    parity_text_appendf(html, "<h2 id=\"combos\">Combos that ran <small>%zu; click a column to sort</small></h2>\n"
                              "<div class=\"panel\"><table class=\"sortable combos\">\n<thead><tr><th>combo</th><th>status</th>"
                              "<th>worst metric</th><th>ratio</th><th>median ms &plusmn;noise</th>"
                              "<th>vs eager</th><th>tokens/s</th><th>peak memory</th></tr></thead>\n<tbody>\n",
                        ran);
    for (size_t i = 0; i < results->combo_count; i++) {
        parity_combo_status status = results->combos[i].status;
        if (status == PARITY_COMBO_PASS || status == PARITY_COMBO_FAIL || status == PARITY_COMBO_ERROR) append_combo_row(html, results, i);
    }
    parity_text_append(html, "</tbody></table></div>\n<p class=\"sub\">vs eager: median / the eager baseline's median (same model, batch, "
                             "dtype, device); &quot;same&quot; when it is within the two combos' combined noise (&plusmn;, "
                             "sqrt(noise&#178; + noise_eager&#178;)).</p>\n");
}

static int by_size_descending(const void *a, const void *b) {
    const size_t *x = a, *y = b; // [size, leader]
    return x[0] < y[0] ? 1 : x[0] > y[0] ? -1 : x[1] < y[1] ? -1 : x[1] > y[1];
}

// Combos of `status` folded into one expandable line per reason, the largest first.
static void append_reasons(parity_text *html, const parity_results *results, parity_combo_status status, const char *title, size_t count) {
    if (!count) return;
    size_t groups = 0;
    for (size_t i = parity_report_next_reason_group(results, status, 0); i < results->combo_count;
         i = parity_report_next_reason_group(results, status, i + 1))
        groups++;
    size_t (*order)[2] = malloc((groups + 1) * sizeof *order);
    if (!order) {
        parity_text_append(html, "<p class=\"note problem\">out of memory listing reasons</p>\n");
        return;
    }
    size_t n = 0;
    for (size_t i = parity_report_next_reason_group(results, status, 0); i < results->combo_count;
         i = parity_report_next_reason_group(results, status, i + 1)) {
        order[n][0] = parity_report_reason_group_size(results, i);
        order[n++][1] = i;
    }
    qsort(order, n, sizeof *order, by_size_descending);
    parity_text_appendf(html, "<h2 id=\"%s\">%s <small>%zu combos, %zu reason%s; expand a reason for its combos</small></h2>\n<div class=\"reasons\">\n",
                        parity_html_status_class(status), title, count, n, n == 1 ? "" : "s");
    for (size_t g = 0; g < n; g++) {
        const parity_combo_result *leader = &results->combos[order[g][1]];
        parity_text_appendf(html, "<details><summary><b>%zu</b> ", order[g][0]);
        escaped(html, leader->reason[0] ? leader->reason : "(no reason recorded)");
        parity_text_append(html, "</summary><div class=\"ids\">");
        size_t shown = 0;
        for (size_t j = order[g][1]; j < results->combo_count && shown < IDS_PER_REASON; j++) {
            if (!parity_report_same_reason(leader, &results->combos[j])) continue;
            if (shown++) parity_text_append(html, "<br>");
            escaped(html, results->combos[j].id);
        }
        if (order[g][0] > shown)
            parity_text_appendf(html, "<br><i>&hellip; and %zu more (results.json, or parity run --list, has each)</i>", order[g][0] - shown);
        parity_text_append(html, "</div></details>\n");
    }
    parity_text_append(html, "</div>\n");
    free(order);
}

parity_error *parity_report_write_html(const char *path, const parity_results *results) {
    parity_text html = {0};
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(results, counts);
    append_head(&html, results);
    append_verdict(&html, results, counts);
    parity_html_append_grid(&html, results);
    append_failures(&html, results, counts);
    parity_html_append_charts(&html, results);
    append_combos(&html, results, counts);
    append_reasons(&html, results, PARITY_COMBO_NOT_SUPPORTED, "Not supported", counts[PARITY_COMBO_NOT_SUPPORTED]);
    append_reasons(&html, results, PARITY_COMBO_EXCLUDED, "Excluded by the suite", counts[PARITY_COMBO_EXCLUDED]);
    append_context(&html, &results->context);
    parity_text_append(&html, "<footer>Rendered by parity from results.json (re-render with <code>parity report DIR</code>; every metric of "
                              "every combo is there). Self-contained: one inline script (column sorting), no network.</footer>\n</main>\n");
    parity_text_append(&html, parity_html_sort_script);
    parity_text_append(&html, "</body>\n</html>\n");
    parity_error *error = parity_text_check(&html, path);
    if (!error) error = parity_write_file_atomic(path, html.data, html.length, true);
    parity_text_free(&html);
    return error;
}

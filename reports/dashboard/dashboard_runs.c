// dashboard_runs.c: a dashboard section of one suite on one device (dashboard.h): the latest
// run's verdict line (its counts, and compare.h's verdict against the run before), its regressions
// and new failures listed first, its model x field value grid (html_grid.h), and the tokens/s of
// its fastest combos over the section's last N runs as an SVG line chart (svg_chart.h), regressed
// combos always drawn and marked in the legend and the table under the chart.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/dashboard/dashboard_internal.h"
#include "reports/html_grid.h"
#include "reports/html_style.h"
#include "reports/report_analysis.h"
#include "reports/svg_chart.h"

enum { MAX_LINES = 12 };

static const parity_combo_result *find_combo(const parity_results *results, const char *id) {
    for (size_t i = 0; i < results->combo_count; i++)
        if (strcmp(results->combos[i].id, id) == 0) return &results->combos[i];
    return NULL;
}

static const parity_combo_comparison *find_comparison(const parity_comparison *comparison, const char *id) {
    for (size_t i = 0; i < comparison->combo_count; i++)
        if (strcmp(comparison->combos[i].id, id) == 0) return &comparison->combos[i];
    return NULL;
}

static bool is_flagged(const parity_combo_comparison *entry) {
    return entry && (entry->status_change == PARITY_STATUS_NEW_FAILURE || entry->time.verdict == PARITY_TIME_REGRESSION);
}

// The value a trend draws for a combo: tokens/s, or (when the run records no tokens) median ms.
static double trend_value(const parity_combo_result *combo, bool tokens) {
    if (!combo || !parity_report_is_timed(combo)) return NAN;
    return tokens ? parity_report_tokens_per_second(combo) : combo->median_ms;
}

static void append_verdict(parity_text *html, const dashboard_section *section, const parity_results *latest, bool compared,
                           const parity_comparison *comparison, dashboard_overview *overview) {
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(latest, counts);
    bool failing = counts[PARITY_COMBO_FAIL] || counts[PARITY_COMBO_ERROR];
    if (compared) {
        parity_comparison_verdict(comparison, overview->verdict, sizeof overview->verdict);
        overview->regressions = comparison->counts.regressions;
        overview->new_failures = comparison->counts.new_failures;
    } else {
        snprintf(overview->verdict, sizeof overview->verdict, "the first run of this suite on this device: nothing to compare with");
    }
    overview->bad = failing || (compared && parity_comparison_failed(comparison));
    size_t ran = counts[PARITY_COMBO_PASS] + counts[PARITY_COMBO_FAIL];
    parity_text_appendf(html, "<p class=\"verdict %s\" id=\"verdict-%s\">", overview->bad ? "bad" : ran ? "good" : "none", section->anchor);
    parity_text_appendf(html, "%zu pass, %zu fail", counts[PARITY_COMBO_PASS], counts[PARITY_COMBO_FAIL]);
    if (counts[PARITY_COMBO_ERROR]) parity_text_appendf(html, ", %zu error", counts[PARITY_COMBO_ERROR]);
    parity_text_appendf(html, " &middot; %zu not supported", counts[PARITY_COMBO_NOT_SUPPORTED]);
    if (counts[PARITY_COMBO_EXCLUDED]) parity_text_appendf(html, " &middot; %zu excluded", counts[PARITY_COMBO_EXCLUDED]);
    parity_text_append(html, " &middot; ");
    if (compared) {
        const parity_history_run *previous = &section->runs[section->run_count - 2];
        parity_text_appendf(html, "against run %" PRId64 " (", previous->id);
        parity_text_append_xml(html, previous->started);
        parity_text_append(html, "): ");
    }
    parity_text_append_xml(html, overview->verdict);
    parity_text_append(html, "</p>\n");
}

static int compare_rank(const void *a, const void *b) {
    const parity_combo_comparison *x = *(const parity_combo_comparison *const *)a, *y = *(const parity_combo_comparison *const *)b;
    return parity_combo_comparison_rank(x) - parity_combo_comparison_rank(y);
}

static void append_ms(parity_text *html, double ms, double noise) {
    char number[32];
    parity_text_append(html, parity_report_format(number, sizeof number, "%.4g ms", ms));
    if (isfinite(ms) && isfinite(noise) && noise > 0) parity_text_appendf(html, " &plusmn;%.1f%%", 100 * noise);
}

// Regressions and new failures of the latest run, most severe first.
static parity_error *append_regressions(parity_text *html, const parity_comparison *comparison) {
    size_t count = 0;
    for (size_t i = 0; i < comparison->combo_count; i++) count += is_flagged(&comparison->combos[i]);
    if (!count) return NULL;
    const parity_combo_comparison **flagged = malloc(count * sizeof *flagged);
    if (!flagged) return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory listing %zu regressions", count);
    size_t used = 0;
    for (size_t i = 0; i < comparison->combo_count; i++)
        if (is_flagged(&comparison->combos[i])) flagged[used++] = &comparison->combos[i];
    qsort(flagged, used, sizeof *flagged, compare_rank);
    parity_text_appendf(html, "<div class=\"panel regressions\"><h3>Regressions and new failures <small>%zu, against the previous run</small></h3>\n"
                              "<table class=\"sortable\"><thead><tr><th>what</th><th>combo</th><th>before</th><th>after</th><th>detail</th></tr></thead>\n<tbody>\n",
                        count);
    char change[32];
    for (size_t i = 0; i < used; i++) {
        const parity_combo_comparison *entry = flagged[i];
        bool new_failure = entry->status_change == PARITY_STATUS_NEW_FAILURE;
        parity_text_appendf(html, "<tr class=\"regressed\"><td class=\"mark\">%s</td><td class=\"id\">",
                            new_failure && entry->time.verdict == PARITY_TIME_REGRESSION ? "new failure, slower"
                            : new_failure                                               ? "new failure"
                                                                                        : "slower");
        parity_text_append_xml(html, entry->id);
        parity_text_append(html, "</td>");
        if (new_failure) {
            parity_text_appendf(html, "<td>%s</td><td>%s</td><td class=\"reason\">", entry->in_base ? parity_report_status_label(entry->base_status) : "(not in the run)",
                                parity_report_status_label(entry->new_status));
            parity_text_append_xml(html, entry->reason);
            parity_text_append(html, "</td></tr>\n");
            continue;
        }
        parity_text_append(html, "<td class=\"num\">");
        append_ms(html, entry->time.base_ms, entry->time.base_noise);
        parity_text_append(html, "</td><td class=\"num\">");
        append_ms(html, entry->time.new_ms, entry->time.new_noise);
        parity_text_appendf(html, "</td><td>%s slower, beyond the band of &plusmn;%.1f%%</td></tr>\n",
                            dashboard_format_change(change, sizeof change, entry->time.change), 100 * entry->time.limit);
    }
    parity_text_append(html, "</tbody></table></div>\n");
    free(flagged);
    return NULL;
}

// html_grid's grid, with its heading made the section's (an h3 with an id of its own).
static void append_grid(parity_text *html, const parity_results *latest, const char *anchor) {
    parity_text grid = {0};
    parity_html_append_grid(&grid, latest);
    if (!grid.data) return;
    static const char heading[] = "<h2 id=\"grid\">";
    char *at = strstr(grid.data, heading);
    char *close = at ? strstr(at, "</h2>") : NULL;
    if (!at || !close) {
        parity_text_append_bytes(html, grid.data, grid.length);
    } else {
        parity_text_append_bytes(html, grid.data, (size_t)(at - grid.data));
        parity_text_appendf(html, "<h3 id=\"grid-%s\">", anchor);
        parity_text_append_bytes(html, at + strlen(heading), (size_t)(close - at - strlen(heading)));
        parity_text_append(html, "</h3>");
        parity_text_append(html, close + strlen("</h2>"));
    }
    if (grid.out_of_memory) parity_text_append(html, "<p class=\"note problem\">out of memory drawing the grid</p>\n");
    parity_text_free(&grid);
}

typedef struct trend_pick {
    const parity_combo_result *combo;
    double value;
} trend_pick;

static int faster_first(const void *a, const void *b) {
    double x = ((const trend_pick *)a)->value, y = ((const trend_pick *)b)->value;
    return x > y ? -1 : x < y;
}
static int shorter_first(const void *a, const void *b) {
    double x = ((const trend_pick *)a)->value, y = ((const trend_pick *)b)->value;
    return x < y ? -1 : x > y;
}

static parity_error *append_trend(parity_text *html, const dashboard_section *section, const parity_results *loaded, size_t n,
                                  bool compared, const parity_comparison *comparison) {
    const parity_results *latest = &loaded[n - 1];
    bool tokens = false;
    for (size_t i = 0; i < latest->combo_count && !tokens; i++)
        tokens = parity_report_is_timed(&latest->combos[i]) && latest->combos[i].tokens > 0;
    trend_pick *candidates = malloc((latest->combo_count + 1) * sizeof *candidates);
    if (!candidates) return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory choosing the trend's combos");
    size_t candidate_count = 0;
    for (size_t i = 0; i < latest->combo_count; i++) {
        double value = trend_value(&latest->combos[i], tokens);
        if (isfinite(value) && value > 0) candidates[candidate_count++] = (trend_pick){&latest->combos[i], value};
    }
    parity_text_appendf(html, "<h3 id=\"trend-%s\">%s over the last %zu run%s</h3>\n", section->anchor, tokens ? "Tokens/s" : "Time per step",
                        n, n == 1 ? "" : "s");
    if (!candidate_count) {
        parity_text_append(html, "<p class=\"note\">no combo of the latest run is timed: no trend to draw</p>\n");
        free(candidates);
        return NULL;
    }
    qsort(candidates, candidate_count, sizeof *candidates, tokens ? faster_first : shorter_first);
    // the K fastest, then every regressed combo the K left out (up to MAX_LINES lines)
    trend_pick picks[MAX_LINES];
    size_t pick_count = 0;
    for (size_t i = 0; i < candidate_count && pick_count < PARITY_DASHBOARD_TREND_COMBOS; i++) picks[pick_count++] = candidates[i];
    for (size_t i = PARITY_DASHBOARD_TREND_COMBOS; compared && i < candidate_count && pick_count < MAX_LINES; i++)
        if (is_flagged(find_comparison(comparison, candidates[i].combo->id))) picks[pick_count++] = candidates[i];
    size_t fastest = pick_count < PARITY_DASHBOARD_TREND_COMBOS ? pick_count : PARITY_DASHBOARD_TREND_COMBOS;
    free(candidates);

    double x[PARITY_DASHBOARD_MAX_LAST];
    double (*y)[PARITY_DASHBOARD_MAX_LAST] = calloc(MAX_LINES, sizeof *y);
    double (*error)[PARITY_DASHBOARD_MAX_LAST] = calloc(MAX_LINES, sizeof *error);
    char (*names)[400] = calloc(MAX_LINES, sizeof *names);
    char (*ticks)[24] = calloc(PARITY_DASHBOARD_MAX_LAST, sizeof *ticks);
    if (!y || !error || !names || !ticks) {
        free(y), free(error), free(names), free(ticks);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory drawing the trend");
    }
    const char *tick_labels[PARITY_DASHBOARD_MAX_LAST];
    for (size_t r = 0; r < n; r++) {
        x[r] = (double)r;
        dashboard_date_label(section, r, ticks[r], sizeof ticks[r]);
        tick_labels[r] = ticks[r];
    }
    parity_svg_series series[MAX_LINES];
    parity_svg_line lines[MAX_LINES];
    for (size_t p = 0; p < pick_count; p++) {
        const parity_combo_result *combo = picks[p].combo;
        for (size_t r = 0; r < n; r++) {
            const parity_combo_result *then = find_combo(&loaded[r], combo->id);
            double value = trend_value(then, tokens);
            y[p][r] = isfinite(value) && value > 0 ? value : NAN;
            error[p][r] = then && isfinite(then->noise) ? then->noise * y[p][r] : NAN;
        }
        char label[200];
        parity_report_short_label(combo, label, sizeof label);
        const parity_combo_comparison *entry = compared ? find_comparison(comparison, combo->id) : NULL;
        char change[32];
        char group[200] = "";
        if (!combo->is_eager_baseline) snprintf(group, sizeof group, "%s %s %s: ", combo->model, combo->batch, combo->dtype);
        // each part bounded so the whole fits names[p] (400): a legend entry; the table has the whole id
        snprintf(names[p], sizeof names[p], "%.180s%.180s%s%.20s%s", group, label, is_flagged(entry) ? " [REGRESSION " : "",
                               is_flagged(entry) ? (entry->status_change == PARITY_STATUS_NEW_FAILURE
                                                        ? "new failure"
                                                        : dashboard_format_change(change, sizeof change, entry->time.change))
                                                 : "",
                               is_flagged(entry) ? "]" : "");
        series[p] = (parity_svg_series){names[p], dashboard_color(p)};
        lines[p] = (parity_svg_line){p, x, y[p], error[p], n};
    }
    char title[160];
    snprintf(title, sizeof title, "%s of the %zu fastest combos of the latest run%s", tokens ? "tokens/s" : "median ms per step", fastest,
             pick_count > fastest ? " and the regressed ones" : "");
    parity_svg_line_chart chart = {.title = title,
                                   .x_label = "run (date UTC)",
                                   .y_label = tokens ? "tokens/s" : "ms",
                                   .series = series,
                                   .series_count = pick_count,
                                   .lines = lines,
                                   .line_count = pick_count,
                                   .x_tick_labels = tick_labels,
                                   .x_tick_count = n,
                                   .reference = NAN};
    parity_text_appendf(html, "<figure class=\"panel trend\" id=\"chart-%s\">", section->anchor);
    parity_error *failure = parity_svg_line_chart_append(html, &chart);
    parity_text_append(html, "<figcaption>error bars: each run's noise; a gap: the combo was not timed in that run. "
                             "Tokens/s is the combo's tokens per step over its median step time.</figcaption></figure>\n");
    // the numbers behind the latest points
    if (!failure) {
        parity_text_appendf(html, "<table class=\"sortable trend\"><thead><tr><th>combo</th><th class=\"num\">%s latest</th>"
                                  "<th class=\"num\">previous</th><th class=\"num\">time change</th><th>against the previous run</th></tr></thead>\n<tbody>\n",
                            tokens ? "tokens/s" : "ms");
        char number[32], change[32];
        for (size_t p = 0; p < pick_count; p++) {
            const parity_combo_comparison *entry = compared ? find_comparison(comparison, picks[p].combo->id) : NULL;
            parity_text_appendf(html, "<tr%s><td class=\"id\"><b style=\"color:%s\">&#9679;</b> ", is_flagged(entry) ? " class=\"regressed\"" : "",
                                dashboard_color(p));
            parity_text_append_xml(html, picks[p].combo->id);
            parity_text_appendf(html, "</td><td class=\"num\">%s", parity_report_format(number, sizeof number, "%.4g", y[p][n - 1]));
            if (isfinite(picks[p].combo->noise)) parity_text_appendf(html, " &plusmn;%.1f%%", 100 * picks[p].combo->noise);
            parity_text_appendf(html, "</td><td class=\"num\">%s</td>", n >= 2 ? parity_report_format(number, sizeof number, "%.4g", y[p][n - 2]) : "-");
            if (!entry || entry->time.verdict == PARITY_TIME_UNTIMED) {
                parity_text_append(html, "<td class=\"num\">-</td><td>-</td></tr>\n");
                continue;
            }
            parity_text_appendf(html, "<td class=\"num\">%s</td><td class=\"%s\">%s (band &plusmn;%.1f%%)</td></tr>\n",
                                dashboard_format_change(change, sizeof change, entry->time.change),
                                entry->time.verdict == PARITY_TIME_REGRESSION ? "mark" : entry->time.verdict == PARITY_TIME_SPEEDUP ? "faster" : "",
                                entry->time.verdict == PARITY_TIME_REGRESSION ? "REGRESSION: slower"
                                : entry->time.verdict == PARITY_TIME_SPEEDUP  ? "faster"
                                                                              : "same, within noise",
                                100 * entry->time.limit);
        }
        parity_text_append(html, "</tbody></table>\n");
    }
    free(y), free(error), free(names), free(ticks);
    return failure;
}

parity_error *dashboard_append_run_section(parity_text *html, parity_history *history, const dashboard_section *section,
                                           const parity_dashboard_options *options, dashboard_overview *overview) {
    size_t n = section->run_count;
    parity_results *loaded = calloc(n, sizeof *loaded);
    if (!loaded) return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory loading %zu runs", n);
    parity_error *error = NULL;
    for (size_t r = 0; !error && r < n; r++) error = parity_history_load_run(history, section->runs[r].id, &loaded[r]);
    parity_comparison comparison = {0};
    bool compared = false;
    if (!error && n >= 2) {
        error = parity_compare_results(&loaded[n - 2], &loaded[n - 1], &options->compare, &comparison);
        compared = !error;
    }
    if (!error) {
        const parity_history_run *run = &section->runs[n - 1];
        parity_text_appendf(html, "<section id=\"%s\">\n<h2>suite <code>", section->anchor);
        parity_text_append_xml(html, section->suite);
        parity_text_append(html, "</code> on ");
        parity_text_append_xml(html, section->device);
        parity_text_appendf(html, "</h2>\n<p class=\"sub\">latest: run %" PRId64 " &middot; ", run->id);
        parity_text_append_xml(html, run->started);
        parity_text_append(html, " &middot; git <code>");
        parity_text_append_xml(html, run->git_sha[0] ? run->git_sha : "-");
        parity_text_append(html, "</code>");
        if (run->host[0]) {
            parity_text_append(html, " &middot; host ");
            parity_text_append_xml(html, run->host);
        }
        parity_text_appendf(html, " &middot; %zu run%s in the history, the last %zu drawn</p>\n", section->total_runs,
                            section->total_runs == 1 ? "" : "s", n);
        append_verdict(html, section, &loaded[n - 1], compared, &comparison, overview);
        if (compared) error = append_regressions(html, &comparison);
        if (!error) append_grid(html, &loaded[n - 1], section->anchor);
        if (!error) error = append_trend(html, section, loaded, n, compared, &comparison);
        parity_text_append(html, "</section>\n");
    }
    if (compared) parity_comparison_release(&comparison);
    for (size_t r = 0; r < n; r++) parity_results_release(&loaded[r]);
    free(loaded);
    return error;
}

// dashboard_bench.c: a dashboard section of the bench reports of one device (dashboard.h): the
// latest report's rows in a table (median ms and noise, GB/s or TFLOP/s and the % of the device's
// copy or GEMM ceiling, the ratio to the PyTorch peer, the time change against the previous report
// under compare_time.h's noise-aware rule, regressions marked), then per op, pass, shape and dtype a
// line chart of the median ms of each backend over the last N reports, its PyTorch peers in grey.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/compare/compare_time.h"
#include "reports/dashboard/dashboard_internal.h"
#include "reports/report_analysis.h"
#include "reports/svg_chart.h"

enum { MAX_GROUP_LINES = 24 };

typedef struct bench_run {
    parity_history_bench_row *rows;
    size_t count;
} bench_run;

static bool same_group(const parity_history_bench_row *a, const parity_history_bench_row *b) {
    return strcmp(a->op, b->op) == 0 && strcmp(a->pass, b->pass) == 0 && strcmp(a->shape, b->shape) == 0 && strcmp(a->dtype, b->dtype) == 0;
}

static const parity_history_bench_row *find_row(const bench_run *run, const parity_history_bench_row *like) {
    for (size_t i = 0; i < run->count; i++)
        if (same_group(&run->rows[i], like) && strcmp(run->rows[i].backend, like->backend) == 0) return &run->rows[i];
    return NULL;
}

static double row_ms(const parity_history_bench_row *row) {
    return row && isfinite(row->median_ms) && row->median_ms > 0 ? row->median_ms : NAN;
}

// compare_time.h's rule on two bench rows (a row's noise is its recorded relative noise).
static void compare_rows(const parity_history_bench_row *base, const parity_history_bench_row *now, const parity_compare_options *options,
                         parity_time_comparison *out) {
    static const parity_combo_result empty;
    parity_combo_result a = empty, b = empty;
    a.median_ms = row_ms(base);
    a.noise = base ? base->noise : NAN;
    b.median_ms = row_ms(now);
    b.noise = now->noise;
    parity_compare_time(&a, &b, options->threshold, options->noise_factor, 0, 0, out);
}

static void append_row(parity_text *html, const parity_history_bench_row *row, const parity_history_bench_row *previous,
                       const parity_time_comparison *time) {
    bool regressed = time->verdict == PARITY_TIME_REGRESSION;
    parity_text_appendf(html, "<tr%s><td>", regressed ? " class=\"regressed\"" : "");
    parity_text_append_xml(html, row->op);
    parity_text_append(html, "</td><td>");
    parity_text_append_xml(html, row->pass);
    parity_text_append(html, "</td><td><code>");
    parity_text_append_xml(html, row->shape);
    parity_text_append(html, "</code></td><td>");
    parity_text_append_xml(html, row->dtype);
    parity_text_append(html, "</td><td><code>");
    parity_text_append_xml(html, row->backend);
    parity_text_appendf(html, "</code>%s</td>", row->is_peer ? " <small>(PyTorch peer)</small>" : "");
    char number[48], change[32];
    if (!row->ok) {
        parity_text_append(html, "<td class=\"num\">-</td><td class=\"reason\" colspan=\"3\">");
        parity_text_append_xml(html, row->status);
        parity_text_append(html, "</td>");
    } else {
        parity_text_appendf(html, "<td class=\"num\" data-v=\"%.17g\">%s", row->median_ms, parity_report_format(number, sizeof number, "%.4g", row->median_ms));
        if (isfinite(row->noise) && row->noise > 0) parity_text_appendf(html, " &plusmn;%.1f%%", 100 * row->noise);
        parity_text_append(html, "</td>");
        if (row->teraflops > 0) parity_text_appendf(html, "<td class=\"num\">%.1f TFLOP/s</td>", row->teraflops);
        else if (row->gigabytes_per_second > 0) parity_text_appendf(html, "<td class=\"num\">%.0f GB/s</td>", row->gigabytes_per_second);
        else parity_text_append(html, "<td class=\"num\">-</td>");
        if (row->gemm_fraction > 0) parity_text_appendf(html, "<td class=\"num\">%.0f%% <small>GEMM</small></td>", 100 * row->gemm_fraction);
        else if (row->copy_fraction > 0) parity_text_appendf(html, "<td class=\"num\">%.0f%% <small>copy</small></td>", 100 * row->copy_fraction);
        else parity_text_append(html, "<td class=\"num\">-</td>");
        if (!row->is_peer && row->peer_median_ms > 0 && isfinite(row->median_ms)) {
            parity_text_append(html, "<td class=\"num\" title=\"the peer's median / this row's: ");
            parity_text_append_xml_attribute(html, row->peer);
            parity_text_appendf(html, "\">%.2fx</td>", row->peer_median_ms / row->median_ms);
        } else {
            parity_text_append(html, "<td class=\"num\">-</td>");
        }
    }
    parity_text_appendf(html, "<td class=\"num\">%s</td>", parity_report_format(number, sizeof number, "%.4g", row_ms(previous)));
    if (time->verdict == PARITY_TIME_UNTIMED) {
        parity_text_append(html, "<td class=\"num\">-</td><td>-</td></tr>\n");
        return;
    }
    parity_text_appendf(html, "<td class=\"num\">%s</td><td class=\"%s\">%s <small>band &plusmn;%.1f%%</small></td></tr>\n",
                        dashboard_format_change(change, sizeof change, time->change),
                        regressed ? "mark" : time->verdict == PARITY_TIME_SPEEDUP ? "faster" : "",
                        regressed ? "REGRESSION" : time->verdict == PARITY_TIME_SPEEDUP ? "faster" : "same", 100 * time->limit);
}

// One chart: the rows of the group led by latest->rows[leader], over the runs.
static parity_error *append_group_chart(parity_text *html, const dashboard_section *section, const bench_run *runs, size_t n,
                                        size_t leader, const parity_time_comparison *times, const char *const *tick_labels) {
    const bench_run *latest = &runs[n - 1];
    const parity_history_bench_row *lead = &latest->rows[leader];
    size_t members[MAX_GROUP_LINES], member_count = 0;
    for (size_t i = leader; i < latest->count && member_count < MAX_GROUP_LINES; i++)
        if (same_group(&latest->rows[i], lead)) members[member_count++] = i;
    double x[PARITY_DASHBOARD_MAX_LAST];
    double (*y)[PARITY_DASHBOARD_MAX_LAST] = calloc(member_count, sizeof *y);
    double (*error)[PARITY_DASHBOARD_MAX_LAST] = calloc(member_count, sizeof *error);
    char (*names)[160] = calloc(member_count, sizeof *names);
    if (!y || !error || !names) {
        free(y), free(error), free(names);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory drawing a bench chart");
    }
    parity_svg_series series[MAX_GROUP_LINES];
    parity_svg_line lines[MAX_GROUP_LINES];
    size_t backends = 0, peers = 0;
    for (size_t r = 0; r < n; r++) x[r] = (double)r;
    for (size_t m = 0; m < member_count; m++) {
        const parity_history_bench_row *row = &latest->rows[members[m]];
        for (size_t r = 0; r < n; r++) {
            const parity_history_bench_row *then = find_row(&runs[r], row);
            y[m][r] = row_ms(then);
            error[m][r] = then && isfinite(then->noise) ? then->noise * y[m][r] : NAN;
        }
        char change[32];
        bool regressed = times[members[m]].verdict == PARITY_TIME_REGRESSION;
        snprintf(names[m], sizeof names[m], "%s%s%s%s%s", row->backend, row->is_peer ? " (PyTorch peer)" : "", regressed ? " [REGRESSION " : "",
                 regressed ? dashboard_format_change(change, sizeof change, times[members[m]].change) : "", regressed ? "]" : "");
        series[m] = (parity_svg_series){names[m], row->is_peer ? dashboard_peer_color(peers++) : dashboard_color(backends++)};
        lines[m] = (parity_svg_line){m, x, y[m], error[m], n};
    }
    char title[200];
    snprintf(title, sizeof title, "%s %s %s %s: median ms", lead->op, lead->pass, lead->shape, lead->dtype);
    parity_svg_line_chart chart = {.title = title,
                                   .x_label = "bench report (date, UTC)",
                                   .y_label = "ms",
                                   .series = series,
                                   .series_count = member_count,
                                   .lines = lines,
                                   .line_count = member_count,
                                   .x_tick_labels = tick_labels,
                                   .x_tick_count = n,
                                   .reference = NAN};
    parity_text_appendf(html, "<figure class=\"panel\" id=\"chart-%s-%zu\">", section->anchor, leader);
    parity_error *failure = parity_svg_line_chart_append(html, &chart);
    parity_text_append(html, "</figure>\n");
    free(y), free(error), free(names);
    return failure;
}

parity_error *dashboard_append_bench_section(parity_text *html, parity_history *history, const dashboard_section *section,
                                             const parity_dashboard_options *options, dashboard_overview *overview) {
    size_t n = section->run_count;
    bench_run *runs = calloc(n, sizeof *runs);
    if (!runs) return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory loading %zu bench reports", n);
    parity_error *error = NULL;
    for (size_t r = 0; !error && r < n; r++) error = parity_history_bench_rows(history, section->runs[r].id, &runs[r].rows, &runs[r].count);
    const bench_run *latest = &runs[n - 1];
    parity_time_comparison *times = error ? NULL : calloc(latest->count + 1, sizeof *times);
    if (!error && !times) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory comparing bench rows");
    if (!error) {
        size_t regressions = 0, speedups = 0, timed = 0;
        for (size_t i = 0; i < latest->count; i++) {
            const parity_history_bench_row *previous = n >= 2 ? find_row(&runs[n - 2], &latest->rows[i]) : NULL;
            compare_rows(previous, &latest->rows[i], &options->compare, &times[i]);
            regressions += times[i].verdict == PARITY_TIME_REGRESSION;
            speedups += times[i].verdict == PARITY_TIME_SPEEDUP;
            timed += times[i].verdict != PARITY_TIME_UNTIMED;
        }
        overview->regressions = regressions;
        overview->bad = regressions > 0;
        if (n < 2) snprintf(overview->verdict, sizeof overview->verdict, "the first bench report of this device: nothing to compare with");
        else if (regressions)
            snprintf(overview->verdict, sizeof overview->verdict, "REGRESSION: %zu slower%s (of %zu rows timed in both)", regressions,
                     speedups ? ", some faster" : "", timed);
        else if (speedups) snprintf(overview->verdict, sizeof overview->verdict, "OK: %zu faster (of %zu rows timed in both)", speedups, timed);
        else snprintf(overview->verdict, sizeof overview->verdict, "no change (%zu rows timed in both)", timed);

        const parity_history_run *run = &section->runs[n - 1];
        parity_text_appendf(html, "<section id=\"%s\">\n<h2>bench on ", section->anchor);
        parity_text_append_xml(html, section->device);
        parity_text_appendf(html, "</h2>\n<p class=\"sub\">latest: run %" PRId64 " &middot; ", run->id);
        parity_text_append_xml(html, run->started);
        parity_text_appendf(html, " &middot; %zu rows &middot; %zu bench report%s in the history, the last %zu drawn &middot; <code>", latest->count,
                            section->total_runs, section->total_runs == 1 ? "" : "s", n);
        parity_text_append_xml(html, run->source);
        parity_text_appendf(html, "</code></p>\n<p class=\"verdict %s\" id=\"verdict-%s\">", overview->bad ? "bad" : "good", section->anchor);
        parity_text_append_xml(html, overview->verdict);
        parity_text_append(html, "</p>\n<div class=\"panel\"><table class=\"sortable bench\"><thead><tr><th>op</th><th>pass</th><th>shape</th>"
                                 "<th>dtype</th><th>backend</th><th class=\"num\">median ms</th><th class=\"num\">rate</th>"
                                 "<th class=\"num\">of ceiling</th><th class=\"num\">vs peer</th><th class=\"num\">previous ms</th>"
                                 "<th class=\"num\">change</th><th>vs previous</th></tr></thead>\n<tbody>\n");
        // group by group (op, pass, shape, dtype), in order of first appearance: the peers beside their backends
        for (size_t i = 0; i < latest->count; i++) {
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++) seen = same_group(&latest->rows[j], &latest->rows[i]);
            for (size_t j = i; !seen && j < latest->count; j++)
                if (same_group(&latest->rows[j], &latest->rows[i]))
                    append_row(html, &latest->rows[j], n >= 2 ? find_row(&runs[n - 2], &latest->rows[j]) : NULL, &times[j]);
        }
        parity_text_append(html, "</tbody></table></div>\n");
        if (n < 2) {
            parity_text_append(html, "<p class=\"note\">one bench report of this device: its trends appear from the second one</p>\n");
        } else {
            char (*ticks)[24] = calloc(n, sizeof *ticks);
            const char **tick_labels = calloc(n, sizeof *tick_labels);
            if (!ticks || !tick_labels) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory drawing bench charts");
            for (size_t r = 0; !error && r < n; r++) {
                dashboard_date_label(section, r, ticks[r], sizeof ticks[r]);
                tick_labels[r] = ticks[r];
            }
            if (!error) parity_text_append(html, "<h3>Median ms over the last reports <small>each backend beside its PyTorch peers (grey)</small></h3>\n"
                                                 "<div class=\"charts\">\n");
            for (size_t i = 0; !error && i < latest->count; i++) {
                bool seen = false;
                for (size_t j = 0; j < i && !seen; j++) seen = same_group(&latest->rows[j], &latest->rows[i]);
                if (!seen) error = append_group_chart(html, section, runs, n, i, times, tick_labels);
            }
            if (!error) parity_text_append(html, "</div>\n");
            free(ticks);
            free(tick_labels);
        }
        parity_text_append(html, "</section>\n");
    }
    free(times);
    for (size_t r = 0; r < n; r++) free(runs[r].rows);
    free(runs);
    return error;
}

// html.c: report.html. Sections: title and verdict, counts, context, failures, the two gnuplot
// charts (tolerance-ratio heatmap, time relative to eager), every combo in one table (status
// colored, worst metric and its ratio, timing), reasons combos did not run, and every metric of
// every combo in collapsible <details> (no script needed), the K components of a gradient's sketch
// in one row: the worst of them (every component of a failing combo is in its Failures rows).
#include "reports/html.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/file.h"
#include "reports/gnuplot_charts.h"
#include "reports/report_analysis.h"
#include "reports/text_buffer.h"

static const char *const status_class[PARITY_COMBO_STATUS_COUNT] = {"pass", "fail", "unsupported", "error", "excluded"};

static const char style[] =
    "<style>\n"
    ":root{--pass:#1a7f37;--fail:#cf222e;--unsupported:#6e7781;--error:#8250df;--excluded:#a0a7b0;--line:#d8dee4;--muted:#57606a}\n"
    "*{box-sizing:border-box}\n"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif;color:#1f2328;margin:0;background:#f6f8fa}\n"
    "main{max-width:1500px;margin:0 auto;padding:24px 32px 48px}\n"
    "h1{font-size:26px;margin:0 0 4px}h2{font-size:19px;margin:34px 0 10px;padding-bottom:6px;border-bottom:1px solid var(--line)}\n"
    ".sub{color:var(--muted);margin:0 0 18px}\n"
    ".verdict{padding:12px 16px;border-radius:8px;font-weight:600;font-size:16px;margin:14px 0;color:#fff}\n"
    ".verdict.good{background:var(--pass)}.verdict.bad{background:var(--fail)}.verdict.none{background:var(--unsupported)}\n"
    ".cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}\n"
    ".card{background:#fff;border:1px solid var(--line);border-top:4px solid var(--c);border-radius:8px;padding:10px 18px;min-width:130px}\n"
    ".card b{display:block;font-size:28px;color:var(--c);line-height:1.1}.card span{color:var(--muted)}\n"
    ".panel{background:#fff;border:1px solid var(--line);border-radius:8px;padding:14px 18px;overflow-x:auto}\n"
    "dl.context{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}\n"
    "dl.context dt{color:var(--muted)}dl.context dd{margin:0;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;overflow-wrap:anywhere}\n"
    "table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}\n"
    "th,td{padding:5px 9px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}\n"
    "th{position:sticky;top:0;background:#eaeef2;font-weight:600;white-space:nowrap;border-bottom:2px solid #afb8c1}\n"
    "tbody tr:nth-child(even){background:#f9fafb}tbody tr:hover{background:#eef4ff}\n"
    "td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "td.id,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}\n"
    "td.id{min-width:300px}td.metric{min-width:190px;max-width:260px}\n"
    "tr.s-pass td:first-child{border-left:4px solid var(--pass)}tr.s-fail td:first-child{border-left:4px solid var(--fail)}\n"
    "tr.s-unsupported td:first-child{border-left:4px solid var(--unsupported)}tr.s-error td:first-child{border-left:4px solid var(--error)}\n"
    "tr.s-excluded td:first-child{border-left:4px solid var(--excluded)}\n"
    ".pill{display:inline-block;padding:1px 9px;border-radius:10px;color:#fff;font-size:12px;font-weight:600;white-space:nowrap}\n"
    ".pill.pass{background:var(--pass)}.pill.fail{background:var(--fail)}.pill.unsupported{background:var(--unsupported)}\n"
    ".pill.error{background:var(--error)}.pill.excluded{background:var(--excluded)}\n"
    ".r-ok{color:var(--pass)}.r-near{color:#9a6700;font-weight:600}.r-over{color:var(--fail);font-weight:700}\n"
    ".faster{color:var(--pass);font-weight:600}.slower{color:#bc4c00}\n"
    ".reason{color:var(--muted);min-width:200px;max-width:420px;overflow-wrap:anywhere}\n"
    "figure{margin:0}figure .chart{max-width:100%}figure svg{width:100%;height:auto;display:block}\n"
    "figcaption{color:var(--muted);margin-top:8px}\n"
    ".note{padding:18px;border:2px dashed #afb8c1;border-radius:8px;color:var(--muted);text-align:center;font-weight:600;background:#fff}\n"
    ".note.problem{border-color:var(--fail);color:var(--fail)}\n"
    "details{background:#fff;border:1px solid var(--line);border-radius:6px;margin:6px 0}\n"
    "details summary{cursor:pointer;padding:6px 10px;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}\n"
    "details table{border-top:1px solid var(--line)}\n"
    "footer{color:var(--muted);margin-top:36px;font-size:12px}\n"
    "</style>\n";

static void escaped(parity_text *html, const char *text) { parity_text_append_xml(html, text); }

// A combo id or metric name that may break after / , . : (not inside a backend or parameter name).
static void escaped_breakable(parity_text *html, const char *text) {
    for (const char *c = text; *c; c++) {
        char one[2] = {*c, '\0'};
        escaped(html, one);
        if (strchr("/,.:", *c)) parity_text_append(html, "<wbr>");
    }
}

static const char *ratio_class(double ratio) {
    if (isnan(ratio) || ratio > 1) return "r-over";
    return ratio > 0.5 ? "r-near" : "r-ok";
}

static void append_pill(parity_text *html, parity_combo_status status) {
    parity_text_appendf(html, "<span class=\"pill %s\">%s</span>", status_class[status], parity_report_status_label(status));
}

static void append_head(parity_text *html, const parity_results *results, const size_t counts[]) {
    const parity_results_context *context = &results->context;
    parity_text_append(html, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>parity: ");
    escaped(html, context->suite);
    parity_text_append(html, " on ");
    escaped(html, context->device);
    parity_text_append(html, "</title>\n");
    parity_text_append(html, style);
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
    size_t ran = counts[PARITY_COMBO_PASS] + counts[PARITY_COMBO_FAIL];
    if (counts[PARITY_COMBO_FAIL] || counts[PARITY_COMBO_ERROR])
        parity_text_appendf(html, "<div class=\"verdict bad\">%zu of %zu combos failed, %zu could not run (error)</div>\n",
                            counts[PARITY_COMBO_FAIL], ran, counts[PARITY_COMBO_ERROR]);
    else if (ran)
        parity_text_appendf(html, "<div class=\"verdict good\">All %zu combos that ran are within tolerance</div>\n", ran);
    else
        parity_text_append(html, "<div class=\"verdict none\">No combo ran</div>\n");
    parity_text_append(html, "<div class=\"cards\">\n");
    const char *labels[PARITY_COMBO_STATUS_COUNT] = {"pass", "fail", "not supported", "error", "excluded"};
    for (int status = 0; status < PARITY_COMBO_STATUS_COUNT; status++)
        parity_text_appendf(html, "<div class=\"card\" style=\"--c:var(--%s)\"><b>%zu</b><span>%s</span></div>\n", status_class[status],
                            counts[status], labels[status]);
    parity_text_appendf(html, "<div class=\"card\" style=\"--c:#1f2328\"><b>%zu</b><span>combos</span></div>\n</div>\n",
                        results->combo_count);
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
    append_context_item(html, "command", context->command);
    append_context_item(html, "started", context->started);
    append_context_item(html, "finished", context->finished);
    append_context_item(html, "interrupted", context->interrupted);
    append_context_item(html, "tolerance rule", context->tolerance_rule);
    append_context_item(html, "timing", context->timing_method);
    parity_text_append(html, "</dl></div>\n");
}

// One metric's row; `worst_of` > 1: it is the worst of that many sketch components, and says so.
static void append_metric_row(parity_text *html, const parity_metric *metric, const char *combo_id, size_t worst_of) {
    char value[40], golden[40], error[32], tolerance[32], ratio[32];
    parity_text_append(html, "<tr>");
    if (combo_id) {
        parity_text_append(html, "<td class=\"id\">");
        escaped(html, combo_id);
        parity_text_append(html, "</td>");
    }
    parity_text_append(html, "<td><code>");
    escaped(html, metric->name);
    parity_text_append(html, "</code>");
    if (worst_of > 1) parity_text_appendf(html, " (worst of %zu)", worst_of);
    parity_text_appendf(html, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                              "<td>%s</td><td class=\"num %s\">%s</td><td>%s</td></tr>\n",
                        parity_report_format(value, sizeof value, "%.9g", metric->value),
                        parity_report_format(golden, sizeof golden, "%.9g", metric->golden),
                        parity_report_format(error, sizeof error, "%.3e", metric->error),
                        parity_report_format(tolerance, sizeof tolerance, "%.3e", metric->tolerance),
                        metric->basis[0] ? metric->basis : "-", ratio_class(metric->ratio),
                        parity_report_format(ratio, sizeof ratio, "%.3g", metric->ratio), metric->pass ? "pass" : "<b>FAIL</b>");
}

static const char metric_header[] = "<th>metric</th><th class=\"num\">value</th><th class=\"num\">golden</th><th class=\"num\">error</th>"
                                    "<th class=\"num\">tolerance</th><th>tolerance from</th><th class=\"num\">ratio</th><th></th>";

static void append_failures(parity_text *html, const parity_results *results, const size_t counts[]) {
    if (!counts[PARITY_COMBO_FAIL] && !counts[PARITY_COMBO_ERROR]) return;
    parity_text_append(html, "<h2>Failures</h2>\n<div class=\"panel\"><table>\n<thead><tr><th>combo</th>");
    parity_text_append(html, metric_header);
    parity_text_append(html, "</tr></thead>\n<tbody>\n");
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (combo->status != PARITY_COMBO_FAIL && combo->status != PARITY_COMBO_ERROR) continue;
        bool any = false;
        for (size_t m = 0; m < combo->metric_count; m++) {
            if (combo->metrics[m].pass) continue;
            append_metric_row(html, &combo->metrics[m], combo->id, 1);
            any = true;
        }
        if (!any || combo->status == PARITY_COMBO_ERROR) {
            parity_text_append(html, "<tr><td class=\"id\">");
            escaped(html, combo->id);
            parity_text_appendf(html, "</td><td colspan=\"8\">");
            append_pill(html, combo->status);
            parity_text_append(html, " ");
            escaped(html, combo->reason[0] ? combo->reason : "(no reason recorded)");
            parity_text_append(html, "</td></tr>\n");
        }
    }
    parity_text_append(html, "</tbody></table></div>\n");
}

// The SVG's natural width (its viewBox), so the page does not blow a small chart up.
static int svg_width(const char *svg) {
    const char *box = strstr(svg, "viewBox=\"0 0 ");
    return box ? atoi(box + 13) : 0;
}

static void append_chart(parity_text *html, const char *title, const char *caption, const parity_chart *chart, parity_error *error) {
    parity_text_appendf(html, "<h2>%s</h2>\n<figure class=\"panel\">\n", title);
    if (error) {
        char message[1024];
        parity_error_format(error, message, sizeof message);
        parity_text_append(html, "<div class=\"note problem\">chart failed: ");
        escaped(html, message);
        parity_text_append(html, "</div>\n");
    } else if (!chart->svg) {
        parity_text_append(html, "<div class=\"note\">");
        escaped(html, chart->note);
        parity_text_append(html, "</div>\n");
    } else {
        parity_text_appendf(html, "<div class=\"chart\" style=\"max-width:%dpx\">\n", svg_width(chart->svg));
        parity_text_append(html, chart->svg);
        parity_text_append(html, "\n</div>\n");
    }
    parity_text_append(html, "<figcaption>");
    escaped(html, caption);
    if (!error && chart->svg && chart->note[0]) {
        parity_text_append(html, " Note: ");
        escaped(html, chart->note);
        parity_text_append(html, ".");
    }
    parity_text_append(html, "</figcaption>\n</figure>\n");
}

static void append_charts(parity_text *html, const parity_results *results, const char *gnuplot) {
    parity_chart chart;
    parity_error *error = parity_chart_ratio_heatmap(gnuplot, results, &chart);
    append_chart(html, "Tolerance headroom",
                 "Error / tolerance per combo and metric (log color scale). At most 1 passes; the closer to 1, the less headroom. "
                 "'worst parameter', 'worst sketch' and 'worst cosine' are the per-gradient norm, sketch component and "
                 "sketch cosine (every parameter's, and the loss input's) with the largest ratio; NaN marks a NaN value.",
                 &chart, error);
    parity_error_free(error);
    parity_chart_free(&chart);
    error = parity_chart_relative_time(gnuplot, results, &chart);
    append_chart(html, "Time relative to eager",
                 "Median time of each combo divided by the eager baseline's of the same model, batch, dtype and device "
                 "(grey: eager; green: faster; orange: slower; red: faster or not, the combo does not pass).",
                 &chart, error);
    parity_error_free(error);
    parity_chart_free(&chart);
}

static void append_combo_row(parity_text *html, const parity_results *results, size_t index) {
    const parity_combo_result *combo = &results->combos[index];
    char cell[64];
    parity_text_appendf(html, "<tr class=\"s-%s\"><td class=\"num\">%zu</td><td class=\"id\">", status_class[combo->status], index + 1);
    escaped_breakable(html, combo->id);
    parity_text_append(html, "</td><td>");
    append_pill(html, combo->status);
    parity_text_append(html, "</td>");
    const parity_metric *worst = parity_report_worst_metric(combo, NULL);
    if (worst) {
        parity_text_append(html, "<td class=\"metric\"><code>");
        escaped_breakable(html, worst->name);
        parity_text_appendf(html, "</code></td><td class=\"num %s\">%s</td>", ratio_class(worst->ratio),
                            parity_report_format(cell, sizeof cell, "%.3g", worst->ratio));
    } else {
        parity_text_append(html, "<td></td><td></td>");
    }
    if (parity_report_is_timed(combo)) {
        parity_text_appendf(html, "<td class=\"num\">%.3f</td>", combo->median_ms);
        parity_text_appendf(html, "<td class=\"num\">%s</td>", parity_report_format(cell, sizeof cell, "%.1f%%", 100 * combo->noise));
        double relative = parity_report_relative_time(results, combo);
        if (isfinite(relative))
            parity_text_appendf(html, "<td class=\"num %s\">%.2fx</td>",
                                combo->is_eager_baseline || combo->status != PARITY_COMBO_PASS ? ""
                                : relative < 0.98                                             ? "faster"
                                : relative > 1.02                                             ? "slower"
                                                                                              : "",
                                relative);
        else
            parity_text_append(html, "<td class=\"num\">-</td>");
        double tokens = parity_report_tokens_per_second(combo);
        parity_text_appendf(html, "<td class=\"num\">%s</td>", isfinite(tokens) ? parity_report_format(cell, sizeof cell, "%.0f", tokens) : "-");
        parity_text_appendf(html, "<td class=\"num\">%s</td>", parity_report_format_bytes(cell, sizeof cell, combo->peak_memory_bytes));
    } else {
        parity_text_append(html, "<td class=\"num\">-</td><td></td><td></td><td></td><td></td>");
    }
    parity_text_append(html, "<td class=\"reason\">");
    if (combo->is_eager_baseline) parity_text_append(html, "<i>eager baseline</i> ");
    escaped(html, combo->reason);
    parity_text_append(html, "</td></tr>\n");
}

static void append_combos(parity_text *html, const parity_results *results) {
    parity_text_append(html, "<h2>Every combo</h2>\n<div class=\"panel\"><table>\n<thead><tr><th class=\"num\">#</th><th>combo</th>"
                             "<th>status</th><th>worst metric</th><th class=\"num\">ratio</th>"
                             "<th class=\"num\">median ms</th><th class=\"num\">noise</th><th class=\"num\">vs eager</th>"
                             "<th class=\"num\">tokens/s</th><th class=\"num\">peak memory</th><th>reason</th></tr></thead>\n<tbody>\n");
    for (size_t i = 0; i < results->combo_count; i++) append_combo_row(html, results, i);
    parity_text_append(html, "</tbody></table></div>\n");
}

static void append_reasons(parity_text *html, const parity_results *results, parity_combo_status status, const char *title) {
    size_t first = parity_report_next_reason_group(results, status, 0);
    if (first == results->combo_count) return;
    parity_text_appendf(html, "<h2>%s</h2>\n<div class=\"panel\"><table>\n<thead><tr><th>reason</th><th class=\"num\">combos</th>"
                              "<th>which</th></tr></thead>\n<tbody>\n", title);
    for (size_t i = first; i < results->combo_count; i = parity_report_next_reason_group(results, status, i + 1)) {
        const parity_combo_result *leader = &results->combos[i];
        parity_text_append(html, "<tr><td>");
        escaped(html, leader->reason[0] ? leader->reason : "(no reason recorded)");
        parity_text_appendf(html, "</td><td class=\"num\">%zu</td><td class=\"id\">", parity_report_reason_group_size(results, i));
        bool first_member = true;
        for (size_t j = i; j < results->combo_count; j++) {
            if (!parity_report_same_reason(leader, &results->combos[j])) continue;
            if (!first_member) parity_text_append(html, "<br>");
            first_member = false;
            escaped(html, results->combos[j].id);
        }
        parity_text_append(html, "</td></tr>\n");
    }
    parity_text_append(html, "</tbody></table></div>\n");
}

static void append_metric_details(parity_text *html, const parity_results *results) {
    parity_text_append(html, "<h2>Every metric</h2>\n<p class=\"sub\">The components of a gradient's sketch are one row, the "
                             "worst of them (results.json has each; a failing one is also under Failures).</p>\n");
    bool any = false;
    for (size_t i = 0; i < results->combo_count; i++) {
        const parity_combo_result *combo = &results->combos[i];
        if (combo->metric_count == 0) continue;
        any = true;
        size_t failed = 0;
        for (size_t m = 0; m < combo->metric_count; m++) failed += !combo->metrics[m].pass;
        parity_text_appendf(html, "<details%s><summary>", failed ? " open" : "");
        append_pill(html, combo->status);
        parity_text_append(html, " ");
        escaped(html, combo->id);
        parity_text_appendf(html, " &middot; %zu metrics%s</summary>\n<table><thead><tr>%s</tr></thead><tbody>\n", combo->metric_count,
                            failed ? ", some failing" : "", metric_header);
        for (size_t m = 0, run; m < combo->metric_count; m += run) {
            run = parity_report_sketch_run(combo, m);
            const parity_metric *shown = &combo->metrics[m];
            for (size_t j = 1; j < run; j++)
                if (parity_report_ratio_rank(combo->metrics[m + j].ratio) > parity_report_ratio_rank(shown->ratio))
                    shown = &combo->metrics[m + j];
            append_metric_row(html, shown, NULL, run);
        }
        parity_text_append(html, "</tbody></table></details>\n");
    }
    if (!any) parity_text_append(html, "<p class=\"sub\">No combo recorded metrics.</p>\n");
}

parity_error *parity_report_write_html(const char *path, const parity_results *results, const char *gnuplot) {
    parity_text html = {0};
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(results, counts);
    append_head(&html, results, counts);
    append_context(&html, &results->context);
    append_failures(&html, results, counts);
    append_charts(&html, results, gnuplot);
    append_combos(&html, results);
    append_reasons(&html, results, PARITY_COMBO_NOT_SUPPORTED, "Not supported");
    append_reasons(&html, results, PARITY_COMBO_EXCLUDED, "Excluded by the suite");
    append_metric_details(&html, results);
    parity_text_append(&html, "<footer>Rendered by parity from results.json (re-render with <code>parity report DIR</code>). "
                              "Self-contained: no scripts, no network.</footer>\n</main>\n</body>\n</html>\n");
    parity_error *error = parity_text_check(&html, path);
    if (!error) error = parity_write_file_atomic(path, html.data, html.length, true);
    parity_text_free(&html);
    return error;
}

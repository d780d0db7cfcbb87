// html_charts.c: the bars of html_charts.h's two charts, drawn by svg_chart.c.
#include "reports/html_charts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_analysis.h"
#include "reports/svg_chart.h"

enum { TIME_EAGER, TIME_FASTER, TIME_SAME, TIME_SLOWER, TIME_NOT_PASSING, TIME_SERIES };

static const parity_svg_series time_series[TIME_SERIES] = {
    {"eager baseline", "#8c959f"},
    {"faster beyond noise", "#1a7f37"},
    {"same within noise", "#54aeff"},
    {"slower beyond noise", "#e16f24"},
    {"does not pass (fast but wrong is not fast)", "#cf222e"},
};

static const parity_svg_series headroom_series[PARITY_REPORT_HEATMAP_COLUMNS] = {
    {"loss", "#0969da"},          {"aux_loss", "#8250df"},     {"grad_norm", "#1a7f37"},
    {"worst parameter norm", "#bf8700"}, {"worst sketch component", "#e16f24"}, {"worst sketch cosine", "#cf222e"},
};

static void open_figure(parity_text *html, const char *id, const char *title) {
    parity_text_appendf(html, "<h2 id=\"%s\">%s</h2>\n<figure class=\"panel\">\n", id, title);
}

static void close_figure(parity_text *html, const char *caption, const char *note) {
    parity_text_append(html, "<figcaption>");
    parity_text_append_xml(html, caption);
    if (note && note[0]) {
        parity_text_append(html, " Note: ");
        parity_text_append_xml(html, note);
        parity_text_append(html, ".");
    }
    parity_text_append(html, "</figcaption>\n</figure>\n");
}

static void append_note(parity_text *html, const char *class, const char *text) {
    parity_text_appendf(html, "<div class=\"%s\">", class);
    parity_text_append_xml(html, text);
    parity_text_append(html, "</div>\n");
}

static void append_svg(parity_text *html, const parity_svg_bar_chart *chart) {
    parity_error *error = parity_svg_bar_chart_append(html, chart);
    if (error) {
        char message[600], line[700];
        parity_error_format(error, message, sizeof message);
        snprintf(line, sizeof line, "chart failed: %s", message);
        append_note(html, "note problem", line);
        parity_error_free(error);
    }
    parity_text_append(html, "\n");
}

static int by_median(const void *a, const void *b) {
    const parity_combo_result *x = *(const parity_combo_result *const *)a, *y = *(const parity_combo_result *const *)b;
    return x->median_ms < y->median_ms ? -1 : x->median_ms > y->median_ms;
}

// ---- (a) time relative to eager ----

static void append_time_chart(parity_text *html, const parity_results *results) {
    size_t n = results->combo_count;
    parity_svg_bar *bars = calloc(n + 1, sizeof *bars);
    char (*notes)[96] = calloc(n + 1, sizeof *notes), (*labels)[160] = calloc(n + 1, sizeof *labels);
    const parity_combo_result **members = malloc((n + 1) * sizeof *members);
    bool *placed = calloc(n + 1, sizeof *placed);
    open_figure(html, "time", "Time relative to eager");
    if (!bars || !notes || !labels || !members || !placed) {
        append_note(html, "note problem", "out of memory drawing the time chart");
        free(bars), free(notes), free(labels), free(members), free(placed);
        return;
    }
    size_t count = 0, unplaced = 0, left_out = 0;
    double largest = 1;
    for (size_t g = 0; g < n; g++) {
        if (placed[g]) continue;
        const parity_combo_result *baseline = parity_report_baseline(results, &results->combos[g]);
        size_t member_count = 0;
        for (size_t i = g; i < n; i++) {
            const parity_combo_result *combo = &results->combos[i];
            if (placed[i] || !parity_report_same_group(combo, &results->combos[g])) continue;
            placed[i] = true;
            if (!isfinite(parity_report_relative_time(results, combo))) {
                unplaced += parity_report_is_timed(combo);
                continue;
            }
            if (combo != baseline) members[member_count++] = combo;
        }
        if (!baseline || !isfinite(parity_report_relative_time(results, baseline))) continue;
        qsort(members, member_count, sizeof *members, by_median);
        if (member_count > PARITY_HTML_TIME_BARS_PER_GROUP) {
            left_out += member_count - PARITY_HTML_TIME_BARS_PER_GROUP;
            member_count = PARITY_HTML_TIME_BARS_PER_GROUP;
        }
        for (size_t k = 0; k <= member_count; k++) {
            const parity_combo_result *combo = k == 0 ? baseline : members[k - 1];
            double relative = parity_report_relative_time(results, combo), noise = parity_report_combined_noise(combo, baseline);
            size_t series = combo == baseline                     ? TIME_EAGER
                            : combo->status != PARITY_COMBO_PASS  ? TIME_NOT_PASSING
                            : parity_report_within_noise(relative, noise) ? TIME_SAME
                            : relative < 1                        ? TIME_FASTER
                                                                  : TIME_SLOWER;
            if (combo == baseline) noise = isfinite(baseline->noise) ? baseline->noise : 0;
            snprintf(notes[count], sizeof notes[count], "%s%.2fx \xc2\xb1%.1f%% \xc2\xb7 %.3g ms", series == TIME_SAME ? "same " : "", relative,
                     100 * noise, combo->median_ms);
            parity_report_short_label(combo, labels[count], sizeof labels[count]);
            bars[count] = (parity_svg_bar){labels[count], k == 0 && count > 0, series, relative, relative * noise, relative * noise, notes[count]};
            if (relative * (1 + noise) > largest) largest = relative * (1 + noise);
            count++;
        }
    }
    char note[300] = "";
    if (left_out)
        snprintf(note, sizeof note, "%zu slower combo%s left out of the chart (at most %d a group; the table has every combo)", left_out,
                 left_out == 1 ? " is" : "s are", PARITY_HTML_TIME_BARS_PER_GROUP);
    if (unplaced) {
        size_t used = strlen(note);
        snprintf(note + used, sizeof note - used, "%s%zu timed combo%s no timed eager baseline of the same model, batch, dtype and device",
                 used ? "; " : "", unplaced, unplaced == 1 ? " has" : "s have");
    }
    if (count == 0) {
        append_note(html, "note", unplaced ? note : "no timed combo has a timed eager baseline to compare with");
        close_figure(html, "Median time of each combo over its eager baseline's.", NULL);
    } else {
        parity_svg_bar_chart chart = {
            .title = NULL,
            .axis_label = "median time / eager median (same model, batch, dtype, device): below 1 is faster; error bars: combined noise",
            .series = time_series,
            .series_count = TIME_SERIES,
            .bars = bars,
            .bar_count = count,
            .axis_max = largest > 4 ? 4 : largest * 1.05,
            .reference = 1,
        };
        append_svg(html, &chart);
        close_figure(html,
                     "Per group, its eager baseline (labeled with the group) and its fastest combos (labeled with their non-eager "
                     "choices; the table below has the full ids). A combo is 'same' when its time is within the combined noise "
                     "(sqrt of the two noises squared) of eager's; bars longer than 4x are cut at 4.",
                     note);
    }
    free(bars), free(notes), free(labels), free(members), free(placed);
}

// ---- (b) tolerance headroom ----

static void append_headroom_chart(parity_text *html, const parity_results *results) {
    size_t n = results->combo_count;
    parity_svg_bar *bars = calloc(n * PARITY_REPORT_HEATMAP_COLUMNS + 1, sizeof *bars);
    char (*notes)[96] = calloc(n * PARITY_REPORT_HEATMAP_COLUMNS + 1, sizeof *notes);
    open_figure(html, "headroom", "Tolerance headroom");
    if (!bars || !notes) {
        append_note(html, "note problem", "out of memory drawing the headroom chart");
        free(bars), free(notes);
        return;
    }
    size_t count = 0;
    double largest = 1;
    for (size_t g = 0; g < n; g++) {
        const char *model = results->combos[g].model;
        bool seen = false;
        for (size_t j = 0; j < g && !seen; j++) seen = strcmp(results->combos[j].model, model) == 0;
        if (seen) continue;
        size_t first = count;
        for (int column = 0; column < PARITY_REPORT_HEATMAP_COLUMNS; column++) {
            const parity_metric *worst = NULL;
            const parity_combo_result *where = NULL;
            for (size_t i = g; i < n; i++) {
                const parity_combo_result *combo = &results->combos[i];
                if (strcmp(combo->model, model) != 0 || combo->is_eager_baseline) continue;
                const parity_metric *metric = parity_report_heatmap_metric(combo, column);
                if (metric && (!worst || parity_report_ratio_rank(metric->ratio) > parity_report_ratio_rank(worst->ratio))) {
                    worst = metric;
                    where = combo;
                }
            }
            if (!worst) continue;
            char ratio[32];
            parity_report_format(ratio, sizeof ratio, "%.2g", worst->ratio);
            snprintf(notes[count], sizeof notes[count], "%s%s", ratio, where->status == PARITY_COMBO_PASS ? "" : " (fails)");
            double value = isnan(worst->ratio) ? INFINITY : worst->ratio;
            if (isfinite(value) && value > largest) largest = value;
            bars[count] = (parity_svg_bar){count == first ? model : "", count == first && count > 0, (size_t)column, value, 0, 0, notes[count]};
            count++;
        }
    }
    if (count == 0) {
        append_note(html, "note", "no combo other than the eager baselines has metrics to chart (none ran to completion)");
    } else {
        parity_svg_bar_chart chart = {
            .axis_label = "worst error / tolerance over the model's combos (at most 1 passes; bars past 3 are cut)",
            .series = headroom_series,
            .series_count = PARITY_REPORT_HEATMAP_COLUMNS,
            .bars = bars,
            .bar_count = count,
            .axis_max = largest > 3 ? 3 : largest * 1.1,
            .reference = 1,
        };
        append_svg(html, &chart);
    }
    close_figure(html,
                 "Per model, the largest error / tolerance of each metric family over its combos (eager baselines left out: theirs is "
                 "1/k by construction). The closer to 1, the less headroom; NaN marks a NaN value.",
                 NULL);
    free(bars), free(notes);
}

void parity_html_append_charts(parity_text *html, const parity_results *results) {
    if (!results->combo_count) return;
    append_time_chart(html, results);
    append_headroom_chart(html, results);
}

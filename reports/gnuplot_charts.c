// gnuplot_charts.c: data files and gnuplot scripts for the heatmap and the relative-time chart.
#include "reports/gnuplot_charts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/gnuplot_runner.h"
#include "reports/report_analysis.h"

enum { ROW_PIXELS = 20, CHARACTER_PIXELS = 6 };

static size_t label_pixels(size_t longest_label) { return longest_label * CHARACTER_PIXELS + 24; }

// Writes the data files, runs the script and cleans up, whatever happens.
static parity_error *draw(const char *gnuplot, const parity_text *cells, const parity_text *missing, const parity_text *script, int width,
                          int height, const char *prefix, parity_chart *chart) {
    parity_gnuplot_job job = {0};
    parity_error *error = parity_gnuplot_job_start(&job);
    if (!error) error = parity_gnuplot_job_write(&job, "cells.dat", cells);
    if (!error && missing) error = parity_gnuplot_job_write(&job, "missing.dat", missing);
    if (!error) error = parity_gnuplot_job_run(&job, gnuplot, width, height, script, prefix, &chart->svg);
    parity_gnuplot_job_finish(&job);
    return error;
}

// The y axis: one tic per row, labeled with the combo id, first row on top.
static void append_row_tics(parity_text *script, const parity_combo_result *const *rows, size_t count) {
    parity_text_appendf(script, "set yrange [%zu.5:-0.5]\nset ytics scale 0 (", count - 1);
    for (size_t i = 0; i < count; i++) {
        if (i) parity_text_append(script, ", ");
        parity_gnuplot_append_quoted(script, rows[i]->id);
        parity_text_appendf(script, " %zu", i);
    }
    parity_text_append(script, ")\n");
}

// ---- (a) tolerance-ratio heatmap ----

// log10 of the ratio, clipped to the color range [-3, 1]; NaN (a NaN value) is the worst.
static double heat(double ratio) {
    if (isnan(ratio) || ratio >= 10) return 1;
    if (ratio <= 1e-3) return -3;
    return log10(ratio);
}

parity_error *parity_chart_ratio_heatmap(const char *gnuplot, const parity_results *results, parity_chart *chart) {
    *chart = (parity_chart){0};
    if (!gnuplot) {
        snprintf(chart->note, sizeof chart->note, PARITY_CHART_NO_GNUPLOT);
        return NULL;
    }
    const parity_combo_result **rows = malloc((results->combo_count + 1) * sizeof *rows);
    if (!rows) return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory drawing the heatmap");
    size_t count = 0, longest = 0, missing_count = 0;
    for (size_t i = 0; i < results->combo_count; i++) {
        if (results->combos[i].metric_count == 0) continue;
        rows[count++] = &results->combos[i];
        if (strlen(results->combos[i].id) > longest) longest = strlen(results->combos[i].id);
    }
    if (count == 0) {
        free(rows);
        snprintf(chart->note, sizeof chart->note, "no combo has metrics to chart (none ran to completion)");
        return NULL;
    }
    parity_text cells = {0}, missing = {0}, script = {0};
    for (size_t row = 0; row < count; row++) {
        for (int column = 0; column < PARITY_REPORT_HEATMAP_COLUMNS; column++) {
            const parity_metric *metric = parity_report_heatmap_metric(rows[row], column);
            if (!metric) {
                parity_text_appendf(&missing, "%d %zu\n", column, row);
                missing_count++;
                continue;
            }
            char label[32];
            parity_report_format(label, sizeof label, "%.2g", metric->ratio);
            double color = heat(metric->ratio); // white text on the dark ends of the palette
            parity_text_appendf(&cells, "%d %zu %.6f \"%s\" %u\n", column, row, color, label,
                                color > 0.4 || color < -2.6 ? 0xffffffu : 0x111111u);
        }
    }
    size_t left = label_pixels(longest);
    int width = (int)(left + PARITY_REPORT_HEATMAP_COLUMNS * 130 + 30), height = (int)(50 + count * ROW_PIXELS + 100);
    parity_text_appendf(&script,
                        "set lmargin at screen %.5f\nset rmargin at screen %.5f\nset tmargin at screen %.5f\nset bmargin at screen %.5f\n",
                        (double)left / width, 1.0 - 30.0 / width, 1.0 - 50.0 / height, 100.0 / height);
    parity_text_appendf(&script, "unset key\nset border 0\nset xrange [-0.5:%d.5]\nset x2range [-0.5:%d.5]\nunset xtics\n",
                        PARITY_REPORT_HEATMAP_COLUMNS - 1, PARITY_REPORT_HEATMAP_COLUMNS - 1);
    parity_text_append(&script, "set x2tics scale 0 (");
    for (int column = 0; column < PARITY_REPORT_HEATMAP_COLUMNS; column++)
        parity_text_appendf(&script, "%s'%s' %d", column ? ", " : "", parity_report_heatmap_column(column), column);
    parity_text_append(&script, ")\n");
    parity_text_append(&script,
                       "set cbrange [-3:1]\n"
                       "set palette defined (-3 '#1a9850', -2 '#66bd63', -1 '#a6d96a', -0.35 '#fee08b', 0 '#fdae61', 0.0001 '#e34a33', 1 '#b30000')\n"
                       "set cbtics ('0.001' -3, '0.01' -2, '0.1' -1, '1' 0, '10+' 1)\n"
                       "set cblabel 'error / tolerance (log scale): at most 1 passes; grey: metric not in this model'\n");
    parity_text_appendf(&script, "set colorbox horizontal user origin screen %.5f, screen %.5f size screen %.5f, screen %.5f\n",
                        (double)left / width, 58.0 / height, 1.0 - 30.0 / width - (double)left / width, 12.0 / height);
    append_row_tics(&script, rows, count);
    parity_text_append(&script, "plot 'cells.dat' using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 border lc rgb 'white' fc palette");
    if (missing_count)
        parity_text_append(&script, ", 'missing.dat' using 1:2:(0.5):(0.5) with boxxyerror fs solid 1.0 border lc rgb 'white' fc rgb '#e8e8e8'");
    parity_text_append(&script, ", 'cells.dat' using 1:2:4:5 with labels font ',10' tc rgb variable\n");
    parity_error *error = draw(gnuplot, &cells, missing_count ? &missing : NULL, &script, width, height, "heatmap-", chart);
    parity_text_free(&cells);
    parity_text_free(&missing);
    parity_text_free(&script);
    free(rows);
    return error ? parity_error_wrap(error, __FILE__, __LINE__, "drawing the tolerance-ratio heatmap") : NULL;
}

// ---- (b) time relative to eager ----

static unsigned bar_color(const parity_combo_result *combo, double relative) {
    if (combo->is_eager_baseline) return 0x9e9e9e;
    if (combo->status != PARITY_COMBO_PASS) return 0xd73027; // fast but wrong is not fast
    if (relative < 0.98) return 0x1a9850;
    if (relative > 1.02) return 0xf08c3a;
    return 0x74a9cf;
}

parity_error *parity_chart_relative_time(const char *gnuplot, const parity_results *results, parity_chart *chart) {
    *chart = (parity_chart){0};
    if (!gnuplot) {
        snprintf(chart->note, sizeof chart->note, PARITY_CHART_NO_GNUPLOT);
        return NULL;
    }
    const parity_combo_result **rows = malloc((results->combo_count + 1) * sizeof *rows);
    bool *placed = calloc(results->combo_count + 1, sizeof *placed);
    if (!rows || !placed) {
        free(rows);
        free(placed);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory drawing the time chart");
    }
    // Rows grouped by model/batch/dtype/device in order of first appearance, the baseline first.
    size_t count = 0, longest = 0, unplaced = 0;
    parity_text separators = {0};
    for (size_t g = 0; g < results->combo_count; g++) {
        if (placed[g]) continue;
        const parity_combo_result *baseline = parity_report_baseline(results, &results->combos[g]);
        size_t group_start = count;
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = g; i < results->combo_count; i++) {
                const parity_combo_result *combo = &results->combos[i];
                if (placed[i] || !parity_report_same_group(combo, &results->combos[g])) continue;
                if ((pass == 0) != (combo == baseline)) continue;
                placed[i] = true;
                if (!isfinite(parity_report_relative_time(results, combo))) {
                    unplaced += parity_report_is_timed(combo);
                    continue;
                }
                rows[count++] = combo;
                if (strlen(combo->id) > longest) longest = strlen(combo->id);
            }
        }
        if (group_start > 0 && count > group_start)
            parity_text_appendf(&separators, "set arrow from graph 0, first %zu.5 to graph 1, first %zu.5 nohead lc rgb '#bbbbbb' dt 3\n",
                                group_start - 1, group_start - 1);
    }
    free(placed);
    if (unplaced)
        snprintf(chart->note, sizeof chart->note, "%zu timed combo%s left out: no timed eager baseline for the same model, batch, dtype and device",
                 unplaced, unplaced == 1 ? " is" : "s are");
    if (count == 0) {
        free(rows);
        parity_text_free(&separators);
        if (!unplaced) snprintf(chart->note, sizeof chart->note, "no timed combo has a timed eager baseline to compare with");
        return NULL;
    }
    parity_text cells = {0}, script = {0};
    double largest = 1;
    for (size_t row = 0; row < count; row++) {
        double relative = parity_report_relative_time(results, rows[row]);
        if (relative > largest) largest = relative;
        parity_text_appendf(&cells, "%.6g %zu %.6g 0.36 %u \"%.2fx  %.3g ms%s\"\n", relative / 2, row, relative / 2,
                            bar_color(rows[row], relative), relative, rows[row]->median_ms,
                            rows[row]->is_eager_baseline ? "  eager" : rows[row]->status == PARITY_COMBO_PASS ? "" : "  (not passing)");
    }
    size_t left = label_pixels(longest);
    int width = (int)(left + 620), height = (int)(30 + count * ROW_PIXELS + 60);
    parity_text_appendf(&script,
                        "set lmargin at screen %.5f\nset rmargin at screen %.5f\nset tmargin at screen %.5f\nset bmargin at screen %.5f\n",
                        (double)left / width, 1.0 - 20.0 / width, 1.0 - 20.0 / height, 50.0 / height);
    parity_text_appendf(&script,
                        "unset key\nset border 3\nset xtics nomirror\nset grid xtics lc rgb '#e0e0e0'\nset xrange [0:%.4g]\n"
                        "set xlabel 'median time / eager median (same model, batch, dtype, device): below 1 is faster'\n"
                        "set arrow from 1, graph 0 to 1, graph 1 nohead lc rgb '#444444' dt 2\n",
                        largest * 1.45 + 0.05);
    parity_text_append_bytes(&script, separators.data ? separators.data : "", separators.length);
    append_row_tics(&script, rows, count);
    parity_text_append(&script, "plot 'cells.dat' using 1:2:3:4:5 with boxxyerror fs solid 0.9 noborder fc rgb variable, "
                                "'cells.dat' using ($1*2):2:6 with labels left offset 0.6,0 font ',10'\n");
    parity_error *error = draw(gnuplot, &cells, NULL, &script, width, height, "time-", chart);
    parity_text_free(&cells);
    parity_text_free(&script);
    parity_text_free(&separators);
    free(rows);
    return error ? parity_error_wrap(error, __FILE__, __LINE__, "drawing the relative-time chart") : NULL;
}

void parity_chart_free(parity_chart *chart) {
    free(chart->svg);
    chart->svg = NULL;
}

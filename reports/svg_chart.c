// svg_chart.c: the bar and line charts of svg_chart.h, laid out in pixels from the text lengths
// (an average glyph is ~0.6 em), legend first, then the plot, then the value axis.
#include "reports/svg_chart.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { BAR_ROW = 18, BAR_HEIGHT = 13, GROUP_GAP = 8, LEGEND_ROW = 20, PLOT_WIDTH = 520, TICKS_MOST = 8 };

static const double glyph_px = 0.62 * PARITY_SVG_FONT_PX;

// Labels longer than this many bytes are cut (at a UTF-8 character boundary) and end in "...".
enum { MAX_LABEL = 72 };

static size_t label_length(const char *text) {
    size_t length = text ? strlen(text) : 0;
    if (length <= MAX_LABEL) return length;
    length = MAX_LABEL - 3;
    while (length > 0 && ((unsigned char)text[length] & 0xC0) == 0x80) length--;
    return length;
}

static double text_px(const char *text) {
    size_t length = label_length(text);
    return (double)(text && length < strlen(text) ? length + 3 : length) * glyph_px;
}

// Appends a label escaped, cut as label_length says.
static void append_label(parity_text *out, const char *text) {
    size_t length = label_length(text);
    if (length == strlen(text)) {
        parity_text_append_xml(out, text);
        return;
    }
    char cut[MAX_LABEL + 1];
    memcpy(cut, text, length);
    cut[length] = '\0';
    parity_text_append_xml(out, cut);
    parity_text_append(out, "...");
}

size_t parity_svg_ticks(double min, double max, size_t most, double *first, double *step) {
    if (!isfinite(min) || !isfinite(max) || max <= min || most < 2) {
        *first = isfinite(min) ? min : 0;
        *step = 1;
        return 1;
    }
    double raw = (max - min) / (double)(most - 1), power = pow(10, floor(log10(raw))), nice = power;
    if (raw > 5 * power) nice = 10 * power;
    else if (raw > 2 * power) nice = 5 * power;
    else if (raw > power) nice = 2 * power;
    *step = nice;
    *first = ceil(min / nice - 1e-9) * nice;
    return (size_t)floor((max - *first) / nice + 1e-9) + 1;
}

static void tick_label(char *buffer, size_t size, double value, double step) {
    int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(buffer, size, "%.*f", decimals > 6 ? 6 : decimals, fabs(value) < step * 1e-6 ? 0 : value);
}

static void open_svg(parity_text *out, double width, double height, const char *title) {
    parity_text_appendf(out,
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" role=\"img\" "
                        "font-family=\"system-ui,sans-serif\" font-size=\"%d\" fill=\"#1f2328\">",
                        width, height, width, PARITY_SVG_FONT_PX);
    if (title) {
        parity_text_append(out, "<title>");
        parity_text_append_xml(out, title);
        parity_text_append(out, "</title>");
    }
}

// The legend: a swatch and a name per series, wrapped to `width`; returns the height it took.
static double legend_layout(const parity_svg_series *series, size_t count, double width, parity_text *out, double top) {
    double x = 10, y = top;
    if (out) parity_text_append(out, "<g class=\"legend\">");
    for (size_t i = 0; i < count; i++) {
        double item = 14 + 6 + text_px(series[i].name) + 18;
        if (x > 10 && x + item > width) {
            x = 10;
            y += LEGEND_ROW;
        }
        if (out) {
            parity_text_appendf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">", x,
                                y + 3, series[i].color, x + 20, y + 13);
            append_label(out, series[i].name);
            parity_text_append(out, "</text>");
        }
        x += item;
    }
    if (out) parity_text_append(out, "</g>");
    return count ? y - top + LEGEND_ROW : 0;
}

static double title_height(const char *title) { return title ? 22 : 0; }

static void append_title(parity_text *out, const char *title, double y) {
    if (!title) return;
    parity_text_appendf(out, "<text x=\"10\" y=\"%.1f\" font-size=\"14\" font-weight=\"600\">", y);
    parity_text_append_xml(out, title);
    parity_text_append(out, "</text>");
}

// ---- bar chart ----

static double bars_axis_max(const parity_svg_bar_chart *chart) {
    if (chart->axis_max > 0) return chart->axis_max;
    double largest = isfinite(chart->reference) ? chart->reference : 0;
    for (size_t i = 0; i < chart->bar_count; i++) {
        const parity_svg_bar *bar = &chart->bars[i];
        double top = bar->value + (isfinite(bar->plus) ? bar->plus : 0);
        if (isfinite(top) && top > largest) largest = top;
    }
    return largest > 0 ? largest * 1.08 : 1;
}

parity_error *parity_svg_bar_chart_append(parity_text *out, const parity_svg_bar_chart *chart) {
    double label_width = 40, note_width = 0;
    for (size_t i = 0; i < chart->bar_count; i++) {
        const parity_svg_bar *bar = &chart->bars[i];
        if (bar->series >= chart->series_count)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "bar %zu ('%s') has series %zu of %zu", i, bar->label ? bar->label : "",
                                bar->series, chart->series_count);
        if (text_px(bar->label) > label_width) label_width = text_px(bar->label);
        if (text_px(bar->note) > note_width) note_width = text_px(bar->note);
    }
    double left = label_width + 16, width = left + PLOT_WIDTH + note_width + 20;
    double legend = legend_layout(chart->series, chart->series_count, width, NULL, 0);
    double top = 8 + title_height(chart->title) + legend + 8, rows = 0;
    for (size_t i = 0; i < chart->bar_count; i++) rows += BAR_ROW + (i > 0 && chart->bars[i].new_group ? GROUP_GAP : 0);
    double plot_bottom = top + rows + 4, height = plot_bottom + 44;
    double max = bars_axis_max(chart), scale = PLOT_WIDTH / max;

    open_svg(out, width, height, chart->title);
    append_title(out, chart->title, 8 + 15);
    legend_layout(chart->series, chart->series_count, width, out, 8 + title_height(chart->title));
    // value axis: grid lines, ticks and their labels
    double first, step;
    size_t ticks = parity_svg_ticks(0, max, TICKS_MOST, &first, &step);
    parity_text_append(out, "<g font-size=\"11\" text-anchor=\"middle\" fill=\"#57606a\">");
    for (size_t t = 0; t < ticks; t++) {
        double value = first + (double)t * step, x = left + value * scale;
        char label[32];
        tick_label(label, sizeof label, value, step);
        parity_text_appendf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e8ec\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>", x,
                            top - 2, x, plot_bottom, x, plot_bottom + 15, label);
    }
    parity_text_append(out, "</g>");
    parity_text_appendf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#57606a\"/>", left, plot_bottom, left + PLOT_WIDTH,
                        plot_bottom);
    if (chart->axis_label) {
        parity_text_appendf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", left + PLOT_WIDTH / 2.0, plot_bottom + 34);
        parity_text_append_xml(out, chart->axis_label);
        parity_text_append(out, "</text>");
    }
    // rows: labels right-aligned left of the axis, bars, error bars, notes
    double y = top;
    parity_text_append(out, "<g>");
    for (size_t i = 0; i < chart->bar_count; i++) {
        const parity_svg_bar *bar = &chart->bars[i];
        bool labeled = bar->label && bar->label[0];
        if (i > 0 && bar->new_group) y += GROUP_GAP;
        double middle = y + BAR_ROW / 2.0;
        if (labeled) {
            parity_text_appendf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 6, middle + 4);
            append_label(out, bar->label);
            parity_text_append(out, "</text>");
        }
        double end = left;
        if (!isnan(bar->value)) {
            double value = bar->value < 0 ? 0 : bar->value > max ? max : bar->value;
            end = left + value * scale;
            parity_text_appendf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", left,
                                middle - BAR_HEIGHT / 2.0, end - left, BAR_HEIGHT, chart->series[bar->series].color);
            double low = bar->value - (isfinite(bar->minus) ? bar->minus : 0), high = bar->value + (isfinite(bar->plus) ? bar->plus : 0);
            if (high > low) {
                double x1 = left + (low < 0 ? 0 : low > max ? max : low) * scale, x2 = left + (high > max ? max : high) * scale;
                parity_text_appendf(out, "<path d=\"M%.1f %.1fv8M%.1f %.1fH%.1fM%.1f %.1fv8\" stroke=\"#1f2328\"/>", x1, middle - 4, x1, middle,
                                    x2, x2, middle - 4);
                if (x2 > end) end = x2;
            }
        }
        if (bar->note && bar->note[0]) {
            parity_text_appendf(out, "<text x=\"%.1f\" y=\"%.1f\">", end + 5, middle + 4);
            append_label(out, bar->note);
            parity_text_append(out, "</text>");
        }
        y += BAR_ROW;
    }
    parity_text_append(out, "</g>");
    if (isfinite(chart->reference) && chart->reference >= 0 && chart->reference <= max) {
        double x = left + chart->reference * scale;
        parity_text_appendf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1f2328\" stroke-dasharray=\"4 3\"/>", x, top - 4, x,
                            plot_bottom);
    }
    parity_text_append(out, "</svg>");
    return NULL;
}

// ---- line chart ----

enum { LINE_PLOT_WIDTH = 640, LINE_PLOT_HEIGHT = 240, LINE_LEFT = 64 };

parity_error *parity_svg_line_chart_append(parity_text *out, const parity_svg_line_chart *chart) {
    double x_min = INFINITY, x_max = -INFINITY, y_min = INFINITY, y_max = -INFINITY;
    for (size_t l = 0; l < chart->line_count; l++) {
        const parity_svg_line *line = &chart->lines[l];
        if (line->series >= chart->series_count)
            return PARITY_ERROR(PARITY_ERROR_INTERNAL, "line %zu has series %zu of %zu", l, line->series, chart->series_count);
        for (size_t i = 0; i < line->count; i++) {
            double x = line->x[i], y = line->y[i], e = line->error && isfinite(line->error[i]) ? fabs(line->error[i]) : 0;
            if (!isfinite(x) || !isfinite(y)) continue;
            x_min = fmin(x_min, x), x_max = fmax(x_max, x), y_min = fmin(y_min, y - e), y_max = fmax(y_max, y + e);
        }
    }
    if (chart->x_tick_labels && chart->x_tick_count) x_min = fmin(x_min, 0), x_max = fmax(x_max, (double)chart->x_tick_count - 1);
    if (isfinite(chart->reference)) y_min = fmin(y_min, chart->reference), y_max = fmax(y_max, chart->reference);
    if (!isfinite(x_min)) x_min = 0, x_max = 1;
    if (!isfinite(y_min)) y_min = 0, y_max = 1;
    if (x_max <= x_min) x_min -= 0.5, x_max += 0.5;
    if (y_max <= y_min) y_min -= fabs(y_min) * 0.1 + 0.5, y_max += fabs(y_max) * 0.1 + 0.5;
    double pad = (y_max - y_min) * 0.06;
    y_min -= pad, y_max += pad;

    double width = LINE_LEFT + LINE_PLOT_WIDTH + 24;
    double legend = legend_layout(chart->series, chart->series_count, width, NULL, 0);
    double top = 8 + title_height(chart->title) + legend + 10, bottom = top + LINE_PLOT_HEIGHT, height = bottom + 48;
    double x_scale = LINE_PLOT_WIDTH / (x_max - x_min), y_scale = LINE_PLOT_HEIGHT / (y_max - y_min);
#define PX(x) (LINE_LEFT + ((x) - x_min) * x_scale)
#define PY(y) (bottom - ((y) - y_min) * y_scale)
    open_svg(out, width, height, chart->title);
    append_title(out, chart->title, 8 + 15);
    legend_layout(chart->series, chart->series_count, width, out, 8 + title_height(chart->title));
    double first, step;
    char label[32];
    size_t ticks = parity_svg_ticks(y_min, y_max, 6, &first, &step);
    parity_text_append(out, "<g font-size=\"11\" fill=\"#57606a\" text-anchor=\"end\">");
    for (size_t t = 0; t < ticks; t++) {
        double value = first + (double)t * step;
        tick_label(label, sizeof label, value, step);
        parity_text_appendf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e8ec\"/><text x=\"%d\" y=\"%.1f\">%s</text>",
                            LINE_LEFT, PY(value), LINE_LEFT + LINE_PLOT_WIDTH, PY(value), LINE_LEFT - 6, PY(value) + 4, label);
    }
    parity_text_append(out, "</g><g font-size=\"11\" fill=\"#57606a\" text-anchor=\"middle\">");
    if (chart->x_tick_labels) {
        size_t every = chart->x_tick_count > 10 ? (chart->x_tick_count + 9) / 10 : 1;
        for (size_t t = 0; t < chart->x_tick_count; t += every) {
            // the last label ends at its tick, so a long one ("12-02 05:10") is not cut at the right edge
            bool last = t + every >= chart->x_tick_count && chart->x_tick_count > 1;
            parity_text_appendf(out, "<text x=\"%.1f\" y=\"%.1f\"%s>", PX((double)t), bottom + 16, last ? " text-anchor=\"end\"" : "");
            parity_text_append_xml(out, chart->x_tick_labels[t] ? chart->x_tick_labels[t] : "");
            parity_text_append(out, "</text>");
        }
    } else {
        ticks = parity_svg_ticks(x_min, x_max, 8, &first, &step);
        for (size_t t = 0; t < ticks; t++) {
            double value = first + (double)t * step;
            tick_label(label, sizeof label, value, step);
            parity_text_appendf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", PX(value), bottom + 16, label);
        }
    }
    parity_text_append(out, "</g>");
    parity_text_appendf(out, "<path d=\"M%d %.1fV%.1fH%d\" fill=\"none\" stroke=\"#57606a\"/>", LINE_LEFT, top, bottom,
                        LINE_LEFT + LINE_PLOT_WIDTH);
    if (chart->x_label) {
        parity_text_appendf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", LINE_LEFT + LINE_PLOT_WIDTH / 2.0, bottom + 36);
        parity_text_append_xml(out, chart->x_label);
        parity_text_append(out, "</text>");
    }
    if (chart->y_label) {
        parity_text_appendf(out, "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\">", (top + bottom) / 2);
        parity_text_append_xml(out, chart->y_label);
        parity_text_append(out, "</text>");
    }
    if (isfinite(chart->reference))
        parity_text_appendf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#1f2328\" stroke-dasharray=\"4 3\"/>", LINE_LEFT,
                            PY(chart->reference), LINE_LEFT + LINE_PLOT_WIDTH, PY(chart->reference));
    for (size_t l = 0; l < chart->line_count; l++) {
        const parity_svg_line *line = &chart->lines[l];
        const char *color = chart->series[line->series].color;
        parity_text_appendf(out, "<g stroke=\"%s\" fill=\"%s\"><path fill=\"none\" stroke-width=\"2\" d=\"", color, color);
        bool pen_down = false;
        for (size_t i = 0; i < line->count; i++) {
            if (!isfinite(line->x[i]) || !isfinite(line->y[i])) {
                pen_down = false;
                continue;
            }
            parity_text_appendf(out, "%s%.1f %.1f", pen_down ? "L" : "M", PX(line->x[i]), PY(line->y[i]));
            pen_down = true;
        }
        parity_text_append(out, "\"/>");
        for (size_t i = 0; i < line->count; i++) {
            if (!isfinite(line->x[i]) || !isfinite(line->y[i])) continue;
            double e = line->error && isfinite(line->error[i]) ? fabs(line->error[i]) : 0;
            if (e > 0)
                parity_text_appendf(out, "<path d=\"M%.1f %.1fV%.1f\"/>", PX(line->x[i]), PY(line->y[i] - e), PY(line->y[i] + e));
            parity_text_appendf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>", PX(line->x[i]), PY(line->y[i]));
        }
        parity_text_append(out, "</g>");
    }
#undef PX
#undef PY
    parity_text_append(out, "</svg>");
    return NULL;
}

// svg_chart.h: a small SVG writer for the charts of report.html (and the dashboard): a horizontal
// bar chart with error bars and a line chart for trends, both with axis ticks, labels of at least
// PARITY_SVG_MIN_FONT_PX, a legend entry for every colour, and every text escaped. parity writes its
// charts itself so that a host without gnuplot (the GPU host has none) gets them too; the output is
// an inlinable <svg> element with a viewBox (it scales to its container), no script, no network.
// Labels and notes longer than 72 bytes are cut with "...", so no label pushes the plot off the page.
#ifndef PARITY_REPORTS_SVG_CHART_H
#define PARITY_REPORTS_SVG_CHART_H

#include <stdbool.h>
#include <stddef.h>

#include "reports/text_buffer.h"

enum { PARITY_SVG_MIN_FONT_PX = 11, PARITY_SVG_FONT_PX = 12 };

// One colour of a chart: a bar class or a trend line. Every series gets a legend entry.
typedef struct parity_svg_series {
    const char *name;   // legend text
    const char *color;  // "#1a7f37" (a CSS colour; not escaped: the caller's constant)
} parity_svg_series;

// One bar: its row label (NULL or "": none), whether a new group starts at it (a gap above it),
// its series, its value and an error bar from value - minus to value + plus (0 or NaN: none), and a
// note printed after the bar ("0.51x ±1.1%"). A NaN value draws no bar, only the note; +Inf a bar to the axis end.
typedef struct parity_svg_bar {
    const char *label;
    bool new_group;
    size_t series;
    double value, minus, plus;
    const char *note;
} parity_svg_bar;

typedef struct parity_svg_bar_chart {
    const char *title;       // drawn above the legend; NULL: none
    const char *axis_label;  // under the value axis
    const parity_svg_series *series;
    size_t series_count;
    const parity_svg_bar *bars;
    size_t bar_count;
    double axis_max;         // the value axis runs 0..axis_max (<= 0: from the data); longer bars are clipped
    double reference;        // a dashed line at this value (1 = eager, 1 = the tolerance); NaN: none
} parity_svg_bar_chart;

// A trend line: count points (x[i], y[i]) with optional error bars y +- error[i] (NULL: none).
// NaN points are gaps.
typedef struct parity_svg_line {
    size_t series;
    const double *x, *y, *error;
    size_t count;
} parity_svg_line;

typedef struct parity_svg_line_chart {
    const char *title;
    const char *x_label, *y_label;
    const parity_svg_series *series;
    size_t series_count;
    const parity_svg_line *lines;
    size_t line_count;
    const char *const *x_tick_labels; // NULL: numeric ticks; else x_tick_count labels at x = 0, 1, ...
    size_t x_tick_count;
    double reference;                 // a dashed horizontal line at this y; NaN: none
} parity_svg_line_chart;

// Appends the chart as <svg>...</svg> to `out`. Errors only for a chart that cannot be drawn
// (a series index out of range), naming it; out of memory is `out`'s (parity_text_check).
parity_error *parity_svg_bar_chart_append(parity_text *out, const parity_svg_bar_chart *chart);
parity_error *parity_svg_line_chart_append(parity_text *out, const parity_svg_line_chart *chart);

// "Nice" axis ticks for [0, max] or [min, max]: a step of 1, 2 or 5 times a power of ten giving
// at most `most` ticks; writes the step and returns the number of ticks from the first multiple
// of step at or above min to max.
size_t parity_svg_ticks(double min, double max, size_t most, double *first, double *step);

#endif

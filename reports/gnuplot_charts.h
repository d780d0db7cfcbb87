// gnuplot_charts.h: the two charts of report.html, drawn by gnuplot as SVG:
//   (a) tolerance-ratio heatmap: one row per combo with metrics, columns loss, aux_loss,
//       grad_norm and the worst per-gradient norm, sketch component and sketch cosine (every
//       parameter's, and the loss input's); color = log10(error / tolerance),
//       green far below 1, amber near 1, red above (fails); each cell labeled with its ratio;
//   (b) time per combo relative to the eager baseline of its model, batch, dtype and device, as
//       horizontal bars (1 = eager; below 1 is faster), grouped by model.
// Without gnuplot, or without data for a chart, there is no SVG and `note` says why.
#ifndef PARITY_REPORTS_GNUPLOT_CHARTS_H
#define PARITY_REPORTS_GNUPLOT_CHARTS_H

#include "reports/results.h"

typedef struct parity_chart {
    char *svg;       // inlinable <svg>...</svg>, or NULL
    char note[512];  // when svg is NULL: why ("charts need gnuplot (not found)"); else a caption note or ""
} parity_chart;

#define PARITY_CHART_NO_GNUPLOT "charts need gnuplot (not found)"

// `gnuplot` is its path, or NULL when it is not installed. Errors: temporary files, or gnuplot failing.
parity_error *parity_chart_ratio_heatmap(const char *gnuplot, const parity_results *results, parity_chart *chart);
parity_error *parity_chart_relative_time(const char *gnuplot, const parity_results *results, parity_chart *chart);
void parity_chart_free(parity_chart *chart);

#endif

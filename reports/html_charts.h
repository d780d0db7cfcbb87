// html_charts.h: report.html's two charts, drawn by parity itself as SVG (svg_chart.h), so a host
// without gnuplot has them too:
//   (a) time relative to eager: per model/batch/dtype/device group, its eager baseline and its
//       fastest combos (at most PARITY_HTML_TIME_BARS_PER_GROUP; the table has the rest), the bar
//       the median over eager's, its error bar the combined noise of the two, the colour whether
//       it is faster or slower beyond noise, the same within noise, or not passing;
//   (b) tolerance headroom: per model, the worst ratio of each metric family (loss, aux_loss,
//       grad_norm, worst parameter norm, sketch component, sketch cosine) over its combos, 1 the
//       tolerance.
// Without data for a chart a visible note says why.
#ifndef PARITY_REPORTS_HTML_CHARTS_H
#define PARITY_REPORTS_HTML_CHARTS_H

#include "reports/results.h"
#include "reports/text_buffer.h"

enum { PARITY_HTML_TIME_BARS_PER_GROUP = 8 };

void parity_html_append_charts(parity_text *html, const parity_results *results);

#endif

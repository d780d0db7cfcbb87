// html.h: report.html, one self-contained page that opens from the file system: inline CSS, the
// gnuplot SVG charts inlined, no script, no server, no network.
#ifndef PARITY_REPORTS_HTML_H
#define PARITY_REPORTS_HTML_H

#include "reports/results.h"

// Writes `path` atomically. `gnuplot` is gnuplot's path, or NULL when it is not installed: each chart
// is then replaced by the visible note "charts need gnuplot (not found)". A chart gnuplot fails to
// draw is replaced by a visible note carrying gnuplot's message.
parity_error *parity_report_write_html(const char *path, const parity_results *results, const char *gnuplot);

#endif

// html.h: report.html, one self-contained page read at a glance (html.c says what is on it): SVG
// charts parity draws itself, one inline script that sorts tables, no server, no network.
#ifndef PARITY_REPORTS_HTML_H
#define PARITY_REPORTS_HTML_H

#include "reports/results.h"

// Writes `path` atomically.
parity_error *parity_report_write_html(const char *path, const parity_results *results);

#endif

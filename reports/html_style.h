// html_style.h: what every part of report.html shares: its stylesheet, the inline script that
// sorts a table.sortable by a clicked column (no network, no external file), and the CSS class of
// each status.
#ifndef PARITY_REPORTS_HTML_STYLE_H
#define PARITY_REPORTS_HTML_STYLE_H

#include "reports/results.h"

extern const char parity_html_style[];
extern const char parity_html_sort_script[];
// "pass", "fail", "unsupported", "error", "excluded"
const char *parity_html_status_class(parity_combo_status status);

#endif

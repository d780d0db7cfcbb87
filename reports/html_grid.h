// html_grid.h: report.html's grid, the run at a glance: one row per kernel-selection field and
// value (and batch, dtype, device when the run has more than one), one column per model, each cell
// the counts of that model's combos with that value by status, coloured (a coloured count per
// status, the cell tinted red when any failed, green when any passed, grey otherwise).
#ifndef PARITY_REPORTS_HTML_GRID_H
#define PARITY_REPORTS_HTML_GRID_H

#include "reports/results.h"
#include "reports/text_buffer.h"

void parity_html_append_grid(parity_text *html, const parity_results *results);

#endif

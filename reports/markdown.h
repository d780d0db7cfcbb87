// markdown.h: summary.md, the report a person reads first (in a terminal, a PR comment or a CI
// summary page): context, counts, failures, tightest passing ratios, speed vs eager, and the
// reasons combos did not run.
#ifndef PARITY_REPORTS_MARKDOWN_H
#define PARITY_REPORTS_MARKDOWN_H

#include "reports/results.h"

// Writes `path` atomically.
parity_error *parity_report_write_markdown(const char *path, const parity_results *results);

#endif

// compare_markdown.h: a comparison as Markdown for a CI comment: the verdict line first, the two
// runs, then one section per kind of change (new failures, time regressions, fixed, support and
// failure changes, combos in one run only, speed-ups, tolerance ratio drift), each a table capped
// at PARITY_COMPARE_MARKDOWN_MAX_ROWS rows (the JSON has every combo), then the rule applied.
#ifndef PARITY_REPORTS_COMPARE_MARKDOWN_H
#define PARITY_REPORTS_COMPARE_MARKDOWN_H

#include "ops/core/error.h"
#include "reports/compare/compare.h"
#include "reports/text_buffer.h"

#define PARITY_COMPARE_MARKDOWN_MAX_ROWS 100

// Appends the document to `text`; base_label / new_label name the runs (their directories).
void parity_compare_markdown(parity_text *text, const parity_comparison *comparison, const char *base_label,
                             const char *new_label);
// Writes it to `path` atomically.
parity_error *parity_compare_write_markdown(const char *path, const parity_comparison *comparison, const char *base_label,
                                            const char *new_label);

#endif

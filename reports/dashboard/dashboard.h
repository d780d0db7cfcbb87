// dashboard.h: `parity dashboard`: a static site drawn from the results history
// (reports/history/history.h), to open from the file system (no server, no network, no external
// file: inline CSS, SVG charts parity draws itself, one small inline sorting script).
//
// One page, index.html: an overview table (the latest run per suite and device: its verdict against
// the previous run, pass / fail / not supported counts, date, git sha), then a section per (suite,
// device): regressions and new failures of the latest run against the previous one
// (reports/compare/compare.h) first, the model x field value grid of the latest run (html_grid.h),
// the tokens/s trends of its fastest combos over the last N runs (regressed combos always drawn and
// marked in the legend), then a section per bench device: its rows over the last N bench reports
// beside their PyTorch peers, with % of the device ceilings and time regressions marked.
//
// The directory is replaced whole: the site is written into a temporary directory beside it and
// swapped into place (renameat2 RENAME_EXCHANGE), so a failure leaves the previous dashboard as it
// was. docs/dashboard.md.
#ifndef PARITY_REPORTS_DASHBOARD_H
#define PARITY_REPORTS_DASHBOARD_H

#include <stddef.h>

#include "ops/core/error.h"
#include "reports/compare/compare.h"
#include "reports/history/history.h"
#include "reports/text_buffer.h"

#define PARITY_DASHBOARD_DEFAULT_LAST 20
#define PARITY_DASHBOARD_MAX_LAST 64      // the most runs a trend draws
#define PARITY_DASHBOARD_TREND_COMBOS 8   // the fastest combos of the latest run drawn per section
#define PARITY_DASHBOARD_MARKER ".parity-dashboard" // a file in every dashboard directory: what may be replaced

typedef struct parity_dashboard_options {
    int last;                          // runs drawn per trend (1..PARITY_DASHBOARD_MAX_LAST)
    parity_compare_options compare;    // the rule a regression is judged by
} parity_dashboard_options;

parity_dashboard_options parity_dashboard_default_options(void);

typedef struct parity_dashboard_summary {
    size_t runs;          // runs and bench reports in the history
    size_t sections;      // (suite, device) sections and bench sections drawn
    size_t regressions;   // time regressions of the latest runs against their previous ones (bench rows included)
    size_t new_failures;  // new failures of the latest runs against their previous ones
    size_t bytes;         // the size of index.html
} parity_dashboard_summary;

// Builds the page text from an open history database (*html is the caller's; free with
// parity_text_free). An empty history gives a page saying so (not an error).
parity_error *parity_dashboard_render(parity_history *history, const char *db_label, const parity_dashboard_options *options,
                                      parity_text *html, parity_dashboard_summary *summary);

// Opens `db_path` (never creating it: a missing file is an IO error, a file that is not a parity
// history a DATA error, both naming it), renders, and replaces the directory `out_dir` with a new
// one holding index.html and the marker file. `out_dir` must be missing, an empty directory, or
// an earlier dashboard (holding the marker): anything else is an IO error naming it, so a mistyped
// --out never deletes someone's files. On any error the old `out_dir` is as it was and no
// temporary directory is left.
parity_error *parity_dashboard_write(const char *db_path, const char *out_dir, const parity_dashboard_options *options,
                                     parity_dashboard_summary *summary);

#endif

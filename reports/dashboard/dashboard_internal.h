// dashboard_internal.h: what the parts of the dashboard share: a section (the runs of one suite on
// one device, or the bench reports of one device, the last N of them), the overview row each
// section fills for the table at the top of the page, the colours of trend lines, and the date
// labels of the x axis. Not part of the API (dashboard.h is).
#ifndef PARITY_REPORTS_DASHBOARD_INTERNAL_H
#define PARITY_REPORTS_DASHBOARD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "reports/dashboard/dashboard.h"
#include "reports/history/history.h"
#include "reports/text_buffer.h"

typedef struct dashboard_section {
    parity_history_kind kind;
    char suite[64], device[160];
    char anchor[24];                                   // "s1", "s2", ...: the section's id on the page
    parity_history_run runs[PARITY_DASHBOARD_MAX_LAST]; // the last `run_count`, oldest first
    size_t run_count;
    size_t total_runs;                                 // all of the section's runs in the history
} dashboard_section;

// What the overview table shows of a section, filled by its writer.
typedef struct dashboard_overview {
    char verdict[256];         // against the previous run: compare's verdict line, or what stands in for it
    bool bad;                  // failures in the latest run, or a regression / new failure against the previous
    size_t regressions, new_failures;
} dashboard_overview;

// The sections' writers: append the section to `html`, fill `overview`.
parity_error *dashboard_append_run_section(parity_text *html, parity_history *history, const dashboard_section *section,
                                           const parity_dashboard_options *options, dashboard_overview *overview);
parity_error *dashboard_append_bench_section(parity_text *html, parity_history *history, const dashboard_section *section,
                                             const parity_dashboard_options *options, dashboard_overview *overview);

enum { DASHBOARD_COLORS = 12 };
// The colours of trend lines (and, for PyTorch peers, their own greyer set), by index modulo the count.
const char *dashboard_color(size_t index);
const char *dashboard_peer_color(size_t index);
// The x tick label of the section's run `index`: "12-02" from its date ("2026-12-02T05:10:47Z")
// when the section's runs are on different days, else "12-02 05:10"; the text as it is when not a date.
void dashboard_date_label(const dashboard_section *section, size_t index, char *out, size_t size);
// "+20.0%", "-3.1%", "-" for NaN.
const char *dashboard_format_change(char *buffer, size_t size, double change);

#endif

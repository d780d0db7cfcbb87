// render.h: every report of a run, from its results: results.json, junit.xml, summary.md and
// report.html in one directory. `parity run` calls parity_reports_render_all; `parity report DIR`
// reads DIR/results.json and calls parity_reports_render_derived, so the two always agree.
#ifndef PARITY_REPORTS_RENDER_H
#define PARITY_REPORTS_RENDER_H

#include "reports/results.h"

#define PARITY_REPORT_RESULTS_JSON "results.json"
#define PARITY_REPORT_JUNIT "junit.xml"
#define PARITY_REPORT_SUMMARY "summary.md"
#define PARITY_REPORT_HTML "report.html"

// Creates `directory` (and its parents) if missing and writes the four files, each atomically.
// report.html's charts are SVG parity draws itself (reports/svg_chart.h): no gnuplot needed.
parity_error *parity_reports_render_all(const char *directory, const parity_results *results);
// The three reports derived from results.json (junit.xml, summary.md, report.html); results.json
// itself is not touched.
parity_error *parity_reports_render_derived(const char *directory, const parity_results *results);

#endif

// render.c: writes a run's reports into one directory (see render.h).
#include "reports/render.h"

#include <stdio.h>

#include "ops/core/file.h"
#include "reports/html.h"
#include "reports/junit.h"
#include "reports/markdown.h"

static parity_error *report_path(const char *directory, const char *name, char *path, size_t size) {
    if ((size_t)snprintf(path, size, "%s/%s", directory, name) >= size)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: report directory path too long", directory);
    return NULL;
}

parity_error *parity_reports_render_derived(const char *directory, const parity_results *results) {
    char path[4200];
    PARITY_TRY(parity_make_directories(directory));
    PARITY_TRY(report_path(directory, PARITY_REPORT_JUNIT, path, sizeof path));
    PARITY_TRY(parity_report_write_junit(path, results));
    PARITY_TRY(report_path(directory, PARITY_REPORT_SUMMARY, path, sizeof path));
    PARITY_TRY(parity_report_write_markdown(path, results));
    PARITY_TRY(report_path(directory, PARITY_REPORT_HTML, path, sizeof path));
    return parity_report_write_html(path, results);
}

parity_error *parity_reports_render_all(const char *directory, const parity_results *results) {
    char path[4200];
    PARITY_TRY(parity_make_directories(directory));
    PARITY_TRY(report_path(directory, PARITY_REPORT_RESULTS_JSON, path, sizeof path));
    PARITY_TRY(parity_results_write_json(path, results));
    return parity_reports_render_derived(directory, results);
}

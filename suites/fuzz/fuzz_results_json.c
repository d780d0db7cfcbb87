// fuzz_results_json.c: the results.json reader (reports/results_json.c) on arbitrary file bytes,
// then what `parity report DIR` does with an accepted file: junit.xml, summary.md and report.html
// rendered from it (its SVG charts included), and the counts by status.
#include <stdint.h>
#include <stdio.h>

#include "reports/html.h"
#include "reports/junit.h"
#include "reports/markdown.h"
#include "reports/results.h"
#include "suites/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    parity_results results;
    parity_error *error = parity_results_read_json(parity_fuzz_file("results.json", data, size), &results);
    if (!error) {
        char path[600];
        const char *directory = parity_fuzz_directory("report");
        size_t counts[PARITY_COMBO_STATUS_COUNT];
        parity_results_counts(&results, counts);
        snprintf(path, sizeof path, "%s/junit.xml", directory);
        parity_fuzz_drop(parity_report_write_junit(path, &results));
        snprintf(path, sizeof path, "%s/summary.md", directory);
        parity_fuzz_drop(parity_report_write_markdown(path, &results));
        snprintf(path, sizeof path, "%s/report.html", directory);
        parity_fuzz_drop(parity_report_write_html(path, &results));
        parity_results_release(&results);
    }
    parity_fuzz_drop(error);
    return 0;
}

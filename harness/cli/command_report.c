// command_report.c: `parity report DIR`: re-renders junit.xml, summary.md and report.html from
// DIR/results.json alone (the reports of a run, after a parity upgrade). Nothing else is rewritten;
// a missing or malformed results.json exits 3 naming the file.
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "reports/render.h"

void parity_command_report_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity report DIR\n"
            "\n"
            "Re-renders the reports of a run from DIR/results.json: DIR/junit.xml (one testsuite per\n"
            "suite.model, one testcase per combo), DIR/summary.md (counts, failures, tightest tolerance\n"
            "ratios, fastest combo per model vs eager, \"within noise\" where it is) and DIR/report.html\n"
            "(self-contained: verdict, model x field grid, failures per combo, SVG charts drawn by parity,\n"
            "sortable tables; no gnuplot needed). results.json itself is not rewritten.\n"
            "\n"
            "exit status: 0 the reports were written (whatever the combos' outcomes)\n"
            "             2 usage error\n"
            "             3 DIR/results.json is missing or malformed (the message names the file and field),\n"
            "               or a report cannot be written\n");
}

int parity_command_report(int argc, char **argv) {
    const char *directory = NULL;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "parity report: unknown option '%s' (see parity report --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        if (directory) {
            fprintf(stderr, "parity report: one directory, got '%s' and '%s' (see parity report --help)\n", directory, argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        directory = argv[i];
    }
    if (!directory) {
        parity_command_report_usage(stderr);
        return PARITY_EXIT_CONFIG;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", directory, PARITY_REPORT_RESULTS_JSON);
    parity_results results;
    parity_error *error = parity_results_read_json(path, &results);
    if (error) return parity_cli_report_error("report", error);
    error = parity_reports_render_derived(directory, &results);
    if (error) {
        parity_results_release(&results);
        return parity_cli_report_error("report", error);
    }
    size_t counts[PARITY_COMBO_STATUS_COUNT];
    parity_results_counts(&results, counts);
    printf("%zu combos: %zu pass, %zu fail, %zu not supported, %zu error, %zu excluded\n", results.combo_count, counts[PARITY_COMBO_PASS],
           counts[PARITY_COMBO_FAIL], counts[PARITY_COMBO_NOT_SUPPORTED], counts[PARITY_COMBO_ERROR], counts[PARITY_COMBO_EXCLUDED]);
    printf("wrote %s/%s, %s/%s, %s/%s\n", directory, PARITY_REPORT_JUNIT, directory, PARITY_REPORT_SUMMARY, directory, PARITY_REPORT_HTML);
    parity_results_release(&results);
    return PARITY_EXIT_OK;
}

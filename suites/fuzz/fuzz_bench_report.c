// fuzz_bench_report.c: the bench JSON readers (harness/bench/bench_report.c) on arbitrary file
// bytes: the report reader (`parity bench --from FILE`) and the PyTorch peers reader, then what
// the bench does with an accepted report: the text table, the JSON and the Markdown with the
// repository's targets (harness/bench/targets.tsv, read once).
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench/bench_report.h"
#include "suites/fuzz/fuzz_common.h"

static parity_bench_targets targets;
static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    parity_error *error = parity_bench_targets_read(PARITY_BENCH_TARGETS_REPOSITORY_PATH, &targets);
    if (error) {
        parity_error_print(error, stderr);
        abort(); // the target runs from the repository root (make fuzz does)
    }
    sink = fopen("/dev/null", "w");
    if (!sink) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = parity_fuzz_file("bench.json", data, size);
    parity_bench_report report;
    memset(&report, 0, sizeof report);
    parity_error *error = parity_bench_read_report(path, &report);
    if (!error) error = parity_bench_read_peers(path, &report);
    if (!error) {
        char output[600];
        const char *directory = parity_fuzz_directory("bench");
        parity_bench_print_table(&report, sink, false);
        snprintf(output, sizeof output, "%s/bench.json", directory);
        parity_fuzz_drop(parity_bench_write_json(&report, output));
        snprintf(output, sizeof output, "%s/bench.md", directory);
        parity_fuzz_drop(parity_bench_write_markdown(&report, &targets, output));
    }
    parity_fuzz_drop(error);
    parity_bench_report_release(&report);

    parity_bench_report peers;
    memset(&peers, 0, sizeof peers);
    parity_fuzz_drop(parity_bench_read_peers(path, &peers));
    parity_bench_report_release(&peers);
    return 0;
}

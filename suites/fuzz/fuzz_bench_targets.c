// fuzz_bench_targets.c: the bench targets reader (harness/bench/bench_targets.c) on arbitrary
// text: the tab-separated header, comment and blank lines, and every target line's fields.
#include <stdint.h>
#include <stdlib.h>

#include "harness/bench/bench_targets.h"
#include "suites/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = parity_fuzz_text(data, size);
    parity_bench_targets targets;
    parity_error *error = parity_bench_targets_parse(text, "fuzz/targets.tsv", &targets);
    if (!error) parity_bench_targets_release(&targets);
    parity_fuzz_drop(error);
    free(text);
    return 0;
}

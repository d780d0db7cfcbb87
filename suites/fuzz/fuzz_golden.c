// fuzz_golden.c: the golden reader (golden/golden.c) on arbitrary file bytes through its public
// entry point, parity_golden_read on a file, as `parity golden show` and `parity run` open a
// golden; an accepted golden is then described as `golden show` prints it.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "golden/golden.h"
#include "suites/fuzz/fuzz_common.h"

static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    sink = fopen("/dev/null", "w");
    if (!sink) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    parity_golden golden;
    parity_error *error = parity_golden_read(parity_fuzz_file("case.h5", data, size), &golden);
    if (!error) parity_golden_describe(&golden, sink);
    parity_fuzz_drop(error);
    parity_golden_release(&golden);
    return 0;
}

// fuzz_suite.c: the suite YAML reader (harness/suite.c) on arbitrary text, then the lookups the
// runner makes on an accepted suite. The text stands for suites/fuzz-input.yaml, so the relative
// paths of the seed suites (configs/..., ../golden/...) resolve as theirs do when the target runs
// from the repository root (make fuzz does).
#include <stdint.h>
#include <stdlib.h>

#include "harness/suite.h"
#include "suites/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = parity_fuzz_text(data, size);
    parity_suite *suite = NULL;
    parity_error *error = parity_suite_parse(text, size, "suites/fuzz-input.yaml", &suite);
    if (!error) {
        for (size_t i = 0; i < suite->model_count; i++) {
            size_t count;
            (void)parity_suite_model_batches(suite, &suite->models[i], &count);
            (void)parity_suite_find_model(suite, suite->models[i].name);
        }
        error = parity_suite_check_ranks(suite);
    }
    parity_fuzz_drop(error);
    parity_suite_free(suite);
    free(text);
    return 0;
}

// scratch_suite.h: a suite of the tiny qwen3 checkpoint in a fresh temporary folder, with its
// goldens, for tests that run `parity run` / `parity golden generate` as a user would (interrupts,
// exit codes, the progress line). Each test makes its own (Criterion runs tests in parallel).
#ifndef PARITY_TEST_SCRATCH_SUITE_H
#define PARITY_TEST_SCRATCH_SUITE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct scratch_spec {
    const char *model_name;  // the suite's name of the model (default "qwen3_tiny")
    int batches;             // drawn plain batches a, b, c, ... (default 1)
    int length;              // tokens per row of each batch, 2 rows (default 16)
    int repeats;             // timed steps per combo (default 1): more makes every combo slower
    bool goldens;            // generate the goldens into <folder>/golden
} scratch_spec;

typedef struct scratch_suite {
    char folder[64];         // /tmp/parity-scratch-XXXXXX
    char suite[128];         // <folder>/suite.yaml (suite name "scratch", cpu, fp32 + bf16, sweep [ce])
    char goldens[128];       // <folder>/golden
    char tmp[128];           // <folder>/tmp: an empty folder for a child's TMPDIR
} scratch_suite;

scratch_suite scratch_suite_make(scratch_spec spec);
void scratch_suite_remove(const scratch_suite *s);
// Files under `folder` (recursively) whose name contains ".tmp." (an atomic write's temporary), and
// folders named parity-chart-* (a chart's scratch folder): what no run may leave behind.
size_t scratch_leftover_temporaries(const char *folder, char *first, size_t size);
// Entries directly in `folder` (-1 when it does not exist).
int scratch_entry_count(const char *folder);

#endif

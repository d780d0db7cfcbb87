// gpu_skip.h: the one way a test says "I need a CUDA device". Without one the test is skipped with
// cr_skip_test("no CUDA device: <reason>"); because Criterion 2.4 shows skips only with --verbose
// (and its synthesis line does not count them), the helper also prints the same line to stderr,
//   [SKIP] tensor_cuda::round_trip: no CUDA device: <reason>
// so that `make test` output always says which tests did not run and why. With a device the test
// runs. Nightly GPU CI sets PARITY_EXPECT_GPU=1 so that a GPU host which lost its device fails the
// GPU tests instead of skipping them. parity_test_require_no_gpu is the converse, for the few tests of
// a machine without a device.
#ifndef PARITY_TESTS_GPU_SKIP_H
#define PARITY_TESTS_GPU_SKIP_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/device.h"

// Call first in a GPU test. Returns only when cuda:0 is usable.
static inline void parity_test_require_gpu(void) {
    char reason[256] = "";
    if (parity_cuda_device_count(reason, sizeof reason) > 0) return;
    const char *expect = getenv("PARITY_EXPECT_GPU");
    if (expect && strcmp(expect, "1") == 0)
        cr_assert_fail("PARITY_EXPECT_GPU=1 but there is no CUDA device: %s", reason);
    fprintf(stderr, "[SKIP] %s::%s: no CUDA device: %s\n", criterion_current_test->category,
            criterion_current_test->name, reason);
    cr_skip_test("no CUDA device: %s", reason);
}

// The converse, first in a test of what happens without a CUDA device ("device cuda is absent"):
// with one present it is skipped the same visible way ("[SKIP] ...: a CUDA device is present").
static inline void parity_test_require_no_gpu(void) {
    if (parity_cuda_device_count(NULL, 0) <= 0) return;
    fprintf(stderr, "[SKIP] %s::%s: a CUDA device is present\n", criterion_current_test->category,
            criterion_current_test->name);
    cr_skip_test("a CUDA device is present");
}

// True when a CUDA device is usable (for tables whose expected outcome depends on it).
static inline int parity_test_have_gpu(void) { return parity_cuda_device_count(NULL, 0) > 0; }

#endif

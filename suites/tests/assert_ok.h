// assert_ok.h: fail the current Criterion test with the formatted parity error, naming what failed
// (the one copy of the helper four test files wrote each for themselves).
#ifndef PARITY_TESTS_ASSERT_OK_H
#define PARITY_TESTS_ASSERT_OK_H

#include <criterion/criterion.h>

#include "ops/core/error.h"

static inline void assert_ok(parity_error *error, const char *what) {
    if (!error) return;
    char buffer[1024];
    parity_error_format(error, buffer, sizeof buffer);
    parity_error_free(error);
    cr_assert_fail("%s failed: %s", what, buffer);
}

#endif

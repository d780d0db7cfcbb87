// worst_error.h: the "worst error so far" of a test's comparison loop, with NaN winning. A plain
// maximum skips NaN: `error > worst` is false for a NaN error and fmax(worst, NaN) returns worst, so
// a NaN in any element or tensor but the first leaves the worst error finite and the test passing.
// Here a NaN error replaces a finite worst, and once the worst is NaN nothing replaces it (the first
// NaN's name is the one reported); `worst <= bound` is then false, so the check fails. Every maximum
// over errors in the op test engine (op_check.c) and the comparison tests goes through these.
#ifndef PARITY_TESTS_WORST_ERROR_H
#define PARITY_TESTS_WORST_ERROR_H

#include <math.h>
#include <stdbool.h>

// True when `error` must replace `worst`: it is NaN, or larger, and `worst` is not already NaN.
static inline bool parity_test_worse(double error, double worst) {
    return !isnan(worst) && (isnan(error) || error > worst);
}

// The larger of the two, NaN when either is NaN.
static inline double parity_test_max(double worst, double error) {
    return parity_test_worse(error, worst) ? error : worst;
}

#endif

// clock.c: the monotonic wall clock of clock.h.
#include "ops/core/clock.h"

#include <time.h>

double parity_monotonic_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

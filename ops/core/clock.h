// clock.h: the monotonic wall clock every layer times with (harness timers, progress lines, the
// tape's per-op profile).
#ifndef PARITY_CLOCK_H
#define PARITY_CLOCK_H

// Seconds on CLOCK_MONOTONIC.
double parity_monotonic_seconds(void);

#endif

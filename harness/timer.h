// timer.h: how `parity run` times one step, behind a small interface so a device brings its own
// clock. The CPU uses the monotonic wall clock; a CUDA device uses CUDA events recorded on the step's
// stream (the execution context's, ops/core/exec.h, where every kernel of the step runs) around the
// step (harness/timer_cuda.cu; harness/timer_cuda_without_cuda.c answers UNAVAILABLE in a CPU-only build).
#ifndef PARITY_TIMER_H
#define PARITY_TIMER_H

#include "ops/core/clock.h" // parity_monotonic_seconds, for progress lines and elapsed times
#include "ops/core/device.h"
#include "ops/core/error.h"
#include "ops/core/exec.h"

typedef struct parity_timer parity_timer;

struct parity_timer {
    const char *method;                                          // "wall clock (CLOCK_MONOTONIC)", "CUDA events"
    parity_error *(*begin)(parity_timer *timer);                 // before the timed region
    parity_error *(*end)(parity_timer *timer, double *elapsed_ms); // after it: the elapsed milliseconds
    void (*release)(parity_timer *timer);                        // may be NULL
    parity_device device;
    void *state;                                                 // the implementation's
    double started;                                              // wall clock: seconds at begin
};

// A timer for the steps run on `exec` (release it with parity_timer_release).
parity_error *parity_timer_create(const parity_exec *exec, parity_timer *out);
void parity_timer_release(parity_timer *timer);

// The CPU clock: CLOCK_MONOTONIC.
parity_timer parity_timer_wall_clock(parity_device device);

// CUDA events on `exec`'s stream (harness/timer_cuda.cu).
parity_error *parity_timer_cuda_events(const parity_exec *exec, parity_timer *out);

// Adaptive repeats (a suite's adaptive_repeats, harness/evaluate.h's timed steps): more timed steps
// while the samples' noise (median absolute deviation / median) is above noise_target.
typedef struct parity_adaptive_timing {
    double noise_target; // 0: off
    int max_steps;       // timed samples at most (>= the timed steps asked for)
    double time_cap_ms;  // timed samples add up to at most about this
} parity_adaptive_timing;

#endif

// timer.h: how `parity run` times one step, behind a small interface so a device can bring its own
// clock. The CPU uses the monotonic wall clock. A CUDA build plugs CUDA-event timing in with
// parity_timer_set_cuda_factory (one call, e.g. from ops/cuda_backends.cu); until it does, a CUDA
// device is timed by the wall clock around a step whose results were copied back to the host, and
// the timer's `method` says so.
#ifndef PARITY_TIMER_H
#define PARITY_TIMER_H

#include "ops/core/device.h"
#include "ops/core/error.h"

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

// A timer for `device` (release it with parity_timer_release).
parity_error *parity_timer_create(parity_device device, parity_timer *out);
void parity_timer_release(parity_timer *timer);

// The CPU clock: CLOCK_MONOTONIC.
parity_timer parity_timer_wall_clock(parity_device device);
// Seconds on the monotonic clock (progress lines, elapsed times).
double parity_monotonic_seconds(void);

// Plug-in point for CUDA-event timing: `factory` fills `out` for a CUDA device.
typedef parity_error *(*parity_timer_factory)(parity_device device, parity_timer *out);
void parity_timer_set_cuda_factory(parity_timer_factory factory);

#endif

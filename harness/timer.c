// timer.c: the monotonic wall clock of timer.h, and the choice of clock per device.
#include "harness/timer.h"

#include <string.h>

static parity_error *wall_begin(parity_timer *timer) {
    timer->started = parity_monotonic_seconds();
    return NULL;
}

static parity_error *wall_end(parity_timer *timer, double *elapsed_ms) {
    *elapsed_ms = (parity_monotonic_seconds() - timer->started) * 1e3;
    return NULL;
}

parity_timer parity_timer_wall_clock(parity_device device) {
    parity_timer timer;
    memset(&timer, 0, sizeof timer);
    timer.method = "wall clock (CLOCK_MONOTONIC)";
    timer.begin = wall_begin;
    timer.end = wall_end;
    timer.device = device;
    return timer;
}

parity_error *parity_timer_create(const parity_exec *exec, parity_timer *out) {
    if (exec->device.type == PARITY_DEVICE_CUDA) return parity_timer_cuda_events(exec, out);
    *out = parity_timer_wall_clock(exec->device);
    return NULL;
}

void parity_timer_release(parity_timer *timer) {
    if (timer && timer->release) timer->release(timer);
    if (timer) memset(timer, 0, sizeof *timer);
}

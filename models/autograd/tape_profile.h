// tape_profile.h: where a step's time goes, per (op, backend). When a tape carries a profile, the
// device is synchronized at every node: the forward time of a node is the time since the previous
// node was recorded (its backend's forward plus the glue before it), the backward time is its
// backward call alone. Synchronizing changes what is measured (no overlap between nodes), so a
// profiled step is for finding the slow op, never for the timings `parity run` reports.
#ifndef PARITY_TAPE_PROFILE_H
#define PARITY_TAPE_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "ops/core/device.h"
#include "ops/core/error.h"

typedef struct parity_op_time {
    char op[48];
    char backend[48];
    int64_t forward_calls, backward_calls;
    double forward_ms, backward_ms;
} parity_op_time;

typedef struct parity_tape_profile {
    parity_device device;
    parity_op_time *rows;            // first-seen order
    size_t count, capacity;
    double mark;                     // seconds: the last synchronization point of the forward
} parity_tape_profile;

void parity_tape_profile_init(parity_tape_profile *profile, parity_device device);
void parity_tape_profile_release(parity_tape_profile *profile);
// Waits for the device and returns the monotonic time in seconds.
parity_error *parity_tape_profile_sync(const parity_tape_profile *profile, double *seconds);
// Sets the forward's starting mark.
parity_error *parity_tape_profile_start(parity_tape_profile *profile);
// A node of (op, backend) was recorded: the time since the mark is its forward's.
parity_error *parity_tape_profile_forward(parity_tape_profile *profile, const char *op, const char *backend);
// Adds one backward call of `milliseconds`.
parity_error *parity_tape_profile_backward(parity_tape_profile *profile, const char *op, const char *backend,
                                           double milliseconds);
// A table sorted by total time, with each row's share: "op  backend  fwd ms (calls)  bwd ms (calls)  share".
void parity_tape_profile_print(const parity_tape_profile *profile, FILE *out);

#endif

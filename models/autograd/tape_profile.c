// tape_profile.c: per-(op, backend) forward and backward times of a step (tape_profile.h).
#include "models/autograd/tape_profile.h"

#include <stdlib.h>
#include <string.h>

#include "ops/core/clock.h"
#include "ops/core/cuda_api.h"

void parity_tape_profile_init(parity_tape_profile *profile, parity_device device) {
    memset(profile, 0, sizeof *profile);
    profile->device = device;
}

void parity_tape_profile_release(parity_tape_profile *profile) {
    free(profile->rows);
    memset(profile, 0, sizeof *profile);
}

parity_error *parity_tape_profile_sync(const parity_tape_profile *profile, double *seconds) {
    if (profile->device.type == PARITY_DEVICE_CUDA) PARITY_TRY(parity_cuda_synchronize(profile->device.index));
    *seconds = parity_monotonic_seconds();
    return NULL;
}

parity_error *parity_tape_profile_start(parity_tape_profile *profile) { return parity_tape_profile_sync(profile, &profile->mark); }

static parity_error *row_of(parity_tape_profile *profile, const char *op, const char *backend, parity_op_time **out) {
    for (size_t i = 0; i < profile->count; i++)
        if (strcmp(profile->rows[i].op, op) == 0 && strcmp(profile->rows[i].backend, backend) == 0) {
            *out = &profile->rows[i];
            return NULL;
        }
    if (profile->count == profile->capacity) {
        size_t capacity = profile->capacity ? 2 * profile->capacity : 32;
        parity_op_time *grown = realloc(profile->rows, capacity * sizeof *grown);
        if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "op profile rows");
        profile->rows = grown;
        profile->capacity = capacity;
    }
    parity_op_time *row = &profile->rows[profile->count++];
    memset(row, 0, sizeof *row);
    snprintf(row->op, sizeof row->op, "%s", op);
    snprintf(row->backend, sizeof row->backend, "%s", backend);
    *out = row;
    return NULL;
}

parity_error *parity_tape_profile_forward(parity_tape_profile *profile, const char *op, const char *backend) {
    double now;
    PARITY_TRY(parity_tape_profile_sync(profile, &now));
    parity_op_time *row;
    PARITY_TRY(row_of(profile, op, backend, &row));
    row->forward_calls++;
    row->forward_ms += (now - profile->mark) * 1e3;
    profile->mark = now;
    return NULL;
}

parity_error *parity_tape_profile_backward(parity_tape_profile *profile, const char *op, const char *backend,
                                           double milliseconds) {
    parity_op_time *row;
    PARITY_TRY(row_of(profile, op, backend, &row));
    row->backward_calls++;
    row->backward_ms += milliseconds;
    return NULL;
}

static int by_total_descending(const void *a, const void *b) {
    const parity_op_time *x = a, *y = b;
    double tx = x->forward_ms + x->backward_ms, ty = y->forward_ms + y->backward_ms;
    return tx < ty ? 1 : tx > ty ? -1 : 0;
}

void parity_tape_profile_print(const parity_tape_profile *profile, FILE *out) {
    parity_op_time *sorted = malloc((profile->count ? profile->count : 1) * sizeof *sorted);
    if (!sorted) return;
    memcpy(sorted, profile->rows, profile->count * sizeof *sorted);
    qsort(sorted, profile->count, sizeof *sorted, by_total_descending);
    double total = 0;
    for (size_t i = 0; i < profile->count; i++) total += sorted[i].forward_ms + sorted[i].backward_ms;
    fprintf(out, "%-22s %-14s %12s %7s %12s %7s %7s\n", "op", "backend", "forward ms", "calls", "backward ms", "calls", "share");
    for (size_t i = 0; i < profile->count; i++) {
        const parity_op_time *row = &sorted[i];
        double share = total > 0 ? 100.0 * (row->forward_ms + row->backward_ms) / total : 0.0;
        fprintf(out, "%-22s %-14s %12.3f %7lld %12.3f %7lld %6.1f%%\n", row->op, row->backend, row->forward_ms,
                (long long)row->forward_calls, row->backward_ms, (long long)row->backward_calls, share);
    }
    fprintf(out, "%-22s %-14s %12s %7s %12s %7s %7s\n", "total", "", "", "", "", "", "");
    fprintf(out, "  %.3f ms with the device synchronized at every node (forward time includes the glue between nodes)\n", total);
    free(sorted);
}

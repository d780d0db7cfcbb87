// memory.h: every tensor allocation goes through here so each device has current and peak byte
// counts (the "peak memory" column of every report). Thread-safe.
#ifndef PARITY_MEMORY_H
#define PARITY_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/device.h"
#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_memory_stats {
    size_t current_bytes;
    size_t peak_bytes;
    size_t allocation_count; // live allocations
} parity_memory_stats;

// Allocates `bytes` on `device` (64-byte aligned on the CPU). Zero bytes gives a valid pointer.
parity_error *parity_memory_alloc(parity_device device, size_t bytes, void **out);
// `bytes` must be what was allocated.
void parity_memory_free(parity_device device, void *pointer, size_t bytes);
parity_memory_stats parity_memory_get_stats(parity_device device);
// Sets the peak to the current value (start of a measured region).
void parity_memory_reset_peak(parity_device device);
// Accounts `bytes` taken (released = false) or given back (released = true) outside
// parity_memory_alloc, e.g. scratch from CUDA's stream-ordered pool, so current and peak stay true.
void parity_memory_account(parity_device device, size_t bytes, bool released);

#ifdef __cplusplus
}
#endif
#endif

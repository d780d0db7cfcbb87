// memory.c: allocation with per-device accounting. Peaks are tracked with a compare-and-swap loop
// so concurrent allocations never lose a maximum.
#include "ops/core/memory.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "ops/core/cuda_api.h"

enum { MAX_TRACKED_CUDA_DEVICES = 16 };

typedef struct device_counters {
    atomic_size_t current;
    atomic_size_t peak;
    atomic_size_t count;
} device_counters;

static device_counters cpu_counters;
static device_counters cuda_counters[MAX_TRACKED_CUDA_DEVICES];

static device_counters *counters_for(parity_device device) {
    if (device.type == PARITY_DEVICE_CPU) return &cpu_counters;
    if (device.type == PARITY_DEVICE_CUDA && device.index >= 0 && device.index < MAX_TRACKED_CUDA_DEVICES)
        return &cuda_counters[device.index];
    return NULL;
}

static void account_alloc(device_counters *counters, size_t bytes) {
    size_t now = atomic_fetch_add(&counters->current, bytes) + bytes;
    atomic_fetch_add(&counters->count, 1);
    size_t peak = atomic_load(&counters->peak);
    while (now > peak && !atomic_compare_exchange_weak(&counters->peak, &peak, now)) {
    }
}

parity_error *parity_memory_alloc(parity_device device, size_t bytes, void **out) {
    *out = NULL;
    device_counters *counters = counters_for(device);
    if (!counters) {
        char name[32];
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "cannot allocate on %s",
                            parity_device_format(device, name, sizeof name));
    }
    if (device.type == PARITY_DEVICE_CPU) {
        size_t rounded = (bytes + 63) / 64 * 64;
        void *pointer = aligned_alloc(64, rounded ? rounded : 64);
        if (!pointer) return PARITY_ERROR(PARITY_ERROR_MEMORY, "host allocation of %zu bytes failed", bytes);
        *out = pointer;
    } else {
        PARITY_TRY(parity_cuda_malloc(device.index, bytes, out));
    }
    account_alloc(counters, bytes);
    return NULL;
}

void parity_memory_free(parity_device device, void *pointer, size_t bytes) {
    if (!pointer) return;
    device_counters *counters = counters_for(device);
    if (device.type == PARITY_DEVICE_CPU) free(pointer);
    else parity_cuda_free(device.index, pointer);
    if (counters) {
        atomic_fetch_sub(&counters->current, bytes);
        atomic_fetch_sub(&counters->count, 1);
    }
}

parity_memory_stats parity_memory_get_stats(parity_device device) {
    parity_memory_stats stats = {0, 0, 0};
    device_counters *counters = counters_for(device);
    if (counters) {
        stats.current_bytes = atomic_load(&counters->current);
        stats.peak_bytes = atomic_load(&counters->peak);
        stats.allocation_count = atomic_load(&counters->count);
    }
    return stats;
}

void parity_memory_reset_peak(parity_device device) {
    device_counters *counters = counters_for(device);
    if (counters) atomic_store(&counters->peak, atomic_load(&counters->current));
}

void parity_memory_account(parity_device device, size_t bytes, bool released) {
    device_counters *counters = counters_for(device);
    if (!counters) return;
    if (!released) {
        account_alloc(counters, bytes);
        return;
    }
    atomic_fetch_sub(&counters->current, bytes);
    atomic_fetch_sub(&counters->count, 1);
}

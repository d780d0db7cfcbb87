// device.h: where tensors live and what a device can do. cpu and cuda are built here; npu exists
// in the vocabulary (the kernel-selection rules resolve for it) but parity has no NPU build.
#ifndef PARITY_DEVICE_H
#define PARITY_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_device_type {
    PARITY_DEVICE_CPU = 0,
    PARITY_DEVICE_CUDA,
    PARITY_DEVICE_NPU,
    PARITY_DEVICE_TYPE_COUNT
} parity_device_type;

typedef struct parity_device {
    parity_device_type type;
    int index; // 0 for cpu
} parity_device;

typedef struct parity_device_info {
    parity_device device;
    char name[256];
    int compute_capability;   // major * 10 + minor for cuda (90 = Hopper); 0 for cpu
    size_t total_memory;      // bytes
    int multiprocessors;
    size_t l2_cache_bytes;
} parity_device_info;

#define PARITY_CPU ((parity_device){PARITY_DEVICE_CPU, 0})
#define PARITY_CUDA(index) ((parity_device){PARITY_DEVICE_CUDA, (index)})

// "cpu", "cuda", "npu".
const char *parity_device_type_name(parity_device_type type);
// Parses "cpu", "cuda", "cuda:1", "gpu", "npu".
bool parity_device_parse(const char *text, parity_device *out);
// "cpu", "cuda:0".
const char *parity_device_format(parity_device device, char *buffer, size_t size);
bool parity_device_equal(parity_device a, parity_device b);

// Fills `info` for a present device; UNAVAILABLE error with the reason ("no CUDA device present",
// "parity was built without CUDA", "needs an Ascend NPU build") otherwise.
parity_error *parity_device_query(parity_device device, parity_device_info *info);
// Number of usable CUDA devices (0 when none or when built without CUDA); `reason` (may be NULL)
// receives why there are none.
int parity_cuda_device_count(char *reason, size_t reason_size);
// The best device present: cuda:0 when a CUDA device is usable, else cpu.
parity_device parity_device_best(void);

#ifdef __cplusplus
}
#endif
#endif

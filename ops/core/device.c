// device.c: device names, parsing and discovery (CUDA through the cuda_api door).
#include "ops/core/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/cuda_api.h"

const char *parity_device_type_name(parity_device_type type) {
    switch (type) {
    case PARITY_DEVICE_CPU: return "cpu";
    case PARITY_DEVICE_CUDA: return "cuda";
    case PARITY_DEVICE_NPU: return "npu";
    default: return "unknown";
    }
}

bool parity_device_parse(const char *text, parity_device *out) {
    if (!text) return false;
    if (strcmp(text, "cpu") == 0) {
        *out = PARITY_CPU;
        return true;
    }
    if (strcmp(text, "npu") == 0) {
        *out = (parity_device){PARITY_DEVICE_NPU, 0};
        return true;
    }
    if (strcmp(text, "cuda") == 0 || strcmp(text, "gpu") == 0) {
        *out = PARITY_CUDA(0);
        return true;
    }
    if (strncmp(text, "cuda:", 5) == 0 && text[5]) {
        char *end = NULL;
        long index = strtol(text + 5, &end, 10);
        if (*end || index < 0 || index > 1024) return false;
        *out = PARITY_CUDA((int)index);
        return true;
    }
    return false;
}

const char *parity_device_format(parity_device device, char *buffer, size_t size) {
    if (device.type == PARITY_DEVICE_CUDA) snprintf(buffer, size, "cuda:%d", device.index);
    else snprintf(buffer, size, "%s", parity_device_type_name(device.type));
    return buffer;
}

bool parity_device_equal(parity_device a, parity_device b) {
    return a.type == b.type && (a.type == PARITY_DEVICE_CPU || a.index == b.index);
}

int parity_cuda_device_count(char *reason, size_t reason_size) {
    return parity_cuda_runtime_device_count(reason, reason_size);
}

parity_error *parity_device_query(parity_device device, parity_device_info *info) {
    memset(info, 0, sizeof *info);
    info->device = device;
    switch (device.type) {
    case PARITY_DEVICE_CPU:
        snprintf(info->name, sizeof info->name, "cpu");
        return NULL;
    case PARITY_DEVICE_CUDA: {
        char reason[256];
        int count = parity_cuda_device_count(reason, sizeof reason);
        if (count == 0) return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "%s", reason);
        if (device.index >= count)
            return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "cuda:%d requested but only %d CUDA device(s) present",
                                device.index, count);
        return parity_cuda_device_info(device.index, info);
    }
    case PARITY_DEVICE_NPU:
        return PARITY_ERROR(PARITY_ERROR_UNAVAILABLE, "needs an Ascend NPU build");
    default:
        return PARITY_ERROR(PARITY_ERROR_USAGE, "unknown device type %d", (int)device.type);
    }
}

parity_device parity_device_best(void) {
    return parity_cuda_device_count(NULL, 0) > 0 ? PARITY_CUDA(0) : PARITY_CPU;
}

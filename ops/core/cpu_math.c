// cpu_math.c: loading/storing tensors as f64 arrays and argument checks for CPU eager kernels.
#include "ops/core/cpu_math.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

parity_error *parity_check_cpu(const char *op, const char *name, const parity_tensor *tensor) {
    if (!tensor || (!tensor->data && tensor->numel > 0))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s: %s is missing", op, name);
    if (tensor->device.type != PARITY_DEVICE_CPU) {
        char device[32];
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: %s is on %s, the CPU backend needs it on cpu", op, name,
                            parity_device_format(tensor->device, device, sizeof device));
    }
    return NULL;
}

parity_error *parity_check_tensor(const char *op, const char *name, const parity_tensor *tensor, parity_dtype dtype,
                                  int ndim, const int64_t *shape) {
    if (!tensor) return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s: %s is missing", op, name);
    char actual[160];
    bool shape_ok = tensor->ndim == ndim;
    for (int dim = 0; shape_ok && dim < ndim; dim++)
        if (shape[dim] != PARITY_ANY && tensor->shape[dim] != shape[dim]) shape_ok = false;
    if (!shape_ok) {
        char expected[160];
        size_t used = (size_t)snprintf(expected, sizeof expected, "(");
        for (int dim = 0; dim < ndim && used < sizeof expected; dim++) {
            if (shape[dim] == PARITY_ANY) used += (size_t)snprintf(expected + used, sizeof expected - used, "%s*", dim ? ", " : "");
            else used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%lld", dim ? ", " : "", (long long)shape[dim]);
        }
        if (used < sizeof expected) snprintf(expected + used, sizeof expected - used, ")");
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s: %s has shape %s, expected %s", op, name,
                            parity_tensor_shape_string(tensor, actual, sizeof actual), expected);
    }
    if (tensor->dtype != dtype)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s: %s is %s, expected %s", op, name, parity_dtype_name(tensor->dtype),
                            parity_dtype_name(dtype));
    if (tensor->numel > 0 && !tensor->data) return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s: %s has no data", op, name);
    return NULL;
}

parity_error *parity_cpu_values_new(int64_t count, parity_cpu_values *out) {
    out->data = calloc(count > 0 ? (size_t)count : 1, sizeof(double));
    out->count = count;
    out->owned = true;
    if (!out->data) return PARITY_ERROR(PARITY_ERROR_MEMORY, "allocating %lld doubles", (long long)count);
    return NULL;
}

parity_error *parity_cpu_values_load(const parity_tensor *tensor, const char *name, parity_cpu_values *out) {
    memset(out, 0, sizeof *out);
    if (tensor->device.type != PARITY_DEVICE_CPU)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s must be a CPU tensor", name);
    if (tensor->dtype == PARITY_F64 && parity_tensor_is_contiguous(tensor)) {
        out->data = tensor->data;
        out->count = tensor->numel;
        out->owned = false;
        return NULL;
    }
    PARITY_TRY(parity_cpu_values_new(tensor->numel, out));
    for (int64_t i = 0; i < tensor->numel; i++) out->data[i] = parity_tensor_get(tensor, i);
    return NULL;
}

void parity_cpu_values_free(parity_cpu_values *values) {
    if (values && values->owned) free(values->data);
    if (values) memset(values, 0, sizeof *values);
}

void parity_cpu_values_store(parity_tensor *tensor, const double *values) {
    if (tensor->dtype == PARITY_F64 && parity_tensor_is_contiguous(tensor)) {
        if (tensor->data != values) memcpy(tensor->data, values, (size_t)tensor->numel * sizeof(double));
        return;
    }
    for (int64_t i = 0; i < tensor->numel; i++) parity_tensor_set(tensor, i, values[i]);
}

parity_error *parity_cpu_indices_load(const parity_tensor *tensor, const char *name, int64_t **out) {
    *out = NULL;
    if (tensor->dtype != PARITY_I64 && tensor->dtype != PARITY_I32)
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s must be int64 or int32, is %s", name, parity_dtype_name(tensor->dtype));
    if (tensor->device.type != PARITY_DEVICE_CPU) return PARITY_ERROR(PARITY_ERROR_USAGE, "%s must be a CPU tensor", name);
    int64_t *indices = malloc((size_t)(tensor->numel > 0 ? tensor->numel : 1) * sizeof *indices);
    if (!indices) return PARITY_ERROR(PARITY_ERROR_MEMORY, "loading %s", name);
    for (int64_t i = 0; i < tensor->numel; i++) {
        int64_t offset = parity_tensor_offset(tensor, i);
        indices[i] = tensor->dtype == PARITY_I64 ? ((const int64_t *)tensor->data)[offset]
                                                 : ((const int32_t *)tensor->data)[offset];
    }
    *out = indices;
    return NULL;
}

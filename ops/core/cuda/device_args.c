// device_args.c: see device_args.h. Plain C over tensor.h, so it builds with or without CUDA.
#include "ops/core/cuda/device_args.h"

#include <stdlib.h>
#include <string.h>

#include "ops/core/cpu_math.h"

parity_error *parity_cuda_check_tensor(const char *op, const char *name, const parity_tensor *tensor,
                                       parity_device device) {
    if (!tensor) return NULL;
    char actual[32], expected[32];
    if (!parity_device_equal(tensor->device, device))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: %s is on %s, the CUDA backend needs it on %s", op, name,
                            parity_device_format(tensor->device, actual, sizeof actual),
                            parity_device_format(device, expected, sizeof expected));
    if (tensor->numel > 0 && !tensor->data) return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s: %s has no data", op, name);
    if (!parity_tensor_is_contiguous(tensor))
        return PARITY_ERROR(PARITY_ERROR_SHAPE, "%s: %s is not contiguous (the CUDA backend needs contiguous tensors)", op,
                            name);
    return NULL;
}

parity_error *parity_cuda_indices_to_host(const parity_tensor *tensor, const char *name, int64_t **out) {
    *out = NULL;
    if (tensor->device.type == PARITY_DEVICE_CPU) return parity_cpu_indices_load(tensor, name, out);
    parity_tensor host;
    memset(&host, 0, sizeof host);
    PARITY_TRY_CONTEXT(parity_tensor_to(&host, tensor, PARITY_CPU, tensor->dtype), "copying %s to the host", name);
    parity_error *error = parity_cpu_indices_load(&host, name, out);
    parity_tensor_release(&host);
    return error;
}

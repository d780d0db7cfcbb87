// invalid_call.c: scratch tensors for invalid-call rows (see invalid_call.h).
#include "ops/testing/invalid_call.h"

#include "ops/registry.h"

parity_tensor *invalid_call_tensor(invalid_call *scratch, parity_dtype dtype, int ndim, const int64_t *shape) {
    static parity_tensor empty;
    if (scratch->error) return &empty;
    if (scratch->count >= INVALID_CALL_MAX_TENSORS) {
        scratch->error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "invalid_call: more than %d tensors", INVALID_CALL_MAX_TENSORS);
        return &empty;
    }
    parity_tensor *tensor = &scratch->tensors[scratch->count];
    scratch->error = parity_tensor_zeros(tensor, dtype, PARITY_CPU, ndim, shape);
    if (scratch->error) return &empty;
    scratch->count++;
    return tensor;
}

const void *invalid_call_kernels(invalid_call *scratch, const char *op) {
    if (scratch->error) return NULL;
    const parity_backend *backend;
    scratch->error = parity_registry_resolve(op, "eager", PARITY_CPU, &backend);
    return scratch->error ? NULL : backend->kernels;
}

parity_error *invalid_call_finish(invalid_call *scratch) {
    for (int i = 0; i < scratch->count; i++) parity_tensor_release(&scratch->tensors[i]);
    parity_saved_release(&scratch->saved);
    return scratch->error;
}

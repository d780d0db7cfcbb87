// saved.c: the saved-tensor container behind saved.h.
#include "ops/core/saved.h"

#include <string.h>

parity_error *parity_saved_alloc(parity_saved *saved, parity_tensor **out, parity_dtype dtype, parity_device device,
                                 int ndim, const int64_t *shape) {
    if (saved->count >= PARITY_SAVED_MAX)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "a forward saved more than %d tensors", PARITY_SAVED_MAX);
    parity_tensor *slot = &saved->tensors[saved->count];
    PARITY_TRY(parity_tensor_alloc(slot, dtype, device, ndim, shape));
    saved->count++;
    *out = slot;
    return NULL;
}

parity_error *parity_saved_get(const parity_saved *saved, int index, const parity_tensor **out) {
    if (!saved || index < 0 || index >= saved->count)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "backward asked for saved tensor %d, forward saved %d", index,
                            saved ? saved->count : 0);
    *out = &saved->tensors[index];
    return NULL;
}

void parity_saved_release(parity_saved *saved) {
    if (!saved) return;
    for (int i = 0; i < saved->count; i++) parity_tensor_release(&saved->tensors[i]);
    memset(saved, 0, sizeof *saved);
}

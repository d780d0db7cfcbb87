// saved.h: what a forward call keeps for its backward. Each backend decides what to save (eager
// attention keeps probabilities, sdpa keeps only the log-sum-exp); the caller owns the container and
// releases it after backward. Saved tensors are owned by the container.
#ifndef PARITY_SAVED_H
#define PARITY_SAVED_H

#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_SAVED_MAX 8

typedef struct parity_saved {
    parity_tensor tensors[PARITY_SAVED_MAX];
    int count;
} parity_saved;

// Allocates the next saved tensor (contiguous, uninitialized) and returns it through `out`.
parity_error *parity_saved_alloc(parity_saved *saved, parity_tensor **out, parity_dtype dtype, parity_device device,
                                 int ndim, const int64_t *shape);
// The i-th saved tensor, or an INTERNAL error when the forward saved fewer (a backward/forward mismatch).
parity_error *parity_saved_get(const parity_saved *saved, int index, const parity_tensor **out);
void parity_saved_release(parity_saved *saved);

#ifdef __cplusplus
}
#endif
#endif

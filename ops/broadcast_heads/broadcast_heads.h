// broadcast_heads.h: one head broadcast to every head, x (N, 1, D) -> y (N, H, D) (torch expand):
// MLA's k_pe, shared by all attention heads. Backward sums the heads' gradients.
// No kernel-selection field: backends register under op "broadcast_heads" (value "eager" on each device).
#ifndef PARITY_BROADCAST_HEADS_H
#define PARITY_BROADCAST_HEADS_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_BROADCAST_HEADS "broadcast_heads"

typedef struct parity_broadcast_heads_args {
    const parity_tensor *input;      // (N, 1, D): any leading shape flattened to N
    parity_tensor *output;           // (N, H, D): the input's shape with H heads in place of 1
} parity_broadcast_heads_args;

typedef struct parity_broadcast_heads_grads {
    const parity_tensor *doutput;    // (N, H, D)
    parity_tensor *dinput;           // (N, 1, D), overwritten with the sum over heads; may be NULL
} parity_broadcast_heads_grads;

typedef struct parity_broadcast_heads_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_broadcast_heads_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_broadcast_heads_args *args,
                              const parity_saved *saved, const parity_broadcast_heads_grads *grads);
} parity_broadcast_heads_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_broadcast_heads_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N, H and D.
parity_error *parity_broadcast_heads_check(const parity_broadcast_heads_args *args, int64_t *rows, int64_t *heads,
                                           int64_t *head_dim);
parity_error *parity_broadcast_heads_check_grads(const parity_broadcast_heads_args *args,
                                                 const parity_broadcast_heads_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

// concat.h: concatenation of 2+ tensors along the last dimension (torch.cat(dim=-1)): MLA's
// q_nope ++ q_pe and k_nope ++ k_pe, partial rotary's rotated ++ pass-through. Its inverse is split.
// No kernel-selection field: backends register under op "concat" (value "eager" on each device).
#ifndef PARITY_CONCAT_H
#define PARITY_CONCAT_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_CONCAT "concat"
#define PARITY_CONCAT_MAX_PARTS 8

typedef struct parity_concat_args {
    const parity_tensor *parts[PARITY_CONCAT_MAX_PARTS]; // part i (N, D_i): one leading shape and dtype
    int count;                                           // 2 .. PARITY_CONCAT_MAX_PARTS
    parity_tensor *output;                               // (N, D_0 + D_1 + ...)
} parity_concat_args;

typedef struct parity_concat_grads {
    const parity_tensor *doutput;                        // (N, D_0 + D_1 + ...)
    parity_tensor *dparts[PARITY_CONCAT_MAX_PARTS];      // part i's shape, overwritten; each may be NULL
} parity_concat_grads;

typedef struct parity_concat_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_concat_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_concat_args *args, const parity_saved *saved,
                              const parity_concat_grads *grads);
} parity_concat_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_concat_op;

// Checks `parts` (count of them, named "<parts_name>[i]" in messages that name `op`) against
// `reference`: the same dtype, rank and leading shape, any last dimension. Returns the sum of their
// last dimensions. Shared by concat (reference: parts[0]) and split (reference: the input).
parity_error *parity_concat_check_parts(const char *op, const char *parts_name, const parity_tensor *const *parts,
                                        int count, const parity_tensor *reference, int64_t *total_width);

// Shared argument validation, naming the op and the tensor in every message. Returns N.
parity_error *parity_concat_check(const parity_concat_args *args, int64_t *rows);
parity_error *parity_concat_check_grads(const parity_concat_args *args, const parity_concat_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

// split.h: splitting a tensor along its last dimension into 2+ parts (torch.split(dim=-1)), the
// inverse of concat: MLA's kv_a_proj output -> compressed kv ++ k_pe, a fused gate_up -> gate, up.
// The part widths are the parts' own last dimensions.
// No kernel-selection field: backends register under op "split" (value "eager" on each device).
#ifndef PARITY_SPLIT_H
#define PARITY_SPLIT_H

#include "ops/concat/concat.h"
#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_SPLIT "split"
#define PARITY_SPLIT_MAX_PARTS PARITY_CONCAT_MAX_PARTS

typedef struct parity_split_args {
    const parity_tensor *input;                          // (N, D)
    int count;                                           // 2 .. PARITY_SPLIT_MAX_PARTS
    parity_tensor *parts[PARITY_SPLIT_MAX_PARTS];        // part i (N, D_i), D_0 + D_1 + ... = D
} parity_split_args;

typedef struct parity_split_grads {
    const parity_tensor *dparts[PARITY_SPLIT_MAX_PARTS]; // part i's shape; NULL = a part with no gradient (zeros)
    parity_tensor *dinput;                               // (N, D), overwritten; may be NULL
} parity_split_grads;

typedef struct parity_split_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_split_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_split_args *args, const parity_saved *saved,
                              const parity_split_grads *grads);
} parity_split_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_split_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N.
parity_error *parity_split_check(const parity_split_args *args, int64_t *rows);
parity_error *parity_split_check_grads(const parity_split_args *args, const parity_split_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

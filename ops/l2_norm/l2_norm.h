// l2_norm.h: L2 normalisation over the last dimension, HF's l2norm (the FLA-aligned helper of
// Qwen3.5 / Qwen3-Next): y = x * rsqrt(sum(x * x) + eps), eps = 1e-6 in HF. The gated delta rule
// applies it to q and k inside its kernel (use_qk_l2norm); this op is the same math on its own.
// No kernel-selection field: backends register under PARITY_OP_L2_NORM with the name "eager".
#ifndef PARITY_L2_NORM_H
#define PARITY_L2_NORM_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_L2_NORM "l2_norm"

typedef struct parity_l2_norm_args {
    const parity_tensor *input; // (N, D): any leading shape flattened to N rows
    double eps;                 // added to the sum of squares (HF: 1e-6)
    parity_tensor *output;      // (N, D), same shape and dtype as input
} parity_l2_norm_args;

typedef struct parity_l2_norm_grads {
    const parity_tensor *doutput; // (N, D)
    parity_tensor *dinput;        // (N, D), overwritten; may be NULL
} parity_l2_norm_grads;

typedef struct parity_l2_norm_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_l2_norm_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_l2_norm_args *args, const parity_saved *saved,
                              const parity_l2_norm_grads *grads);
} parity_l2_norm_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_l2_norm_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N and D.
parity_error *parity_l2_norm_check(const parity_l2_norm_args *args, int64_t *rows, int64_t *dim);
parity_error *parity_l2_norm_check_grads(const parity_l2_norm_args *args, const parity_l2_norm_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

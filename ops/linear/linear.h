// linear.h: the dense layer y = x W^T + b (nn.Linear / F.linear), every projection of every model.
// No kernel-selection field: backends register under op "linear" (value "eager" on each device).
#ifndef PARITY_LINEAR_H
#define PARITY_LINEAR_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_LINEAR "linear"

typedef struct parity_linear_args {
    const parity_tensor *input;      // (N, in): any leading shape flattened to N rows
    const parity_tensor *weight;     // (out, in)
    const parity_tensor *bias;       // (out), or NULL for no bias
    parity_tensor *output;           // (N, out): the input's leading shape, then out
} parity_linear_args;

typedef struct parity_linear_grads {
    const parity_tensor *doutput;    // (N, out)
    parity_tensor *dinput;           // (N, in), overwritten; may be NULL
    parity_tensor *dweight;          // (out, in), overwritten; may be NULL
    parity_tensor *dbias;            // (out), overwritten; may be NULL (must be NULL without bias)
} parity_linear_grads;

typedef struct parity_linear_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_linear_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_linear_args *args, const parity_saved *saved,
                              const parity_linear_grads *grads);
} parity_linear_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_linear_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N, in and out.
parity_error *parity_linear_check(const parity_linear_args *args, int64_t *rows, int64_t *in_features,
                                  int64_t *out_features);
parity_error *parity_linear_check_grads(const parity_linear_args *args, const parity_linear_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

// add.h: the residual add y = a + b of two tensors of one shape (hidden + attention output, ...).
// No kernel-selection field: backends register under op "add" (value "eager" on each device).
#ifndef PARITY_ADD_H
#define PARITY_ADD_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_ADD "add"

typedef struct parity_add_args {
    const parity_tensor *a;          // (N, H): any shape
    const parity_tensor *b;          // a's shape
    parity_tensor *output;           // a's shape
} parity_add_args;

typedef struct parity_add_grads {
    const parity_tensor *doutput;    // a's shape
    parity_tensor *da;               // a's shape, overwritten with doutput; may be NULL
    parity_tensor *db;               // a's shape, overwritten with doutput; may be NULL
} parity_add_grads;

typedef struct parity_add_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_add_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_add_args *args, const parity_saved *saved,
                              const parity_add_grads *grads);
} parity_add_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_add_op;

// Shared argument validation, naming the op and the tensor in every message.
parity_error *parity_add_check(const parity_add_args *args);
parity_error *parity_add_check_grads(const parity_add_args *args, const parity_add_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

// matmul.h: batched C = op(A) op(B) with optional transposes (torch.matmul / bmm with .transpose(-1, -2)),
// for the products a model writes itself: eager attention scores and weights, MLA absorption, ...
// No kernel-selection field: backends register under op "matmul" (value "eager" on each device).
#ifndef PARITY_MATMUL_H
#define PARITY_MATMUL_H

#include <stdbool.h>

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_MATMUL "matmul"

// The leading (batch) dimensions are any number (0 or more) of sizes shared by a, b and output;
// every (M, K) x (K, N) product of the batch is independent.
typedef struct parity_matmul_args {
    const parity_tensor *a;          // (batch, M, K), or (batch, K, M) when transpose_a
    const parity_tensor *b;          // (batch, K, N), or (batch, N, K) when transpose_b
    bool transpose_a, transpose_b;
    parity_tensor *output;           // (batch, M, N)
} parity_matmul_args;

typedef struct parity_matmul_grads {
    const parity_tensor *doutput;    // (batch, M, N)
    parity_tensor *da;               // a's shape, overwritten; may be NULL
    parity_tensor *db;               // b's shape, overwritten; may be NULL
} parity_matmul_grads;

typedef struct parity_matmul_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_matmul_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_matmul_args *args, const parity_saved *saved,
                              const parity_matmul_grads *grads);
} parity_matmul_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_matmul_op;

typedef struct parity_matmul_sizes {
    int64_t batch, m, n, k; // batch = product of the leading dimensions
} parity_matmul_sizes;

// Shared argument validation, naming the op and the tensor in every message.
parity_error *parity_matmul_check(const parity_matmul_args *args, parity_matmul_sizes *sizes);
parity_error *parity_matmul_check_grads(const parity_matmul_args *args, const parity_matmul_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

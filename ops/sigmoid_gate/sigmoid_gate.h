// sigmoid_gate.h: y = x * sigmoid(gate): Qwen3.5 attention's output gate (gate of x's shape) and the
// Qwen3.5-MoE shared-expert gate (one scalar per token: gate (N, 1), broadcast over the last dim).
// No kernel-selection field: backends register under op "sigmoid_gate" (value "eager" on each device).
#ifndef PARITY_SIGMOID_GATE_H
#define PARITY_SIGMOID_GATE_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_SIGMOID_GATE "sigmoid_gate"

typedef struct parity_sigmoid_gate_args {
    const parity_tensor *input;      // (N, D): any leading shape flattened to N rows
    const parity_tensor *gate;       // (N, D), or (N, 1): one gate per row, broadcast over D
    parity_tensor *output;           // (N, D)
} parity_sigmoid_gate_args;

typedef struct parity_sigmoid_gate_grads {
    const parity_tensor *doutput;    // (N, D)
    parity_tensor *dinput;           // (N, D), overwritten; may be NULL
    parity_tensor *dgate;            // gate's shape (summed over D when broadcast), overwritten; may be NULL
} parity_sigmoid_gate_grads;

typedef struct parity_sigmoid_gate_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_sigmoid_gate_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_sigmoid_gate_args *args, const parity_saved *saved,
                              const parity_sigmoid_gate_grads *grads);
} parity_sigmoid_gate_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_sigmoid_gate_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N, D and the
// number of input elements each gate element scales (D when broadcast, else 1).
parity_error *parity_sigmoid_gate_check(const parity_sigmoid_gate_args *args, int64_t *rows, int64_t *width,
                                        int64_t *gate_group);
parity_error *parity_sigmoid_gate_check_grads(const parity_sigmoid_gate_args *args,
                                              const parity_sigmoid_gate_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

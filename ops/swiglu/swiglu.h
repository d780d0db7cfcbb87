// swiglu.h: the fused part of a SwiGLU MLP, y = silu(gate) * up (HF {Model}MLP:
// down_proj(act_fn(gate_proj(x)) * up_proj(x)); the projections are linear ops in the model).
// The kernel-selection field is swiglu_mlp_implementation; backends register under op "swiglu".
#ifndef PARITY_SWIGLU_H
#define PARITY_SWIGLU_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_swiglu_args {
    const parity_tensor *gate;   // (N, I): any shape, elementwise
    const parity_tensor *up;     // (N, I), same shape and dtype as gate
    parity_tensor *output;       // (N, I)
} parity_swiglu_args;

typedef struct parity_swiglu_grads {
    const parity_tensor *doutput; // (N, I)
    parity_tensor *dgate;         // (N, I), overwritten; may be NULL
    parity_tensor *dup;           // (N, I), overwritten; may be NULL
} parity_swiglu_grads;

typedef struct parity_swiglu_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_swiglu_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_swiglu_args *args, const parity_saved *saved,
                              const parity_swiglu_grads *grads);
} parity_swiglu_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call and work model.
extern const parity_op_descriptor parity_swiglu_op;

// Shared argument validation, naming the op and the tensor in every message.
parity_error *parity_swiglu_check(const parity_swiglu_args *args);
parity_error *parity_swiglu_check_grads(const parity_swiglu_args *args, const parity_swiglu_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

// rms_norm_gated.h: Qwen3.5 / Qwen3-Next gated RMSNorm (Qwen3_5RMSNormGated, after GatedDeltaNet):
//   y = (w * rms_normalize(x)) * silu(gate)   over the last dimension, weight initialised to ones.
// The kernel-selection field is rms_norm_gated_implementation; backends register under op
// "rms_norm_gated".
#ifndef PARITY_RMS_NORM_GATED_H
#define PARITY_RMS_NORM_GATED_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_rms_norm_gated_args {
    const parity_tensor *input;   // (N, D): any leading shape flattened to N rows
    const parity_tensor *gate;    // (N, D), same shape and dtype as input
    const parity_tensor *weight;  // (D)
    double eps;
    parity_tensor *output;        // (N, D), same dtype as input
} parity_rms_norm_gated_args;

typedef struct parity_rms_norm_gated_grads {
    const parity_tensor *doutput; // (N, D)
    parity_tensor *dinput;        // (N, D), overwritten; may be NULL
    parity_tensor *dgate;         // (N, D), overwritten; may be NULL
    parity_tensor *dweight;       // (D), overwritten; may be NULL
} parity_rms_norm_gated_grads;

typedef struct parity_rms_norm_gated_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_rms_norm_gated_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_rms_norm_gated_args *args,
                              const parity_saved *saved, const parity_rms_norm_gated_grads *grads);
} parity_rms_norm_gated_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call and work model.
extern const parity_op_descriptor parity_rms_norm_gated_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N and D.
parity_error *parity_rms_norm_gated_check(const parity_rms_norm_gated_args *args, int64_t *rows, int64_t *hidden);
parity_error *parity_rms_norm_gated_check_grads(const parity_rms_norm_gated_args *args,
                                                const parity_rms_norm_gated_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

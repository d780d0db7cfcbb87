// rms_norm.h: RMSNorm over the last dimension, y = w * x / rms(x) (standard, Llama/Qwen3) or
// y = (1 + w) * x / rms(x) (offset, Qwen3.5 / Qwen3-Next, weights initialised to zero).
// The kernel-selection field is rms_norm_implementation; backends register under op "rms_norm".
#ifndef PARITY_RMS_NORM_H
#define PARITY_RMS_NORM_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_rms_norm_variant {
    PARITY_RMS_NORM_STANDARD = 0, // w * x_hat
    PARITY_RMS_NORM_OFFSET,       // (1 + w) * x_hat
} parity_rms_norm_variant;

typedef struct parity_rms_norm_args {
    const parity_tensor *input;      // (N, H): any leading shape flattened to N rows
    const parity_tensor *weight;     // (H)
    double eps;
    parity_rms_norm_variant variant;
    parity_tensor *output;           // (N, H), same dtype as input
} parity_rms_norm_args;

typedef struct parity_rms_norm_grads {
    const parity_tensor *doutput;    // (N, H)
    parity_tensor *dinput;           // (N, H), overwritten; may be NULL
    parity_tensor *dweight;          // (H), overwritten; may be NULL
} parity_rms_norm_grads;

typedef struct parity_rms_norm_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_rms_norm_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_rms_norm_args *args, const parity_saved *saved,
                              const parity_rms_norm_grads *grads);
} parity_rms_norm_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call and work model.
extern const parity_op_descriptor parity_rms_norm_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N and H.
parity_error *parity_rms_norm_check(const parity_rms_norm_args *args, int64_t *rows, int64_t *hidden);
parity_error *parity_rms_norm_check_grads(const parity_rms_norm_args *args, const parity_rms_norm_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

// gdn_gating.h: the decay and write strength of Qwen3.5 / Qwen3-Next GatedDeltaNet, from the
// projections a = in_proj_a(x), b = in_proj_b(x) and the per-head parameters A_log, dt_bias:
//   g    = -exp(A_log.float()) * softplus(a.float() + dt_bias)   (log decay, <= 0)
//   beta = sigmoid(b)
// HF computes g in f32 whatever the model dtype, so g is an output in the COMPUTE dtype (f32 for
// f32/bf16 calls, f64 for f64 calls); beta has the call's dtype.
// No kernel-selection field: backends register under PARITY_OP_GDN_GATING with the name "eager".
#ifndef PARITY_GDN_GATING_H
#define PARITY_GDN_GATING_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_GDN_GATING "gdn_gating"

typedef struct parity_gdn_gating_args {
    const parity_tensor *a;       // (N, Hv): in_proj_a output, the call's dtype
    const parity_tensor *b;       // (N, Hv): in_proj_b output, the call's dtype
    const parity_tensor *A_log;   // (Hv): log of the decay rate A, the call's dtype
    const parity_tensor *dt_bias; // (Hv): the call's dtype
    parity_tensor *g;             // (N, Hv) output, parity_compute_dtype(call dtype): f32 for f32/bf16, f64 for f64
    parity_tensor *beta;          // (N, Hv) output, the call's dtype
} parity_gdn_gating_args;

typedef struct parity_gdn_gating_grads {
    const parity_tensor *dg;    // (N, Hv), g's dtype
    const parity_tensor *dbeta; // (N, Hv), the call's dtype
    parity_tensor *da;          // (N, Hv), overwritten; may be NULL
    parity_tensor *db;          // (N, Hv), overwritten; may be NULL
    parity_tensor *dA_log;      // (Hv), overwritten; may be NULL
    parity_tensor *ddt_bias;    // (Hv), overwritten; may be NULL
} parity_gdn_gating_grads;

typedef struct parity_gdn_gating_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_gdn_gating_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_gdn_gating_args *args, const parity_saved *saved,
                              const parity_gdn_gating_grads *grads);
} parity_gdn_gating_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_gdn_gating_op;

// Shared argument validation, naming the op and the tensor. Returns N and Hv.
parity_error *parity_gdn_gating_check(const parity_gdn_gating_args *args, int64_t *tokens, int64_t *heads);
parity_error *parity_gdn_gating_check_grads(const parity_gdn_gating_args *args, const parity_gdn_gating_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

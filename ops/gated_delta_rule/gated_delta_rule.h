// gated_delta_rule.h: the gated delta rule, the linear attention of Qwen3.5 / Qwen3-Next GatedDeltaNet
// (HF torch_recurrent_gated_delta_rule / torch_chunk_gated_delta_rule), token-major and packed by
// documents. Per document and value head, with key head kh = hv / (Hv / Hk) (repeat_interleave):
//   S = 0 (Dk x Dv); for each token t:
//     S = S * exp(g_t); kv = S^T k_t; delta = (v_t - kv) * beta_t; S = S + k_t delta^T; o_t = S^T (q_t * scale)
// with q and k first L2-normalised (eps 1e-6) when use_qk_l2norm. State never crosses a document.
// HF runs the kernel in f32 (inputs cast to f32, output cast back): f32/bf16 calls compute in f32,
// f64 calls in f64. The kernel-selection field is chunk_gated_delta_rule_implementation; backends
// register under op "gated_delta_rule": "eager" = the recurrent form (eager.c), "fla" = the chunked
// WY/UT form of flash-linear-attention (chunked.c), the same math in chunks of `chunk_size` tokens.
#ifndef PARITY_GATED_DELTA_RULE_H
#define PARITY_GATED_DELTA_RULE_H

#include <stdbool.h>

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_gated_delta_rule_args {
    const parity_tensor *query;      // (N, Hk, Dk)
    const parity_tensor *key;        // (N, Hk, Dk)
    const parity_tensor *value;      // (N, Hv, Dv), Hv a multiple of Hk
    const parity_tensor *g;          // (N, Hv) log decay (<= 0): the call's dtype or its compute dtype
                                     // (Qwen3.5 computes g in f32: pass gdn_gating's f32 g to a bf16 call)
    const parity_tensor *beta;       // (N, Hv) write strength, the call's dtype
    const parity_tensor *cu_seqlens; // (S + 1) int64 document boundaries, or NULL = one document
    double scale;                    // multiplies q (after the L2 norm); 0 selects Dk^-0.5
    bool use_qk_l2norm;              // HF use_qk_l2norm_in_kernel: the op L2-normalises q and k (eps 1e-6)
    parity_tensor *output;           // (N, Hv, Dv), the call's dtype
    int64_t chunk_size;              // chunked backends: tokens per chunk, chunks start at each document's
                                     // first token; 0 selects 64 (fla's BT). The recurrent form ignores it.
} parity_gated_delta_rule_args;

#define PARITY_GATED_DELTA_RULE_DEFAULT_CHUNK 64

typedef struct parity_gated_delta_rule_grads {
    const parity_tensor *doutput; // (N, Hv, Dv)
    parity_tensor *dquery;        // (N, Hk, Dk), overwritten; may be NULL (summed over the value heads of a key head)
    parity_tensor *dkey;          // (N, Hk, Dk), overwritten; may be NULL
    parity_tensor *dvalue;        // (N, Hv, Dv), overwritten; may be NULL
    parity_tensor *dg;            // (N, Hv), g's dtype, overwritten; may be NULL
    parity_tensor *dbeta;         // (N, Hv), overwritten; may be NULL
} parity_gated_delta_rule_grads;

typedef struct parity_gated_delta_rule_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_gated_delta_rule_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                              const parity_saved *saved, const parity_gated_delta_rule_grads *grads);
} parity_gated_delta_rule_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_gated_delta_rule_op;

// The sizes of a call, from parity_gated_delta_rule_check.
typedef struct parity_gated_delta_rule_sizes {
    int64_t tokens;      // N
    int64_t key_heads;   // Hk
    int64_t value_heads; // Hv
    int64_t key_dim;     // Dk
    int64_t value_dim;   // Dv
    double scale;        // the effective scale (Dk^-0.5 when args->scale is 0)
    int64_t chunk_size;  // the effective chunk size (64 when args->chunk_size is 0)
} parity_gated_delta_rule_sizes;

// Shared argument validation (shapes, dtypes, head grouping, cu_seqlens shape), naming the op and
// the tensor. The cu_seqlens values are checked where a backend reads them (parity_cu_seqlens_load).
parity_error *parity_gated_delta_rule_check(const parity_gated_delta_rule_args *args,
                                            parity_gated_delta_rule_sizes *sizes);
parity_error *parity_gated_delta_rule_check_grads(const parity_gated_delta_rule_args *args,
                                                  const parity_gated_delta_rule_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

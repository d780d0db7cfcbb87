// rotary.h: rotary position embedding applied to query and key in one call (HF apply_rotary_pos_emb
// / apply_rotary_pos_emb_interleave, like Liger's fused rope). Per-token positions are the only
// source of truth: packed rows restart at 0, so nothing is derived from the token index.
// Only x[..., :rotary_dim] is rotated (partial rotary); the rest passes through unchanged.
// The kernel-selection field is rotary_pos_emb_implementation; backends register under op "rotary".
#ifndef PARITY_ROTARY_H
#define PARITY_ROTARY_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"
#include "ops/rotary/frequencies.h"
#include "ops/rotary/rope_description.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_rotary_args {
    const parity_tensor *query;         // (N, Hq, D)
    const parity_tensor *key;           // (N, Hk, D), same dtype and D as query
    const parity_tensor *positions;     // (N) int64: position of each token within its document
    const parity_rope_description *rope;
    parity_tensor *query_out;           // (N, Hq, D)
    parity_tensor *key_out;             // (N, Hk, D)
} parity_rotary_args;

typedef struct parity_rotary_grads {
    const parity_tensor *dquery_out;    // (N, Hq, D)
    const parity_tensor *dkey_out;      // (N, Hk, D)
    parity_tensor *dquery;              // (N, Hq, D), overwritten; may be NULL
    parity_tensor *dkey;                // (N, Hk, D), overwritten; may be NULL
} parity_rotary_grads;

typedef struct parity_rotary_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_rotary_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_rotary_args *args, const parity_saved *saved,
                              const parity_rotary_grads *grads);
} parity_rotary_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call and work model.
extern const parity_op_descriptor parity_rotary_op;

// The sizes every backend needs, validated once.
typedef struct parity_rotary_sizes {
    int64_t tokens, query_heads, key_heads, head_dim, rotary_dim;
} parity_rotary_sizes;

// Shared argument validation, naming the op and the tensor in every message.
parity_error *parity_rotary_check(const parity_rotary_args *args, parity_rotary_sizes *sizes);
parity_error *parity_rotary_check_grads(const parity_rotary_args *args, const parity_rotary_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

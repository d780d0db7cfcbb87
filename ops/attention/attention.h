// attention.h: softmax attention over token-major rows packed by documents (the kernel-selection
// field attn_implementation; backends register under op "attention"). A plain [B, T] batch and a
// packed row are the same call: cu_seqlens = 0, T, 2T, ... for the batch, the document boundaries
// for a packed row. Attention never crosses a document boundary.
//
//   scores[i, j] = scale * q[i] . k[j]   (i, j positions inside one document)
//   key j is visible to query i when: (!causal || j <= i) && (sliding_window == 0 || i - j < window)
//   output[i]    = sum_j softmax_j(scores[i, :]) v[j]        (over the visible keys only)
//
// GQA/MQA: Hq is a multiple of Hk; query head h reads kv head h / (Hq / Hk). The value head size Dv
// may differ from the query/key head size D (DeepSeek-V3 MLA). Sliding windows follow HF's
// semantics and are causal only (a window on non-causal attention is rejected). Every query sees at
// least itself (causal) or its whole document, so no softmax row is empty.
#ifndef PARITY_ATTENTION_H
#define PARITY_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_attention_args {
    const parity_tensor *query;      // (N, Hq, D)
    const parity_tensor *key;        // (N, Hk, D)
    const parity_tensor *value;      // (N, Hk, Dv)
    const parity_tensor *cu_seqlens; // (S + 1) int64: 0 = c0 < c1 < ... < cS = N
    double scale;                    // softmax scale (HF: head_dim^-0.5 or a model-specific value)
    bool causal;
    int64_t sliding_window; // 0 = none; else query i sees key j when j <= i && i - j < window
    parity_tensor *output;  // (N, Hq, Dv), same dtype as query
    // flex_attention only: the model's block mask (block_mask.h) over the same N tokens, on the
    // query's device; NULL for every other backend.
    const struct parity_block_mask *block_mask;
} parity_attention_args;

typedef struct parity_attention_grads {
    const parity_tensor *doutput; // (N, Hq, Dv)
    parity_tensor *dquery;        // (N, Hq, D), overwritten; may be NULL
    parity_tensor *dkey;          // (N, Hk, D), overwritten; may be NULL
    parity_tensor *dvalue;        // (N, Hk, Dv), overwritten; may be NULL
} parity_attention_grads;

typedef struct parity_attention_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_attention_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_attention_args *args, const parity_saved *saved,
                              const parity_attention_grads *grads);
} parity_attention_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call, the bench's work model.
extern const parity_op_descriptor parity_attention_op;
// The bench's packed rows (descriptor.c): document `index` of `documents` in a row of `tokens` tokens
// has a length proportional to index + 1 (floor(T (i + 1) / (S (S + 1) / 2)), the last takes the rest),
// so a packed row mixes short and long documents; every length is >= 1 when T >= S (S + 1) / 2.
int64_t parity_attention_work_document_length(int64_t tokens, int64_t documents, int64_t index);

// The sizes of a validated call.
typedef struct parity_attention_dims {
    int64_t tokens;      // N
    int64_t query_heads; // Hq
    int64_t kv_heads;    // Hk
    int64_t head_dim;    // D
    int64_t value_dim;   // Dv
    int64_t documents;   // S
} parity_attention_dims;

// Shared argument validation (ranks, sizes, dtypes, hyper-parameters), naming the op and the tensor
// in every message. Does not read cu_seqlens' values (they may live on a GPU).
parity_error *parity_attention_check(const parity_attention_args *args, parity_attention_dims *dims);
parity_error *parity_attention_check_grads(const parity_attention_args *args, const parity_attention_grads *grads);
// Checks boundary values on the host: starts at 0, increases strictly, ends at `tokens`.
parity_error *parity_attention_check_boundaries(const int64_t *cu_seqlens, int64_t count, int64_t tokens);
// CPU backends: loads cu_seqlens (a CPU tensor) into a malloc'd array (free it) and checks it.
parity_error *parity_attention_load_boundaries(const parity_attention_args *args, int64_t tokens, int64_t **out);

// The mask, in positions inside one document.
static inline bool parity_attention_key_visible(const parity_attention_args *args, int64_t query, int64_t key) {
    if (args->causal && key > query) return false;
    return args->sliding_window == 0 || query - key < args->sliding_window;
}

#ifdef __cplusplus
}
#endif
#endif

// embedding.h: token embedding lookup (nn.Embedding / F.embedding): gather rows of the table by id.
// No kernel-selection field: backends register under op "embedding" (value "eager" on each device).
#ifndef PARITY_EMBEDDING_H
#define PARITY_EMBEDDING_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_OP_EMBEDDING "embedding"

typedef struct parity_embedding_args {
    const parity_tensor *ids;        // (N) int64, each in [0, V): any shape, flattened to N positions
    const parity_tensor *weight;     // (V, H)
    parity_tensor *output;           // (N, H): ids' shape, then H; weight's dtype
    bool has_padding_idx;            // HF nn.Embedding(padding_idx=pad_token_id): positions holding
    int64_t padding_idx;             //   padding_idx contribute no gradient to that row
} parity_embedding_args;

typedef struct parity_embedding_grads {
    const parity_tensor *doutput;    // (N, H)
    parity_tensor *dweight;          // (V, H), overwritten (zero, then each position's row added); may be NULL
} parity_embedding_grads;

typedef struct parity_embedding_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_embedding_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_embedding_args *args, const parity_saved *saved,
                              const parity_embedding_grads *grads);
} parity_embedding_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_embedding_op;

// Shared argument validation, naming the op and the tensor in every message. Returns N, V and H.
parity_error *parity_embedding_check(const parity_embedding_args *args, int64_t *positions, int64_t *vocab,
                                     int64_t *hidden);
parity_error *parity_embedding_check_grads(const parity_embedding_args *args, const parity_embedding_grads *grads);
// The ids' values (host copy): an id outside [0, vocab) is an error naming its position and value.
parity_error *parity_embedding_check_ids(const int64_t *ids, int64_t positions, int64_t vocab);

#ifdef __cplusplus
}
#endif
#endif

// block_mask.h: the block mask flex_attention runs on (the seed: "FlexAttention requires a
// model-provided native BlockMask; VeOmni does not construct model-specific visibility"). A model
// builds it from its own visibility (packed documents through cu_seqlens, causal, sliding window);
// the harness never invents one. The mask covers one packed row of N tokens (queries and keys alike)
// cut into blocks of q_block query tokens and kv_block key tokens. For each (head, query block) it
// lists, in ascending order, the key blocks that are
//   partial: some (query, key) pairs visible and some hidden: masked element by element with mask_mod;
//   full:    every pair visible: no per-element mask;
// every other key block is empty and skipped. The transposed lists (per key block, its query blocks)
// drive the dk/dv backward. heads == 1 is a head-broadcast mask (torch's BlockMask.shape[1] == 1);
// under Ulysses sequence parallelism only a head-broadcast mask is accepted (the seed: rank-local head
// indices are not rebased for head-specific masks).
#ifndef PARITY_ATTENTION_BLOCK_MASK_H
#define PARITY_ATTENTION_BLOCK_MASK_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/core/error.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// The element visibility of partial blocks: key j is visible to query i when both are in the same
// document and (!causal || j <= i) && (window == 0 || i - j < window).
typedef struct parity_mask_mod {
    parity_tensor document_ids; // (N) i32: the document of each token (from cu_seqlens)
    bool causal;
    int64_t sliding_window; // 0 = none
} parity_mask_mod;

typedef struct parity_block_mask {
    int64_t tokens;              // N
    int64_t heads;               // 1 = head-broadcast, else one mask per query head (Hq)
    int64_t q_block, kv_block;   // block sizes in tokens
    int64_t q_blocks, kv_blocks; // ceil(N / q_block), ceil(N / kv_block)
    // Forward: per (head, query block), the partial and the full key blocks, ascending; only the
    // first *_num_blocks entries of a row are meaningful.
    parity_tensor kv_num_blocks;      // (heads, q_blocks) i32
    parity_tensor kv_indices;         // (heads, q_blocks, kv_blocks) i32
    parity_tensor full_kv_num_blocks; // (heads, q_blocks) i32
    parity_tensor full_kv_indices;    // (heads, q_blocks, kv_blocks) i32
    // Backward: per (head, key block), the partial and the full query blocks, ascending.
    parity_tensor q_num_blocks;      // (heads, kv_blocks) i32
    parity_tensor q_indices;         // (heads, kv_blocks, q_blocks) i32
    parity_tensor full_q_num_blocks; // (heads, kv_blocks) i32
    parity_tensor full_q_indices;    // (heads, kv_blocks, q_blocks) i32
    parity_mask_mod mask_mod;
} parity_block_mask;

struct parity_attention_args;
struct parity_attention_dims;

// torch's default BLOCK_SIZE (create_block_mask): 128 query x 128 key tokens. flex_attention on cuda
// takes block sizes that are multiples of 128 in bf16 (the tensor-core engine's largest tile), of 32
// in f32 and of 16 in f64 (the CUDA-core kernels' tiles).
#define PARITY_BLOCK_MASK_DEFAULT_BLOCK 128

// Builds the mask of one packed row from its visibility: cu_seqlens (count entries, host values:
// 0 = c0 < c1 < ... = tokens), causal, sliding_window (attention.h semantics; a window needs causal),
// a head-broadcast mask (heads = 1). A (query block, key block) is full when every pair of real
// tokens in it (i < tokens, j < tokens: the tail blocks are shorter) is visible, empty when none is,
// partial otherwise; computed exactly on the host (per query its visible keys are one interval,
// so a block costs q_block steps), then every tensor is placed on `device` (synchronous copies, as
// parity_tensor_to makes them: setup work, outside a kernel's stream order). On error *out holds
// nothing; free a built mask with parity_block_mask_free.
parity_error *parity_block_mask_build(parity_device device, const int64_t *cu_seqlens, int64_t count, int64_t tokens,
                                      bool causal, int64_t sliding_window, int64_t q_block, int64_t kv_block,
                                      parity_block_mask *out);
// The one builder every caller uses (the model's attention node, the op tests, `parity bench op
// attention`): the mask of a call's visibility, cu_seqlens read from any device, default block
// sizes, the tensors on `device`.
parity_error *parity_block_mask_from_visibility(parity_device device, const parity_tensor *cu_seqlens, int64_t tokens,
                                                bool causal, int64_t sliding_window, parity_block_mask *out);
// Releases every tensor and resets the struct. Safe on an empty or already freed mask.
void parity_block_mask_free(parity_block_mask *mask);

// Validates `mask` against a validated call (`dims` from parity_attention_check): tokens == N,
// heads 1 or Hq, block sizes > 0, q_blocks/kv_blocks = ceil(N / block), every tensor i32, contiguous,
// of its documented shape and on the query's device, the mask_mod's causal and sliding_window equal
// to the call's. Its values (counts within 0..blocks, each list ascending and in range, partial and
// full disjoint, the backward lists the transpose of the forward ones, document_ids matching
// cu_seqlens) are read only when the mask is on the CPU: on a GPU this check is structural (no
// device-to-host copy in a kernel's call path; parity_block_mask_check_values reads them from any
// device). Errors are SHAPE errors naming the field: "attention: block_mask.kv_indices[0, 2] ...".
parity_error *parity_block_mask_check(const parity_block_mask *mask, const struct parity_attention_args *args,
                                      const struct parity_attention_dims *dims);
// The value checks of parity_block_mask_check on a host copy of the mask (any device), against the
// call's cu_seqlens (host values, count entries). For tests and debugging, not per call.
parity_error *parity_block_mask_check_values(const parity_block_mask *mask, const int64_t *cu_seqlens, int64_t count);
// The seed's rule under Ulysses sequence parallelism of `sp_size` ranks: sp_size > 1 with a
// head-specific mask (heads != 1) is UNSUPPORTED, "rank-local head indices are not rebased for
// head-specific masks". sp_size 1 accepts any mask.
parity_error *parity_block_mask_check_sequence_parallel(const parity_block_mask *mask, int64_t sp_size);

// For a backend with PARITY_CAP_BLOCK_MASK (ops/registry.h): after parity_attention_check, requires
// args->block_mask (a USAGE error when it is NULL: the model provides the mask; the harness never
// invents one) and runs parity_block_mask_check on it.
parity_error *parity_attention_require_block_mask(const struct parity_attention_args *args,
                                                  const struct parity_attention_dims *dims);

#ifdef __cplusplus
}
#endif
#endif

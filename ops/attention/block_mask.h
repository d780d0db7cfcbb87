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

#ifdef __cplusplus
}
#endif
#endif

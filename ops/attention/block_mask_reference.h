// block_mask_reference.h: attention on the CPU computed THROUGH a block mask (block_mask.h), the way
// flex_attention's kernel walks it: per (head, query block) only the listed key blocks, partial ones
// masked element by element with the mask_mod, full ones with no per-element test; the dk/dv
// backward walks the transposed lists (per key block, its query blocks). The math is plain f64 (one
// rounding, when an output or gradient is stored), so in f64 it equals eager (eager.c) to rounding,
// which proves the mask's lists; it is not HF's bf16 rounding points, and not registered as a
// backend (flex_attention's target is CUDA): tests register it as a test-only CPU backend with
// PARITY_CAP_BLOCK_MASK to drive the op tests' and the model's block-mask plumbing.
#ifndef PARITY_ATTENTION_BLOCK_MASK_REFERENCE_H
#define PARITY_ATTENTION_BLOCK_MASK_REFERENCE_H

#include "ops/attention/attention.h"

#ifdef __cplusplus
extern "C" {
#endif

// forward and backward (parity_attention_kernels); both call parity_attention_require_block_mask.
// The forward saves nothing: the backward recomputes the probabilities from q, k and the mask.
extern const parity_attention_kernels parity_block_mask_reference_kernels;

#ifdef __cplusplus
}
#endif
#endif

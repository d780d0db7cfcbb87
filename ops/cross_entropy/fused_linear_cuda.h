// fused_linear_cuda.h: fused linear + cross-entropy on CUDA, behind "liger_kernel" and the GPU
// "chunk_loss" (kernels and launchers in fused_linear_cuda.cu). The full (N, V) logits never exist.
// The forward walks the tokens in chunks; for each chunk of c tokens:
//   logits (c, V)  = hidden_chunk @ weight^T                     cuBLAS, f32 accumulation
//   in place       = dlogits = (softmax - onehot) / divisor       one block per row, f32 (f64) math,
//                    and the row's loss lse - logit[target]       rounded to the activation dtype
//   dhidden_chunk  = dlogits @ weight                             cuBLAS, into the saved dhidden
//   dweight       += dlogits^T @ hidden_chunk                     cuBLAS, accumulated in the activation
//                                                                 dtype (beta = 1 after the first chunk)
// so the gradients for dloss = 1 are complete when the forward returns (saved: dhidden (N, H) and
// dweight (V, H)); the backward only rescales them by dloss into the caller's gradients.
// The divisor (num_items_in_batch, or the valid-target count for a mean) is known up front: a small
// kernel counts the valid targets and finds any out of range before the first chunk.
// Loss: each chunk's row losses are summed in a fixed tree order; `per_chunk_loss` adds
// sum_chunk / divisor chunk by chunk (VeOmni ChunkLoss), otherwise one sum over all rows / divisor.
// Scratch (the chunk's logits, the row losses) comes from the stream-ordered pool.
#ifndef PARITY_CROSS_ENTROPY_FUSED_LINEAR_CUDA_H
#define PARITY_CROSS_ENTROPY_FUSED_LINEAR_CUDA_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/cross_entropy/cross_entropy.h"

#ifdef __cplusplus
extern "C" {
#endif

// liger_kernel's chunk: as many tokens as keep one chunk of logits within this many bytes (at least
// one token, a multiple of 64 tokens when above 64): 288 MiB, i.e. 960 tokens at V = 151936 in bf16.
#define PARITY_CROSS_ENTROPY_LIGER_CHUNK_BYTES ((int64_t)288 << 20)

// Tokens per chunk of liger_kernel for `tokens` x `vocab` logits of `element_size` bytes.
int64_t parity_cross_entropy_liger_chunk_tokens(int64_t tokens, int64_t vocab, size_t element_size);

// A logits output is UNSUPPORTED (never materialized). `backend` names the caller in errors.
parity_error *parity_cross_entropy_cuda_fused_forward(const parity_exec *exec, const parity_cross_entropy_args *args,
                                                      parity_saved *saved, int64_t chunk_tokens, bool per_chunk_loss,
                                                      const char *backend);
parity_error *parity_cross_entropy_cuda_fused_backward(const parity_exec *exec, const parity_cross_entropy_args *args,
                                                       const parity_saved *saved,
                                                       const parity_cross_entropy_grads *grads, const char *backend);

#ifdef __cplusplus
}
#endif
#endif

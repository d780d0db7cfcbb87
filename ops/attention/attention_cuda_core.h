// attention_cuda_core.h: the CUDA-core attention kernels of sdpa.cu (FlashAttention-2's tiled online
// softmax on CUDA cores: compute in f32 for f32/bf16 and f64 for f64, forward saving lse (N, Hq) in the
// compute type, recomputing deterministic backward without atomics, varlen through cu_seqlens, GQA/MQA,
// causal, sliding window, head sizes up to 256) for the backends that run them: sdpa (f64, f32, bf16
// at head sizes the tensor-core engine lacks), flash_attention_2 and flex_attention (f32 and f64: the
// tensor cores here take bf16 only). `block_mask` picks the tiles walked: false = the documents'
// (cu_seqlens, causal, window), true = args->block_mask's lists (required: a USAGE error without one;
// its blocks must be multiples of the tiles, 32 tokens for f32/bf16 and 16 for f64, else UNSUPPORTED).
// `backend` names the caller in messages ("flex_attention"). Host functions, for .cu files.
#ifndef PARITY_ATTENTION_CUDA_CORE_H
#define PARITY_ATTENTION_CUDA_CORE_H

#include <stdbool.h>

#include "ops/attention/attention.h"

#ifdef __cplusplus
extern "C" {
#endif

parity_error *parity_attention_cuda_core_forward(const parity_exec *exec, const parity_attention_args *args,
                                                 parity_saved *saved, bool block_mask, const char *backend);
parity_error *parity_attention_cuda_core_backward(const parity_exec *exec, const parity_attention_args *args,
                                                  const parity_saved *saved, const parity_attention_grads *grads,
                                                  bool block_mask, const char *backend);

#ifdef __cplusplus
}
#endif
#endif

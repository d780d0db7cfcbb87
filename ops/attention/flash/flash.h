// flash.h: the tensor-core attention engine the bf16 CUDA attention backends share (C++, for .cu
// files): flash_attention_2 and sdpa run it on the documents schedule, flex_attention on the model's
// block mask (schedule.cuh). engine.cu turns a checked parity_attention_args into a flash_call and
// runs the kernels of forward.cu and backward.cu, which are instantiated for the head sizes below.
#ifndef PARITY_ATTENTION_FLASH_H
#define PARITY_ATTENTION_FLASH_H

#include <cuda_runtime.h>

#include "ops/attention/flash/schedule.cuh"
#include "ops/core/cuda/cuda_check.h"

extern "C" {
#include "ops/attention/attention.h"
#include "ops/core/exec.h"
#include "ops/core/saved.h"
}

// (D, Dv) pairs with kernels: the models' head sizes (qwen3/llama 128, qwen3_5 256, DeepSeek-V3 MLA
// 192 + 128) and the 64 and 96.
#define PARITY_FLASH_HEAD_SIZES(X) X(64, 64) X(96, 96) X(128, 128) X(192, 128) X(192, 192) X(256, 256)

namespace parity_flash {

// How the grid is cut: the longest document's tokens and the document count (documents schedule),
// or N and 1 (block mask).
struct flash_grid {
    int64_t longest;
    int64_t documents;
    bool block_mask;
    int device_index;
};

// Lets `kernel` take `bytes` of dynamic shared memory (UNSUPPORTED when the device has fewer).
parity_error *flash_allow_shared(const void *kernel, const char *name, size_t bytes, int device_index);

template <int D, int DV> parity_error *flash_forward_for(const flash_call &call, const flash_grid &grid, cudaStream_t stream);
template <int D, int DV>
parity_error *flash_backward_for(const flash_call &call, const flash_grid &grid, cudaStream_t stream);

// What a block mask's q_block and kv_block must be multiples of: the largest tile of any kernel
// (the forward's 128 query rows).
constexpr int flash_mask_granule = 128;

} // namespace parity_flash

// Whether the engine has kernels for the call's dtype and head sizes (bf16, a PARITY_FLASH_HEAD_SIZES
// pair): sdpa runs those calls on it and the others on its CUDA-core kernels.
bool parity_flash_attention_covers(const parity_attention_args *args);

// The engine (engine.cu): forward saves lse (N, Hq) f32; backward reads it. `block_mask` picks the
// schedule: false = documents (cu_seqlens, causal, window), true = args->block_mask (required).
// `backend` names the caller in messages ("flash_attention_2").
parity_error *parity_flash_attention_forward(const parity_exec *exec, const parity_attention_args *args, parity_saved *saved,
                                             bool block_mask, const char *backend);
parity_error *parity_flash_attention_backward(const parity_exec *exec, const parity_attention_args *args,
                                              const parity_saved *saved, const parity_attention_grads *grads,
                                              bool block_mask, const char *backend);

#endif

// causal_conv1d.h: the depthwise causal convolution over time of Qwen3.5 / Qwen3-Next GatedDeltaNet
// (HF causal_conv1d_fn: nn.Conv1d with groups = channels, no bias, left padding K - 1, then SiLU),
// token-major and packed by documents:
//   out[t, c] = act(sum_{j=0}^{K-1} weight[c, j] * x[t - (K - 1) + j, c]),  x = 0 before the document start
// The state never crosses a document boundary (each document starts from a zero conv state).
// The kernel-selection field is causal_conv1d_implementation; backends register under op "causal_conv1d".
#ifndef PARITY_CAUSAL_CONV1D_H
#define PARITY_CAUSAL_CONV1D_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_causal_conv1d_activation {
    PARITY_CAUSAL_CONV1D_NONE = 0,
    PARITY_CAUSAL_CONV1D_SILU, // HF applies F.silu after the conv (Qwen3.5: hidden_act = "silu")
} parity_causal_conv1d_activation;

typedef struct parity_causal_conv1d_args {
    const parity_tensor *input;      // (N, C): N packed tokens, C channels (Qwen3.5: 2 * key_dim + value_dim)
    const parity_tensor *weight;     // (C, K): HF's conv1d.weight (C, 1, K) squeezed; same dtype as input
    const parity_tensor *cu_seqlens; // (S + 1) int64 document boundaries, or NULL = one document
    parity_causal_conv1d_activation activation;
    parity_tensor *output;           // (N, C), same dtype as input
} parity_causal_conv1d_args;

typedef struct parity_causal_conv1d_grads {
    const parity_tensor *doutput; // (N, C)
    parity_tensor *dinput;        // (N, C), overwritten; may be NULL
    parity_tensor *dweight;       // (C, K), overwritten; may be NULL
} parity_causal_conv1d_grads;

typedef struct parity_causal_conv1d_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_causal_conv1d_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_causal_conv1d_args *args, const parity_saved *saved,
                              const parity_causal_conv1d_grads *grads);
} parity_causal_conv1d_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_causal_conv1d_op;

// Shared argument validation (shapes, dtypes, cu_seqlens shape), naming the op and the tensor.
// Returns N, C and K. The cu_seqlens values are checked where a backend reads them
// (parity_cu_seqlens_load).
parity_error *parity_causal_conv1d_check(const parity_causal_conv1d_args *args, int64_t *tokens, int64_t *channels,
                                         int64_t *kernel_size);
parity_error *parity_causal_conv1d_check_grads(const parity_causal_conv1d_args *args,
                                               const parity_causal_conv1d_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

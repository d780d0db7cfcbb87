// cross_entropy.h: the causal-LM loss from the final hidden states and the lm_head weight,
//   logits = hidden @ weight^T;  loss = reduce(-log_softmax(float(logits))[i, targets[i]])
// over the positions whose target is not ignore_index. The contract takes hidden states and the
// lm_head weight (not logits) so fused backends (chunk_loss, liger_kernel) implement the same call
// without ever holding the full (N, V) logits.
// Kernel-selection field cross_entropy_loss_implementation; backends register under op "cross_entropy".
//
// Semantics (HF ForCausalLMLoss -> fixed_cross_entropy -> F.cross_entropy):
//   - targets are the labels ALREADY SHIFTED by the model (padded with ignore_index, shifted left
//     by one); this op does no shifting.
//   - num_items_in_batch == 0: mean over valid targets (reduction="mean"). With no valid target
//     the loss is NaN (0/0, as PyTorch) and every gradient is 0.
//   - num_items_in_batch > 0: sum over valid targets / num_items_in_batch (HF's gradient
//     accumulation path). With no valid target the loss is 0 and every gradient is 0.
//   - Under sequence parallelism the caller passes the global num_items_in_batch and sums the
//     per-rank losses.
// dtypes: hidden, weight, logits and the hidden/weight gradients share the activation dtype
// (f64, f32 or bf16); loss and dloss are f32 for f32/bf16 runs (logits.float()) and f64 for f64.
#ifndef PARITY_CROSS_ENTROPY_H
#define PARITY_CROSS_ENTROPY_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_CROSS_ENTROPY_IGNORE_INDEX (-100)
#define PARITY_CROSS_ENTROPY_DEFAULT_CHUNK 1024 // tokens per chunk of chunk_loss (VeOmni's default)

typedef struct parity_cross_entropy_args {
    const parity_tensor *hidden;   // (N, H) final hidden states; the caller flattens (B, T, H) to N = B * T
    const parity_tensor *weight;   // (V, H) lm_head weight, same dtype as hidden
    const parity_tensor *targets;  // (N) int64: shifted labels in [0, V), or ignore_index
    int64_t ignore_index;          // HF: -100
    int64_t num_items_in_batch;    // > 0: loss = sum / num_items_in_batch; 0: mean over valid targets
    int64_t chunk_size;            // chunk_loss: tokens per chunk (0 = PARITY_CROSS_ENTROPY_DEFAULT_CHUNK); others ignore it
    parity_tensor *loss;           // () f32 for f32/bf16 runs, f64 for f64 runs
    parity_tensor *logits;         // (N, V) in hidden's dtype, or NULL. Only backends that materialize
                                   // logits (eager) fill it; fused ones return UNSUPPORTED when asked
    int64_t *valid_count;          // optional out (NULL = not wanted): number of targets != ignore_index
} parity_cross_entropy_args;

typedef struct parity_cross_entropy_grads {
    const parity_tensor *dloss;    // () same dtype as loss
    parity_tensor *dhidden;        // (N, H), overwritten; may be NULL
    parity_tensor *dweight;        // (V, H), overwritten; may be NULL
} parity_cross_entropy_grads;

typedef struct parity_cross_entropy_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_cross_entropy_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_cross_entropy_args *args, const parity_saved *saved,
                              const parity_cross_entropy_grads *grads);
} parity_cross_entropy_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call and work model.
extern const parity_op_descriptor parity_cross_entropy_op;

// Shared shape/dtype validation, naming the op and the tensor in every message. Returns N, H, V.
parity_error *parity_cross_entropy_check(const parity_cross_entropy_args *args, int64_t *tokens, int64_t *hidden,
                                         int64_t *vocab);
parity_error *parity_cross_entropy_check_grads(const parity_cross_entropy_args *args,
                                               const parity_cross_entropy_grads *grads);
// CPU targets as an int64 array (caller frees), each checked to be ignore_index or in [0, vocab);
// an out-of-range target is a SHAPE error naming its position and id. Also counts the valid ones.
parity_error *parity_cross_entropy_load_targets(const parity_cross_entropy_args *args, int64_t vocab,
                                                int64_t **targets, int64_t *valid_count);

#ifdef __cplusplus
}
#endif
#endif

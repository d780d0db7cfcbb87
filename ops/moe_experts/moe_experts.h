// moe_experts.h: the routed experts of an MoE block in transformers 5.x's fused layout
// (Qwen3MoeExperts, Qwen3_5MoeExperts, DeepseekV3Experts; experts_implementation "eager"):
//   for each expert e hit by some token (ascending), rows r = (slot k, token t) with
//   expert_indices[t, k] == e, in torch.where order over the (K, N) mask (slot-major):
//     gate, up = split(x_t W_e^T)       W_e = gate_up_proj[e] (2I, H): rows [0, I) gate, [I, 2I) up
//     h = silu(gate) * up
//     y = h D_e^T                       D_e = down_proj[e] (H, I)
//     output[t] += routing_weights[t, k] * y     (index_add_ into an output that starts at zero)
// Kernel-selection field moe_implementation; backends register under op "moe_experts".
//
// dtypes: hidden, gate_up_proj, down_proj and output share the call's dtype (f64, f32, bf16).
// routing_weights has that dtype too, except that bf16 activations may come with f32 weights
// (DeepSeek-V3's router returns f32 weights; the product y * w is then formed in f32 and rounded
// to bf16 once, exactly as torch's type promotion does). expert_indices is int64, each in [0, E).
// bf16 rounds where HF's bf16 tensors are stored: both linear outputs, silu, the product, the
// weighted contribution, and the output after every index_add_. Checked against transformers 5.17 /
// PyTorch 2.11 on an H200: bf16 output and all four gradients bit-identical (E=8, K=2, N=64, H=64).
#ifndef PARITY_MOE_EXPERTS_H
#define PARITY_MOE_EXPERTS_H

#include "ops/core/exec.h"
#include "ops/core/saved.h"
#include "ops/core/tensor.h"
#include "ops/op_descriptor.h"
#include "ops/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_moe_experts_args {
    const parity_tensor *hidden;          // (N, H)
    const parity_tensor *gate_up_proj;    // (E, 2I, H)
    const parity_tensor *down_proj;       // (E, H, I)
    const parity_tensor *expert_indices;  // (N, K) int64
    const parity_tensor *routing_weights; // (N, K)
    parity_tensor *output;                // (N, H)
} parity_moe_experts_args;

typedef struct parity_moe_experts_grads {
    const parity_tensor *doutput;    // (N, H)
    parity_tensor *dhidden;          // (N, H), overwritten; may be NULL
    parity_tensor *dgate_up_proj;    // (E, 2I, H), overwritten (zero for experts no token chose); may be NULL
    parity_tensor *ddown_proj;       // (E, H, I), overwritten; may be NULL
    parity_tensor *drouting_weights; // (N, K), dtype of routing_weights, overwritten; may be NULL
} parity_moe_experts_grads;

// The gate_up stage of a grouped backend alone, for `parity bench op moe_experts`'s "gate_up GEMM" row
// beside torch's grouped_mm of the same GEMM (a part of the op: its own flops, 4 R H I). prepare runs
// the forward's set-up once, untimed (buffers, the dispatch, a sorted copy of x where the backend makes
// one); run is the timed part: the gate_up grouped GEMM with its SwiGLU epilogue, exactly as the
// forward launches it; release frees what prepare made (NULL is a no-op).
typedef struct parity_moe_experts_part parity_moe_experts_part;
typedef struct parity_moe_experts_part_kernels {
    parity_error *(*prepare)(const parity_exec *exec, const parity_moe_experts_args *args, parity_moe_experts_part **part);
    parity_error *(*run)(const parity_exec *exec, parity_moe_experts_part *part);
    void (*release)(parity_moe_experts_part *part);
} parity_moe_experts_part_kernels;

typedef struct parity_moe_experts_kernels {
    parity_error *(*forward)(const parity_exec *exec, const parity_moe_experts_args *args, parity_saved *saved);
    parity_error *(*backward)(const parity_exec *exec, const parity_moe_experts_args *args, const parity_saved *saved,
                              const parity_moe_experts_grads *grads);
    const parity_moe_experts_part_kernels *gate_up_part; // NULL: no such stage (eager's per-expert loop)
} parity_moe_experts_kernels;

// The op's descriptor (descriptor.c): slots, args builder, kernel call.
extern const parity_op_descriptor parity_moe_experts_op;

typedef struct parity_moe_experts_sizes {
    int64_t tokens;       // N
    int64_t hidden;       // H
    int64_t experts;      // E
    int64_t intermediate; // I
    int64_t top_k;        // K
} parity_moe_experts_sizes;

// Shared argument validation, naming the op and the tensor in every message; E and I are read from
// down_proj (E, H, I). Also checks every expert index ("expert index 4 at token 3, slot 1 is
// outside [0, 4)"), so backends may index with them directly.
parity_error *parity_moe_experts_check(const parity_moe_experts_args *args, parity_moe_experts_sizes *sizes);
parity_error *parity_moe_experts_check_grads(const parity_moe_experts_args *args, const parity_moe_experts_grads *grads);

#ifdef __cplusplus
}
#endif
#endif

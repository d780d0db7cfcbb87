// descriptor.c: the moe_experts op descriptor (ops/op_descriptor.h).
//   slots: hidden (N, H), gate_up_proj (E, 2I, H), down_proj (E, H, I), expert_indices (N, K) int64 (data),
//          routing_weights (N, K) -> output (N, H); no attributes
//   work (TOKENSxHIDDENxEXPERTSxINTERMEDIATExTOP_K, for `parity bench`): R = N K routed rows; flops are the
//   experts' two GEMMs, gate_up (H -> 2I) and down (I -> H), 2 R (H 2I + I H) = 6 R H I forward, 3x that
//   forward + backward (each GEMM's dgrad and wgrad; SwiGLU, gathers and the combine not counted); bytes:
//   the forward reads hidden, both weights, the indices and routing weights and writes output, the
//   backward reads them again with doutput and writes dhidden, dgate_up_proj, ddown_proj and
//   drouting_weights (routing weights counted in the activations' dtype; the (R, 2I) and (R, I)
//   intermediates are not counted)
#include "ops/moe_experts/moe_experts.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(moe_experts, "hidden", PARITY_SLOT_INPUT, hidden, dhidden),
    PARITY_OP_SLOT(moe_experts, "gate_up_proj", PARITY_SLOT_INPUT, gate_up_proj, dgate_up_proj),
    PARITY_OP_SLOT(moe_experts, "down_proj", PARITY_SLOT_INPUT, down_proj, ddown_proj),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(moe_experts, "expert_indices", PARITY_SLOT_DATA, expert_indices),
    PARITY_OP_SLOT(moe_experts, "routing_weights", PARITY_SLOT_INPUT, routing_weights, drouting_weights),
    PARITY_OP_SLOT(moe_experts, "output", PARITY_SLOT_OUTPUT, output, doutput),
};

// sizes: N, H, E, I, K
static double flops(const int64_t *sizes, bool with_backward) {
    double rows = (double)sizes[0] * (double)sizes[4], h = (double)sizes[1], i = (double)sizes[3];
    double forward = 2 * rows * (h * 2 * i + i * h);
    return with_backward ? 3 * forward : forward;
}

static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double n = (double)sizes[0], h = (double)sizes[1], e = (double)sizes[2], i = (double)sizes[3], k = (double)sizes[4];
    double size = (double)parity_dtype_size(dtype);
    double inputs = (n * h + e * 3 * i * h + n * k) * size + n * k * 8; // hidden, gate_up_proj + down_proj, weights; indices
    double forward = inputs + n * h * size;                               // + output
    if (!with_backward) return forward;
    return forward + inputs + n * h * size + (n * h + e * 3 * i * h + n * k) * size; // + doutput; the four gradients
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    double n = (double)sizes[0], h = (double)sizes[1], e = (double)sizes[2], i = (double)sizes[3], k = (double)sizes[4];
    return (n * h + e * 3 * i * h + n * k) * (double)parity_dtype_size(dtype);
}

static const parity_op_work_model work = {"TOKENSxHIDDENxEXPERTSxINTERMEDIATExTOP_K", 5, true, bytes, flops, gradient_bytes};

PARITY_OP_DESCRIPTOR(moe_experts, PARITY_OP_MOE_EXPERTS, .work = &work)

// descriptor.c: the gated_delta_rule op descriptor (ops/op_descriptor.h).
//   slots: query, key (N, Hk, Dk), value (N, Hv, Dv), g, beta (N, Hv), cu_seqlens (S + 1) int64 or NULL
//          (data) -> output (N, Hv, Dv); attributes: parity_gated_delta_rule_args (scale, use_qk_l2norm,
//          chunk_size)
//   work (BATCHxTOKENSxHEADSxKEY_DIMxVALUE_DIM): B documents of T tokens packed into N = B T rows
//   (cu_seqlens), Hk = Hv = H heads, g in the compute dtype (f32 for a bf16 call: Qwen3.5's gdn_gating
//   gives an f32 g). Flop-bound, counted as the products of the chunked (WY/UT) form in chunks of
//   C = 64 tokens (fla's BT, PARITY_GATED_DELTA_RULE_DEFAULT_CHUNK), each as the dense GEMM it is
//   launched as: per chunk and head, A = (beta k) k^T 2 C^2 K, w = A (beta e^g k) 2 C^2 K, u = A (beta v)
//   2 C^2 V, v_new = u - w S 2 C K V, o = q S 2 C K V + (q k^T masked) 2 C^2 K times v_new 2 C^2 V, and
//   S += k^T v_new 2 C K V; i.e. per token and head 2 C (3 K + 2 V) + 6 K V forward (the triangular
//   solve, the L2 norms, the gates and every other elementwise step are not counted; a document's last
//   partial chunk counts as full). Forward + backward is 3x that (the backward's products are about
//   twice the forward's, the GEMM convention moe_experts uses too). Bytes: the forward reads q, k, v,
//   g, beta and cu_seqlens and writes o; the backward reads them again with do and writes dq, dk, dv,
//   dg (g's dtype) and dbeta.
#include "ops/core/cpu_math.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/registry.h"

static const parity_op_slot slots[] = {
    PARITY_OP_SLOT(gated_delta_rule, "query", PARITY_SLOT_INPUT, query, dquery),
    PARITY_OP_SLOT(gated_delta_rule, "key", PARITY_SLOT_INPUT, key, dkey),
    PARITY_OP_SLOT(gated_delta_rule, "value", PARITY_SLOT_INPUT, value, dvalue),
    PARITY_OP_SLOT(gated_delta_rule, "g", PARITY_SLOT_INPUT, g, dg),
    PARITY_OP_SLOT(gated_delta_rule, "beta", PARITY_SLOT_INPUT, beta, dbeta),
    PARITY_OP_SLOT_WITHOUT_GRADIENT(gated_delta_rule, "cu_seqlens", PARITY_SLOT_DATA, cu_seqlens, .optional = true),
    PARITY_OP_SLOT(gated_delta_rule, "output", PARITY_SLOT_OUTPUT, output, doutput),
};

// sizes: B, T, H, K, V
static double bytes(const int64_t *sizes, parity_dtype dtype, bool with_backward) {
    double rows = (double)(sizes[0] * sizes[1]) * (double)sizes[2], k = (double)sizes[3], v = (double)sizes[4];
    double size = (double)parity_dtype_size(dtype), g_size = (double)parity_dtype_size(parity_compute_dtype(dtype));
    double inputs = rows * (2 * k + v + 1) * size + rows * g_size + (double)(sizes[0] + 1) * 8; // q k v beta, g, cu
    double forward = inputs + rows * v * size;                                                   // + o
    double backward = inputs + rows * v * size + rows * (2 * k + v + 1) * size + rows * g_size;  // + do; dq dk dv dbeta, dg
    return with_backward ? forward + backward : forward;
}

static double flops(const int64_t *sizes, bool with_backward) {
    double rows = (double)(sizes[0] * sizes[1]) * (double)sizes[2], k = (double)sizes[3], v = (double)sizes[4];
    double chunk = PARITY_GATED_DELTA_RULE_DEFAULT_CHUNK;
    double forward = rows * (2 * chunk * (3 * k + 2 * v) + 6 * k * v);
    return with_backward ? 3 * forward : forward;
}

static double gradient_bytes(const int64_t *sizes, parity_dtype dtype) {
    double rows = (double)(sizes[0] * sizes[1]) * (double)sizes[2], k = (double)sizes[3], v = (double)sizes[4];
    return rows * (2 * k + v + 1) * (double)parity_dtype_size(dtype) +
           rows * (double)parity_dtype_size(parity_compute_dtype(dtype));
}

static const parity_op_work_model work = {"BATCHxTOKENSxHEADSxKEY_DIMxVALUE_DIM", 5, true, bytes, flops, gradient_bytes};

PARITY_OP_DESCRIPTOR(gated_delta_rule, PARITY_OP_GATED_DELTA_RULE, PARITY_OP_ARGS_ATTRIBUTES(gated_delta_rule),
                     .work = &work)

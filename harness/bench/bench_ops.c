// bench_ops.c: the ops `parity bench op` times (see bench_ops.h). Inputs are random (never zeros:
// zeros can run faster than real data), drawn on the device from named Philox streams; each op's
// setup hands them to the descriptor's slots, and the descriptor makes every call (after its prepare
// for the backend being timed: attention's block mask for a backend that runs on one).
#include "harness/bench/bench_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attention/attention.h"
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/core/rng.h"
#include "ops/core/cpu_math.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
#include "ops/rotary/rotary.h"
#include "ops/swiglu/swiglu.h"

// ---- helpers ----

enum { BENCH_MAX_TENSORS = 13 }; // gated_delta_rule has 13: 5 inputs, cu_seqlens, the output and their gradients

struct parity_bench_inputs {
    const parity_op_descriptor *op;
    parity_dtype dtype; // of the activations (some tensors are in its compute dtype, or int)
    parity_tensor storage[BENCH_MAX_TENSORS]; // the device tensors, released by parity_bench_teardown
    int count;
    parity_tensor *tensors[PARITY_OP_MAX_SLOTS];   // by slot
    parity_tensor *gradients[PARITY_OP_MAX_SLOTS]; // by slot: buffers of inputs' gradients, outputs' incoming ones
    _Alignas(max_align_t) unsigned char attributes[256];
    void *prepared; // the descriptor's prepare for the backend being timed (attention: its block mask)
};

// A new device tensor in `in`: filled from the stream `name` (normal(a, b) or uniform(a, b)), or left
// uninitialized (an output) when name is NULL.
static parity_error *bench_tensor(parity_bench_inputs *in, parity_tensor **out, parity_dtype dtype, parity_device device,
                                  int ndim, const int64_t *shape, const char *name, parity_rng_distribution distribution,
                                  double a, double b) {
    *out = NULL;
    PARITY_CHECK(in->count < BENCH_MAX_TENSORS, PARITY_ERROR_INTERNAL, "bench %s: more than %d tensors", in->op->name,
                 BENCH_MAX_TENSORS);
    parity_tensor *tensor = &in->storage[in->count];
    PARITY_TRY(parity_tensor_alloc(tensor, dtype, device, ndim, shape));
    in->count++;
    // Drawn before any timing, on the legacy default stream (no execution context, ops/core/exec.h).
    if (name) PARITY_TRY(parity_rng_fill(NULL, tensor, parity_rng_stream_named(2024, name), distribution, a, b));
    *out = tensor;
    return NULL;
}

// A device tensor of `dtype` with host-made contents of `host_dtype` (rounded once on the way).
static parity_error *bench_upload_as(parity_bench_inputs *in, parity_tensor **out, parity_dtype host_dtype,
                                     parity_dtype dtype, parity_device device, int ndim, const int64_t *shape,
                                     const void *host_data) {
    *out = NULL;
    PARITY_CHECK(in->count < BENCH_MAX_TENSORS, PARITY_ERROR_INTERNAL, "bench %s: more than %d tensors", in->op->name,
                 BENCH_MAX_TENSORS);
    parity_tensor host = parity_tensor_wrap((void *)host_data, host_dtype, PARITY_CPU, ndim, shape);
    parity_tensor *tensor = &in->storage[in->count];
    PARITY_TRY(parity_tensor_to(tensor, &host, device, dtype));
    in->count++;
    *out = tensor;
    return NULL;
}

// A device tensor with host-made contents of its own dtype.
static parity_error *bench_upload(parity_bench_inputs *in, parity_tensor **out, parity_dtype dtype, parity_device device,
                                  int ndim, const int64_t *shape, const void *host_data) {
    return bench_upload_as(in, out, dtype, dtype, device, ndim, shape, host_data);
}

// The tensor of the op's slot `name` and its gradient (NULL for data).
static parity_error *bench_slot(parity_bench_inputs *in, const char *name, parity_tensor *tensor, parity_tensor *gradient) {
    int slot = parity_op_slot_index(in->op, name);
    if (slot < 0) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "bench %s: the op has no slot %s", in->op->name, name);
    in->tensors[slot] = tensor;
    in->gradients[slot] = gradient;
    return NULL;
}

static parity_error *bench_attributes(parity_bench_inputs *in, const void *attributes) {
    PARITY_CHECK(in->op->attributes_size <= sizeof in->attributes, PARITY_ERROR_INTERNAL,
                 "bench %s: attributes of %zu bytes", in->op->name, in->op->attributes_size);
    memcpy(in->attributes, attributes, in->op->attributes_size);
    return NULL;
}

static parity_dtype loss_dtype(parity_dtype dtype) { return dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32; }

// ---- rms_norm: ROWSxHIDDEN ----

static parity_error *rms_norm_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                    parity_bench_inputs *in) {
    int64_t rows = shape->dims[0], hidden = shape->dims[1];
    parity_tensor *x, *w, *y, *dy, *dx, *dw;
    PARITY_TRY(bench_tensor(in, &x, dtype, device, 2, (int64_t[]){rows, hidden}, "rms_norm x", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &w, dtype, device, 1, (int64_t[]){hidden}, "rms_norm w", PARITY_RNG_UNIFORM, 0.5, 1.5));
    PARITY_TRY(bench_tensor(in, &y, dtype, device, 2, (int64_t[]){rows, hidden}, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dy, dtype, device, 2, (int64_t[]){rows, hidden}, "rms_norm dy", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dx, dtype, device, 2, (int64_t[]){rows, hidden}, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dw, dtype, device, 1, (int64_t[]){hidden}, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "x", x, dx));
    PARITY_TRY(bench_slot(in, "weight", w, dw));
    PARITY_TRY(bench_slot(in, "y", y, dy));
    return bench_attributes(in, &(parity_rms_norm_args){.eps = 1e-6, .variant = PARITY_RMS_NORM_STANDARD});
}

// ---- swiglu: ROWSxINTERMEDIATE ----

static parity_error *swiglu_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                  parity_bench_inputs *in) {
    int64_t dims[2] = {shape->dims[0], shape->dims[1]};
    parity_tensor *gate, *up, *y, *dy, *dgate, *dup;
    PARITY_TRY(bench_tensor(in, &gate, dtype, device, 2, dims, "swiglu gate", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &up, dtype, device, 2, dims, "swiglu up", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &y, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dy, dtype, device, 2, dims, "swiglu dy", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dgate, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dup, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "gate", gate, dgate));
    PARITY_TRY(bench_slot(in, "up", up, dup));
    return bench_slot(in, "y", y, dy);
}

// ---- rotary: TOKENSxQUERY_HEADSxKEY_HEADSxHEAD_DIM ----

enum { ROTARY_SEQUENCE = 4096 }; // positions restart every 4096 tokens (batches of 4096-token sequences)

static parity_error *rotary_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                  parity_bench_inputs *in) {
    int64_t tokens = shape->dims[0], hq = shape->dims[1], hk = shape->dims[2], d = shape->dims[3];
    int64_t *positions = malloc((size_t)tokens * sizeof *positions);
    if (!positions) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench rotary: positions");
    for (int64_t n = 0; n < tokens; n++) positions[n] = n % ROTARY_SEQUENCE;
    parity_tensor *q, *k, *pos, *q_out, *k_out, *dq_out, *dk_out, *dq, *dk;
    parity_error *error = bench_upload(in, &pos, PARITY_I64, device, 1, (int64_t[]){tokens}, positions);
    free(positions);
    PARITY_TRY(error);
    int64_t q_shape[3] = {tokens, hq, d}, k_shape[3] = {tokens, hk, d};
    PARITY_TRY(bench_tensor(in, &q, dtype, device, 3, q_shape, "rotary q", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &k, dtype, device, 3, k_shape, "rotary k", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &q_out, dtype, device, 3, q_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &k_out, dtype, device, 3, k_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dq_out, dtype, device, 3, q_shape, "rotary dq_out", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dk_out, dtype, device, 3, k_shape, "rotary dk_out", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dq, dtype, device, 3, q_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dk, dtype, device, 3, k_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "query", q, dq));
    PARITY_TRY(bench_slot(in, "key", k, dk));
    PARITY_TRY(bench_slot(in, "positions", pos, NULL));
    PARITY_TRY(bench_slot(in, "query_out", q_out, dq_out));
    PARITY_TRY(bench_slot(in, "key_out", k_out, dk_out));
    return bench_attributes(in, &(parity_rope_description){.type = PARITY_ROPE_DEFAULT, .theta = 500000});
}

// ---- cross_entropy: TOKENSxHIDDENxVOCAB (linear + cross-entropy, fwd+bwd) ----

static parity_error *cross_entropy_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                         parity_bench_inputs *in) {
    int64_t tokens = shape->dims[0], hidden = shape->dims[1], vocab = shape->dims[2];
    int64_t *targets = malloc((size_t)tokens * sizeof *targets);
    if (!targets) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench cross_entropy: targets");
    uint32_t word[1];
    for (int64_t n = 0; n < tokens; n++) {
        parity_rng_words(parity_rng_stream_named(2024, "cross_entropy targets"), (uint64_t)n, word, 1);
        targets[n] = (int64_t)(word[0] % (uint32_t)vocab);
    }
    parity_tensor *h, *w, *t, *loss, *dloss, *dh, *dw;
    parity_error *error = bench_upload(in, &t, PARITY_I64, device, 1, (int64_t[]){tokens}, targets);
    free(targets);
    PARITY_TRY(error);
    const double one_f64 = 1.0;
    const float one_f32 = 1.0f;
    parity_dtype ldtype = loss_dtype(dtype);
    PARITY_TRY(bench_tensor(in, &h, dtype, device, 2, (int64_t[]){tokens, hidden}, "cross_entropy hidden",
                            PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &w, dtype, device, 2, (int64_t[]){vocab, hidden}, "cross_entropy weight",
                            PARITY_RNG_NORMAL, 0, 0.02));
    PARITY_TRY(bench_tensor(in, &loss, ldtype, device, 0, NULL, NULL, 0, 0, 0));
    PARITY_TRY(bench_upload(in, &dloss, ldtype, device, 0, NULL, ldtype == PARITY_F64 ? (const void *)&one_f64
                                                                                     : (const void *)&one_f32));
    PARITY_TRY(bench_tensor(in, &dh, dtype, device, 2, (int64_t[]){tokens, hidden}, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dw, dtype, device, 2, (int64_t[]){vocab, hidden}, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "hidden", h, dh));
    PARITY_TRY(bench_slot(in, "weight", w, dw));
    PARITY_TRY(bench_slot(in, "targets", t, NULL));
    PARITY_TRY(bench_slot(in, "loss", loss, dloss));
    return bench_attributes(in, &(parity_cross_entropy_args){.ignore_index = PARITY_CROSS_ENTROPY_IGNORE_INDEX});
}

// ---- rms_norm_gated: ROWSxDIM ----

static parity_error *rms_norm_gated_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                          parity_bench_inputs *in) {
    int64_t dims[2] = {shape->dims[0], shape->dims[1]};
    parity_tensor *x, *gate, *w, *y, *dy, *dx, *dgate, *dw;
    PARITY_TRY(bench_tensor(in, &x, dtype, device, 2, dims, "rms_norm_gated x", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &gate, dtype, device, 2, dims, "rms_norm_gated gate", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &w, dtype, device, 1, (int64_t[]){dims[1]}, "rms_norm_gated w", PARITY_RNG_UNIFORM, 0.5,
                            1.5));
    PARITY_TRY(bench_tensor(in, &y, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dy, dtype, device, 2, dims, "rms_norm_gated dy", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dx, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dgate, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dw, dtype, device, 1, (int64_t[]){dims[1]}, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "x", x, dx));
    PARITY_TRY(bench_slot(in, "gate", gate, dgate));
    PARITY_TRY(bench_slot(in, "weight", w, dw));
    PARITY_TRY(bench_slot(in, "y", y, dy));
    return bench_attributes(in, &(parity_rms_norm_gated_args){.eps = 1e-6});
}

// ---- gated_delta_rule: BATCHxTOKENSxHEADSxKEY_DIMxVALUE_DIM ----

// B documents of T tokens packed into one row of N = B T tokens (cu_seqlens 0, T, ..., B T), Hk = Hv = H,
// q and k L2-normalised in the op (use_qk_l2norm, as Qwen3.5 calls it), scale K^-0.5. q, k, v ~ N(0, 1);
// g, the log decay, in the compute dtype (f32 for bf16: Qwen3.5's gdn_gating gives an f32 g) uniform in
// [-0.1, 0): a decay exp(g) in (0.90, 1] a token, slow enough that a state spans many chunks, as after
// training (at initialisation -exp(A_log) softplus(a + dt_bias) is larger; the kernels' work does not
// depend on it); beta, the write strength (sigmoid(b) in the model), uniform in [0.1, 0.9].
static parity_error *gated_delta_rule_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                            parity_bench_inputs *in) {
    int64_t batch = shape->dims[0], tokens = shape->dims[1], heads = shape->dims[2];
    int64_t key_dim = shape->dims[3], value_dim = shape->dims[4], n = batch * tokens;
    int64_t *offsets = malloc((size_t)(batch + 1) * sizeof *offsets);
    if (!offsets) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench gated_delta_rule: cu_seqlens");
    for (int64_t b = 0; b <= batch; b++) offsets[b] = b * tokens;
    parity_tensor *cu, *q, *k, *v, *g, *beta, *o, *dout, *dq, *dk, *dv, *dg, *dbeta;
    parity_error *error = bench_upload(in, &cu, PARITY_I64, device, 1, (int64_t[]){batch + 1}, offsets);
    free(offsets);
    PARITY_TRY(error);
    int64_t k_shape[3] = {n, heads, key_dim}, v_shape[3] = {n, heads, value_dim}, gate_shape[2] = {n, heads};
    parity_dtype g_dtype = parity_compute_dtype(dtype);
    PARITY_TRY(bench_tensor(in, &q, dtype, device, 3, k_shape, "gated_delta_rule q", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &k, dtype, device, 3, k_shape, "gated_delta_rule k", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &v, dtype, device, 3, v_shape, "gated_delta_rule v", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &g, g_dtype, device, 2, gate_shape, "gated_delta_rule g", PARITY_RNG_UNIFORM, -0.1, 0));
    PARITY_TRY(bench_tensor(in, &beta, dtype, device, 2, gate_shape, "gated_delta_rule beta", PARITY_RNG_UNIFORM, 0.1,
                            0.9));
    PARITY_TRY(bench_tensor(in, &o, dtype, device, 3, v_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dout, dtype, device, 3, v_shape, "gated_delta_rule do", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dq, dtype, device, 3, k_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dk, dtype, device, 3, k_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dv, dtype, device, 3, v_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dg, g_dtype, device, 2, gate_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dbeta, dtype, device, 2, gate_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "query", q, dq));
    PARITY_TRY(bench_slot(in, "key", k, dk));
    PARITY_TRY(bench_slot(in, "value", v, dv));
    PARITY_TRY(bench_slot(in, "g", g, dg));
    PARITY_TRY(bench_slot(in, "beta", beta, dbeta));
    PARITY_TRY(bench_slot(in, "cu_seqlens", cu, NULL));
    PARITY_TRY(bench_slot(in, "output", o, dout));
    return bench_attributes(in, &(parity_gated_delta_rule_args){
                                    .scale = 1.0 / sqrt((double)key_dim), .use_qk_l2norm = true, .chunk_size = 0});
}

// ---- causal_conv1d: TOKENSxCHANNELSxKERNEL (one document, SiLU) ----

// x ~ N(0, 1) (Qwen3.5 feeds the conv the in-projection's output), weight uniform in [-0.5, 0.5] (of
// the order of PyTorch's Conv1d init for K = 4: bound 1 / sqrt(K)), dy ~ N(0, 1); no cu_seqlens.
static parity_error *causal_conv1d_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                         parity_bench_inputs *in) {
    int64_t dims[2] = {shape->dims[0], shape->dims[1]}, weight_dims[2] = {shape->dims[1], shape->dims[2]};
    parity_tensor *x, *w, *y, *dy, *dx, *dw;
    PARITY_TRY(bench_tensor(in, &x, dtype, device, 2, dims, "causal_conv1d x", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &w, dtype, device, 2, weight_dims, "causal_conv1d w", PARITY_RNG_UNIFORM, -0.5, 0.5));
    PARITY_TRY(bench_tensor(in, &y, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dy, dtype, device, 2, dims, "causal_conv1d dy", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dx, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dw, dtype, device, 2, weight_dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "x", x, dx));
    PARITY_TRY(bench_slot(in, "weight", w, dw));
    PARITY_TRY(bench_slot(in, "y", y, dy));
    return bench_attributes(in, &(parity_causal_conv1d_args){.activation = PARITY_CAUSAL_CONV1D_SILU});
}

// ---- load_balancing_loss: ROWSxEXPERTSxTOP_K ----

static parity_error *load_balancing_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                          parity_bench_inputs *in) {
    int64_t dims[2] = {shape->dims[0], shape->dims[1]};
    parity_dtype ldtype = loss_dtype(dtype);
    const double one_f64 = 1.0;
    const float one_f32 = 1.0f;
    parity_tensor *logits, *loss, *dloss, *dlogits;
    PARITY_TRY(bench_tensor(in, &logits, dtype, device, 2, dims, "load_balancing logits", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &loss, ldtype, device, 0, NULL, NULL, 0, 0, 0));
    PARITY_TRY(bench_upload(in, &dloss, ldtype, device, 0, NULL, ldtype == PARITY_F64 ? (const void *)&one_f64
                                                                                     : (const void *)&one_f32));
    PARITY_TRY(bench_tensor(in, &dlogits, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "router_logits", logits, dlogits));
    PARITY_TRY(bench_slot(in, "loss", loss, dloss));
    return bench_attributes(in, &(parity_load_balancing_loss_args){.num_layers = 1, .top_k = shape->dims[2]});
}

// ---- attention: BATCHxQUERY_HEADSxKV_HEADSxTOKENSxHEAD_DIMxDOCUMENTS (causal, packed rows) ----

static parity_error *attention_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                     parity_bench_inputs *in) {
    int64_t batch = shape->dims[0], hq = shape->dims[1], hk = shape->dims[2], tokens = shape->dims[3];
    int64_t d = shape->dims[4], documents = shape->dims[5], n = batch * tokens;
    // cu_seqlens: each of the B rows packed the same way (ops/attention/attention.h)
    int64_t *offsets = malloc((size_t)(batch * documents + 1) * sizeof *offsets);
    if (!offsets) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench attention: cu_seqlens");
    offsets[0] = 0;
    for (int64_t b = 0, at = 1; b < batch; b++)
        for (int64_t s = 0; s < documents; s++, at++)
            offsets[at] = offsets[at - 1] + parity_attention_work_document_length(tokens, documents, s);
    parity_tensor *cu, *q, *k, *v, *o, *dout, *dq, *dk, *dv;
    parity_error *error = bench_upload(in, &cu, PARITY_I64, device, 1, (int64_t[]){batch * documents + 1}, offsets);
    free(offsets);
    PARITY_TRY(error);
    int64_t q_shape[3] = {n, hq, d}, k_shape[3] = {n, hk, d};
    PARITY_TRY(bench_tensor(in, &q, dtype, device, 3, q_shape, "attention q", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &k, dtype, device, 3, k_shape, "attention k", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &v, dtype, device, 3, k_shape, "attention v", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &o, dtype, device, 3, q_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dout, dtype, device, 3, q_shape, "attention do", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dq, dtype, device, 3, q_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dk, dtype, device, 3, k_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dv, dtype, device, 3, k_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "query", q, dq));
    PARITY_TRY(bench_slot(in, "key", k, dk));
    PARITY_TRY(bench_slot(in, "value", v, dv));
    PARITY_TRY(bench_slot(in, "cu_seqlens", cu, NULL));
    PARITY_TRY(bench_slot(in, "output", o, dout));
    return bench_attributes(in, &(parity_attention_args){.scale = 1.0 / sqrt((double)d), .causal = true});
}

// ---- moe_experts: TOKENSxHIDDENxEXPERTSxINTERMEDIATExTOP_K (the routed experts, fused layouts) ----

// Routing as a trained router's top-k gives it, without a router: each token's K experts are distinct
// and uniform at random (a partial Fisher-Yates over the E experts, from the stream's words
// [2 K t, 2 K t + K)), so every expert gets about N K / E rows; its weights are a softmax over K logits
// uniform in [-2, 2) (words [2 K t + K, 2 K (t + 1))), HF's top-k weights renormalised (norm_topk_prob).
// Deterministic: the same (seed, name) stream on every run and device.
static void moe_routing(int64_t tokens, int64_t experts, int64_t top_k, int64_t *indices, double *weights,
                        int64_t *pool, uint32_t *words) {
    parity_rng_stream stream = parity_rng_stream_named(2024, "moe_experts routing");
    for (int64_t t = 0; t < tokens; t++) {
        parity_rng_words(stream, (uint64_t)(2 * top_k * t), words, 2 * top_k);
        for (int64_t e = 0; e < experts; e++) pool[e] = e;
        for (int64_t k = 0; k < top_k; k++) { // pick pool[k + j], j uniform in [0, E - k)
            int64_t j = k + (int64_t)(words[k] % (uint32_t)(experts - k));
            int64_t chosen = pool[j];
            pool[j] = pool[k];
            pool[k] = chosen;
            indices[t * top_k + k] = chosen;
        }
        double largest = -INFINITY, sum = 0;
        for (int64_t k = 0; k < top_k; k++) {
            weights[t * top_k + k] = 4.0 * (double)words[top_k + k] / 4294967296.0 - 2.0;
            if (weights[t * top_k + k] > largest) largest = weights[t * top_k + k];
        }
        for (int64_t k = 0; k < top_k; k++) sum += weights[t * top_k + k] = exp(weights[t * top_k + k] - largest);
        for (int64_t k = 0; k < top_k; k++) weights[t * top_k + k] /= sum;
    }
}

// hidden ~ N(0, 1), both weights ~ N(0, 0.02) (the toys' initializer_range): gate/up pre-activations
// about N(0, 0.8) at H 2048, so silu is neither saturated nor linear.
static parity_error *moe_experts_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                       parity_bench_inputs *in) {
    int64_t tokens = shape->dims[0], hidden = shape->dims[1], experts = shape->dims[2], inter = shape->dims[3];
    int64_t top_k = shape->dims[4];
    int64_t *indices = malloc((size_t)(tokens * top_k) * sizeof *indices);
    double *weights = malloc((size_t)(tokens * top_k) * sizeof *weights);
    int64_t *pool = malloc((size_t)experts * sizeof *pool);
    uint32_t *words = malloc((size_t)(2 * top_k) * sizeof *words);
    parity_error *error = indices && weights && pool && words
                              ? NULL
                              : PARITY_ERROR(PARITY_ERROR_MEMORY, "bench moe_experts: routing of %lld tokens", (long long)tokens);
    parity_tensor *idx = NULL, *w = NULL;
    int64_t routed[2] = {tokens, top_k};
    if (!error) {
        moe_routing(tokens, experts, top_k, indices, weights, pool, words);
        error = bench_upload(in, &idx, PARITY_I64, device, 2, routed, indices);
    }
    if (!error) error = bench_upload_as(in, &w, PARITY_F64, dtype, device, 2, routed, weights);
    free(indices);
    free(weights);
    free(pool);
    free(words);
    PARITY_TRY(error);
    int64_t x_shape[2] = {tokens, hidden}, gate_up_shape[3] = {experts, 2 * inter, hidden};
    int64_t down_shape[3] = {experts, hidden, inter};
    parity_tensor *x, *gate_up, *down, *y, *dy, *dx, *dgate_up, *ddown, *dw;
    PARITY_TRY(bench_tensor(in, &x, dtype, device, 2, x_shape, "moe_experts hidden", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &gate_up, dtype, device, 3, gate_up_shape, "moe_experts gate_up_proj", PARITY_RNG_NORMAL,
                            0, 0.02));
    PARITY_TRY(bench_tensor(in, &down, dtype, device, 3, down_shape, "moe_experts down_proj", PARITY_RNG_NORMAL, 0, 0.02));
    PARITY_TRY(bench_tensor(in, &y, dtype, device, 2, x_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dy, dtype, device, 2, x_shape, "moe_experts doutput", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(in, &dx, dtype, device, 2, x_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dgate_up, dtype, device, 3, gate_up_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &ddown, dtype, device, 3, down_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(in, &dw, dtype, device, 2, routed, NULL, 0, 0, 0));
    PARITY_TRY(bench_slot(in, "hidden", x, dx));
    PARITY_TRY(bench_slot(in, "gate_up_proj", gate_up, dgate_up));
    PARITY_TRY(bench_slot(in, "down_proj", down, ddown));
    PARITY_TRY(bench_slot(in, "expert_indices", idx, NULL));
    PARITY_TRY(bench_slot(in, "routing_weights", w, dw));
    return bench_slot(in, "output", y, dy);
}

// The gate_up grouped GEMM alone (moe_experts.h's part kernels): R = N K sorted rows of x times each
// expert's gate_up_proj^T, 4 R H I flops (torch's "grouped_mm gate_up GEMM" peer counts the same);
// at least x's rows read once, the weights once, gate_up (R, 2I) and h (R, I) written.
static double moe_gate_up_flops(const int64_t *sizes) {
    return 4.0 * (double)(sizes[0] * sizes[4]) * (double)sizes[1] * (double)sizes[3];
}

static double moe_gate_up_bytes(const int64_t *sizes, parity_dtype dtype) {
    double rows = (double)(sizes[0] * sizes[4]), H = (double)sizes[1], E = (double)sizes[2], I = (double)sizes[3];
    return (double)parity_dtype_size(dtype) * (rows * H + E * 2 * I * H + rows * 3 * I);
}

static parity_error *moe_gate_up_prepare(const parity_exec *exec, const void *kernels, parity_bench_inputs *inputs,
                                         void **state) {
    *state = NULL;
    const parity_moe_experts_part_kernels *part = ((const parity_moe_experts_kernels *)kernels)->gate_up_part;
    if (!part) return NULL;
    parity_moe_experts_args args;
    parity_op_build_args(inputs->op, inputs->attributes, inputs->tensors, false, &args);
    return part->prepare(exec, &args, (parity_moe_experts_part **)state);
}

static parity_error *moe_gate_up_run(const parity_exec *exec, const void *kernels, void *state) {
    return ((const parity_moe_experts_kernels *)kernels)->gate_up_part->run(exec, state);
}

static void moe_gate_up_release(const void *kernels, void *state) {
    if (state) ((const parity_moe_experts_kernels *)kernels)->gate_up_part->release(state);
}

static const parity_bench_part moe_gate_up_part = {"gate_up GEMM",      moe_gate_up_flops, moe_gate_up_bytes,
                                                   moe_gate_up_prepare, moe_gate_up_run,   moe_gate_up_release};

// ---- the table ----

static const char *const rms_norm_shapes[] = {"16384x4096", NULL};
static const char *const swiglu_shapes[] = {"16384x8192", NULL};
static const char *const rotary_shapes[] = {"16384x32x8x128", NULL}; // q [4, 32, 4096, 128], GQA k with 8 heads
static const char *const cross_entropy_shapes[] = {"8192x4096x151936", "16384x2048x32000", NULL};
static const char *const rms_norm_gated_shapes[] = {"262144x128", NULL}; // Qwen3.5: 8192 tokens x 32 value heads
static const char *const load_balancing_shapes[] = {"65536x128x8", NULL}; // 4 layers x 16384 tokens, 128 experts, top-8
// Issue 15: 8192 tokens, 8192 channels (of the order of Qwen3.5's 2 key_dim + value_dim), K = 4
static const char *const causal_conv1d_shapes[] = {"8192x8192x4", NULL};
// Issue 15: one 8192-token document with 16 heads, and 4 documents of 4096 tokens with 32 heads (K = V = 128)
static const char *const gated_delta_rule_shapes[] = {"1x8192x16x128x128", "4x4096x32x128x128", NULL};

// Issue 13's shapes: (B, H, T, D) = (4, 16, 4096, 128), (8, 16, 2048, 64), GQA 32/8 (B 2, T 4096), a
// packed row of 8 documents (16384 tokens), then (1, 16, 16384, 128) last: eager's T x T scores are
// largest there, so an out-of-memory row cannot take the others with it.
static const char *const attention_shapes[] = {"4x16x16x4096x128x1", "8x16x16x2048x64x1", "2x32x8x4096x128x1",
                                               "1x16x16x16384x128x8", "1x16x16x16384x128x1", NULL};

// Issue 14's shapes: E64 top-8 on 16384 tokens (H 2048, I 768: Qwen3-30B-A3B's experts), then the
// gpu-nightly toys' MoE layers on their batch of 2048 tokens (suites/gpu-nightly.yaml): qwen3_moe_toy
// (E16 top-2, I 768) and deepseek_v3_toy's routed experts (E8 top-2, I 1024: its config's
// moe_intermediate_size; the shared expert is a dense MLP, not this op).
static const char *const moe_experts_shapes[] = {"16384x2048x64x768x8", "2048x2048x16x768x2", "2048x2048x8x1024x2", NULL};

static const parity_bench_op bench_ops[] = {
    {&parity_rms_norm_op, rms_norm_shapes, true, rms_norm_setup, NULL},
    {&parity_swiglu_op, swiglu_shapes, true, swiglu_setup, NULL},
    {&parity_rotary_op, rotary_shapes, true, rotary_setup, NULL},
    {&parity_cross_entropy_op, cross_entropy_shapes, false, cross_entropy_setup, NULL},
    {&parity_rms_norm_gated_op, rms_norm_gated_shapes, true, rms_norm_gated_setup, NULL},
    {&parity_causal_conv1d_op, causal_conv1d_shapes, true, causal_conv1d_setup, NULL},
    {&parity_load_balancing_loss_op, load_balancing_shapes, true, load_balancing_setup, NULL},
    {&parity_attention_op, attention_shapes, true, attention_setup, NULL},
    {&parity_moe_experts_op, moe_experts_shapes, true, moe_experts_setup, &moe_gate_up_part},
    {&parity_gated_delta_rule_op, gated_delta_rule_shapes, true, gated_delta_rule_setup, NULL},
};

parity_error *parity_bench_setup(const parity_bench_op *op, const parity_bench_shape *shape, parity_dtype dtype,
                                 parity_device device, parity_bench_inputs **out) {
    parity_bench_inputs *in = calloc(1, sizeof *in);
    *out = in;
    if (!in) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench %s: inputs", op->descriptor->name);
    in->op = op->descriptor;
    in->dtype = dtype;
    return op->setup(shape, dtype, device, in);
}

const parity_tensor *parity_bench_inputs_tensor(const parity_bench_inputs *inputs, int slot, bool *has_gradient) {
    *has_gradient = slot >= 0 && slot < PARITY_OP_MAX_SLOTS && inputs->gradients[slot] != NULL;
    return slot >= 0 && slot < PARITY_OP_MAX_SLOTS ? inputs->tensors[slot] : NULL;
}

const void *parity_bench_inputs_attributes(const parity_bench_inputs *inputs) { return inputs->attributes; }

parity_dtype parity_bench_inputs_dtype(const parity_bench_inputs *inputs) { return inputs->dtype; }

parity_error *parity_bench_forward(const parity_exec *exec, const parity_bench_op *op, parity_bench_inputs *inputs,
                                   const void *kernels,
                                   parity_saved *saved) {
    return op->descriptor->forward(exec, kernels, inputs->attributes, inputs->tensors, saved);
}

parity_error *parity_bench_backward(const parity_exec *exec, const parity_bench_op *op, parity_bench_inputs *inputs,
                                    const void *kernels,
                                    const parity_saved *saved) {
    return op->descriptor->backward(exec, kernels, inputs->attributes, inputs->tensors, inputs->gradients, saved);
}

parity_error *parity_bench_prepare(const parity_bench_op *op, parity_bench_inputs *inputs, const parity_backend *backend) {
    parity_op_release_prepared(op->descriptor, inputs->prepared);
    return parity_op_prepare(op->descriptor, backend, inputs->attributes, inputs->tensors, &inputs->prepared);
}

void parity_bench_teardown(parity_bench_inputs *inputs) {
    if (!inputs) return;
    parity_op_release_prepared(inputs->op, inputs->prepared);
    for (int i = 0; i < inputs->count; i++) parity_tensor_release(&inputs->storage[i]);
    free(inputs);
}

size_t parity_bench_op_count(void) { return sizeof bench_ops / sizeof bench_ops[0]; }

const parity_bench_op *parity_bench_op_at(size_t index) {
    return index < parity_bench_op_count() ? &bench_ops[index] : NULL;
}

const parity_bench_op *parity_bench_find_op(const char *name) {
    for (size_t i = 0; i < parity_bench_op_count(); i++)
        if (strcmp(bench_ops[i].descriptor->name, name) == 0) return &bench_ops[i];
    return NULL;
}

parity_error *parity_bench_parse_shape(const parity_bench_op *op, const char *text, parity_bench_shape *shape) {
    memset(shape, 0, sizeof *shape);
    const char *name = op->descriptor->name, *format = op->descriptor->work->size_format;
    const char *cursor = text;
    while (*cursor) {
        char *end;
        long long value = strtoll(cursor, &end, 10);
        if (end == cursor || value <= 0 || shape->count >= PARITY_BENCH_MAX_DIMS || (*end && *end != 'x'))
            return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: shape '%s' is not %s (positive sizes joined by 'x')", name,
                                text, format);
        shape->dims[shape->count++] = value;
        cursor = *end ? end + 1 : end;
        if (*end && !*cursor)
            return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: shape '%s' ends with 'x'", name, text);
    }
    if (shape->count != op->descriptor->work->size_count)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: shape '%s' has %d sizes, expected %d (%s)", name, text,
                            shape->count, op->descriptor->work->size_count, format);
    // At most 2^53 elements (exact in a double), so that the work models' int64 products of sizes
    // (ops/<op>/descriptor.c) cannot overflow.
    int64_t elements = 1;
    for (int i = 0; i < shape->count; i++)
        if (__builtin_mul_overflow(elements, shape->dims[i], &elements) || elements > (int64_t)1 << 53)
            return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: shape '%s' has more than 2^53 elements", name, text);
    if (op->descriptor == &parity_load_balancing_loss_op && shape->dims[2] > shape->dims[1])
        return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: top-k %lld exceeds the %lld experts", name,
                            (long long)shape->dims[2], (long long)shape->dims[1]);
    if (op->descriptor == &parity_moe_experts_op && shape->dims[4] > shape->dims[2])
        return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: top-k %lld exceeds the %lld experts", name,
                            (long long)shape->dims[4], (long long)shape->dims[2]);
    if (op->descriptor == &parity_attention_op) {
        const int64_t *dims = shape->dims; // B, Hq, Hk, T, D, S
        if (dims[1] % dims[2] != 0)
            return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: %lld query heads are not a multiple of %lld kv heads",
                                name, (long long)dims[1], (long long)dims[2]);
        if (dims[5] > 65536 || dims[3] < dims[5] * (dims[5] + 1) / 2)
            return PARITY_ERROR(PARITY_ERROR_USAGE,
                                "bench %s: %lld documents need at least %lld tokens a row (lengths grow as 1, 2, ..., S)",
                                name, (long long)dims[5], (long long)(dims[5] * (dims[5] + 1) / 2));
    }
    return NULL;
}

const char *parity_bench_shape_string(const parity_bench_shape *shape, char *buffer, size_t size) {
    size_t used = 0;
    buffer[0] = '\0';
    for (int i = 0; i < shape->count && used < size; i++)
        used += (size_t)snprintf(buffer + used, size - used, "%s%lld", i ? "x" : "", (long long)shape->dims[i]);
    return buffer;
}

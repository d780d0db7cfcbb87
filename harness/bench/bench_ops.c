// bench_ops.c: the ops `parity bench op` times (see bench_ops.h). Inputs are random (never zeros:
// zeros can run faster than real data), drawn on the device from named Philox streams.
#include "harness/bench/bench_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/rng.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/registry.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/rms_norm_gated/rms_norm_gated.h"
#include "ops/rotary/rotary.h"
#include "ops/swiglu/swiglu.h"

// ---- helpers ----

typedef struct tensor_set {
    parity_tensor tensors[12];
    int count;
} tensor_set;

// A new device tensor in `set`: filled from the stream `name` (normal(a, b) or uniform(a, b)), or left
// uninitialized (an output) when name is NULL.
static parity_error *bench_tensor(tensor_set *set, parity_tensor **out, parity_dtype dtype, parity_device device,
                                  int ndim, const int64_t *shape, const char *name, parity_rng_distribution distribution,
                                  double a, double b) {
    parity_tensor *tensor = &set->tensors[set->count];
    PARITY_TRY(parity_tensor_alloc(tensor, dtype, device, ndim, shape));
    set->count++;
    // Drawn before any timing, on the legacy default stream (no execution context, ops/core/exec.h).
    if (name) PARITY_TRY(parity_rng_fill(NULL, tensor, parity_rng_stream_named(2024, name), distribution, a, b));
    *out = tensor;
    return NULL;
}

// A device tensor with host-made contents.
static parity_error *bench_upload(tensor_set *set, parity_tensor **out, parity_dtype dtype, parity_device device, int ndim,
                                  const int64_t *shape, const void *host_data) {
    parity_tensor host = parity_tensor_wrap((void *)host_data, dtype, PARITY_CPU, ndim, shape);
    parity_tensor *tensor = &set->tensors[set->count];
    PARITY_TRY(parity_tensor_to(tensor, &host, device, dtype));
    set->count++;
    *out = tensor;
    return NULL;
}

static void release_set(tensor_set *set) {
    for (int i = 0; i < set->count; i++) parity_tensor_release(&set->tensors[i]);
    set->count = 0;
}

static double size_of(parity_dtype dtype) { return (double)parity_dtype_size(dtype); }

static parity_dtype loss_dtype(parity_dtype dtype) { return dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32; }

// ---- rms_norm: ROWSxHIDDEN ----

typedef struct rms_norm_inputs {
    tensor_set set;
    parity_rms_norm_args args;
    parity_rms_norm_grads grads;
} rms_norm_inputs;

static parity_error *rms_norm_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device, void **out) {
    rms_norm_inputs *in = calloc(1, sizeof *in);
    if (!in) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench rms_norm: inputs");
    *out = in;
    int64_t rows = shape->dims[0], hidden = shape->dims[1];
    parity_tensor *x, *w, *y, *dy, *dx, *dw;
    PARITY_TRY(bench_tensor(&in->set, &x, dtype, device, 2, (int64_t[]){rows, hidden}, "rms_norm x", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &w, dtype, device, 1, (int64_t[]){hidden}, "rms_norm w", PARITY_RNG_UNIFORM, 0.5, 1.5));
    PARITY_TRY(bench_tensor(&in->set, &y, dtype, device, 2, (int64_t[]){rows, hidden}, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dy, dtype, device, 2, (int64_t[]){rows, hidden}, "rms_norm dy", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &dx, dtype, device, 2, (int64_t[]){rows, hidden}, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dw, dtype, device, 1, (int64_t[]){hidden}, NULL, 0, 0, 0));
    in->args = (parity_rms_norm_args){x, w, 1e-6, PARITY_RMS_NORM_STANDARD, y};
    in->grads = (parity_rms_norm_grads){dy, dx, dw};
    return NULL;
}

static parity_error *rms_norm_forward(const parity_exec *exec, void *raw, const void *kernels, parity_saved *saved) {
    rms_norm_inputs *in = raw;
    return ((const parity_rms_norm_kernels *)kernels)->forward(exec, &in->args, saved);
}

static parity_error *rms_norm_backward(const parity_exec *exec, void *raw, const void *kernels,
                                       const parity_saved *saved) {
    rms_norm_inputs *in = raw;
    return ((const parity_rms_norm_kernels *)kernels)->backward(exec, &in->args, saved, &in->grads);
}

static void rms_norm_teardown(void *raw) {
    rms_norm_inputs *in = raw;
    if (in) release_set(&in->set);
    free(in);
}

// forward: read x and w, write y; backward: read x, dy and w, write dx and dw
static double rms_norm_bytes(const parity_bench_shape *shape, parity_dtype dtype, bool with_backward) {
    double n = (double)shape->dims[0], h = (double)shape->dims[1];
    double forward = (2 * n * h + h) * size_of(dtype), backward = (3 * n * h + 2 * h) * size_of(dtype);
    return with_backward ? forward + backward : forward;
}

static double rms_norm_gradient_bytes(const parity_bench_shape *shape, parity_dtype dtype) {
    return (double)(shape->dims[0] * shape->dims[1] + shape->dims[1]) * size_of(dtype);
}

// ---- swiglu: ROWSxINTERMEDIATE ----

typedef struct swiglu_inputs {
    tensor_set set;
    parity_swiglu_args args;
    parity_swiglu_grads grads;
} swiglu_inputs;

static parity_error *swiglu_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device, void **out) {
    swiglu_inputs *in = calloc(1, sizeof *in);
    if (!in) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench swiglu: inputs");
    *out = in;
    int64_t dims[2] = {shape->dims[0], shape->dims[1]};
    parity_tensor *gate, *up, *y, *dy, *dgate, *dup;
    PARITY_TRY(bench_tensor(&in->set, &gate, dtype, device, 2, dims, "swiglu gate", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &up, dtype, device, 2, dims, "swiglu up", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &y, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dy, dtype, device, 2, dims, "swiglu dy", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &dgate, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dup, dtype, device, 2, dims, NULL, 0, 0, 0));
    in->args = (parity_swiglu_args){gate, up, y};
    in->grads = (parity_swiglu_grads){dy, dgate, dup};
    return NULL;
}

static parity_error *swiglu_forward(const parity_exec *exec, void *raw, const void *kernels, parity_saved *saved) {
    swiglu_inputs *in = raw;
    return ((const parity_swiglu_kernels *)kernels)->forward(exec, &in->args, saved);
}

static parity_error *swiglu_backward(const parity_exec *exec, void *raw, const void *kernels,
                                     const parity_saved *saved) {
    swiglu_inputs *in = raw;
    return ((const parity_swiglu_kernels *)kernels)->backward(exec, &in->args, saved, &in->grads);
}

static void swiglu_teardown(void *raw) {
    swiglu_inputs *in = raw;
    if (in) release_set(&in->set);
    free(in);
}

// forward: read gate and up, write y; backward: read gate, up and dy, write dgate and dup
static double swiglu_bytes(const parity_bench_shape *shape, parity_dtype dtype, bool with_backward) {
    double elements = (double)shape->dims[0] * (double)shape->dims[1];
    return (with_backward ? 8 : 3) * elements * size_of(dtype);
}

static double swiglu_gradient_bytes(const parity_bench_shape *shape, parity_dtype dtype) {
    return 2.0 * (double)(shape->dims[0] * shape->dims[1]) * size_of(dtype);
}

// ---- rotary: TOKENSxQUERY_HEADSxKEY_HEADSxHEAD_DIM ----

enum { ROTARY_SEQUENCE = 4096 }; // positions restart every 4096 tokens (batches of 4096-token sequences)

typedef struct rotary_inputs {
    tensor_set set;
    parity_rope_description rope;
    parity_rotary_args args;
    parity_rotary_grads grads;
} rotary_inputs;

static parity_error *rotary_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device, void **out) {
    rotary_inputs *in = calloc(1, sizeof *in);
    if (!in) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench rotary: inputs");
    *out = in;
    int64_t tokens = shape->dims[0], hq = shape->dims[1], hk = shape->dims[2], d = shape->dims[3];
    int64_t *positions = malloc((size_t)tokens * sizeof *positions);
    if (!positions) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench rotary: positions");
    for (int64_t n = 0; n < tokens; n++) positions[n] = n % ROTARY_SEQUENCE;
    parity_tensor *q, *k, *pos, *q_out, *k_out, *dq_out, *dk_out, *dq, *dk;
    parity_error *error = bench_upload(&in->set, &pos, PARITY_I64, device, 1, (int64_t[]){tokens}, positions);
    free(positions);
    PARITY_TRY(error);
    int64_t q_shape[3] = {tokens, hq, d}, k_shape[3] = {tokens, hk, d};
    PARITY_TRY(bench_tensor(&in->set, &q, dtype, device, 3, q_shape, "rotary q", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &k, dtype, device, 3, k_shape, "rotary k", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &q_out, dtype, device, 3, q_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &k_out, dtype, device, 3, k_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dq_out, dtype, device, 3, q_shape, "rotary dq_out", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &dk_out, dtype, device, 3, k_shape, "rotary dk_out", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &dq, dtype, device, 3, q_shape, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dk, dtype, device, 3, k_shape, NULL, 0, 0, 0));
    in->rope = (parity_rope_description){.type = PARITY_ROPE_DEFAULT, .theta = 500000};
    in->args = (parity_rotary_args){q, k, pos, &in->rope, q_out, k_out};
    in->grads = (parity_rotary_grads){dq_out, dk_out, dq, dk};
    return NULL;
}

static parity_error *rotary_forward(const parity_exec *exec, void *raw, const void *kernels, parity_saved *saved) {
    rotary_inputs *in = raw;
    return ((const parity_rotary_kernels *)kernels)->forward(exec, &in->args, saved);
}

static parity_error *rotary_backward(const parity_exec *exec, void *raw, const void *kernels,
                                     const parity_saved *saved) {
    rotary_inputs *in = raw;
    return ((const parity_rotary_kernels *)kernels)->backward(exec, &in->args, saved, &in->grads);
}

static void rotary_teardown(void *raw) {
    rotary_inputs *in = raw;
    if (in) release_set(&in->set);
    free(in);
}

// each way: read q and k (and the positions), write the rotated q and k
static double rotary_bytes(const parity_bench_shape *shape, parity_dtype dtype, bool with_backward) {
    double tokens = (double)shape->dims[0], heads = (double)(shape->dims[1] + shape->dims[2]), d = (double)shape->dims[3];
    double one_way = 2 * tokens * heads * d * size_of(dtype) + tokens * 8;
    return with_backward ? 2 * one_way : one_way;
}

static double rotary_gradient_bytes(const parity_bench_shape *shape, parity_dtype dtype) {
    return (double)(shape->dims[0] * (shape->dims[1] + shape->dims[2]) * shape->dims[3]) * size_of(dtype);
}

// ---- cross_entropy: TOKENSxHIDDENxVOCAB (linear + cross-entropy, fwd+bwd) ----

typedef struct cross_entropy_inputs {
    tensor_set set;
    parity_cross_entropy_args args;
    parity_cross_entropy_grads grads;
} cross_entropy_inputs;

static parity_error *cross_entropy_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                         void **out) {
    cross_entropy_inputs *in = calloc(1, sizeof *in);
    if (!in) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench cross_entropy: inputs");
    *out = in;
    int64_t tokens = shape->dims[0], hidden = shape->dims[1], vocab = shape->dims[2];
    int64_t *targets = malloc((size_t)tokens * sizeof *targets);
    if (!targets) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench cross_entropy: targets");
    uint32_t word[1];
    for (int64_t n = 0; n < tokens; n++) {
        parity_rng_words(parity_rng_stream_named(2024, "cross_entropy targets"), (uint64_t)n, word, 1);
        targets[n] = (int64_t)(word[0] % (uint32_t)vocab);
    }
    parity_tensor *h, *w, *t, *loss, *dloss, *dh, *dw;
    parity_error *error = bench_upload(&in->set, &t, PARITY_I64, device, 1, (int64_t[]){tokens}, targets);
    free(targets);
    PARITY_TRY(error);
    const double one_f64 = 1.0;
    const float one_f32 = 1.0f;
    parity_dtype ldtype = loss_dtype(dtype);
    PARITY_TRY(bench_tensor(&in->set, &h, dtype, device, 2, (int64_t[]){tokens, hidden}, "cross_entropy hidden",
                            PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &w, dtype, device, 2, (int64_t[]){vocab, hidden}, "cross_entropy weight",
                            PARITY_RNG_NORMAL, 0, 0.02));
    PARITY_TRY(bench_tensor(&in->set, &loss, ldtype, device, 0, NULL, NULL, 0, 0, 0));
    PARITY_TRY(bench_upload(&in->set, &dloss, ldtype, device, 0, NULL, ldtype == PARITY_F64 ? (const void *)&one_f64
                                                                                           : (const void *)&one_f32));
    PARITY_TRY(bench_tensor(&in->set, &dh, dtype, device, 2, (int64_t[]){tokens, hidden}, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dw, dtype, device, 2, (int64_t[]){vocab, hidden}, NULL, 0, 0, 0));
    in->args = (parity_cross_entropy_args){.hidden = h, .weight = w, .targets = t,
                                           .ignore_index = PARITY_CROSS_ENTROPY_IGNORE_INDEX, .loss = loss};
    in->grads = (parity_cross_entropy_grads){dloss, dh, dw};
    return NULL;
}

static parity_error *cross_entropy_forward(const parity_exec *exec, void *raw, const void *kernels,
                                           parity_saved *saved) {
    cross_entropy_inputs *in = raw;
    return ((const parity_cross_entropy_kernels *)kernels)->forward(exec, &in->args, saved);
}

static parity_error *cross_entropy_backward(const parity_exec *exec, void *raw, const void *kernels,
                                            const parity_saved *saved) {
    cross_entropy_inputs *in = raw;
    return ((const parity_cross_entropy_kernels *)kernels)->backward(exec, &in->args, saved, &in->grads);
}

static void cross_entropy_teardown(void *raw) {
    cross_entropy_inputs *in = raw;
    if (in) release_set(&in->set);
    free(in);
}

// the three GEMMs of N x H x V: logits, dhidden, dweight (forward alone: the logits)
static double cross_entropy_flops(const parity_bench_shape *shape, bool with_backward) {
    double n = (double)shape->dims[0], h = (double)shape->dims[1], v = (double)shape->dims[2];
    return (with_backward ? 6 : 2) * n * h * v;
}

// the minimum: read hidden and weight, write dhidden and dweight
static double cross_entropy_bytes(const parity_bench_shape *shape, parity_dtype dtype, bool with_backward) {
    double n = (double)shape->dims[0], h = (double)shape->dims[1], v = (double)shape->dims[2];
    return (with_backward ? 2 : 1) * (n * h + v * h) * size_of(dtype);
}

static double cross_entropy_gradient_bytes(const parity_bench_shape *shape, parity_dtype dtype) {
    return (double)(shape->dims[0] + shape->dims[2]) * (double)shape->dims[1] * size_of(dtype);
}

// ---- rms_norm_gated: ROWSxDIM ----

typedef struct rms_norm_gated_inputs {
    tensor_set set;
    parity_rms_norm_gated_args args;
    parity_rms_norm_gated_grads grads;
} rms_norm_gated_inputs;

static parity_error *rms_norm_gated_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                          void **out) {
    rms_norm_gated_inputs *in = calloc(1, sizeof *in);
    if (!in) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench rms_norm_gated: inputs");
    *out = in;
    int64_t dims[2] = {shape->dims[0], shape->dims[1]};
    parity_tensor *x, *gate, *w, *y, *dy, *dx, *dgate, *dw;
    PARITY_TRY(bench_tensor(&in->set, &x, dtype, device, 2, dims, "rms_norm_gated x", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &gate, dtype, device, 2, dims, "rms_norm_gated gate", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &w, dtype, device, 1, (int64_t[]){dims[1]}, "rms_norm_gated w", PARITY_RNG_UNIFORM,
                            0.5, 1.5));
    PARITY_TRY(bench_tensor(&in->set, &y, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dy, dtype, device, 2, dims, "rms_norm_gated dy", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &dx, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dgate, dtype, device, 2, dims, NULL, 0, 0, 0));
    PARITY_TRY(bench_tensor(&in->set, &dw, dtype, device, 1, (int64_t[]){dims[1]}, NULL, 0, 0, 0));
    in->args = (parity_rms_norm_gated_args){x, gate, w, 1e-6, y};
    in->grads = (parity_rms_norm_gated_grads){dy, dx, dgate, dw};
    return NULL;
}

static parity_error *rms_norm_gated_forward(const parity_exec *exec, void *raw, const void *kernels,
                                            parity_saved *saved) {
    rms_norm_gated_inputs *in = raw;
    return ((const parity_rms_norm_gated_kernels *)kernels)->forward(exec, &in->args, saved);
}

static parity_error *rms_norm_gated_backward(const parity_exec *exec, void *raw, const void *kernels,
                                             const parity_saved *saved) {
    rms_norm_gated_inputs *in = raw;
    return ((const parity_rms_norm_gated_kernels *)kernels)->backward(exec, &in->args, saved, &in->grads);
}

static void rms_norm_gated_teardown(void *raw) {
    rms_norm_gated_inputs *in = raw;
    if (in) release_set(&in->set);
    free(in);
}

// forward: read x, gate, w, write y; backward: read x, gate, dy, w, write dx, dgate, dw
static double rms_norm_gated_bytes(const parity_bench_shape *shape, parity_dtype dtype, bool with_backward) {
    double n = (double)shape->dims[0], d = (double)shape->dims[1];
    double forward = (3 * n * d + d) * size_of(dtype), backward = (5 * n * d + 2 * d) * size_of(dtype);
    return with_backward ? forward + backward : forward;
}

static double rms_norm_gated_gradient_bytes(const parity_bench_shape *shape, parity_dtype dtype) {
    return (double)(2 * shape->dims[0] * shape->dims[1] + shape->dims[1]) * size_of(dtype);
}

// ---- load_balancing_loss: ROWSxEXPERTSxTOP_K ----

typedef struct load_balancing_inputs {
    tensor_set set;
    parity_load_balancing_loss_args args;
    parity_load_balancing_loss_grads grads;
} load_balancing_inputs;

static parity_error *load_balancing_setup(const parity_bench_shape *shape, parity_dtype dtype, parity_device device,
                                          void **out) {
    load_balancing_inputs *in = calloc(1, sizeof *in);
    if (!in) return PARITY_ERROR(PARITY_ERROR_MEMORY, "bench load_balancing_loss: inputs");
    *out = in;
    int64_t dims[2] = {shape->dims[0], shape->dims[1]};
    parity_dtype ldtype = loss_dtype(dtype);
    const double one_f64 = 1.0;
    const float one_f32 = 1.0f;
    parity_tensor *logits, *loss, *dloss, *dlogits;
    PARITY_TRY(bench_tensor(&in->set, &logits, dtype, device, 2, dims, "load_balancing logits", PARITY_RNG_NORMAL, 0, 1));
    PARITY_TRY(bench_tensor(&in->set, &loss, ldtype, device, 0, NULL, NULL, 0, 0, 0));
    PARITY_TRY(bench_upload(&in->set, &dloss, ldtype, device, 0, NULL, ldtype == PARITY_F64 ? (const void *)&one_f64
                                                                                           : (const void *)&one_f32));
    PARITY_TRY(bench_tensor(&in->set, &dlogits, dtype, device, 2, dims, NULL, 0, 0, 0));
    in->args = (parity_load_balancing_loss_args){logits, 1, shape->dims[2], loss};
    in->grads = (parity_load_balancing_loss_grads){dloss, dlogits};
    return NULL;
}

static parity_error *load_balancing_forward(const parity_exec *exec, void *raw, const void *kernels,
                                            parity_saved *saved) {
    load_balancing_inputs *in = raw;
    return ((const parity_load_balancing_loss_kernels *)kernels)->forward(exec, &in->args, saved);
}

static parity_error *load_balancing_backward(const parity_exec *exec, void *raw, const void *kernels,
                                             const parity_saved *saved) {
    load_balancing_inputs *in = raw;
    return ((const parity_load_balancing_loss_kernels *)kernels)->backward(exec, &in->args, saved, &in->grads);
}

static void load_balancing_teardown(void *raw) {
    load_balancing_inputs *in = raw;
    if (in) release_set(&in->set);
    free(in);
}

// forward: read the logits; backward: read them again and write dlogits
static double load_balancing_bytes(const parity_bench_shape *shape, parity_dtype dtype, bool with_backward) {
    double elements = (double)shape->dims[0] * (double)shape->dims[1];
    return (with_backward ? 3 : 1) * elements * size_of(dtype);
}

static double load_balancing_gradient_bytes(const parity_bench_shape *shape, parity_dtype dtype) {
    return (double)(shape->dims[0] * shape->dims[1]) * size_of(dtype);
}

// ---- the table ----

static const char *const rms_norm_shapes[] = {"16384x4096", NULL};
static const char *const swiglu_shapes[] = {"16384x8192", NULL};
static const char *const rotary_shapes[] = {"16384x32x8x128", NULL}; // q [4, 32, 4096, 128], GQA k with 8 heads
static const char *const cross_entropy_shapes[] = {"8192x4096x151936", "16384x2048x32000", NULL};
static const char *const rms_norm_gated_shapes[] = {"262144x128", NULL}; // Qwen3.5: 8192 tokens x 32 value heads
static const char *const load_balancing_shapes[] = {"65536x128x8", NULL}; // 4 layers x 16384 tokens, 128 experts, top-8

static const parity_bench_op bench_ops[] = {
    {PARITY_OP_RMS_NORM, "ROWSxHIDDEN", 2, rms_norm_shapes, true, false, rms_norm_setup, rms_norm_forward,
     rms_norm_backward, rms_norm_teardown, rms_norm_bytes, NULL, rms_norm_gradient_bytes},
    {PARITY_OP_SWIGLU, "ROWSxINTERMEDIATE", 2, swiglu_shapes, true, false, swiglu_setup, swiglu_forward, swiglu_backward,
     swiglu_teardown, swiglu_bytes, NULL, swiglu_gradient_bytes},
    {PARITY_OP_ROTARY, "TOKENSxQUERY_HEADSxKEY_HEADSxHEAD_DIM", 4, rotary_shapes, true, false, rotary_setup,
     rotary_forward, rotary_backward, rotary_teardown, rotary_bytes, NULL, rotary_gradient_bytes},
    {PARITY_OP_CROSS_ENTROPY, "TOKENSxHIDDENxVOCAB", 3, cross_entropy_shapes, false, true, cross_entropy_setup,
     cross_entropy_forward, cross_entropy_backward, cross_entropy_teardown, cross_entropy_bytes, cross_entropy_flops,
     cross_entropy_gradient_bytes},
    {PARITY_OP_RMS_NORM_GATED, "ROWSxDIM", 2, rms_norm_gated_shapes, true, false, rms_norm_gated_setup,
     rms_norm_gated_forward, rms_norm_gated_backward, rms_norm_gated_teardown, rms_norm_gated_bytes, NULL,
     rms_norm_gated_gradient_bytes},
    {PARITY_OP_LOAD_BALANCING_LOSS, "ROWSxEXPERTSxTOP_K", 3, load_balancing_shapes, true, false, load_balancing_setup,
     load_balancing_forward, load_balancing_backward, load_balancing_teardown, load_balancing_bytes, NULL,
     load_balancing_gradient_bytes},
};

size_t parity_bench_op_count(void) { return sizeof bench_ops / sizeof bench_ops[0]; }

const parity_bench_op *parity_bench_op_at(size_t index) {
    return index < parity_bench_op_count() ? &bench_ops[index] : NULL;
}

const parity_bench_op *parity_bench_find_op(const char *name) {
    for (size_t i = 0; i < parity_bench_op_count(); i++)
        if (strcmp(bench_ops[i].op, name) == 0) return &bench_ops[i];
    return NULL;
}

parity_error *parity_bench_parse_shape(const parity_bench_op *op, const char *text, parity_bench_shape *shape) {
    memset(shape, 0, sizeof *shape);
    const char *cursor = text;
    while (*cursor) {
        char *end;
        long long value = strtoll(cursor, &end, 10);
        if (end == cursor || value <= 0 || shape->count >= PARITY_BENCH_MAX_DIMS || (*end && *end != 'x'))
            return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: shape '%s' is not %s (positive sizes joined by 'x')", op->op,
                                text, op->shape_format);
        shape->dims[shape->count++] = value;
        cursor = *end ? end + 1 : end;
        if (*end && !*cursor)
            return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: shape '%s' ends with 'x'", op->op, text);
    }
    if (shape->count != op->shape_dims)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: shape '%s' has %d sizes, expected %d (%s)", op->op, text,
                            shape->count, op->shape_dims, op->shape_format);
    if (strcmp(op->op, PARITY_OP_LOAD_BALANCING_LOSS) == 0 && shape->dims[2] > shape->dims[1])
        return PARITY_ERROR(PARITY_ERROR_USAGE, "bench %s: top-k %lld exceeds the %lld experts", op->op,
                            (long long)shape->dims[2], (long long)shape->dims[1]);
    return NULL;
}

const char *parity_bench_shape_string(const parity_bench_shape *shape, char *buffer, size_t size) {
    size_t used = 0;
    buffer[0] = '\0';
    for (int i = 0; i < shape->count && used < size; i++)
        used += (size_t)snprintf(buffer + used, size - used, "%s%lld", i ? "x" : "", (long long)shape->dims[i]);
    return buffer;
}

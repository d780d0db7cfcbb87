// eager.c: the reference attention on the CPU (value "eager"), as HF's eager_attention_forward
// computes it on a GPU, one (document, query head) at a time:
//   scores = round(round(q @ k^T) * scale)      bf16 GEMM (f32 accumulation) stored bf16, then the
//                                               scaling (f32 arithmetic, scale as f32) stored bf16
//   probs  = softmax_f32(scores over the visible keys)   (dtype=torch.float32; masked keys get 0)
//   output = round(round(probs) @ v)            probs cast to bf16, bf16 GEMM
// f64 runs stay f64 throughout (HF would softmax an f64 model in f32; our goldens are pure f64).
// GQA reads kv head h / (Hq / Hk), like repeat_kv.
//
// Saves the f32 (f64) probabilities of every (document, head): Hq * sum(L_s^2) values. Backward is
// what autograd runs on that graph:
//   dvalue_h = round(probs)^T @ dout          dprobs = round(dout @ v^T)
//   dscores  = round(p * (dprobs - rowsum(dprobs * p)))    softmax backward in f32, stored bf16
//   dscaled  = round(dscores * scale)
//   dquery   = round(dscaled @ k)             dkey_h = round(dscaled^T @ q)
// and repeat_kv's backward sums dkey_h / dvalue_h over the heads of a group (f32, stored once).
#include <math.h>
#include <stdlib.h>

#include "ops/attention/attention.h"
#include "ops/attention/matmul.h"
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

// Offset of document s's probabilities (Hq blocks of L x L) in the saved tensor.
static int64_t probabilities_offset(const int64_t *cu_seqlens, int64_t document, int64_t query_heads) {
    int64_t offset = 0;
    for (int64_t s = 0; s < document; s++) {
        int64_t length = cu_seqlens[s + 1] - cu_seqlens[s];
        offset += query_heads * length * length;
    }
    return offset;
}

// One row of HF's scores -> f32 softmax. `scores` holds the raw q.k products; writes probabilities.
static void softmax_row(const parity_attention_args *args, parity_dtype dtype, int64_t query, int64_t length,
                        const double *scores, double *probabilities) {
    double scale = parity_round_compute(args->scale, dtype);
    double maximum = -INFINITY;
    for (int64_t key = 0; key < length; key++) {
        if (!parity_attention_key_visible(args, query, key)) continue;
        double product = parity_round_storage(scores[key], dtype);
        double scaled = parity_round_storage(parity_round_compute(product * scale, dtype), dtype);
        probabilities[key] = scaled;
        maximum = fmax(maximum, scaled);
    }
    double sum = 0;
    for (int64_t key = 0; key < length; key++) {
        if (!parity_attention_key_visible(args, query, key)) {
            probabilities[key] = 0;
            continue;
        }
        probabilities[key] =
            parity_round_compute(exp(parity_round_compute(probabilities[key] - maximum, dtype)), dtype);
        sum = parity_round_compute(sum + probabilities[key], dtype);
    }
    for (int64_t key = 0; key < length; key++)
        probabilities[key] = parity_round_compute(probabilities[key] / sum, dtype);
}

static parity_error *eager_forward_document(const parity_attention_args *args, const parity_attention_dims *dims,
                                            int64_t start, int64_t length, const double *q, const double *k,
                                            const double *v, double *y, double *probabilities, double *rounded) {
    parity_dtype dtype = args->query->dtype;
    int64_t group = dims->query_heads / dims->kv_heads, hq = dims->query_heads, hk = dims->kv_heads;
    int64_t d = dims->head_dim, dv = dims->value_dim;
    for (int64_t head = 0; head < hq; head++) {
        int64_t kv_head = head / group;
        double *block = probabilities + head * length * length; // (L, L)
        parity_attention_operand query = {q + (start * hq + head) * d, length, d, hq * d, false};
        parity_attention_operand key_t = {k + (start * hk + kv_head) * d, length, d, hk * d, true};
        PARITY_TRY(parity_attention_matmul(dtype, query, key_t, block, length));
        for (int64_t i = 0; i < length; i++)
            softmax_row(args, dtype, i, length, block + i * length, block + i * length);
        for (int64_t i = 0; i < length * length; i++) rounded[i] = parity_round_storage(block[i], dtype);
        parity_attention_operand probs = {rounded, length, length, length, false};
        parity_attention_operand value = {v + (start * hk + kv_head) * dv, length, dv, hk * dv, false};
        PARITY_TRY(parity_attention_matmul(dtype, probs, value, y + (start * hq + head) * dv, hq * dv));
    }
    return NULL;
}

static parity_error *attention_eager_forward(const parity_exec *exec, const parity_attention_args *args,
                                             parity_saved *saved) {
    parity_attention_dims dims;
    PARITY_TRY(parity_attention_check(args, &dims));
    PARITY_TRY(parity_check_cpu("attention", "query", args->query));
    int64_t *cu_seqlens;
    PARITY_TRY(parity_attention_load_boundaries(args, dims.tokens, &cu_seqlens));
    parity_dtype dtype = args->query->dtype;
    int64_t longest = 0;
    for (int64_t s = 0; s < dims.documents; s++)
        if (cu_seqlens[s + 1] - cu_seqlens[s] > longest) longest = cu_seqlens[s + 1] - cu_seqlens[s];
    parity_tensor *probabilities;
    parity_error *error =
        parity_saved_alloc(saved, &probabilities, parity_compute_dtype(dtype), PARITY_CPU,
                           PARITY_SHAPE(probabilities_offset(cu_seqlens, dims.documents, dims.query_heads)));
    parity_cpu_values q = {0}, k = {0}, v = {0}, y = {0}, rounded = {0};
    if (!error) error = parity_cpu_values_load(args->query, "attention query", &q);
    if (!error) error = parity_cpu_values_load(args->key, "attention key", &k);
    if (!error) error = parity_cpu_values_load(args->value, "attention value", &v);
    if (!error) error = parity_cpu_values_new(dims.tokens * dims.query_heads * dims.value_dim, &y);
    if (!error) error = parity_cpu_values_new(longest * longest, &rounded);
    double *saved_values = error ? NULL : (double *)probabilities->data; // compute dtype f64: written in place
    parity_cpu_values staging = {0};
    if (!error && probabilities->dtype != PARITY_F64) {
        error = parity_cpu_values_new(probabilities->numel, &staging);
        saved_values = staging.data;
    }
    for (int64_t s = 0; s < dims.documents && !error; s++) {
        int64_t start = cu_seqlens[s], length = cu_seqlens[s + 1] - start;
        double *block = saved_values + probabilities_offset(cu_seqlens, s, dims.query_heads);
        error = eager_forward_document(args, &dims, start, length, q.data, k.data, v.data, y.data, block, rounded.data);
    }
    if (!error) {
        parity_cpu_values_store(probabilities, saved_values);
        parity_cpu_values_store(args->output, y.data);
    }
    parity_cpu_values_free(&q);
    parity_cpu_values_free(&k);
    parity_cpu_values_free(&v);
    parity_cpu_values_free(&y);
    parity_cpu_values_free(&rounded);
    parity_cpu_values_free(&staging);
    free(cu_seqlens);
    return error;
}

// Scratch for one document in backward (every buffer sized for the longest document).
typedef struct eager_scratch {
    double *rounded;        // (L, L) round(probs)
    double *dprobs;         // (L, L)
    double *key_gradient;   // (L, D) one head's dkey
    double *value_gradient; // (L, Dv) one head's dvalue
    double *key_sum;        // (L, D) sum over the group
    double *value_sum;      // (L, Dv)
} eager_scratch;

// dscores = round(round(p * (dprobs - rowsum(dprobs * p))) * scale), in place over `dprobs`.
static void softmax_backward(const parity_attention_args *args, parity_dtype dtype, int64_t length,
                             const double *probabilities, double *dprobs) {
    double scale = parity_round_compute(args->scale, dtype);
    for (int64_t i = 0; i < length; i++) {
        const double *p = probabilities + i * length;
        double *dp = dprobs + i * length;
        double dot = 0;
        for (int64_t j = 0; j < length; j++)
            dot = parity_round_compute(dot + parity_round_compute(dp[j] * p[j], dtype), dtype);
        for (int64_t j = 0; j < length; j++) {
            double dscore = parity_round_storage(
                parity_round_compute(p[j] * parity_round_compute(dp[j] - dot, dtype), dtype), dtype);
            dp[j] = parity_round_storage(parity_round_compute(dscore * scale, dtype), dtype);
        }
    }
}

static void add_rounded(parity_dtype dtype, int64_t count, const double *term, double *sum) {
    for (int64_t i = 0; i < count; i++)
        sum[i] = parity_round_compute(sum[i] + parity_round_storage(term[i], dtype), dtype);
}

static parity_error *eager_backward_document(const parity_attention_args *args, const parity_attention_dims *dims,
                                             int64_t start, int64_t length, const double *probabilities,
                                             const double *q, const double *k, const double *v, const double *dy,
                                             double *dq, double *dk, double *dv, const eager_scratch *scratch) {
    parity_dtype dtype = args->query->dtype;
    int64_t group = dims->query_heads / dims->kv_heads, hq = dims->query_heads, hk = dims->kv_heads;
    int64_t d = dims->head_dim, dvs = dims->value_dim;
    for (int64_t kv_head = 0; kv_head < hk; kv_head++) {
        for (int64_t i = 0; i < length * d; i++) scratch->key_sum[i] = 0;
        for (int64_t i = 0; i < length * dvs; i++) scratch->value_sum[i] = 0;
        parity_attention_operand key = {k + (start * hk + kv_head) * d, length, d, hk * d, false};
        parity_attention_operand value_t = {v + (start * hk + kv_head) * dvs, length, dvs, hk * dvs, true};
        for (int64_t head = kv_head * group; head < (kv_head + 1) * group; head++) {
            const double *p = probabilities + head * length * length;
            for (int64_t i = 0; i < length * length; i++) scratch->rounded[i] = parity_round_storage(p[i], dtype);
            parity_attention_operand doutput = {dy + (start * hq + head) * dvs, length, dvs, hq * dvs, false};
            parity_attention_operand rounded_t = {scratch->rounded, length, length, length, true};
            PARITY_TRY(parity_attention_matmul(dtype, rounded_t, doutput, scratch->value_gradient, dvs));
            add_rounded(dtype, length * dvs, scratch->value_gradient, scratch->value_sum);
            PARITY_TRY(parity_attention_matmul(dtype, doutput, value_t, scratch->dprobs, length));
            for (int64_t i = 0; i < length * length; i++)
                scratch->dprobs[i] = parity_round_storage(scratch->dprobs[i], dtype);
            softmax_backward(args, dtype, length, p, scratch->dprobs);
            parity_attention_operand dscaled = {scratch->dprobs, length, length, length, false};
            parity_attention_operand dscaled_t = {scratch->dprobs, length, length, length, true};
            parity_attention_operand query = {q + (start * hq + head) * d, length, d, hq * d, false};
            PARITY_TRY(parity_attention_matmul(dtype, dscaled, key, dq + (start * hq + head) * d, hq * d));
            PARITY_TRY(parity_attention_matmul(dtype, dscaled_t, query, scratch->key_gradient, d));
            add_rounded(dtype, length * d, scratch->key_gradient, scratch->key_sum);
        }
        for (int64_t i = 0; i < length; i++) {
            for (int64_t c = 0; c < d; c++) dk[((start + i) * hk + kv_head) * d + c] = scratch->key_sum[i * d + c];
            for (int64_t c = 0; c < dvs; c++)
                dv[((start + i) * hk + kv_head) * dvs + c] = scratch->value_sum[i * dvs + c];
        }
    }
    return NULL;
}

static parity_error *attention_eager_backward(const parity_exec *exec, const parity_attention_args *args,
                                              const parity_saved *saved, const parity_attention_grads *grads) {
    parity_attention_dims dims;
    PARITY_TRY(parity_attention_check(args, &dims));
    PARITY_TRY(parity_attention_check_grads(args, grads));
    const parity_tensor *probabilities;
    PARITY_TRY(parity_saved_get(saved, 0, &probabilities));
    int64_t *cu_seqlens;
    PARITY_TRY(parity_attention_load_boundaries(args, dims.tokens, &cu_seqlens));
    int64_t longest = 0;
    for (int64_t s = 0; s < dims.documents; s++)
        if (cu_seqlens[s + 1] - cu_seqlens[s] > longest) longest = cu_seqlens[s + 1] - cu_seqlens[s];
    parity_error *error = NULL;
    if (probabilities->numel != probabilities_offset(cu_seqlens, dims.documents, dims.query_heads))
        error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "attention: saved probabilities do not match cu_seqlens");
    int64_t n = dims.tokens, d = dims.head_dim, dvs = dims.value_dim;
    parity_cpu_values p = {0}, q = {0}, k = {0}, v = {0}, dy = {0}, dq = {0}, dk = {0}, dv = {0}, buffers = {0};
    if (!error) error = parity_cpu_values_load(probabilities, "attention probabilities", &p);
    if (!error) error = parity_cpu_values_load(args->query, "attention query", &q);
    if (!error) error = parity_cpu_values_load(args->key, "attention key", &k);
    if (!error) error = parity_cpu_values_load(args->value, "attention value", &v);
    if (!error) error = parity_cpu_values_load(grads->doutput, "attention doutput", &dy);
    if (!error) error = parity_cpu_values_new(n * dims.query_heads * d, &dq);
    if (!error) error = parity_cpu_values_new(n * dims.kv_heads * d, &dk);
    if (!error) error = parity_cpu_values_new(n * dims.kv_heads * dvs, &dv);
    if (!error) error = parity_cpu_values_new(2 * longest * longest + 2 * longest * (d + dvs), &buffers);
    if (!error) {
        int64_t square = longest * longest;
        eager_scratch scratch = {
            .rounded = buffers.data,
            .dprobs = buffers.data + square,
            .key_gradient = buffers.data + 2 * square,
            .value_gradient = buffers.data + 2 * square + longest * d,
            .key_sum = buffers.data + 2 * square + longest * (d + dvs),
            .value_sum = buffers.data + 2 * square + longest * (2 * d + dvs),
        };
        for (int64_t s = 0; s < dims.documents && !error; s++) {
            int64_t start = cu_seqlens[s], length = cu_seqlens[s + 1] - start;
            const double *block = p.data + probabilities_offset(cu_seqlens, s, dims.query_heads);
            error = eager_backward_document(args, &dims, start, length, block, q.data, k.data, v.data, dy.data, dq.data,
                                            dk.data, dv.data, &scratch);
        }
    }
    if (!error) {
        if (grads->dquery) parity_cpu_values_store(grads->dquery, dq.data);
        if (grads->dkey) parity_cpu_values_store(grads->dkey, dk.data);
        if (grads->dvalue) parity_cpu_values_store(grads->dvalue, dv.data);
    }
    parity_cpu_values *all[] = {&p, &q, &k, &v, &dy, &dq, &dk, &dv, &buffers};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_cpu_values_free(all[i]);
    free(cu_seqlens);
    return error;
}

static const parity_attention_kernels attention_eager_kernels = {attention_eager_forward, attention_eager_backward};

PARITY_BACKEND_REGISTRATION(attention, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_ATTENTION,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        // PARITY_CAP_SEQUENCE_PARALLEL, a deviation from the seed's table (eager: no SP, since VeOmni wraps
        // only the flash/flex values in its Ulysses facade): in parity the all-to-all around attention
        // is the model's (models/parallel/ulysses.c), so the kernel sees whole sequences of its heads,
        // and the eager reference is what the sp layouts' baselines run (test_parallel_layouts.c).
        .capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_SLIDING_WINDOW | PARITY_CAP_BATCH_INVARIANT |
                        PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL,
        .kernels = &attention_eager_kernels,
        .description = "reference attention (HF eager_attention_forward: bf16 scores, f32 softmax), f64/f32/bf16",
    });
}

// sdpa.c: tiled online-softmax attention on the CPU (value "sdpa"), the FlashAttention-2 algorithm:
// per (document, head), blocks of SDPA_BLOCK queries meet blocks of SDPA_BLOCK keys with a running
// row maximum m and running sum l, so the full score matrix never exists:
//   s = scale * q_blk @ k_blk^T (masked -> -inf);  m' = max(m, rowmax s);  p = exp(s - m')
//   l = exp(m - m') l + rowsum p;  acc = exp(m - m') acc + p @ v_blk;  at the end out = acc / l
// and it saves only lse = m + log(l) per (token, head): (N, Hq) in f32 (f64 for f64 runs).
// Backward recomputes p = exp(s - lse) block by block, with D_i = rowsum(dout_i * out_i):
//   dv += p^T @ dout;  dp = dout @ v^T;  ds = scale * p * (dp - D);  dq += ds @ k;  dk += ds^T @ q
// key blocks outer, query blocks inner, like FA2. Blocks with no visible pair (causal, window)
// are skipped. bf16 runs compute everything in f32 and round each output once to bf16.
#include <math.h>
#include <stdlib.h>

#include "ops/attention/attention.h"
#include "ops/attention/matmul.h"
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

#define SDPA_BLOCK 16 // queries and keys per tile

typedef struct sdpa_problem {
    const parity_attention_args *args;
    parity_attention_dims dims;
    parity_dtype dtype;
    double scale; // in the compute precision
} sdpa_problem;

static int64_t min_int64(int64_t a, int64_t b) { return a < b ? a : b; }

// False only when no (query, key) pair of the two blocks is visible.
static bool tile_has_visible_keys(const parity_attention_args *args, int64_t query_start, int64_t query_count,
                                  int64_t key_start, int64_t key_count) {
    if (args->causal && key_start > query_start + query_count - 1) return false;
    return args->sliding_window == 0 || query_start - (key_start + key_count - 1) < args->sliding_window;
}

// target (rows x cols, row stride `target_stride`) += block (rows x cols, contiguous), in the compute precision.
static void accumulate(parity_dtype dtype, int64_t rows, int64_t cols, const double *block, double *target,
                       int64_t target_stride) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            target[r * target_stride + c] =
                parity_round_compute(target[r * target_stride + c] + block[r * cols + c], dtype);
}

typedef struct sdpa_forward_scratch {
    double *scores;      // (B, B) scores, then p
    double *product;     // (B, Dv) p @ v_blk
    double *accumulator; // (B, Dv)
    double *row_max;     // (B)
    double *row_sum;     // (B)
} sdpa_forward_scratch;

// Folds one tile's scores (row `row`, `key_count` keys) into the running max/sum, rescales the
// accumulator row, and leaves p = exp(s - m') in the scores.
static void online_softmax_row(const sdpa_problem *problem, int64_t query, int64_t key_start, int64_t key_count,
                               int64_t row, const sdpa_forward_scratch *scratch) {
    parity_dtype dtype = problem->dtype;
    double *s = scratch->scores + row * SDPA_BLOCK;
    double tile_max = -INFINITY;
    for (int64_t c = 0; c < key_count; c++) {
        bool visible = parity_attention_key_visible(problem->args, query, key_start + c);
        s[c] = visible ? parity_round_compute(s[c] * problem->scale, dtype) : -INFINITY; // exp(-inf - m') = 0 below
        tile_max = fmax(tile_max, s[c]);
    }
    if (tile_max == -INFINITY) { // no visible key in this tile: p = 0, the running state is unchanged
        for (int64_t c = 0; c < key_count; c++) s[c] = 0;
        return;
    }
    double new_max = fmax(scratch->row_max[row], tile_max);
    double alpha = parity_round_compute(exp(parity_round_compute(scratch->row_max[row] - new_max, dtype)), dtype);
    double tile_sum = 0;
    for (int64_t c = 0; c < key_count; c++) {
        s[c] = parity_round_compute(exp(parity_round_compute(s[c] - new_max, dtype)), dtype);
        tile_sum = parity_round_compute(tile_sum + s[c], dtype);
    }
    scratch->row_sum[row] =
        parity_round_compute(parity_round_compute(alpha * scratch->row_sum[row], dtype) + tile_sum, dtype);
    int64_t dv = problem->dims.value_dim;
    for (int64_t e = 0; e < dv; e++)
        scratch->accumulator[row * dv + e] = parity_round_compute(alpha * scratch->accumulator[row * dv + e], dtype);
    scratch->row_max[row] = new_max;
}

// One query block of one (document, head): writes its output rows and lse.
static parity_error *forward_query_block(const sdpa_problem *problem, int64_t start, int64_t length, int64_t head,
                                         int64_t query_start, const double *q, const double *k, const double *v,
                                         double *y, double *lse, const sdpa_forward_scratch *scratch) {
    parity_dtype dtype = problem->dtype;
    int64_t hq = problem->dims.query_heads, hk = problem->dims.kv_heads, d = problem->dims.head_dim;
    int64_t dv = problem->dims.value_dim, kv_head = head / (hq / hk);
    int64_t query_count = min_int64(SDPA_BLOCK, length - query_start);
    for (int64_t r = 0; r < query_count; r++) {
        scratch->row_max[r] = -INFINITY;
        scratch->row_sum[r] = 0;
        for (int64_t e = 0; e < dv; e++) scratch->accumulator[r * dv + e] = 0;
    }
    parity_attention_operand query = {q + ((start + query_start) * hq + head) * d, query_count, d, hq * d, false};
    for (int64_t key_start = 0; key_start < length; key_start += SDPA_BLOCK) {
        int64_t key_count = min_int64(SDPA_BLOCK, length - key_start);
        if (!tile_has_visible_keys(problem->args, query_start, query_count, key_start, key_count)) continue;
        parity_attention_operand key_t = {k + ((start + key_start) * hk + kv_head) * d, key_count, d, hk * d, true};
        PARITY_TRY(parity_attention_matmul(dtype, query, key_t, scratch->scores, SDPA_BLOCK));
        for (int64_t r = 0; r < query_count; r++)
            online_softmax_row(problem, query_start + r, key_start, key_count, r, scratch);
        parity_attention_operand p = {scratch->scores, query_count, key_count, SDPA_BLOCK, false};
        parity_attention_operand value = {v + ((start + key_start) * hk + kv_head) * dv, key_count, dv, hk * dv, false};
        PARITY_TRY(parity_attention_matmul(dtype, p, value, scratch->product, dv));
        accumulate(dtype, query_count, dv, scratch->product, scratch->accumulator, dv);
    }
    for (int64_t r = 0; r < query_count; r++) {
        int64_t token = start + query_start + r;
        for (int64_t e = 0; e < dv; e++)
            y[(token * hq + head) * dv + e] =
                parity_round_compute(scratch->accumulator[r * dv + e] / scratch->row_sum[r], dtype);
        lse[token * hq + head] =
            parity_round_compute(scratch->row_max[r] + parity_round_compute(log(scratch->row_sum[r]), dtype), dtype);
    }
    return NULL;
}

static parity_error *sdpa_prepare(const parity_attention_args *args, sdpa_problem *problem, int64_t **cu_seqlens) {
    PARITY_TRY(parity_attention_check(args, &problem->dims));
    PARITY_TRY(parity_check_cpu("attention", "query", args->query));
    problem->args = args;
    problem->dtype = args->query->dtype;
    problem->scale = parity_round_compute(args->scale, problem->dtype);
    return parity_attention_load_boundaries(args, problem->dims.tokens, cu_seqlens);
}

static parity_error *attention_sdpa_forward(const parity_exec *exec, const parity_attention_args *args,
                                            parity_saved *saved) {
    sdpa_problem problem;
    int64_t *cu_seqlens;
    PARITY_TRY(sdpa_prepare(args, &problem, &cu_seqlens));
    int64_t n = problem.dims.tokens, hq = problem.dims.query_heads, dv = problem.dims.value_dim;
    parity_tensor *lse_tensor;
    parity_error *error =
        parity_saved_alloc(saved, &lse_tensor, parity_compute_dtype(problem.dtype), PARITY_CPU, PARITY_SHAPE(n, hq));
    parity_cpu_values q = {0}, k = {0}, v = {0}, y = {0}, lse = {0}, buffers = {0};
    if (!error) error = parity_cpu_values_load(args->query, "attention query", &q);
    if (!error) error = parity_cpu_values_load(args->key, "attention key", &k);
    if (!error) error = parity_cpu_values_load(args->value, "attention value", &v);
    if (!error) error = parity_cpu_values_new(n * hq * dv, &y);
    if (!error) error = parity_cpu_values_new(n * hq, &lse);
    if (!error) error = parity_cpu_values_new(SDPA_BLOCK * (SDPA_BLOCK + 2 * dv + 2), &buffers);
    sdpa_forward_scratch scratch = {0};
    if (!error) {
        scratch.scores = buffers.data;
        scratch.product = scratch.scores + SDPA_BLOCK * SDPA_BLOCK;
        scratch.accumulator = scratch.product + SDPA_BLOCK * dv;
        scratch.row_max = scratch.accumulator + SDPA_BLOCK * dv;
        scratch.row_sum = scratch.row_max + SDPA_BLOCK;
    }
    for (int64_t s = 0; s < problem.dims.documents && !error; s++) {
        int64_t start = cu_seqlens[s], length = cu_seqlens[s + 1] - start;
        for (int64_t head = 0; head < hq && !error; head++)
            for (int64_t query_start = 0; query_start < length && !error; query_start += SDPA_BLOCK)
                error = forward_query_block(&problem, start, length, head, query_start, q.data, k.data, v.data, y.data,
                                            lse.data, &scratch);
    }
    if (!error) {
        parity_cpu_values_store(args->output, y.data);
        parity_cpu_values_store(lse_tensor, lse.data);
    }
    parity_cpu_values *all[] = {&q, &k, &v, &y, &lse, &buffers};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_cpu_values_free(all[i]);
    free(cu_seqlens);
    return error;
}

// Everything backward reads and accumulates, as f64 arrays (accumulators in the compute precision).
typedef struct sdpa_backward_data {
    const double *q, *k, *v, *dy, *lse, *delta; // delta: D = rowsum(dout * out), (N, Hq)
    double *dq, *dk, *dv;
    double *scores, *dprobs;               // (B, B) p, then ds
    double *query_gradient, *key_gradient; // (B, D)
    double *value_gradient;                // (B, Dv)
} sdpa_backward_data;

// One (query block, key block) tile of one (document, head).
static parity_error *backward_tile(const sdpa_problem *problem, int64_t start, int64_t head, int64_t query_start,
                                   int64_t query_count, int64_t key_start, int64_t key_count,
                                   const sdpa_backward_data *data) {
    parity_dtype dtype = problem->dtype;
    int64_t hq = problem->dims.query_heads, hk = problem->dims.kv_heads, d = problem->dims.head_dim;
    int64_t dv = problem->dims.value_dim, kv_head = head / (hq / hk);
    int64_t query_row = (start + query_start) * hq + head, key_row = (start + key_start) * hk + kv_head;
    parity_attention_operand query = {data->q + query_row * d, query_count, d, hq * d, false};
    parity_attention_operand key = {data->k + key_row * d, key_count, d, hk * d, false};
    parity_attention_operand key_t = {data->k + key_row * d, key_count, d, hk * d, true};
    parity_attention_operand doutput = {data->dy + query_row * dv, query_count, dv, hq * dv, false};
    parity_attention_operand value_t = {data->v + key_row * dv, key_count, dv, hk * dv, true};
    PARITY_TRY(parity_attention_matmul(dtype, query, key_t, data->scores, SDPA_BLOCK));
    for (int64_t r = 0; r < query_count; r++) {
        double lse = data->lse[(start + query_start + r) * hq + head];
        double *p = data->scores + r * SDPA_BLOCK;
        for (int64_t c = 0; c < key_count; c++) {
            bool visible = parity_attention_key_visible(problem->args, query_start + r, key_start + c);
            double scaled = parity_round_compute(p[c] * problem->scale, dtype);
            p[c] = visible ? parity_round_compute(exp(parity_round_compute(scaled - lse, dtype)), dtype) : 0;
        }
    }
    parity_attention_operand p_t = {data->scores, query_count, key_count, SDPA_BLOCK, true};
    PARITY_TRY(parity_attention_matmul(dtype, p_t, doutput, data->value_gradient, dv));
    accumulate(dtype, key_count, dv, data->value_gradient, data->dv + key_row * dv, hk * dv);
    PARITY_TRY(parity_attention_matmul(dtype, doutput, value_t, data->dprobs, SDPA_BLOCK));
    for (int64_t r = 0; r < query_count; r++) {
        double delta = data->delta[(start + query_start + r) * hq + head];
        const double *p = data->scores + r * SDPA_BLOCK;
        double *ds = data->dprobs + r * SDPA_BLOCK;
        for (int64_t c = 0; c < key_count; c++) {
            double dscore = parity_round_compute(p[c] * parity_round_compute(ds[c] - delta, dtype), dtype);
            ds[c] = parity_round_compute(dscore * problem->scale, dtype);
        }
    }
    parity_attention_operand ds = {data->dprobs, query_count, key_count, SDPA_BLOCK, false};
    parity_attention_operand ds_t = {data->dprobs, query_count, key_count, SDPA_BLOCK, true};
    PARITY_TRY(parity_attention_matmul(dtype, ds, key, data->query_gradient, d));
    accumulate(dtype, query_count, d, data->query_gradient, data->dq + query_row * d, hq * d);
    PARITY_TRY(parity_attention_matmul(dtype, ds_t, query, data->key_gradient, d));
    accumulate(dtype, key_count, d, data->key_gradient, data->dk + key_row * d, hk * d);
    return NULL;
}

static parity_error *backward_head(const sdpa_problem *problem, int64_t start, int64_t length, int64_t head,
                                   const sdpa_backward_data *data) {
    for (int64_t key_start = 0; key_start < length; key_start += SDPA_BLOCK) {
        int64_t key_count = min_int64(SDPA_BLOCK, length - key_start);
        for (int64_t query_start = 0; query_start < length; query_start += SDPA_BLOCK) {
            int64_t query_count = min_int64(SDPA_BLOCK, length - query_start);
            if (!tile_has_visible_keys(problem->args, query_start, query_count, key_start, key_count)) continue;
            PARITY_TRY(backward_tile(problem, start, head, query_start, query_count, key_start, key_count, data));
        }
    }
    return NULL;
}

static parity_error *attention_sdpa_backward(const parity_exec *exec, const parity_attention_args *args,
                                             const parity_saved *saved, const parity_attention_grads *grads) {
    sdpa_problem problem;
    PARITY_TRY(parity_attention_check(args, &problem.dims));
    PARITY_TRY(parity_attention_check_grads(args, grads));
    const parity_tensor *lse_tensor;
    PARITY_TRY(parity_saved_get(saved, 0, &lse_tensor));
    int64_t *cu_seqlens;
    PARITY_TRY(sdpa_prepare(args, &problem, &cu_seqlens));
    parity_dtype dtype = problem.dtype;
    int64_t n = problem.dims.tokens, hq = problem.dims.query_heads, hk = problem.dims.kv_heads;
    int64_t d = problem.dims.head_dim, dvs = problem.dims.value_dim;
    parity_error *error = NULL;
    if (lse_tensor->numel != n * hq)
        error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "attention: saved lse has %lld values, expected %lld",
                             (long long)lse_tensor->numel, (long long)(n * hq));
    parity_cpu_values q = {0}, k = {0}, v = {0}, y = {0}, dy = {0}, lse = {0}, delta = {0}, dq = {0}, dk = {0},
                      dv = {0}, buffers = {0};
    if (!error) error = parity_cpu_values_load(args->query, "attention query", &q);
    if (!error) error = parity_cpu_values_load(args->key, "attention key", &k);
    if (!error) error = parity_cpu_values_load(args->value, "attention value", &v);
    if (!error) error = parity_cpu_values_load(args->output, "attention output", &y);
    if (!error) error = parity_cpu_values_load(grads->doutput, "attention doutput", &dy);
    if (!error) error = parity_cpu_values_load(lse_tensor, "attention lse", &lse);
    if (!error) error = parity_cpu_values_new(n * hq, &delta);
    if (!error) error = parity_cpu_values_new(n * hq * d, &dq);
    if (!error) error = parity_cpu_values_new(n * hk * d, &dk);
    if (!error) error = parity_cpu_values_new(n * hk * dvs, &dv);
    if (!error) error = parity_cpu_values_new(SDPA_BLOCK * (2 * SDPA_BLOCK + 2 * d + dvs), &buffers);
    if (!error) {
        for (int64_t row = 0; row < n * hq; row++) {
            double sum = 0;
            for (int64_t e = 0; e < dvs; e++)
                sum = parity_round_compute(
                    sum + parity_round_compute(dy.data[row * dvs + e] * y.data[row * dvs + e], dtype), dtype);
            delta.data[row] = sum;
        }
        sdpa_backward_data data = {
            .q = q.data,
            .k = k.data,
            .v = v.data,
            .dy = dy.data,
            .lse = lse.data,
            .delta = delta.data,
            .dq = dq.data,
            .dk = dk.data,
            .dv = dv.data,
            .scores = buffers.data,
            .dprobs = buffers.data + SDPA_BLOCK * SDPA_BLOCK,
            .query_gradient = buffers.data + 2 * SDPA_BLOCK * SDPA_BLOCK,
            .key_gradient = buffers.data + 2 * SDPA_BLOCK * SDPA_BLOCK + SDPA_BLOCK * d,
            .value_gradient = buffers.data + 2 * SDPA_BLOCK * SDPA_BLOCK + 2 * SDPA_BLOCK * d,
        };
        for (int64_t s = 0; s < problem.dims.documents && !error; s++)
            for (int64_t head = 0; head < hq && !error; head++)
                error = backward_head(&problem, cu_seqlens[s], cu_seqlens[s + 1] - cu_seqlens[s], head, &data);
    }
    if (!error) {
        if (grads->dquery) parity_cpu_values_store(grads->dquery, dq.data);
        if (grads->dkey) parity_cpu_values_store(grads->dkey, dk.data);
        if (grads->dvalue) parity_cpu_values_store(grads->dvalue, dv.data);
    }
    parity_cpu_values *all[] = {&q, &k, &v, &y, &dy, &lse, &delta, &dq, &dk, &dv, &buffers};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_cpu_values_free(all[i]);
    free(cu_seqlens);
    return error;
}

static const parity_attention_kernels attention_sdpa_kernels = {attention_sdpa_forward, attention_sdpa_backward};

PARITY_BACKEND_REGISTRATION(attention, sdpa, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_ATTENTION,
        .name = "sdpa",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_SLIDING_WINDOW | PARITY_CAP_BATCH_INVARIANT |
                        PARITY_CAP_DETERMINISTIC,
        .kernels = &attention_sdpa_kernels,
        .description = "tiled online-softmax attention (FlashAttention-2 on the CPU, 16 x 16 tiles), saves only lse",
    });
}

// block_mask_reference.c: the CPU attention through a block mask (block_mask_reference.h).
//   forward, per head h (mask head h or 0), query block qb, query i in it:
//     scores s_ij = scale q_i . k_j over the keys j of the listed blocks (ascending; a partial block
//     keeps only mask_mod-visible j, a full block every j), p_ij = softmax_j(s_ij), o_i = sum_j p_ij v_j
//   backward: pass 1 walks the forward lists again: per (h, i) the row max m_i, sum l_i,
//     delta_i = sum_j p_ij (do_i . v_j) and dq_i = scale sum_j p_ij (do_i . v_j - delta_i) k_j;
//     pass 2 walks the transposed lists: per kv head, key block kb, query head of the group, listed
//     query block: dv_j += p_ij do_i, dk_j += scale p_ij (do_i . v_j - delta_i) q_i.
#include "ops/attention/block_mask_reference.h"

#include <math.h>
#include <stdlib.h>

#include "ops/attention/block_mask.h"
#include "ops/core/cpu_math.h"

typedef struct reference_call {
    const parity_attention_args *args;
    const parity_attention_dims *dims;
    const parity_block_mask *mask;
    const double *q, *k, *v, *dout;
} reference_call;

static const int32_t *ints(const parity_tensor *tensor) { return tensor->data; }

static bool visible(const parity_block_mask *mask, int64_t query, int64_t key) {
    const int32_t *documents = ints(&mask->mask_mod.document_ids);
    if (documents[query] != documents[key]) return false;
    if (mask->mask_mod.causal && key > query) return false;
    return mask->mask_mod.sliding_window == 0 || query - key < mask->mask_mod.sliding_window;
}

static double dot(const double *a, const double *b, int64_t count) {
    double sum = 0;
    for (int64_t c = 0; c < count; c++) sum += a[c] * b[c];
    return sum;
}

static const double *row_of(const double *base, int64_t token, int64_t heads, int64_t head, int64_t size) {
    return base + (token * heads + head) * size;
}

// Calls visit(key, ...) for every key of query i's listed blocks, ascending, honoring partial/full.
typedef void (*key_visitor)(const reference_call *call, int64_t head, int64_t query, int64_t key, void *state);

static void for_each_key(const reference_call *call, int64_t head, int64_t query, key_visitor visit, void *state) {
    const parity_block_mask *mask = call->mask;
    int64_t mask_head = mask->heads == 1 ? 0 : head, qb = query / mask->q_block;
    int64_t row = mask_head * mask->q_blocks + qb, n = mask->tokens;
    int32_t partial_count = ints(&mask->kv_num_blocks)[row], full_count = ints(&mask->full_kv_num_blocks)[row];
    const int32_t *partial = ints(&mask->kv_indices) + row * mask->kv_blocks;
    const int32_t *full = ints(&mask->full_kv_indices) + row * mask->kv_blocks;
    for (int32_t p = 0, f = 0; p < partial_count || f < full_count;) {
        bool take_partial = f == full_count || (p < partial_count && partial[p] < full[f]);
        int64_t kb = take_partial ? partial[p++] : full[f++];
        for (int64_t key = kb * mask->kv_block; key < (kb + 1) * mask->kv_block && key < n; key++)
            if (!take_partial || visible(mask, query, key)) visit(call, head, query, key, state);
    }
}

typedef struct row_state {
    double scale, maximum, sum, delta;
    double *output;   // forward: (Dv) accumulated sum of exp(s - m) v_j
    double *dquery;   // backward pass 1: (D)
    int stage;        // 0: maximum, 1: sum (and output), 2: delta, 3: dq
} row_state;

static double score(const reference_call *call, int64_t head, int64_t query, int64_t key) {
    int64_t d = call->dims->head_dim, kv_head = head / (call->dims->query_heads / call->dims->kv_heads);
    return call->args->scale * dot(row_of(call->q, query, call->dims->query_heads, head, d),
                                   row_of(call->k, key, call->dims->kv_heads, kv_head, d), d);
}

static double dprob(const reference_call *call, int64_t head, int64_t query, int64_t key) {
    int64_t dv = call->dims->value_dim, kv_head = head / (call->dims->query_heads / call->dims->kv_heads);
    return dot(row_of(call->dout, query, call->dims->query_heads, head, dv),
               row_of(call->v, key, call->dims->kv_heads, kv_head, dv), dv);
}

static void visit_row(const reference_call *call, int64_t head, int64_t query, int64_t key, void *raw) {
    row_state *state = raw;
    double s = score(call, head, query, key);
    int64_t kv_head = head / (call->dims->query_heads / call->dims->kv_heads);
    if (state->stage == 0) {
        state->maximum = fmax(state->maximum, s);
        return;
    }
    double weight = exp(s - state->maximum);
    if (state->stage == 1) {
        state->sum += weight;
        if (state->output) {
            const double *value = row_of(call->v, key, call->dims->kv_heads, kv_head, call->dims->value_dim);
            for (int64_t c = 0; c < call->dims->value_dim; c++) state->output[c] += weight * value[c];
        }
        return;
    }
    double p = weight / state->sum, dp = dprob(call, head, query, key);
    if (state->stage == 2) {
        state->delta += p * dp;
        return;
    }
    const double *k = row_of(call->k, key, call->dims->kv_heads, kv_head, call->dims->head_dim);
    for (int64_t c = 0; c < call->dims->head_dim; c++) state->dquery[c] += call->args->scale * p * (dp - state->delta) * k[c];
}

// The softmax statistics of one row (m, l), its output (when `output`) and, with `dout`, delta and dq.
static void run_row(const reference_call *call, int64_t head, int64_t query, double *output, double *dquery,
                    row_state *state) {
    *state = (row_state){.maximum = -INFINITY, .output = output, .dquery = dquery};
    for (state->stage = 0; state->stage < (call->dout ? 4 : 2); state->stage++) {
        if (state->stage == 3 && !dquery) break;
        for_each_key(call, head, query, visit_row, state);
    }
}

static parity_error *load_call(const parity_attention_args *args, parity_attention_dims *dims, parity_cpu_values *q,
                               parity_cpu_values *k, parity_cpu_values *v) {
    PARITY_TRY(parity_attention_check(args, dims));
    PARITY_TRY(parity_check_cpu("attention", "query", args->query));
    PARITY_TRY(parity_attention_require_block_mask(args, dims));
    PARITY_TRY(parity_cpu_values_load(args->query, "attention query", q));
    PARITY_TRY(parity_cpu_values_load(args->key, "attention key", k));
    return parity_cpu_values_load(args->value, "attention value", v);
}

static parity_error *reference_forward(const parity_exec *exec, const parity_attention_args *args, parity_saved *saved) {
    (void)exec;
    (void)saved;
    parity_attention_dims dims;
    parity_cpu_values q = {0}, k = {0}, v = {0}, y = {0};
    parity_error *error = load_call(args, &dims, &q, &k, &v);
    if (!error) error = parity_cpu_values_new(dims.tokens * dims.query_heads * dims.value_dim, &y);
    if (!error) {
        reference_call call = {args, &dims, args->block_mask, q.data, k.data, v.data, NULL};
        for (int64_t i = 0; i < dims.tokens; i++)
            for (int64_t h = 0; h < dims.query_heads; h++) {
                double *output = y.data + (i * dims.query_heads + h) * dims.value_dim;
                row_state state;
                run_row(&call, h, i, output, NULL, &state);
                for (int64_t c = 0; c < dims.value_dim; c++) output[c] /= state.sum;
            }
        parity_cpu_values_store(args->output, y.data);
    }
    parity_cpu_values *all[] = {&q, &k, &v, &y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_cpu_values_free(all[i]);
    return error;
}

// Pass 2: dk, dv of key block kb (kv head kv_head) over the transposed lists of query head `head`.
static void key_block_gradients(const reference_call *call, int64_t head, int64_t kv_head, int64_t kb,
                                const row_state *rows, double *dk, double *dv) {
    const parity_block_mask *mask = call->mask;
    const parity_attention_dims *dims = call->dims;
    int64_t mask_head = mask->heads == 1 ? 0 : head, column = mask_head * mask->kv_blocks + kb, n = mask->tokens;
    int32_t partial_count = ints(&mask->q_num_blocks)[column], full_count = ints(&mask->full_q_num_blocks)[column];
    const int32_t *partial = ints(&mask->q_indices) + column * mask->q_blocks;
    const int32_t *full = ints(&mask->full_q_indices) + column * mask->q_blocks;
    for (int32_t e = 0; e < partial_count + full_count; e++) {
        bool is_partial = e < partial_count;
        int64_t qb = is_partial ? partial[e] : full[e - partial_count];
        for (int64_t i = qb * mask->q_block; i < (qb + 1) * mask->q_block && i < n; i++)
            for (int64_t j = kb * mask->kv_block; j < (kb + 1) * mask->kv_block && j < n; j++) {
                if (is_partial && !visible(mask, i, j)) continue;
                const row_state *row = &rows[i * dims->query_heads + head];
                double p = exp(score(call, head, i, j) - row->maximum) / row->sum;
                double ds = p * (dprob(call, head, i, j) - row->delta);
                const double *dout = row_of(call->dout, i, dims->query_heads, head, dims->value_dim);
                const double *q = row_of(call->q, i, dims->query_heads, head, dims->head_dim);
                double *dv_row = dv + (j * dims->kv_heads + kv_head) * dims->value_dim;
                double *dk_row = dk + (j * dims->kv_heads + kv_head) * dims->head_dim;
                for (int64_t c = 0; c < dims->value_dim; c++) dv_row[c] += p * dout[c];
                for (int64_t c = 0; c < dims->head_dim; c++) dk_row[c] += call->args->scale * ds * q[c];
            }
    }
}

static parity_error *reference_backward(const parity_exec *exec, const parity_attention_args *args,
                                        const parity_saved *saved, const parity_attention_grads *grads) {
    (void)exec;
    (void)saved;
    parity_attention_dims dims;
    parity_cpu_values q = {0}, k = {0}, v = {0}, dy = {0}, dq = {0}, dk = {0}, dv = {0};
    row_state *rows = NULL;
    parity_error *error = load_call(args, &dims, &q, &k, &v);
    if (!error) error = parity_attention_check_grads(args, grads);
    if (!error) error = parity_cpu_values_load(grads->doutput, "attention doutput", &dy);
    if (!error) error = parity_cpu_values_new(dims.tokens * dims.query_heads * dims.head_dim, &dq);
    if (!error) error = parity_cpu_values_new(dims.tokens * dims.kv_heads * dims.head_dim, &dk);
    if (!error) error = parity_cpu_values_new(dims.tokens * dims.kv_heads * dims.value_dim, &dv);
    if (!error && !(rows = calloc((size_t)(dims.tokens * dims.query_heads + 1), sizeof *rows)))
        error = PARITY_ERROR(PARITY_ERROR_MEMORY, "attention: block-mask reference backward rows");
    if (!error) {
        reference_call call = {args, &dims, args->block_mask, q.data, k.data, v.data, dy.data};
        for (int64_t i = 0; i < dims.tokens; i++)
            for (int64_t h = 0; h < dims.query_heads; h++)
                run_row(&call, h, i, NULL, dq.data + (i * dims.query_heads + h) * dims.head_dim,
                        &rows[i * dims.query_heads + h]);
        int64_t group = dims.query_heads / dims.kv_heads;
        for (int64_t kv_head = 0; kv_head < dims.kv_heads; kv_head++)
            for (int64_t kb = 0; kb < args->block_mask->kv_blocks; kb++)
                for (int64_t h = kv_head * group; h < (kv_head + 1) * group; h++)
                    key_block_gradients(&call, h, kv_head, kb, rows, dk.data, dv.data);
        if (grads->dquery) parity_cpu_values_store(grads->dquery, dq.data);
        if (grads->dkey) parity_cpu_values_store(grads->dkey, dk.data);
        if (grads->dvalue) parity_cpu_values_store(grads->dvalue, dv.data);
    }
    free(rows);
    parity_cpu_values *all[] = {&q, &k, &v, &dy, &dq, &dk, &dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_cpu_values_free(all[i]);
    return error;
}

const parity_attention_kernels parity_block_mask_reference_kernels = {reference_forward, reference_backward};

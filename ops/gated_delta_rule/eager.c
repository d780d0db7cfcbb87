// eager.c: the reference gated_delta_rule on the CPU (value "eager"): HF's
// torch_recurrent_gated_delta_rule, one token at a time, per document and value head, in the compute
// precision (f32 for f32/bf16 calls, f64 for f64), each tensor op rounded as PyTorch stores it:
//   S = S * exp(g_t); kv = sum_k S[k, :] * k_t[k]; delta = (v_t - kv) * beta_t;
//   S = S + k_t delta^T; o_t = sum_k S[k, :] * q_t[k]          (sums over k in order)
// q and k are prepared (L2 norm, q * scale) by cpu_common.c; the output is rounded once to the
// call's dtype.
//
// Memory choice: the forward saves nothing. The backward recomputes, per document and value head,
// the states S_t of that document (doc_len + 1 matrices of Dk x Dv, one buffer sized for the longest
// document, reused for every head) with
// the very same code, then runs the reverse-time recurrence (autograd's graph of the loop), with
// e = v_t - kv and S' = S_{t-1} * exp(g_t):
//   o_t = S_t^T q_t:         dS_t += q_t do_t^T;   dq_t = S_t do_t
//   S_t = S' + k_t delta^T:  ddelta = dS_t^T k_t;  dk_t = dS_t delta + S' dkv
//   delta = e * beta_t:      de = ddelta * beta_t; dbeta_t = <ddelta, e>; dv_t = de; dkv = -de
//   kv = S'^T k_t:           dS' = dS_t + k_t dkv^T
//   S' = S_{t-1} exp(g_t):   dg_t = <dS', S_{t-1}> exp(g_t);  dS_{t-1} = dS' exp(g_t)
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/gated_delta_rule/cpu_common.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

// One head's view of a token: rows of the prepared q/k and of v, and the scalars g and beta.
typedef struct token_view {
    const double *query, *key, *value; // (Dk), (Dk), (Dv)
    double decay;                      // exp(g_t), rounded
    double beta;
} token_view;

static token_view view_of(const parity_gated_delta_rule_cpu_call *call, int64_t t, int64_t value_head) {
    const parity_gated_delta_rule_sizes *sizes = &call->sizes;
    int64_t key_row = t * sizes->key_heads + parity_gated_delta_rule_key_head(call, value_head);
    int64_t value_row = t * sizes->value_heads + value_head;
    return (token_view){call->prepared_query + key_row * sizes->key_dim, call->prepared_key + key_row * sizes->key_dim,
                        call->value.data + value_row * sizes->value_dim,
                        parity_round_compute(exp(call->g.data[value_row]), call->compute), call->beta.data[value_row]};
}

// S (Dk x Dv) <- S * decay + k delta^T, with delta = (v - S'^T k) * beta; writes innovation = v - kv
// and delta (Dv) for the backward.
static void advance_state(const parity_gated_delta_rule_cpu_call *call, const token_view *token, double *state,
                          double *innovation, double *delta) {
    int64_t key_dim = call->sizes.key_dim, value_dim = call->sizes.value_dim;
    parity_dtype compute = call->compute;
    for (int64_t i = 0; i < key_dim * value_dim; i++) state[i] = parity_round_compute(state[i] * token->decay, compute);
    for (int64_t v = 0; v < value_dim; v++) {
        double memory = 0;
        for (int64_t k = 0; k < key_dim; k++)
            memory = parity_round_compute(memory + parity_round_compute(state[k * value_dim + v] * token->key[k], compute), compute);
        innovation[v] = parity_round_compute(token->value[v] - memory, compute);
        delta[v] = parity_round_compute(innovation[v] * token->beta, compute);
    }
    for (int64_t k = 0; k < key_dim; k++)
        for (int64_t v = 0; v < value_dim; v++)
            state[k * value_dim + v] = parity_round_compute(
                state[k * value_dim + v] + parity_round_compute(token->key[k] * delta[v], compute), compute);
}

// o (Dv) = S^T q
static void read_state(const parity_gated_delta_rule_cpu_call *call, const double *state, const double *query, double *out) {
    int64_t key_dim = call->sizes.key_dim, value_dim = call->sizes.value_dim;
    for (int64_t v = 0; v < value_dim; v++) {
        double sum = 0;
        for (int64_t k = 0; k < key_dim; k++)
            sum = parity_round_compute(sum + parity_round_compute(state[k * value_dim + v] * query[k], call->compute), call->compute);
        out[v] = sum;
    }
}

static parity_error *gated_delta_rule_eager_forward(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                                                    parity_saved *saved) {
    parity_gated_delta_rule_cpu_call call;
    PARITY_TRY(parity_gated_delta_rule_cpu_load(args, &call));
    const parity_gated_delta_rule_sizes *sizes = &call.sizes;
    int64_t state_size = sizes->key_dim * sizes->value_dim;
    parity_cpu_values out = {0};
    parity_error *error = parity_cpu_values_new(sizes->tokens * sizes->value_heads * sizes->value_dim, &out);
    double *state = malloc((size_t)state_size * sizeof *state);
    double *scratch = malloc((size_t)(2 * sizes->value_dim) * sizeof *scratch); // innovation, delta
    if (!error && (!state || !scratch))
        error = PARITY_ERROR(PARITY_ERROR_MEMORY, "gated_delta_rule: state of %lld x %lld", (long long)sizes->key_dim,
                             (long long)sizes->value_dim);
    for (int64_t s = 0; !error && s < call.documents.count; s++) {
        for (int64_t head = 0; head < sizes->value_heads; head++) {
            memset(state, 0, (size_t)state_size * sizeof *state); // every document starts from a zero state
            for (int64_t t = call.documents.offsets[s]; t < call.documents.offsets[s + 1]; t++) {
                token_view token = view_of(&call, t, head);
                advance_state(&call, &token, state, scratch, scratch + sizes->value_dim);
                read_state(&call, state, token.query, out.data + (t * sizes->value_heads + head) * sizes->value_dim);
            }
        }
    }
    if (!error) parity_cpu_values_store(args->output, out.data);
    free(state);
    free(scratch);
    parity_cpu_values_free(&out);
    parity_gated_delta_rule_cpu_free(&call);
    return error;
}

// Per-head buffers of the backward, sized for the longest document.
typedef struct backward_buffers {
    double *states;      // (L + 1, Dk, Dv): S_{-1} = 0, then S after each token
    double *innovations; // (L, Dv): v_t - kv_t
    double *deltas;      // (L, Dv)
    double *dstate;      // (Dk, Dv): gradient of the state after the current token
    double *decayed;     // (Dk, Dv): S' = S_{t-1} * exp(g_t), recomputed
    double *ddelta, *dinnovation; // (Dv)
    double *dkey_update;          // (Dk): the key's gradient through the write k delta^T
} backward_buffers;

static void free_buffers(backward_buffers *buffers) {
    double **all[] = {&buffers->states, &buffers->innovations, &buffers->deltas, &buffers->dstate, &buffers->decayed,
                      &buffers->ddelta, &buffers->dinnovation, &buffers->dkey_update};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
}

static parity_error *alloc_buffers(const parity_gated_delta_rule_cpu_call *call, backward_buffers *buffers) {
    memset(buffers, 0, sizeof *buffers);
    int64_t longest = 0;
    for (int64_t s = 0; s < call->documents.count; s++) {
        int64_t length = call->documents.offsets[s + 1] - call->documents.offsets[s];
        if (length > longest) longest = length;
    }
    int64_t key_dim = call->sizes.key_dim, value_dim = call->sizes.value_dim;
    buffers->states = malloc((size_t)((longest + 1) * key_dim * value_dim) * sizeof(double));
    buffers->innovations = malloc((size_t)((longest > 0 ? longest : 1) * value_dim) * sizeof(double));
    buffers->deltas = malloc((size_t)((longest > 0 ? longest : 1) * value_dim) * sizeof(double));
    buffers->dstate = malloc((size_t)(key_dim * value_dim) * sizeof(double));
    buffers->decayed = malloc((size_t)(key_dim * value_dim) * sizeof(double));
    buffers->ddelta = malloc((size_t)value_dim * sizeof(double));
    buffers->dinnovation = malloc((size_t)value_dim * sizeof(double));
    buffers->dkey_update = malloc((size_t)key_dim * sizeof(double));
    if (!buffers->states || !buffers->innovations || !buffers->deltas || !buffers->dstate || !buffers->decayed ||
        !buffers->ddelta || !buffers->dinnovation || !buffers->dkey_update) {
        free_buffers(buffers);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "gated_delta_rule: backward states for a document of %lld tokens",
                            (long long)longest);
    }
    return NULL;
}

// Gradients of one token, all in the compute precision: dprepared q/k (Dk) for this value head, dv (Dv),
// dg and dbeta.
typedef struct token_gradients {
    double *dquery, *dkey, *dvalue;
    double *dg, *dbeta;
} token_gradients;

// One reverse step at token t (index i in its document): consumes dstate (gradient of S_t) and leaves
// the gradient of S_{t-1} in it.
static void reverse_step(const parity_gated_delta_rule_cpu_call *call, const token_view *token, const double *doutput,
                         int64_t i, backward_buffers *b, token_gradients *out) {
    int64_t key_dim = call->sizes.key_dim, value_dim = call->sizes.value_dim, state_size = key_dim * value_dim;
    parity_dtype compute = call->compute;
    const double *state = b->states + (i + 1) * state_size, *previous = b->states + i * state_size;
    const double *innovation = b->innovations + i * value_dim, *delta = b->deltas + i * value_dim;
    // o = S^T q: dS += q do^T; dq = S do
    for (int64_t k = 0; k < key_dim; k++) {
        double dq = 0;
        for (int64_t v = 0; v < value_dim; v++) {
            b->dstate[k * value_dim + v] = parity_round_compute(
                b->dstate[k * value_dim + v] + parity_round_compute(doutput[v] * token->query[k], compute), compute);
            dq = parity_round_compute(dq + parity_round_compute(doutput[v] * state[k * value_dim + v], compute), compute);
        }
        out->dquery[k] = dq;
    }
    // S = S' + k delta^T: ddelta = dS^T k; dk (write) = dS delta
    for (int64_t v = 0; v < value_dim; v++) {
        double sum = 0;
        for (int64_t k = 0; k < key_dim; k++)
            sum = parity_round_compute(sum + parity_round_compute(b->dstate[k * value_dim + v] * token->key[k], compute), compute);
        b->ddelta[v] = sum;
    }
    for (int64_t k = 0; k < key_dim; k++) {
        double sum = 0;
        for (int64_t v = 0; v < value_dim; v++)
            sum = parity_round_compute(sum + parity_round_compute(b->dstate[k * value_dim + v] * delta[v], compute), compute);
        b->dkey_update[k] = sum;
    }
    // delta = (v - kv) * beta
    double dbeta = 0;
    for (int64_t v = 0; v < value_dim; v++) {
        b->dinnovation[v] = parity_round_compute(b->ddelta[v] * token->beta, compute);
        dbeta = parity_round_compute(dbeta + parity_round_compute(b->ddelta[v] * innovation[v], compute), compute);
        out->dvalue[v] = b->dinnovation[v];
    }
    *out->dbeta = dbeta;
    // kv = S'^T k with S' = S_{t-1} * decay: dS' = dS + k (-dinnov)^T; dk (read) = S' (-dinnov)
    for (int64_t s = 0; s < state_size; s++) b->decayed[s] = parity_round_compute(previous[s] * token->decay, compute);
    for (int64_t k = 0; k < key_dim; k++) {
        double dk_read = 0;
        for (int64_t v = 0; v < value_dim; v++) {
            double dmemory = -b->dinnovation[v];
            b->dstate[k * value_dim + v] = parity_round_compute(
                b->dstate[k * value_dim + v] + parity_round_compute(dmemory * token->key[k], compute), compute);
            dk_read = parity_round_compute(dk_read + parity_round_compute(dmemory * b->decayed[k * value_dim + v], compute), compute);
        }
        out->dkey[k] = parity_round_compute(b->dkey_update[k] + dk_read, compute);
    }
    // S' = S_{t-1} * decay: ddecay = <dS', S_{t-1}>; dg = ddecay * decay; dS_{t-1} = dS' * decay
    double ddecay = 0;
    for (int64_t s = 0; s < state_size; s++) {
        ddecay = parity_round_compute(ddecay + parity_round_compute(b->dstate[s] * previous[s], compute), compute);
        b->dstate[s] = parity_round_compute(b->dstate[s] * token->decay, compute);
    }
    *out->dg = parity_round_compute(ddecay * token->decay, compute);
}

static parity_error *gated_delta_rule_eager_backward(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                                                     const parity_saved *saved,
                                                     const parity_gated_delta_rule_grads *grads) {
    parity_gated_delta_rule_cpu_call call;
    PARITY_TRY(parity_gated_delta_rule_cpu_load(args, &call));
    parity_error *error = parity_gated_delta_rule_check_grads(args, grads);
    if (error) {
        parity_gated_delta_rule_cpu_free(&call);
        return error;
    }
    const parity_gated_delta_rule_sizes *sizes = &call.sizes;
    int64_t tokens = sizes->tokens, heads = sizes->value_heads, key_dim = sizes->key_dim, value_dim = sizes->value_dim;
    int64_t state_size = key_dim * value_dim;
    parity_cpu_values doutput = {0}, dquery = {0}, dkey = {0}, dvalue = {0}, dg = {0}, dbeta = {0};
    backward_buffers buffers = {0};
    error = parity_cpu_values_load(grads->doutput, "gated_delta_rule doutput", &doutput);
    if (!error) error = parity_cpu_values_new(tokens * heads * key_dim, &dquery); // per value head
    if (!error) error = parity_cpu_values_new(tokens * heads * key_dim, &dkey);   // per value head
    if (!error) error = parity_cpu_values_new(tokens * heads * value_dim, &dvalue);
    if (!error) error = parity_cpu_values_new(tokens * heads, &dg);
    if (!error) error = parity_cpu_values_new(tokens * heads, &dbeta);
    if (!error) error = alloc_buffers(&call, &buffers);
    for (int64_t s = 0; !error && s < call.documents.count; s++) {
        int64_t start = call.documents.offsets[s], length = call.documents.offsets[s + 1] - start;
        for (int64_t head = 0; head < heads; head++) {
            // recompute the states of this document, exactly as the forward did
            memset(buffers.states, 0, (size_t)state_size * sizeof(double));
            for (int64_t i = 0; i < length; i++) {
                token_view token = view_of(&call, start + i, head);
                double *next = buffers.states + (i + 1) * state_size;
                memcpy(next, next - state_size, (size_t)state_size * sizeof(double));
                advance_state(&call, &token, next, buffers.innovations + i * value_dim, buffers.deltas + i * value_dim);
            }
            memset(buffers.dstate, 0, (size_t)state_size * sizeof(double)); // nothing flows in from the next document
            for (int64_t i = length - 1; i >= 0; i--) {
                int64_t row = (start + i) * heads + head;
                token_view token = view_of(&call, start + i, head);
                token_gradients out = {dquery.data + row * key_dim, dkey.data + row * key_dim,
                                       dvalue.data + row * value_dim, dg.data + row, dbeta.data + row};
                reverse_step(&call, &token, doutput.data + row * value_dim, i, &buffers, &out);
            }
        }
    }
    if (!error) error = parity_gated_delta_rule_cpu_store_qk_grads(args, grads, &call, dquery.data, dkey.data);
    if (!error) {
        if (grads->dvalue) parity_cpu_values_store(grads->dvalue, dvalue.data);
        if (grads->dg) parity_cpu_values_store(grads->dg, dg.data);
        if (grads->dbeta) parity_cpu_values_store(grads->dbeta, dbeta.data);
    }
    free_buffers(&buffers);
    parity_cpu_values_free(&doutput);
    parity_cpu_values_free(&dquery);
    parity_cpu_values_free(&dkey);
    parity_cpu_values_free(&dvalue);
    parity_cpu_values_free(&dg);
    parity_cpu_values_free(&dbeta);
    parity_gated_delta_rule_cpu_free(&call);
    return error;
}

static const parity_gated_delta_rule_kernels gated_delta_rule_eager_kernels = {gated_delta_rule_eager_forward,
                                                                               gated_delta_rule_eager_backward};

PARITY_BACKEND_REGISTRATION(gated_delta_rule, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_GATED_DELTA_RULE,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        // Head-local over whole documents, so it would be safe under Ulysses (each rank holds full sequences
        // of its heads); not flagged so until multi-rank code exists to test it (test_capability_claims.c).
        .capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &gated_delta_rule_eager_kernels,
        .description = "reference gated delta rule, recurrent form (HF torch_recurrent_gated_delta_rule), packed "
                       "documents, grouped value heads, f64/f32/bf16",
    });
}

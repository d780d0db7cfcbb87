// chunked.c: the gated delta rule in chunks (value "fla"): the algorithm of flash-linear-attention's
// chunk_gated_delta_rule (and HF torch_chunk_gated_delta_rule), on the CPU. The same math as the
// recurrent eager.c, regrouped: per document and value head, tokens are cut into chunks of C tokens
// starting at the document's first token (cu_seqlens: no chunk and no state crosses a document), and
// one state S (Dk x Dv) is carried from chunk to chunk. Within a chunk of L <= C tokens, with local
// cumulative decays G_i = g_0 + ... + g_i (fla's chunk_local_cumsum):
//   Dm[i][j] = exp(G_i - G_j)  (j <= i)                        decay from token j to token i
//   A[i][j]  = beta_i (k_i . k_j) Dm[i][j]  (j < i)              strictly lower (L x L)
//   T        = (I + A)^-1                                        the UT transform (fla's solve_tril)
//   w        = T diag(beta exp(G)) K,  u = T diag(beta) V         the WY representation (L x Dk, L x Dv)
//   delta    = u - w S                                           the delta-rule writes of the chunk (L x Dv)
//   O_i      = exp(G_i) S^T q_i + sum_{j<=i} (q_i . k_j) Dm[i][j] delta_j
//   S'       = exp(G_{L-1}) S + sum_j Dm[L-1][j] k_j delta_j^T
// (Derivation: unrolling S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T over the
// chunk gives (I + A) delta = diag(beta) V - diag(beta exp(G)) K S, hence delta = u - w S.)
// q and k are prepared (L2 norm, q * scale) by cpu_common.c. Arithmetic runs in the compute precision
// (f64 for f64 calls, f32 otherwise, each operation rounded), the output is rounded once.
//
// Memory choice: the forward saves nothing. The backward reruns the forward over a document to get
// the state at every chunk start ((chunks + 1) matrices of Dk x Dv), then walks the chunks backwards,
// recomputing each chunk's intermediates from its start state, carrying dS from chunk to chunk. The
// reverse of each step above:
//   ddelta_j = sum_{i>=j} P[i][j] dO_i + Dm[L-1][j] dS'^T k_j      (P[i][j] = (q_i . k_j) Dm[i][j])
//   dS       = sum_i exp(G_i) q_i dO_i^T + exp(G_{L-1}) dS' - w^T ddelta
//   dw = -ddelta S^T, du = ddelta;  dT = dw Wb^T + du Ub^T;  dA = -(T^T dT T^T) strictly lower
//   dWb = T^T dw, dUb = T^T du;  then the products that built Wb, Ub, A, P and Dm, and finally
//   dg_j = sum_{i>=j} dG_i (the reverse of the cumulative sum).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/gated_delta_rule/cpu_common.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

// The inputs of one chunk of one value head, gathered contiguously, and everything derived from them.
typedef struct chunk_work {
    int64_t capacity, key_dim, value_dim; // C, Dk, Dv
    parity_dtype compute;
    int64_t length;                       // L of the current chunk
    double *query, *key;                  // (C, Dk) prepared q (scaled), prepared k
    double *value;                        // (C, Dv)
    double *g, *beta;                     // (C)
    double *cumulative, *decay;           // (C): G_i and exp(G_i)
    double *decay_matrix;                 // (C, C): Dm[i][j] = exp(G_i - G_j), j <= i, else 0
    double *key_key, *query_key;          // (C, C): k_i . k_j (j < i), q_i . k_j (j <= i)
    double *solve;                        // (C, C): T = (I + A)^-1, unit lower triangular
    double *weighted_key, *weighted_value; // (C, Dk) Wb = beta exp(G) k; (C, Dv) Ub = beta v
    double *w, *u;                        // (C, Dk), (C, Dv)
    double *delta;                        // (C, Dv)
    // backward only
    double *doutput, *ddelta, *dw, *du;   // (C, Dv), (C, Dv), (C, Dk), (C, Dv)
    double *dquery, *dkey, *dvalue;       // (C, Dk), (C, Dk), (C, Dv)
    double *dg, *dbeta, *ddecay, *dcumulative; // (C)
    double *dproduct, *ddecay_matrix, *dsolve, *dstrict, *scratch; // (C, C)
    double *dweighted_key, *dweighted_value; // (C, Dk), (C, Dv)
    double *state_doutput;                // (C, Dk): S dO_i
    double *dstate_previous;              // (Dk, Dv)
} chunk_work;

#define R(x) parity_round_compute((x), work->compute)

static void work_free(chunk_work *work) {
    double **all[] = {&work->query, &work->key, &work->value, &work->g, &work->beta, &work->cumulative, &work->decay,
                      &work->decay_matrix, &work->key_key, &work->query_key, &work->solve, &work->weighted_key,
                      &work->weighted_value, &work->w, &work->u, &work->delta, &work->doutput, &work->ddelta, &work->dw,
                      &work->du, &work->dquery, &work->dkey, &work->dvalue, &work->dg, &work->dbeta, &work->ddecay,
                      &work->dcumulative, &work->dproduct, &work->ddecay_matrix, &work->dsolve, &work->dstrict,
                      &work->scratch, &work->dweighted_key, &work->dweighted_value, &work->state_doutput,
                      &work->dstate_previous};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
}

static int64_t longest_document(const parity_gated_delta_rule_cpu_call *call);

static parity_error *work_alloc(const parity_gated_delta_rule_cpu_call *call, bool backward, chunk_work *work) {
    memset(work, 0, sizeof *work);
    // No chunk is longer than the longest document: a chunk size past it only wastes (C x C) buffers.
    int64_t longest = longest_document(call), c = call->sizes.chunk_size < longest ? call->sizes.chunk_size : longest;
    if (c < 1) c = 1;
    int64_t dk = call->sizes.key_dim, dv = call->sizes.value_dim;
    work->capacity = c;
    work->key_dim = dk;
    work->value_dim = dv;
    work->compute = call->compute;
    bool failed = false;
#define ALLOC(field, count) (failed |= !(work->field = calloc((size_t)(count), sizeof(double))))
    ALLOC(query, c * dk), ALLOC(key, c * dk), ALLOC(value, c * dv), ALLOC(g, c), ALLOC(beta, c);
    ALLOC(cumulative, c), ALLOC(decay, c), ALLOC(decay_matrix, c * c), ALLOC(key_key, c * c), ALLOC(query_key, c * c);
    ALLOC(solve, c * c), ALLOC(weighted_key, c * dk), ALLOC(weighted_value, c * dv), ALLOC(w, c * dk), ALLOC(u, c * dv);
    ALLOC(delta, c * dv);
    if (backward) {
        ALLOC(doutput, c * dv), ALLOC(ddelta, c * dv), ALLOC(dw, c * dk), ALLOC(du, c * dv), ALLOC(dquery, c * dk);
        ALLOC(dkey, c * dk), ALLOC(dvalue, c * dv), ALLOC(dg, c), ALLOC(dbeta, c), ALLOC(ddecay, c), ALLOC(dcumulative, c);
        ALLOC(dproduct, c * c), ALLOC(ddecay_matrix, c * c), ALLOC(dsolve, c * c), ALLOC(dstrict, c * c), ALLOC(scratch, c * c);
        ALLOC(dweighted_key, c * dk), ALLOC(dweighted_value, c * dv), ALLOC(state_doutput, c * dk);
        ALLOC(dstate_previous, dk * dv);
    }
#undef ALLOC
    if (failed) {
        work_free(work);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "gated_delta_rule fla: buffers for chunks of %lld tokens (Dk %lld, Dv %lld)",
                            (long long)c, (long long)dk, (long long)dv);
    }
    return NULL;
}

// sum_i a[i * stride_a] * b[i * stride_b], each product and partial sum rounded in order.
static double dot(const chunk_work *work, const double *a, int64_t stride_a, const double *b, int64_t stride_b, int64_t n) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum = R(sum + R(a[i * stride_a] * b[i * stride_b]));
    return sum;
}

// Copies the chunk [start, start + length) of value head `head` into the work buffers.
static void gather(const parity_gated_delta_rule_cpu_call *call, int64_t head, int64_t start, int64_t length, chunk_work *work) {
    const parity_gated_delta_rule_sizes *sizes = &call->sizes;
    int64_t dk = sizes->key_dim, dv = sizes->value_dim, key_head = parity_gated_delta_rule_key_head(call, head);
    work->length = length;
    for (int64_t i = 0; i < length; i++) {
        int64_t t = start + i, key_row = t * sizes->key_heads + key_head, value_row = t * sizes->value_heads + head;
        memcpy(work->query + i * dk, call->prepared_query + key_row * dk, (size_t)dk * sizeof(double));
        memcpy(work->key + i * dk, call->prepared_key + key_row * dk, (size_t)dk * sizeof(double));
        memcpy(work->value + i * dv, call->value.data + value_row * dv, (size_t)dv * sizeof(double));
        work->g[i] = call->g.data[value_row];
        work->beta[i] = call->beta.data[value_row];
    }
}

// Everything of a chunk that does not depend on the incoming state: G, exp(G), Dm, k.k, q.k, T, Wb, Ub, w, u.
static void prepare_chunk(chunk_work *work) {
    int64_t n = work->length, c = work->capacity, dk = work->key_dim, dv = work->value_dim;
    for (int64_t i = 0; i < n; i++) {
        work->cumulative[i] = i ? R(work->cumulative[i - 1] + work->g[i]) : work->g[i];
        work->decay[i] = R(exp(work->cumulative[i]));
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            bool lower = j <= i;
            work->decay_matrix[i * c + j] = lower ? R(exp(R(work->cumulative[i] - work->cumulative[j]))) : 0;
            work->query_key[i * c + j] = lower ? dot(work, work->query + i * dk, 1, work->key + j * dk, 1, dk) : 0;
            work->key_key[i * c + j] = j < i ? dot(work, work->key + i * dk, 1, work->key + j * dk, 1, dk) : 0;
        }
    // T = (I + A)^-1 by forward substitution: T[i][j] = delta_ij - sum_{m=j}^{i-1} A[i][m] T[m][j]
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < n; j++) work->solve[i * c + j] = 0;
        work->solve[i * c + i] = 1;
        for (int64_t j = 0; j < i; j++) {
            double sum = 0;
            for (int64_t m = j; m < i; m++) {
                double a = R(R(work->beta[i] * work->key_key[i * c + m]) * work->decay_matrix[i * c + m]);
                sum = R(sum + R(a * work->solve[m * c + j]));
            }
            work->solve[i * c + j] = -sum;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        double key_scale = R(work->beta[i] * work->decay[i]);
        for (int64_t k = 0; k < dk; k++) work->weighted_key[i * dk + k] = R(key_scale * work->key[i * dk + k]);
        for (int64_t v = 0; v < dv; v++) work->weighted_value[i * dv + v] = R(work->beta[i] * work->value[i * dv + v]);
    }
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = 0; k < dk; k++) work->w[i * dk + k] = dot(work, work->solve + i * c, 1, work->weighted_key + k, dk, i + 1);
        for (int64_t v = 0; v < dv; v++) work->u[i * dv + v] = dot(work, work->solve + i * c, 1, work->weighted_value + v, dv, i + 1);
    }
}

// delta = u - w S; when `output` (L, Dv) is given, O; when `next` (Dk, Dv) is given, the state after the chunk.
static void apply_chunk(chunk_work *work, const double *state, double *output, double *next) {
    int64_t n = work->length, c = work->capacity, dk = work->key_dim, dv = work->value_dim;
    for (int64_t i = 0; i < n; i++)
        for (int64_t v = 0; v < dv; v++)
            work->delta[i * dv + v] = R(work->u[i * dv + v] - dot(work, work->w + i * dk, 1, state + v, dv, dk));
    if (output)
        for (int64_t i = 0; i < n; i++)
            for (int64_t v = 0; v < dv; v++) {
                double sum = R(work->decay[i] * dot(work, work->query + i * dk, 1, state + v, dv, dk));
                for (int64_t j = 0; j <= i; j++)
                    sum = R(sum + R(R(work->query_key[i * c + j] * work->decay_matrix[i * c + j]) * work->delta[j * dv + v]));
                output[i * dv + v] = sum;
            }
    if (next) {
        const double *last_row = work->decay_matrix + (n - 1) * c;
        double last_decay = work->decay[n - 1];
        for (int64_t k = 0; k < dk; k++)
            for (int64_t v = 0; v < dv; v++) {
                double sum = R(last_decay * state[k * dv + v]);
                for (int64_t j = 0; j < n; j++)
                    sum = R(sum + R(R(last_row[j] * work->key[j * dk + k]) * work->delta[j * dv + v]));
                next[k * dv + v] = sum;
            }
    }
}

// The number of chunks of a document of `length` tokens.
static int64_t chunk_count(int64_t length, int64_t chunk) { return (length + chunk - 1) / chunk; }

static int64_t longest_document(const parity_gated_delta_rule_cpu_call *call) {
    int64_t longest = 0;
    for (int64_t s = 0; s < call->documents.count; s++) {
        int64_t length = call->documents.offsets[s + 1] - call->documents.offsets[s];
        if (length > longest) longest = length;
    }
    return longest;
}

static parity_error *gated_delta_rule_chunked_forward(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                                                      parity_saved *saved) {
    parity_gated_delta_rule_cpu_call call;
    PARITY_TRY(parity_gated_delta_rule_cpu_load(args, &call));
    const parity_gated_delta_rule_sizes *sizes = &call.sizes;
    int64_t dk = sizes->key_dim, dv = sizes->value_dim, chunk = sizes->chunk_size, heads = sizes->value_heads;
    parity_cpu_values out = {0};
    chunk_work work;
    double *state = NULL, *next = NULL, *rows = NULL;
    parity_error *error = parity_cpu_values_new(sizes->tokens * heads * dv, &out);
    if (!error) error = work_alloc(&call, false, &work);
    else memset(&work, 0, sizeof work);
    if (!error) {
        state = malloc((size_t)(dk * dv) * sizeof *state);
        next = malloc((size_t)(dk * dv) * sizeof *next);
        rows = malloc((size_t)(work.capacity * dv) * sizeof *rows); // at most one chunk of outputs
        if (!state || !next || !rows)
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "gated_delta_rule fla: state of %lld x %lld", (long long)dk, (long long)dv);
    }
    for (int64_t s = 0; !error && s < call.documents.count; s++) {
        int64_t start = call.documents.offsets[s], end = call.documents.offsets[s + 1];
        for (int64_t head = 0; head < heads; head++) {
            memset(state, 0, (size_t)(dk * dv) * sizeof *state); // every document starts from a zero state
            for (int64_t begin = start; begin < end; begin += chunk) {
                int64_t length = end - begin < chunk ? end - begin : chunk;
                gather(&call, head, begin, length, &work);
                prepare_chunk(&work);
                apply_chunk(&work, state, rows, next);
                for (int64_t i = 0; i < length; i++)
                    memcpy(out.data + ((begin + i) * heads + head) * dv, rows + i * dv, (size_t)dv * sizeof(double));
                double *swap = state;
                state = next;
                next = swap;
            }
        }
    }
    if (!error) parity_cpu_values_store(args->output, out.data);
    free(state);
    free(next);
    free(rows);
    work_free(&work);
    parity_cpu_values_free(&out);
    parity_gated_delta_rule_cpu_free(&call);
    return error;
}

// The reverse of one chunk. In: work prepared for the chunk with `state` (S at its start) and
// work->doutput; dstate holds dS' (the gradient of the state after the chunk) and receives dS.
// Out: work->dquery, dkey, dvalue, dg, dbeta for the chunk's tokens.
static void reverse_chunk(chunk_work *work, const double *state, double *dstate) {
    int64_t n = work->length, c = work->capacity, dk = work->key_dim, dv = work->value_dim;
    apply_chunk(work, state, NULL, NULL); // delta
    const double *last_row = work->decay_matrix + (n - 1) * c;
    double last_decay = work->decay[n - 1];
    memset(work->dquery, 0, (size_t)(n * dk) * sizeof(double));
    memset(work->dkey, 0, (size_t)(n * dk) * sizeof(double));
    for (int64_t i = 0; i < n; i++) work->dbeta[i] = work->ddecay[i] = work->dcumulative[i] = 0;
    for (int64_t i = 0; i < n * c; i++) work->ddecay_matrix[i] = work->dproduct[i] = 0;

    // P[i][j] = (q_i . k_j) Dm[i][j]; ddelta_j = sum_{i>=j} P[i][j] dO_i + Dm[L-1][j] dS'^T k_j
    for (int64_t j = 0; j < n; j++)
        for (int64_t v = 0; v < dv; v++) {
            double sum = R(last_row[j] * dot(work, work->key + j * dk, 1, dstate + v, dv, dk));
            for (int64_t i = j; i < n; i++)
                sum = R(sum + R(R(work->query_key[i * c + j] * work->decay_matrix[i * c + j]) * work->doutput[i * dv + v]));
            work->ddelta[j * dv + v] = sum;
        }
    // dP[i][j] = dO_i . delta_j -> dq_i, dk_j and dDm[i][j]
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            double dp = dot(work, work->doutput + i * dv, 1, work->delta + j * dv, 1, dv);
            double through_decay = R(dp * work->decay_matrix[i * c + j]);
            for (int64_t k = 0; k < dk; k++) {
                work->dquery[i * dk + k] = R(work->dquery[i * dk + k] + R(through_decay * work->key[j * dk + k]));
                work->dkey[j * dk + k] = R(work->dkey[j * dk + k] + R(through_decay * work->query[i * dk + k]));
            }
            work->ddecay_matrix[i * c + j] = R(work->ddecay_matrix[i * c + j] + R(dp * work->query_key[i * c + j]));
        }
    // inter-chunk read exp(G_i) S^T q_i: dq_i += exp(G_i) S dO_i; dexp(G_i) = q_i . (S dO_i)
    for (int64_t i = 0; i < n; i++) {
        for (int64_t k = 0; k < dk; k++)
            work->state_doutput[i * dk + k] = dot(work, state + k * dv, 1, work->doutput + i * dv, 1, dv);
        for (int64_t k = 0; k < dk; k++)
            work->dquery[i * dk + k] = R(work->dquery[i * dk + k] + R(work->decay[i] * work->state_doutput[i * dk + k]));
        work->ddecay[i] = R(work->ddecay[i] + dot(work, work->query + i * dk, 1, work->state_doutput + i * dk, 1, dk));
    }
    // the write Dm[L-1][j] k_j delta_j^T into S': dk_j += Dm[L-1][j] dS' delta_j; dDm[L-1][j] += k_j . (dS' delta_j)
    for (int64_t j = 0; j < n; j++) {
        double through = 0;
        for (int64_t k = 0; k < dk; k++) {
            double row = dot(work, dstate + k * dv, 1, work->delta + j * dv, 1, dv);
            work->dkey[j * dk + k] = R(work->dkey[j * dk + k] + R(last_row[j] * row));
            through = R(through + R(work->key[j * dk + k] * row));
        }
        work->ddecay_matrix[(n - 1) * c + j] = R(work->ddecay_matrix[(n - 1) * c + j] + through);
    }
    // exp(G_{L-1}) S: dexp(G_{L-1}) += <dS', S>
    work->ddecay[n - 1] = R(work->ddecay[n - 1] + dot(work, dstate, 1, state, 1, dk * dv));
    // dS = sum_i exp(G_i) q_i dO_i^T + exp(G_{L-1}) dS' - w^T ddelta   (into dstate_previous, then dstate)
    for (int64_t k = 0; k < dk; k++)
        for (int64_t v = 0; v < dv; v++) {
            double sum = R(last_decay * dstate[k * dv + v]);
            for (int64_t i = 0; i < n; i++) {
                sum = R(sum + R(R(work->decay[i] * work->query[i * dk + k]) * work->doutput[i * dv + v]));
                sum = R(sum - R(work->w[i * dk + k] * work->ddelta[i * dv + v]));
            }
            work->dstate_previous[k * dv + v] = sum;
        }
    memcpy(dstate, work->dstate_previous, (size_t)(dk * dv) * sizeof(double));
    // delta = u - w S: du = ddelta, dw = -ddelta S^T
    for (int64_t i = 0; i < n; i++) {
        for (int64_t v = 0; v < dv; v++) work->du[i * dv + v] = work->ddelta[i * dv + v];
        for (int64_t k = 0; k < dk; k++) work->dw[i * dk + k] = -dot(work, work->ddelta + i * dv, 1, state + k * dv, 1, dv);
    }
    // w = T Wb, u = T Ub: dT[i][m] = dw_i . Wb_m + du_i . Ub_m (m < i: T's diagonal is constant);
    // dWb_m = sum_{i>=m} T[i][m] dw_i, dUb_m likewise
    for (int64_t i = 0; i < n; i++)
        for (int64_t m = 0; m < n; m++)
            work->dsolve[i * c + m] = m < i ? R(dot(work, work->dw + i * dk, 1, work->weighted_key + m * dk, 1, dk) +
                                                dot(work, work->du + i * dv, 1, work->weighted_value + m * dv, 1, dv))
                                            : 0;
    for (int64_t m = 0; m < n; m++) {
        for (int64_t k = 0; k < dk; k++)
            work->dweighted_key[m * dk + k] = dot(work, work->solve + m * c + m, c, work->dw + m * dk + k, dk, n - m);
        for (int64_t v = 0; v < dv; v++)
            work->dweighted_value[m * dv + v] = dot(work, work->solve + m * c + m, c, work->du + m * dv + v, dv, n - m);
    }
    // T = (I + A)^-1: dA = -(T^T dT T^T), strictly lower. scratch = T^T dT: scratch[a][j] = sum_{i>=a} T[i][a] dT[i][j]
    for (int64_t a = 0; a < n; a++)
        for (int64_t j = 0; j < n; j++) work->scratch[a * c + j] = dot(work, work->solve + a * c + a, c, work->dsolve + a * c + j, c, n - a);
    for (int64_t a = 0; a < n; a++)
        for (int64_t b = 0; b < n; b++)
            work->dstrict[a * c + b] = b < a ? -dot(work, work->scratch + a * c, 1, work->solve + b * c, 1, b + 1) : 0;
    // Wb_m = beta_m exp(G_m) k_m; Ub_m = beta_m v_m
    for (int64_t m = 0; m < n; m++) {
        double through_key = dot(work, work->key + m * dk, 1, work->dweighted_key + m * dk, 1, dk);
        double key_scale = R(work->beta[m] * work->decay[m]);
        work->dbeta[m] = R(work->dbeta[m] + R(work->decay[m] * through_key));
        work->ddecay[m] = R(work->ddecay[m] + R(work->beta[m] * through_key));
        for (int64_t k = 0; k < dk; k++)
            work->dkey[m * dk + k] = R(work->dkey[m * dk + k] + R(key_scale * work->dweighted_key[m * dk + k]));
        work->dbeta[m] = R(work->dbeta[m] + dot(work, work->value + m * dv, 1, work->dweighted_value + m * dv, 1, dv));
        for (int64_t v = 0; v < dv; v++) work->dvalue[m * dv + v] = R(work->beta[m] * work->dweighted_value[m * dv + v]);
    }
    // A[a][b] = beta_a (k_a . k_b) Dm[a][b], b < a
    for (int64_t a = 0; a < n; a++)
        for (int64_t b = 0; b < a; b++) {
            double da = work->dstrict[a * c + b], kk = work->key_key[a * c + b], decay = work->decay_matrix[a * c + b];
            work->dbeta[a] = R(work->dbeta[a] + R(R(da * kk) * decay));
            double dkk = R(R(da * work->beta[a]) * decay);
            for (int64_t k = 0; k < dk; k++) {
                work->dkey[a * dk + k] = R(work->dkey[a * dk + k] + R(dkk * work->key[b * dk + k]));
                work->dkey[b * dk + k] = R(work->dkey[b * dk + k] + R(dkk * work->key[a * dk + k]));
            }
            work->ddecay_matrix[a * c + b] = R(work->ddecay_matrix[a * c + b] + R(R(da * work->beta[a]) * kk));
        }
    // Dm[i][j] = exp(G_i - G_j): dG_i += dDm Dm, dG_j -= dDm Dm; exp(G_i): dG_i += dexp(G_i) exp(G_i)
    for (int64_t i = 0; i < n; i++) {
        work->dcumulative[i] = R(work->dcumulative[i] + R(work->ddecay[i] * work->decay[i]));
        for (int64_t j = 0; j < i; j++) { // the diagonal's exp(0) contributes +x - x
            double through = R(work->ddecay_matrix[i * c + j] * work->decay_matrix[i * c + j]);
            work->dcumulative[i] = R(work->dcumulative[i] + through);
            work->dcumulative[j] = R(work->dcumulative[j] - through);
        }
    }
    // G = cumsum(g): dg_j = sum_{i>=j} dG_i
    double running = 0;
    for (int64_t j = n - 1; j >= 0; j--) {
        running = R(running + work->dcumulative[j]);
        work->dg[j] = running;
    }
}

static parity_error *gated_delta_rule_chunked_backward(const parity_exec *exec,
                                                       const parity_gated_delta_rule_args *args,
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
    int64_t tokens = sizes->tokens, heads = sizes->value_heads, dk = sizes->key_dim, dv = sizes->value_dim;
    int64_t chunk = sizes->chunk_size, state_size = dk * dv;
    int64_t most_chunks = chunk_count(longest_document(&call), chunk);
    parity_cpu_values doutput = {0}, dquery = {0}, dkey = {0}, dvalue = {0}, dg = {0}, dbeta = {0};
    chunk_work work;
    memset(&work, 0, sizeof work);
    double *states = NULL, *dstate = NULL;
    error = parity_cpu_values_load(grads->doutput, "gated_delta_rule doutput", &doutput);
    if (!error) error = parity_cpu_values_new(tokens * heads * dk, &dquery); // per value head
    if (!error) error = parity_cpu_values_new(tokens * heads * dk, &dkey);   // per value head
    if (!error) error = parity_cpu_values_new(tokens * heads * dv, &dvalue);
    if (!error) error = parity_cpu_values_new(tokens * heads, &dg);
    if (!error) error = parity_cpu_values_new(tokens * heads, &dbeta);
    if (!error) error = work_alloc(&call, true, &work);
    if (!error) {
        states = malloc((size_t)((most_chunks + 1) * state_size) * sizeof *states);
        dstate = malloc((size_t)state_size * sizeof *dstate);
        if (!states || !dstate)
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "gated_delta_rule fla: %lld chunk states of %lld x %lld",
                                 (long long)most_chunks + 1, (long long)dk, (long long)dv);
    }
    for (int64_t s = 0; !error && s < call.documents.count; s++) {
        int64_t start = call.documents.offsets[s], end = call.documents.offsets[s + 1];
        int64_t chunks = chunk_count(end - start, chunk);
        for (int64_t head = 0; head < heads; head++) {
            // the state at every chunk start, exactly as the forward computed it
            memset(states, 0, (size_t)state_size * sizeof *states);
            for (int64_t index = 0; index + 1 < chunks; index++) {
                int64_t begin = start + index * chunk;
                gather(&call, head, begin, chunk, &work);
                prepare_chunk(&work);
                apply_chunk(&work, states + index * state_size, NULL, states + (index + 1) * state_size);
            }
            memset(dstate, 0, (size_t)state_size * sizeof *dstate); // nothing flows in from the next document
            for (int64_t index = chunks - 1; index >= 0; index--) {
                int64_t begin = start + index * chunk, length = end - begin < chunk ? end - begin : chunk;
                gather(&call, head, begin, length, &work);
                for (int64_t i = 0; i < length; i++)
                    memcpy(work.doutput + i * dv, doutput.data + ((begin + i) * heads + head) * dv, (size_t)dv * sizeof(double));
                prepare_chunk(&work);
                reverse_chunk(&work, states + index * state_size, dstate);
                for (int64_t i = 0; i < length; i++) {
                    int64_t row = (begin + i) * heads + head;
                    memcpy(dquery.data + row * dk, work.dquery + i * dk, (size_t)dk * sizeof(double));
                    memcpy(dkey.data + row * dk, work.dkey + i * dk, (size_t)dk * sizeof(double));
                    memcpy(dvalue.data + row * dv, work.dvalue + i * dv, (size_t)dv * sizeof(double));
                    dg.data[row] = work.dg[i];
                    dbeta.data[row] = work.dbeta[i];
                }
            }
        }
    }
    if (!error) error = parity_gated_delta_rule_cpu_store_qk_grads(args, grads, &call, dquery.data, dkey.data);
    if (!error) {
        if (grads->dvalue) parity_cpu_values_store(grads->dvalue, dvalue.data);
        if (grads->dg) parity_cpu_values_store(grads->dg, dg.data);
        if (grads->dbeta) parity_cpu_values_store(grads->dbeta, dbeta.data);
    }
    free(states);
    free(dstate);
    work_free(&work);
    parity_cpu_values_free(&doutput);
    parity_cpu_values_free(&dquery);
    parity_cpu_values_free(&dkey);
    parity_cpu_values_free(&dvalue);
    parity_cpu_values_free(&dg);
    parity_cpu_values_free(&dbeta);
    parity_gated_delta_rule_cpu_free(&call);
    return error;
}

static const parity_gated_delta_rule_kernels gated_delta_rule_chunked_kernels = {gated_delta_rule_chunked_forward,
                                                                                 gated_delta_rule_chunked_backward};

PARITY_BACKEND_REGISTRATION(gated_delta_rule, fla, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_GATED_DELTA_RULE,
        .name = "fla",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        // Chunks start at each document's first token, so chunking depends on the document, never on the batch.
        .capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &gated_delta_rule_chunked_kernels,
        .description = "chunked gated delta rule (flash-linear-attention's WY/UT algorithm, chunk 64 by default), packed "
                       "documents, grouped value heads, f64/f32/bf16",
    });
}

// cpu_common.c: loading, q/k preparation and q/k gradient finishing shared by the CPU
// gated_delta_rule backends (cpu_common.h).
#include "ops/gated_delta_rule/cpu_common.h"

#include <stdlib.h>
#include <string.h>

#include "ops/l2_norm/l2_norm_math.h"

static const double qk_l2norm_eps = 1e-6; // HF: l2norm(x, dim=-1, eps=1e-6) in use_qk_l2norm_in_kernel

void parity_gated_delta_rule_cpu_free(parity_gated_delta_rule_cpu_call *call) {
    parity_cpu_values_free(&call->query);
    parity_cpu_values_free(&call->key);
    parity_cpu_values_free(&call->value);
    parity_cpu_values_free(&call->g);
    parity_cpu_values_free(&call->beta);
    free(call->prepared_query);
    free(call->prepared_key);
    free(call->query_inverse_norm);
    free(call->key_inverse_norm);
    parity_documents_free(&call->documents);
    memset(call, 0, sizeof *call);
}

// x (Dk) -> prepared (Dk): optional L2 norm, then optional * scale; returns the inverse norm (or 0).
static double prepare_row(const double *x, int64_t dim, bool normalize, bool scaled, double scale,
                          parity_dtype compute, double *prepared) {
    double inverse_norm = 0;
    if (normalize) inverse_norm = parity_l2_norm_row_forward(x, dim, qk_l2norm_eps, compute, prepared);
    else memcpy(prepared, x, (size_t)dim * sizeof *prepared);
    if (scaled)
        for (int64_t i = 0; i < dim; i++) prepared[i] = parity_round_compute(prepared[i] * scale, compute);
    return inverse_norm;
}

parity_error *parity_gated_delta_rule_cpu_load(const parity_gated_delta_rule_args *args,
                                               parity_gated_delta_rule_cpu_call *call) {
    memset(call, 0, sizeof *call);
    PARITY_TRY(parity_gated_delta_rule_check(args, &call->sizes));
    const char *names[] = {"query", "key", "value", "g", "beta", "output"};
    const parity_tensor *tensors[] = {args->query, args->key, args->value, args->g, args->beta, args->output};
    for (int i = 0; i < 6; i++) PARITY_TRY(parity_check_cpu("gated_delta_rule", names[i], tensors[i]));
    const parity_gated_delta_rule_sizes *sizes = &call->sizes;
    PARITY_TRY(parity_cu_seqlens_load("gated_delta_rule", args->cu_seqlens, sizes->tokens, &call->documents));
    call->dtype = args->query->dtype;
    call->compute = parity_compute_dtype(call->dtype);
    call->scale = parity_round_compute(sizes->scale, call->compute); // a Python scalar enters as opmath
    call->group = sizes->value_heads / sizes->key_heads;

    int64_t rows = sizes->tokens * sizes->key_heads, dim = sizes->key_dim;
    size_t qk_bytes = (size_t)(rows * dim > 0 ? rows * dim : 1) * sizeof(double);
    size_t norm_bytes = (size_t)(rows > 0 ? rows : 1) * sizeof(double);
    parity_error *error = parity_cpu_values_load(args->query, "gated_delta_rule query", &call->query);
    if (!error) error = parity_cpu_values_load(args->key, "gated_delta_rule key", &call->key);
    if (!error) error = parity_cpu_values_load(args->value, "gated_delta_rule value", &call->value);
    if (!error) error = parity_cpu_values_load(args->g, "gated_delta_rule g", &call->g);
    if (!error) error = parity_cpu_values_load(args->beta, "gated_delta_rule beta", &call->beta);
    if (!error) {
        call->prepared_query = malloc(qk_bytes);
        call->prepared_key = malloc(qk_bytes);
        if (args->use_qk_l2norm) {
            call->query_inverse_norm = malloc(norm_bytes);
            call->key_inverse_norm = malloc(norm_bytes);
        }
        if (!call->prepared_query || !call->prepared_key ||
            (args->use_qk_l2norm && (!call->query_inverse_norm || !call->key_inverse_norm)))
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "gated_delta_rule: preparing q and k (%lld rows)", (long long)rows);
    }
    if (error) {
        parity_gated_delta_rule_cpu_free(call);
        return error;
    }
    for (int64_t row = 0; row < rows; row++) {
        double q_norm = prepare_row(call->query.data + row * dim, dim, args->use_qk_l2norm, true, call->scale,
                                    call->compute, call->prepared_query + row * dim);
        double k_norm = prepare_row(call->key.data + row * dim, dim, args->use_qk_l2norm, false, 0, call->compute,
                                    call->prepared_key + row * dim);
        if (args->use_qk_l2norm) {
            call->query_inverse_norm[row] = q_norm;
            call->key_inverse_norm[row] = k_norm;
        }
    }
    return NULL;
}

// dprepared (N, Hv, Dk) -> d(input) (N, Hk, Dk), following autograd back through HF's graph:
// (* scale) -> l2norm -> .to(f32) (rounds to the input dtype per value head) -> repeat_interleave
// (sums the value heads of a key head, in the compute precision, then stores).
static parity_error *finish_qk_gradient(const parity_gated_delta_rule_cpu_call *call, bool normalized, bool scaled,
                                        const double *input, const double *inverse_norms, const double *dprepared,
                                        parity_tensor *destination) {
    const parity_gated_delta_rule_sizes *sizes = &call->sizes;
    int64_t dim = sizes->key_dim;
    double *row = malloc((size_t)dim * sizeof *row);
    double *sum = malloc((size_t)dim * sizeof *sum);
    if (!row || !sum) {
        free(row);
        free(sum);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "gated_delta_rule: q/k gradient rows of %lld", (long long)dim);
    }
    for (int64_t t = 0; t < sizes->tokens; t++) {
        for (int64_t kh = 0; kh < sizes->key_heads; kh++) {
            for (int64_t i = 0; i < dim; i++) sum[i] = 0;
            const double *x = input + (t * sizes->key_heads + kh) * dim;
            for (int64_t member = 0; member < call->group; member++) {
                int64_t hv = kh * call->group + member;
                const double *d = dprepared + (t * sizes->value_heads + hv) * dim;
                for (int64_t i = 0; i < dim; i++) row[i] = scaled ? parity_round_compute(d[i] * call->scale, call->compute) : d[i];
                if (normalized)
                    parity_l2_norm_row_backward(x, row, dim, inverse_norms[t * sizes->key_heads + kh], call->compute, row);
                for (int64_t i = 0; i < dim; i++)
                    sum[i] = parity_round_compute(sum[i] + parity_round_storage(row[i], call->dtype), call->compute);
            }
            for (int64_t i = 0; i < dim; i++) parity_tensor_set(destination, (t * sizes->key_heads + kh) * dim + i, sum[i]);
        }
    }
    free(row);
    free(sum);
    return NULL;
}

parity_error *parity_gated_delta_rule_cpu_store_qk_grads(const parity_gated_delta_rule_args *args,
                                                         const parity_gated_delta_rule_grads *grads,
                                                         const parity_gated_delta_rule_cpu_call *call,
                                                         const double *dprepared_query, const double *dprepared_key) {
    if (grads->dquery)
        PARITY_TRY(finish_qk_gradient(call, args->use_qk_l2norm, true, call->query.data, call->query_inverse_norm, dprepared_query,
                                      grads->dquery));
    if (grads->dkey)
        PARITY_TRY(finish_qk_gradient(call, args->use_qk_l2norm, false, call->key.data, call->key_inverse_norm,
                                      dprepared_key, grads->dkey));
    return NULL;
}


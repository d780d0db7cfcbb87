// eager.c: the reference load-balancing loss on the CPU (value "eager"), in the order of
// operations of HF's load_balancing_loss_func (see load_balancing_loss.h). The top-k uses the
// probabilities as stored (bf16 for bf16 logits), ties to the lower expert index.
// Saves the probabilities (L * N, E) in the logits' dtype and tokens_per_expert (E).
//
// Backward, with T = L * N rows and c_e = float(dloss * E * tokens_per_expert[e] / T) rounded to
// the logits' dtype (the same for every row):
//   dlogits[n, j] = c_j p[n, j] - p[n, j] sum_i c_i p[n, i]      (softmax backward, routing_math.h:
//   c_j p[n, j] is rounded to the logits' dtype, which makes bf16 match HF bit for bit)
#include <stdlib.h>

#include "ops/core/cpu_math.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/moe_router/routing_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

static parity_error *load_balancing_loss_eager_forward(const parity_exec *exec,
                                                       const parity_load_balancing_loss_args *args,
                                                       parity_saved *saved) {
    int64_t rows, experts, layers;
    PARITY_TRY(parity_load_balancing_loss_check(args, &rows, &experts, &layers));
    PARITY_TRY(parity_check_cpu("load_balancing_loss", "router_logits", args->router_logits));
    PARITY_TRY(parity_check_cpu("load_balancing_loss", "loss", args->loss));
    parity_dtype dtype = args->router_logits->dtype, compute = parity_compute_dtype(dtype);
    int64_t top_k = args->top_k, layer_rows = rows / layers;
    parity_tensor *saved_probabilities, *saved_tokens_per_expert;
    PARITY_TRY(parity_saved_alloc(saved, &saved_probabilities, dtype, PARITY_CPU, PARITY_SHAPE(rows, experts)));
    PARITY_TRY(parity_saved_alloc(saved, &saved_tokens_per_expert, compute, PARITY_CPU, PARITY_SHAPE(experts)));

    parity_cpu_values logits = {0}, probabilities = {0}, counts = {0}, probability_sum = {0}, layer_sum = {0};
    int64_t *chosen = malloc((size_t)top_k * sizeof *chosen);
    parity_error *error = chosen ? NULL : PARITY_ERROR(PARITY_ERROR_MEMORY, "load_balancing_loss: scratch");
    if (!error) error = parity_cpu_values_load(args->router_logits, "load_balancing_loss router_logits", &logits);
    if (!error) error = parity_cpu_values_new(rows * experts, &probabilities);
    if (!error) error = parity_cpu_values_new(experts, &counts);
    if (!error) error = parity_cpu_values_new(experts, &probability_sum);
    if (!error) error = parity_cpu_values_new(experts, &layer_sum);
    if (error) goto done;
    for (int64_t layer = 0; layer < layers; layer++) {
        for (int64_t e = 0; e < experts; e++) layer_sum.data[e] = 0;
        for (int64_t n = layer * layer_rows; n < (layer + 1) * layer_rows; n++) {
            double *p = probabilities.data + n * experts;
            parity_routing_softmax(logits.data + n * experts, experts, dtype, p);
            parity_routing_top_k_sorted(p, experts, top_k, chosen);
            for (int64_t k = 0; k < top_k; k++) counts.data[chosen[k]] += 1; // exact integers
            for (int64_t e = 0; e < experts; e++) layer_sum.data[e] = parity_round_compute(layer_sum.data[e] + p[e], dtype);
        }
        for (int64_t e = 0; e < experts; e++)
            probability_sum.data[e] = parity_round_compute(probability_sum.data[e] + layer_sum.data[e], dtype);
    }
    double total = (double)rows, loss = 0;
    for (int64_t e = 0; e < experts; e++) {
        double tokens_per_expert = parity_round_compute(counts.data[e] / total, dtype);
        double router_prob_per_expert = parity_round_compute(probability_sum.data[e] / total, dtype);
        loss = parity_round_compute(loss + parity_round_compute(tokens_per_expert * router_prob_per_expert, dtype), dtype);
        parity_tensor_set(saved_tokens_per_expert, e, tokens_per_expert);
    }
    parity_tensor_set(args->loss, 0, parity_round_compute(loss * (double)experts, dtype));
    parity_cpu_values_store(saved_probabilities, probabilities.data);
done:
    parity_cpu_values_free(&logits);
    parity_cpu_values_free(&probabilities);
    parity_cpu_values_free(&counts);
    parity_cpu_values_free(&probability_sum);
    parity_cpu_values_free(&layer_sum);
    free(chosen);
    return error;
}

static parity_error *load_balancing_loss_eager_backward(const parity_exec *exec,
                                                        const parity_load_balancing_loss_args *args,
                                                        const parity_saved *saved,
                                                        const parity_load_balancing_loss_grads *grads) {
    int64_t rows, experts, layers;
    PARITY_TRY(parity_load_balancing_loss_check(args, &rows, &experts, &layers));
    PARITY_TRY(parity_load_balancing_loss_check_grads(args, grads));
    if (!grads->drouter_logits) return NULL;
    const parity_tensor *saved_probabilities, *saved_tokens_per_expert;
    PARITY_TRY(parity_saved_get(saved, 0, &saved_probabilities));
    PARITY_TRY(parity_saved_get(saved, 1, &saved_tokens_per_expert));
    parity_dtype dtype = args->router_logits->dtype;

    parity_cpu_values probabilities, dprobability = {0}, dlogits = {0};
    PARITY_TRY(parity_cpu_values_load(saved_probabilities, "load_balancing_loss saved probabilities", &probabilities));
    parity_error *error = parity_cpu_values_new(experts, &dprobability);
    if (!error) error = parity_cpu_values_new(rows * experts, &dlogits);
    if (error) goto done;
    double total = (double)rows;
    double dsum = parity_round_compute(parity_tensor_get(grads->dloss, 0) * (double)experts, dtype);
    for (int64_t e = 0; e < experts; e++) {
        double drouter_prob = parity_round_compute(dsum * parity_tensor_get(saved_tokens_per_expert, e), dtype);
        dprobability.data[e] = parity_round_storage(parity_round_compute(drouter_prob / total, dtype), dtype);
    }
    for (int64_t n = 0; n < rows; n++)
        parity_routing_softmax_backward(probabilities.data + n * experts, dprobability.data, experts, dtype,
                                        dlogits.data + n * experts);
    parity_cpu_values_store(grads->drouter_logits, dlogits.data);
done:
    parity_cpu_values_free(&probabilities);
    parity_cpu_values_free(&dprobability);
    parity_cpu_values_free(&dlogits);
    return error;
}

static const parity_load_balancing_loss_kernels load_balancing_loss_eager_kernels = {load_balancing_loss_eager_forward,
                                                                                     load_balancing_loss_eager_backward};

PARITY_BACKEND_REGISTRATION(load_balancing_loss, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_LOAD_BALANCING_LOSS,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_DETERMINISTIC,
        .kernels = &load_balancing_loss_eager_kernels,
        .description = "reference Switch load-balancing loss (HF load_balancing_loss_func), f64/f32/bf16",
    });
}

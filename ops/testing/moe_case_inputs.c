// moe_case_inputs.c: separated router logits and retyped inputs for the MoE rows.
#include "ops/testing/moe_case_inputs.h"

#include <stdlib.h>

#include "ops/core/cpu_math.h"

// A permutation of 0..count-1 from (row, attempt): Fisher-Yates driven by a 64-bit LCG.
static void permutation(int64_t row, int attempt, int64_t count, int64_t *ranks) {
    uint64_t state = 0x9e3779b97f4a7c15ull * (uint64_t)(row + 1) + 0xbf58476d1ce4e5b9ull * (uint64_t)(attempt + 1);
    for (int64_t i = 0; i < count; i++) ranks[i] = i;
    for (int64_t i = count - 1; i > 0; i--) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        int64_t j = (int64_t)((state >> 33) % (uint64_t)(i + 1));
        int64_t swap = ranks[i];
        ranks[i] = ranks[j];
        ranks[j] = swap;
    }
}

parity_error *moe_separate_logits(op_check_state *state, const char *name, double spacing, moe_logits_accept accept,
                                  const void *context) {
    parity_tensor *logits = op_check_value(state, name);
    if (!logits || logits->ndim != 2) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "moe rows: no (rows, E) input %s", name);
    int64_t rows = logits->shape[0], experts = logits->shape[1];
    int64_t *ranks = malloc((size_t)experts * sizeof *ranks);
    double *row_values = malloc((size_t)experts * sizeof *row_values);
    parity_error *error = ranks && row_values ? NULL : PARITY_ERROR(PARITY_ERROR_MEMORY, "moe rows: scratch");
    for (int64_t n = 0; !error && n < rows; n++) {
        bool accepted = false;
        for (int attempt = 0; attempt < 1000 && !accepted; attempt++) {
            permutation(n, attempt, experts, ranks);
            for (int64_t j = 0; j < experts; j++) {
                double jitter = parity_tensor_get(logits, n * experts + j);
                double centred = spacing * ((double)ranks[j] - (double)(experts - 1) / 2);
                row_values[j] = parity_round_to_dtype(centred + jitter, state->input_precision);
            }
            accepted = !accept || accept(row_values, experts, context);
        }
        if (!accepted)
            error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "moe rows: no separated logits for %s row %lld", name, (long long)n);
        for (int64_t j = 0; !error && j < experts; j++) parity_tensor_set(logits, n * experts + j, row_values[j]);
    }
    free(ranks);
    free(row_values);
    return error;
}

parity_error *moe_retype_input(op_check_state *state, const char *name, parity_dtype dtype) {
    parity_tensor *value = op_check_value(state, name), *gradient = op_check_gradient(state, name);
    if (!value) return PARITY_ERROR(PARITY_ERROR_INTERNAL, "moe rows: no input %s", name);
    if (value->dtype == dtype) return NULL;
    parity_tensor converted;
    PARITY_TRY(parity_tensor_to(&converted, value, PARITY_CPU, dtype));
    parity_tensor_release(value);
    *value = converted;
    if (gradient) {
        parity_tensor_release(gradient);
        PARITY_TRY(parity_tensor_alloc(gradient, dtype, PARITY_CPU, value->ndim, value->shape));
    }
    return NULL;
}

parity_tensor *moe_bag_zeros(moe_tensor_bag *bag, parity_dtype dtype, int ndim, const int64_t *shape) {
    if (bag->error || bag->count >= 8) {
        if (!bag->error) bag->error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "moe rows: tensor bag is full");
        return NULL;
    }
    parity_tensor *tensor = &bag->tensors[bag->count];
    bag->error = parity_tensor_zeros(tensor, dtype, PARITY_CPU, ndim, shape);
    if (bag->error) return NULL;
    bag->count++;
    return tensor;
}

void moe_bag_release(moe_tensor_bag *bag) {
    for (int i = 0; i < bag->count; i++) parity_tensor_release(&bag->tensors[i]);
    bag->count = 0;
}

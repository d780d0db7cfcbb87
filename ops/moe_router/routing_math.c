// routing_math.c: softmax and top-k rows for the MoE eager backends (see routing_math.h).
#include "ops/moe_router/routing_math.h"

#include <math.h>

#include "ops/core/cpu_math.h"

void parity_routing_softmax(const double *logits, int64_t count, parity_dtype storage, double *probabilities) {
    double maximum = -INFINITY;
    for (int64_t j = 0; j < count; j++) maximum = fmax(maximum, logits[j]);
    double sum = 0;
    for (int64_t j = 0; j < count; j++) {
        probabilities[j] = parity_round_compute(exp(parity_round_compute(logits[j] - maximum, storage)), storage);
        sum = parity_round_compute(sum + probabilities[j], storage);
    }
    for (int64_t j = 0; j < count; j++)
        probabilities[j] = parity_round_storage(parity_round_compute(probabilities[j] / sum, storage), storage);
}

void parity_routing_softmax_backward(const double *probabilities, const double *dprobabilities, int64_t count,
                                     parity_dtype probability_dtype, double *dlogits) {
    double sum = 0;
    for (int64_t j = 0; j < count; j++) {
        dlogits[j] = parity_round_storage(parity_round_compute(dprobabilities[j] * probabilities[j], probability_dtype),
                                          probability_dtype);
        sum = parity_round_compute(sum + dlogits[j], probability_dtype);
    }
    for (int64_t j = 0; j < count; j++)
        dlogits[j] = parity_round_compute(dlogits[j] - parity_round_compute(probabilities[j] * sum, probability_dtype),
                                          probability_dtype);
}

// True when value a (at index ia) ranks before value b (at index ib).
static bool ranks_before(double a, int64_t ia, double b, int64_t ib) { return a > b || (a == b && ia < ib); }

void parity_routing_top_k_sorted(const double *values, int64_t count, int64_t k, int64_t *indices) {
    // Selection by insertion: k and count are small (experts per token, experts).
    int64_t filled = 0;
    for (int64_t j = 0; j < count; j++) {
        int64_t position = filled;
        while (position > 0 && ranks_before(values[j], j, values[indices[position - 1]], indices[position - 1]))
            position--;
        if (position >= k) continue;
        int64_t last = filled < k ? filled : k - 1;
        for (int64_t move = last; move > position; move--) indices[move] = indices[move - 1];
        indices[position] = j;
        if (filled < k) filled++;
    }
}

void parity_routing_top_k_unsorted(const double *values, int64_t count, int64_t k, int64_t *indices) {
    if (k <= 0) return;
    parity_routing_top_k_sorted(values, count, k, indices);
    double kth = values[indices[k - 1]];
    // Order the chosen set by (value == kth, index): a stable insertion sort on that key.
    for (int64_t i = 1; i < k; i++) {
        int64_t index = indices[i];
        bool tail = values[index] == kth;
        int64_t position = i;
        while (position > 0) {
            int64_t before = indices[position - 1];
            bool before_tail = values[before] == kth;
            if (before_tail < tail || (before_tail == tail && before < index)) break;
            indices[position] = before;
            position--;
        }
        indices[position] = index;
    }
}

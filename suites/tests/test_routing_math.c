// test_routing_math.c: the top-k rules the MoE eager backends rely on (ops/moe_router/routing_math.h):
// descending order with exact ties to the lower index, and CUDA's sorted=False output order.
#include <criterion/criterion.h>
#include <math.h>

#include "ops/moe_router/routing_math.h"

Test(routing_math, top_k_sorted_breaks_ties_towards_the_lower_index) {
    const double values[] = {0.5, 2.0, 0.5, 2.0, -INFINITY, 1.0};
    int64_t indices[4];
    parity_routing_top_k_sorted(values, 6, 4, indices);
    const int64_t expected[] = {1, 3, 5, 0};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(indices[i], expected[i], "slot %d: %lld, expected %lld", i, (long long)indices[i],
                     (long long)expected[i]);
}

Test(routing_math, top_k_unsorted_follows_cuda_gather_order) {
    // k-th largest is 0.5 (indices 0 and 2 tie; 0 wins). Strictly larger ones first, by index.
    const double values[] = {0.5, 0.7, 0.5, 3.0, -INFINITY, 1.0};
    int64_t indices[4];
    parity_routing_top_k_unsorted(values, 6, 4, indices);
    const int64_t expected[] = {1, 3, 5, 0};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(indices[i], expected[i], "slot %d: %lld, expected %lld", i, (long long)indices[i],
                     (long long)expected[i]);
}

Test(routing_math, softmax_rounds_to_the_storage_dtype) {
    const double logits[] = {0.0, log(3.0)};
    double probabilities[2];
    parity_routing_softmax(logits, 2, PARITY_F64, probabilities);
    cr_expect(fabs(probabilities[0] - 0.25) < 1e-15 && fabs(probabilities[1] - 0.75) < 1e-15);
    parity_routing_softmax(logits, 2, PARITY_BF16, probabilities);
    cr_expect(probabilities[0] == 0.25 && probabilities[1] == 0.75, "bf16 softmax: %.17g %.17g", probabilities[0],
              probabilities[1]);
}

// routing_math.cuh: the device side of routing_math.h for the CUDA eager moe_router and
// load_balancing_loss: softmax of one row and top-k with the same tie rule, operation for operation
// as the CPU functions (f32 arithmetic for f32/bf16 calls, f64 for f64; exp through f64 and one
// rounding, kernel_math.cuh's precise_exp). For .cu files only.
#ifndef PARITY_ROUTING_MATH_CUH
#define PARITY_ROUTING_MATH_CUH

#include "ops/core/cuda/kernel_math.cuh"

namespace parity_cuda {

// p = softmax(logits) over `count` values in the compute precision of D: m = max, e_j = exp(x_j - m),
// s = sum e_j (left to right), p_j = e_j / s; with `round_to_storage` each p_j is then rounded to D
// (the dtype the softmax writes: load_balancing_loss), otherwise kept in the compute precision (the
// router's softmax(dtype=float32)).
template <parity_dtype D>
__device__ void routing_softmax(const typename scalar<D>::storage *logits, int64_t count, bool round_to_storage,
                                typename scalar<D>::compute *p) {
    using S = scalar<D>;
    using C = typename S::compute;
    C maximum = -INFINITY;
    for (int64_t j = 0; j < count; j++) maximum = fmax(maximum, S::load(logits[j]));
    C sum = 0;
    for (int64_t j = 0; j < count; j++) {
        p[j] = precise_exp(S::load(logits[j]) - maximum);
        sum += p[j];
    }
    for (int64_t j = 0; j < count; j++) {
        C value = p[j] / sum;
        p[j] = round_to_storage ? round_storage<D>(value) : value;
    }
}

// True when value a (at index ia) ranks before value b (at index ib): larger first, ties to the lower index.
template <typename C> __device__ __forceinline__ bool routing_ranks_before(C a, int64_t ia, C b, int64_t ib) {
    return a > b || (a == b && ia < ib);
}

// The k largest of `values` into indices[0..k), descending, ties to the lower index (insertion, as the CPU).
template <typename C> __device__ void routing_top_k_sorted(const C *values, int64_t count, int64_t k, int64_t *indices) {
    int64_t filled = 0;
    for (int64_t j = 0; j < count; j++) {
        int64_t position = filled;
        while (position > 0 && routing_ranks_before(values[j], j, values[indices[position - 1]], indices[position - 1]))
            position--;
        if (position >= k) continue;
        int64_t last = filled < k ? filled : k - 1;
        for (int64_t move = last; move > position; move--) indices[move] = indices[move - 1];
        indices[position] = j;
        if (filled < k) filled++;
    }
}

// The same set in torch.topk(sorted=False)'s CUDA order: values above the k-th largest first, then
// the ones equal to it, each part in ascending index order.
template <typename C> __device__ void routing_top_k_unsorted(const C *values, int64_t count, int64_t k, int64_t *indices) {
    if (k <= 0) return;
    routing_top_k_sorted(values, count, k, indices);
    C kth = values[indices[k - 1]];
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

} // namespace parity_cuda

#endif

// eager.cu: the reference load-balancing loss on CUDA (value "eager"), eager.c's order of operations
// (HF load_balancing_loss_func) in three plain kernels:
//   rows     one thread per row: p = softmax(logits) rounded to the logits' dtype (saved), top-k of p
//   experts  one thread per expert: top-k count, per-layer sums of p over the layer's rows (rows in
//            order, as the CPU), tokens_per_expert (saved) and its product with router_prob_per_expert
//   loss     one thread: sum of the products over the experts in order, times E
// Backward: one thread per expert forms c_e = round(dloss * E * tokens_per_expert[e] / T), then one
// thread per row runs the softmax backward with the products rounded to the logits' dtype.
#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/moe_router/routing_math.cuh"

extern "C" {
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

struct balance_shape {
    int64_t rows, experts, layers, top_k;
};

template <parity_dtype D>
__global__ void balance_rows(balance_shape shape, const typename scalar<D>::storage *logits,
                             typename scalar<D>::compute *row_scratch, typename scalar<D>::storage *probabilities,
                             int64_t *chosen) {
    using S = scalar<D>;
    int64_t E = shape.experts;
    PARITY_CUDA_FOR_EACH(n, shape.rows) {
        typename S::compute *p = row_scratch + n * E;
        routing_softmax<D>(logits + n * E, E, true, p);
        routing_top_k_sorted(p, E, shape.top_k, chosen + n * shape.top_k);
        for (int64_t e = 0; e < E; e++) probabilities[n * E + e] = S::store(p[e]);
    }
}

template <parity_dtype D>
__global__ void balance_experts(balance_shape shape, const typename scalar<D>::storage *probabilities, const int64_t *chosen,
                                typename scalar<D>::compute *tokens_per_expert, typename scalar<D>::compute *products) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t E = shape.experts, layer_rows = shape.rows / shape.layers;
    PARITY_CUDA_FOR_EACH(e, E) {
        int64_t count = 0; // exact integers
        for (int64_t i = 0; i < shape.rows * shape.top_k; i++) count += chosen[i] == e;
        C probability_sum = 0;
        for (int64_t layer = 0; layer < shape.layers; layer++) {
            C layer_sum = 0;
            for (int64_t n = layer * layer_rows; n < (layer + 1) * layer_rows; n++) layer_sum += S::load(probabilities[n * E + e]);
            probability_sum += layer_sum;
        }
        C total = (C)shape.rows;
        C fraction = (C)count / total, router_probability = probability_sum / total;
        tokens_per_expert[e] = fraction;
        products[e] = fraction * router_probability;
    }
}

template <parity_dtype D>
__global__ void balance_loss(int64_t experts, const typename scalar<D>::compute *products, typename scalar<D>::compute *loss) {
    using C = typename scalar<D>::compute;
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    C sum = 0;
    for (int64_t e = 0; e < experts; e++) sum += products[e];
    *loss = sum * (C)experts;
}

// c_e = round(round(dloss * E) * tokens_per_expert[e] / T), rounded to the logits' dtype.
template <parity_dtype D>
__global__ void balance_dprobability(balance_shape shape, const typename scalar<D>::compute *dloss,
                                     const typename scalar<D>::compute *tokens_per_expert,
                                     typename scalar<D>::compute *dprobability) {
    using C = typename scalar<D>::compute;
    PARITY_CUDA_FOR_EACH(e, shape.experts) {
        C dsum = *dloss * (C)shape.experts;
        dprobability[e] = round_storage<D>((dsum * tokens_per_expert[e]) / (C)shape.rows);
    }
}

// One thread per row: dlogits_j = t_j - p_j sum_i t_i, t_j = round(c_j p_j) in the logits' dtype.
template <parity_dtype D>
__global__ void balance_backward_rows(balance_shape shape, const typename scalar<D>::storage *probabilities,
                                      const typename scalar<D>::compute *dprobability, typename scalar<D>::storage *dlogits) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t E = shape.experts;
    PARITY_CUDA_FOR_EACH(n, shape.rows) {
        const typename S::storage *p = probabilities + n * E;
        C sum = 0;
        for (int64_t j = 0; j < E; j++) sum += round_storage<D>(dprobability[j] * S::load(p[j]));
        for (int64_t j = 0; j < E; j++) {
            C product = round_storage<D>(dprobability[j] * S::load(p[j]));
            dlogits[n * E + j] = S::store(product - S::load(p[j]) * sum);
        }
    }
}

parity_error *check_devices(const parity_load_balancing_loss_args *args) {
    parity_device device = args->router_logits->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return parity_cuda_check_tensor("load_balancing_loss", "router_logits", args->router_logits, cuda_device(0));
    PARITY_TRY(parity_cuda_check_tensor("load_balancing_loss", "router_logits", args->router_logits, device));
    PARITY_TRY(parity_cuda_check_tensor("load_balancing_loss", "loss", args->loss, device));
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    return NULL;
}

parity_error *load_balancing_loss_cuda_eager_forward(const parity_exec *exec,
                                                     const parity_load_balancing_loss_args *args, parity_saved *saved) {
    int64_t rows, experts, layers;
    PARITY_TRY(parity_load_balancing_loss_check(args, &rows, &experts, &layers));
    PARITY_TRY(check_devices(args));
    parity_device device = args->router_logits->device;
    parity_dtype dtype = args->router_logits->dtype, compute = dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    balance_shape shape = {rows, experts, layers, args->top_k};
    int64_t probability_shape[2] = {rows, experts}, expert_shape[1] = {experts};
    parity_tensor *probabilities, *tokens_per_expert;
    PARITY_TRY(parity_saved_alloc(saved, &probabilities, dtype, device, 2, probability_shape));
    PARITY_TRY(parity_saved_alloc(saved, &tokens_per_expert, compute, device, 1, expert_shape));
    scoped_tensor row_scratch, chosen, products;
    PARITY_TRY(row_scratch.alloc_1d(compute, device, rows * experts));
    PARITY_TRY(chosen.alloc_1d(PARITY_I64, device, rows * args->top_k));
    PARITY_TRY(products.alloc_1d(compute, device, experts));
    return dispatch_float(dtype, "load_balancing_loss", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = scalar<D>;
        using C = typename S::compute;
        auto *stored = static_cast<typename S::storage *>(probabilities->data);
        balance_rows<D><<<grid_for(rows, 128), 128, 0, parity_cuda_stream(exec)>>>(
            shape, static_cast<const typename S::storage *>(args->router_logits->data), row_scratch.data<C>(), stored,
            chosen.data<int64_t>());
        PARITY_CUDA_TRY_LAUNCH("balance_rows");
        balance_experts<D><<<grid_for(experts, 64), 64, 0, parity_cuda_stream(exec)>>>(
            shape, stored, chosen.data<int64_t>(), static_cast<C *>(tokens_per_expert->data), products.data<C>());
        PARITY_CUDA_TRY_LAUNCH("balance_experts");
        balance_loss<D>
            <<<1, 1, 0, parity_cuda_stream(exec)>>>(experts, products.data<C>(), static_cast<C *>(args->loss->data));
        PARITY_CUDA_TRY_LAUNCH("balance_loss");
        return NULL;
    });
}

parity_error *load_balancing_loss_cuda_eager_backward(const parity_exec *exec,
                                                      const parity_load_balancing_loss_args *args,
                                                      const parity_saved *saved,
                                                      const parity_load_balancing_loss_grads *grads) {
    int64_t rows, experts, layers;
    PARITY_TRY(parity_load_balancing_loss_check(args, &rows, &experts, &layers));
    PARITY_TRY(parity_load_balancing_loss_check_grads(args, grads));
    if (!grads->drouter_logits) return NULL;
    PARITY_TRY(check_devices(args));
    parity_device device = args->router_logits->device;
    PARITY_TRY(parity_cuda_check_tensor("load_balancing_loss", "dloss", grads->dloss, device));
    PARITY_TRY(parity_cuda_check_tensor("load_balancing_loss", "drouter_logits", grads->drouter_logits, device));
    const parity_tensor *probabilities, *tokens_per_expert;
    PARITY_TRY(parity_saved_get(saved, 0, &probabilities));
    PARITY_TRY(parity_saved_get(saved, 1, &tokens_per_expert));
    parity_dtype dtype = args->router_logits->dtype, compute = dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    balance_shape shape = {rows, experts, layers, args->top_k};
    scoped_tensor dprobability;
    PARITY_TRY(dprobability.alloc_1d(compute, device, experts));
    return dispatch_float(dtype, "load_balancing_loss", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = scalar<D>;
        using C = typename S::compute;
        balance_dprobability<D><<<grid_for(experts, 64), 64, 0, parity_cuda_stream(exec)>>>(
            shape, static_cast<const C *>(grads->dloss->data), static_cast<const C *>(tokens_per_expert->data),
            dprobability.data<C>());
        PARITY_CUDA_TRY_LAUNCH("balance_dprobability");
        balance_backward_rows<D><<<grid_for(rows, 128), 128, 0, parity_cuda_stream(exec)>>>(
            shape, static_cast<const typename S::storage *>(probabilities->data), dprobability.data<C>(),
            static_cast<typename S::storage *>(grads->drouter_logits->data));
        PARITY_CUDA_TRY_LAUNCH("balance_backward_rows");
        return NULL;
    });
}

const parity_load_balancing_loss_kernels load_balancing_loss_cuda_eager_kernels = {load_balancing_loss_cuda_eager_forward,
                                                                                   load_balancing_loss_cuda_eager_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(load_balancing_loss, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_LOAD_BALANCING_LOSS;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_DETERMINISTIC;
    backend.kernels = &load_balancing_loss_cuda_eager_kernels;
    backend.description = "reference Switch load-balancing loss on CUDA (HF load_balancing_loss_func), plain kernels, "
                          "f64/f32/bf16";
    return parity_registry_add(&backend);
}

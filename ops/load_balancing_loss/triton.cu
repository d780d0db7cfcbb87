// triton.cu: load-balancing loss "triton" on CUDA (VeOmni's fused Triton load_balancing_loss): one
// kernel each way.
//   forward:  one warp per router-logits row: softmax (probabilities rounded to the logits' dtype, as
//             the eager softmax stores them), top-k by repeated warp arg-max (ties to the lower
//             expert, as eager), per-expert probability sums and top-k counts kept in registers; each
//             block folds its warps in warp order into one partial, and the last block to finish
//             (a ticket counter) sums the partials in block order and writes tokens_per_expert (saved
//             for backward) and the loss. Fixed orders throughout: bitwise repeatable on one device.
//   backward: one warp per row recomputes the same probabilities and writes
//             dlogits = t - p * sum(t), t_e = c_e * p_e rounded to the logits' dtype,
//             c_e = (dloss * E * tokens_per_expert[e] / T) rounded to it (eager's softmax backward).
// Nothing of size (rows, E) is saved: backward re-reads the logits. E up to 1024.
#include <algorithm>

#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/fused_rows.cuh"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/load_balancing_loss/load_balancing_loss.h"
#include "ops/registry.h"
}

using namespace parity_fused;

namespace {

const char backend_name[] = "triton";
constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;
constexpr int max_experts = 1024;

// Lane l of the row's warp holds experts l + 32 i, i < PER_LANE. Writes the probabilities (rounded
// to the dtype; experts >= E get -1, below every probability).
template <parity_dtype D, int PER_LANE>
__device__ __forceinline__ void row_probabilities(const typename element<D>::storage *logits, int experts,
                                                  typename element<D>::compute (&p)[PER_LANE]) {
    using C = typename element<D>::compute;
    const int lane = threadIdx.x & 31;
    C x[PER_LANE];
    C maximum = -INFINITY;
#pragma unroll
    for (int i = 0; i < PER_LANE; i++) {
        const int e = lane + 32 * i;
        x[i] = e < experts ? element<D>::load(logits[e]) : C(-INFINITY);
        maximum = max(maximum, x[i]);
    }
    maximum = warp_max(maximum);
    C sum = 0;
#pragma unroll
    for (int i = 0; i < PER_LANE; i++) {
        const int e = lane + 32 * i;
        x[i] = e < experts ? exp(x[i] - maximum) : C(0);
        sum += x[i];
    }
    sum = warp_sum(sum);
#pragma unroll
    for (int i = 0; i < PER_LANE; i++) {
        const int e = lane + 32 * i;
        p[i] = e < experts ? round_storage<D>(x[i] / sum) : C(-1);
    }
}

template <parity_dtype D, int PER_LANE>
__global__ void __launch_bounds__(block_threads)
    load_balancing_loss_forward_kernel(const typename element<D>::storage *logits, // (T, E)
                                       int64_t rows, int experts, int top_k,
                                       typename element<D>::compute *probability_partial, // (blocks, E)
                                       unsigned *count_partial,                           // (blocks, E)
                                       unsigned *blocks_done,                             // () zero at launch
                                       typename element<D>::compute *tokens_per_expert,   // (E) saved
                                       typename element<D>::compute *loss) {              // ()
    using C = typename element<D>::compute;
    __shared__ C block_probability[max_experts];
    __shared__ unsigned block_count[max_experts];
    __shared__ bool last_block;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    C probability_sum[PER_LANE];
    unsigned count[PER_LANE];
#pragma unroll
    for (int i = 0; i < PER_LANE; i++) probability_sum[i] = 0, count[i] = 0;

    for (int64_t row = (int64_t)blockIdx.x * warps_per_block + warp; row < rows;
         row += (int64_t)gridDim.x * warps_per_block) {
        C p[PER_LANE];
        row_probabilities<D, PER_LANE>(logits + row * experts, experts, p);
        bool chosen[PER_LANE];
#pragma unroll
        for (int i = 0; i < PER_LANE; i++) {
            if (p[i] >= 0) probability_sum[i] += p[i];
            chosen[i] = false;
        }
        for (int k = 0; k < top_k; k++) {
            C best = -2;
            int best_expert = max_experts;
#pragma unroll
            for (int i = 0; i < PER_LANE; i++) // ascending experts: strict > keeps the lower one on ties
                if (!chosen[i] && p[i] > best) best = p[i], best_expert = lane + 32 * i;
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) {
                const C other = __shfl_xor_sync(0xffffffffu, best, offset);
                const int other_expert = __shfl_xor_sync(0xffffffffu, best_expert, offset);
                if (other > best || (other == best && other_expert < best_expert)) best = other, best_expert = other_expert;
            }
#pragma unroll
            for (int i = 0; i < PER_LANE; i++)
                if (lane + 32 * i == best_expert) chosen[i] = true, count[i] += 1;
        }
    }

    // The block's warps into shared memory, warp after warp.
    for (int e = threadIdx.x; e < experts; e += block_threads) block_probability[e] = 0, block_count[e] = 0;
    for (int w = 0; w < warps_per_block; w++) {
        __syncthreads();
        if (warp == w)
#pragma unroll
            for (int i = 0; i < PER_LANE; i++) {
                const int e = lane + 32 * i;
                if (e < experts) block_probability[e] += probability_sum[i], block_count[e] += count[i];
            }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < experts; e += block_threads) {
        probability_partial[(int64_t)blockIdx.x * experts + e] = block_probability[e];
        count_partial[(int64_t)blockIdx.x * experts + e] = block_count[e];
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last_block = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();

    // The last block: partials in block order, then the loss in expert order.
    const C total = (C)rows;
    for (int e = threadIdx.x; e < experts; e += block_threads) {
        C probability = 0;
        unsigned long long tokens = 0;
        for (unsigned b = 0; b < gridDim.x; b++) {
            probability += ((volatile C *)probability_partial)[(int64_t)b * experts + e];
            tokens += ((volatile unsigned *)count_partial)[(int64_t)b * experts + e];
        }
        const C fraction = (C)tokens / total;
        tokens_per_expert[e] = fraction;
        block_probability[e] = fraction * (probability / total);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        C sum = 0;
        for (int e = 0; e < experts; e++) sum += block_probability[e];
        *loss = sum * (C)experts;
        *blocks_done = 0; // ready for the next launch
    }
}

template <parity_dtype D, int PER_LANE>
__global__ void __launch_bounds__(block_threads)
    load_balancing_loss_backward_kernel(const typename element<D>::storage *logits,            // (T, E)
                                        const typename element<D>::compute *tokens_per_expert, // (E)
                                        const typename element<D>::compute *dloss,             // ()
                                        int64_t rows, int experts,
                                        typename element<D>::storage *dlogits) { // (T, E)
    using C = typename element<D>::compute;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const C total = (C)rows;
    const C dsum = *dloss * (C)experts;
    C coefficient[PER_LANE];
#pragma unroll
    for (int i = 0; i < PER_LANE; i++) {
        const int e = lane + 32 * i;
        coefficient[i] = e < experts ? round_storage<D>((dsum * tokens_per_expert[e]) / total) : C(0);
    }
    for (int64_t row = (int64_t)blockIdx.x * warps_per_block + warp; row < rows;
         row += (int64_t)gridDim.x * warps_per_block) {
        C p[PER_LANE], t[PER_LANE];
        row_probabilities<D, PER_LANE>(logits + row * experts, experts, p);
        C sum = 0;
#pragma unroll
        for (int i = 0; i < PER_LANE; i++) {
            t[i] = lane + 32 * i < experts ? round_storage<D>(coefficient[i] * p[i]) : C(0);
            sum += t[i];
        }
        sum = warp_sum(sum);
#pragma unroll
        for (int i = 0; i < PER_LANE; i++) {
            const int e = lane + 32 * i;
            if (e < experts) dlogits[row * experts + e] = element<D>::store(t[i] - p[i] * sum);
        }
    }
}

// Calls fn(integral_constant<PER_LANE>) for the smallest PER_LANE with 32 * PER_LANE >= experts.
template <typename Fn> parity_error *dispatch_experts(int64_t experts, Fn &&fn) {
    if (experts <= 32) return fn(std::integral_constant<int, 1>{});
    if (experts <= 64) return fn(std::integral_constant<int, 2>{});
    if (experts <= 128) return fn(std::integral_constant<int, 4>{});
    if (experts <= 256) return fn(std::integral_constant<int, 8>{});
    if (experts <= 512) return fn(std::integral_constant<int, 16>{});
    return fn(std::integral_constant<int, 32>{});
}

parity_error *check_call(const parity_load_balancing_loss_args *args, const parity_load_balancing_loss_grads *grads,
                         int64_t *rows, int64_t *experts) {
    int64_t layers;
    PARITY_TRY(parity_load_balancing_loss_check(args, rows, experts, &layers));
    if (grads) PARITY_TRY(parity_load_balancing_loss_check_grads(args, grads));
    const parity_device device = args->router_logits->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "load_balancing_loss: router_logits is on %s; the %s backend runs on cuda",
                            parity_device_type_name(device.type), backend_name);
    PARITY_TRY(parity_cuda_check_tensor("load_balancing_loss", "router_logits", args->router_logits, device));
    PARITY_TRY(parity_cuda_check_tensor("load_balancing_loss", "loss", args->loss, device));
    if (grads) {
        PARITY_TRY(parity_cuda_check_tensor("load_balancing_loss", "dloss", grads->dloss, device));
        PARITY_TRY(parity_cuda_check_tensor("load_balancing_loss", "drouter_logits", grads->drouter_logits, device));
    }
    if (*experts > max_experts)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "load_balancing_loss: the %s backend handles up to %d experts, not %lld",
                            backend_name, max_experts, (long long)*experts);
    return NULL;
}

parity_error *grid_for(int device_index, int64_t rows, unsigned *grid) {
    int multiprocessors = 1;
    PARITY_TRY(multiprocessor_count(device_index, &multiprocessors));
    const int64_t needed = (rows + warps_per_block - 1) / warps_per_block;
    *grid = (unsigned)std::max<int64_t>(1, std::min<int64_t>(needed, (int64_t)multiprocessors * 4));
    return NULL;
}

parity_error *forward(const parity_exec *exec, const parity_load_balancing_loss_args *args, parity_saved *saved) {
    int64_t rows, experts;
    PARITY_TRY(check_call(args, NULL, &rows, &experts));
    const parity_device device = args->router_logits->device;
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    const parity_dtype dtype = args->router_logits->dtype, compute = parity_load_balancing_loss_dtype(dtype);
    parity_tensor *tokens_per_expert;
    int64_t expert_shape[1] = {experts};
    PARITY_TRY(parity_saved_alloc(saved, &tokens_per_expert, compute, device, 1, expert_shape));
    unsigned grid;
    PARITY_TRY(grid_for(device.index, rows, &grid));
    // Scratch: the blocks' probability sums and counts, and the ticket counter.
    const size_t probability_bytes = (size_t)grid * experts * parity_dtype_size(compute);
    const size_t count_bytes = (size_t)grid * experts * sizeof(unsigned);
    pool_scratch scratch;
    PARITY_TRY(scratch.alloc(device, probability_bytes + count_bytes + 16, parity_cuda_stream(exec)));
    unsigned char *base = scratch.as<unsigned char>();
    unsigned *blocks_done = (unsigned *)(base + probability_bytes + count_bytes);
    PARITY_CUDA_TRY(cudaMemsetAsync(blocks_done, 0, sizeof(unsigned), parity_cuda_stream(exec)));
    return dispatch_float(dtype, "load_balancing_loss", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        using C = typename element<D>::compute;
        return dispatch_experts(experts, [&](auto lanes) -> parity_error * {
            load_balancing_loss_forward_kernel<D, decltype(lanes)::value>
                <<<grid, block_threads, 0, parity_cuda_stream(exec)>>>(
                    (const S *)args->router_logits->data, rows, (int)experts, (int)args->top_k, (C *)base,
                    (unsigned *)(base + probability_bytes), blocks_done, (C *)tokens_per_expert->data,
                    (C *)args->loss->data);
            PARITY_CUDA_TRY_LAUNCH("load_balancing_loss_forward_kernel");
            return NULL;
        });
    });
}

parity_error *backward(const parity_exec *exec, const parity_load_balancing_loss_args *args, const parity_saved *saved,
                       const parity_load_balancing_loss_grads *grads) {
    int64_t rows, experts;
    PARITY_TRY(check_call(args, grads, &rows, &experts));
    if (!grads->drouter_logits) return NULL;
    const parity_tensor *tokens_per_expert;
    PARITY_TRY(parity_saved_get(saved, 0, &tokens_per_expert));
    const parity_device device = args->router_logits->device;
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    unsigned grid;
    PARITY_TRY(grid_for(device.index, rows, &grid));
    return dispatch_float(args->router_logits->dtype, "load_balancing_loss", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        using C = typename element<D>::compute;
        return dispatch_experts(experts, [&](auto lanes) -> parity_error * {
            load_balancing_loss_backward_kernel<D, decltype(lanes)::value>
                <<<grid, block_threads, 0, parity_cuda_stream(exec)>>>(
                    (const S *)args->router_logits->data, (const C *)tokens_per_expert->data,
                    (const C *)grads->dloss->data, rows, (int)experts, (S *)grads->drouter_logits->data);
            PARITY_CUDA_TRY_LAUNCH("load_balancing_loss_backward_kernel");
            return NULL;
        });
    });
}

const parity_load_balancing_loss_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(load_balancing_loss, triton, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_LOAD_BALANCING_LOSS;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_DETERMINISTIC;
    backend.kernels = &kernels;
    backend.description = "fused Switch load-balancing loss: one kernel each way (softmax, top-k, sums), up to 1024 experts";
    return parity_registry_add(&backend);
}

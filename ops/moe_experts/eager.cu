// eager.cu: the reference MoE experts on CUDA (value "eager"): HF's loop over the experts hit, as
// eager.c computes it, with cuBLAS GEMMs (ops/core/cuda/blas.h) on each expert's gathered rows:
//   rows of expert e     (slot k, token t) with expert_indices[t, k] == e, slot-major (torch.where
//                        order), listed on the host from a copy of the indices
//   x = hidden[rows]     gate_up = x W_e^T (GEMM)    h = round(round(silu(gate)) * up)
//   y = h D_e^T (GEMM)   output[t] = round(output[t] + round(y * w[t, k]))   experts in ascending order
// Backward (experts in descending order, activations recomputed, nothing saved):
//   dw[t, k] = sum_h round_w(g y)    dy = round(g w)    dh = dy D_e    dD_e = dy^T h
//   dup = round(dh * silu(gate))     dgate = round(silu'(gate) * round(dh * up))
//   dW_e = [dgate, dup]^T x          dx = [dgate, dup] W_e       dhidden[t] = round(dhidden[t] + dx)
// Elementwise steps are plain kernels (one thread per element, dw one thread per row).
#include <vector>

#include "ops/core/cuda/blas.h"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/eager_support.cuh"

extern "C" {
#include "ops/moe_experts/moe_experts.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

// silu(x) = x / (1 + exp(-x)) and sigmoid in the compute precision, as eager.c.
template <typename C> __device__ __forceinline__ C silu(C x) { return x / (C(1) + precise_exp(-x)); }
// torch's silu_backward: dy * s * (1 + x * (1 - s)), s = sigmoid(x)
template <typename C> __device__ __forceinline__ C silu_backward(C dy, C x) {
    C s = C(1) / (C(1) + precise_exp(-x));
    return dy * s * (C(1) + x * (C(1) - s));
}

// x (R, H) = hidden[tokens[r]]
template <parity_dtype D>
__global__ void experts_gather(int64_t rows, int64_t hidden_size, const int64_t *tokens, const typename scalar<D>::storage *hidden,
                               typename scalar<D>::storage *x) {
    PARITY_CUDA_FOR_EACH(index, rows * hidden_size) {
        int64_t r = index / hidden_size, h = index % hidden_size;
        x[index] = hidden[tokens[r] * hidden_size + h];
    }
}

// product (R, I) = round(round(silu(gate)) * up), gate_up (R, 2I) = [gate, up]
template <parity_dtype D>
__global__ void experts_activate(int64_t rows, int64_t intermediate, const typename scalar<D>::storage *gate_up,
                                 typename scalar<D>::storage *product) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(index, rows * intermediate) {
        int64_t r = index / intermediate, i = index % intermediate;
        C gate = S::load(gate_up[r * 2 * intermediate + i]), up = S::load(gate_up[r * 2 * intermediate + intermediate + i]);
        C activated = round_storage<D>(silu(gate));
        product[index] = S::store(activated * up);
    }
}

// output[t] = round(output[t] + round(y * w[t, k])) for each row r = (t, k) of one expert (tokens distinct).
template <parity_dtype D>
__global__ void experts_scatter_weighted(int64_t rows, int64_t hidden_size, int64_t top_k, const int64_t *tokens,
                                        const int64_t *slots, const void *weights, parity_dtype weights_dtype,
                                        const typename scalar<D>::storage *y, typename scalar<D>::storage *output) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(index, rows * hidden_size) {
        int64_t r = index / hidden_size, h = index % hidden_size, t = tokens[r];
        C weight = (C)load_f64(weights, weights_dtype, t * top_k + slots[r]);
        C contribution = round_storage<D>(S::load(y[index]) * weight);
        output[t * hidden_size + h] = S::store(S::load(output[t * hidden_size + h]) + contribution);
    }
}

// One thread per row: dw[t, k] = sum_h round_w(g y) (f32 sum), dy = round(g w).
template <parity_dtype D>
__global__ void experts_weight_gradients(int64_t rows, int64_t hidden_size, int64_t top_k, const int64_t *tokens,
                                         const int64_t *slots, const void *weights, void *dweights, parity_dtype weights_dtype,
                                         const typename scalar<D>::storage *doutput, const typename scalar<D>::storage *y,
                                         typename scalar<D>::storage *dy) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(r, rows) {
        int64_t t = tokens[r], slot = t * top_k + slots[r];
        C weight = (C)load_f64(weights, weights_dtype, slot), dweight = 0;
        for (int64_t h = 0; h < hidden_size; h++) {
            C g = S::load(doutput[t * hidden_size + h]);
            dweight += (C)parity_round_to_dtype((double)(g * S::load(y[r * hidden_size + h])), weights_dtype);
            dy[r * hidden_size + h] = S::store(g * weight);
        }
        if (dweights) store_f64(dweights, weights_dtype, slot, (double)dweight);
    }
}

// dgate_up (R, 2I) from dproduct (R, I) and the recomputed gate_up.
template <parity_dtype D>
__global__ void experts_activation_backward(int64_t rows, int64_t intermediate, const typename scalar<D>::storage *gate_up,
                                            const typename scalar<D>::storage *dproduct, typename scalar<D>::storage *dgate_up) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(index, rows * intermediate) {
        int64_t r = index / intermediate, i = index % intermediate;
        C gate = S::load(gate_up[r * 2 * intermediate + i]), up = S::load(gate_up[r * 2 * intermediate + intermediate + i]);
        C d = S::load(dproduct[index]);
        C dactivated = round_storage<D>(d * up);
        C activated = round_storage<D>(silu(gate));
        dgate_up[r * 2 * intermediate + i] = S::store(silu_backward(dactivated, gate));
        dgate_up[r * 2 * intermediate + intermediate + i] = S::store(d * activated);
    }
}

// dhidden[t] = round(dhidden[t] + dx[r]) for each row of one expert (tokens distinct).
template <parity_dtype D>
__global__ void experts_scatter_add(int64_t rows, int64_t hidden_size, const int64_t *tokens,
                                    const typename scalar<D>::storage *dx, typename scalar<D>::storage *dhidden) {
    using S = scalar<D>;
    PARITY_CUDA_FOR_EACH(index, rows * hidden_size) {
        int64_t r = index / hidden_size, h = index % hidden_size;
        typename S::storage *target = dhidden + tokens[r] * hidden_size + h;
        *target = S::store(S::load(*target) + S::load(dx[index]));
    }
}

// The rows of every expert, listed on the host: expert e's rows are [offsets[e], offsets[e + 1]) of
// (tokens, slots), slot-major then token (torch.where over the (K, N) mask), and copied to the device.
struct expert_rows {
    std::vector<int64_t> offsets; // (E + 1)
    scoped_tensor tokens, slots;  // (N * K) int64 on the device
    int64_t longest = 0;
};

parity_error *list_rows(const parity_moe_experts_args *args, const parity_moe_experts_sizes &sizes, expert_rows *rows) {
    scoped_tensor host;
    PARITY_TRY(parity_tensor_to(&host.tensor, args->expert_indices, PARITY_CPU, PARITY_I64));
    const int64_t *indices = host.data<int64_t>();
    int64_t N = sizes.tokens, K = sizes.top_k, E = sizes.experts;
    std::vector<int64_t> counts(E, 0);
    for (int64_t i = 0; i < N * K; i++) {
        if (indices[i] < 0 || indices[i] >= E)
            return PARITY_ERROR(PARITY_ERROR_SHAPE, "moe_experts: expert index %lld at token %lld, slot %lld is outside [0, %lld)",
                                (long long)indices[i], (long long)(i / K), (long long)(i % K), (long long)E);
        counts[indices[i]]++;
    }
    rows->offsets.assign(E + 1, 0);
    for (int64_t e = 0; e < E; e++) {
        rows->offsets[e + 1] = rows->offsets[e] + counts[e];
        rows->longest = counts[e] > rows->longest ? counts[e] : rows->longest;
    }
    std::vector<int64_t> tokens(N * K > 0 ? N * K : 1), slots(N * K > 0 ? N * K : 1), next(rows->offsets.begin(), rows->offsets.end() - 1);
    for (int64_t k = 0; k < K; k++)
        for (int64_t t = 0; t < N; t++) {
            int64_t position = next[indices[t * K + k]]++;
            tokens[position] = t;
            slots[position] = k;
        }
    PARITY_TRY(upload_int64(rows->tokens, tokens.data(), (int64_t)tokens.size(), args->hidden->device));
    PARITY_TRY(upload_int64(rows->slots, slots.data(), (int64_t)slots.size(), args->hidden->device));
    return NULL;
}

parity_error *check_devices(const parity_moe_experts_args *args) {
    parity_device device = args->hidden->device;
    if (device.type != PARITY_DEVICE_CUDA) return parity_cuda_check_tensor("moe_experts", "hidden", args->hidden, cuda_device(0));
    const parity_tensor *tensors[] = {args->hidden, args->gate_up_proj, args->down_proj, args->expert_indices,
                                      args->routing_weights, args->output};
    const char *names[] = {"hidden", "gate_up_proj", "down_proj", "expert_indices", "routing_weights", "output"};
    for (int i = 0; i < 6; i++) PARITY_TRY(parity_cuda_check_tensor("moe_experts", names[i], tensors[i], device));
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    return NULL;
}

// Per-expert buffers, sized for the busiest expert.
struct expert_buffers {
    scoped_tensor x, gate_up, product, y;              // (R, H), (R, 2I), (R, I), (R, H)
    scoped_tensor dy, dproduct, dgate_up, dx;          // backward only
    parity_error *alloc(parity_dtype dtype, parity_device device, const parity_moe_experts_sizes &s, int64_t rows, bool backward) {
        PARITY_TRY(x.alloc_1d(dtype, device, rows * s.hidden));
        PARITY_TRY(gate_up.alloc_1d(dtype, device, rows * 2 * s.intermediate));
        PARITY_TRY(product.alloc_1d(dtype, device, rows * s.intermediate));
        PARITY_TRY(y.alloc_1d(dtype, device, rows * s.hidden));
        if (!backward) return NULL;
        PARITY_TRY(dy.alloc_1d(dtype, device, rows * s.hidden));
        PARITY_TRY(dproduct.alloc_1d(dtype, device, rows * s.intermediate));
        PARITY_TRY(dgate_up.alloc_1d(dtype, device, rows * 2 * s.intermediate));
        PARITY_TRY(dx.alloc_1d(dtype, device, rows * s.hidden));
        return NULL;
    }
};

// x, gate_up, product, y of expert e's `count` rows (starting at `first` in the row lists).
template <parity_dtype D>
parity_error *expert_forward(const parity_exec *exec, const parity_moe_experts_args *args,
                             const parity_moe_experts_sizes &s, const expert_rows &rows, int64_t e, expert_buffers &b) {
    using storage = typename scalar<D>::storage;
    int64_t first = rows.offsets[e], count = rows.offsets[e + 1] - first, H = s.hidden, I = s.intermediate;
    const storage *gate_up_proj = static_cast<const storage *>(args->gate_up_proj->data) + e * 2 * I * H;
    const storage *down_proj = static_cast<const storage *>(args->down_proj->data) + e * H * I;
    experts_gather<D><<<grid_for(count * H), 256, 0, parity_cuda_stream(exec)>>>(
        count, H, rows.tokens.data<int64_t>() + first, static_cast<const storage *>(args->hidden->data),
        b.x.data<storage>());
    PARITY_CUDA_TRY_LAUNCH("experts_gather");
    parity_cuda_gemm_desc gate_up = parity_cuda_gemm_packed(D, 1, count, 2 * I, H, false, true, b.x.tensor.data, gate_up_proj,
                                                            b.gate_up.tensor.data);
    PARITY_TRY(parity_cuda_gemm(exec, &gate_up));
    experts_activate<D><<<grid_for(count * I), 256, 0, parity_cuda_stream(exec)>>>(count, I, b.gate_up.data<storage>(),
                                                                                   b.product.data<storage>());
    PARITY_CUDA_TRY_LAUNCH("experts_activate");
    parity_cuda_gemm_desc down = parity_cuda_gemm_packed(D, 1, count, H, I, false, true, b.product.tensor.data, down_proj,
                                                         b.y.tensor.data);
    PARITY_TRY(parity_cuda_gemm(exec, &down));
    return NULL;
}

parity_error *moe_experts_cuda_eager_forward(const parity_exec *exec, const parity_moe_experts_args *args,
                                             parity_saved *saved) {
    parity_moe_experts_sizes sizes;
    PARITY_TRY(parity_moe_experts_check(args, &sizes));
    PARITY_TRY(check_devices(args));
    expert_rows rows;
    PARITY_TRY(list_rows(args, sizes, &rows));
    expert_buffers buffers;
    PARITY_TRY(buffers.alloc(args->hidden->dtype, args->hidden->device, sizes, rows.longest, false));
    PARITY_TRY(parity_cuda_zero_on(exec, args->output));
    return dispatch_float(args->hidden->dtype, "moe_experts", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        for (int64_t e = 0; e < sizes.experts; e++) {
            int64_t first = rows.offsets[e], count = rows.offsets[e + 1] - first;
            if (count == 0) continue;
            PARITY_TRY(expert_forward<D>(exec, args, sizes, rows, e, buffers));
            experts_scatter_weighted<D><<<grid_for(count * sizes.hidden), 256, 0, parity_cuda_stream(exec)>>>(
                count, sizes.hidden, sizes.top_k, rows.tokens.data<int64_t>() + first,
                rows.slots.data<int64_t>() + first, args->routing_weights->data, args->routing_weights->dtype,
                buffers.y.data<storage>(), static_cast<storage *>(args->output->data));
            PARITY_CUDA_TRY_LAUNCH("experts_scatter_weighted");
        }
        return NULL;
    });
}

parity_error *moe_experts_cuda_eager_backward(const parity_exec *exec, const parity_moe_experts_args *args,
                                              const parity_saved *saved, const parity_moe_experts_grads *grads) {
    parity_moe_experts_sizes sizes;
    PARITY_TRY(parity_moe_experts_check(args, &sizes));
    PARITY_TRY(parity_moe_experts_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->hidden->device;
    const parity_tensor *tensors[] = {grads->doutput, grads->dhidden, grads->dgate_up_proj, grads->ddown_proj,
                                      grads->drouting_weights};
    const char *names[] = {"doutput", "dhidden", "dgate_up_proj", "ddown_proj", "drouting_weights"};
    for (int i = 0; i < 5; i++) PARITY_TRY(parity_cuda_check_tensor("moe_experts", names[i], tensors[i], device));
    expert_rows rows;
    PARITY_TRY(list_rows(args, sizes, &rows));
    expert_buffers buffers;
    PARITY_TRY(buffers.alloc(args->hidden->dtype, device, sizes, rows.longest, true));
    // experts nobody chose get zero gradients; dhidden accumulates from zero
    if (grads->dhidden) PARITY_TRY(parity_cuda_zero_on(exec, grads->dhidden));
    if (grads->dgate_up_proj) PARITY_TRY(parity_cuda_zero_on(exec, grads->dgate_up_proj));
    if (grads->ddown_proj) PARITY_TRY(parity_cuda_zero_on(exec, grads->ddown_proj));
    bool through_weights = grads->dhidden || grads->dgate_up_proj;
    return dispatch_float(args->hidden->dtype, "moe_experts", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        int64_t H = sizes.hidden, I = sizes.intermediate;
        for (int64_t e = sizes.experts - 1; e >= 0; e--) {
            int64_t first = rows.offsets[e], count = rows.offsets[e + 1] - first;
            if (count == 0) continue;
            const int64_t *tokens = rows.tokens.data<int64_t>() + first, *slots = rows.slots.data<int64_t>() + first;
            const storage *gate_up_proj = static_cast<const storage *>(args->gate_up_proj->data) + e * 2 * I * H;
            const storage *down_proj = static_cast<const storage *>(args->down_proj->data) + e * H * I;
            PARITY_TRY(expert_forward<D>(exec, args, sizes, rows, e, buffers));
            experts_weight_gradients<D><<<grid_for(count, 128), 128, 0, parity_cuda_stream(exec)>>>(
                count, H, sizes.top_k, tokens, slots, args->routing_weights->data,
                grads->drouting_weights ? grads->drouting_weights->data : nullptr, args->routing_weights->dtype,
                static_cast<const storage *>(grads->doutput->data), buffers.y.data<storage>(),
                buffers.dy.data<storage>());
            PARITY_CUDA_TRY_LAUNCH("experts_weight_gradients");
            if (grads->ddown_proj) {
                parity_cuda_gemm_desc ddown = parity_cuda_gemm_packed(D, 1, H, I, count, true, false, buffers.dy.tensor.data,
                                                                      buffers.product.tensor.data,
                                                                      static_cast<storage *>(grads->ddown_proj->data) + e * H * I);
                PARITY_TRY(parity_cuda_gemm(exec, &ddown));
            }
            if (!through_weights) continue;
            parity_cuda_gemm_desc dproduct = parity_cuda_gemm_packed(D, 1, count, I, H, false, false, buffers.dy.tensor.data,
                                                                     down_proj, buffers.dproduct.tensor.data);
            PARITY_TRY(parity_cuda_gemm(exec, &dproduct));
            experts_activation_backward<D><<<grid_for(count * I), 256, 0, parity_cuda_stream(exec)>>>(
                count, I, buffers.gate_up.data<storage>(), buffers.dproduct.data<storage>(),
                buffers.dgate_up.data<storage>());
            PARITY_CUDA_TRY_LAUNCH("experts_activation_backward");
            if (grads->dgate_up_proj) {
                parity_cuda_gemm_desc dweight = parity_cuda_gemm_packed(
                    D, 1, 2 * I, H, count, true, false, buffers.dgate_up.tensor.data, buffers.x.tensor.data,
                    static_cast<storage *>(grads->dgate_up_proj->data) + e * 2 * I * H);
                PARITY_TRY(parity_cuda_gemm(exec, &dweight));
            }
            if (grads->dhidden) {
                parity_cuda_gemm_desc dx = parity_cuda_gemm_packed(D, 1, count, H, 2 * I, false, false,
                                                                   buffers.dgate_up.tensor.data, gate_up_proj, buffers.dx.tensor.data);
                PARITY_TRY(parity_cuda_gemm(exec, &dx));
                experts_scatter_add<D><<<grid_for(count * H), 256, 0, parity_cuda_stream(exec)>>>(
                    count, H, tokens, buffers.dx.data<storage>(), static_cast<storage *>(grads->dhidden->data));
                PARITY_CUDA_TRY_LAUNCH("experts_scatter_add");
            }
        }
        return NULL;
    });
}

const parity_moe_experts_kernels moe_experts_cuda_eager_kernels = {moe_experts_cuda_eager_forward,
                                                                   moe_experts_cuda_eager_backward, nullptr};

} // namespace

PARITY_BACKEND_REGISTRATION(moe_experts, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_MOE_EXPERTS;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    // No PARITY_CAP_EXPERT_PARALLEL yet: the CPU twin claims it (moe_experts/eager.c), this one waits for
    // the NCCL layouts to run it (test_capability_claims.c); sequence parallelism is attention's claim.
    backend.capabilities = PARITY_CAP_DETERMINISTIC;
    backend.kernels = &moe_experts_cuda_eager_kernels;
    backend.description = "reference MoE experts on CUDA: HF's loop over experts, cuBLAS GEMMs on each expert's gathered "
                          "rows, f64/f32/bf16";
    return parity_registry_add(&backend);
}

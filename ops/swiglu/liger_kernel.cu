// liger_kernel.cu: SwiGLU "liger_kernel" on CUDA (LigerSiLUMulFunction): y = silu(gate) * up in one
// pass, and dgate, dup in one pass from gate, up and dy (silu recomputed, nothing saved).
// Streaming kernels: 16-byte accesses, two vectors per thread in flight per tensor; the forward
// launches one thread per two vectors (a full grid), the backward a grid of resident blocks that
// strides over the tensor (each measured the faster of the two on an H200). Rounding: silu in the compute precision rounded to the
// activation dtype before the product (as HF and Liger store act_fn(gate)); backward in the compute
// precision with one rounding per output (Liger: dup = dy * silu, dgate = dy * up * silu'(gate)).
#include <algorithm>

#include "ops/core/cuda/fused_rows.cuh"

extern "C" {
#include "ops/registry.h"
#include "ops/swiglu/swiglu.h"
#include "ops/swiglu/swiglu_cuda.h"
}

using namespace parity_fused;

namespace {

const char backend_name[] = "liger_kernel";
constexpr int block_threads = 256;
constexpr int unroll = 2; // vectors per thread per step

template <typename C> __device__ __forceinline__ C sigmoid_of(C x) { return C(1) / (C(1) + exp(-x)); }

// Vector v covers elements [v * VEC, v * VEC + VEC); the first `vectors` of them are handled with
// VEC-wide accesses, the last `tail` elements one by one by block 0.
template <parity_dtype D, int VEC>
__global__ void __launch_bounds__(block_threads) swiglu_forward_kernel(const typename element<D>::storage *gate, // (N)
                                                                       const typename element<D>::storage *up,   // (N)
                                                                       typename element<D>::storage *out,        // (N)
                                                                       int64_t vectors, int64_t tail, bool vectorized) {
    using C = typename element<D>::compute;
    const int64_t stride = (int64_t)gridDim.x * block_threads * unroll;
    for (int64_t base = (int64_t)blockIdx.x * block_threads * unroll + threadIdx.x; base < vectors; base += stride) {
        raw_vector<D, VEC> g[unroll], u[unroll];
#pragma unroll
        for (int k = 0; k < unroll; k++) {
            const int64_t v = base + (int64_t)k * block_threads;
            if (v < vectors) {
                g[k] = load_raw<D, VEC>(gate + v * VEC, vectorized);
                u[k] = load_raw<D, VEC>(up + v * VEC, vectorized);
            }
        }
#pragma unroll
        for (int k = 0; k < unroll; k++) {
            const int64_t v = base + (int64_t)k * block_threads;
            if (v >= vectors) continue;
            C y[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                const C x = element<D>::load(g[k].v[j]);
                const C activation = round_storage<D>(x / (C(1) + exp(-x)));
                y[j] = activation * element<D>::load(u[k].v[j]);
            }
            store_values<D, VEC>(out + v * VEC, vectorized, y);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const int64_t i = vectors * VEC + threadIdx.x;
        const C x = element<D>::load(gate[i]);
        out[i] = element<D>::store(round_storage<D>(x / (C(1) + exp(-x))) * element<D>::load(up[i]));
    }
}

template <parity_dtype D>
__device__ __forceinline__ void swiglu_backward_element(typename element<D>::compute x, typename element<D>::compute u,
                                                        typename element<D>::compute dy, typename element<D>::compute *dgate,
                                                        typename element<D>::compute *dup) {
    using C = typename element<D>::compute;
    const C sigmoid = sigmoid_of(x);
    *dup = dy * round_storage<D>(x * sigmoid);
    *dgate = (dy * u) * sigmoid * (C(1) + x * (C(1) - sigmoid));
}

template <parity_dtype D, int VEC>
__global__ void __launch_bounds__(block_threads) swiglu_backward_kernel(const typename element<D>::storage *gate,    // (N)
                                                                        const typename element<D>::storage *up,      // (N)
                                                                        const typename element<D>::storage *doutput, // (N)
                                                                        typename element<D>::storage *dgate, // (N) or NULL
                                                                        typename element<D>::storage *dup,   // (N) or NULL
                                                                        int64_t vectors, int64_t tail, bool vectorized) {
    using C = typename element<D>::compute;
    const int64_t stride = (int64_t)gridDim.x * block_threads * unroll;
    for (int64_t base = (int64_t)blockIdx.x * block_threads * unroll + threadIdx.x; base < vectors; base += stride) {
        raw_vector<D, VEC> g[unroll], u[unroll], dy[unroll];
#pragma unroll
        for (int k = 0; k < unroll; k++) {
            const int64_t v = base + (int64_t)k * block_threads;
            if (v < vectors) {
                g[k] = load_raw<D, VEC>(gate + v * VEC, vectorized);
                u[k] = load_raw<D, VEC>(up + v * VEC, vectorized);
                dy[k] = load_raw<D, VEC>(doutput + v * VEC, vectorized);
            }
        }
#pragma unroll
        for (int k = 0; k < unroll; k++) {
            const int64_t v = base + (int64_t)k * block_threads;
            if (v >= vectors) continue;
            C dg[VEC], du[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++)
                swiglu_backward_element<D>(element<D>::load(g[k].v[j]), element<D>::load(u[k].v[j]),
                                           element<D>::load(dy[k].v[j]), &dg[j], &du[j]);
            if (dgate) store_values<D, VEC>(dgate + v * VEC, vectorized, dg);
            if (dup) store_values<D, VEC>(dup + v * VEC, vectorized, du);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const int64_t i = vectors * VEC + threadIdx.x;
        C dg, du;
        swiglu_backward_element<D>(element<D>::load(gate[i]), element<D>::load(up[i]), element<D>::load(doutput[i]), &dg,
                                   &du);
        if (dgate) dgate[i] = element<D>::store(dg);
        if (dup) dup[i] = element<D>::store(du);
    }
}

// The launch shape of a streaming kernel over `count` elements: VEC-wide when every pointer is
// 16-byte aligned, and a grid of exactly the blocks that are resident at once (one wave: every
// block strides over the same share), or fewer for small tensors.
struct stream_plan {
    bool vectorized;
    int64_t vectors, tail;
    unsigned grid;
};

template <parity_dtype D>
parity_error *plan_stream(int device_index, int64_t count, bool aligned, const void *kernel_vectorized,
                          const void *kernel_scalar, bool forward, stream_plan *plan) {
    constexpr int VEC = full_vector<D>();
    plan->vectorized = aligned;
    plan->vectors = aligned ? count / VEC : count;
    plan->tail = aligned ? count % VEC : 0;
    int multiprocessors = 1, per_multiprocessor = 0;
    PARITY_TRY(multiprocessor_count(device_index, &multiprocessors));
    PARITY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_multiprocessor, aligned ? kernel_vectorized : kernel_scalar, block_threads, 0));
    const int64_t needed = (plan->vectors + (int64_t)block_threads * unroll - 1) / ((int64_t)block_threads * unroll);
    const int64_t resident = (int64_t)multiprocessors * std::max(1, per_multiprocessor);
    plan->grid = (unsigned)std::max<int64_t>(1, std::min<int64_t>(needed, forward ? 0x7fffffff : resident));
    return NULL;
}

parity_error *check_devices(const parity_swiglu_args *args, const parity_swiglu_grads *grads) {
    const parity_device device = args->gate->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "swiglu: gate is on %s; the %s backend runs on cuda",
                            parity_device_type_name(device.type), backend_name);
    PARITY_TRY(check_on_device("swiglu", "gate", args->gate, device));
    PARITY_TRY(check_on_device("swiglu", "up", args->up, device));
    PARITY_TRY(check_on_device("swiglu", "output", args->output, device));
    if (grads) {
        PARITY_TRY(check_on_device("swiglu", "doutput", grads->doutput, device));
        PARITY_TRY(check_on_device("swiglu", "dgate", grads->dgate, device));
        PARITY_TRY(check_on_device("swiglu", "dup", grads->dup, device));
    }
    return NULL;
}

parity_error *forward(const parity_swiglu_args *args, parity_saved *saved) {
    PARITY_TRY(parity_swiglu_check(args));
    PARITY_TRY(check_devices(args, NULL));
    const int64_t count = args->gate->numel;
    if (count == 0) return NULL;
    const int device_index = args->gate->device.index;
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    const bool aligned = aligned16(args->gate->data, args->up->data, args->output->data);
    return dispatch_float(args->gate->dtype, "swiglu", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        stream_plan plan;
        PARITY_TRY(plan_stream<D>(device_index, count, aligned, (const void *)swiglu_forward_kernel<D, full_vector<D>()>,
                                  (const void *)swiglu_forward_kernel<D, 1>, true, &plan));
        if (plan.vectorized)
            swiglu_forward_kernel<D, full_vector<D>()><<<plan.grid, block_threads>>>(
                (const S *)args->gate->data, (const S *)args->up->data, (S *)args->output->data, plan.vectors, plan.tail,
                true);
        else
            swiglu_forward_kernel<D, 1><<<plan.grid, block_threads>>>(
                (const S *)args->gate->data, (const S *)args->up->data, (S *)args->output->data, plan.vectors, 0, false);
        PARITY_CUDA_TRY_LAUNCH("swiglu_forward_kernel");
        return NULL;
    });
}

parity_error *backward(const parity_swiglu_args *args, const parity_saved *saved, const parity_swiglu_grads *grads) {
    PARITY_TRY(parity_swiglu_check(args));
    PARITY_TRY(parity_swiglu_check_grads(args, grads));
    PARITY_TRY(check_devices(args, grads));
    const int64_t count = args->gate->numel;
    if (count == 0 || (!grads->dgate && !grads->dup)) return NULL;
    const int device_index = args->gate->device.index;
    PARITY_CUDA_TRY(cudaSetDevice(device_index));
    const bool aligned = aligned16(args->gate->data, args->up->data, grads->doutput->data,
                                   grads->dgate ? grads->dgate->data : nullptr, grads->dup ? grads->dup->data : nullptr);
    return dispatch_float(args->gate->dtype, "swiglu", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        stream_plan plan;
        PARITY_TRY(plan_stream<D>(device_index, count, aligned, (const void *)swiglu_backward_kernel<D, full_vector<D>()>,
                                  (const void *)swiglu_backward_kernel<D, 1>, false, &plan));
        S *dgate = grads->dgate ? (S *)grads->dgate->data : nullptr, *dup = grads->dup ? (S *)grads->dup->data : nullptr;
        if (plan.vectorized)
            swiglu_backward_kernel<D, full_vector<D>()><<<plan.grid, block_threads>>>(
                (const S *)args->gate->data, (const S *)args->up->data, (const S *)grads->doutput->data, dgate, dup,
                plan.vectors, plan.tail, true);
        else
            swiglu_backward_kernel<D, 1><<<plan.grid, block_threads>>>(
                (const S *)args->gate->data, (const S *)args->up->data, (const S *)grads->doutput->data, dgate, dup,
                plan.vectors, 0, false);
        PARITY_CUDA_TRY_LAUNCH("swiglu_backward_kernel");
        return NULL;
    });
}

const parity_swiglu_kernels kernels = {forward, backward};

} // namespace

extern "C" parity_error *parity_swiglu_register_cuda_liger_kernel(void) {
    parity_backend backend = {};
    backend.op = PARITY_OP_SWIGLU;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL |
                           PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "fused silu(gate) * up, one streaming pass each way (16-byte accesses), f64/f32/bf16";
    return parity_registry_add(&backend);
}

// cuda_common.cuh: what the CUDA gated_delta_rule backends (eager.cu = recurrent, chunked.cu = fla)
// share around their core recurrence, for .cu files only: the call's validation and document
// boundaries (delta_call), the q/k preparation HF does before the loop (one thread per (token, key
// head): l2norm(x) with eps 1e-6 when use_qk_l2norm, q * scale, in the compute precision) and the way
// back for the gradients of the prepared q and k (finish_qk_grads: * scale, L2-norm backward, rounded
// to the input dtype per value head, summed over the value heads of each key head, stored once).
// Every definition is internal to the including file (an unnamed namespace), so each backend's
// object carries its own copy of these kernels.
#ifndef PARITY_GATED_DELTA_RULE_CUDA_COMMON_CUH
#define PARITY_GATED_DELTA_RULE_CUDA_COMMON_CUH

#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "ops/gated_delta_rule/gated_delta_rule.h"
}

namespace {

using namespace parity_cuda;

const double qk_l2norm_eps = 1e-6; // HF: l2norm(x, dim=-1, eps=1e-6) in use_qk_l2norm_in_kernel

struct delta_shape {
    int64_t tokens, key_heads, value_heads, key_dim, value_dim, group; // group = Hv / Hk
    const int64_t *offsets;                                            // (documents + 1) on the device
    int64_t documents;
    parity_dtype g_dtype;                                              // the call's dtype or its compute dtype
};

// One thread per (token, key head): prepared = l2norm(x) (* scale for q), and the inverse norm.
template <parity_dtype D>
__global__ void delta_prepare(int64_t rows, int64_t dim, bool normalize, bool scaled, typename scalar<D>::compute scale,
                              const typename scalar<D>::storage *x, typename scalar<D>::compute *prepared,
                              typename scalar<D>::compute *inverse_norms) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(row, rows) {
        const typename S::storage *in = x + row * dim;
        C *out = prepared + row * dim;
        C inverse_norm = 1;
        if (normalize) {
            C sum = 0;
            for (int64_t i = 0; i < dim; i++) sum += S::load(in[i]) * S::load(in[i]);
            C shifted = sum + (C)qk_l2norm_eps;
            inverse_norm = (C)(1.0 / sqrt((double)shifted)); // f64 evaluation, one rounding (as the CPU)
            inverse_norms[row] = inverse_norm;
        }
        for (int64_t i = 0; i < dim; i++) {
            C value = normalize ? S::load(in[i]) * inverse_norm : S::load(in[i]);
            out[i] = scaled ? value * scale : value;
        }
    }
}

// How the row sums of the preparation and of the L2-norm backward run: one thread a row, summing in
// index order (eager: the CPU's order, bit for bit), or one warp a row, lanes summing every 32nd
// element and a butterfly adding the lanes (fla: coalesced, ~20x faster at Dk = 128; other bits).
enum class qk_rows { thread, warp };

__device__ __forceinline__ float lanes_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}
__device__ __forceinline__ double lanes_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// delta_prepare with a warp a row (qk_rows::warp).
template <parity_dtype D>
__global__ void delta_prepare_warp(int64_t rows, int64_t dim, bool normalize, bool scaled, typename scalar<D>::compute scale,
                                   const typename scalar<D>::storage *x, typename scalar<D>::compute *prepared,
                                   typename scalar<D>::compute *inverse_norms) {
    using S = scalar<D>;
    using C = typename S::compute;
    int lane = threadIdx.x % 32;
    for (int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; row < rows;
         row += (int64_t)gridDim.x * blockDim.x / 32) {
        const typename S::storage *in = x + row * dim;
        C *out = prepared + row * dim;
        C inverse_norm = 1;
        if (normalize) {
            C sum = 0;
            for (int64_t i = lane; i < dim; i += 32) sum += S::load(in[i]) * S::load(in[i]);
            sum = lanes_sum(sum);
            inverse_norm = (C)(1.0 / sqrt((double)(sum + (C)qk_l2norm_eps)));
            if (lane == 0) inverse_norms[row] = inverse_norm;
        }
        for (int64_t i = lane; i < dim; i += 32) {
            C value = normalize ? S::load(in[i]) * inverse_norm : S::load(in[i]);
            out[i] = scaled ? value * scale : value;
        }
    }
}

// dinverse[t, hv] = sum_i dy_i x_i, with dy = dprepared (* scale for q): the L2-norm backward's reduction.
template <parity_dtype D>
__global__ void delta_norm_reduction(delta_shape shape, bool scaled, typename scalar<D>::compute scale,
                                     const typename scalar<D>::storage *x, const typename scalar<D>::compute *dprepared,
                                     typename scalar<D>::compute *dinverse) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t Dk = shape.key_dim;
    PARITY_CUDA_FOR_EACH(row, shape.tokens * shape.value_heads) {
        int64_t t = row / shape.value_heads, hv = row % shape.value_heads;
        const typename S::storage *in = x + (t * shape.key_heads + hv / shape.group) * Dk;
        C sum = 0;
        for (int64_t i = 0; i < Dk; i++) {
            C dy = scaled ? dprepared[row * Dk + i] * scale : dprepared[row * Dk + i];
            sum += dy * S::load(in[i]);
        }
        dinverse[row] = sum;
    }
}

// delta_norm_reduction with a warp a row (qk_rows::warp).
template <parity_dtype D>
__global__ void delta_norm_reduction_warp(delta_shape shape, bool scaled, typename scalar<D>::compute scale,
                                          const typename scalar<D>::storage *x, const typename scalar<D>::compute *dprepared,
                                          typename scalar<D>::compute *dinverse) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t Dk = shape.key_dim;
    int lane = threadIdx.x % 32;
    for (int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; row < shape.tokens * shape.value_heads;
         row += (int64_t)gridDim.x * blockDim.x / 32) {
        int64_t t = row / shape.value_heads, hv = row % shape.value_heads;
        const typename S::storage *in = x + (t * shape.key_heads + hv / shape.group) * Dk;
        C sum = 0;
        for (int64_t i = lane; i < Dk; i += 32) {
            C dy = scaled ? dprepared[row * Dk + i] * scale : dprepared[row * Dk + i];
            sum += dy * S::load(in[i]);
        }
        sum = lanes_sum(sum);
        if (lane == 0) dinverse[row] = sum;
    }
}

// One thread per (token, key head, element): d(input) = sum over the group's value heads of
// round(l2norm_backward(dprepared (* scale))), the sum in the compute precision, stored once.
template <parity_dtype D>
__global__ void delta_finish_qk(delta_shape shape, bool normalized, bool scaled, typename scalar<D>::compute scale,
                                const typename scalar<D>::storage *x, const typename scalar<D>::compute *inverse_norms,
                                const typename scalar<D>::compute *dinverse, const typename scalar<D>::compute *dprepared,
                                typename scalar<D>::storage *dinput) {
    using S = scalar<D>;
    using C = typename S::compute;
    int64_t Dk = shape.key_dim;
    PARITY_CUDA_FOR_EACH(index, shape.tokens * shape.key_heads * Dk) {
        int64_t i = index % Dk, key_row = index / Dk, t = key_row / shape.key_heads, kh = key_row % shape.key_heads;
        C sum = 0;
        for (int64_t member = 0; member < shape.group; member++) {
            int64_t row = t * shape.value_heads + kh * shape.group + member;
            C dy = scaled ? dprepared[row * Dk + i] * scale : dprepared[row * Dk + i];
            C dx = dy;
            if (normalized) { // autograd's graph of x * rsqrt(sum(x * x) + eps)
                C inverse_norm = inverse_norms[key_row], value = S::load(x[index]);
                C cube = (inverse_norm * inverse_norm) * inverse_norm;
                C dsum = (C(-0.5) * dinverse[row]) * cube;
                dx = dy * inverse_norm + C(2) * (dsum * value);
            }
            sum += round_storage<D>(dx);
        }
        dinput[index] = S::store(sum);
    }
}

// Validation, devices, document boundaries (host copy + device copy) and the effective scale.
struct delta_call {
    parity_gated_delta_rule_sizes sizes;
    scoped_documents documents;
    scoped_tensor offsets;
    delta_shape shape;
};

parity_error *prepare_call(const parity_gated_delta_rule_args *args, delta_call *call) {
    PARITY_TRY(parity_gated_delta_rule_check(args, &call->sizes));
    parity_device device = args->query->device;
    if (device.type != PARITY_DEVICE_CUDA) return parity_cuda_check_tensor("gated_delta_rule", "query", args->query, cuda_device(0));
    const parity_tensor *tensors[] = {args->query, args->key, args->value, args->g, args->beta, args->output};
    const char *names[] = {"query", "key", "value", "g", "beta", "output"};
    for (int i = 0; i < 6; i++) PARITY_TRY(parity_cuda_check_tensor("gated_delta_rule", names[i], tensors[i], device));
    const parity_gated_delta_rule_sizes &s = call->sizes;
    PARITY_TRY(parity_cu_seqlens_load("gated_delta_rule", args->cu_seqlens, s.tokens, &call->documents.documents));
    PARITY_TRY(upload_int64(call->offsets, call->documents.documents.offsets, call->documents.documents.count + 1, device));
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    call->shape = {s.tokens, s.key_heads, s.value_heads, s.key_dim, s.value_dim, s.value_heads / s.key_heads,
                   call->offsets.data<int64_t>(), call->documents.documents.count, args->g->dtype};
    return NULL;
}

// prepare_call for a backward: the gradients' shapes and devices checked too.
inline parity_error *prepare_backward_call(const parity_gated_delta_rule_args *args,
                                           const parity_gated_delta_rule_grads *grads, delta_call *call) {
    PARITY_TRY(prepare_call(args, call));
    PARITY_TRY(parity_gated_delta_rule_check_grads(args, grads));
    const parity_tensor *tensors[] = {grads->doutput, grads->dquery, grads->dkey, grads->dvalue, grads->dg, grads->dbeta};
    const char *names[] = {"doutput", "dquery", "dkey", "dvalue", "dg", "dbeta"};
    for (int i = 0; i < 6; i++)
        PARITY_TRY(parity_cuda_check_tensor("gated_delta_rule", names[i], tensors[i], args->query->device));
    return NULL;
}

// The gradients of the prepared q and k of every value head, (N, Hv, Dk) in the compute precision, and
// the (N, Hv) scratch of their L2-norm backward: what a backward hands finish_qk_grads.
struct prepared_qk_grads {
    scoped_tensor dquery, dkey, dinverse;
    parity_error *alloc(const parity_gated_delta_rule_args *args, const delta_shape &shape) {
        parity_device device = args->query->device;
        parity_dtype compute = args->query->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
        int64_t value_rows = shape.tokens * shape.value_heads;
        PARITY_TRY(dquery.alloc_1d(compute, device, value_rows * shape.key_dim));
        PARITY_TRY(dkey.alloc_1d(compute, device, value_rows * shape.key_dim));
        return dinverse.alloc_1d(compute, device, value_rows);
    }
};

// Raises the kernel's dynamic shared memory limit to `bytes`, or says the state does not fit.
template <typename Kernel> parity_error *allow_shared(Kernel kernel, size_t bytes, const parity_gated_delta_rule_sizes &s, int device) {
    int limit = 0;
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (bytes > (size_t)limit)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                            "gated_delta_rule: a %lld x %lld state needs %zu bytes of shared memory, the device has %d per block",
                            (long long)s.key_dim, (long long)s.value_dim, bytes, limit);
    PARITY_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    return NULL;
}

// Threads of a block whose threads take `width` rows or columns: a multiple of 32 in [32, 1024]
// (constexpr: eager.cu's kernels built for fixed dims know their block size at compile time).
__host__ __device__ constexpr unsigned threads_for(int64_t width) {
    return (unsigned)((width + 31) / 32 * 32 < 32 ? 32 : (width + 31) / 32 * 32 > 1024 ? 1024 : (width + 31) / 32 * 32);
}

// q and k prepared (N, Hk, Dk) in the compute dtype, with their inverse norms (N, Hk).
struct prepared_qk {
    scoped_tensor query, key, query_inverse_norm, key_inverse_norm;
};

template <parity_dtype D>
parity_error *prepare_qk(const parity_exec *exec, const parity_gated_delta_rule_args *args, const delta_call &call,
                         prepared_qk *out, qk_rows layout = qk_rows::thread) {
    using storage = typename scalar<D>::storage;
    using C = typename scalar<D>::compute;
    parity_device device = args->query->device;
    parity_dtype compute = D == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    const delta_shape &shape = call.shape;
    int64_t rows = shape.tokens * shape.key_heads;
    PARITY_TRY(out->query.alloc_1d(compute, device, rows * shape.key_dim));
    PARITY_TRY(out->key.alloc_1d(compute, device, rows * shape.key_dim));
    PARITY_TRY(out->query_inverse_norm.alloc_1d(compute, device, rows));
    PARITY_TRY(out->key_inverse_norm.alloc_1d(compute, device, rows));
    bool warp = layout == qk_rows::warp;
    auto kernel = warp ? delta_prepare_warp<D> : delta_prepare<D>;
    unsigned grid = warp ? grid_for(rows * 32, 256) : grid_for(rows, 128), threads = warp ? 256 : 128;
    kernel<<<grid, threads, 0, parity_cuda_stream(exec)>>>(
        rows, shape.key_dim, args->use_qk_l2norm, true, (C)call.sizes.scale,
        static_cast<const storage *>(args->query->data), out->query.data<C>(), out->query_inverse_norm.data<C>());
    PARITY_CUDA_TRY_LAUNCH("delta_prepare");
    kernel<<<grid, threads, 0, parity_cuda_stream(exec)>>>(
        rows, shape.key_dim, args->use_qk_l2norm, false, C(1), static_cast<const storage *>(args->key->data),
        out->key.data<C>(), out->key_inverse_norm.data<C>());
    PARITY_CUDA_TRY_LAUNCH("delta_prepare");
    return NULL;
}

// dquery and dkey (either may be NULL in `grads`) from the gradients of the prepared q and k of every
// value head, (N, Hv, Dk) in the compute precision; `dinverse` is (N, Hv) scratch.
template <parity_dtype D>
parity_error *finish_qk_grads(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                              const parity_gated_delta_rule_grads *grads, const delta_call &call,
                              const prepared_qk &prepared, prepared_qk_grads &dprepared,
                              qk_rows layout = qk_rows::thread) {
    const scoped_tensor &dquery_prepared = dprepared.dquery, &dkey_prepared = dprepared.dkey;
    scoped_tensor &dinverse = dprepared.dinverse;
    using storage = typename scalar<D>::storage;
    using C = typename scalar<D>::compute;
    const delta_shape &shape = call.shape;
    int64_t value_rows = shape.tokens * shape.value_heads;
    C scale = (C)call.sizes.scale;
    struct { parity_tensor *destination; const parity_tensor *input; const scoped_tensor *dprepared, *inverse_norms; bool scaled; }
        finishes[2] = {{grads->dquery, args->query, &dquery_prepared, &prepared.query_inverse_norm, true},
                       {grads->dkey, args->key, &dkey_prepared, &prepared.key_inverse_norm, false}};
    for (auto &finish : finishes) {
        if (!finish.destination) continue;
        const storage *x = static_cast<const storage *>(finish.input->data);
        if (args->use_qk_l2norm) {
            if (layout == qk_rows::warp)
                delta_norm_reduction_warp<D><<<grid_for(value_rows * 32, 256), 256, 0, parity_cuda_stream(exec)>>>(
                    shape, finish.scaled, scale, x, finish.dprepared->template data<C>(), dinverse.data<C>());
            else
                delta_norm_reduction<D><<<grid_for(value_rows, 128), 128, 0, parity_cuda_stream(exec)>>>(
                    shape, finish.scaled, scale, x, finish.dprepared->template data<C>(), dinverse.data<C>());
            PARITY_CUDA_TRY_LAUNCH("delta_norm_reduction");
        }
        int64_t count = shape.tokens * shape.key_heads * shape.key_dim;
        delta_finish_qk<D><<<grid_for(count), 256, 0, parity_cuda_stream(exec)>>>(
            shape, args->use_qk_l2norm, finish.scaled, scale, x, finish.inverse_norms->template data<C>(),
            dinverse.data<C>(), finish.dprepared->template data<C>(),
            static_cast<storage *>(finish.destination->data));
        PARITY_CUDA_TRY_LAUNCH("delta_finish_qk");
    }
    return NULL;
}

} // namespace

#endif

// eager.cu: the reference gated_delta_rule on CUDA (value "eager"): HF's torch_recurrent_gated_delta_rule
// as eager.c runs it, one block per (document, value head) with the Dk x Dv state in shared memory:
//   prepare   one thread per (token, key head): q, k L2-normalised (eps 1e-6) when use_qk_l2norm, q * scale
//   forward   thread v owns column v of the state: S *= exp(g_t); kv = S^T k_t (sum over k in order);
//             delta = (v_t - kv) beta_t; S += k_t delta^T; o_t = S^T q_t          (no barrier needed)
// Everything runs in the compute precision (f32 for f32/bf16 calls, f64 for f64), the output rounded once.
// Backward by recomputation, in chunks of ~sqrt(L) tokens: a first sweep stores the state at the start
// of each chunk (global scratch), then for each chunk from the last, the chunk's states are recomputed
// from its checkpoint and eager.c's reverse-time step runs token by token, the state's gradient in
// shared memory: rows of dS belong to threads as k, columns as v, with a barrier between the steps.
// Layouts for speed only (no sum changes order): dS's shared rows are padded to Dv + 1 elements, so
// the threads of a warp walking their rows k hit 32 banks, not one; the checkpoints and recomputed
// states in global memory are stored column-major (element (k, v) at v Dk + k), so the reverse steps'
// row walks (thread k) read consecutive addresses, and each column (thread v) is contiguous.
//   dS += q do^T, dq = S do (k)  |  ddelta = dS^T k (v), dk_write = dS delta (k)  |  dinnov = ddelta beta,
//   dbeta = <ddelta, innov> (v, thread 0)  |  dS += k (-dinnov)^T, dk_read = S' (-dinnov) (k), row sums
//   of dS * S_{t-1} (k), dS *= exp(g)  |  dg = (sum of the row sums over k in order) exp(g) (thread 0)
// The row-then-column order of that last sum is the only place the CPU's order (flat, row-major) is not
// followed. Then one thread per (token, key head, element) finishes dquery and dkey: * scale, L2-norm
// backward, rounded to the input dtype per value head, summed over the value heads of each key head.
#include <math.h>
#include <vector>

#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "ops/gated_delta_rule/gated_delta_rule.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

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

// The per-token view of one (value head, token).
template <parity_dtype D> struct delta_token {
    const typename scalar<D>::compute *query, *key; // (Dk) prepared
    typename scalar<D>::compute decay, beta;
    const typename scalar<D>::storage *value;       // (Dv)
};

template <parity_dtype D>
__device__ delta_token<D> token_of(const delta_shape &shape, int64_t t, int64_t value_head,
                                   const typename scalar<D>::compute *prepared_query,
                                   const typename scalar<D>::compute *prepared_key, const typename scalar<D>::storage *value,
                                   const void *g, const typename scalar<D>::storage *beta) {
    using C = typename scalar<D>::compute;
    int64_t key_row = t * shape.key_heads + value_head / shape.group, value_row = t * shape.value_heads + value_head;
    delta_token<D> token;
    token.query = prepared_query + key_row * shape.key_dim;
    token.key = prepared_key + key_row * shape.key_dim;
    token.decay = precise_exp((C)load_f64(g, shape.g_dtype, value_row));
    token.beta = scalar<D>::load(beta[value_row]);
    token.value = value + value_row * shape.value_dim;
    return token;
}

// Column v of the state (element k at column[k * stride]): S *= decay; kv = S^T k; innovation = v - kv;
// delta = innovation * beta; S += k delta. Returns delta; writes the innovation.
template <parity_dtype D>
__device__ typename scalar<D>::compute advance_column(const delta_shape &shape, const delta_token<D> &token, int64_t v,
                                                      typename scalar<D>::compute *column, int64_t stride,
                                                      typename scalar<D>::compute *innovation) {
    using C = typename scalar<D>::compute;
    int64_t Dk = shape.key_dim;
    for (int64_t k = 0; k < Dk; k++) column[k * stride] = column[k * stride] * token.decay;
    C memory = 0;
    for (int64_t k = 0; k < Dk; k++) memory += column[k * stride] * token.key[k];
    C innovation_v = scalar<D>::load(token.value[v]) - memory;
    C delta = innovation_v * token.beta;
    for (int64_t k = 0; k < Dk; k++) column[k * stride] = column[k * stride] + token.key[k] * delta;
    *innovation = innovation_v;
    return delta;
}

template <parity_dtype D>
__global__ void delta_forward(delta_shape shape, const typename scalar<D>::compute *prepared_query,
                              const typename scalar<D>::compute *prepared_key, const typename scalar<D>::storage *value,
                              const void *g, const typename scalar<D>::storage *beta, typename scalar<D>::storage *output) {
    using C = typename scalar<D>::compute;
    extern __shared__ unsigned char shared_bytes[];
    C *state = reinterpret_cast<C *>(shared_bytes); // (Dk, Dv)
    int64_t document = blockIdx.x / shape.value_heads, head = blockIdx.x % shape.value_heads;
    int64_t Dk = shape.key_dim, Dv = shape.value_dim;
    for (int64_t v = threadIdx.x; v < Dv; v += blockDim.x) // every thread touches only its own columns
        for (int64_t k = 0; k < Dk; k++) state[k * Dv + v] = 0;
    for (int64_t t = shape.offsets[document]; t < shape.offsets[document + 1]; t++) {
        delta_token<D> token = token_of<D>(shape, t, head, prepared_query, prepared_key, value, g, beta);
        for (int64_t v = threadIdx.x; v < Dv; v += blockDim.x) {
            C innovation;
            advance_column<D>(shape, token, v, state + v, Dv, &innovation);
            C out = 0;
            for (int64_t k = 0; k < Dk; k++) out += state[k * Dv + v] * token.query[k];
            output[(t * shape.value_heads + head) * Dv + v] = scalar<D>::store(out);
        }
    }
}

// Where each block's global scratch lives (elements of the compute dtype), and the chunk length of its document.
struct delta_plan {
    const int64_t *block_base;   // (S * Hv)
    const int64_t *chunk_length; // (S)
};

// Gradients written by the backward sweep, per (token, value head).
template <parity_dtype D> struct delta_gradients {
    typename scalar<D>::compute *dquery, *dkey; // (N, Hv, Dk) of the prepared q and k
    typename scalar<D>::storage *dvalue;       // (N, Hv, Dv), may be NULL
    void *dg;                                   // (N, Hv) g's dtype, may be NULL
    typename scalar<D>::storage *dbeta;        // (N, Hv), may be NULL
};

template <parity_dtype D>
__global__ void delta_backward(delta_shape shape, delta_plan plan, const typename scalar<D>::compute *prepared_query,
                               const typename scalar<D>::compute *prepared_key, const typename scalar<D>::storage *value,
                               const void *g, const typename scalar<D>::storage *beta,
                               const typename scalar<D>::storage *doutput, typename scalar<D>::compute *scratch,
                               delta_gradients<D> out) {
    using S = scalar<D>;
    using C = typename S::compute;
    extern __shared__ unsigned char shared_bytes[];
    int64_t Dk = shape.key_dim, Dv = shape.value_dim, state_size = Dk * Dv, Hv = shape.value_heads;
    int64_t Dvp = Dv + 1;                            // dS's padded row: a warp's rows k spread over the banks
    C *dstate = reinterpret_cast<C *>(shared_bytes); // (Dk, Dv + 1); the running state during the first sweep
    C *ddelta = dstate + Dk * Dvp, *dinnovation = ddelta + Dv, *dkey_write = dinnovation + Dv, *ddecay_rows = dkey_write + Dk;
    int64_t document = blockIdx.x / Hv, head = blockIdx.x % Hv;
    int64_t start = shape.offsets[document], length = shape.offsets[document + 1] - start;
    int64_t chunk = plan.chunk_length[document], chunks = (length + chunk - 1) / chunk;
    C *checkpoints = scratch + plan.block_base[blockIdx.x]; // (chunks, Dv, Dk): the state before each chunk
    C *states = checkpoints + chunks * state_size;          // (chunk + 1, Dv, Dk), column-major states
    C *innovations = states + (chunk + 1) * state_size;     // (chunk, Dv)
    C *deltas = innovations + chunk * Dv;                   // (chunk, Dv)

    // 1. forward sweep, column by column, keeping the state at the start of every chunk
    for (int64_t v = threadIdx.x; v < Dv; v += blockDim.x) {
        for (int64_t k = 0; k < Dk; k++) dstate[k * Dvp + v] = 0;
        for (int64_t i = 0; i < length; i++) {
            if (i % chunk == 0)
                for (int64_t k = 0; k < Dk; k++) checkpoints[(i / chunk) * state_size + v * Dk + k] = dstate[k * Dvp + v];
            delta_token<D> token = token_of<D>(shape, start + i, head, prepared_query, prepared_key, value, g, beta);
            C innovation;
            advance_column<D>(shape, token, v, dstate + v, Dvp, &innovation);
        }
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < Dk * Dvp; i += blockDim.x) dstate[i] = 0; // nothing flows in from the next document
    __syncthreads();

    // 2. chunks from the last: recompute the chunk's states, then reverse steps
    for (int64_t c = chunks - 1; c >= 0; c--) {
        int64_t first = c * chunk, count = length - first < chunk ? length - first : chunk;
        for (int64_t v = threadIdx.x; v < Dv; v += blockDim.x) {
            for (int64_t k = 0; k < Dk; k++) states[v * Dk + k] = checkpoints[c * state_size + v * Dk + k];
            for (int64_t i = 0; i < count; i++) {
                C *next = states + (i + 1) * state_size + v * Dk;
                for (int64_t k = 0; k < Dk; k++) next[k] = next[k - state_size];
                delta_token<D> token = token_of<D>(shape, start + first + i, head, prepared_query, prepared_key, value, g, beta);
                deltas[i * Dv + v] = advance_column<D>(shape, token, v, next, 1, &innovations[i * Dv + v]);
            }
        }
        __syncthreads();
        for (int64_t i = count - 1; i >= 0; i--) {
            int64_t t = start + first + i, row = t * Hv + head;
            delta_token<D> token = token_of<D>(shape, t, head, prepared_query, prepared_key, value, g, beta);
            const C *state = states + (i + 1) * state_size, *previous = states + i * state_size;
            const typename S::storage *dy = doutput + row * Dv;
            // o = S^T q: dS += q do^T; dq = S do
            for (int64_t k = threadIdx.x; k < Dk; k += blockDim.x) {
                C dq = 0;
                for (int64_t v = 0; v < Dv; v++) {
                    C d = S::load(dy[v]);
                    dstate[k * Dvp + v] = dstate[k * Dvp + v] + d * token.query[k];
                    dq += d * state[v * Dk + k];
                }
                out.dquery[row * Dk + k] = dq;
            }
            __syncthreads();
            // S = S' + k delta^T: ddelta = dS^T k; dk (write) = dS delta
            for (int64_t v = threadIdx.x; v < Dv; v += blockDim.x) {
                C sum = 0;
                for (int64_t k = 0; k < Dk; k++) sum += dstate[k * Dvp + v] * token.key[k];
                ddelta[v] = sum;
            }
            for (int64_t k = threadIdx.x; k < Dk; k += blockDim.x) {
                C sum = 0;
                for (int64_t v = 0; v < Dv; v++) sum += dstate[k * Dvp + v] * deltas[i * Dv + v];
                dkey_write[k] = sum;
            }
            __syncthreads();
            // delta = (v - kv) * beta
            for (int64_t v = threadIdx.x; v < Dv; v += blockDim.x) {
                dinnovation[v] = ddelta[v] * token.beta;
                if (out.dvalue) out.dvalue[row * Dv + v] = S::store(dinnovation[v]);
            }
            if (threadIdx.x == 0 && out.dbeta) {
                C dbeta = 0;
                for (int64_t v = 0; v < Dv; v++) dbeta += ddelta[v] * innovations[i * Dv + v];
                out.dbeta[row] = S::store(dbeta);
            }
            __syncthreads();
            // kv = S'^T k, S' = S_{t-1} decay: dS' = dS + k (-dinnov)^T; dk (read) = S' (-dinnov);
            // then S' = S_{t-1} decay: row sums of dS' * S_{t-1}, dS_{t-1} = dS' decay
            for (int64_t k = threadIdx.x; k < Dk; k += blockDim.x) {
                C dk_read = 0;
                for (int64_t v = 0; v < Dv; v++) {
                    C dmemory = -dinnovation[v];
                    dstate[k * Dvp + v] = dstate[k * Dvp + v] + dmemory * token.key[k];
                    dk_read += dmemory * (previous[v * Dk + k] * token.decay);
                }
                out.dkey[row * Dk + k] = dkey_write[k] + dk_read;
                C row_sum = 0;
                for (int64_t v = 0; v < Dv; v++) row_sum += dstate[k * Dvp + v] * previous[v * Dk + k];
                ddecay_rows[k] = row_sum;
                for (int64_t v = 0; v < Dv; v++) dstate[k * Dvp + v] = dstate[k * Dvp + v] * token.decay;
            }
            __syncthreads();
            if (threadIdx.x == 0 && out.dg) {
                C ddecay = 0;
                for (int64_t k = 0; k < Dk; k++) ddecay += ddecay_rows[k];
                store_f64(out.dg, shape.g_dtype, row, (double)(ddecay * token.decay));
            }
        }
        __syncthreads(); // the next chunk overwrites the states this one read
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

unsigned threads_for(int64_t width) {
    int64_t threads = (width + 31) / 32 * 32;
    return (unsigned)(threads < 32 ? 32 : threads > 1024 ? 1024 : threads);
}

// q and k prepared (N, Hk, Dk) in the compute dtype, with their inverse norms (N, Hk).
struct prepared_qk {
    scoped_tensor query, key, query_inverse_norm, key_inverse_norm;
};

template <parity_dtype D>
parity_error *prepare_qk(const parity_exec *exec, const parity_gated_delta_rule_args *args, const delta_call &call,
                         prepared_qk *out) {
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
    delta_prepare<D><<<grid_for(rows, 128), 128, 0, parity_cuda_stream(exec)>>>(
        rows, shape.key_dim, args->use_qk_l2norm, true, (C)call.sizes.scale,
        static_cast<const storage *>(args->query->data), out->query.data<C>(), out->query_inverse_norm.data<C>());
    PARITY_CUDA_TRY_LAUNCH("delta_prepare");
    delta_prepare<D><<<grid_for(rows, 128), 128, 0, parity_cuda_stream(exec)>>>(
        rows, shape.key_dim, args->use_qk_l2norm, false, C(1), static_cast<const storage *>(args->key->data),
        out->key.data<C>(), out->key_inverse_norm.data<C>());
    PARITY_CUDA_TRY_LAUNCH("delta_prepare");
    return NULL;
}

parity_error *gated_delta_rule_cuda_eager_forward(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                                                  parity_saved *saved) {
    delta_call call;
    PARITY_TRY(prepare_call(args, &call));
    return dispatch_float(args->query->dtype, "gated_delta_rule", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        const delta_shape &shape = call.shape;
        prepared_qk prepared;
        PARITY_TRY(prepare_qk<D>(exec, args, call, &prepared));
        if (shape.documents * shape.value_heads == 0) return (parity_error *)NULL;
        size_t shared = (size_t)(shape.key_dim * shape.value_dim) * sizeof(C);
        PARITY_TRY(allow_shared(delta_forward<D>, shared, call.sizes, args->query->device.index));
        const cudaStream_t stream = parity_cuda_stream(exec);
        delta_forward<D>
            <<<(unsigned)(shape.documents * shape.value_heads), threads_for(shape.value_dim), shared, stream>>>(
                shape, prepared.query.data<C>(), prepared.key.data<C>(),
                static_cast<const storage *>(args->value->data), args->g->data,
                static_cast<const storage *>(args->beta->data), static_cast<storage *>(args->output->data));
        PARITY_CUDA_TRY_LAUNCH("delta_forward");
        return (parity_error *)NULL;
    });
}

parity_error *gated_delta_rule_cuda_eager_backward(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                                                   const parity_saved *saved,
                                                   const parity_gated_delta_rule_grads *grads) {
    delta_call call;
    PARITY_TRY(prepare_call(args, &call));
    PARITY_TRY(parity_gated_delta_rule_check_grads(args, grads));
    parity_device device = args->query->device;
    const parity_tensor *tensors[] = {grads->doutput, grads->dquery, grads->dkey, grads->dvalue, grads->dg, grads->dbeta};
    const char *names[] = {"doutput", "dquery", "dkey", "dvalue", "dg", "dbeta"};
    for (int i = 0; i < 6; i++) PARITY_TRY(parity_cuda_check_tensor("gated_delta_rule", names[i], tensors[i], device));
    const delta_shape &shape = call.shape;
    const parity_documents &documents = call.documents.documents;
    // the chunk plan: ~sqrt(L) tokens per chunk; per block the checkpoints, the chunk's states, innovations, deltas
    int64_t state_size = shape.key_dim * shape.value_dim;
    std::vector<int64_t> chunk_length(documents.count > 0 ? documents.count : 1), block_base(documents.count * shape.value_heads + 1);
    int64_t total = 0;
    for (int64_t s = 0; s < documents.count; s++) {
        int64_t length = documents.offsets[s + 1] - documents.offsets[s], chunk = 1;
        while (chunk * chunk < length) chunk++;
        int64_t chunks = (length + chunk - 1) / chunk;
        chunk_length[s] = chunk;
        for (int64_t h = 0; h < shape.value_heads; h++) {
            block_base[s * shape.value_heads + h] = total;
            total += (chunks + chunk + 1) * state_size + 2 * chunk * shape.value_dim;
        }
    }
    scoped_tensor chunk_lengths, block_bases, scratch, dquery_prepared, dkey_prepared, dinverse;
    PARITY_TRY(upload_int64(chunk_lengths, chunk_length.data(), (int64_t)chunk_length.size(), device));
    PARITY_TRY(upload_int64(block_bases, block_base.data(), (int64_t)block_base.size(), device));
    parity_dtype compute = args->query->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    PARITY_TRY(scratch.alloc_1d(compute, device, total));
    int64_t value_rows = shape.tokens * shape.value_heads;
    PARITY_TRY(dquery_prepared.alloc_1d(compute, device, value_rows * shape.key_dim));
    PARITY_TRY(dkey_prepared.alloc_1d(compute, device, value_rows * shape.key_dim));
    PARITY_TRY(dinverse.alloc_1d(compute, device, value_rows));
    return dispatch_float(args->query->dtype, "gated_delta_rule", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        prepared_qk prepared;
        PARITY_TRY(prepare_qk<D>(exec, args, call, &prepared));
        if (shape.documents * shape.value_heads > 0) {
            size_t shared = (size_t)(shape.key_dim * (shape.value_dim + 1) + 2 * shape.value_dim + 2 * shape.key_dim) * sizeof(C);
            PARITY_TRY(allow_shared(delta_backward<D>, shared, call.sizes, device.index));
            delta_gradients<D> out = {dquery_prepared.data<C>(), dkey_prepared.data<C>(),
                                      grads->dvalue ? static_cast<storage *>(grads->dvalue->data) : nullptr,
                                      grads->dg ? grads->dg->data : nullptr,
                                      grads->dbeta ? static_cast<storage *>(grads->dbeta->data) : nullptr};
            delta_plan plan = {block_bases.data<int64_t>(), chunk_lengths.data<int64_t>()};
            int64_t width = shape.key_dim > shape.value_dim ? shape.key_dim : shape.value_dim;
            const cudaStream_t stream = parity_cuda_stream(exec);
            delta_backward<D><<<(unsigned)(shape.documents * shape.value_heads), threads_for(width), shared, stream>>>(
                shape, plan, prepared.query.data<C>(), prepared.key.data<C>(),
                static_cast<const storage *>(args->value->data), args->g->data,
                static_cast<const storage *>(args->beta->data), static_cast<const storage *>(grads->doutput->data),
                scratch.data<C>(), out);
            PARITY_CUDA_TRY_LAUNCH("delta_backward");
        }
        C scale = (C)call.sizes.scale;
        struct { parity_tensor *destination; const parity_tensor *input; const scoped_tensor *dprepared, *inverse_norms; bool scaled; }
            finishes[2] = {{grads->dquery, args->query, &dquery_prepared, &prepared.query_inverse_norm, true},
                           {grads->dkey, args->key, &dkey_prepared, &prepared.key_inverse_norm, false}};
        for (auto &finish : finishes) {
            if (!finish.destination) continue;
            const storage *x = static_cast<const storage *>(finish.input->data);
            if (args->use_qk_l2norm) {
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
        return (parity_error *)NULL;
    });
}

const parity_gated_delta_rule_kernels gated_delta_rule_cuda_eager_kernels = {gated_delta_rule_cuda_eager_forward,
                                                                             gated_delta_rule_cuda_eager_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(gated_delta_rule, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_GATED_DELTA_RULE;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC |
                           PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &gated_delta_rule_cuda_eager_kernels;
    backend.description = "reference gated delta rule on CUDA, recurrent form (HF torch_recurrent_gated_delta_rule), one "
                          "block per (document, value head), state in shared memory, f64/f32/bf16";
    return parity_registry_add(&backend);
}

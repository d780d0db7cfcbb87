// rotary_cuda.cu: the fused rotary kernels and their launchers (see rotary_cuda.h).
#include <algorithm>

#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/fused_rows.cuh"

extern "C" {
#include "ops/rotary/frequencies.h"
#include "ops/rotary/rotary_cuda.h"
}

using namespace parity_fused;

namespace {

constexpr int max_half = 256; // rotary_dim / 2 held in the kernel's parameter block

// The rope description reduced to what a kernel needs, passed by value.
template <typename C> struct rope_table {
    C inverse_frequency[max_half]; // (rotary_dim / 2)
    C scaling;                     // attention_scaling (yarn), else 1
};

// Where a rotated pair is read and written (element offsets within a head):
//   half-split        reads (j, j + half), writes (j, j + half)
//   interleaved       reads (2j, 2j + 1), writes (j, j + half)      (forward)
//   interleaved^T     reads (j, j + half), writes (2j, 2j + 1)      (backward)
// out[w1] = x1 c - x2 s, out[w2] = x2 c + x1 s, with s = -sin for the backward (the transpose).
template <parity_dtype D, int VEC, bool INTERLEAVED, bool TRANSPOSE>
__global__ void rotary_kernel(const typename element<D>::storage *query,   // (N, Hq, Dh)
                              const typename element<D>::storage *key,     // (N, Hk, Dh)
                              const int64_t *positions,                    // (N)
                              typename element<D>::storage *query_out,     // (N, Hq, Dh) or NULL
                              typename element<D>::storage *key_out,       // (N, Hk, Dh) or NULL
                              int query_heads, int key_heads, int head_dim, int rotary_dim,
                              rope_table<typename element<D>::compute> table, bool vectorized) {
    using C = typename element<D>::compute;
    __shared__ C cos_values[max_half], sin_values[max_half];
    const int64_t token = blockIdx.x;
    const int half = rotary_dim / 2;
    const C position = (C)positions[token]; // position_ids.float()
    for (int j = threadIdx.x; j < half; j += blockDim.x) {
        C s, c;
        sincos(table.inverse_frequency[j] * position, &s, &c);
        cos_values[j] = round_storage<D>(c * table.scaling);
        sin_values[j] = round_storage<D>(s * table.scaling);
    }
    __syncthreads();

    const int heads = query_heads + key_heads;
    const int pair_vectors = half / VEC, pass_vectors = (head_dim - rotary_dim) / VEC;
    const int rotate_items = heads * pair_vectors, items = rotate_items + heads * pass_vectors;
    for (int item = threadIdx.x; item < items; item += blockDim.x) {
        const bool rotate = item < rotate_items;
        const int head = rotate ? item / pair_vectors : (item - rotate_items) / pass_vectors;
        const int slot = rotate ? item % pair_vectors : (item - rotate_items) % pass_vectors;
        const bool is_query = head < query_heads;
        typename element<D>::storage *out = is_query ? query_out : key_out;
        if (!out) continue;
        const int64_t offset =
            is_query ? (token * query_heads + head) * head_dim : (token * key_heads + (head - query_heads)) * head_dim;
        const auto *in = (is_query ? query : key) + offset;
        out += offset;
        if (!rotate) {
            const int column = rotary_dim + slot * VEC;
            C values[VEC];
            load_values<D, VEC>(in + column, vectorized, values);
            store_values<D, VEC>(out + column, vectorized, values);
            continue;
        }
        const int j = slot * VEC;
        if (INTERLEAVED) { // VEC == 1
            const int read_first = TRANSPOSE ? j : 2 * j, read_second = TRANSPOSE ? j + half : 2 * j + 1;
            const int write_first = TRANSPOSE ? 2 * j : j, write_second = TRANSPOSE ? 2 * j + 1 : j + half;
            const C x1 = element<D>::load(in[read_first]), x2 = element<D>::load(in[read_second]);
            const C c = cos_values[j], s = TRANSPOSE ? -sin_values[j] : sin_values[j];
            out[write_first] = element<D>::store(x1 * c - x2 * s);
            out[write_second] = element<D>::store(x2 * c + x1 * s);
        } else {
            C x1[VEC], x2[VEC], y1[VEC], y2[VEC];
            load_values<D, VEC>(in + j, vectorized, x1);
            load_values<D, VEC>(in + j + half, vectorized, x2);
#pragma unroll
            for (int v = 0; v < VEC; v++) {
                const C c = cos_values[j + v], s = TRANSPOSE ? -sin_values[j + v] : sin_values[j + v];
                y1[v] = x1[v] * c - x2[v] * s;
                y2[v] = x2[v] * c + x1[v] * s;
            }
            store_values<D, VEC>(out + j, vectorized, y1);
            store_values<D, VEC>(out + j + half, vectorized, y2);
        }
    }
}

struct rotary_call {
    const parity_tensor *query, *key;     // inputs (forward: q, k; backward: dq_out, dk_out)
    parity_tensor *query_out, *key_out;   // outputs (NULL: not written)
};

template <parity_dtype D, bool TRANSPOSE>
parity_error *launch(const parity_exec *exec, const parity_rotary_args *args, const parity_rotary_sizes &sizes,
                     const rotary_call &call) {
    using S = typename element<D>::storage;
    using C = typename element<D>::compute;
    const int half = (int)(sizes.rotary_dim / 2);
    double inverse_frequency[max_half], attention_scaling = 1;
    PARITY_TRY(parity_rotary_frequencies(args->rope, sizes.rotary_dim, D == PARITY_F64 ? PARITY_F64 : PARITY_F32,
                                         inverse_frequency, &attention_scaling));
    rope_table<C> table = {};
    for (int j = 0; j < half; j++) table.inverse_frequency[j] = (C)inverse_frequency[j];
    table.scaling = (C)attention_scaling;

    const bool interleaved = args->rope->layout == PARITY_ROTARY_INTERLEAVED;
    constexpr int FULL = full_vector<D>();
    const bool vector_shape = !interleaved && half % FULL == 0 && sizes.head_dim % FULL == 0 &&
                              (sizes.head_dim - sizes.rotary_dim) % FULL == 0;
    const bool vectorized = vector_shape && aligned16(call.query->data, call.key->data,
                                                      call.query_out ? call.query_out->data : nullptr,
                                                      call.key_out ? call.key_out->data : nullptr);
    const int vec = vector_shape ? FULL : 1;
    // Threads per token: the items (rotated pairs and pass-through vectors) in equal rounds of <= 256.
    const int64_t items = (sizes.query_heads + sizes.key_heads) *
                          (sizes.rotary_dim / 2 + (sizes.head_dim - sizes.rotary_dim)) / vec;
    const int64_t rounds = std::max<int64_t>(1, (items + 255) / 256);
    const int threads = (int)std::max<int64_t>(32, ((items + rounds - 1) / rounds + 31) / 32 * 32);
    const unsigned grid = (unsigned)sizes.tokens;
    const S *query = (const S *)call.query->data, *key = (const S *)call.key->data;
    S *query_out = call.query_out ? (S *)call.query_out->data : nullptr;
    S *key_out = call.key_out ? (S *)call.key_out->data : nullptr;
    const int64_t *positions = (const int64_t *)args->positions->data;
    const int hq = (int)sizes.query_heads, hk = (int)sizes.key_heads, dh = (int)sizes.head_dim, rd = (int)sizes.rotary_dim;
    if (interleaved)
        rotary_kernel<D, 1, true, TRANSPOSE><<<grid, threads, 0, parity_cuda_stream(exec)>>>(
            query, key, positions, query_out, key_out, hq, hk, dh, rd, table, false);
    else if (vector_shape)
        rotary_kernel<D, FULL, false, TRANSPOSE><<<grid, threads, 0, parity_cuda_stream(exec)>>>(
            query, key, positions, query_out, key_out, hq, hk, dh, rd, table, vectorized);
    else
        rotary_kernel<D, 1, false, TRANSPOSE><<<grid, threads, 0, parity_cuda_stream(exec)>>>(
            query, key, positions, query_out, key_out, hq, hk, dh, rd, table, false);
    PARITY_CUDA_TRY_LAUNCH("rotary_kernel");
    return NULL;
}

parity_error *check_call(const parity_rotary_args *args, const parity_rotary_grads *grads, bool allow_partial,
                         const char *backend, parity_rotary_sizes *sizes) {
    PARITY_TRY(parity_rotary_check(args, sizes));
    if (grads) PARITY_TRY(parity_rotary_check_grads(args, grads));
    const parity_device device = args->query->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "rotary: query is on %s; the %s backend runs on cuda",
                            parity_device_type_name(device.type), backend);
    const parity_tensor *tensors[] = {args->query, args->key, args->positions, args->query_out, args->key_out,
                                      grads ? grads->dquery_out : NULL, grads ? grads->dkey_out : NULL,
                                      grads ? grads->dquery : NULL, grads ? grads->dkey : NULL};
    const char *names[] = {"query", "key", "positions", "query_out", "key_out", "dquery_out", "dkey_out", "dquery", "dkey"};
    for (int i = 0; i < 9; i++) PARITY_TRY(parity_cuda_check_tensor("rotary", names[i], tensors[i], device));
    if (!allow_partial && sizes->rotary_dim < sizes->head_dim)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                            "rotary: the %s backend rotates whole heads; partial rotary (rotary_dim %lld of head_dim %lld, "
                            "partial_rotary_factor %g) is not supported",
                            backend, (long long)sizes->rotary_dim, (long long)sizes->head_dim,
                            args->rope->partial_rotary_factor);
    if (sizes->rotary_dim / 2 > max_half)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "rotary: the %s backend handles rotary_dim up to %d, not %lld",
                            backend, 2 * max_half, (long long)sizes->rotary_dim);
    if (sizes->tokens > 0x7fffffffLL || (sizes->query_heads + sizes->key_heads) * sizes->head_dim > 0x7fffffffLL)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "rotary: the %s backend: %lld tokens x %lld heads exceed its index range",
                            backend, (long long)sizes->tokens, (long long)(sizes->query_heads + sizes->key_heads));
    return NULL;
}

} // namespace

extern "C" parity_error *parity_rotary_cuda_forward(const parity_exec *exec, const parity_rotary_args *args,
                                                    parity_saved *saved, bool allow_partial, const char *backend) {
    parity_rotary_sizes sizes;
    PARITY_TRY(check_call(args, NULL, allow_partial, backend, &sizes));
    if (sizes.tokens == 0) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(args->query->device.index));
    rotary_call call = {args->query, args->key, args->query_out, args->key_out};
    return dispatch_float(args->query->dtype, "rotary", [&](auto tag) -> parity_error * {
        return launch<decltype(tag)::value, false>(exec, args, sizes, call);
    });
}

extern "C" parity_error *parity_rotary_cuda_backward(const parity_exec *exec, const parity_rotary_args *args,
                                                     const parity_saved *saved, const parity_rotary_grads *grads,
                                                     bool allow_partial, const char *backend) {
    parity_rotary_sizes sizes;
    PARITY_TRY(check_call(args, grads, allow_partial, backend, &sizes));
    if (sizes.tokens == 0 || (!grads->dquery && !grads->dkey)) return NULL;
    PARITY_CUDA_TRY(cudaSetDevice(args->query->device.index));
    rotary_call call = {grads->dquery_out, grads->dkey_out, grads->dquery, grads->dkey};
    return dispatch_float(args->query->dtype, "rotary", [&](auto tag) -> parity_error * {
        return launch<decltype(tag)::value, true>(exec, args, sizes, call);
    });
}

// eager.cu: the reference attention on CUDA (value "eager"), the computation of eager.c (HF's
// eager_attention_forward) with cuBLAS GEMMs (ops/core/cuda/blas.h) and one thread per softmax row:
//   scores = q_h k_g^T                          GEMM in the storage dtype (bf16: f32 accumulation,
//                                               stored bf16), g = h / (Hq / Hk) as repeat_kv
//   probs  = softmax_f32(round(scores * scale)) over the visible keys, saved in the compute dtype
//   output = round(probs) v_g                   GEMM on the probabilities cast to the storage dtype
// For each member of a query-head group, one strided-batched GEMM covers every kv head. Backward:
//   dprobs  = round(dout_h v_g^T)               dscaled = round(round(p (dprobs - rowsum(dprobs p))) scale)
//   dquery  = dscaled k_g                       dkey_h = dscaled^T q_h     dvalue_h = round(p)^T dout_h
// and dkey, dvalue sum the per-head results (each rounded to the storage dtype) over the group in
// f32, as repeat_kv's backward does. Documents run one after the other; the saved probabilities
// take Hq * sum(L^2) compute values, the scratch Hq * L^2 storage values of the longest document.
#include <stdlib.h>
#include <string.h>

#include "ops/core/cuda/blas.h"
#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "ops/attention/attention.h"
#include "ops/attention/attention_cuda.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

// The visible keys of one document (positions inside it).
struct attention_mask {
    int64_t length;         // L
    bool causal;
    int64_t sliding_window; // 0 = none
    __device__ bool visible(int64_t query, int64_t key) const {
        if (causal && key > query) return false;
        return sliding_window == 0 || query - key < sliding_window;
    }
};

// One thread per (head, query) row of a document: scores (storage) -> probabilities (compute, saved),
// and the probabilities rounded to the storage dtype written back over the scores (the GEMM input
// of the output).
template <parity_dtype D>
__global__ void attention_softmax_rows(attention_mask mask, int64_t rows, typename scalar<D>::compute scale,
                                       typename scalar<D>::storage *scores, typename scalar<D>::compute *probabilities) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(row, rows) {
        int64_t query = row % mask.length;
        typename S::storage *score = scores + row * mask.length;
        C *p = probabilities + row * mask.length;
        C maximum = -INFINITY;
        for (int64_t key = 0; key < mask.length; key++) {
            if (!mask.visible(query, key)) continue;
            C scaled = round_storage<D>(S::load(score[key]) * scale);
            p[key] = scaled;
            maximum = fmax(maximum, scaled);
        }
        C sum = 0;
        for (int64_t key = 0; key < mask.length; key++) {
            if (!mask.visible(query, key)) {
                p[key] = 0;
                continue;
            }
            p[key] = precise_exp(p[key] - maximum);
            sum += p[key];
        }
        for (int64_t key = 0; key < mask.length; key++) {
            p[key] = p[key] / sum;
            score[key] = S::store(p[key]);
        }
    }
}

// rounded = probabilities cast to the storage dtype (count elements).
template <parity_dtype D>
__global__ void attention_round_probabilities(int64_t count, const typename scalar<D>::compute *probabilities,
                                              typename scalar<D>::storage *rounded) {
    PARITY_CUDA_FOR_EACH(i, count) rounded[i] = scalar<D>::store(probabilities[i]);
}

// One thread per (head, query) row: dprobs (storage) -> dscaled (storage), in place.
template <parity_dtype D>
__global__ void attention_softmax_backward_rows(int64_t length, int64_t rows, typename scalar<D>::compute scale,
                                                const typename scalar<D>::compute *probabilities,
                                                typename scalar<D>::storage *dprobs) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(row, rows) {
        const C *p = probabilities + row * length;
        typename S::storage *dp = dprobs + row * length;
        C dot = 0;
        for (int64_t key = 0; key < length; key++) dot += S::load(dp[key]) * p[key];
        for (int64_t key = 0; key < length; key++) {
            C dscore = round_storage<D>(p[key] * (S::load(dp[key]) - dot));
            dp[key] = S::store(dscore * scale);
        }
    }
}

// out[start + i, g, c] = sum over the group members m of per_head[g * G + m, i, c] (f32 sum of the
// storage-rounded per-head terms, one rounding at the end). per_head is (Hq, L, width).
template <parity_dtype D>
__global__ void attention_sum_groups(int64_t length, int64_t kv_heads, int64_t group, int64_t width,
                                     const typename scalar<D>::storage *per_head, typename scalar<D>::storage *out) {
    using S = scalar<D>;
    PARITY_CUDA_FOR_EACH(index, length * kv_heads * width) {
        int64_t c = index % width, g = (index / width) % kv_heads, i = index / (width * kv_heads);
        typename S::compute sum = 0;
        for (int64_t member = 0; member < group; member++)
            sum += S::load(per_head[((g * group + member) * length + i) * width + c]);
        out[index] = S::store(sum); // out points at the document's first token: index = (i * Hk + g) * width + c
    }
}

// A GEMM operand with one matrix per head: head h's matrix starts `head_stride` elements after head
// h - 1's, rows `ld` apart. per_query_head operands are indexed by the query head, the others by kv head.
struct head_operand {
    const void *base;
    int64_t ld, head_stride;
    bool per_query_head;
    bool transposed;
};

// C_h = op(A_h) op(B_h) (m x n, inner size k) for every query head h (C per query head): for each
// member of a group, one strided-batched GEMM over the kv heads.
parity_error *gemm_over_heads(const parity_exec *exec, parity_dtype dtype, const parity_attention_dims &dims, int64_t m,
                              int64_t n, int64_t k, head_operand a, head_operand b, head_operand c) {
    int64_t group = dims.query_heads / dims.kv_heads;
    size_t element = parity_dtype_size(dtype);
    auto pointer = [&](const head_operand &x, int64_t member) {
        return static_cast<const char *>(x.base) + (x.per_query_head ? member * x.head_stride : 0) * (int64_t)element;
    };
    auto batch_stride = [&](const head_operand &x) { return x.per_query_head ? group * x.head_stride : x.head_stride; };
    for (int64_t member = 0; member < group; member++) {
        parity_cuda_gemm_desc desc = {};
        desc.dtype = dtype;
        desc.batch = dims.kv_heads;
        desc.m = m;
        desc.n = n;
        desc.k = k;
        desc.transpose_a = a.transposed;
        desc.transpose_b = b.transposed;
        desc.a = pointer(a, member);
        desc.b = pointer(b, member);
        desc.c = const_cast<char *>(pointer(c, member));
        desc.lda = a.ld;
        desc.ldb = b.ld;
        desc.ldc = c.ld;
        desc.stride_a = batch_stride(a);
        desc.stride_b = batch_stride(b);
        desc.stride_c = batch_stride(c);
        desc.alpha = 1.0;
        desc.beta = 0.0;
        PARITY_TRY(parity_cuda_gemm(exec, &desc));
    }
    return NULL;
}

// Validation shared by forward and backward: sizes, devices, strictly increasing boundaries (read to the host).
// S = 0 documents (N = 0) is a valid, empty call, as on the CPU.
parity_error *prepare_call(const parity_attention_args *args, parity_attention_dims *dims, scoped_documents *documents) {
    PARITY_TRY(parity_attention_cuda_check(args, dims, &documents->documents.offsets));
    documents->documents.count = args->cu_seqlens->numel - 1;
    PARITY_CUDA_TRY(cudaSetDevice(args->query->device.index));
    return NULL;
}

// Offsets of each document's probabilities (Hq blocks of L x L) in the saved tensor; entry S is the total.
void probability_offsets(const parity_documents &documents, int64_t query_heads, int64_t *offsets) {
    offsets[0] = 0;
    for (int64_t s = 0; s < documents.count; s++) {
        int64_t length = documents.offsets[s + 1] - documents.offsets[s];
        offsets[s + 1] = offsets[s] + query_heads * length * length;
    }
}

template <parity_dtype D>
parity_error *forward_typed(const parity_exec *exec, const parity_attention_args *args,
                            const parity_attention_dims &dims, const parity_documents &documents,
                            const int64_t *offsets, parity_tensor *probabilities) {
    using S = scalar<D>;
    using storage = typename S::storage;
    using C = typename S::compute;
    cudaStream_t stream = parity_cuda_stream(exec);
    int64_t hq = dims.query_heads, hk = dims.kv_heads, d = dims.head_dim, dv = dims.value_dim;
    int64_t longest = 0;
    for (int64_t s = 0; s < documents.count; s++)
        longest = documents.offsets[s + 1] - documents.offsets[s] > longest ? documents.offsets[s + 1] - documents.offsets[s] : longest;
    scoped_tensor scores; // (Hq, L, L) storage: the scores, then the rounded probabilities
    PARITY_TRY(scores.alloc_1d(D, args->query->device, hq * longest * longest));
    C scale = (C)args->scale;
    for (int64_t s = 0; s < documents.count; s++) {
        int64_t start = documents.offsets[s], length = documents.offsets[s + 1] - start;
        const storage *q = static_cast<const storage *>(args->query->data) + start * hq * d;
        const storage *k = static_cast<const storage *>(args->key->data) + start * hk * d;
        const storage *v = static_cast<const storage *>(args->value->data) + start * hk * dv;
        storage *y = static_cast<storage *>(args->output->data) + start * hq * dv;
        C *p = static_cast<C *>(probabilities->data) + offsets[s];
        PARITY_TRY(gemm_over_heads(exec, D, dims, length, length, d, {q, hq * d, d, true, false},
                                   {k, hk * d, d, false, true},
                                   {scores.tensor.data, length, length * length, true, false}));
        attention_mask mask = {length, args->causal, args->sliding_window};
        attention_softmax_rows<D>
            <<<grid_for(hq * length), 256, 0, stream>>>(mask, hq * length, scale, scores.data<storage>(), p);
        PARITY_CUDA_TRY_LAUNCH("attention_softmax_rows");
        PARITY_TRY(gemm_over_heads(exec, D, dims, length, dv, length,
                                   {scores.tensor.data, length, length * length, true, false},
                                   {v, hk * dv, dv, false, false}, {y, hq * dv, dv, true, false}));
    }
    return NULL;
}

parity_error *attention_cuda_eager_forward(const parity_exec *exec, const parity_attention_args *args,
                                           parity_saved *saved) {
    parity_attention_dims dims;
    scoped_documents documents;
    PARITY_TRY(prepare_call(args, &dims, &documents));
    int64_t *offsets = static_cast<int64_t *>(malloc((size_t)(documents.documents.count + 1) * sizeof(int64_t)));
    if (!offsets) return PARITY_ERROR(PARITY_ERROR_MEMORY, "attention: offsets of %lld documents", (long long)documents.documents.count);
    probability_offsets(documents.documents, dims.query_heads, offsets);
    parity_dtype compute = args->query->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    int64_t total = offsets[documents.documents.count];
    int64_t shape[1] = {total};
    parity_tensor *probabilities;
    parity_error *error = parity_saved_alloc(saved, &probabilities, compute, args->query->device, 1, shape);
    if (!error)
        error = dispatch_float(args->query->dtype, "attention", [&](auto tag) {
            return forward_typed<decltype(tag)::value>(exec, args, dims, documents.documents, offsets, probabilities);
        });
    free(offsets);
    return error;
}

template <parity_dtype D>
parity_error *backward_typed(const parity_exec *exec, const parity_attention_args *args,
                             const parity_attention_grads *grads, const parity_attention_dims &dims,
                             const parity_documents &documents, const int64_t *offsets,
                             const parity_tensor *probabilities) {
    using S = scalar<D>;
    using storage = typename S::storage;
    using C = typename S::compute;
    cudaStream_t stream = parity_cuda_stream(exec);
    parity_device device = args->query->device;
    int64_t hq = dims.query_heads, hk = dims.kv_heads, d = dims.head_dim, dv = dims.value_dim, group = hq / hk;
    int64_t longest = 0;
    for (int64_t s = 0; s < documents.count; s++)
        longest = documents.offsets[s + 1] - documents.offsets[s] > longest ? documents.offsets[s + 1] - documents.offsets[s] : longest;
    bool through_scores = grads->dquery || grads->dkey;
    scoped_tensor rounded, dprobs, per_head_key, per_head_value; // (Hq, L, L), (Hq, L, L), (Hq, L, D), (Hq, L, Dv)
    if (grads->dvalue) PARITY_TRY(rounded.alloc_1d(D, device, hq * longest * longest));
    if (grads->dvalue) PARITY_TRY(per_head_value.alloc_1d(D, device, hq * longest * dv));
    if (through_scores) PARITY_TRY(dprobs.alloc_1d(D, device, hq * longest * longest));
    if (grads->dkey) PARITY_TRY(per_head_key.alloc_1d(D, device, hq * longest * d));
    C scale = (C)args->scale;
    for (int64_t s = 0; s < documents.count; s++) {
        int64_t start = documents.offsets[s], length = documents.offsets[s + 1] - start, square = length * length;
        const storage *q = static_cast<const storage *>(args->query->data) + start * hq * d;
        const storage *k = static_cast<const storage *>(args->key->data) + start * hk * d;
        const storage *v = static_cast<const storage *>(args->value->data) + start * hk * dv;
        const storage *dy = static_cast<const storage *>(grads->doutput->data) + start * hq * dv;
        const C *p = static_cast<const C *>(probabilities->data) + offsets[s];
        if (grads->dvalue) {
            attention_round_probabilities<D>
                <<<grid_for(hq * square), 256, 0, stream>>>(hq * square, p, rounded.data<storage>());
            PARITY_CUDA_TRY_LAUNCH("attention_round_probabilities");
            PARITY_TRY(gemm_over_heads(
                exec, D, dims, length, dv, length, {rounded.tensor.data, length, square, true, true},
                {dy, hq * dv, dv, true, false}, {per_head_value.tensor.data, dv, length * dv, true, false}));
            storage *out = static_cast<storage *>(grads->dvalue->data) + start * hk * dv;
            attention_sum_groups<D><<<grid_for(length * hk * dv), 256, 0, stream>>>(
                length, hk, group, dv, per_head_value.data<storage>(), out);
            PARITY_CUDA_TRY_LAUNCH("attention_sum_groups");
        }
        if (!through_scores) continue;
        PARITY_TRY(gemm_over_heads(exec, D, dims, length, length, dv, {dy, hq * dv, dv, true, false},
                                   {v, hk * dv, dv, false, true}, {dprobs.tensor.data, length, square, true, false}));
        attention_softmax_backward_rows<D>
            <<<grid_for(hq * length), 256, 0, stream>>>(length, hq * length, scale, p, dprobs.data<storage>());
        PARITY_CUDA_TRY_LAUNCH("attention_softmax_backward_rows");
        if (grads->dquery) {
            storage *dq = static_cast<storage *>(grads->dquery->data) + start * hq * d;
            PARITY_TRY(gemm_over_heads(exec, D, dims, length, d, length,
                                       {dprobs.tensor.data, length, square, true, false}, {k, hk * d, d, false, false},
                                       {dq, hq * d, d, true, false}));
        }
        if (grads->dkey) {
            PARITY_TRY(gemm_over_heads(exec, D, dims, length, d, length,
                                       {dprobs.tensor.data, length, square, true, true}, {q, hq * d, d, true, false},
                                       {per_head_key.tensor.data, d, length * d, true, false}));
            storage *out = static_cast<storage *>(grads->dkey->data) + start * hk * d;
            attention_sum_groups<D><<<grid_for(length * hk * d), 256, 0, stream>>>(length, hk, group, d,
                                                                                   per_head_key.data<storage>(), out);
            PARITY_CUDA_TRY_LAUNCH("attention_sum_groups");
        }
    }
    return NULL;
}

parity_error *attention_cuda_eager_backward(const parity_exec *exec, const parity_attention_args *args,
                                            const parity_saved *saved, const parity_attention_grads *grads) {
    parity_attention_dims dims;
    scoped_documents documents;
    PARITY_TRY(prepare_call(args, &dims, &documents));
    PARITY_TRY(parity_attention_cuda_check_grads(args, grads));
    parity_device device = args->query->device;
    const parity_tensor *probabilities;
    PARITY_TRY(parity_saved_get(saved, 0, &probabilities));
    int64_t *offsets = static_cast<int64_t *>(malloc((size_t)(documents.documents.count + 1) * sizeof(int64_t)));
    if (!offsets) return PARITY_ERROR(PARITY_ERROR_MEMORY, "attention: offsets of %lld documents", (long long)documents.documents.count);
    probability_offsets(documents.documents, dims.query_heads, offsets);
    parity_error *error = NULL;
    if (probabilities->numel != offsets[documents.documents.count] || !parity_device_equal(probabilities->device, device))
        error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "attention: saved probabilities do not match cu_seqlens and the device");
    if (!error)
        error = dispatch_float(args->query->dtype, "attention", [&](auto tag) {
            return backward_typed<decltype(tag)::value>(exec, args, grads, dims, documents.documents, offsets,
                                                        probabilities);
        });
    free(offsets);
    return error;
}

const parity_attention_kernels attention_cuda_eager_kernels = {attention_cuda_eager_forward, attention_cuda_eager_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(attention, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_ATTENTION;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_SLIDING_WINDOW | PARITY_CAP_BATCH_INVARIANT |
                           PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &attention_cuda_eager_kernels;
    backend.description = "reference attention on CUDA (HF eager_attention_forward: cuBLAS scores, f32 softmax), "
                          "f64/f32/bf16";
    return parity_registry_add(&backend);
}

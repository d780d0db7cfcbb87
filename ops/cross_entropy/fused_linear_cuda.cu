// fused_linear_cuda.cu: the fused linear + cross-entropy kernels and launchers (see fused_linear_cuda.h).
#include <algorithm>
#include <math.h>

#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/fused_rows.cuh"

extern "C" {
#include "ops/core/cpu_math.h"
#include "ops/core/cuda/blas.h"
#include "ops/cross_entropy/fused_linear_cuda.h"
}

using namespace parity_fused;

namespace {

// Counts the targets != ignore_index and finds the first one outside [0, vocab).
__global__ void count_targets_kernel(const int64_t *targets, int64_t tokens, int64_t vocab, int64_t ignore_index,
                                     unsigned long long *valid_count, long long *first_bad) {
    unsigned long long valid = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < tokens; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t target = targets[i];
        if (target == ignore_index) continue;
        if (target < 0 || target >= vocab) atomicMin(first_bad, (long long)i);
        else valid++;
    }
    valid = warp_sum(valid);
    if ((threadIdx.x & 31) == 0 && valid) atomicAdd(valid_count, valid);
}

template <typename C> struct softmax_state {
    C maximum, sum; // sum of exp(x - maximum)
};

template <typename C> __device__ __forceinline__ softmax_state<C> combine(softmax_state<C> a, softmax_state<C> b) {
    if (a.maximum == C(-INFINITY)) return b;
    if (b.maximum == C(-INFINITY)) return a;
    const C maximum = max(a.maximum, b.maximum);
    return {maximum, a.sum * exp(a.maximum - maximum) + b.sum * exp(b.maximum - maximum)};
}

// One block per row of the chunk: the row's log-sum-exp, its loss lse - x[target] (0 for an ignored
// row), and in place of the logits dlogits = (softmax - onehot) * scale (0 for an ignored row).
template <parity_dtype D, int VEC>
__global__ void logits_gradient_kernel(typename element<D>::storage *logits, // (c, V): logits in, dlogits out
                                       const int64_t *targets,               // (c)
                                       int64_t vocab, int64_t ignore_index, typename element<D>::compute scale,
                                       typename element<D>::compute *row_loss, // (c)
                                       bool vectorized) {
    using C = typename element<D>::compute;
    __shared__ softmax_state<C> warp_states[32];
    __shared__ C target_logit;
    auto *row = logits + (int64_t)blockIdx.x * vocab;
    const int64_t target = targets[blockIdx.x];
    const int64_t vectors = vocab / VEC;
    if (target == ignore_index) {
        C zeros[VEC];
#pragma unroll
        for (int j = 0; j < VEC; j++) zeros[j] = 0;
        for (int64_t v = threadIdx.x; v < vectors; v += blockDim.x) store_values<D, VEC>(row + v * VEC, vectorized, zeros);
        if (threadIdx.x == 0) row_loss[blockIdx.x] = 0;
        return;
    }
    if (threadIdx.x == 0) target_logit = element<D>::load(row[target]);

    softmax_state<C> state = {C(-INFINITY), C(0)};
    for (int64_t v = threadIdx.x; v < vectors; v += blockDim.x) {
        C x[VEC];
        load_values<D, VEC>(row + v * VEC, vectorized, x);
        C local = x[0];
#pragma unroll
        for (int j = 1; j < VEC; j++) local = max(local, x[j]);
        if (local > state.maximum) {
            state.sum = state.maximum == C(-INFINITY) ? C(0) : state.sum * exp(state.maximum - local);
            state.maximum = local;
        }
#pragma unroll
        for (int j = 0; j < VEC; j++) state.sum += exp(x[j] - state.maximum);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        softmax_state<C> other = {__shfl_xor_sync(0xffffffffu, state.maximum, offset),
                                  __shfl_xor_sync(0xffffffffu, state.sum, offset)};
        state = combine(state, other);
    }
    if ((threadIdx.x & 31) == 0) warp_states[threadIdx.x >> 5] = state;
    __syncthreads();
    state = warp_states[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); w++) state = combine(state, warp_states[w]);
    const C log_sum = log(state.sum);
    if (threadIdx.x == 0) row_loss[blockIdx.x] = log_sum - (target_logit - state.maximum);

    const C inverse_sum = C(1) / state.sum;
    for (int64_t v = threadIdx.x; v < vectors; v += blockDim.x) {
        C x[VEC];
        load_values<D, VEC>(row + v * VEC, vectorized, x);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            const C probability = exp(x[j] - state.maximum) * inverse_sum;
            x[j] = (probability - (v * VEC + j == target ? C(1) : C(0))) * scale;
        }
        store_values<D, VEC>(row + v * VEC, vectorized, x);
    }
}

// loss = sum over chunks of (sum of the chunk's row losses) / divisor, in chunk order; each chunk's
// sum in a fixed tree order. One block.
template <typename C>
__global__ void loss_kernel(const C *row_loss, int64_t tokens, int64_t chunk, C divisor, C *loss) {
    __shared__ C scratch[32];
    C total = 0;
    for (int64_t start = 0; start < tokens; start += chunk) {
        const int64_t end = start + chunk < tokens ? start + chunk : tokens;
        C sum = 0;
        for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) sum += row_loss[i];
        sum = group_sum(sum, scratch, (int)blockDim.x);
        total += sum / divisor;
    }
    if (threadIdx.x == 0) *loss = total;
}

// destination = source * dloss, rounded once to the dtype.
template <parity_dtype D, int VEC>
__global__ void rescale_kernel(const typename element<D>::storage *source, const typename element<D>::compute *dloss,
                               typename element<D>::storage *destination, int64_t vectors, int64_t tail, bool vectorized) {
    using C = typename element<D>::compute;
    const C factor = *dloss;
    for (int64_t v = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; v < vectors; v += (int64_t)gridDim.x * blockDim.x) {
        C values[VEC];
        load_values<D, VEC>(source + v * VEC, vectorized, values);
#pragma unroll
        for (int j = 0; j < VEC; j++) values[j] *= factor;
        store_values<D, VEC>(destination + v * VEC, vectorized, values);
    }
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const int64_t i = vectors * VEC + threadIdx.x;
        destination[i] = element<D>::store(element<D>::load(source[i]) * factor);
    }
}

parity_error *check_devices(const parity_cross_entropy_args *args, const parity_cross_entropy_grads *grads,
                            const char *backend) {
    const parity_device device = args->hidden->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "cross_entropy: hidden is on %s; the %s backend runs on cuda",
                            parity_device_type_name(device.type), backend);
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "hidden", args->hidden, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "targets", args->targets, device));
    PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "loss", args->loss, device));
    if (grads) {
        PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "dloss", grads->dloss, device));
        PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "dhidden", grads->dhidden, device));
        PARITY_TRY(parity_cuda_check_tensor("cross_entropy", "dweight", grads->dweight, device));
    }
    return NULL;
}

// The valid-target count, or a SHAPE error naming the first target outside the vocabulary.
parity_error *count_targets(const parity_exec *exec, const parity_cross_entropy_args *args, int64_t tokens,
                            int64_t vocab, int64_t *valid_count) {
    const parity_device device = args->hidden->device;
    const cudaStream_t stream = parity_cuda_stream(exec);
    pool_scratch counters;
    PARITY_TRY(counters.alloc(device, 2 * sizeof(long long), stream));
    const long long initial[2] = {0, (long long)tokens}; // valid count, first bad position (tokens = none)
    PARITY_CUDA_TRY(cudaMemcpyAsync(counters.data, initial, sizeof initial, cudaMemcpyHostToDevice, stream));
    const unsigned grid = (unsigned)std::min<int64_t>(1024, std::max<int64_t>(1, (tokens + 255) / 256));
    count_targets_kernel<<<grid, 256, 0, parity_cuda_stream(exec)>>>(
        (const int64_t *)args->targets->data, tokens, vocab, args->ignore_index, counters.as<unsigned long long>(),
        counters.as<long long>(sizeof(long long)));
    PARITY_CUDA_TRY_LAUNCH("count_targets_kernel");
    long long result[2];
    PARITY_CUDA_TRY(cudaMemcpyAsync(result, counters.data, sizeof result, cudaMemcpyDeviceToHost, stream));
    PARITY_CUDA_TRY(cudaStreamSynchronize(stream)); // the host reads the counts
    if (result[1] < tokens) {
        int64_t target = 0;
        PARITY_CUDA_TRY(cudaMemcpyAsync(&target, (const int64_t *)args->targets->data + result[1], sizeof target,
                                        cudaMemcpyDeviceToHost, stream));
        PARITY_CUDA_TRY(cudaStreamSynchronize(stream));
        return PARITY_ERROR(PARITY_ERROR_SHAPE,
                            "cross_entropy: target at position %lld is %lld, outside the vocabulary [0, %lld) and not "
                            "ignore_index %lld",
                            result[1], (long long)target, (long long)vocab, (long long)args->ignore_index);
    }
    *valid_count = (int64_t)result[0];
    return NULL;
}

template <parity_dtype D>
parity_error *run_chunks(const parity_exec *exec, const parity_cross_entropy_args *args, int64_t tokens, int64_t hidden,
                         int64_t vocab, int64_t chunk, bool per_chunk_loss, double divisor,
                         parity_tensor *saved_dhidden, parity_tensor *saved_dweight) {
    using S = typename element<D>::storage;
    using C = typename element<D>::compute;
    const parity_device device = args->hidden->device;
    pool_scratch chunk_logits, row_loss;
    PARITY_TRY(chunk_logits.alloc(device, (size_t)(chunk * vocab) * sizeof(S), parity_cuda_stream(exec)));
    PARITY_TRY(row_loss.alloc(device, (size_t)tokens * sizeof(C), parity_cuda_stream(exec)));
    constexpr int FULL = full_vector<D>();
    const bool vector_rows = vocab % FULL == 0;
    const int threads = (int)std::min<int64_t>(512, std::max<int64_t>(32, ((vector_rows ? vocab / FULL : vocab) + 31) / 32 * 32));
    const C divisor_c = (C)divisor;
    const C scale = C(1) / divisor_c; // d(sum / divisor) / d(row loss)
    const S *hidden_data = (const S *)args->hidden->data, *weight = (const S *)args->weight->data;
    const int64_t *targets = (const int64_t *)args->targets->data;
    S *logits = chunk_logits.as<S>();
    for (int64_t start = 0; start < tokens; start += chunk) {
        const int64_t rows = std::min(chunk, tokens - start);
        const S *hidden_rows = hidden_data + start * hidden;
        // logits (rows, V) = hidden_rows (rows, H) @ weight^T
        parity_cuda_gemm_desc logits_gemm =
            parity_cuda_gemm_packed(D, 1, rows, vocab, hidden, false, true, hidden_rows, weight, logits);
        PARITY_TRY_CONTEXT(parity_cuda_gemm(exec, &logits_gemm), "cross_entropy: logits of tokens %lld..%lld",
                           (long long)start, (long long)(start + rows));
        if (vector_rows)
            logits_gradient_kernel<D, FULL><<<(unsigned)rows, threads, 0, parity_cuda_stream(exec)>>>(
                logits, targets + start, vocab, args->ignore_index, scale, row_loss.as<C>() + start, true);
        else
            logits_gradient_kernel<D, 1><<<(unsigned)rows, threads, 0, parity_cuda_stream(exec)>>>(
                logits, targets + start, vocab, args->ignore_index, scale, row_loss.as<C>() + start, false);
        PARITY_CUDA_TRY_LAUNCH("logits_gradient_kernel");
        // dhidden rows (rows, H) = dlogits (rows, V) @ weight (V, H)
        parity_cuda_gemm_desc dhidden_gemm = parity_cuda_gemm_packed(D, 1, rows, hidden, vocab, false, false, logits,
                                                                      weight, (S *)saved_dhidden->data + start * hidden);
        PARITY_TRY_CONTEXT(parity_cuda_gemm(exec, &dhidden_gemm), "cross_entropy: dhidden of tokens %lld..%lld",
                           (long long)start, (long long)(start + rows));
        // dweight (V, H) (+)= dlogits^T (V, rows) @ hidden_rows (rows, H)
        parity_cuda_gemm_desc dweight_gemm = parity_cuda_gemm_packed(D, 1, vocab, hidden, rows, true, false, logits,
                                                                      hidden_rows, saved_dweight->data);
        dweight_gemm.beta = start == 0 ? 0.0 : 1.0;
        PARITY_TRY_CONTEXT(parity_cuda_gemm(exec, &dweight_gemm), "cross_entropy: dweight of tokens %lld..%lld",
                           (long long)start, (long long)(start + rows));
    }
    loss_kernel<C><<<1, 1024, 0, parity_cuda_stream(exec)>>>(
        row_loss.as<const C>(), tokens, per_chunk_loss ? chunk : tokens, divisor_c, (C *)args->loss->data);
    PARITY_CUDA_TRY_LAUNCH("loss_kernel");
    return NULL;
}

template <parity_dtype D>
parity_error *rescale(const parity_exec *exec, const parity_tensor *source, const parity_tensor *dloss,
                      parity_tensor *destination) {
    using S = typename element<D>::storage;
    using C = typename element<D>::compute;
    constexpr int FULL = full_vector<D>();
    const int64_t count = source->numel;
    if (count == 0) return NULL;
    const bool vectorized = aligned16(source->data, destination->data);
    const int64_t vectors = vectorized ? count / FULL : count, tail = vectorized ? count % FULL : 0;
    int multiprocessors = 1;
    PARITY_TRY(multiprocessor_count(source->device.index, &multiprocessors));
    const unsigned grid = (unsigned)std::max<int64_t>(1, std::min<int64_t>((vectors + 255) / 256, (int64_t)multiprocessors * 8));
    if (vectorized)
        rescale_kernel<D, FULL><<<grid, 256, 0, parity_cuda_stream(exec)>>>(
            (const S *)source->data, (const C *)dloss->data, (S *)destination->data, vectors, tail, true);
    else
        rescale_kernel<D, 1><<<grid, 256, 0, parity_cuda_stream(exec)>>>(
            (const S *)source->data, (const C *)dloss->data, (S *)destination->data, vectors, 0, false);
    PARITY_CUDA_TRY_LAUNCH("rescale_kernel");
    return NULL;
}

} // namespace

extern "C" int64_t parity_cross_entropy_liger_chunk_tokens(int64_t tokens, int64_t vocab, size_t element_size) {
    int64_t chunk = PARITY_CROSS_ENTROPY_LIGER_CHUNK_BYTES / (vocab * (int64_t)element_size);
    if (chunk > 64) chunk = chunk / 64 * 64;
    return std::max<int64_t>(1, std::min(chunk, tokens));
}

extern "C" parity_error *parity_cross_entropy_cuda_fused_forward(const parity_exec *exec,
                                                                 const parity_cross_entropy_args *args,
                                                                 parity_saved *saved, int64_t chunk_tokens,
                                                                 bool per_chunk_loss, const char *backend) {
    int64_t tokens, hidden, vocab;
    PARITY_TRY(parity_cross_entropy_check(args, &tokens, &hidden, &vocab));
    PARITY_CHECK(!args->logits, PARITY_ERROR_UNSUPPORTED,
                 "cross_entropy: %s never materializes logits; pass logits = NULL (eager can fill them)", backend);
    PARITY_TRY(check_devices(args, NULL, backend));
    const parity_device device = args->hidden->device;
    const parity_dtype dtype = args->hidden->dtype;
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    int64_t valid_count;
    PARITY_TRY(count_targets(exec, args, tokens, vocab, &valid_count));
    const double divisor = (double)(args->num_items_in_batch > 0 ? args->num_items_in_batch : valid_count);
    const int64_t chunk = std::max<int64_t>(1, std::min(chunk_tokens, tokens));

    parity_tensor *saved_dhidden, *saved_dweight;
    const int64_t dhidden_shape[2] = {tokens, hidden}, dweight_shape[2] = {vocab, hidden};
    PARITY_TRY(parity_saved_alloc(saved, &saved_dhidden, dtype, device, 2, dhidden_shape));
    PARITY_TRY(parity_saved_alloc(saved, &saved_dweight, dtype, device, 2, dweight_shape));
    PARITY_TRY(dispatch_float(dtype, "cross_entropy", [&](auto tag) -> parity_error * {
        return run_chunks<decltype(tag)::value>(exec, args, tokens, hidden, vocab, chunk, per_chunk_loss, divisor,
                                                saved_dhidden, saved_dweight);
    }));
    if (args->valid_count) *args->valid_count = valid_count;
    return NULL;
}

extern "C" parity_error *parity_cross_entropy_cuda_fused_backward(const parity_exec *exec,
                                                                  const parity_cross_entropy_args *args,
                                                                  const parity_saved *saved,
                                                                  const parity_cross_entropy_grads *grads,
                                                                  const char *backend) {
    int64_t tokens, hidden, vocab;
    PARITY_TRY(parity_cross_entropy_check(args, &tokens, &hidden, &vocab));
    PARITY_TRY(parity_cross_entropy_check_grads(args, grads));
    PARITY_TRY(check_devices(args, grads, backend));
    const parity_tensor *saved_dhidden, *saved_dweight;
    PARITY_TRY(parity_saved_get(saved, 0, &saved_dhidden));
    PARITY_TRY(parity_saved_get(saved, 1, &saved_dweight));
    PARITY_CUDA_TRY(cudaSetDevice(args->hidden->device.index));
    return dispatch_float(args->hidden->dtype, "cross_entropy", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        if (grads->dhidden) PARITY_TRY(rescale<D>(exec, saved_dhidden, grads->dloss, grads->dhidden));
        if (grads->dweight) PARITY_TRY(rescale<D>(exec, saved_dweight, grads->dloss, grads->dweight));
        return NULL;
    });
}

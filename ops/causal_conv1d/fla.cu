// fla.cu: causal_conv1d "fla" on CUDA (flash-linear-attention's causal_conv1d, the GPU default of the
// Qwen3.5 / Qwen3-Next GatedDeltaNet conv), parity's own kernels: the depthwise causal conv (+ SiLU)
// over packed documents in one pass over the data each way, where eager.cu runs one thread per element
// and keeps the pre-activation and dz as tensors.
//   out[t, c] = act(sum_{j=0}^{K-1} weight[c, j] * x[t - (K - 1) + j, c]),  x = 0 before the document start
//
// K = 1 .. 4 (the fast path; Qwen3.5's linear_conv_kernel_dim is 4): the channels are the contiguous
// dimension, so a block of 128 threads takes 128 x VEC adjacent channels (VEC = 2: bf16x2 / float2
// accesses when C is even and the tensors allow it, else 1; f64 always 1) and walks a range of
// tokens, each thread sliding a window of the last K inputs of its channels through registers: every
// input row is read once (plus K - 1 halo rows a block), every output row written once, and a chunk of
// rows' loads (64 bytes a thread) is issued before any is used (the memory is the limit: 2 x N x C
// elements forward, 3 x N x C backward).
//   forward:  blocks of 32 tokens; nothing is saved (the backward recomputes the pre-activation).
//   backward: blocks of a range of tokens [first, last) (a function of N and C only, below); from one
//             read of x and dy rows first - (K - 1) .. last + K - 2 each thread recomputes z and
//             dz = dy * silu'(z) for its channels, writes dx[t] = sum_j w[j] dz[t + K - 1 - j] and
//             keeps its channels' K dweight sums over the block's own tokens in registers; they go to
//             row b of a (blocks, C * K) scratch, and sum_partials (fused_rows.cuh) adds the rows in a
//             fixed order. No atomics anywhere: bitwise repeatable run to run (PARITY_CAP_DETERMINISTIC).
// Document boundaries: a block first writes to shared memory, for each of its tokens, how many tokens
// of its document precede it (capped at K - 1; one binary search over cu_seqlens a token), which is
// all a tap needs: tap j of the output at u reads the document iff K - 1 - j <= reach(u), and dz at
// u feeds dx at t iff reach(u) >= u - t.
// K > 4: a general path, one thread per element (eager.cu's structure: taps read through the cache,
// dz in a scratch tensor, dweight one thread per weight summing documents and tokens in order).
//
// Batch invariance (claimed): y and dx of a token are functions of that token's document alone,
// computed by the same instructions whatever the tiling, the vector width or the batch, so a document
// gives the same bits alone, reordered or inside any batch (test_capability_claims.c proves it on the
// op's rows). dweight is a sum over the whole batch, so no batch can leave it unchanged; its order
// (token blocks of a size set by N and C, tokens in order inside a block, blocks in order) depends on
// the shape alone, never on the device, the alignment or the run.
// Rounding follows the eager reference: the taps summed oldest first in the compute precision (f32
// for f32/bf16, f64 for f64; fused multiply-adds), the conv output z rounded to the input dtype, SiLU
// of that in the compute precision, rounded once; dz rounded to the input dtype (autograd's stored
// tensor), dx and dweight summed in the compute precision and rounded once. sigmoid uses the
// hardware's fast exp and reciprocal in bf16 calls (errors of a few f32 ulps, far below bf16's
// rounding), expf / exp and IEEE division in f32 / f64 calls.
#include <algorithm>
#include <limits.h>
#include <type_traits>

#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/fused_rows.cuh"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/causal_conv1d/causal_conv1d.h"
#include "ops/registry.h"
}

using namespace parity_fused;
using parity_cuda::document_of;
using parity_cuda::grid_for;
using parity_cuda::scoped_documents;
using parity_cuda::scoped_tensor;
using parity_cuda::upload_int64;

namespace {

const char backend_name[] = "fla";

constexpr int conv_threads = 128;          // threads a block, one VEC-wide group of channels each
constexpr int max_fast_width = 4;          // K = 1 .. 4 take the windowed kernels
constexpr int forward_tokens = 32;         // tokens a forward block
constexpr int max_backward_tokens = 8192;  // tokens a backward block at most (its shared reach table: bytes)
constexpr int load_budget_bytes = 64;      // bytes of loads a thread issues before using them (one chunk)
// Occupancy: the kernels' launch bounds ask for 7 forward / 6 backward blocks of 128 threads an SM
// (<= 72 / 85 registers: sm_90's ptxas fits every instantiation without spilling), enough loads in
// flight to keep HBM busy.

struct conv_call {
    int64_t tokens, channels, kernel_size;
    const int64_t *offsets; // (documents + 1) boundaries on the device, or NULL: one document of all tokens
    int64_t documents;
    bool silu;
};

// Tokens a chunk: `tensors` loads of VEC elements a token within the load budget, 4 .. 32.
template <parity_dtype D, int VEC, int TENSORS> __host__ __device__ constexpr int chunk_tokens() {
    constexpr int tokens = load_budget_bytes / (VEC * (int)sizeof(typename element<D>::storage) * TENSORS);
    return tokens > 32 ? 32 : tokens < 4 ? 4 : tokens;
}

// sigmoid(z) in the compute precision (see the header for the bf16 choice).
template <parity_dtype D> __device__ __forceinline__ typename element<D>::compute sigmoid_of(typename element<D>::compute z) {
    using C = typename element<D>::compute;
    if constexpr (D == PARITY_BF16) return __fdividef(1.0f, 1.0f + __expf(-z));
    else return C(1) / (C(1) + exp(-z));
}

// PyTorch's silu_backward, rounded to the input dtype: dy * s * (1 + z * (1 - s)), s = sigmoid(z).
template <parity_dtype D>
__device__ __forceinline__ typename element<D>::compute silu_gradient(typename element<D>::compute dy, typename element<D>::compute z) {
    using C = typename element<D>::compute;
    const C s = sigmoid_of<D>(z);
    return round_storage<D>(dy * s * (C(1) + z * (C(1) - s)));
}

// reach[i] for token u = first + i (i < count): how many tokens of u's document precede it, capped at
// `cap`; -1 for a token past the last. Every thread of the block calls it; a barrier must follow.
__device__ __forceinline__ void fill_reach(signed char *reach, int64_t first, int count, const conv_call &call, int cap) {
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        const int64_t u = first + i;
        int value = -1;
        if (u < call.tokens) {
            const int64_t start = call.offsets ? call.offsets[document_of(call.offsets, call.documents, u)] : 0;
            value = (int)(u - start < cap ? u - start : cap);
        }
        reach[i] = (signed char)value;
    }
}

template <parity_dtype D, int KW, int VEC>
__device__ __forceinline__ void load_weights(const typename element<D>::storage *weight, int64_t c0,
                                             typename element<D>::compute (&w)[KW][VEC]) {
#pragma unroll
    for (int v = 0; v < VEC; v++)
#pragma unroll
        for (int j = 0; j < KW; j++) w[j][v] = element<D>::load(weight[(c0 + v) * KW + j]);
}

// The conv output at a token from the window (window[j] = x[u - (KW - 1) + j]), channel v: taps oldest
// first, those before the document start skipped, rounded to the input dtype.
template <parity_dtype D, int KW, int VEC>
__device__ __forceinline__ typename element<D>::compute preactivation(const typename element<D>::compute (&w)[KW][VEC],
                                                                      const typename element<D>::compute (&window)[KW][VEC],
                                                                      int v, int reach) {
    typename element<D>::compute sum = 0;
    if (reach >= KW - 1) { // block-uniform: every tap inside the document
#pragma unroll
        for (int j = 0; j < KW; j++) sum = fma(w[j][v], window[j][v], sum);
    } else {
#pragma unroll
        for (int j = 0; j < KW; j++)
            if (KW - 1 - j <= reach) sum = fma(w[j][v], window[j][v], sum);
    }
    return round_storage<D>(sum);
}

template <typename T, int KW, int VEC> __device__ __forceinline__ void shift_window(T (&window)[KW][VEC]) {
#pragma unroll
    for (int j = 0; j + 1 < KW; j++)
#pragma unroll
        for (int v = 0; v < VEC; v++) window[j][v] = window[j + 1][v];
}

// Block b: channel block b % channel_blocks (128 x VEC channels), tokens [32 t, 32 t + 32) of
// t = b / channel_blocks.
template <parity_dtype D, int KW, int VEC>
__global__ void __launch_bounds__(conv_threads, 7) conv_forward_kernel(const typename element<D>::storage *x,      // (N, C)
                                                                    const typename element<D>::storage *weight, // (C, KW)
                                                                    typename element<D>::storage *y,            // (N, C)
                                                                    conv_call call, int64_t channel_blocks) {
    using C = typename element<D>::compute;
    constexpr int CHUNK = chunk_tokens<D, VEC, 1>();
    __shared__ signed char reach[forward_tokens];
    const int64_t channel_block = blockIdx.x % channel_blocks, token_block = blockIdx.x / channel_blocks;
    const int64_t first = token_block * forward_tokens, channels = call.channels;
    const int count = (int)(call.tokens - first < forward_tokens ? call.tokens - first : forward_tokens);
    fill_reach(reach, first, count, call, KW - 1);
    __syncthreads();
    const int64_t c0 = (channel_block * conv_threads + threadIdx.x) * VEC;
    if (c0 >= channels) return;

    C w[KW][VEC], window[KW][VEC]; // window[j] = x[u - (KW - 1) + j]
    load_weights<D, KW, VEC>(weight, c0, w);
#pragma unroll
    for (int j = 0; j + 1 < KW; j++) {
        const int64_t source = first - (KW - 1) + j;
        if (source >= 0) load_values<D, VEC>(x + source * channels + c0, true, window[j]);
        else
#pragma unroll
            for (int v = 0; v < VEC; v++) window[j][v] = 0;
    }
    const typename element<D>::storage *source = x + first * channels + c0;
    typename element<D>::storage *target = y + first * channels + c0;
    // One token: its input row into the window, its output row out.
    auto step = [&](const raw_vector<D, VEC> &row, int k) {
        const int r = reach[k];
        C out[VEC];
#pragma unroll
        for (int v = 0; v < VEC; v++) {
            window[KW - 1][v] = element<D>::load(row.v[v]);
            const C z = preactivation<D, KW, VEC>(w, window, v, r);
            out[v] = call.silu ? z * sigmoid_of<D>(z) : z;
        }
        store_values<D, VEC>(target, true, out);
        target += channels;
        shift_window(window);
    };
    // Whole chunks (every load issued before the first is used), then the tail token by token.
    int base = 0;
#pragma unroll 1
    for (; base + CHUNK <= count; base += CHUNK) {
        raw_vector<D, VEC> rows[CHUNK];
#pragma unroll
        for (int i = 0; i < CHUNK; i++) {
            rows[i] = load_raw<D, VEC>(source, true);
            source += channels;
        }
#pragma unroll
        for (int i = 0; i < CHUNK; i++) step(rows[i], base + i);
    }
#pragma unroll 1
    for (; base < count; base++) {
        const raw_vector<D, VEC> row = load_raw<D, VEC>(source, true);
        source += channels;
        step(row, base);
    }
}

// Block b: channel block b % channel_blocks, tokens [first, last) = [tpb t, tpb (t + 1)) of
// t = b / channel_blocks. dx NULL: not written; partial NULL: no dweight; else row t of partial
// (token blocks, C * KW) gets the block's sums, column c * KW + j.
template <parity_dtype D, int KW, int VEC>
__global__ void __launch_bounds__(conv_threads, 6) conv_backward_kernel(const typename element<D>::storage *x,       // (N, C)
                                                                     const typename element<D>::storage *weight,  // (C, KW)
                                                                     const typename element<D>::storage *dy,      // (N, C)
                                                                     typename element<D>::storage *dx,            // (N, C) or NULL
                                                                     typename element<D>::compute *partial,       // (blocks, C * KW) or NULL
                                                                     conv_call call, int64_t channel_blocks,
                                                                     int tokens_per_block) {
    using C = typename element<D>::compute;
    constexpr int CHUNK = chunk_tokens<D, VEC, 2>();
    extern __shared__ signed char reach[]; // tokens_per_block + KW - 1
    const int64_t channel_block = blockIdx.x % channel_blocks, token_block = blockIdx.x / channel_blocks;
    const int64_t first = token_block * tokens_per_block, channels = call.channels;
    const int owned = (int)(call.tokens - first < tokens_per_block ? call.tokens - first : tokens_per_block);
    const int span = owned + KW - 1; // z and dz at first .. last + KW - 2 (dx at last - 1 needs them)
    const int present = (int)(call.tokens - first < span ? call.tokens - first : span); // of them inside N
    fill_reach(reach, first, present, call, KW - 1);
    __syncthreads();
    const int64_t c0 = (channel_block * conv_threads + threadIdx.x) * VEC;
    if (c0 >= channels) return;

    C w[KW][VEC], window[KW][VEC], dz_window[KW][VEC], dweight[KW][VEC];
    int reach_window[KW]; // reach of the tokens of dz_window
    load_weights<D, KW, VEC>(weight, c0, w);
#pragma unroll
    for (int j = 0; j < KW; j++) {
        reach_window[j] = -1;
#pragma unroll
        for (int v = 0; v < VEC; v++) dz_window[j][v] = dweight[j][v] = window[j][v] = 0;
    }
#pragma unroll
    for (int j = 0; j + 1 < KW; j++) {
        const int64_t source = first - (KW - 1) + j;
        if (source >= 0) load_values<D, VEC>(x + source * channels + c0, true, window[j]);
    }
    const int64_t start_offset = first * channels + c0;
    const typename element<D>::storage *x_row = x + start_offset, *dy_row = dy + start_offset;
    typename element<D>::storage *dx_row = dx ? dx + start_offset : nullptr; // dx at first, first + 1, ...
    // One token u = first + k (k < span): z and dz at u (0 past the last token), u's dweight terms
    // when the block owns u, then dx at u - (KW - 1): tap j through dz at u - j, inside its document.
    auto step = [&](const raw_vector<D, VEC> &x_value, const raw_vector<D, VEC> &dy_value, int k) {
        const int r = k < present ? reach[k] : -1;
#pragma unroll
        for (int v = 0; v < VEC; v++) {
            window[KW - 1][v] = element<D>::load(x_value.v[v]);
            C dz = 0;
            if (r >= 0) {
                dz = element<D>::load(dy_value.v[v]);
                if (call.silu) dz = silu_gradient<D>(dz, preactivation<D, KW, VEC>(w, window, v, r));
            }
            dz_window[KW - 1][v] = dz;
            if (partial && k < owned)
#pragma unroll
                for (int j = 0; j < KW; j++)
                    if (KW - 1 - j <= r) dweight[j][v] = fma(dz, window[j][v], dweight[j][v]);
        }
        reach_window[KW - 1] = r;
        if (dx && k >= KW - 1) {
            C out[VEC];
#pragma unroll
            for (int v = 0; v < VEC; v++) {
                C sum = 0;
#pragma unroll
                for (int j = 0; j < KW; j++)
                    if (reach_window[KW - 1 - j] >= KW - 1 - j) sum = fma(w[j][v], dz_window[KW - 1 - j][v], sum);
                out[v] = sum;
            }
            store_values<D, VEC>(dx_row, true, out);
            dx_row += channels;
        }
        shift_window(window);
        shift_window(dz_window);
#pragma unroll
        for (int j = 0; j + 1 < KW; j++) reach_window[j] = reach_window[j + 1];
    };
    // Whole chunks of tokens (rows past N read as zeros), then the tail token by token.
    int base = 0;
#pragma unroll 1
    for (; base + CHUNK <= span; base += CHUNK) {
        raw_vector<D, VEC> xs[CHUNK], dys[CHUNK];
#pragma unroll
        for (int i = 0; i < CHUNK; i++) {
            const bool inside = base + i < present;
            xs[i] = inside ? load_raw<D, VEC>(x_row, true) : zero_raw<D, VEC>();
            dys[i] = inside ? load_raw<D, VEC>(dy_row, true) : zero_raw<D, VEC>();
            x_row += channels;
            dy_row += channels;
        }
#pragma unroll
        for (int i = 0; i < CHUNK; i++) step(xs[i], dys[i], base + i);
    }
#pragma unroll 1
    for (; base < span; base++) {
        const bool inside = base < present;
        const raw_vector<D, VEC> x_value = inside ? load_raw<D, VEC>(x_row, true) : zero_raw<D, VEC>();
        const raw_vector<D, VEC> dy_value = inside ? load_raw<D, VEC>(dy_row, true) : zero_raw<D, VEC>();
        x_row += channels;
        dy_row += channels;
        step(x_value, dy_value, base);
    }
    if (!partial) return;
    C *row = partial + token_block * channels * KW;
#pragma unroll
    for (int v = 0; v < VEC; v++)
#pragma unroll
        for (int j = 0; j < KW; j++) row[(c0 + v) * KW + j] = dweight[j][v];
}

// ---- the general path (K > 4): one thread per element ----

__device__ __forceinline__ int64_t document_start(const conv_call &call, int64_t t) {
    return call.offsets ? call.offsets[document_of(call.offsets, call.documents, t)] : 0;
}

__device__ __forceinline__ int64_t document_end(const conv_call &call, int64_t t) {
    return call.offsets ? call.offsets[document_of(call.offsets, call.documents, t) + 1] : call.tokens;
}

template <parity_dtype D>
__device__ __forceinline__ typename element<D>::compute general_preactivation(const typename element<D>::storage *x,
                                                                              const typename element<D>::storage *weight,
                                                                              const conv_call &call, int64_t t, int64_t c) {
    const int64_t taps = call.kernel_size, start = document_start(call, t);
    typename element<D>::compute sum = 0;
    for (int64_t j = 0; j < taps; j++) {
        const int64_t source = t - (taps - 1) + j;
        if (source >= start) sum = fma(element<D>::load(weight[c * taps + j]), element<D>::load(x[source * call.channels + c]), sum);
    }
    return round_storage<D>(sum);
}

template <parity_dtype D>
__global__ void general_forward_kernel(const typename element<D>::storage *x,      // (N, C)
                                       const typename element<D>::storage *weight, // (C, K)
                                       typename element<D>::storage *y,            // (N, C)
                                       conv_call call) {
    using C = typename element<D>::compute;
    PARITY_CUDA_FOR_EACH(index, call.tokens * call.channels) {
        const C z = general_preactivation<D>(x, weight, call, index / call.channels, index % call.channels);
        y[index] = element<D>::store(call.silu ? z * sigmoid_of<D>(z) : z);
    }
}

template <parity_dtype D>
__global__ void general_dpreactivation_kernel(const typename element<D>::storage *x,      // (N, C)
                                              const typename element<D>::storage *weight, // (C, K)
                                              const typename element<D>::storage *dy,     // (N, C)
                                              typename element<D>::compute *dz,           // (N, C)
                                              conv_call call) {
    using C = typename element<D>::compute;
    PARITY_CUDA_FOR_EACH(index, call.tokens * call.channels) {
        C gradient = element<D>::load(dy[index]);
        if (call.silu)
            gradient = silu_gradient<D>(gradient, general_preactivation<D>(x, weight, call, index / call.channels,
                                                                           index % call.channels));
        dz[index] = gradient;
    }
}

template <parity_dtype D>
__global__ void general_dinput_kernel(const typename element<D>::storage *weight, // (C, K)
                                      const typename element<D>::compute *dz,     // (N, C)
                                      typename element<D>::storage *dx,           // (N, C)
                                      conv_call call) {
    using C = typename element<D>::compute;
    const int64_t channels = call.channels, taps = call.kernel_size;
    PARITY_CUDA_FOR_EACH(index, call.tokens * channels) {
        const int64_t t = index / channels, c = index % channels, end = document_end(call, t);
        C sum = 0;
        for (int64_t j = 0; j < taps; j++) {
            const int64_t target = t + (taps - 1) - j;
            if (target < end) sum = fma(element<D>::load(weight[c * taps + j]), dz[target * channels + c], sum);
        }
        dx[index] = element<D>::store(sum);
    }
}

// One thread a weight (neighbouring threads on neighbouring channels): documents and tokens in order.
template <parity_dtype D>
__global__ void general_dweight_kernel(const typename element<D>::storage *x, // (N, C)
                                       const typename element<D>::compute *dz, // (N, C)
                                       typename element<D>::storage *dweight,  // (C, K)
                                       conv_call call) {
    using C = typename element<D>::compute;
    const int64_t channels = call.channels, taps = call.kernel_size;
    PARITY_CUDA_FOR_EACH(index, channels * taps) {
        const int64_t c = index % channels, j = index / channels;
        C sum = 0;
        for (int64_t s = 0; s < call.documents; s++) {
            const int64_t start = call.offsets ? call.offsets[s] : 0, end = call.offsets ? call.offsets[s + 1] : call.tokens;
            for (int64_t t = start + (taps - 1) - j; t < end; t++)
                sum = fma(dz[t * channels + c], element<D>::load(x[(t - (taps - 1) + j) * channels + c]), sum);
        }
        dweight[c * taps + j] = element<D>::store(sum);
    }
}

// ---- host side ----

parity_error *check_devices(const parity_causal_conv1d_args *args, const parity_causal_conv1d_grads *grads) {
    const parity_device device = args->input->device;
    if (device.type != PARITY_DEVICE_CUDA)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "causal_conv1d: input is on %s; the %s backend runs on cuda",
                            parity_device_type_name(device.type), backend_name);
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "input", args->input, device));
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "weight", args->weight, device));
    PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "output", args->output, device));
    if (grads) {
        PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "doutput", grads->doutput, device));
        PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "dinput", grads->dinput, device));
        PARITY_TRY(parity_cuda_check_tensor("causal_conv1d", "dweight", grads->dweight, device));
    }
    return NULL;
}

// Validation, devices, and the document boundaries: cu_seqlens' values checked on the host
// (parity_cu_seqlens_load), then used where they are when they are on the call's device, else copied
// there into `uploaded`.
parity_error *prepare_call(const parity_causal_conv1d_args *args, const parity_causal_conv1d_grads *grads, conv_call *call,
                           scoped_tensor *uploaded) {
    int64_t tokens, channels, kernel_size;
    PARITY_TRY(parity_causal_conv1d_check(args, &tokens, &channels, &kernel_size));
    if (grads) PARITY_TRY(parity_causal_conv1d_check_grads(args, grads));
    PARITY_TRY(check_devices(args, grads));
    const parity_device device = args->input->device;
    *call = {tokens, channels, kernel_size, nullptr, 1, args->activation == PARITY_CAUSAL_CONV1D_SILU};
    const parity_tensor *cu_seqlens = args->cu_seqlens;
    if (cu_seqlens) {
        scoped_documents documents;
        PARITY_TRY(parity_cu_seqlens_load("causal_conv1d", cu_seqlens, tokens, &documents.documents));
        call->documents = documents.documents.count;
        if (cu_seqlens->device.type == PARITY_DEVICE_CUDA && parity_device_equal(cu_seqlens->device, device) &&
            parity_tensor_is_contiguous(cu_seqlens)) {
            call->offsets = static_cast<const int64_t *>(cu_seqlens->data);
        } else {
            PARITY_TRY(upload_int64(*uploaded, documents.documents.offsets, documents.documents.count + 1, device));
            call->offsets = uploaded->data<int64_t>();
        }
    }
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    return NULL;
}

// 2 channels a thread (bf16x2 / float2 accesses) when C is even and every row tensor is aligned for
// it; f64 keeps one (its 8-byte accesses are wide enough, and two channels' windows spill registers).
template <parity_dtype D> bool pairs_fit(int64_t channels, std::initializer_list<const void *> pointers) {
    if constexpr (D == PARITY_F64) return false;
    if (channels % 2 != 0) return false;
    for (const void *p : pointers)
        if (p && (uintptr_t)p % (2 * sizeof(typename element<D>::storage)) != 0) return false;
    return true;
}

template <typename Fn> parity_error *dispatch_width(int64_t kernel_size, Fn &&fn) {
    switch (kernel_size) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 3: return fn(std::integral_constant<int, 3>{});
    default: return fn(std::integral_constant<int, 4>{});
    }
}

template <parity_dtype D, typename Fn> parity_error *dispatch_vector(bool pairs, Fn &&fn) {
    if constexpr (D == PARITY_F64) return fn(std::integral_constant<int, 1>{});
    else return pairs ? fn(std::integral_constant<int, 2>{}) : fn(std::integral_constant<int, 1>{});
}

parity_error *grid_of(int64_t channel_blocks, int64_t token_blocks, unsigned *grid) {
    if (channel_blocks > INT_MAX / token_blocks)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                            "causal_conv1d: the %s backend on cuda takes at most 2^31 - 1 blocks; %lld x %lld needed",
                            backend_name, (long long)channel_blocks, (long long)token_blocks);
    *grid = (unsigned)(channel_blocks * token_blocks);
    return NULL;
}

// Tokens a backward block walks: a function of N and C alone (dweight's summation order, and so its
// bits, follow the shape, never the device): about 2048 blocks over the channel groups of 256
// channels, at least 64 token blocks, in multiples of 8 tokens, 8 .. max_backward_tokens.
int backward_tokens_per_block(int64_t tokens, int64_t channels) {
    const int64_t channel_groups = (channels + 255) / 256;
    const int64_t wanted = std::max<int64_t>(64, (2048 + channel_groups - 1) / channel_groups);
    int64_t per_block = (tokens + wanted - 1) / wanted;
    per_block = (per_block + 7) / 8 * 8;
    return (int)std::min<int64_t>(max_backward_tokens, std::max<int64_t>(8, per_block));
}

parity_error *forward(const parity_exec *exec, const parity_causal_conv1d_args *args, parity_saved *saved) {
    conv_call call;
    scoped_tensor uploaded;
    PARITY_TRY(prepare_call(args, NULL, &call, &uploaded));
    if (call.tokens == 0) return NULL;
    const cudaStream_t stream = parity_cuda_stream(exec);
    return dispatch_float(args->input->dtype, "causal_conv1d", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        const S *x = static_cast<const S *>(args->input->data), *weight = static_cast<const S *>(args->weight->data);
        S *y = static_cast<S *>(args->output->data);
        if (call.kernel_size > max_fast_width) {
            general_forward_kernel<D><<<grid_for(call.tokens * call.channels), 256, 0, stream>>>(x, weight, y, call);
            PARITY_CUDA_TRY_LAUNCH("general_forward_kernel");
            return NULL;
        }
        return dispatch_vector<D>(pairs_fit<D>(call.channels, {x, y}), [&](auto vec) -> parity_error * {
            constexpr int VEC = decltype(vec)::value;
            const int64_t channel_blocks = (call.channels + conv_threads * VEC - 1) / (conv_threads * VEC);
            unsigned grid = 0;
            PARITY_TRY(grid_of(channel_blocks, (call.tokens + forward_tokens - 1) / forward_tokens, &grid));
            return dispatch_width(call.kernel_size, [&](auto width) -> parity_error * {
                constexpr int KW = decltype(width)::value;
                conv_forward_kernel<D, KW, VEC><<<grid, conv_threads, 0, stream>>>(x, weight, y, call, channel_blocks);
                PARITY_CUDA_TRY_LAUNCH("conv_forward_kernel");
                return NULL;
            });
        });
    });
}

parity_error *backward(const parity_exec *exec, const parity_causal_conv1d_args *args, const parity_saved *saved,
                       const parity_causal_conv1d_grads *grads) {
    conv_call call;
    scoped_tensor uploaded;
    PARITY_TRY(prepare_call(args, grads, &call, &uploaded));
    const cudaStream_t stream = parity_cuda_stream(exec);
    if (!grads->dinput && !grads->dweight) return NULL;
    if (call.tokens == 0) {
        if (grads->dweight)
            PARITY_CUDA_TRY(cudaMemsetAsync(grads->dweight->data, 0, parity_tensor_nbytes(grads->dweight), stream));
        return NULL;
    }
    const parity_device device = args->input->device;
    return dispatch_float(args->input->dtype, "causal_conv1d", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using S = typename element<D>::storage;
        using C = typename element<D>::compute;
        const S *x = static_cast<const S *>(args->input->data), *weight = static_cast<const S *>(args->weight->data);
        const S *dy = static_cast<const S *>(grads->doutput->data);
        S *dx = grads->dinput ? static_cast<S *>(grads->dinput->data) : nullptr;
        S *dweight = grads->dweight ? static_cast<S *>(grads->dweight->data) : nullptr;
        const int64_t elements = call.tokens * call.channels;
        if (call.kernel_size > max_fast_width) {
            pool_scratch dz;
            PARITY_TRY(dz.alloc(device, (size_t)elements * sizeof(C), stream));
            general_dpreactivation_kernel<D><<<grid_for(elements), 256, 0, stream>>>(x, weight, dy, dz.as<C>(), call);
            PARITY_CUDA_TRY_LAUNCH("general_dpreactivation_kernel");
            if (dx) {
                general_dinput_kernel<D><<<grid_for(elements), 256, 0, stream>>>(weight, dz.as<const C>(), dx, call);
                PARITY_CUDA_TRY_LAUNCH("general_dinput_kernel");
            }
            if (dweight) {
                general_dweight_kernel<D><<<grid_for(call.channels * call.kernel_size, 128), 128, 0, stream>>>(
                    x, dz.as<const C>(), dweight, call);
                PARITY_CUDA_TRY_LAUNCH("general_dweight_kernel");
            }
            return NULL;
        }
        const int tokens_per_block = backward_tokens_per_block(call.tokens, call.channels);
        const int64_t token_blocks = (call.tokens + tokens_per_block - 1) / tokens_per_block;
        pool_scratch partial;
        if (dweight)
            PARITY_TRY(partial.alloc(device, (size_t)(token_blocks * call.channels * call.kernel_size) * sizeof(C), stream));
        return dispatch_vector<D>(pairs_fit<D>(call.channels, {x, dy, dx}), [&](auto vec) -> parity_error * {
            constexpr int VEC = decltype(vec)::value;
            const int64_t channel_blocks = (call.channels + conv_threads * VEC - 1) / (conv_threads * VEC);
            unsigned grid = 0;
            PARITY_TRY(grid_of(channel_blocks, token_blocks, &grid));
            return dispatch_width(call.kernel_size, [&](auto width) -> parity_error * {
                constexpr int KW = decltype(width)::value;
                const size_t shared = (size_t)(tokens_per_block + KW - 1);
                conv_backward_kernel<D, KW, VEC><<<grid, conv_threads, shared, stream>>>(
                    x, weight, dy, dx, partial.as<C>(), call, channel_blocks, tokens_per_block);
                PARITY_CUDA_TRY_LAUNCH("conv_backward_kernel");
                if (!dweight) return NULL;
                return sum_partials<D>(exec, partial.as<const C>(), token_blocks, call.channels * KW, dweight);
            });
        });
    });
}

const parity_causal_conv1d_kernels kernels = {forward, backward};

} // namespace

PARITY_BACKEND_REGISTRATION(causal_conv1d, fla, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_CAUSAL_CONV1D;
    backend.name = backend_name;
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    // As eager.cu: channel-local over whole documents (safe where each rank holds whole sequences of
    // its channels); batch invariant and deterministic as the header says.
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC |
                           PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &kernels;
    backend.description = "fused depthwise causal conv1d (+ SiLU) over packed documents, one pass each way (the "
                          "backward recomputes the conv output), deterministic dweight, f64/f32/bf16";
    return parity_registry_add(&backend);
}

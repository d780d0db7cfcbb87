// eager.cu: the reference gated_delta_rule on CUDA (value "eager"): HF's torch_recurrent_gated_delta_rule
// as eager.c runs it, one block per (document, value head) with the Dk x Dv state in shared memory:
//   prepare   one thread per (token, key head): q, k L2-normalised (eps 1e-6) when use_qk_l2norm, q * scale
//   forward   thread v owns column v of the state: S *= exp(g_t); kv = S^T k_t (sum over k in order);
//             delta = (v_t - kv) beta_t; S += k_t delta^T; o_t = S^T q_t   (columns independent; one
//             barrier a token only for the token staging below)
// Everything runs in the compute precision (f32 for f32/bf16 calls, f64 for f64), the output rounded once.
// Backward by recomputation, in chunks of ~sqrt(L) tokens: a first sweep stores the state at the start
// of each chunk (global scratch), then for each chunk from the last, the chunk's states are recomputed
// from its checkpoint and eager.c's reverse-time step runs token by token, the state's gradient in
// shared memory: rows of dS belong to threads as k, columns as v, with a barrier between the steps.
// Layouts for speed only (no sum changes order, no value changes): dS's shared rows are padded to
// Dv + 1 elements, so the threads of a warp walking their rows k hit 32 banks, not one. Staged (f32
// and bf16, where three padded states fit in shared memory): the chunk's states are recomputed in
// shared memory and copied out row by row, and each reverse step copies the one state it needs
// (S_{t-1}) back in with coalesced loads into the buffer the step before has finished with, so no
// step walks global memory with a stride (a block's chunk states, 2 MB at Dk = Dv = 128, do not stay
// in L2); that copy is a cp.async in flight while the step's first three parts run. Unstaged (f64)
// the steps read the global states in place. Every loop loads a batch of elements into registers before
// it computes and stores them (kBatch, below): the arithmetic and its order are the element-at-a-time
// loop's, only the loads' latencies overlap (a loop that stores cannot have its loads hoisted). Every
// pass goes token by token and reads its token's vectors (q, k, v, do, the delta and innovation rows)
// from one of two shared slots filled by cp.async while the token before computes (token staging,
// below), so the inner loops read shared memory only.
//   dS += q do^T, dq = S do (k)  |  ddelta = dS^T k (v), dk_write = dS delta (k)  |  dinnov = ddelta beta,
//   dbeta = <ddelta, innov> (v, thread 0)  |  dS += k (-dinnov)^T, dk_read = S' (-dinnov) (k), row sums
//   of dS * S_{t-1} (k), dS *= exp(g)  |  dg = (sum of the row sums over k in order) exp(g) (thread 0)
// The row-then-column order of that last sum is the only place the CPU's order (flat, row-major) is not
// followed. Then one thread per (token, key head, element) finishes dquery and dkey: * scale, L2-norm
// backward, rounded to the input dtype per value head, summed over the value heads of each key head.
#include <math.h>
#include <stdint.h>
#include <vector>

#include "ops/gated_delta_rule/cuda_common.cuh"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

// The per-token view of one (value head, token).
template <parity_dtype D> struct delta_token {
    const typename scalar<D>::compute *query, *key; // (Dk) prepared
    typename scalar<D>::compute decay, beta;
    const typename scalar<D>::storage *value;       // (Dv)
};

// Loads go a batch at a time. The compiler cannot move a load above a store it cannot prove disjoint
// (a generic pointer may point into shared memory), so a loop that loads and stores one element at a
// time waits out every load's latency. Each loop below first loads kBatch elements into registers,
// then does the same arithmetic, element by element in the same order, so no value changes.
constexpr int kBatch = 8;

// Column v of the state (element k at column[k * stride]): S *= decay; kv = S^T k; innovation = v - kv;
// delta = innovation * beta; S += k delta. Returns delta; writes the innovation. Optionally also
// stores the new column at copy[k * copy_stride] (a chunk state kept for the backward) and returns
// the output o_v = S^T q (the forward's sum over k in order) in *output.
template <parity_dtype D>
__device__ __forceinline__ typename scalar<D>::compute advance_column(int64_t Dk, const delta_token<D> &token, int64_t v,
                                                      typename scalar<D>::compute *column, int64_t stride,
                                                      typename scalar<D>::compute *innovation,
                                                      typename scalar<D>::compute *copy = nullptr, int64_t copy_stride = 0,
                                                      typename scalar<D>::compute *output = nullptr) {
    using C = typename scalar<D>::compute;
    C memory = 0;
    for (int64_t k0 = 0; k0 < Dk; k0 += kBatch) { // S *= decay; kv = S^T k
        C s[kBatch], key[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; j++)
            if (k0 + j < Dk) s[j] = column[(k0 + j) * stride], key[j] = token.key[k0 + j];
#pragma unroll
        for (int j = 0; j < kBatch; j++)
            if (k0 + j < Dk) {
                s[j] = s[j] * token.decay;
                column[(k0 + j) * stride] = s[j];
                memory += s[j] * key[j];
            }
    }
    C innovation_v = scalar<D>::load(token.value[v]) - memory;
    C delta = innovation_v * token.beta;
    C out = 0;
    for (int64_t k0 = 0; k0 < Dk; k0 += kBatch) { // S += k delta (and o = S^T q)
        C s[kBatch], key[kBatch], query[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; j++)
            if (k0 + j < Dk) {
                s[j] = column[(k0 + j) * stride], key[j] = token.key[k0 + j];
                if (output) query[j] = token.query[k0 + j];
            }
#pragma unroll
        for (int j = 0; j < kBatch; j++)
            if (k0 + j < Dk) {
                C updated = s[j] + key[j] * delta;
                column[(k0 + j) * stride] = updated;
                if (copy) copy[(k0 + j) * copy_stride] = updated;
                if (output) out += updated * query[j];
            }
    }
    *innovation = innovation_v;
    if (output) *output = out;
    return delta;
}

// sum over i in order of a[i * a_stride] * b[i * b_stride], i < n (both read a batch at a time)
template <typename C, typename A, typename B>
__device__ C ordered_dot(int64_t n, A a, int64_t a_stride, B b, int64_t b_stride) {
    C sum = 0;
    for (int64_t i0 = 0; i0 < n; i0 += kBatch) {
        C x[kBatch], y[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; j++)
            if (i0 + j < n) x[j] = a[(i0 + j) * a_stride], y[j] = b[(i0 + j) * b_stride];
#pragma unroll
        for (int j = 0; j < kBatch; j++)
            if (i0 + j < n) sum += x[j] * y[j];
    }
    return sum;
}

// One element global -> shared without the registers (cp.async, sm_80+): read after cp.async.wait_all
// and a barrier. No "memory" clobber: nothing reads the destination before the wait, which has one.
template <typename C> __device__ __forceinline__ void copy_async(C *shared_to, const C *global_from) {
    static_assert(sizeof(C) == 4 || sizeof(C) == 8, "cp.async copies 4, 8 or 16 bytes");
    unsigned to = (unsigned)__cvta_generic_to_shared(shared_to);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to), "l"(global_from), "n"(sizeof(C)));
}
__device__ __forceinline__ void copies_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// ---- token staging: a token's inputs in shared memory before the block's threads read them ----
// Every thread of a step reads the same token vectors (q, k, the delta and innovation rows, do)
// element by element; read from global memory each batch of them is a trip to L2, and a step's sums
// are chains of such batches. So each token's vectors (and its g and beta) are copied into one of two
// shared slots while the step before computes (cp.async; g and beta through thread 0's registers),
// and one barrier a step makes them visible. The values read are the same, so no bit changes.
enum token_parts : unsigned { PART_QUERY = 1, PART_KEY = 2, PART_VALUE = 4, PART_DY = 8, PART_ROWS = 16 };

// Byte offsets of one slot's parts (each 16-byte aligned) and the slot's size.
struct token_layout {
    int64_t query, key, delta, innovation, g, beta, value, dy, bytes;
};
__host__ __device__ inline int64_t align16(int64_t bytes) { return (bytes + 15) / 16 * 16; }
__host__ __device__ inline token_layout token_layout_of(int64_t Dk, int64_t Dv, int64_t compute_size, int64_t storage_size) {
    token_layout l;
    l.query = 0;
    l.key = l.query + align16(Dk * compute_size);
    l.delta = l.key + align16(Dk * compute_size);
    l.innovation = l.delta + align16(Dv * compute_size);
    l.g = l.innovation + align16(Dv * compute_size);
    l.beta = l.g + 16;
    l.value = l.beta + 16;
    l.dy = l.value + align16(Dv * storage_size);
    l.bytes = l.dy + align16(Dv * storage_size);
    return l;
}
template <parity_dtype D> int64_t token_slots_bytes(const delta_shape &shape) {
    return 2 * token_layout_of(shape.key_dim, shape.value_dim, sizeof(typename scalar<D>::compute),
                               sizeof(typename scalar<D>::storage)).bytes;
}

// A vector of n elements global -> shared by the block's threads, in flight until copies_wait: 4- and
// 8-byte elements one cp.async each, 2-byte ones (bf16) in 4-byte pairs when both ends allow it, else
// copied through registers at once.
template <typename T> __device__ void stage_vector(T *to, const T *from, int64_t n) {
    if constexpr (sizeof(T) >= 4) {
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) copy_async(to + i, from + i);
    } else {
        if (n % 2 == 0 && ((uintptr_t)to | (uintptr_t)from) % 4 == 0) {
            for (int64_t i = threadIdx.x; i < n / 2; i += blockDim.x)
                copy_async(reinterpret_cast<uint32_t *>(to) + i, reinterpret_cast<const uint32_t *>(from) + i);
        } else {
            for (int64_t i = threadIdx.x; i < n; i += blockDim.x) to[i] = from[i];
        }
    }
}

// The two slots of a block and the inputs they are filled from.
template <parity_dtype D> struct token_slots {
    using C = typename scalar<D>::compute;
    using storage = typename scalar<D>::storage;
    unsigned char *base; // 2 slots of layout.bytes
    token_layout layout;
    const delta_shape *shape;
    int64_t head;
    const C *prepared_query, *prepared_key;
    const storage *value, *doutput;
    const void *g;
    const storage *beta;

    __device__ unsigned char *slot(int which) const { return base + which * layout.bytes; }
    __device__ C *query(int which) const { return reinterpret_cast<C *>(slot(which) + layout.query); }
    __device__ C *key(int which) const { return reinterpret_cast<C *>(slot(which) + layout.key); }
    __device__ C *delta(int which) const { return reinterpret_cast<C *>(slot(which) + layout.delta); }
    __device__ C *innovation(int which) const { return reinterpret_cast<C *>(slot(which) + layout.innovation); }
    __device__ double *g_of(int which) const { return reinterpret_cast<double *>(slot(which) + layout.g); }
    __device__ C *beta_of(int which) const { return reinterpret_cast<C *>(slot(which) + layout.beta); }
    __device__ storage *value_of(int which) const { return reinterpret_cast<storage *>(slot(which) + layout.value); }
    __device__ storage *dy(int which) const { return reinterpret_cast<storage *>(slot(which) + layout.dy); }
};

// g and beta of a token in flight in thread 0's registers between issue and finish.
template <parity_dtype D> struct token_scalars {
    double g;
    typename scalar<D>::compute beta;
};

// Starts copying token t's parts into slot `which` (delta / innovation rows from rows + r Dv: PART_ROWS).
template <parity_dtype D>
__device__ token_scalars<D> stage_issue(const token_slots<D> &slots, int which, int64_t t, unsigned parts,
                                        const typename scalar<D>::compute *delta_row = nullptr,
                                        const typename scalar<D>::compute *innovation_row = nullptr) {
    const delta_shape &shape = *slots.shape;
    const int64_t Dk = shape.key_dim, Dv = shape.value_dim;
    const int64_t key_row = t * shape.key_heads + slots.head / shape.group, value_row = t * shape.value_heads + slots.head;
    if (parts & PART_QUERY) stage_vector(slots.query(which), slots.prepared_query + key_row * Dk, Dk);
    if (parts & PART_KEY) stage_vector(slots.key(which), slots.prepared_key + key_row * Dk, Dk);
    if (parts & PART_VALUE) stage_vector(slots.value_of(which), slots.value + value_row * Dv, Dv);
    if (parts & PART_DY) stage_vector(slots.dy(which), slots.doutput + value_row * Dv, Dv);
    if (parts & PART_ROWS) {
        stage_vector(slots.delta(which), delta_row, Dv);
        stage_vector(slots.innovation(which), innovation_row, Dv);
    }
    token_scalars<D> scalars = {0, 0};
    if (threadIdx.x == 0) {
        scalars.g = load_f64(slots.g, shape.g_dtype, value_row);
        scalars.beta = scalar<D>::load(slots.beta[value_row]);
    }
    return scalars;
}

// Completes slot `which`: visible to every thread after the caller's next __syncthreads.
template <parity_dtype D> __device__ void stage_finish(const token_slots<D> &slots, int which, const token_scalars<D> &scalars) {
    if (threadIdx.x == 0) {
        *slots.g_of(which) = scalars.g;
        *slots.beta_of(which) = scalars.beta;
    }
    copies_wait();
}

// The token in slot `which`: decay = exp(g_t) in the compute precision, beta_t, q_t and k_t prepared
// (L2-normalised, q scaled), v_t as stored.
template <parity_dtype D> __device__ delta_token<D> staged_token(const token_slots<D> &slots, int which) {
    using C = typename scalar<D>::compute;
    delta_token<D> token;
    token.query = slots.query(which);
    token.key = slots.key(which);
    token.decay = precise_exp((C)*slots.g_of(which));
    token.beta = *slots.beta_of(which);
    token.value = slots.value_of(which);
    return token;
}

// ordered_dot of (a, b) over n and of (c, d) over m at once, in one loop: two independent chains whose
// latencies overlap; each sum is ordered_dot's, term by term in order.
template <typename C, typename A, typename B, typename E, typename F>
__device__ void ordered_dot_pair(int64_t n, A a, int64_t a_stride, B b, int64_t b_stride, C *first, int64_t m, E c,
                                 int64_t c_stride, F d, int64_t d_stride, C *second) {
    C sum = 0, other = 0;
    const int64_t longest = n > m ? n : m;
    for (int64_t i0 = 0; i0 < longest; i0 += kBatch) {
        C x[kBatch], y[kBatch], u[kBatch], w[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; j++) {
            if (i0 + j < n) x[j] = a[(i0 + j) * a_stride], y[j] = b[(i0 + j) * b_stride];
            if (i0 + j < m) u[j] = c[(i0 + j) * c_stride], w[j] = d[(i0 + j) * d_stride];
        }
#pragma unroll
        for (int j = 0; j < kBatch; j++) {
            if (i0 + j < n) sum += x[j] * y[j];
            if (i0 + j < m) other += u[j] * w[j];
        }
    }
    *first = sum;
    *second = other;
}

// The kernels are built twice: for Dk = Dv = 128 (Qwen3.5, Qwen3-Next: DK, DV, the block size and every
// loop bound compile-time constants, so the batched loops unroll without guards and the shared
// indices fold) and for any dims (DK = DV = 0: read from the shape). The same code, the same arithmetic.
template <parity_dtype D, int DK, int DV>
__global__ void delta_forward(delta_shape shape, const typename scalar<D>::compute *prepared_query,
                              const typename scalar<D>::compute *prepared_key, const typename scalar<D>::storage *value,
                              const void *g, const typename scalar<D>::storage *beta, typename scalar<D>::storage *output) {
    using C = typename scalar<D>::compute;
    extern __shared__ unsigned char shared_bytes[];
    C *state = reinterpret_cast<C *>(shared_bytes); // (Dk, Dv)
    int64_t document = blockIdx.x / shape.value_heads, head = blockIdx.x % shape.value_heads;
    const int64_t Dk = DK ? DK : shape.key_dim, Dv = DV ? DV : shape.value_dim;
    const int64_t threads = DK ? threads_for(DV) : blockDim.x;
    const token_slots<D> slots = {shared_bytes + align16(Dk * Dv * (int64_t)sizeof(C)),
                                  token_layout_of(Dk, Dv, sizeof(C), sizeof(typename scalar<D>::storage)),
                                  &shape, head, prepared_query, prepared_key, value, nullptr, g, beta};
    constexpr unsigned parts = PART_QUERY | PART_KEY | PART_VALUE;
    for (int64_t v = threadIdx.x; v < Dv; v += threads) // every thread touches only its own columns
        for (int64_t k = 0; k < Dk; k++) state[k * Dv + v] = 0;
    const int64_t begin = shape.offsets[document], end = shape.offsets[document + 1];
    if (begin < end) stage_finish(slots, 0, stage_issue(slots, 0, begin, parts));
    __syncthreads();
    for (int64_t t = begin; t < end; t++) {
        const int which = (int)((t - begin) & 1);
        token_scalars<D> next = {0, 0};
        if (t + 1 < end) next = stage_issue(slots, which ^ 1, t + 1, parts); // in flight during this token
        delta_token<D> token = staged_token(slots, which);
        for (int64_t v = threadIdx.x; v < Dv; v += threads) {
            C innovation, out;
            advance_column<D>(Dk, token, v, state + v, Dv, &innovation, nullptr, 0, &out);
            output[(t * shape.value_heads + head) * Dv + v] = scalar<D>::store(out);
        }
        if (t + 1 < end) stage_finish(slots, which ^ 1, next);
        __syncthreads();
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

template <parity_dtype D, bool STAGED, int DK, int DV>
__global__ void delta_backward(delta_shape shape, delta_plan plan, const typename scalar<D>::compute *prepared_query,
                               const typename scalar<D>::compute *prepared_key, const typename scalar<D>::storage *value,
                               const void *g, const typename scalar<D>::storage *beta,
                               const typename scalar<D>::storage *doutput, typename scalar<D>::compute *scratch,
                               delta_gradients<D> out) {
    using S = scalar<D>;
    using C = typename S::compute;
    extern __shared__ unsigned char shared_bytes[];
    const int64_t Dk = DK ? DK : shape.key_dim, Dv = DV ? DV : shape.value_dim, state_size = Dk * Dv, Hv = shape.value_heads;
    const int64_t threads = DK ? threads_for(DK > DV ? DK : DV) : blockDim.x;
    int64_t Dvp = Dv + 1;                            // dS's padded row: a warp's rows k spread over the banks
    C *dstate = reinterpret_cast<C *>(shared_bytes); // (Dk, Dv + 1); the running state during the first sweep
    C *buffers = dstate + Dk * Dvp;                  // STAGED: two working states (Dk, Dv + 1)
    C *ddelta = buffers + (STAGED ? 2 * Dk * Dvp : 0), *dinnovation = ddelta + Dv, *dkey_write = dinnovation + Dv, *ddecay_rows = dkey_write + Dk;
    int64_t document = blockIdx.x / Hv, head = blockIdx.x % Hv;
    int64_t start = shape.offsets[document], length = shape.offsets[document + 1] - start;
    int64_t chunk = plan.chunk_length[document], chunks = (length + chunk - 1) / chunk;
    C *checkpoints = scratch + plan.block_base[blockIdx.x]; // (chunks, Dk, Dv): the state before each chunk
    C *states = checkpoints + chunks * state_size;          // (chunk + 1, Dk, Dv): the chunk's states
    C *innovations = states + (chunk + 1) * state_size;     // (chunk, Dv)
    C *deltas = innovations + chunk * Dv;                   // (chunk, Dv)
    const token_slots<D> slots = {shared_bytes + align16((int64_t)((unsigned char *)(ddecay_rows + Dk) - shared_bytes)),
                                  token_layout_of(Dk, Dv, sizeof(C), sizeof(typename S::storage)),
                                  &shape, head, prepared_query, prepared_key, value, doutput, g, beta};
    constexpr unsigned sweep_parts = PART_KEY | PART_VALUE, step_parts = PART_QUERY | PART_KEY | PART_DY | PART_ROWS;

    // 1. forward sweep, token by token (a thread's columns are its own), keeping the state at the start
    // of every chunk
    for (int64_t v = threadIdx.x; v < Dv; v += threads)
        for (int64_t k = 0; k < Dk; k++) dstate[k * Dvp + v] = 0;
    if (length > 0) stage_finish(slots, 0, stage_issue(slots, 0, start, sweep_parts));
    __syncthreads();
    for (int64_t i = 0; i < length; i++) {
        const int which = (int)(i & 1);
        token_scalars<D> pending = {0, 0};
        if (i + 1 < length) pending = stage_issue(slots, which ^ 1, start + i + 1, sweep_parts);
        delta_token<D> token = staged_token(slots, which);
        for (int64_t v = threadIdx.x; v < Dv; v += threads) {
            if (i % chunk == 0)
                for (int64_t k0 = 0; k0 < Dk; k0 += kBatch) {
                    C s[kBatch];
#pragma unroll
                    for (int j = 0; j < kBatch; j++)
                        if (k0 + j < Dk) s[j] = dstate[(k0 + j) * Dvp + v];
#pragma unroll
                    for (int j = 0; j < kBatch; j++)
                        if (k0 + j < Dk) checkpoints[(i / chunk) * state_size + (k0 + j) * Dv + v] = s[j];
                }
            C innovation;
            advance_column<D>(Dk, token, v, dstate + v, Dvp, &innovation);
        }
        if (i + 1 < length) stage_finish(slots, which ^ 1, pending);
        __syncthreads();
    }
    for (int64_t i = threadIdx.x; i < Dk * Dvp; i += threads) dstate[i] = 0; // nothing flows in from the next document
    __syncthreads();

    // 2. chunks from the last: recompute the chunk's states, then reverse steps
    for (int64_t c = chunks - 1; c >= 0; c--) {
        int64_t first = c * chunk, count = length - first < chunk ? length - first : chunk;
        C *running = buffers; // STAGED: the recomputed state, then S_{i+1} of the first reverse step
        for (int64_t v = threadIdx.x; v < Dv; v += threads) {
            for (int64_t k0 = 0; k0 < Dk; k0 += kBatch) {
                C s[kBatch];
#pragma unroll
                for (int j = 0; j < kBatch; j++)
                    if (k0 + j < Dk) s[j] = checkpoints[c * state_size + (k0 + j) * Dv + v];
#pragma unroll
                for (int j = 0; j < kBatch; j++)
                    if (k0 + j < Dk) {
                        states[(k0 + j) * Dv + v] = s[j];
                        if (STAGED) running[(k0 + j) * Dvp + v] = s[j];
                    }
            }
        }
        stage_finish(slots, 0, stage_issue(slots, 0, start + first, sweep_parts));
        __syncthreads();
        for (int64_t i = 0; i < count; i++) {
            const int which = (int)(i & 1);
            token_scalars<D> pending = {0, 0};
            if (i + 1 < count) pending = stage_issue(slots, which ^ 1, start + first + i + 1, sweep_parts);
            delta_token<D> token = staged_token(slots, which);
            for (int64_t v = threadIdx.x; v < Dv; v += threads) {
                C *next = states + (i + 1) * state_size + v;
                if (STAGED) {
                    deltas[i * Dv + v] = advance_column<D>(Dk, token, v, running + v, Dvp, &innovations[i * Dv + v], next, Dv);
                } else {
                    for (int64_t k0 = 0; k0 < Dk; k0 += kBatch) {
                        C s[kBatch];
#pragma unroll
                        for (int j = 0; j < kBatch; j++)
                            if (k0 + j < Dk) s[j] = next[(k0 + j) * Dv - state_size];
#pragma unroll
                        for (int j = 0; j < kBatch; j++)
                            if (k0 + j < Dk) next[(k0 + j) * Dv] = s[j];
                    }
                    deltas[i * Dv + v] = advance_column<D>(Dk, token, v, next, Dv, &innovations[i * Dv + v]);
                }
            }
            if (i + 1 < count) stage_finish(slots, which ^ 1, pending);
            __syncthreads();
        }
        // the last step's token (the delta and innovation rows were written by this block above)
        stage_finish(slots, (int)((count - 1) & 1),
                     stage_issue(slots, (int)((count - 1) & 1), start + first + count - 1, step_parts,
                                 deltas + (count - 1) * Dv, innovations + (count - 1) * Dv));
        __syncthreads();
        const int64_t ws = STAGED ? Dvp : Dv; // a working state's row stride
        const C *state = STAGED ? running : states + count * state_size;
        for (int64_t i = count - 1; i >= 0; i--) {
            int64_t t = start + first + i, row = t * Hv + head;
            const int which = (int)(i & 1);
            token_scalars<D> pending = {0, 0}; // the step before's token, in flight during this step
            if (i > 0) pending = stage_issue(slots, which ^ 1, t - 1, step_parts, deltas + (i - 1) * Dv, innovations + (i - 1) * Dv);
            delta_token<D> token = staged_token(slots, which);
            const typename S::storage *dy = slots.dy(which);
            const C *delta_row = slots.delta(which), *innovation_row = slots.innovation(which);
            C *previous = states + i * state_size;
            if (STAGED) { // S_i into the buffer that held S_{i+2} (read only by the last step's first loop),
                          // in flight while the first three parts of this step run
                C *into = state == buffers ? buffers + Dk * Dvp : buffers;
                for (int64_t k = 0; k < Dk; k++) // row by row: no division in the index
                    for (int64_t v = threadIdx.x; v < Dv; v += threads) copy_async(into + k * Dvp + v, previous + k * Dv + v);
                previous = into; // read after the wait and the barrier below
            }
            // o = S^T q: dS += q do^T; dq = S do
            for (int64_t k = threadIdx.x; k < Dk; k += threads) {
                C dq = 0, query_k = token.query[k];
                for (int64_t v0 = 0; v0 < Dv; v0 += kBatch) {
                    C d[kBatch], ds[kBatch], s[kBatch];
#pragma unroll
                    for (int j = 0; j < kBatch; j++)
                        if (v0 + j < Dv) d[j] = S::load(dy[v0 + j]), ds[j] = dstate[k * Dvp + v0 + j], s[j] = state[k * ws + v0 + j];
#pragma unroll
                    for (int j = 0; j < kBatch; j++)
                        if (v0 + j < Dv) {
                            dstate[k * Dvp + v0 + j] = ds[j] + d[j] * query_k;
                            dq += d[j] * s[j];
                        }
                }
                out.dquery[row * Dk + k] = dq;
            }
            __syncthreads();
            // S = S' + k delta^T: ddelta = dS^T k; dk (write) = dS delta (a thread with both a column v and
            // a row k sums the two together)
            if (threadIdx.x < Dv && threadIdx.x < Dk && Dv <= threads && Dk <= threads) {
                const int64_t vk = threadIdx.x;
                ordered_dot_pair<C>(Dk, dstate + vk, Dvp, token.key, 1, &ddelta[vk], Dv, dstate + vk * Dvp, 1, delta_row, 1,
                                    &dkey_write[vk]);
            } else {
                for (int64_t v = threadIdx.x; v < Dv; v += threads)
                    ddelta[v] = ordered_dot<C>(Dk, dstate + v, Dvp, token.key, 1);
                for (int64_t k = threadIdx.x; k < Dk; k += threads)
                    dkey_write[k] = ordered_dot<C>(Dv, dstate + k * Dvp, 1, delta_row, 1);
            }
            __syncthreads();
            // delta = (v - kv) * beta
            for (int64_t v = threadIdx.x; v < Dv; v += threads) {
                dinnovation[v] = ddelta[v] * token.beta;
                if (out.dvalue) out.dvalue[row * Dv + v] = S::store(dinnovation[v]);
            }
            if (threadIdx.x == 0 && out.dbeta) out.dbeta[row] = S::store(ordered_dot<C>(Dv, ddelta, 1, innovation_row, 1));
            if (i > 0) stage_finish(slots, which ^ 1, pending); // and S_i's copy (STAGED): cp.async.wait_all
            else copies_wait();
            __syncthreads();
            // kv = S'^T k, S' = S_{t-1} decay: dS' = dS + k (-dinnov)^T; dk (read) = S' (-dinnov);
            // then S' = S_{t-1} decay: row sums of dS' * S_{t-1}, dS_{t-1} = dS' decay (one pass over the row)
            for (int64_t k = threadIdx.x; k < Dk; k += threads) {
                C dk_read = 0, row_sum = 0, key_k = token.key[k];
                for (int64_t v0 = 0; v0 < Dv; v0 += kBatch) {
                    C dinn[kBatch], ds[kBatch], p[kBatch];
#pragma unroll
                    for (int j = 0; j < kBatch; j++)
                        if (v0 + j < Dv) dinn[j] = dinnovation[v0 + j], ds[j] = dstate[k * Dvp + v0 + j], p[j] = previous[k * ws + v0 + j];
#pragma unroll
                    for (int j = 0; j < kBatch; j++)
                        if (v0 + j < Dv) {
                            C dmemory = -dinn[j];
                            C updated = ds[j] + dmemory * key_k;
                            dk_read += dmemory * (p[j] * token.decay);
                            row_sum += updated * p[j];
                            dstate[k * Dvp + v0 + j] = updated * token.decay;
                        }
                }
                out.dkey[row * Dk + k] = dkey_write[k] + dk_read;
                ddecay_rows[k] = row_sum;
            }
            __syncthreads();
            if (threadIdx.x == 0 && out.dg) {
                C ddecay = 0;
                for (int64_t k0 = 0; k0 < Dk; k0 += kBatch) {
                    C rows[kBatch];
#pragma unroll
                    for (int j = 0; j < kBatch; j++)
                        if (k0 + j < Dk) rows[j] = ddecay_rows[k0 + j];
#pragma unroll
                    for (int j = 0; j < kBatch; j++)
                        if (k0 + j < Dk) ddecay += rows[j];
                }
                store_f64(out.dg, shape.g_dtype, row, (double)(ddecay * token.decay));
            }
            state = previous; // S_i is the next step's S_{i+1}
        }
        __syncthreads(); // the next chunk overwrites the states this one read
    }
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
        size_t shared = (size_t)(align16(shape.key_dim * shape.value_dim * (int64_t)sizeof(C)) + token_slots_bytes<D>(shape));
        auto kernel = shape.key_dim == 128 && shape.value_dim == 128 ? delta_forward<D, 128, 128> : delta_forward<D, 0, 0>;
        PARITY_TRY(allow_shared(kernel, shared, call.sizes, args->query->device.index));
        const cudaStream_t stream = parity_cuda_stream(exec);
        kernel<<<(unsigned)(shape.documents * shape.value_heads), threads_for(shape.value_dim), shared, stream>>>(
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
    PARITY_TRY(prepare_backward_call(args, grads, &call));
    parity_device device = args->query->device;
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
    scoped_tensor chunk_lengths, block_bases, scratch;
    prepared_qk_grads dprepared;
    PARITY_TRY(upload_int64(chunk_lengths, chunk_length.data(), (int64_t)chunk_length.size(), device));
    PARITY_TRY(upload_int64(block_bases, block_base.data(), (int64_t)block_base.size(), device));
    parity_dtype compute = args->query->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    PARITY_TRY(scratch.alloc_1d(compute, device, total));
    PARITY_TRY(dprepared.alloc(args, shape));
    return dispatch_float(args->query->dtype, "gated_delta_rule", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        prepared_qk prepared;
        PARITY_TRY(prepare_qk<D>(exec, args, call, &prepared));
        if (shape.documents * shape.value_heads > 0) {
            // dS (Dk, Dv + 1), four vectors, and STAGED two working states (Dk, Dv + 1) when they fit
            size_t padded = (size_t)(shape.key_dim * (shape.value_dim + 1)) * sizeof(C);
            size_t vectors = (size_t)(2 * shape.value_dim + 2 * shape.key_dim) * sizeof(C);
            int limit = 0;
            PARITY_CUDA_TRY(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device.index));
            const size_t slots = (size_t)token_slots_bytes<D>(shape);
            const bool staged = (size_t)align16((int64_t)(padded * 3 + vectors)) + slots <= (size_t)limit;
            size_t shared = (size_t)align16((int64_t)(padded * (staged ? 3 : 1) + vectors)) + slots;
            const bool square128 = shape.key_dim == 128 && shape.value_dim == 128;
            auto kernel = staged ? (square128 ? delta_backward<D, true, 128, 128> : delta_backward<D, true, 0, 0>)
                                 : (square128 ? delta_backward<D, false, 128, 128> : delta_backward<D, false, 0, 0>);
            PARITY_TRY(allow_shared(kernel, shared, call.sizes, device.index));
            delta_gradients<D> out = {dprepared.dquery.data<C>(), dprepared.dkey.data<C>(),
                                      grads->dvalue ? static_cast<storage *>(grads->dvalue->data) : nullptr,
                                      grads->dg ? grads->dg->data : nullptr,
                                      grads->dbeta ? static_cast<storage *>(grads->dbeta->data) : nullptr};
            delta_plan plan = {block_bases.data<int64_t>(), chunk_lengths.data<int64_t>()};
            int64_t width = shape.key_dim > shape.value_dim ? shape.key_dim : shape.value_dim;
            const cudaStream_t stream = parity_cuda_stream(exec);
            kernel<<<(unsigned)(shape.documents * shape.value_heads), threads_for(width), shared, stream>>>(
                shape, plan, prepared.query.data<C>(), prepared.key.data<C>(),
                static_cast<const storage *>(args->value->data), args->g->data,
                static_cast<const storage *>(args->beta->data), static_cast<const storage *>(grads->doutput->data),
                scratch.data<C>(), out);
            PARITY_CUDA_TRY_LAUNCH("delta_backward");
        }
        PARITY_TRY(finish_qk_grads<D>(exec, args, grads, call, prepared, dprepared));
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

// chunked.cu: the chunked gated delta rule on CUDA (value "fla"): flash-linear-attention's
// chunk_gated_delta_rule algorithm (chunks of C <= 64 tokens starting at each document's first token,
// the WY/UT representation, a state carried from chunk to chunk), the math of chunked.c (its header
// derives it), split the way fla splits it so that only the state recurrence is sequential:
//
//   per (chunk, value head), in parallel:          chunk_prepare
//     G = cumsum(g), A = strict_lower(beta_i exp(G_i - G_j) k_i.k_j), T = (I + A)^-1 (16 x 16 blocks),
//     w = T diag(beta exp(G)) K (L x Dk), u = T diag(beta) V (L x Dv)
//   per (document, value head, block of 16 state columns), over the chunks in order:   chunk_states
//     S_c stored; delta = u - w S (L x 16); S = exp(G_last) S + K^T diag(exp(G_last - G)) delta
//     (the columns of S never mix, so the recurrence splits over value columns)
//   per (chunk, value head), in parallel:          chunk_output
//     O = diag(exp(G)) Q S_c + (Q K^T o Dm) delta      (Dm[i][j] = exp(G_i - G_j), j <= i)
//
// Backward, recomputing the forward's intermediates (w, u, T, S_c, delta), then:
//   chunk_local_ddelta (parallel)   ddelta_local = (Q K^T o Dm)^T dO
//   chunk_dstates (sequential, as chunk_states but from the last chunk)
//     dS' of each chunk stored (the gradient of the state after it); ddelta = ddelta_local +
//     diag(exp(G_last - G)) K dS'; dS = exp(G_last) dS' + Q^T diag(exp(G)) dO - w^T ddelta
//   chunk_grads (parallel): everything else of chunked.c's reverse_chunk, regrouped as products:
//     dP = dO delta^T; dw = -ddelta S^T; dUb = T^T ddelta; dWb = T^T dw;
//     dA = -strict_lower(dWb w^T + dUb u^T)   (T = (I + A)^-1: dA = -T^T dT T^T, and dT = dw Wb^T + du Ub^T);
//     dq = diag(exp(G)) dO S^T + (dP o Dm) K;  dk = (dP o Dm)^T Q + diag(exp(G_last - G)) delta dS'^T
//          + diag(beta exp(G)) dWb + (dKK + dKK^T) K with dKK = dA o beta_i Dm;  dv = diag(beta) dUb;
//     dbeta, and dG from every place G enters (exp(G_i), Dm, the last row), dg = reverse cumsum of dG.
// q and k are prepared (L2 norm, q * scale) and their gradients finished by cuda_common.cuh, as in
// the recurrent eager.cu. Every product is a small block-level GEMM (tile_mac: each thread a 4 x 4 or
// 2 x 2 register tile, operands read through strided views from shared or global memory) in the
// compute precision: f32 for f32 and bf16 calls, f64 for f64 calls, so the result carries the same
// rounding as the recurrent eager (the sums run in another order). No atomics: every sum has one
// order, so runs are bitwise repeatable, and a document's chunks see nothing of other documents.
// Limits (a "not supported" error, never a fallback): chunk_size at most 64; the backward's shared
// memory (five C x C matrices) must fit the device (f64 with Dk > 128 does not on an H200).
#include <math.h>
#include <type_traits>
#include <vector>

#include "ops/core/cuda/fused_rows.cuh"
#include "ops/gated_delta_rule/cuda_common.cuh"

extern "C" {
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

namespace {

constexpr int max_chunk = 64;      // the largest chunk the kernels take (fla's BT)
constexpr int state_columns = 16;  // columns of S (or dS) one sequential block carries
constexpr int parallel_threads = 256;
constexpr int sequential_threads = 512; // chunk_states / chunk_dstates: 16 warps hide the latency of the chain

// ---- block-level products ----

// Element (r, c) of a matrix at p[r * rs + c * cs]: a row-major, column-major or transposed view of
// shared or global memory, of the compute type or a storage type.
template <typename T> struct view {
    const T *p;
    int64_t rs, cs;
    __device__ __forceinline__ const T &at(int64_t r, int64_t c) const { return p[r * rs + c * cs]; }
};
template <typename T> __device__ __forceinline__ view<T> make_view(const T *p, int64_t rs, int64_t cs) {
    return view<T>{p, rs, cs};
}

__device__ __forceinline__ float value_of(float x) { return x; }
__device__ __forceinline__ double value_of(double x) { return x; }
__device__ __forceinline__ float value_of(uint16_t x) { return parity_bf16_to_f32(x); }

// One thread's TM x TN register tile of an M x N product, at (m0, n0).
template <typename C, int TM, int TN> struct tile {
    int m0, n0;
    C v[TM][TN];
    __device__ __forceinline__ void start(int index, int N) {
        int columns = (N + TN - 1) / TN; // consecutive threads take consecutive column tiles
        m0 = index / columns * TM;
        n0 = index % columns * TN;
        for (int i = 0; i < TM; i++)
            for (int j = 0; j < TN; j++) v[i][j] = C(0);
    }
};

template <int TM, int TN> __device__ __forceinline__ int tile_count(int M, int N) {
    return ((M + TM - 1) / TM) * ((N + TN - 1) / TN);
}

// t += A (M x K) diag(kscale) B (K x N) over the tile (kscale: K values, or NULL for ones). Rows and
// columns past M and N read the last valid one (clamped) instead of branching; the callers' epilogues
// drop them. Each thread walks TM row pointers and TN column pointers by 32-bit steps.
template <bool SCALED, typename C, int TM, int TN, typename TA, typename TB>
__device__ __forceinline__ void tile_mac_loop(tile<C, TM, TN> &t, int K, const TA *const (&a)[TM], int a_step,
                                              const TB *const (&b)[TN], int b_step, const C *kscale) {
#pragma unroll 4
    for (int k = 0; k < K; k++) {
        C av[TM], bv[TN];
        C s = SCALED ? kscale[k] : C(1);
#pragma unroll
        for (int i = 0; i < TM; i++) av[i] = SCALED ? C(value_of(a[i][k * a_step])) * s : C(value_of(a[i][k * a_step]));
#pragma unroll
        for (int j = 0; j < TN; j++) bv[j] = C(value_of(b[j][k * b_step]));
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++) t.v[i][j] += av[i] * bv[j];
    }
}

template <typename C, int TM, int TN, typename TA, typename TB>
__device__ __forceinline__ void tile_mac(tile<C, TM, TN> &t, int M, int N, int K, view<TA> A, view<TB> B,
                                         const C *kscale = nullptr) {
    const TA *a[TM];
    const TB *b[TN];
#pragma unroll
    for (int i = 0; i < TM; i++) a[i] = A.p + (int64_t)(t.m0 + i < M ? t.m0 + i : M - 1) * A.rs;
#pragma unroll
    for (int j = 0; j < TN; j++) b[j] = B.p + (int64_t)(t.n0 + j < N ? t.n0 + j : N - 1) * B.cs;
    if (kscale) tile_mac_loop<true>(t, K, a, (int)A.cs, b, (int)B.rs, kscale);
    else tile_mac_loop<false>(t, K, a, (int)A.cs, b, (int)B.rs, kscale);
}

// Copies an L x Dk block of rows (row stride `stride`) into shared memory with rows padded to Dk + 1,
// coalesced; the padding spreads a warp's rows over the banks.
template <typename To, typename From>
__device__ __forceinline__ void stage_rows(To *to, const From *from, int64_t stride, int L, int Dk) {
    const int warps = blockDim.x / 32, lane = threadIdx.x % 32; // a warp a row: no division per element
    for (int r = threadIdx.x / 32; r < L; r += warps)
        for (int c = lane; c < Dk; c += 32) to[r * (Dk + 1) + c] = To(value_of(from[r * stride + c]));
}

// ---- the call's chunks and scratch ----

// The arithmetic of a call: f32 for bf16 calls (the recurrent eager's precision; bf16 is the fast
// path), f64 for f32 and f64 calls. Why f64 for f32: in f32 the chunked form's extra roundings (the
// UT solve, w and u, the per-chunk state update) put 2.3x the recurrent eager's relative RMS error
// on o and on the gradients (measured on an H200, test_gated_delta_rule_gpu.c's rows), over the
// "at most 2x eager's in the same dtype" rule; in f64 its result is the exact result rounded once.
// The prepared q and k stay in the call's compute precision (scalar<D>::compute), as eager's.
template <parity_dtype D> struct chunk_types {
    using storage = typename scalar<D>::storage;
    using prepared = typename scalar<D>::compute;
    using compute = typename std::conditional<D == PARITY_BF16, float, double>::type;
};
template <parity_dtype D> using chunk_compute = typename chunk_types<D>::compute;

// Per chunk (all documents' chunks in order): its first token and length; per document its first chunk.
// Per (chunk, value head) "slot" = chunk * Hv + head, the scratch below (compute dtype, C = capacity).
template <parity_dtype D> struct chunk_plan {
    using Cm = chunk_compute<D>;
    using Pm = typename chunk_types<D>::prepared;
    delta_shape shape;
    int capacity;                 // C: the longest chunk
    int64_t chunks;               // all documents' chunks
    const int64_t *chunk_start;   // (chunks)
    const int64_t *chunk_length;  // (chunks)
    const int64_t *first_chunk;   // (documents + 1)
    const Pm *query, *key;        // (N, Hk, Dk) prepared (the call's compute precision)
    const void *g;                // (N, Hv), shape.g_dtype
    Cm *cumulative;               // (slots, C)       G
    Cm *solve;                    // (slots, C, C)    T (backward only)
    Cm *w, *u;                    // (slots, C, Dk), (slots, C, Dv)
    Cm *states;                   // (slots, Dk, Dv)  S at the chunk's start; (slots, Dv, Dk) (S^T) when
                                  // states_transposed: the backward reads S^T rows, the forward S rows
    bool states_transposed;
    Cm *delta;                    // (slots, C, Dv)
    // backward
    Cm *dstates;                  // (slots, Dv, Dk)  dS'^T (dS' = the gradient of the state after the chunk)
    Cm *ddelta;                   // (slots, C, Dv)
    Cm *dub;                      // (slots, C, Dv)   T^T ddelta
    Cm *dw;                       // (slots, C, Dk)   -ddelta S^T
    Cm *dwb;                      // (slots, C, Dk)   T^T dw
};

struct chunk_slot {
    int64_t slot, chunk, head, start;
    int length;
};

template <parity_dtype D> __device__ __forceinline__ chunk_slot slot_of(const chunk_plan<D> &p, int64_t slot) {
    chunk_slot s;
    s.slot = slot;
    s.chunk = slot / p.shape.value_heads;
    s.head = slot % p.shape.value_heads;
    s.start = p.chunk_start[s.chunk];
    s.length = (int)p.chunk_length[s.chunk];
    return s;
}

// The prepared q or k rows of the chunk's key head, as an L x Dk view (row i = token start + i).
template <parity_dtype D, typename Pm>
__device__ __forceinline__ const Pm *key_rows(const chunk_plan<D> &p, const Pm *base, const chunk_slot &s) {
    return base + (s.start * p.shape.key_heads + s.head / p.shape.group) * p.shape.key_dim;
}
template <parity_dtype D> __device__ __forceinline__ int64_t key_stride(const chunk_plan<D> &p) {
    return p.shape.key_heads * p.shape.key_dim;
}

// G (cumulative log decay) of the chunk from the scratch, with exp(G), exp(G_last - G_j) and exp(G_last).
template <parity_dtype D, typename Cm = chunk_compute<D>>
__device__ void load_decays(const chunk_plan<D> &p, const chunk_slot &s, Cm *G, Cm *decay, Cm *to_last, Cm *last) {
    const Cm *source = p.cumulative + s.slot * p.capacity;
    for (int i = threadIdx.x; i < s.length; i += blockDim.x) G[i] = source[i];
    __syncthreads();
    for (int i = threadIdx.x; i < s.length; i += blockDim.x) {
        decay[i] = precise_exp(G[i]);
        if (to_last) to_last[i] = precise_exp(G[s.length - 1] - G[i]);
    }
    if (last && threadIdx.x == 0) *last = precise_exp(G[s.length - 1]);
    __syncthreads();
}

// ---- forward ----

// T = (I + A)^-1 for the strictly lower L x L A (row stride ld; T holds the identity on entry, partial is
// (16, ld) scratch), in 16 x 16 blocks. Each diagonal block D_a is inverted by one warp, a lane a column
// (column c's forward substitution T[r][c] = -sum_{m=c}^{r-1} A[r][m] T[m][c] reads only column c);
// then block row by block row, T_ab = -D_a X_ab with X_ab = sum_{m=b}^{a-1} A_am T_mb, all b < a at once.
// Call from every thread of the block, after a barrier that publishes A and T; ends with a barrier.
template <typename Cm> __device__ void invert_unit_lower(Cm *T, const Cm *A, Cm *partial, int L, int ld) {
    const int blocks = (L + 15) / 16, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int b = warp; b < blocks; b += blockDim.x / 32) {
        int first = b * 16, end = first + 16 < L ? first + 16 : L, c = first + lane;
        if (lane < 16 && c < end)
            for (int r = c + 1; r < end; r++) {
                Cm sum = 0;
                for (int m = c; m < r; m++) sum += A[r * ld + m] * T[m * ld + c];
                T[r * ld + c] = -sum;
            }
    }
    __syncthreads();
    for (int a = 1; a < blocks; a++) {
        int first = a * 16, rows = (first + 16 < L ? first + 16 : L) - first;
        for (int index = threadIdx.x; index < rows * first; index += blockDim.x) {
            int r = first + index / first, c = index % first;
            Cm sum = 0;
            for (int m = c; m < first; m++) sum += A[r * ld + m] * T[m * ld + c];
            partial[(r - first) * ld + c] = sum; // X (16, first)
        }
        __syncthreads();
        for (int index = threadIdx.x; index < rows * first; index += blockDim.x) {
            int r = first + index / first, c = index % first;
            Cm sum = partial[(r - first) * ld + c];
            for (int m = first; m < r; m++) sum += T[r * ld + m] * partial[(m - first) * ld + c];
            T[r * ld + c] = -sum;
        }
        __syncthreads();
    }
}

// Per (chunk, value head): G, A, T = (I + A)^-1, w, u (and T itself for the backward when keep_solve).
template <parity_dtype D>
__global__ void chunk_prepare(chunk_plan<D> p, const typename scalar<D>::storage *value,
                              const typename scalar<D>::storage *beta_in, bool keep_solve) {
    using Cm = chunk_compute<D>;
    extern __shared__ unsigned char shared_bytes[];
    const int Cc = p.capacity;
    Cm *G = reinterpret_cast<Cm *>(shared_bytes), *beta = G + Cc, *beta_decay = beta + Cc; // (C) each
    Cm *A = beta_decay + Cc, *T = A + Cc * Cc;                                           // (C, C) each
    Cm *partial = T + Cc * Cc;                                                           // (16, C)
    using Pm = typename chunk_types<D>::prepared;
    Pm *Ks = reinterpret_cast<Pm *>(partial + 16 * Cc);                                  // (C, Dk + 1)
    chunk_slot s = slot_of(p, blockIdx.x);
    const int L = s.length, Dk = (int)p.shape.key_dim, Dv = (int)p.shape.value_dim, ld = Dk + 1;
    const int64_t Hv = p.shape.value_heads;
    stage_rows(Ks, key_rows(p, p.key, s), key_stride(p), L, Dk);
    for (int i = threadIdx.x; i < L; i += blockDim.x) {
        int64_t row = (s.start + i) * Hv + s.head;
        G[i] = (Cm)load_f64(p.g, p.shape.g_dtype, row);
        beta[i] = scalar<D>::load(beta_in[row]);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int i = 1; i < L; i++) G[i] = G[i - 1] + G[i];
    __syncthreads();
    for (int i = threadIdx.x; i < L; i += blockDim.x) {
        beta_decay[i] = beta[i] * precise_exp(G[i]);
        p.cumulative[s.slot * Cc + i] = G[i];
    }
    // A[i][j] = beta_i exp(G_i - G_j) k_i . k_j, j < i
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, L); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, L);
        tile_mac(t, L, L, Dk, make_view<Pm>(Ks, ld, 1), make_view<Pm>(Ks, 1, ld));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int r = t.m0 + i, c = t.n0 + j;
                if (r < L && c < L) A[r * Cc + c] = c < r ? beta[r] * t.v[i][j] * precise_exp(G[r] - G[c]) : Cm(0);
            }
    }
    for (int index = threadIdx.x; index < L * L; index += blockDim.x) {
        int r = index / L, c = index % L;
        T[r * Cc + c] = r == c ? Cm(1) : Cm(0);
    }
    __syncthreads();
    invert_unit_lower(T, A, partial, L, Cc);
    if (keep_solve)
        for (int index = threadIdx.x; index < Cc * Cc; index += blockDim.x) {
            int r = index / Cc, c = index % Cc;
            p.solve[s.slot * Cc * Cc + index] = r < L && c < L ? T[index] : Cm(0);
        }
    // w = T diag(beta exp(G)) K (L x Dk); u = T diag(beta) V (L x Dv)
    Cm *w = p.w + s.slot * Cc * Dk, *u = p.u + s.slot * Cc * Dv;
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dk); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, Dk);
        tile_mac(t, L, Dk, L, make_view<Cm>(T, Cc, 1), make_view<Pm>(Ks, ld, 1), beta_decay);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                if (t.m0 + i < L && t.n0 + j < Dk) w[(t.m0 + i) * Dk + t.n0 + j] = t.v[i][j];
    }
    const typename scalar<D>::storage *V = value + (s.start * Hv + s.head) * Dv;
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dv); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, Dv);
        tile_mac(t, L, Dv, L, make_view<Cm>(T, Cc, 1), make_view(V, Hv * Dv, 1), beta);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                if (t.m0 + i < L && t.n0 + j < Dv) u[(t.m0 + i) * Dv + t.n0 + j] = t.v[i][j];
    }
}

// Per (document, value head, 16 state columns), over the document's chunks in order: S_c stored,
// delta = u - w S, S = exp(G_last) S + K^T diag(exp(G_last - G)) delta. The chunk's w, K and u columns
// are staged in shared memory first (coalesced), so the products wait on no global load.
template <parity_dtype D> __global__ void chunk_states(chunk_plan<D> p) {
    using Cm = chunk_compute<D>;
    using Pm = typename chunk_types<D>::prepared;
    extern __shared__ unsigned char shared_bytes[];
    const int Cc = p.capacity, Dk = (int)p.shape.key_dim, Dv = (int)p.shape.value_dim, ld = Dk + 1;
    const int64_t Hv = p.shape.value_heads;
    Cm *S = reinterpret_cast<Cm *>(shared_bytes); // (Dk, 16)
    Cm *delta = S + Dk * state_columns;           // (C, 16)
    Cm *us = delta + Cc * state_columns;          // (C, 16) the chunk's u columns
    Cm *ws = us + Cc * state_columns;             // (C, Dk + 1)
    Cm *G = ws + Cc * ld, *decay = G + Cc, *to_last = decay + Cc, *last = to_last + Cc;
    Pm *Ks = reinterpret_cast<Pm *>(last + 1);    // (C, Dk + 1)
    int64_t document = blockIdx.x / Hv, head = blockIdx.x % Hv;
    int v0 = blockIdx.y * state_columns, N = Dv - v0 < state_columns ? Dv - v0 : state_columns;
    for (int i = threadIdx.x; i < Dk * state_columns; i += blockDim.x) S[i] = 0;
    __syncthreads();
    for (int64_t chunk = p.first_chunk[document]; chunk < p.first_chunk[document + 1]; chunk++) {
        chunk_slot s = slot_of(p, chunk * Hv + head);
        const int L = s.length;
        Cm *state_out = p.states + s.slot * Dk * Dv;
        for (int r = threadIdx.x / state_columns, c = threadIdx.x % state_columns; r < Dk; r += blockDim.x / state_columns)
            if (c < N) state_out[p.states_transposed ? (v0 + c) * Dk + r : r * Dv + v0 + c] = S[r * state_columns + c];
        const Cm *w = p.w + s.slot * Cc * Dk, *u = p.u + s.slot * Cc * Dv;
        stage_rows(ws, w, Dk, L, Dk);
        stage_rows(Ks, key_rows(p, p.key, s), key_stride(p), L, Dk);
        for (int r = threadIdx.x / state_columns, c = threadIdx.x % state_columns; r < L; r += blockDim.x / state_columns)
            if (c < N) us[r * state_columns + c] = u[r * Dv + v0 + c];
        load_decays(p, s, G, decay, to_last, last); // its barriers publish the staged rows too
        Cm *delta_out = p.delta + s.slot * Cc * Dv;
        for (int index = threadIdx.x; index < tile_count<2, 1>(L, N); index += blockDim.x) {
            tile<Cm, 2, 1> t;
            t.start(index, N);
            tile_mac(t, L, N, Dk, make_view<Cm>(ws, ld, 1), make_view<Cm>(S, state_columns, 1));
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 1; j++) {
                    int r = t.m0 + i, c = t.n0 + j;
                    if (r < L && c < N) {
                        Cm d = us[r * state_columns + c] - t.v[i][j];
                        delta[r * state_columns + c] = d;
                        delta_out[r * Dv + v0 + c] = d;
                    }
                }
        }
        __syncthreads();
        for (int index = threadIdx.x; index < tile_count<2, 2>(Dk, N); index += blockDim.x) {
            tile<Cm, 2, 2> t;
            t.start(index, N);
            tile_mac(t, Dk, N, L, make_view<Pm>(Ks, 1, ld), make_view<Cm>(delta, state_columns, 1), to_last);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    int r = t.m0 + i, c = t.n0 + j;
                    if (r < Dk && c < N) S[r * state_columns + c] = *last * S[r * state_columns + c] + t.v[i][j];
                }
        }
        __syncthreads();
    }
}

// The lower triangle (diagonal included) of Q K^T o Dm of the chunk into P (C x C, zero elsewhere),
// from Q and K staged (rows padded to Dk + 1).
template <typename Pm, typename Cm>
__device__ void decayed_scores(int L, int Cc, int Dk, const Pm *Qs, const Pm *Ks, const Cm *G, Cm *P) {
    const int ld = Dk + 1;
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, L); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, L);
        tile_mac(t, L, L, Dk, make_view<Pm>(Qs, ld, 1), make_view<Pm>(Ks, 1, ld));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int r = t.m0 + i, c = t.n0 + j;
                if (r < L && c < L) P[r * Cc + c] = c <= r ? t.v[i][j] * precise_exp(G[r] - G[c]) : Cm(0);
            }
    }
}

// Per (chunk, value head): O = diag(exp(G)) Q S_c + (Q K^T o Dm) delta.
template <parity_dtype D>
__global__ void chunk_output(chunk_plan<D> p, typename scalar<D>::storage *output) {
    using Cm = chunk_compute<D>;
    extern __shared__ unsigned char shared_bytes[];
    const int Cc = p.capacity, Dk = (int)p.shape.key_dim, Dv = (int)p.shape.value_dim;
    const int64_t Hv = p.shape.value_heads;
    using Pm = typename chunk_types<D>::prepared;
    const int Dq = (int)p.shape.key_dim, ldq = Dq + 1;
    Cm *P = reinterpret_cast<Cm *>(shared_bytes), *G = P + Cc * Cc, *decay = G + Cc;
    Pm *Qs = reinterpret_cast<Pm *>(decay + Cc), *Ks = Qs + Cc * ldq; // (C, Dk + 1) each
    chunk_slot s = slot_of(p, blockIdx.x);
    const int L = s.length;
    stage_rows(Qs, key_rows(p, p.query, s), key_stride(p), L, Dq);
    stage_rows(Ks, key_rows(p, p.key, s), key_stride(p), L, Dq);
    load_decays(p, s, G, decay, (Cm *)nullptr, (Cm *)nullptr); // its barriers publish the staged rows too
    decayed_scores(L, Cc, Dq, Qs, Ks, G, P);
    __syncthreads();
    const Cm *S = p.states + s.slot * Dk * Dv, *delta = p.delta + s.slot * Cc * Dv;
    typename scalar<D>::storage *out = output + (s.start * Hv + s.head) * Dv;
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dv); index += blockDim.x) {
        tile<Cm, 4, 4> inter, intra;
        inter.start(index, Dv);
        intra.start(index, Dv);
        tile_mac(inter, L, Dv, Dk, make_view<Pm>(Qs, ldq, 1), make_view(S, Dv, 1));
        tile_mac(intra, L, Dv, L, make_view<Cm>(P, Cc, 1), make_view(delta, Dv, 1));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int r = inter.m0 + i, c = inter.n0 + j;
                if (r < L && c < Dv) out[r * Hv * Dv + c] = scalar<D>::store(decay[r] * inter.v[i][j] + intra.v[i][j]);
            }
    }
}

// ---- backward ----

// Per (chunk, value head): ddelta_local = (Q K^T o Dm)^T dO into p.ddelta.
template <parity_dtype D>
__global__ void chunk_local_ddelta(chunk_plan<D> p, const typename scalar<D>::storage *doutput) {
    using Cm = chunk_compute<D>;
    extern __shared__ unsigned char shared_bytes[];
    const int Cc = p.capacity, Dv = (int)p.shape.value_dim;
    const int64_t Hv = p.shape.value_heads;
    using Pm = typename chunk_types<D>::prepared;
    const int Dq = (int)p.shape.key_dim, ldq = Dq + 1;
    Cm *P = reinterpret_cast<Cm *>(shared_bytes), *G = P + Cc * Cc, *decay = G + Cc;
    Pm *Qs = reinterpret_cast<Pm *>(decay + Cc), *Ks = Qs + Cc * ldq; // (C, Dk + 1) each
    chunk_slot s = slot_of(p, blockIdx.x);
    const int L = s.length;
    stage_rows(Qs, key_rows(p, p.query, s), key_stride(p), L, Dq);
    stage_rows(Ks, key_rows(p, p.key, s), key_stride(p), L, Dq);
    load_decays(p, s, G, decay, (Cm *)nullptr, (Cm *)nullptr); // its barriers publish the staged rows too
    decayed_scores(L, Cc, Dq, Qs, Ks, G, P);
    __syncthreads();
    const typename scalar<D>::storage *dO = doutput + (s.start * Hv + s.head) * Dv;
    Cm *ddelta = p.ddelta + s.slot * Cc * Dv;
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dv); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, Dv);
        tile_mac(t, L, Dv, L, make_view<Cm>(P, 1, Cc), make_view(dO, Hv * Dv, 1));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                if (t.m0 + i < L && t.n0 + j < Dv) ddelta[(t.m0 + i) * Dv + t.n0 + j] = t.v[i][j];
    }
}

// Per (document, value head, 16 columns), over the chunks from the last: dS' stored; ddelta completed;
// dS = exp(G_last) dS' + Q^T diag(exp(G)) dO - w^T ddelta. K, Q, w and the dO columns staged as in chunk_states.
template <parity_dtype D>
__global__ void chunk_dstates(chunk_plan<D> p, const typename scalar<D>::storage *doutput) {
    using Cm = chunk_compute<D>;
    using Pm = typename chunk_types<D>::prepared;
    extern __shared__ unsigned char shared_bytes[];
    const int Cc = p.capacity, Dk = (int)p.shape.key_dim, Dv = (int)p.shape.value_dim, ld = Dk + 1;
    const int64_t Hv = p.shape.value_heads;
    Cm *dS = reinterpret_cast<Cm *>(shared_bytes); // (Dk, 16)
    Cm *dd = dS + Dk * state_columns;              // (C, 16)
    Cm *dOs = dd + Cc * state_columns;             // (C, 16) the chunk's dO columns
    Cm *ws = dOs + Cc * state_columns;             // (C, Dk + 1)
    Cm *G = ws + Cc * ld, *decay = G + Cc, *to_last = decay + Cc, *last = to_last + Cc;
    Pm *Ks = reinterpret_cast<Pm *>(last + 1), *Qs = Ks + Cc * ld; // (C, Dk + 1) each
    int64_t document = blockIdx.x / Hv, head = blockIdx.x % Hv;
    int v0 = blockIdx.y * state_columns, N = Dv - v0 < state_columns ? Dv - v0 : state_columns;
    for (int i = threadIdx.x; i < Dk * state_columns; i += blockDim.x) dS[i] = 0; // nothing after the document
    __syncthreads();
    for (int64_t chunk = p.first_chunk[document + 1] - 1; chunk >= p.first_chunk[document]; chunk--) {
        chunk_slot s = slot_of(p, chunk * Hv + head);
        const int L = s.length;
        Cm *dstate_out = p.dstates + s.slot * Dk * Dv;
        for (int r = threadIdx.x / state_columns, c = threadIdx.x % state_columns; r < Dk; r += blockDim.x / state_columns)
            if (c < N) dstate_out[(v0 + c) * Dk + r] = dS[r * state_columns + c];
        const int64_t ks = key_stride(p);
        stage_rows(Ks, key_rows(p, p.key, s), ks, L, Dk);
        stage_rows(Qs, key_rows(p, p.query, s), ks, L, Dk);
        stage_rows(ws, p.w + s.slot * Cc * Dk, Dk, L, Dk);
        const typename scalar<D>::storage *dO = doutput + (s.start * Hv + s.head) * Dv + v0;
        for (int r = threadIdx.x / state_columns, c = threadIdx.x % state_columns; r < L; r += blockDim.x / state_columns)
            if (c < N) dOs[r * state_columns + c] = scalar<D>::load(dO[(int64_t)r * Hv * Dv + c]);
        load_decays(p, s, G, decay, to_last, last); // its barriers publish the staged rows too
        Cm *ddelta = p.ddelta + s.slot * Cc * Dv;
        for (int index = threadIdx.x; index < tile_count<2, 1>(L, N); index += blockDim.x) {
            tile<Cm, 2, 1> t;
            t.start(index, N);
            tile_mac(t, L, N, Dk, make_view<Pm>(Ks, ld, 1), make_view<Cm>(dS, state_columns, 1));
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 1; j++) {
                    int r = t.m0 + i, c = t.n0 + j;
                    if (r < L && c < N) {
                        Cm d = ddelta[r * Dv + v0 + c] + to_last[r] * t.v[i][j];
                        dd[r * state_columns + c] = d;
                        ddelta[r * Dv + v0 + c] = d;
                    }
                }
        }
        __syncthreads();
        for (int index = threadIdx.x; index < tile_count<2, 2>(Dk, N); index += blockDim.x) {
            tile<Cm, 2, 2> read, write;
            read.start(index, N);
            write.start(index, N);
            tile_mac(read, Dk, N, L, make_view<Pm>(Qs, 1, ld), make_view<Cm>(dOs, state_columns, 1), decay);
            tile_mac(write, Dk, N, L, make_view<Cm>(ws, 1, ld), make_view<Cm>(dd, state_columns, 1));
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    int r = read.m0 + i, c = read.n0 + j;
                    if (r < Dk && c < N)
                        dS[r * state_columns + c] = *last * dS[r * state_columns + c] + read.v[i][j] - write.v[i][j];
                }
        }
        __syncthreads();
    }
}

// Gradients written per (token, value head).
template <parity_dtype D> struct chunk_gradients {
    typename scalar<D>::compute *dquery, *dkey; // (N, Hv, Dk) of the prepared q and k
    typename scalar<D>::storage *dvalue;       // (N, Hv, Dv), may be NULL
    void *dg;                                   // (N, Hv) g's dtype, may be NULL
    typename scalar<D>::storage *dbeta;        // (N, Hv), may be NULL
};

// Sum over a warp in a fixed order (butterfly); every lane gets it.
template <typename Cm> __device__ __forceinline__ Cm warp_sum(Cm value) {
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}

// Per (chunk, value head): dq, dk, dv, dbeta, dg of the chunk's tokens (the header's formulas).
template <parity_dtype D>
__global__ void chunk_grads(chunk_plan<D> p, const typename scalar<D>::storage *value,
                            const typename scalar<D>::storage *beta_in, const typename scalar<D>::storage *doutput,
                            chunk_gradients<D> out) {
    using Cm = chunk_compute<D>;
    using Sv = typename scalar<D>::storage;
    extern __shared__ unsigned char shared_bytes[];
    const int Cc = p.capacity, Dk = (int)p.shape.key_dim, Dv = (int)p.shape.value_dim, CC = Cc * Cc;
    const int key_tiles = (Dk + 3) / 4;
    const int64_t Hv = p.shape.value_heads;
    Cm *KK = reinterpret_cast<Cm *>(shared_bytes); // (C, C) k_i . k_j, j < i
    Cm *dPm = KK + CC;                             // (C, C) dP o Dm, j <= i
    Cm *dDm = dPm + CC;                            // (C, C) the gradient of Dm, j <= i
    Cm *TA = dDm + CC;                             // (C, C) T, then dA
    Cm *dKKs = TA + CC;                            // (C, C) dKK + dKK^T
    Cm *G = dKKs + CC, *decay = G + Cc, *to_last = decay + Cc, *beta = to_last + Cc;
    Cm *q_read = beta + Cc, *k_write = q_read + Cc, *k_dwb = k_write + Cc, *v_dub = k_dwb + Cc, *dG = v_dub + Cc;
    Cm *last = dG + Cc, *state_dot = last + 1, *reduce = state_dot + 1; // reduce: 32
    Cm *q_partial = reduce + 32, *k_partial = q_partial + Cc * key_tiles; // (C, Dk / 4) each
    chunk_slot s = slot_of(p, blockIdx.x);
    const int L = s.length;
    const int64_t ks = key_stride(p), vs = Hv * Dv, token_row = s.start * Hv + s.head;
    const auto *Q = key_rows(p, p.query, s), *K = key_rows(p, p.key, s);
    const Sv *V = value + token_row * Dv, *dO = doutput + token_row * Dv;
    // S^T and dS'^T (Dv, Dk): the backward's chunk_states and chunk_dstates store them transposed
    const Cm *S_t = p.states + s.slot * Dk * Dv, *dSnt = p.dstates + s.slot * Dk * Dv;
    const Cm *delta = p.delta + s.slot * Cc * Dv, *ddelta = p.ddelta + s.slot * Cc * Dv;
    const Cm *w = p.w + s.slot * Cc * Dk, *u = p.u + s.slot * Cc * Dv;
    Cm *dub = p.dub + s.slot * Cc * Dv, *dw = p.dw + s.slot * Cc * Dk, *dwb = p.dwb + s.slot * Cc * Dk;

    load_decays(p, s, G, decay, to_last, last);
    for (int i = threadIdx.x; i < L; i += blockDim.x) beta[i] = scalar<D>::load(beta_in[(s.start + i) * Hv + s.head]);
    {   // <dS', S>: the gradient of exp(G_last) through the carried state
        Cm sum = 0;
        for (int e = threadIdx.x; e < Dk * Dv; e += blockDim.x) sum += dSnt[e] * S_t[e]; // same layout: <dS', S>
        sum = block_sum(sum, reduce);
        if (threadIdx.x == 0) *state_dot = sum;
    }
    // 1. KK, dP o Dm, dP o QK (the Dm gradient of the intra-chunk read); T from the forward's recomputation
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, L); index += blockDim.x) {
        tile<Cm, 4, 4> qk, kk, dp;
        qk.start(index, L);
        kk.start(index, L);
        dp.start(index, L);
        tile_mac(qk, L, L, Dk, make_view(Q, ks, 1), make_view(K, 1, ks));
        tile_mac(kk, L, L, Dk, make_view(K, ks, 1), make_view(K, 1, ks));
        tile_mac(dp, L, L, Dv, make_view(dO, vs, 1), make_view(delta, 1, Dv));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int r = qk.m0 + i, c = qk.n0 + j;
                if (r >= L || c >= L) continue;
                Cm dm = c <= r ? precise_exp(G[r] - G[c]) : Cm(0);
                KK[r * Cc + c] = c < r ? kk.v[i][j] : Cm(0);
                dPm[r * Cc + c] = c <= r ? dp.v[i][j] * dm : Cm(0);
                dDm[r * Cc + c] = c <= r ? dp.v[i][j] * qk.v[i][j] : Cm(0);
            }
    }
    for (int index = threadIdx.x; index < CC; index += blockDim.x) TA[index] = p.solve[s.slot * CC + index];
    __syncthreads();
    // 2. dUb = T^T ddelta -> dv = beta dUb; dw = -ddelta S^T
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dv); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, Dv);
        tile_mac(t, L, Dv, L, make_view<Cm>(TA, 1, Cc), make_view(ddelta, Dv, 1));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int r = t.m0 + i, c = t.n0 + j;
                if (r >= L || c >= Dv) continue;
                dub[r * Dv + c] = t.v[i][j];
                if (out.dvalue) out.dvalue[(token_row + (int64_t)r * Hv) * Dv + c] = scalar<D>::store(beta[r] * t.v[i][j]);
            }
    }
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dk); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, Dk);
        tile_mac(t, L, Dk, Dv, make_view(ddelta, Dv, 1), make_view(S_t, Dk, 1));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                if (t.m0 + i < L && t.n0 + j < Dk) dw[(t.m0 + i) * Dk + t.n0 + j] = -t.v[i][j];
    }
    __syncthreads();
    // 3. dWb = T^T dw
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dk); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, Dk);
        tile_mac(t, L, Dk, L, make_view<Cm>(TA, 1, Cc), make_view<Cm>(dw, Dk, 1));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                if (t.m0 + i < L && t.n0 + j < Dk) dwb[(t.m0 + i) * Dk + t.n0 + j] = t.v[i][j];
    }
    __syncthreads();
    // 4. dA = -strict_lower(dWb w^T + dUb u^T) into TA (T is read no more); k . dWb and v . dUb per row
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, L); index += blockDim.x) {
        tile<Cm, 4, 4> t;
        t.start(index, L);
        tile_mac(t, L, L, Dk, make_view<Cm>(dwb, Dk, 1), make_view(w, 1, Dk));
        tile_mac(t, L, L, Dv, make_view<Cm>(dub, Dv, 1), make_view(u, 1, Dv));
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int r = t.m0 + i, c = t.n0 + j;
                if (r < L && c < L) TA[r * Cc + c] = c < r ? -t.v[i][j] : Cm(0);
            }
    }
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
        for (int r = warp; r < L; r += warps) {
            Cm kd = 0, vd = 0;
            for (int e = lane; e < Dk; e += 32) kd += K[r * ks + e] * dwb[r * Dk + e];
            for (int e = lane; e < Dv; e += 32) vd += scalar<D>::load(V[(int64_t)r * vs + e]) * dub[r * Dv + e];
            kd = warp_sum(kd);
            vd = warp_sum(vd);
            if (lane == 0) k_dwb[r] = kd, v_dub[r] = vd;
        }
    }
    __syncthreads();
    // 5. dKK = dA o beta_i Dm (strict lower), symmetrized; its Dm and beta gradients
    for (int index = threadIdx.x; index < L * L; index += blockDim.x) {
        int r = index / L, c = index % L;
        Cm below = c < r ? TA[r * Cc + c] * beta[r] * precise_exp(G[r] - G[c]) : Cm(0);
        Cm above = r < c ? TA[c * Cc + r] * beta[c] * precise_exp(G[c] - G[r]) : Cm(0);
        dKKs[r * Cc + c] = below + above;
        if (c < r) dDm[r * Cc + c] += TA[r * Cc + c] * beta[r] * KK[r * Cc + c];
    }
    __syncthreads();
    // 6. dq = diag(exp(G)) dO S^T + (dP o Dm) K; dk = (dP o Dm)^T Q + (dKK + dKK^T) K
    //    + diag(exp(G_last - G)) delta dS'^T + diag(beta exp(G)) dWb; row dots q . (dO S^T), k . (delta dS'^T)
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dk); index += blockDim.x) {
        tile<Cm, 4, 4> read, intra;
        read.start(index, Dk);
        intra.start(index, Dk);
        tile_mac(read, L, Dk, Dv, make_view(dO, vs, 1), make_view(S_t, Dk, 1));
        tile_mac(intra, L, Dk, L, make_view<Cm>(dPm, Cc, 1), make_view(K, ks, 1));
        for (int i = 0; i < 4; i++) {
            int r = read.m0 + i;
            if (r >= L) continue;
            Cm dot = 0;
            for (int j = 0; j < 4; j++) {
                int c = read.n0 + j;
                if (c >= Dk) continue;
                dot += Q[r * ks + c] * read.v[i][j];
                out.dquery[(token_row + (int64_t)r * Hv) * Dk + c] = decay[r] * read.v[i][j] + intra.v[i][j];
            }
            q_partial[r * key_tiles + read.n0 / 4] = dot;
        }
    }
    for (int index = threadIdx.x; index < tile_count<4, 4>(L, Dk); index += blockDim.x) {
        tile<Cm, 4, 4> main, write;
        main.start(index, Dk);
        write.start(index, Dk);
        tile_mac(main, L, Dk, L, make_view<Cm>(dPm, 1, Cc), make_view(Q, ks, 1));
        tile_mac(main, L, Dk, L, make_view<Cm>(dKKs, Cc, 1), make_view(K, ks, 1));
        tile_mac(write, L, Dk, Dv, make_view(delta, Dv, 1), make_view(dSnt, Dk, 1));
        for (int i = 0; i < 4; i++) {
            int r = main.m0 + i;
            if (r >= L) continue;
            Cm dot = 0;
            for (int j = 0; j < 4; j++) {
                int c = main.n0 + j;
                if (c >= Dk) continue;
                dot += K[r * ks + c] * write.v[i][j];
                out.dkey[(token_row + (int64_t)r * Hv) * Dk + c] =
                    main.v[i][j] + to_last[r] * write.v[i][j] + beta[r] * decay[r] * dwb[r * Dk + c];
            }
            k_partial[r * key_tiles + main.n0 / 4] = dot;
        }
    }
    __syncthreads();
    for (int r = threadIdx.x; r < L; r += blockDim.x) {
        Cm qd = 0, kd = 0;
        for (int tcol = 0; tcol < key_tiles; tcol++) qd += q_partial[r * key_tiles + tcol], kd += k_partial[r * key_tiles + tcol];
        q_read[r] = qd;
        k_write[r] = kd;
    }
    __syncthreads();
    // 7. the last row of Dm also decays the writes into S'; dbeta; d exp(G)
    for (int c = threadIdx.x; c < L; c += blockDim.x) dDm[(L - 1) * Cc + c] += k_write[c];
    for (int r = threadIdx.x; r < L; r += blockDim.x) {
        Cm through_a = 0;
        for (int c = 0; c < r; c++) through_a += TA[r * Cc + c] * KK[r * Cc + c] * precise_exp(G[r] - G[c]);
        Cm dbeta = decay[r] * k_dwb[r] + v_dub[r] + through_a;
        if (out.dbeta) out.dbeta[(s.start + r) * Hv + s.head] = scalar<D>::store(dbeta);
    }
    __syncthreads();
    // 8. dG_i = d exp(G_i) exp(G_i) + sum_{j<i} dDm_ij Dm_ij - sum_{i'>i} dDm_i'i Dm_i'i; dg = reverse cumsum
    for (int r = threadIdx.x; r < L; r += blockDim.x) {
        Cm ddecay = q_read[r] + beta[r] * k_dwb[r] + (r == L - 1 ? *state_dot : Cm(0));
        Cm sum = ddecay * decay[r];
        for (int c = 0; c < r; c++) sum += dDm[r * Cc + c] * precise_exp(G[r] - G[c]);
        for (int r2 = r + 1; r2 < L; r2++) sum -= dDm[r2 * Cc + r] * precise_exp(G[r2] - G[r]);
        dG[r] = sum;
    }
    __syncthreads();
    if (threadIdx.x == 0 && out.dg) {
        Cm running = 0;
        for (int r = L - 1; r >= 0; r--) {
            running += dG[r];
            store_f64(out.dg, p.shape.g_dtype, (s.start + r) * Hv + s.head, (double)running);
        }
    }
}

} // namespace

#include "ops/gated_delta_rule/chunked_tensor_core.cuh" // the bf16 forward on tensor cores (same unnamed namespace)

namespace {

// ---- host side ----

// The chunk table of a call, its device copies, the scratch and the plan the kernels read.
template <parity_dtype D> struct chunk_call {
    using Cm = chunk_compute<D>;
    std::vector<int64_t> starts, lengths, firsts;
    scoped_tensor chunk_starts, chunk_lengths, first_chunks;
    parity_fused::pool_scratch scratch;
    chunk_plan<D> plan{};
};

template <parity_dtype D>
parity_error *plan_chunks(const parity_exec *exec, const delta_call &call, const prepared_qk &prepared, const void *g,
                          bool backward, chunk_call<D> *out) {
    using Cm = chunk_compute<D>;
    using Pm = typename chunk_types<D>::prepared;
    const parity_gated_delta_rule_sizes &sizes = call.sizes;
    if (sizes.chunk_size > max_chunk)
        return PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                            "gated_delta_rule fla on cuda: chunk_size %lld is not supported (at most %d, fla's BT)",
                            (long long)sizes.chunk_size, max_chunk);
    const parity_documents &documents = call.documents.documents;
    int64_t longest = call.documents.longest(), chunk = sizes.chunk_size;
    int capacity = (int)(chunk < longest ? chunk : longest);
    if (capacity < 1) capacity = 1;
    out->firsts.push_back(0);
    for (int64_t d = 0; d < documents.count; d++) {
        for (int64_t begin = documents.offsets[d]; begin < documents.offsets[d + 1]; begin += chunk) {
            out->starts.push_back(begin);
            out->lengths.push_back(documents.offsets[d + 1] - begin < chunk ? documents.offsets[d + 1] - begin : chunk);
        }
        out->firsts.push_back((int64_t)out->starts.size());
    }
    int64_t chunks = (int64_t)out->starts.size();
    if (chunks == 0) out->starts.push_back(0), out->lengths.push_back(0); // no tokens: a table of one unused row
    parity_device device = call.offsets.tensor.device;
    PARITY_TRY(upload_int64(out->chunk_starts, out->starts.data(), (int64_t)out->starts.size(), device));
    PARITY_TRY(upload_int64(out->chunk_lengths, out->lengths.data(), (int64_t)out->lengths.size(), device));
    PARITY_TRY(upload_int64(out->first_chunks, out->firsts.data(), (int64_t)out->firsts.size(), device));
    int64_t slots = chunks * sizes.value_heads, C = capacity, Dk = sizes.key_dim, Dv = sizes.value_dim;
    // per slot: G, T, w, u, S, delta (+ dS', ddelta, dUb, dw, dWb); each array starts on 128 bytes (the
    // tensor-core kernels copy its rows 16 bytes at a time)
    const int64_t counts[] = {C, C * C, C * Dk, C * Dv, Dk * Dv, C * Dv, Dk * Dv, C * Dv, C * Dv, C * Dk, C * Dk};
    const int arrays = backward ? 11 : 6;
    auto padded = [&](int64_t count) { return (slots * count + 31) / 32 * 32; };
    int64_t total = 0;
    for (int i = 0; i < arrays; i++) total += padded(counts[i]);
    PARITY_TRY(out->scratch.alloc(device, (size_t)total * sizeof(Cm), parity_cuda_stream(exec)));
    Cm *cursor = out->scratch.template as<Cm>();
    auto take = [&](int64_t count) { Cm *at = cursor; cursor += padded(count); return at; };
    chunk_plan<D> &plan = out->plan;
    plan.shape = call.shape;
    plan.capacity = capacity;
    plan.chunks = chunks;
    plan.chunk_start = out->chunk_starts.template data<int64_t>();
    plan.chunk_length = out->chunk_lengths.template data<int64_t>();
    plan.first_chunk = out->first_chunks.template data<int64_t>();
    plan.query = prepared.query.template data<Pm>();
    plan.key = prepared.key.template data<Pm>();
    plan.g = g;
    plan.cumulative = take(C);
    plan.solve = take(C * C);
    plan.w = take(C * Dk);
    plan.u = take(C * Dv);
    plan.states = take(Dk * Dv);
    plan.states_transposed = backward;
    plan.delta = take(C * Dv);
    if (backward) {
        plan.dstates = take(Dk * Dv);
        plan.ddelta = take(C * Dv);
        plan.dub = take(C * Dv);
        plan.dw = take(C * Dk);
        plan.dwb = take(C * Dk);
    }
    return NULL;
}

template <parity_dtype D> size_t prepare_shared(int C, int64_t Dk) {
    return (size_t)(3 * C + 2 * C * C + 16 * C) * sizeof(chunk_compute<D>) +
           (size_t)(C * (Dk + 1)) * sizeof(typename chunk_types<D>::prepared);
}
// chunk_states / chunk_dstates: the 16 state columns, two (C, 16) blocks, w (C, Dk + 1), the decays;
// then K (and Q for dstates) (C, Dk + 1) in the prepared precision.
template <parity_dtype D> size_t sequential_shared(int C, int64_t Dk, int staged_prepared) {
    return (size_t)(Dk * state_columns + 2 * C * state_columns + C * (Dk + 1) + 3 * C + 1) * sizeof(chunk_compute<D>) +
           (size_t)(staged_prepared * C * (Dk + 1)) * sizeof(typename chunk_types<D>::prepared);
}
template <parity_dtype D> size_t scores_shared(int C, int64_t Dk) {
    return (size_t)(C * C + 2 * C) * sizeof(chunk_compute<D>) + (size_t)(2 * C * (Dk + 1)) * sizeof(typename chunk_types<D>::prepared);
}
template <typename Cm> size_t grads_shared(int C, int64_t Dk) {
    return (size_t)(5 * C * C + 9 * C + 2 + 32 + 2 * C * ((Dk + 3) / 4)) * sizeof(Cm);
}

// The forward's chunk-local pass, the state recurrence (S_c, delta) and, when `output` is given, O.
template <parity_dtype D>
parity_error *run_forward(const parity_exec *exec, const parity_gated_delta_rule_args *args, const delta_call &call,
                          chunk_call<D> &chunks, bool keep_solve, typename scalar<D>::storage *output) {
    using Cm = chunk_compute<D>;
    using St = typename scalar<D>::storage;
    const chunk_plan<D> &plan = chunks.plan;
    if constexpr (D == PARITY_BF16)
        if (tensor_core_forward_fits(plan.shape, args->value->data, output)) return run_tensor_core_forward(exec, args, call, plan, keep_solve, output);
    int device = args->query->device.index;
    unsigned slots = (unsigned)(plan.chunks * plan.shape.value_heads);
    if (slots == 0) return NULL;
    const cudaStream_t stream = parity_cuda_stream(exec);
    size_t shared = prepare_shared<D>(plan.capacity, plan.shape.key_dim);
    PARITY_TRY(allow_shared(chunk_prepare<D>, shared, call.sizes, device));
    chunk_prepare<D><<<slots, parallel_threads, shared, stream>>>(plan, static_cast<const St *>(args->value->data),
                                                                  static_cast<const St *>(args->beta->data), keep_solve);
    PARITY_CUDA_TRY_LAUNCH("chunk_prepare");
    shared = sequential_shared<D>(plan.capacity, plan.shape.key_dim, 1);
    PARITY_TRY(allow_shared(chunk_states<D>, shared, call.sizes, device));
    dim3 sequential((unsigned)(plan.shape.documents * plan.shape.value_heads),
                    (unsigned)((plan.shape.value_dim + state_columns - 1) / state_columns));
    chunk_states<D><<<sequential, sequential_threads, shared, stream>>>(plan);
    PARITY_CUDA_TRY_LAUNCH("chunk_states");
    if (output) {
        shared = scores_shared<D>(plan.capacity, plan.shape.key_dim);
        PARITY_TRY(allow_shared(chunk_output<D>, shared, call.sizes, device));
        chunk_output<D><<<slots, parallel_threads, shared, stream>>>(plan, output);
        PARITY_CUDA_TRY_LAUNCH("chunk_output");
    }
    return NULL;
}

parity_error *gated_delta_rule_cuda_chunked_forward(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                                                    parity_saved *saved) {
    delta_call call;
    PARITY_TRY(prepare_call(args, &call));
    return dispatch_float(args->query->dtype, "gated_delta_rule", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        prepared_qk prepared;
        PARITY_TRY(prepare_qk<D>(exec, args, call, &prepared, qk_rows::warp));
        chunk_call<D> chunks;
        PARITY_TRY(plan_chunks<D>(exec, call, prepared, args->g->data, false, &chunks));
        return run_forward<D>(exec, args, call, chunks, false, static_cast<typename scalar<D>::storage *>(args->output->data));
    });
}

parity_error *gated_delta_rule_cuda_chunked_backward(const parity_exec *exec, const parity_gated_delta_rule_args *args,
                                                     const parity_saved *saved,
                                                     const parity_gated_delta_rule_grads *grads) {
    delta_call call;
    PARITY_TRY(prepare_backward_call(args, grads, &call));
    parity_device device = args->query->device;
    const delta_shape &shape = call.shape;
    prepared_qk_grads dprepared;
    PARITY_TRY(dprepared.alloc(args, shape));
    return dispatch_float(args->query->dtype, "gated_delta_rule", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using Cm = chunk_compute<D>;
        using Pm = typename chunk_types<D>::prepared;
        using St = typename scalar<D>::storage;
        prepared_qk prepared;
        PARITY_TRY(prepare_qk<D>(exec, args, call, &prepared, qk_rows::warp));
        chunk_call<D> chunks;
        PARITY_TRY(plan_chunks<D>(exec, call, prepared, args->g->data, true, &chunks));
        const chunk_plan<D> &plan = chunks.plan;
        unsigned slots = (unsigned)(plan.chunks * shape.value_heads);
        if (slots > 0) {
            // check every kernel's shared memory before launching any
            size_t grads_bytes = grads_shared<Cm>(plan.capacity, shape.key_dim);
            PARITY_TRY(allow_shared(chunk_grads<D>, grads_bytes, call.sizes, device.index));
            PARITY_TRY(run_forward<D>(exec, args, call, chunks, true, nullptr));
            const cudaStream_t stream = parity_cuda_stream(exec);
            const St *doutput = static_cast<const St *>(grads->doutput->data);
            size_t shared = scores_shared<D>(plan.capacity, plan.shape.key_dim);
            PARITY_TRY(allow_shared(chunk_local_ddelta<D>, shared, call.sizes, device.index));
            chunk_local_ddelta<D><<<slots, parallel_threads, shared, stream>>>(plan, doutput);
            PARITY_CUDA_TRY_LAUNCH("chunk_local_ddelta");
            shared = sequential_shared<D>(plan.capacity, shape.key_dim, 2);
            PARITY_TRY(allow_shared(chunk_dstates<D>, shared, call.sizes, device.index));
            dim3 sequential((unsigned)(shape.documents * shape.value_heads),
                            (unsigned)((shape.value_dim + state_columns - 1) / state_columns));
            chunk_dstates<D><<<sequential, sequential_threads, shared, stream>>>(plan, doutput);
            PARITY_CUDA_TRY_LAUNCH("chunk_dstates");
            chunk_gradients<D> out = {dprepared.dquery.data<Pm>(), dprepared.dkey.data<Pm>(),
                                      grads->dvalue ? static_cast<St *>(grads->dvalue->data) : nullptr,
                                      grads->dg ? grads->dg->data : nullptr,
                                      grads->dbeta ? static_cast<St *>(grads->dbeta->data) : nullptr};
            chunk_grads<D><<<slots, parallel_threads, grads_bytes, stream>>>(
                plan, static_cast<const St *>(args->value->data), static_cast<const St *>(args->beta->data), doutput, out);
            PARITY_CUDA_TRY_LAUNCH("chunk_grads");
        }
        return finish_qk_grads<D>(exec, args, grads, call, prepared, dprepared, qk_rows::warp);
    });
}

const parity_gated_delta_rule_kernels gated_delta_rule_cuda_chunked_kernels = {gated_delta_rule_cuda_chunked_forward,
                                                                               gated_delta_rule_cuda_chunked_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(gated_delta_rule, fla, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_GATED_DELTA_RULE;
    backend.name = "fla";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    // Chunks start at each document's first token and every sum has one order: a document's result
    // depends on nothing else in the batch, and runs repeat bit for bit.
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC;
    backend.kernels = &gated_delta_rule_cuda_chunked_kernels;
    backend.description = "chunked gated delta rule on CUDA (flash-linear-attention's WY/UT algorithm, chunks of <= 64 "
                          "tokens, a sequential state pass over 16-column blocks), packed documents, grouped value heads, "
                          "f64/f32/bf16";
    return parity_registry_add(&backend);
}

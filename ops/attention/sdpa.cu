// sdpa.cu: memory-efficient attention on CUDA (value "sdpa"), the math of torch's
// F.scaled_dot_product_attention (memory-efficient flavour): tiled over keys with an online softmax,
// never a T x T tensor, and only lse = m + log(l) per (token, query head) saved. Like torch's sdpa it
// picks its kernels by the call: bf16 with head sizes the tensor-core engine has (flash/flash.h: the
// same tiled online softmax with f32 accumulation, on mma.sync) runs there; everything else (f64, f32,
// other head sizes up to 256) runs on the CUDA-core kernels of this file, described below. The same
// kernels run flash_attention_2's and flex_attention's f32 and f64 calls (attention_cuda_core.h: the
// tensor cores here take bf16 only), flex_attention's on the model's block mask.
// Compute type C: f32 for f32 and bf16 (bf16 in/out), f64 for f64; every sum is in C, in a fixed order.
//   forward   grid (ceil(N / BQ), Hq), one block per (query tile, query head): the query tile in shared
//             memory, key/value tiles of BK staged in turn; per tile s = scale * q k^T (masked -> -inf),
//             m' = max(m, rowmax s), p = exp(s - m'), l = exp(m - m') l + rowsum p,
//             acc = exp(m - m') acc + p v; at the end out = acc / l, lse = m + log l.
//   delta     one thread per (token, query head): D = rowsum(dout * out).
//   dq        grid (ceil(N / BQ), Hq): p = exp(s - lse), dp = dout v^T, ds = p (dp - D), dq = scale ds k.
//   dk, dv    grid (ceil(N / BK), Hk), one block per (key tile, kv head) looping over the query tiles
//             that can see it and over the Hq / Hk query heads of its group: dv = sum p^T dout,
//             dk = scale sum ds^T q. No atomics: every output element has one owner, sums run in a
//             fixed order, so the backward is deterministic and GQA/MQA never repeats k/v in memory.
// Which tiles a block visits (tile_walk):
//   documents (sdpa, flash_attention_2): tiles are in token space, not document space: a query row
//             (key row) finds its document in the device cu_seqlens (document_of) and a key is visible
//             to a query only inside the query's document, so a tile may straddle documents and
//             attention still never crosses one. The tiles visited are the contiguous run the tile's
//             documents, causal and window allow, every element masked (key_visible).
//   block mask (flex_attention, block_mask.h): the tiles of the blocks listed in the block's mask row
//             (forward and dq: its query block's key blocks; dk/dv: its key block's query blocks, per
//             query head of the group when the mask is head-specific), partial and full lists merged
//             in ascending block order; a full block is not masked at all, a partial one element by
//             element with the mask_mod (same document by document_ids, causal, window), every other
//             block skipped. Mask blocks must be multiples of the tiles (one mask block is whole tiles).
// Rows past N are empty. A row with no visible key (impossible by attention.h's contract; a hand-edited
// block mask may leave one) gives output 0 and lse 0, and adds nothing to dq (none of its tiles is
// visited or visible); it adds nothing to dk/dv as long as the backward lists leave it out too (the
// transpose of the forward lists, as block_mask.h requires), so nothing is NaN or Inf.
// Blocks of 256 threads; tiles (C = f32: BQ = BK = 32, dk/dv query tile 16; C = f64: all 16) staged
// in dynamic shared memory in C, rows padded by one element against bank conflicts. At D = Dv = 256:
// forward 133 KiB (f32) / 131 KiB (f64), dq 165 / 163 KiB, dk/dv 165 / 197 KiB, so one block an SM;
// at D = Dv = 64 about a quarter of that. Head sizes above 256 are rejected (UNSUPPORTED).
// Tested on the GPU by suites/tests/test_ops_fused_gpu.c, test_attention_gpu.c and (the block mask)
// test_flex_attention_gpu.c; tools/sdpa_cuda_emulation runs these kernels on the host (one thread a
// block) against a naive f64 attention, with and without block masks, for changes made without a GPU.
#include <stdlib.h>

#include "ops/attention/flash/flash.h"
#include "ops/core/cuda/device_args.h"
#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"

extern "C" {
#include "ops/attention/attention.h"
#include "ops/attention/attention_cuda.h"
#include "ops/attention/attention_cuda_core.h"
#include "ops/attention/block_mask.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

constexpr int sdpa_threads = 256;
constexpr int64_t sdpa_max_head_dim = 256;

// Rows per tile for compute type C.
template <typename C> struct tile_sizes {
    static constexpr int queries = sizeof(C) == 8 ? 16 : 32;  // forward and dq: query rows per block
    static constexpr int keys = sizeof(C) == 8 ? 16 : 32;     // keys per staged tile; dk/dv: keys per block
    static constexpr int backward_queries = 16;               // dk/dv: query rows per staged tile
};

// The model's block mask (block_mask.h: i32 device lists), or all zero: no mask (the documents' walk).
struct sdpa_mask {
    const int32_t *kv_num, *kv_index, *full_kv_num, *full_kv_index; // (heads, q_blocks), (heads, q_blocks, kv_blocks)
    const int32_t *q_num, *q_index, *full_q_num, *full_q_index;     // (heads, kv_blocks), (heads, kv_blocks, q_blocks)
    const int32_t *document_ids;                                    // (N)
    int64_t heads;                                                  // 1 = head-broadcast, else Hq
    int64_t q_block, kv_block, q_blocks, kv_blocks;
};

// What every kernel reads about the call.
struct sdpa_call {
    const int64_t *offsets; // (S + 1) device document boundaries
    int64_t documents;      // S >= 1
    int64_t tokens;         // N
    int64_t query_heads, kv_heads, group; // Hq, Hk, Hq / Hk
    int64_t head_dim, value_dim;          // D, Dv
    bool causal;
    int64_t window;   // 0 = none
    sdpa_mask mask;   // mask.kv_num == NULL: no block mask
};

// Key token `key` is visible to query token `query` whose document is [begin, end).
__device__ __forceinline__ bool key_visible(const sdpa_call &call, int64_t query, int64_t begin, int64_t end,
                                            int64_t key) {
    if (key < begin || key >= end) return false;
    if (call.causal && key > query) return false;
    return call.window == 0 || query - key < call.window;
}

// Whether `key` is visible to `query` (document [begin, end)) in a tile of a walk: without a block
// mask key_visible; with one, nothing to test in a full block, the mask_mod in a partial one (the
// same document by document_ids, causal, window: the mask_mod's, equal to the call's).
__device__ __forceinline__ bool tile_key_visible(const sdpa_call &call, bool full, int64_t query, int64_t begin,
                                                 int64_t end, int64_t key) {
    if (!call.mask.kv_num) return key_visible(call, query, begin, end, key);
    if (full) return true;
    if (query >= call.tokens || key >= call.tokens || call.mask.document_ids[query] != call.mask.document_ids[key])
        return false;
    if (call.causal && key > query) return false;
    return call.window == 0 || query - key < call.window;
}

// The tiles (of `tile` tokens) one block visits, in order: documents, the contiguous run
// [begin, end), the last tile shorter; block mask, the blocks of one mask row, partial and full lists
// merged in ascending order, each cut into block_size / tile tiles, the tail past N shorter or dropped.
// Every thread of a block walks the same tiles (the lists are read from global memory by each).
struct tile_walk {
    int64_t next, block_end; // the next tile's first token; the end of the run / of the current block
    int64_t tokens, block_size;
    int tile;
    bool masked, block_full;
    const int32_t *partial, *full; // the mask row's lists, ascending
    int32_t partials, fulls, taken_partial, taken_full;

    __device__ static tile_walk documents(int64_t begin, int64_t end, int tile) {
        tile_walk w = {};
        w.next = begin;
        w.block_end = end;
        w.tile = tile;
        return w;
    }
    // Row `row` (of `width` entries) of a mask's num / index lists (partial) and full_num / full_index.
    __device__ static tile_walk mask_row(const int32_t *num, const int32_t *index, const int32_t *full_num,
                                         const int32_t *full_index, int64_t row, int64_t width, int64_t block_size,
                                         int64_t tokens, int tile) {
        tile_walk w = {};
        w.masked = true;
        w.tokens = tokens;
        w.block_size = block_size;
        w.tile = tile;
        w.partial = index + row * width;
        w.full = full_index + row * width;
        w.partials = num[row] < 0 ? 0 : num[row] > width ? (int32_t)width : num[row];
        w.fulls = full_num[row] < 0 ? 0 : full_num[row] > width ? (int32_t)width : full_num[row];
        return w;
    }
    // The next tile: its first token, its length and whether it lies in a full mask block.
    __device__ bool step(int64_t *first, int *count, bool *full_block) {
        while (next >= block_end) { // the current run or block is done: the next listed block
            if (!masked) return false;
            int32_t block;
            if (taken_partial < partials && (taken_full >= fulls || partial[taken_partial] < full[taken_full])) {
                block = partial[taken_partial++];
                block_full = false;
            } else if (taken_full < fulls) {
                block = full[taken_full++];
                block_full = true;
            } else {
                return false;
            }
            next = (int64_t)block * block_size;
            block_end = next + block_size < tokens ? next + block_size : tokens;
            if (block < 0) next = block_end; // out of range (a broken hand-edited mask): skipped
        }
        *first = next;
        *count = block_end - next < tile ? (int)(block_end - next) : tile;
        *full_block = block_full;
        next += tile;
        return true;
    }
};

// The forward / dq key walk of query tile [first, ...) of query head `head`: the keys [begin, end)
// its documents allow, or its query block's row of the block mask.
__device__ __forceinline__ tile_walk query_tile_walk(const sdpa_call &call, int64_t first, int64_t head, int64_t begin,
                                                     int64_t end, int tile) {
    const sdpa_mask &m = call.mask;
    if (!m.kv_num) return tile_walk::documents(begin, end, tile);
    int64_t row = (m.heads == 1 ? 0 : head) * m.q_blocks + first / m.q_block;
    return tile_walk::mask_row(m.kv_num, m.kv_index, m.full_kv_num, m.full_kv_index, row, m.kv_blocks, m.kv_block,
                               call.tokens, tile);
}

// The document [begin, end) of token `token`, or [0, 0) (nothing visible) past N.
__device__ __forceinline__ void document_bounds(const sdpa_call &call, int64_t token, int64_t *begin, int64_t *end) {
    if (token >= call.tokens) {
        *begin = *end = 0;
        return;
    }
    int64_t s = document_of(call.offsets, call.documents, token);
    *begin = call.offsets[s];
    *end = call.offsets[s + 1];
}

// rows x width values of head `head` starting at token `first` (row stride heads * width in
// `source`) into `target` (row stride width + 1), zeros past N.
template <parity_dtype D>
__device__ void stage_rows(const typename scalar<D>::storage *source, int64_t first, int rows, int64_t tokens,
                           int64_t heads, int64_t head, int64_t width, typename scalar<D>::compute *target) {
    using C = typename scalar<D>::compute;
    int64_t stride = width + 1;
    for (int64_t i = threadIdx.x; i < rows * width; i += blockDim.x) {
        int64_t r = i / width, e = i % width, token = first + r;
        target[r * stride + e] = token < tokens ? scalar<D>::load(source[(token * heads + head) * width + e]) : C(0);
    }
}

// The keys a query tile [first, first + rows) can see: [*begin, *end) (token space), from the
// tile's first and last rows' documents.
__device__ __forceinline__ void query_tile_keys(const sdpa_call &call, int64_t first, int64_t rows,
                                                const int64_t *row_begin, const int64_t *row_end, int64_t *begin,
                                                int64_t *end) {
    *begin = row_begin[0];
    if (call.window && first - call.window + 1 > *begin) *begin = first - call.window + 1;
    *end = call.causal ? first + rows : row_end[rows - 1];
}

// Shared memory layout of the forward block (element offsets in C after 2 BQ int64 bounds).
struct forward_layout {
    int64_t q, k, v, acc, s, max, sum, alpha, total;
    __host__ __device__ forward_layout(int bq, int bk, int64_t d, int64_t dv) {
        q = 0;
        k = q + bq * (d + 1);
        v = k + bk * (d + 1);
        acc = v + bk * (dv + 1);
        s = acc + bq * dv;
        max = s + bq * bk;
        sum = max + bq;
        alpha = sum + bq;
        total = alpha + bq;
    }
};

template <parity_dtype D>
__global__ void __launch_bounds__(sdpa_threads)
    sdpa_forward(sdpa_call call, typename scalar<D>::compute scale, const typename scalar<D>::storage *q,
                 const typename scalar<D>::storage *k, const typename scalar<D>::storage *v,
                 typename scalar<D>::storage *out, typename scalar<D>::compute *lse) {
    using S = scalar<D>;
    using C = typename S::compute;
    constexpr int BQ = tile_sizes<C>::queries, BK = tile_sizes<C>::keys;
    extern __shared__ __align__(16) unsigned char sdpa_shared[];
    int64_t *row_begin = reinterpret_cast<int64_t *>(sdpa_shared), *row_end = row_begin + BQ;
    C *base = reinterpret_cast<C *>(row_end + BQ);
    const int64_t d = call.head_dim, dv = call.value_dim, ld = d + 1, ldv = dv + 1;
    forward_layout layout(BQ, BK, d, dv);
    C *sq = base + layout.q, *sk = base + layout.k, *sv = base + layout.v, *acc = base + layout.acc;
    C *ss = base + layout.s, *row_max = base + layout.max, *row_sum = base + layout.sum, *row_alpha = base + layout.alpha;
    const int64_t first = (int64_t)blockIdx.x * BQ, head = blockIdx.y, kv_head = head / call.group;
    const int64_t rows = call.tokens - first < BQ ? call.tokens - first : BQ;
    for (int r = threadIdx.x; r < BQ; r += blockDim.x) {
        document_bounds(call, first + r, &row_begin[r], &row_end[r]);
        row_max[r] = -INFINITY;
        row_sum[r] = 0;
    }
    stage_rows<D>(q, first, BQ, call.tokens, call.query_heads, head, d, sq);
    for (int64_t i = threadIdx.x; i < BQ * dv; i += blockDim.x) acc[i] = 0;
    __syncthreads();
    int64_t key_begin, key_end, key0;
    query_tile_keys(call, first, rows, row_begin, row_end, &key_begin, &key_end);
    tile_walk walk = query_tile_walk(call, first, head, key_begin, key_end, BK);
    int keys;
    bool full;
    while (walk.step(&key0, &keys, &full)) {
        stage_rows<D>(k, key0, keys, call.tokens, call.kv_heads, kv_head, d, sk);
        stage_rows<D>(v, key0, keys, call.tokens, call.kv_heads, kv_head, dv, sv);
        __syncthreads();
        for (int i = threadIdx.x; i < BQ * BK; i += blockDim.x) { // s = scale q k^T, -inf where masked
            int r = i / BK, c = i % BK;
            C s = -INFINITY;
            if (c < keys && tile_key_visible(call, full, first + r, row_begin[r], row_end[r], key0 + c)) {
                C dot = 0;
                for (int64_t e = 0; e < d; e++) dot += sq[r * ld + e] * sk[c * ld + e];
                s = dot * scale;
            }
            ss[i] = s;
        }
        __syncthreads();
        for (int r = threadIdx.x; r < BQ; r += blockDim.x) { // the online softmax, one thread a row
            C *s = ss + r * BK;
            C tile_max = -INFINITY;
            for (int c = 0; c < BK; c++) tile_max = fmax(tile_max, s[c]);
            C new_max = fmax(row_max[r], tile_max);
            if (new_max == -INFINITY) { // no visible key yet: p = 0, state unchanged (no exp(-inf + inf))
                for (int c = 0; c < BK; c++) s[c] = 0;
                row_alpha[r] = 1;
                continue;
            }
            C alpha = precise_exp(row_max[r] - new_max), sum = 0; // exp(-inf) = 0 on the first visible tile
            for (int c = 0; c < BK; c++) {
                C p = precise_exp(s[c] - new_max); // masked: exp(-inf) = 0
                s[c] = p;
                sum += p;
            }
            row_sum[r] = alpha * row_sum[r] + sum;
            row_max[r] = new_max;
            row_alpha[r] = alpha;
        }
        __syncthreads();
        for (int64_t i = threadIdx.x; i < BQ * dv; i += blockDim.x) { // acc = alpha acc + p v
            int64_t r = i / dv, e = i % dv;
            C total = 0;
            for (int c = 0; c < keys; c++) total += ss[r * BK + c] * sv[c * ldv + e];
            acc[i] = row_alpha[r] * acc[i] + total;
        }
        __syncthreads();
    }
    for (int64_t i = threadIdx.x; i < rows * dv; i += blockDim.x) {
        int64_t r = i / dv, e = i % dv;
        C l = row_sum[r];
        out[((first + r) * call.query_heads + head) * dv + e] = S::store(l > 0 ? acc[i] / l : C(0));
    }
    for (int r = threadIdx.x; r < rows; r += blockDim.x) // an empty row's lse is never read (no visible key)
        lse[(first + r) * call.query_heads + head] = row_sum[r] > 0 ? row_max[r] + precise_log(row_sum[r]) : C(0);
}

// delta[row] = sum_e dout[row, e] * out[row, e] over (N * Hq) rows of Dv.
template <parity_dtype D>
__global__ void sdpa_delta(int64_t rows, int64_t dv, const typename scalar<D>::storage *dout,
                           const typename scalar<D>::storage *out, typename scalar<D>::compute *delta) {
    using S = scalar<D>;
    PARITY_CUDA_FOR_EACH(row, rows) {
        typename S::compute sum = 0;
        for (int64_t e = 0; e < dv; e++) sum += S::load(dout[row * dv + e]) * S::load(out[row * dv + e]);
        delta[row] = sum;
    }
}

// The probability and its score gradient of query row r (token `query`, document [begin, end),
// lse, delta) and staged key c (token `key`) in a tile of a walk (`full`: of a full mask block):
// p = exp(scale q.k - lse), ds = p (dout.v - delta); 0 and 0 where the key is hidden.
template <typename C>
__device__ __forceinline__ void probability_and_gradient(const sdpa_call &call, bool full, C scale, const C *q,
                                                         const C *dout, const C *k, const C *v, int64_t query,
                                                         int64_t begin, int64_t end, int64_t key, C lse, C delta, C *p,
                                                         C *ds) {
    *p = 0;
    *ds = 0;
    if (!tile_key_visible(call, full, query, begin, end, key)) return;
    C dot = 0, dp = 0;
    for (int64_t e = 0; e < call.head_dim; e++) dot += q[e] * k[e];
    for (int64_t e = 0; e < call.value_dim; e++) dp += dout[e] * v[e];
    *p = precise_exp(dot * scale - lse);
    *ds = *p * (dp - delta);
}

// Shared memory layout of the dq block (element offsets in C after 2 BQ int64 bounds).
struct dq_layout {
    int64_t q, dout, k, v, dq, ds, lse, delta, total;
    __host__ __device__ dq_layout(int bq, int bk, int64_t d, int64_t dv) {
        q = 0;
        dout = q + bq * (d + 1);
        k = dout + bq * (dv + 1);
        v = k + bk * (d + 1);
        dq = v + bk * (dv + 1);
        ds = dq + bq * d;
        lse = ds + bq * bk;
        delta = lse + bq;
        total = delta + bq;
    }
};

template <parity_dtype D>
__global__ void __launch_bounds__(sdpa_threads)
    sdpa_backward_query(sdpa_call call, typename scalar<D>::compute scale, const typename scalar<D>::storage *q,
                        const typename scalar<D>::storage *k, const typename scalar<D>::storage *v,
                        const typename scalar<D>::storage *dout, const typename scalar<D>::compute *lse,
                        const typename scalar<D>::compute *delta, typename scalar<D>::storage *dq) {
    using S = scalar<D>;
    using C = typename S::compute;
    constexpr int BQ = tile_sizes<C>::queries, BK = tile_sizes<C>::keys;
    extern __shared__ __align__(16) unsigned char sdpa_shared[];
    int64_t *row_begin = reinterpret_cast<int64_t *>(sdpa_shared), *row_end = row_begin + BQ;
    C *base = reinterpret_cast<C *>(row_end + BQ);
    const int64_t d = call.head_dim, dv = call.value_dim, ld = d + 1, ldv = dv + 1;
    dq_layout layout(BQ, BK, d, dv);
    C *sq = base + layout.q, *sdo = base + layout.dout, *sk = base + layout.k, *sv = base + layout.v;
    C *acc = base + layout.dq, *sds = base + layout.ds, *row_lse = base + layout.lse, *row_delta = base + layout.delta;
    const int64_t first = (int64_t)blockIdx.x * BQ, head = blockIdx.y, kv_head = head / call.group;
    const int64_t rows = call.tokens - first < BQ ? call.tokens - first : BQ;
    for (int r = threadIdx.x; r < BQ; r += blockDim.x) {
        document_bounds(call, first + r, &row_begin[r], &row_end[r]);
        row_lse[r] = r < rows ? lse[(first + r) * call.query_heads + head] : C(0);
        row_delta[r] = r < rows ? delta[(first + r) * call.query_heads + head] : C(0);
    }
    stage_rows<D>(q, first, BQ, call.tokens, call.query_heads, head, d, sq);
    stage_rows<D>(dout, first, BQ, call.tokens, call.query_heads, head, dv, sdo);
    for (int64_t i = threadIdx.x; i < BQ * d; i += blockDim.x) acc[i] = 0;
    __syncthreads();
    int64_t key_begin, key_end, key0;
    query_tile_keys(call, first, rows, row_begin, row_end, &key_begin, &key_end);
    tile_walk walk = query_tile_walk(call, first, head, key_begin, key_end, BK);
    int keys;
    bool full;
    while (walk.step(&key0, &keys, &full)) {
        stage_rows<D>(k, key0, keys, call.tokens, call.kv_heads, kv_head, d, sk);
        stage_rows<D>(v, key0, keys, call.tokens, call.kv_heads, kv_head, dv, sv);
        __syncthreads();
        for (int i = threadIdx.x; i < BQ * BK; i += blockDim.x) {
            int r = i / BK, c = i % BK;
            C p = 0, ds = 0;
            if (c < keys)
                probability_and_gradient(call, full, scale, sq + r * ld, sdo + r * ldv, sk + c * ld, sv + c * ldv,
                                         first + r, row_begin[r], row_end[r], key0 + c, row_lse[r], row_delta[r], &p,
                                         &ds);
            sds[i] = ds;
        }
        __syncthreads();
        for (int64_t i = threadIdx.x; i < BQ * d; i += blockDim.x) { // dq += ds k
            int64_t r = i / d, e = i % d;
            C total = 0;
            for (int c = 0; c < keys; c++) total += sds[r * BK + c] * sk[c * ld + e];
            acc[i] += total;
        }
        __syncthreads();
    }
    for (int64_t i = threadIdx.x; i < rows * d; i += blockDim.x) {
        int64_t r = i / d, e = i % d;
        dq[((first + r) * call.query_heads + head) * d + e] = S::store(scale * acc[i]);
    }
}

// Shared memory layout of the dk/dv block (element offsets in C after 2 BK + 2 BQ int64 bounds).
struct dkv_layout {
    int64_t k, v, dk, dv, q, dout, p, ds, lse, delta, total;
    __host__ __device__ dkv_layout(int bq, int bk, int64_t d, int64_t dvs) {
        k = 0;
        v = k + bk * (d + 1);
        dk = v + bk * (dvs + 1);
        dv = dk + bk * d;
        q = dv + bk * dvs;
        dout = q + bq * (d + 1);
        p = dout + bq * (dvs + 1);
        ds = p + bq * bk;
        lse = ds + bq * bk;
        delta = lse + bq;
        total = delta + bq;
    }
};

template <parity_dtype D>
__global__ void __launch_bounds__(sdpa_threads)
    sdpa_backward_key_value(sdpa_call call, typename scalar<D>::compute scale, const typename scalar<D>::storage *q,
                            const typename scalar<D>::storage *k, const typename scalar<D>::storage *v,
                            const typename scalar<D>::storage *dout, const typename scalar<D>::compute *lse,
                            const typename scalar<D>::compute *delta, typename scalar<D>::storage *dk,
                            typename scalar<D>::storage *dv) {
    using S = scalar<D>;
    using C = typename S::compute;
    constexpr int BQ = tile_sizes<C>::backward_queries, BK = tile_sizes<C>::keys;
    extern __shared__ __align__(16) unsigned char sdpa_shared[];
    int64_t *key_doc_begin = reinterpret_cast<int64_t *>(sdpa_shared), *key_doc_end = key_doc_begin + BK;
    int64_t *row_begin = key_doc_end + BK, *row_end = row_begin + BQ;
    C *base = reinterpret_cast<C *>(row_end + BQ);
    const int64_t d = call.head_dim, dvs = call.value_dim, ld = d + 1, ldv = dvs + 1;
    dkv_layout layout(BQ, BK, d, dvs);
    C *sk = base + layout.k, *sv = base + layout.v, *dk_acc = base + layout.dk, *dv_acc = base + layout.dv;
    C *sq = base + layout.q, *sdo = base + layout.dout, *sp = base + layout.p, *sds = base + layout.ds;
    C *row_lse = base + layout.lse, *row_delta = base + layout.delta;
    const int64_t first_key = (int64_t)blockIdx.x * BK, kv_head = blockIdx.y;
    const int64_t keys = call.tokens - first_key < BK ? call.tokens - first_key : BK;
    for (int c = threadIdx.x; c < BK; c += blockDim.x) document_bounds(call, first_key + c, &key_doc_begin[c], &key_doc_end[c]);
    stage_rows<D>(k, first_key, BK, call.tokens, call.kv_heads, kv_head, d, sk);
    stage_rows<D>(v, first_key, BK, call.tokens, call.kv_heads, kv_head, dvs, sv);
    for (int64_t i = threadIdx.x; i < BK * d; i += blockDim.x) dk_acc[i] = 0;
    for (int64_t i = threadIdx.x; i < BK * dvs; i += blockDim.x) dv_acc[i] = 0;
    __syncthreads();
    // the queries that can see a key of the tile: its documents, from the key on (causal), at most window - 1 after
    int64_t query_begin = call.causal ? first_key : key_doc_begin[0], query_end = key_doc_end[keys - 1];
    if (call.window && first_key + keys - 1 + call.window < query_end) query_end = first_key + keys - 1 + call.window;
    // A head-specific mask lists each query head's query tiles apart: one walk per member of the group
    // (its sums are the member's tiles in order, then the next member's); otherwise one walk, every
    // member summed per query tile.
    const sdpa_mask &m = call.mask;
    const bool per_head = m.q_num && m.heads != 1;
    for (int64_t pass = 0; pass < (per_head ? call.group : 1); pass++) {
        tile_walk walk = !m.q_num ? tile_walk::documents(query_begin, query_end, BQ)
                                  : tile_walk::mask_row(m.q_num, m.q_index, m.full_q_num, m.full_q_index,
                                                        (per_head ? kv_head * call.group + pass : 0) * m.kv_blocks +
                                                            first_key / m.kv_block,
                                                        m.q_blocks, m.q_block, call.tokens, BQ);
        int64_t query0;
        int rows;
        bool full;
        while (walk.step(&query0, &rows, &full)) {
            for (int64_t member = per_head ? pass : 0; member < (per_head ? pass + 1 : call.group); member++) {
                const int64_t head = kv_head * call.group + member;
                for (int r = threadIdx.x; r < BQ; r += blockDim.x) {
                    bool inside = r < rows;
                    if (inside) document_bounds(call, query0 + r, &row_begin[r], &row_end[r]);
                    else row_begin[r] = row_end[r] = 0; // past the tile's queries: sees nothing
                    row_lse[r] = inside ? lse[(query0 + r) * call.query_heads + head] : C(0);
                    row_delta[r] = inside ? delta[(query0 + r) * call.query_heads + head] : C(0);
                }
                stage_rows<D>(q, query0, rows, call.tokens, call.query_heads, head, d, sq);
                stage_rows<D>(dout, query0, rows, call.tokens, call.query_heads, head, dvs, sdo);
                __syncthreads();
                for (int i = threadIdx.x; i < BQ * BK; i += blockDim.x) {
                    int r = i / BK, c = i % BK;
                    C p = 0, ds = 0;
                    if (r < rows && c < keys)
                        probability_and_gradient(call, full, scale, sq + r * ld, sdo + r * ldv, sk + c * ld,
                                                 sv + c * ldv, query0 + r, row_begin[r], row_end[r], first_key + c,
                                                 row_lse[r], row_delta[r], &p, &ds);
                    sp[i] = p;
                    sds[i] = ds;
                }
                __syncthreads();
                for (int64_t i = threadIdx.x; i < BK * dvs; i += blockDim.x) { // dv += p^T dout
                    int64_t c = i / dvs, e = i % dvs;
                    C total = 0;
                    for (int r = 0; r < rows; r++) total += sp[r * BK + c] * sdo[r * ldv + e];
                    dv_acc[i] += total;
                }
                for (int64_t i = threadIdx.x; i < BK * d; i += blockDim.x) { // dk += ds^T q (scaled at the end)
                    int64_t c = i / d, e = i % d;
                    C total = 0;
                    for (int r = 0; r < rows; r++) total += sds[r * BK + c] * sq[r * ld + e];
                    dk_acc[i] += total;
                }
                __syncthreads();
            }
        }
    }
    for (int64_t i = threadIdx.x; i < keys * d && dk; i += blockDim.x) {
        int64_t c = i / d, e = i % d;
        dk[((first_key + c) * call.kv_heads + kv_head) * d + e] = S::store(scale * dk_acc[i]);
    }
    for (int64_t i = threadIdx.x; i < keys * dvs && dv; i += blockDim.x) {
        int64_t c = i / dvs, e = i % dvs;
        dv[((first_key + c) * call.kv_heads + kv_head) * dvs + e] = S::store(dv_acc[i]);
    }
}

// Lets `kernel` take `bytes` of dynamic shared memory; UNSUPPORTED when the device has fewer.
template <typename Kernel>
parity_error *allow_shared(Kernel kernel, const char *backend, const char *name, size_t bytes, parity_device device) {
    int limit = 0;
    PARITY_CUDA_TRY(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device.index));
    PARITY_CHECK(bytes <= (size_t)limit, PARITY_ERROR_UNSUPPORTED,
                 "attention: %s's %s needs %zu bytes of shared memory a block, cuda:%d has %d", backend, name, bytes,
                 device.index, limit);
    PARITY_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    return NULL;
}

// The model's block mask on the call (flex_attention): block_mask.h's checks against the call, then
// mask blocks that the tiles of the call's compute type divide (no tile straddles two mask blocks).
parity_error *attach_block_mask(const parity_attention_args *args, const parity_attention_dims *dims,
                                const char *backend, sdpa_mask *mask) {
    PARITY_TRY_CONTEXT(parity_attention_require_block_mask(args, dims), "attention %s", backend);
    const parity_block_mask *m = args->block_mask;
    bool f64 = args->query->dtype == PARITY_F64;
    int queries = f64 ? tile_sizes<double>::queries : tile_sizes<float>::queries;
    int keys = f64 ? tile_sizes<double>::keys : tile_sizes<float>::keys;
    int backward_queries = f64 ? tile_sizes<double>::backward_queries : tile_sizes<float>::backward_queries;
    PARITY_CHECK(m->q_block % queries == 0 && m->q_block % backward_queries == 0 && m->kv_block % keys == 0,
                 PARITY_ERROR_UNSUPPORTED,
                 "attention: %s on cuda (%s, CUDA cores) takes block masks whose blocks are multiples of its tiles "
                 "(%d query x %d key tokens), got %lld x %lld",
                 backend, parity_dtype_name(args->query->dtype), queries, keys, (long long)m->q_block,
                 (long long)m->kv_block);
    *mask = {};
    mask->kv_num = static_cast<const int32_t *>(m->kv_num_blocks.data);
    mask->kv_index = static_cast<const int32_t *>(m->kv_indices.data);
    mask->full_kv_num = static_cast<const int32_t *>(m->full_kv_num_blocks.data);
    mask->full_kv_index = static_cast<const int32_t *>(m->full_kv_indices.data);
    mask->q_num = static_cast<const int32_t *>(m->q_num_blocks.data);
    mask->q_index = static_cast<const int32_t *>(m->q_indices.data);
    mask->full_q_num = static_cast<const int32_t *>(m->full_q_num_blocks.data);
    mask->full_q_index = static_cast<const int32_t *>(m->full_q_indices.data);
    mask->document_ids = static_cast<const int32_t *>(m->mask_mod.document_ids.data);
    mask->heads = m->heads;
    mask->q_block = m->q_block;
    mask->kv_block = m->kv_block;
    mask->q_blocks = m->q_blocks;
    mask->kv_blocks = m->kv_blocks;
    return NULL;
}

// Validation shared by forward and backward (sizes, devices, boundaries checked on the host, the
// block mask when `block_mask`), and the boundaries uploaded to the device (`offsets`, whichever side
// cu_seqlens lives on). `backend` names the caller in messages.
parity_error *prepare_call(const parity_attention_args *args, bool block_mask, const char *backend,
                           parity_attention_dims *dims, scoped_tensor *offsets, sdpa_call *call) {
    int64_t *host = NULL;
    PARITY_TRY(parity_attention_cuda_check(args, dims, &host));
    parity_device device = args->query->device;
    parity_error *error = NULL;
    sdpa_mask mask = {};
    if (dims->head_dim > sdpa_max_head_dim || dims->value_dim > sdpa_max_head_dim)
        error = PARITY_ERROR(PARITY_ERROR_UNSUPPORTED, "attention: %s on cuda takes head sizes up to %lld, got D = %lld, Dv = %lld",
                             backend, (long long)sdpa_max_head_dim, (long long)dims->head_dim, (long long)dims->value_dim);
    else if (dims->query_heads > 65535)
        error = PARITY_ERROR(PARITY_ERROR_UNSUPPORTED,
                             "attention: %s on cuda takes up to 65535 query heads (a grid dimension), got %lld", backend,
                             (long long)dims->query_heads);
    if (!error && block_mask) error = attach_block_mask(args, dims, backend, &mask);
    if (!error) error = use_device(device);
    if (!error) error = upload_int64(*offsets, host, args->cu_seqlens->numel, device);
    free(host);
    PARITY_TRY(error);
    *call = {};
    call->offsets = offsets->data<int64_t>();
    call->documents = dims->documents;
    call->tokens = dims->tokens;
    call->query_heads = dims->query_heads;
    call->kv_heads = dims->kv_heads;
    call->group = dims->query_heads / dims->kv_heads;
    call->head_dim = dims->head_dim;
    call->value_dim = dims->value_dim;
    call->causal = args->causal;
    call->window = args->sliding_window;
    call->mask = mask;
    return NULL;
}

template <parity_dtype D>
parity_error *forward_typed(const parity_exec *exec, const parity_attention_args *args, const sdpa_call &call,
                            parity_tensor *lse, const char *backend) {
    using S = scalar<D>;
    using storage = typename S::storage;
    using C = typename S::compute;
    constexpr int BQ = tile_sizes<C>::queries, BK = tile_sizes<C>::keys;
    size_t bytes = 2 * BQ * sizeof(int64_t) + (size_t)forward_layout(BQ, BK, call.head_dim, call.value_dim).total * sizeof(C);
    PARITY_TRY(allow_shared(sdpa_forward<D>, backend, "forward", bytes, args->query->device));
    dim3 grid((unsigned)((call.tokens + BQ - 1) / BQ), (unsigned)call.query_heads);
    sdpa_forward<D><<<grid, sdpa_threads, bytes, parity_cuda_stream(exec)>>>(
        call, (C)args->scale, static_cast<const storage *>(args->query->data), static_cast<const storage *>(args->key->data),
        static_cast<const storage *>(args->value->data), static_cast<storage *>(args->output->data),
        static_cast<C *>(lse->data));
    PARITY_CUDA_TRY_LAUNCH("sdpa_forward");
    return NULL;
}

template <parity_dtype D>
parity_error *backward_typed(const parity_exec *exec, const parity_attention_args *args,
                             const parity_attention_grads *grads, const sdpa_call &call, const parity_tensor *lse,
                             const char *backend) {
    using S = scalar<D>;
    using storage = typename S::storage;
    using C = typename S::compute;
    cudaStream_t stream = parity_cuda_stream(exec);
    parity_device device = args->query->device;
    const storage *q = static_cast<const storage *>(args->query->data), *k = static_cast<const storage *>(args->key->data);
    const storage *v = static_cast<const storage *>(args->value->data);
    const storage *dout = static_cast<const storage *>(grads->doutput->data);
    const C *saved_lse = static_cast<const C *>(lse->data);
    scoped_tensor delta; // (N, Hq) compute
    PARITY_TRY(delta.alloc_1d(lse->dtype, device, call.tokens * call.query_heads));
    sdpa_delta<D><<<grid_for(call.tokens * call.query_heads), 256, 0, stream>>>(
        call.tokens * call.query_heads, call.value_dim, dout, static_cast<const storage *>(args->output->data),
        delta.data<C>());
    PARITY_CUDA_TRY_LAUNCH("sdpa_delta");
    if (grads->dquery) {
        constexpr int BQ = tile_sizes<C>::queries, BK = tile_sizes<C>::keys;
        size_t bytes = 2 * BQ * sizeof(int64_t) + (size_t)dq_layout(BQ, BK, call.head_dim, call.value_dim).total * sizeof(C);
        PARITY_TRY(allow_shared(sdpa_backward_query<D>, backend, "dq backward", bytes, device));
        dim3 grid((unsigned)((call.tokens + BQ - 1) / BQ), (unsigned)call.query_heads);
        sdpa_backward_query<D><<<grid, sdpa_threads, bytes, stream>>>(call, (C)args->scale, q, k, v, dout, saved_lse,
                                                                      delta.data<C>(),
                                                                      static_cast<storage *>(grads->dquery->data));
        PARITY_CUDA_TRY_LAUNCH("sdpa_backward_query");
    }
    if (grads->dkey || grads->dvalue) {
        constexpr int BQ = tile_sizes<C>::backward_queries, BK = tile_sizes<C>::keys;
        size_t bytes = (2 * BK + 2 * BQ) * sizeof(int64_t) +
                       (size_t)dkv_layout(BQ, BK, call.head_dim, call.value_dim).total * sizeof(C);
        PARITY_TRY(allow_shared(sdpa_backward_key_value<D>, backend, "dk/dv backward", bytes, device));
        dim3 grid((unsigned)((call.tokens + BK - 1) / BK), (unsigned)call.kv_heads);
        sdpa_backward_key_value<D><<<grid, sdpa_threads, bytes, stream>>>(
            call, (C)args->scale, q, k, v, dout, saved_lse, delta.data<C>(),
            grads->dkey ? static_cast<storage *>(grads->dkey->data) : nullptr,
            grads->dvalue ? static_cast<storage *>(grads->dvalue->data) : nullptr);
        PARITY_CUDA_TRY_LAUNCH("sdpa_backward_key_value");
    }
    return NULL;
}

} // namespace

parity_error *parity_attention_cuda_core_forward(const parity_exec *exec, const parity_attention_args *args,
                                                 parity_saved *saved, bool block_mask, const char *backend) {
    parity_attention_dims dims;
    scoped_tensor offsets;
    sdpa_call call;
    PARITY_TRY(prepare_call(args, block_mask, backend, &dims, &offsets, &call));
    parity_dtype compute = args->query->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    parity_tensor *lse;
    int64_t shape[2] = {dims.tokens, dims.query_heads}; // (N, Hq)
    PARITY_TRY(parity_saved_alloc(saved, &lse, compute, args->query->device, 2, shape));
    if (dims.tokens == 0) return NULL; // S = 0 documents: an empty call, as on the CPU
    return dispatch_float(args->query->dtype, "attention", [&](auto tag) {
        return forward_typed<decltype(tag)::value>(exec, args, call, lse, backend);
    });
}

parity_error *parity_attention_cuda_core_backward(const parity_exec *exec, const parity_attention_args *args,
                                                  const parity_saved *saved, const parity_attention_grads *grads,
                                                  bool block_mask, const char *backend) {
    parity_attention_dims dims;
    scoped_tensor offsets;
    sdpa_call call;
    PARITY_TRY(prepare_call(args, block_mask, backend, &dims, &offsets, &call));
    PARITY_TRY(parity_attention_cuda_check_grads(args, grads));
    parity_device device = args->query->device;
    const parity_tensor *lse;
    PARITY_TRY(parity_saved_get(saved, 0, &lse));
    parity_dtype compute = args->query->dtype == PARITY_F64 ? PARITY_F64 : PARITY_F32;
    PARITY_CHECK(lse->numel == dims.tokens * dims.query_heads && lse->dtype == compute &&
                     parity_device_equal(lse->device, device),
                 PARITY_ERROR_INTERNAL,
                 "attention: %s's saved lse (%lld values, %s) does not match the call (%lld x %lld, %s)", backend,
                 (long long)lse->numel, parity_dtype_name(lse->dtype), (long long)dims.tokens,
                 (long long)dims.query_heads, parity_dtype_name(compute));
    if (dims.tokens == 0) return NULL;
    return dispatch_float(args->query->dtype, "attention", [&](auto tag) {
        return backward_typed<decltype(tag)::value>(exec, args, grads, call, lse, backend);
    });
}

namespace {

parity_error *attention_cuda_sdpa_forward(const parity_exec *exec, const parity_attention_args *args,
                                          parity_saved *saved) {
    if (parity_flash_attention_covers(args)) return parity_flash_attention_forward(exec, args, saved, false, "sdpa");
    return parity_attention_cuda_core_forward(exec, args, saved, false, "sdpa");
}

parity_error *attention_cuda_sdpa_backward(const parity_exec *exec, const parity_attention_args *args,
                                           const parity_saved *saved, const parity_attention_grads *grads) {
    if (parity_flash_attention_covers(args))
        return parity_flash_attention_backward(exec, args, saved, grads, false, "sdpa");
    return parity_attention_cuda_core_backward(exec, args, saved, grads, false, "sdpa");
}

const parity_attention_kernels attention_cuda_sdpa_kernels = {attention_cuda_sdpa_forward, attention_cuda_sdpa_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(attention, sdpa, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_ATTENTION;
    backend.name = "sdpa";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    // deterministic: no atomics, fixed tiles and sum orders (test_ops_fused_gpu.c repeats it bitwise);
    // not batch invariant: a row's key tiles start where its query tile's keys start
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_SLIDING_WINDOW | PARITY_CAP_DETERMINISTIC;
    backend.kernels = &attention_cuda_sdpa_kernels;
    backend.description = "memory-efficient attention (tiled online softmax, f32 accumulation, saves only lse; "
                          "deterministic backward): bf16 on tensor cores (the flash engine) for its head sizes, "
                          "f64/f32 and other head sizes on CUDA cores";
    return parity_registry_add(&backend);
}

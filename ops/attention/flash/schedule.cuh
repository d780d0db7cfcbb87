// schedule.cuh: what the flash kernels (forward.cu, backward.cu) read about a call, and which tiles
// each block visits. Two schedules, one kernel body each:
//   documents (flash_attention_2, sdpa): the grid is (tiles of the longest document, heads, documents);
//     a block's tile lies inside one document (tiles are cut from the document's first token), the
//     tiles it visits are the contiguous run its causal / window / document bounds allow, and only
//     the tiles crossing a bound are masked element by element.
//   block mask (flex_attention): the grid is (tiles of the packed row, heads); the tiles a block visits
//     are the model's block-mask lists (block_mask.h): a partial block masked element by element with
//     the mask_mod (same document, causal, window), a full block not masked at all, every other block
//     skipped. Mask blocks are multiples of the kernel tiles, so one mask block is several tiles.
// Positions are tokens of the packed row (N); a row past the document (documents) or past N (block
// mask) is padding: loaded as zeros, never stored.
#ifndef PARITY_ATTENTION_FLASH_SCHEDULE_CUH
#define PARITY_ATTENTION_FLASH_SCHEDULE_CUH

#include <cuda_bf16.h>
#include <stdint.h>

namespace parity_flash {

typedef __nv_bfloat16 bf16;

struct flash_call {
    const bf16 *q, *k, *v; // (N, Hq, D), (N, Hk, D), (N, Hk, Dv)
    bf16 *out;             // (N, Hq, Dv)
    float *lse;            // (N, Hq): natural-log log-sum-exp of the scaled scores; +inf for a row that sees nothing
    const bf16 *dout;      // (N, Hq, Dv)   backward only
    const float *delta;    // (N, Hq)       rowsum(dout * out), backward only
    bf16 *dq, *dk, *dv;    // (N, Hq, D), (N, Hk, D), (N, Hk, Dv); NULL = not wanted
    int64_t tokens;        // N
    int query_heads, kv_heads, group; // Hq, Hk, Hq / Hk
    float scale, scale_log2;          // softmax scale; scale * log2(e)
    bool causal;
    int64_t window; // 0 = none
    // documents schedule
    const int64_t *offsets; // (S + 1) device boundaries
    // block-mask schedule (block_mask.h, int32 lists on the device)
    const int32_t *kv_num, *kv_index, *full_kv_num, *full_kv_index; // (Hm, QB), (Hm, QB, KB)
    const int32_t *q_num, *q_index, *full_q_num, *full_q_index;     // (Hm, KB), (Hm, KB, QB)
    const int32_t *document_ids;                                    // (N)
    int mask_heads, q_block, kv_block, q_blocks, kv_blocks;
};

__device__ __forceinline__ bool window_causal_visible(const flash_call &c, int64_t query, int64_t key) {
    return (!c.causal || key <= query) && (c.window == 0 || query - key < c.window);
}

// The tiles one block visits along the other axis: forward and dq walk the key tiles of one query
// tile, dk/dv walk the query tiles of one key tile. The block's own tile is ROWS rows [first, limit),
// the walked tiles are OTHER rows each; tile(j) gives walked tile j's first row and whether it needs
// the element mask (visible()).
template <bool BLOCK_MASK> struct tile_walk;

// Documents: a contiguous run of `count` tiles starting at row `start`, inside the document [begin, end).
template <> struct tile_walk<false> {
    int64_t first, limit, begin, end, start;
    int count;
    int head;        // the query head (forward, dq) or the kv head (dk/dv): blockIdx.y
    bool walks_keys; // forward / dq

    // Forward / dq: query tile blockIdx.x (causal: longest first) of document blockIdx.z.
    template <int ROWS, int OTHER> __device__ bool query_tile(const flash_call &c) {
        begin = c.offsets[blockIdx.z];
        end = c.offsets[blockIdx.z + 1];
        int64_t tile = c.causal ? (int64_t)gridDim.x - 1 - blockIdx.x : blockIdx.x;
        first = begin + tile * ROWS;
        if (first >= end) return false;
        limit = first + ROWS < end ? first + ROWS : end;
        head = blockIdx.y;
        walks_keys = true;
        start = begin;
        if (c.window && first - c.window + 1 > start) start = first - c.window + 1;
        int64_t stop = c.causal ? limit : end;
        count = (int)((stop - start + OTHER - 1) / OTHER);
        return true;
    }
    // dk/dv: key tile blockIdx.x of document blockIdx.z; the query tiles that can see it.
    template <int ROWS, int OTHER> __device__ bool key_tile(const flash_call &c) {
        begin = c.offsets[blockIdx.z];
        end = c.offsets[blockIdx.z + 1];
        first = begin + (int64_t)blockIdx.x * ROWS;
        if (first >= end) return false;
        limit = first + ROWS < end ? first + ROWS : end;
        head = blockIdx.y;
        walks_keys = false;
        start = c.causal ? first : begin;
        int64_t stop = c.window ? (limit - 1 + c.window < end ? limit - 1 + c.window : end) : end;
        count = (int)((stop - start + OTHER - 1) / OTHER);
        return true;
    }
    // The same run for every query head of a GQA group.
    template <int OTHER> __device__ int tiles(int /*query_head*/) const { return count; }
    template <int ROWS, int OTHER> __device__ int64_t tile(const flash_call &c, int /*query_head*/, int j, bool *masked) const {
        int64_t other = start + (int64_t)j * OTHER;
        int64_t query0 = walks_keys ? first : other, key0 = walks_keys ? other : first;
        int queries = walks_keys ? ROWS : OTHER, keys = walks_keys ? OTHER : ROWS;
        *masked = !(query0 + queries <= end && key0 + keys <= end && (!c.causal || key0 + keys - 1 <= query0) &&
                    (c.window == 0 || query0 + queries - 1 - key0 < c.window));
        return other;
    }
    // Rows past the document are padding: hidden.
    __device__ bool visible(const flash_call &c, int64_t query, int64_t key) const {
        return query < end && key < end && window_causal_visible(c, query, key);
    }
};

// Block mask: the lists of this tile's mask block (a head-broadcast mask: row 0 for every head);
// partial blocks first, then full ones, each block_rows / OTHER tiles.
template <> struct tile_walk<true> {
    int64_t first, limit, begin, end; // [begin, end) = [0, N)
    int head;
    const int32_t *num, *index, *full_num, *full_index; // the lists walked
    int width;      // entries one list row holds (KB forward, QB backward)
    int block_rows; // rows of one walked mask block
    int lists;      // list rows of one head (QB forward, KB backward)
    int own_block;  // this tile's mask block
    int mask_heads;

    template <int ROWS, int OTHER> __device__ bool query_tile(const flash_call &c) {
        if (!own(c, ROWS)) return false;
        num = c.kv_num, index = c.kv_index, full_num = c.full_kv_num, full_index = c.full_kv_index;
        width = c.kv_blocks, block_rows = c.kv_block, lists = c.q_blocks, own_block = (int)(first / c.q_block);
        return true;
    }
    template <int ROWS, int OTHER> __device__ bool key_tile(const flash_call &c) {
        if (!own(c, ROWS)) return false;
        num = c.q_num, index = c.q_index, full_num = c.full_q_num, full_index = c.full_q_index;
        width = c.q_blocks, block_rows = c.q_block, lists = c.kv_blocks, own_block = (int)(first / c.kv_block);
        return true;
    }
    __device__ bool own(const flash_call &c, int rows) {
        begin = 0;
        end = c.tokens;
        first = (int64_t)blockIdx.x * rows;
        if (first >= end) return false;
        limit = first + rows < end ? first + rows : end;
        head = blockIdx.y;
        mask_heads = c.mask_heads;
        return true;
    }
    __device__ int row(int query_head) const { return (mask_heads == 1 ? 0 : query_head) * lists + own_block; }
    template <int OTHER> __device__ int tiles(int query_head) const {
        int r = row(query_head);
        return (num[r] + full_num[r]) * (block_rows / OTHER);
    }
    template <int ROWS, int OTHER> __device__ int64_t tile(const flash_call &c, int query_head, int j, bool *masked) const {
        int r = row(query_head), per_block = block_rows / OTHER, entry = j / per_block, partials = num[r];
        bool partial = entry < partials;
        int32_t block = partial ? index[(int64_t)r * width + entry] : full_index[(int64_t)r * width + entry - partials];
        int64_t other = (int64_t)block * block_rows + (int64_t)(j % per_block) * OTHER;
        *masked = partial || first + ROWS > end || other + OTHER > end; // padding past N is hidden too
        return other;
    }
    __device__ bool visible(const flash_call &c, int64_t query, int64_t key) const {
        return query < end && key < end && c.document_ids[query] == c.document_ids[key] &&
               window_causal_visible(c, query, key);
    }
};

} // namespace parity_flash

#endif

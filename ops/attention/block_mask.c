// block_mask.c: building, freeing and validating the block mask flex_attention runs on
// (block_mask.h). The classification is computed on the host from the visibility of attention.h:
// for query i of the document [s, e), the visible keys are one interval
//   [lo, hi] = [window ? max(s, i - window + 1) : s,  causal ? i : e - 1]
// so a (query block, key block) is empty when no query's interval meets the key block, full when
// every query's interval covers it, partial otherwise (q_block steps per block, O(N x kv_blocks) per
// mask). The value checks recompute the same intervals: a listed-full block must be all visible and
// an unlisted (empty) block all hidden; a partial block may be anything (it is masked per element).
#include "ops/attention/block_mask.h"

#include <stdlib.h>
#include <string.h>

#include "ops/attention/attention.h"
#include "ops/core/cu_seqlens.h"

enum { BLOCK_EMPTY = 0, BLOCK_PARTIAL = 1, BLOCK_FULL = 2 };

// The visible key interval [lo[i], hi[i]] of every query i (never empty: every query sees itself).
static parity_error *visible_intervals(const int64_t *cu_seqlens, int64_t count, int64_t tokens, bool causal,
                                       int64_t sliding_window, int64_t **lo_out, int64_t **hi_out) {
    int64_t *lo = malloc((size_t)(tokens > 0 ? tokens : 1) * sizeof *lo);
    int64_t *hi = malloc((size_t)(tokens > 0 ? tokens : 1) * sizeof *hi);
    if (!lo || !hi) {
        free(lo);
        free(hi);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "block_mask: visible intervals of %lld tokens", (long long)tokens);
    }
    for (int64_t s = 0; s + 1 < count; s++)
        for (int64_t i = cu_seqlens[s]; i < cu_seqlens[s + 1]; i++) {
            int64_t start = cu_seqlens[s], end = cu_seqlens[s + 1];
            lo[i] = sliding_window > 0 && i - sliding_window + 1 > start ? i - sliding_window + 1 : start;
            hi[i] = causal ? i : end - 1;
        }
    *lo_out = lo;
    *hi_out = hi;
    return NULL;
}

// BLOCK_EMPTY / BLOCK_PARTIAL / BLOCK_FULL of queries [q0, q1) against keys [k0, k1).
static int classify(const int64_t *lo, const int64_t *hi, int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
    bool any = false, all = true;
    for (int64_t i = q0; i < q1; i++) {
        int64_t a = lo[i] > k0 ? lo[i] : k0, b = hi[i] < k1 - 1 ? hi[i] : k1 - 1;
        if (a <= b) any = true;
        if (lo[i] > k0 || hi[i] < k1 - 1) all = false;
    }
    return !any ? BLOCK_EMPTY : all ? BLOCK_FULL : BLOCK_PARTIAL;
}

static int64_t blocks_of(int64_t tokens, int64_t block) { return (tokens + block - 1) / block; }

// The classification of every (query block, key block): (q_blocks, kv_blocks), malloc'd.
static parity_error *classify_all(const int64_t *lo, const int64_t *hi, int64_t tokens, int64_t q_block,
                                  int64_t kv_block, unsigned char **out) {
    int64_t q_blocks = blocks_of(tokens, q_block), kv_blocks = blocks_of(tokens, kv_block);
    unsigned char *state = malloc((size_t)(q_blocks * kv_blocks > 0 ? q_blocks * kv_blocks : 1));
    if (!state) return PARITY_ERROR(PARITY_ERROR_MEMORY, "block_mask: %lld x %lld blocks", (long long)q_blocks,
                                    (long long)kv_blocks);
    for (int64_t qb = 0; qb < q_blocks; qb++) {
        int64_t q0 = qb * q_block, q1 = q0 + q_block < tokens ? q0 + q_block : tokens;
        for (int64_t kb = 0; kb < kv_blocks; kb++) {
            int64_t k0 = kb * kv_block, k1 = k0 + kv_block < tokens ? k0 + kv_block : tokens;
            state[qb * kv_blocks + kb] = (unsigned char)classify(lo, hi, q0, q1, k0, k1);
        }
    }
    *out = state;
    return NULL;
}

// One direction's lists from the classification: rows of `rows`, entries of `columns`; entry (r, c)
// of the classification is state[r * row_stride + c * column_stride].
static void fill_lists(const unsigned char *state, int64_t rows, int64_t columns, int64_t row_stride,
                       int64_t column_stride, parity_tensor *partial_count, parity_tensor *partial_indices,
                       parity_tensor *full_count, parity_tensor *full_indices) {
    int32_t *pc = partial_count->data, *pi = partial_indices->data, *fc = full_count->data, *fi = full_indices->data;
    memset(pi, 0, (size_t)(rows * columns) * sizeof *pi);
    memset(fi, 0, (size_t)(rows * columns) * sizeof *fi);
    for (int64_t r = 0; r < rows; r++) {
        int32_t partial = 0, full = 0;
        for (int64_t c = 0; c < columns; c++) {
            unsigned char kind = state[r * row_stride + c * column_stride];
            if (kind == BLOCK_PARTIAL) pi[r * columns + partial++] = (int32_t)c;
            if (kind == BLOCK_FULL) fi[r * columns + full++] = (int32_t)c;
        }
        pc[r] = partial;
        fc[r] = full;
    }
}

// The mask's tensors in a fixed order, with their names (for messages) and shapes.
typedef struct mask_field {
    const char *name;
    parity_tensor *tensor;
    int ndim;
    int64_t shape[3];
} mask_field;

static int mask_fields(parity_block_mask *mask, mask_field fields[9]) {
    int64_t h = mask->heads, qn = mask->q_blocks, kn = mask->kv_blocks;
    mask_field all[9] = {
        {"kv_num_blocks", &mask->kv_num_blocks, 2, {h, qn}},
        {"kv_indices", &mask->kv_indices, 3, {h, qn, kn}},
        {"full_kv_num_blocks", &mask->full_kv_num_blocks, 2, {h, qn}},
        {"full_kv_indices", &mask->full_kv_indices, 3, {h, qn, kn}},
        {"q_num_blocks", &mask->q_num_blocks, 2, {h, kn}},
        {"q_indices", &mask->q_indices, 3, {h, kn, qn}},
        {"full_q_num_blocks", &mask->full_q_num_blocks, 2, {h, kn}},
        {"full_q_indices", &mask->full_q_indices, 3, {h, kn, qn}},
        {"mask_mod.document_ids", &mask->mask_mod.document_ids, 1, {mask->tokens}},
    };
    memcpy(fields, all, sizeof all);
    return 9;
}

void parity_block_mask_free(parity_block_mask *mask) {
    if (!mask) return;
    mask_field fields[9];
    int count = mask_fields(mask, fields);
    for (int i = 0; i < count; i++) parity_tensor_release(fields[i].tensor);
    memset(mask, 0, sizeof *mask);
}

parity_error *parity_block_mask_build(parity_device device, const int64_t *cu_seqlens, int64_t count, int64_t tokens,
                                      bool causal, int64_t sliding_window, int64_t q_block, int64_t kv_block,
                                      parity_block_mask *out) {
    memset(out, 0, sizeof *out);
    PARITY_CHECK(q_block > 0 && kv_block > 0, PARITY_ERROR_SHAPE,
                 "block_mask: block sizes %lld x %lld, expected both > 0", (long long)q_block, (long long)kv_block);
    PARITY_CHECK(tokens >= 0 && tokens <= INT32_MAX, PARITY_ERROR_SHAPE,
                 "block_mask: %lld tokens, expected 0..%d (int32 indices)", (long long)tokens, INT32_MAX);
    PARITY_CHECK(sliding_window >= 0 && (sliding_window == 0 || causal), PARITY_ERROR_SHAPE,
                 "block_mask: sliding_window %lld, expected 0 or > 0 with causal attention", (long long)sliding_window);
    PARITY_TRY_CONTEXT(parity_attention_check_boundaries(cu_seqlens, count, tokens), "block_mask");
    int64_t *lo, *hi;
    PARITY_TRY(visible_intervals(cu_seqlens, count, tokens, causal, sliding_window, &lo, &hi));
    unsigned char *state = NULL;
    parity_error *error = classify_all(lo, hi, tokens, q_block, kv_block, &state);
    free(lo);
    free(hi);
    PARITY_TRY(error);
    parity_block_mask host = {.tokens = tokens, .heads = 1, .q_block = q_block, .kv_block = kv_block,
                              .q_blocks = blocks_of(tokens, q_block), .kv_blocks = blocks_of(tokens, kv_block),
                              .mask_mod = {.causal = causal, .sliding_window = sliding_window}};
    mask_field fields[9];
    int field_count = mask_fields(&host, fields);
    for (int i = 0; i < field_count && !error; i++)
        error = parity_tensor_alloc(fields[i].tensor, PARITY_I32, PARITY_CPU, fields[i].ndim, fields[i].shape);
    if (!error) {
        fill_lists(state, host.q_blocks, host.kv_blocks, host.kv_blocks, 1, &host.kv_num_blocks, &host.kv_indices,
                   &host.full_kv_num_blocks, &host.full_kv_indices);
        fill_lists(state, host.kv_blocks, host.q_blocks, 1, host.kv_blocks, &host.q_num_blocks, &host.q_indices,
                   &host.full_q_num_blocks, &host.full_q_indices);
        int32_t *documents = host.mask_mod.document_ids.data;
        for (int64_t s = 0; s + 1 < count; s++)
            for (int64_t i = cu_seqlens[s]; i < cu_seqlens[s + 1]; i++) documents[i] = (int32_t)s;
    }
    free(state);
    if (error || device.type == PARITY_DEVICE_CPU) {
        if (error) parity_block_mask_free(&host);
        else *out = host;
        return error;
    }
    *out = host; // the sizes and mask_mod flags; the tensors are replaced by their device copies
    mask_field placed[9];
    mask_fields(out, placed);
    for (int i = 0; i < field_count; i++) memset(placed[i].tensor, 0, sizeof *placed[i].tensor);
    for (int i = 0; i < field_count && !error; i++)
        error = parity_error_wrap(parity_tensor_to(placed[i].tensor, fields[i].tensor, device, PARITY_I32), __FILE__,
                                  __LINE__, "block_mask: placing %s", fields[i].name);
    parity_block_mask_free(&host);
    if (error) parity_block_mask_free(out);
    return error;
}

parity_error *parity_block_mask_from_visibility(parity_device device, const parity_tensor *cu_seqlens, int64_t tokens,
                                                bool causal, int64_t sliding_window, parity_block_mask *out) {
    memset(out, 0, sizeof *out);
    parity_documents documents;
    PARITY_TRY_CONTEXT(parity_cu_seqlens_load("block_mask", cu_seqlens, tokens, &documents), "building a block mask");
    parity_error *error = parity_block_mask_build(device, documents.offsets, documents.count + 1, tokens, causal,
                                                  sliding_window, PARITY_BLOCK_MASK_DEFAULT_BLOCK,
                                                  PARITY_BLOCK_MASK_DEFAULT_BLOCK, out);
    parity_documents_free(&documents);
    return error;
}

// ---- validation ----

// One direction's lists: `rows` rows (per head) of at most `columns` entries, partial and full.
typedef struct mask_lists {
    const char *partial_count_name, *partial_name, *full_count_name, *full_name;
    const int32_t *partial_count, *partial, *full_count, *full;
    int64_t rows, columns;
} mask_lists;

// Counts in 0..columns, each list strictly ascending in 0..columns - 1, partial and full disjoint;
// writes each (head, row, column)'s kind into state (heads x rows x columns, zeroed by the caller).
static parity_error *check_lists(const mask_lists *lists, int64_t heads, unsigned char *state) {
    for (int64_t h = 0; h < heads; h++)
        for (int64_t r = 0; r < lists->rows; r++) {
            int64_t row = h * lists->rows + r;
            for (int kind = BLOCK_PARTIAL; kind <= BLOCK_FULL; kind++) {
                const char *count_name = kind == BLOCK_FULL ? lists->full_count_name : lists->partial_count_name;
                const char *name = kind == BLOCK_FULL ? lists->full_name : lists->partial_name;
                const int32_t *counts = kind == BLOCK_FULL ? lists->full_count : lists->partial_count;
                const int32_t *indices = (kind == BLOCK_FULL ? lists->full : lists->partial) + row * lists->columns;
                PARITY_CHECK(counts[row] >= 0 && counts[row] <= lists->columns, PARITY_ERROR_SHAPE,
                             "attention: block_mask.%s[%lld, %lld] = %d, expected 0..%lld", count_name, (long long)h,
                             (long long)r, counts[row], (long long)lists->columns);
                for (int32_t e = 0; e < counts[row]; e++) {
                    PARITY_CHECK(indices[e] >= 0 && indices[e] < lists->columns, PARITY_ERROR_SHAPE,
                                 "attention: block_mask.%s[%lld, %lld, %d] = %d, expected 0..%lld", name, (long long)h,
                                 (long long)r, e, indices[e], (long long)(lists->columns - 1));
                    PARITY_CHECK(e == 0 || indices[e] > indices[e - 1], PARITY_ERROR_SHAPE,
                                 "attention: block_mask.%s[%lld, %lld] is not ascending at entry %d (%d after %d)", name,
                                 (long long)h, (long long)r, e, indices[e], indices[e - 1]);
                    unsigned char *cell = &state[row * lists->columns + indices[e]];
                    PARITY_CHECK(*cell == BLOCK_EMPTY, PARITY_ERROR_SHAPE,
                                 "attention: block_mask.%s[%lld, %lld] lists block %d, which %s also lists", name,
                                 (long long)h, (long long)r, indices[e], lists->partial_name);
                    *cell = (unsigned char)kind;
                }
            }
        }
    return NULL;
}

// A host copy of a mask tensor (or the tensor itself on the CPU).
static parity_error *host_values(const char *name, const parity_tensor *tensor, parity_tensor *copy,
                                 const int32_t **out) {
    memset(copy, 0, sizeof *copy);
    if (tensor->device.type == PARITY_DEVICE_CPU) {
        *out = tensor->data;
        return NULL;
    }
    PARITY_TRY_CONTEXT(parity_tensor_to(copy, tensor, PARITY_CPU, PARITY_I32), "block_mask: reading %s", name);
    *out = copy->data;
    return NULL;
}

static parity_error *check_values_host(const parity_block_mask *mask, const int32_t *const values[9],
                                       const int64_t *cu_seqlens, int64_t count) {
    int64_t heads = mask->heads, qn = mask->q_blocks, kn = mask->kv_blocks;
    size_t cells = (size_t)(heads * qn * kn > 0 ? heads * qn * kn : 1);
    unsigned char *forward = calloc(cells, 1), *backward = calloc(cells, 1), *truth = NULL;
    int64_t *lo = NULL, *hi = NULL;
    parity_error *error = forward && backward ? NULL : PARITY_ERROR(PARITY_ERROR_MEMORY, "block_mask: checking");
    mask_lists rows = {"kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                       values[0], values[1], values[2], values[3], qn, kn};
    mask_lists columns = {"q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices",
                          values[4], values[5], values[6], values[7], kn, qn};
    if (!error) error = check_lists(&rows, heads, forward);
    if (!error) error = check_lists(&columns, heads, backward);
    for (int64_t h = 0; h < heads && !error; h++)
        for (int64_t qb = 0; qb < qn && !error; qb++)
            for (int64_t kb = 0; kb < kn && !error; kb++)
                if (forward[(h * qn + qb) * kn + kb] != backward[(h * kn + kb) * qn + qb])
                    error = PARITY_ERROR(PARITY_ERROR_SHAPE,
                                         "attention: block_mask.q_indices / full_q_indices are not the transpose of "
                                         "kv_indices / full_kv_indices at head %lld, query block %lld, key block %lld",
                                         (long long)h, (long long)qb, (long long)kb);
    for (int64_t s = 0; s + 1 < count && !error; s++)
        for (int64_t i = cu_seqlens[s]; i < cu_seqlens[s + 1] && !error; i++)
            if (values[8][i] != s)
                error = PARITY_ERROR(PARITY_ERROR_SHAPE,
                                     "attention: block_mask.mask_mod.document_ids[%lld] = %d, expected %lld (cu_seqlens)",
                                     (long long)i, values[8][i], (long long)s);
    if (!error)
        error = visible_intervals(cu_seqlens, count, mask->tokens, mask->mask_mod.causal, mask->mask_mod.sliding_window,
                                  &lo, &hi);
    if (!error) error = classify_all(lo, hi, mask->tokens, mask->q_block, mask->kv_block, &truth);
    for (int64_t h = 0; h < heads && !error; h++)
        for (int64_t qb = 0; qb < qn && !error; qb++)
            for (int64_t kb = 0; kb < kn && !error; kb++) {
                int listed = forward[(h * qn + qb) * kn + kb], actual = truth[qb * kn + kb];
                if (listed == BLOCK_FULL && actual != BLOCK_FULL)
                    error = PARITY_ERROR(PARITY_ERROR_SHAPE,
                                         "attention: block_mask.full_kv_indices lists key block %lld of query block "
                                         "%lld (head %lld) as full, but it holds hidden pairs",
                                         (long long)kb, (long long)qb, (long long)h);
                if (listed == BLOCK_EMPTY && actual != BLOCK_EMPTY)
                    error = PARITY_ERROR(PARITY_ERROR_SHAPE,
                                         "attention: block_mask.kv_indices / full_kv_indices skip key block %lld of "
                                         "query block %lld (head %lld), which holds visible pairs",
                                         (long long)kb, (long long)qb, (long long)h);
            }
    free(forward);
    free(backward);
    free(truth);
    free(lo);
    free(hi);
    return error;
}

parity_error *parity_block_mask_check_values(const parity_block_mask *mask, const int64_t *cu_seqlens, int64_t count) {
    PARITY_TRY_CONTEXT(parity_attention_check_boundaries(cu_seqlens, count, mask->tokens), "block_mask");
    mask_field fields[9];
    int field_count = mask_fields((parity_block_mask *)mask, fields);
    parity_tensor copies[9];
    const int32_t *values[9];
    memset(copies, 0, sizeof copies);
    parity_error *error = NULL;
    for (int i = 0; i < field_count && !error; i++) error = host_values(fields[i].name, fields[i].tensor, &copies[i], &values[i]);
    if (!error) error = check_values_host(mask, values, cu_seqlens, count);
    for (int i = 0; i < field_count; i++) parity_tensor_release(&copies[i]);
    return error;
}

parity_error *parity_block_mask_check(const parity_block_mask *mask, const parity_attention_args *args,
                                      const parity_attention_dims *dims) {
    int64_t n = dims->tokens;
    PARITY_CHECK(mask->tokens == n, PARITY_ERROR_SHAPE, "attention: block_mask.tokens is %lld, expected N = %lld",
                 (long long)mask->tokens, (long long)n);
    PARITY_CHECK(mask->heads == 1 || mask->heads == dims->query_heads, PARITY_ERROR_SHAPE,
                 "attention: block_mask.heads is %lld, expected 1 (head-broadcast) or Hq = %lld", (long long)mask->heads,
                 (long long)dims->query_heads);
    PARITY_CHECK(mask->q_block > 0 && mask->kv_block > 0, PARITY_ERROR_SHAPE,
                 "attention: block_mask.q_block x kv_block is %lld x %lld, expected both > 0", (long long)mask->q_block,
                 (long long)mask->kv_block);
    PARITY_CHECK(mask->q_blocks == blocks_of(n, mask->q_block), PARITY_ERROR_SHAPE,
                 "attention: block_mask.q_blocks is %lld, expected ceil(%lld / %lld) = %lld", (long long)mask->q_blocks,
                 (long long)n, (long long)mask->q_block, (long long)blocks_of(n, mask->q_block));
    PARITY_CHECK(mask->kv_blocks == blocks_of(n, mask->kv_block), PARITY_ERROR_SHAPE,
                 "attention: block_mask.kv_blocks is %lld, expected ceil(%lld / %lld) = %lld", (long long)mask->kv_blocks,
                 (long long)n, (long long)mask->kv_block, (long long)blocks_of(n, mask->kv_block));
    PARITY_CHECK(mask->mask_mod.causal == args->causal, PARITY_ERROR_SHAPE,
                 "attention: block_mask.mask_mod.causal is %s, the call's causal is %s",
                 mask->mask_mod.causal ? "true" : "false", args->causal ? "true" : "false");
    PARITY_CHECK(mask->mask_mod.sliding_window == args->sliding_window, PARITY_ERROR_SHAPE,
                 "attention: block_mask.mask_mod.sliding_window is %lld, the call's is %lld",
                 (long long)mask->mask_mod.sliding_window, (long long)args->sliding_window);
    mask_field fields[9];
    int field_count = mask_fields((parity_block_mask *)mask, fields);
    parity_device device = args->query->device;
    char shape[96], expected[96];
    for (int i = 0; i < field_count; i++) {
        const parity_tensor *tensor = fields[i].tensor;
        PARITY_CHECK(tensor->data || tensor->numel == 0, PARITY_ERROR_SHAPE, "attention: block_mask.%s has no data",
                     fields[i].name);
        PARITY_CHECK(tensor->dtype == PARITY_I32, PARITY_ERROR_SHAPE, "attention: block_mask.%s is %s, expected int32",
                     fields[i].name, parity_dtype_name(tensor->dtype));
        parity_tensor want = parity_tensor_wrap(NULL, PARITY_I32, device, fields[i].ndim, fields[i].shape);
        PARITY_CHECK(parity_tensor_same_shape(tensor, &want) && parity_tensor_is_contiguous(tensor), PARITY_ERROR_SHAPE,
                     "attention: block_mask.%s has shape %s, expected %s contiguous", fields[i].name,
                     parity_tensor_shape_string(tensor, shape, sizeof shape),
                     parity_tensor_shape_string(&want, expected, sizeof expected));
        PARITY_CHECK(tensor->device.type == device.type && tensor->device.index == device.index, PARITY_ERROR_SHAPE,
                     "attention: block_mask.%s is on %s:%d, the query on %s:%d", fields[i].name,
                     parity_device_type_name(tensor->device.type), tensor->device.index,
                     parity_device_type_name(device.type), device.index);
    }
    if (device.type != PARITY_DEVICE_CPU) return NULL; // structural only on a GPU (block_mask.h)
    int64_t *cu_seqlens;
    PARITY_TRY(parity_attention_load_boundaries(args, n, &cu_seqlens));
    parity_error *error = parity_block_mask_check_values(mask, cu_seqlens, args->cu_seqlens->numel);
    free(cu_seqlens);
    return error;
}

parity_error *parity_block_mask_check_sequence_parallel(const parity_block_mask *mask, int64_t sp_size) {
    PARITY_CHECK(sp_size >= 1, PARITY_ERROR_USAGE, "attention: sequence-parallel size %lld, expected >= 1",
                 (long long)sp_size);
    PARITY_CHECK(sp_size == 1 || mask->heads == 1, PARITY_ERROR_UNSUPPORTED,
                 "attention: a head-specific block mask (block_mask.heads = %lld) under sequence parallelism of %lld "
                 "ranks: rank-local head indices are not rebased for head-specific masks",
                 (long long)mask->heads, (long long)sp_size);
    return NULL;
}

parity_error *parity_attention_require_block_mask(const parity_attention_args *args, const parity_attention_dims *dims) {
    PARITY_CHECK(args->block_mask, PARITY_ERROR_USAGE,
                 "attention: this backend runs on a model-provided block mask and args.block_mask is NULL (the model "
                 "builds it from its visibility; the harness never invents one)");
    return parity_block_mask_check(args->block_mask, args, dims);
}

// test_block_mask.c: the block mask flex_attention runs on (ops/attention/block_mask.h), on the CPU:
//   (a) the classification is exact: every (query block, key block) is empty / partial / full exactly
//       as a brute force over its elements says (same document, causal, window: attention.h), for
//       causal, non-causal and sliding windows, packed documents of awkward lengths (1, 15, 100, 300,
//       1200), block sizes 64 and 128 (and mixed), N not a multiple of the block; the backward lists
//       are the transpose of the forward ones, document_ids follow cu_seqlens;
//   (b) attention computed through the mask (block_mask_reference.c: empty blocks skipped, full blocks
//       unmasked, partial blocks masked, dk/dv over the transposed lists) equals eager in f64, output
//       and dq, dk, dv, with block sizes 64, 128 and mixed;
//   (c) bad masks are rejected with the field named, and a block-mask backend without a mask too;
//   (d) the seed's sequence-parallel rule (head-specific masks rejected with its reason);
//   and the plumbing: the op tests' and the bench's calls get the mask of their visibility through the
//   descriptor's prepare; the model's attention node builds one per distinct visibility on its tape.
// The reference is registered here (this test process only) as a test-only CPU backend that runs on a
// block mask, so the plumbing meets a real PARITY_CAP_BLOCK_MASK consumer without a GPU.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "assert_ok.h"
#include "harness/bench/bench_ops.h"
#include "models/autograd/nodes.h"
#include "ops/testing/op_cases.h"
#include "ops/attention/block_mask.h"
#include "ops/attention/block_mask_reference.h"
#include "suites/tests/exec_fixture.h"

#define ROWS(array) (sizeof(array) / sizeof((array)[0]))
#define MAX_DOCUMENTS 6
#define REFERENCE "test_block_mask_reference"

static void register_reference(void) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    if (parity_registry_find(PARITY_OP_ATTENTION, REFERENCE, PARITY_DEVICE_CPU)) return;
    assert_ok(parity_registry_add(&(parity_backend){
                 .op = PARITY_OP_ATTENTION, .name = REFERENCE, .device = PARITY_DEVICE_CPU,
                 .dtypes = PARITY_DTYPE_BIT(PARITY_F64),
                 .capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_SLIDING_WINDOW |
                                 PARITY_CAP_BLOCK_MASK | PARITY_CAP_TEST_ONLY,
                 .kernels = &parity_block_mask_reference_kernels,
                 .description = "test: attention through a block mask (CPU reference)",
                 .origin = "test_block_mask"}),
             "registering the reference");
}

typedef struct visibility {
    int64_t lengths[MAX_DOCUMENTS]; // 0-terminated
    bool causal;
    int64_t window;
} visibility;

static int64_t boundaries(const visibility *v, int64_t *cu_seqlens) {
    int64_t count = 1;
    cu_seqlens[0] = 0;
    for (int s = 0; s < MAX_DOCUMENTS && v->lengths[s] > 0; s++, count++) cu_seqlens[count] = cu_seqlens[count - 1] + v->lengths[s];
    return count;
}

// ---- (a) the classification against a brute force per element ----

typedef struct classification_row {
    const char *name;
    visibility visibility;
    int64_t q_block, kv_block;
} classification_row;

#define DOCS_AWKWARD {1, 15, 100, 300, 1200}
static const classification_row classification_rows[] = {
    {"causal docs {1,15,100,300,1200} 128x128", {DOCS_AWKWARD, true, 0}, 128, 128},
    {"causal docs {1,15,100,300,1200} 64x64", {DOCS_AWKWARD, true, 0}, 64, 64},
    {"causal docs {1,15,100,300,1200} 64x128", {DOCS_AWKWARD, true, 0}, 64, 128},
    {"causal docs {1,15,100,300,1200} 128x64", {DOCS_AWKWARD, true, 0}, 128, 64},
    {"non-causal docs {1,15,100,300,1200} 128x128", {DOCS_AWKWARD, false, 0}, 128, 128},
    {"non-causal docs {1,15,100,300,1200} 64x64", {DOCS_AWKWARD, false, 0}, 64, 64},
    {"window 100 docs {1,15,100,300,1200} 128x128", {DOCS_AWKWARD, true, 100}, 128, 128},
    {"window 100 docs {1,15,100,300,1200} 64x64", {DOCS_AWKWARD, true, 100}, 64, 64},
    {"window 1 docs {1,15,100,300,1200} 64x64", {DOCS_AWKWARD, true, 1}, 64, 64},
    {"window 257 docs {300,1200} 64x128", {{300, 1200}, true, 257}, 64, 128},
    {"causal T=1 128x128", {{1}, true, 0}, 128, 128},
    {"causal T=17 64x64", {{17}, true, 0}, 64, 64},
    {"causal T=239 64x64", {{239}, true, 0}, 64, 64},
    {"non-causal T=239 128x64", {{239}, false, 0}, 128, 64},
    {"causal T=1023 128x128", {{1023}, true, 0}, 128, 128},
    {"window 512 T=4224 128x128", {{4224}, true, 512}, 128, 128},
    {"causal batch 4 x 256 128x128", {{256, 256, 256, 256}, true, 0}, 128, 128},
};

enum { EMPTY, PARTIAL, FULL };

static int brute_force(const int64_t *document, const visibility *v, const int64_t *cu_seqlens, int64_t n, int64_t q0,
                       int64_t q1, int64_t k0, int64_t k1) {
    parity_attention_args args = {.causal = v->causal, .sliding_window = v->window};
    int64_t seen = 0, total = 0;
    for (int64_t i = q0; i < q1 && i < n; i++)
        for (int64_t j = k0; j < k1 && j < n; j++) {
            int64_t start = cu_seqlens[document[i]];
            total++;
            seen += document[i] == document[j] && parity_attention_key_visible(&args, i - start, j - start);
        }
    return seen == 0 ? EMPTY : seen == total ? FULL : PARTIAL;
}

// The kind of key block kb in row `row` of a direction's lists, or -1 when listed twice.
static int listed_kind(const parity_block_mask *mask, bool forward, int64_t row, int64_t column) {
    const int32_t *pc = (forward ? mask->kv_num_blocks : mask->q_num_blocks).data;
    const int32_t *pi = (forward ? mask->kv_indices : mask->q_indices).data;
    const int32_t *fc = (forward ? mask->full_kv_num_blocks : mask->full_q_num_blocks).data;
    const int32_t *fi = (forward ? mask->full_kv_indices : mask->full_q_indices).data;
    int64_t width = forward ? mask->kv_blocks : mask->q_blocks;
    int kind = EMPTY, hits = 0;
    for (int32_t e = 0; e < pc[row]; e++)
        if (pi[row * width + e] == column) kind = PARTIAL, hits++;
    for (int32_t e = 0; e < fc[row]; e++)
        if (fi[row * width + e] == column) kind = FULL, hits++;
    return hits > 1 ? -1 : kind;
}

static void classification_is_exact(const classification_row *row) {
    int64_t cu_seqlens[MAX_DOCUMENTS + 1];
    int64_t count = boundaries(&row->visibility, cu_seqlens), n = cu_seqlens[count - 1];
    parity_block_mask mask;
    assert_ok(parity_block_mask_build(PARITY_CPU, cu_seqlens, count, n, row->visibility.causal, row->visibility.window,
                                     row->q_block, row->kv_block, &mask),
             row->name);
    cr_assert_eq(mask.heads, 1);
    cr_assert_eq(mask.q_blocks, (n + row->q_block - 1) / row->q_block, "%s", row->name);
    cr_assert_eq(mask.kv_blocks, (n + row->kv_block - 1) / row->kv_block, "%s", row->name);
    int64_t *document = malloc((size_t)n * sizeof *document);
    for (int64_t s = 0; s + 1 < count; s++)
        for (int64_t i = cu_seqlens[s]; i < cu_seqlens[s + 1]; i++) document[i] = s;
    const int32_t *document_ids = mask.mask_mod.document_ids.data;
    for (int64_t i = 0; i < n; i++) cr_assert_eq(document_ids[i], document[i], "%s: document_ids[%lld]", row->name, (long long)i);
    int64_t kinds[3] = {0};
    for (int64_t qb = 0; qb < mask.q_blocks; qb++)
        for (int64_t kb = 0; kb < mask.kv_blocks; kb++) {
            int expected = brute_force(document, &row->visibility, cu_seqlens, n, qb * row->q_block,
                                       (qb + 1) * row->q_block, kb * row->kv_block, (kb + 1) * row->kv_block);
            int forward = listed_kind(&mask, true, qb, kb), backward = listed_kind(&mask, false, kb, qb);
            cr_assert_eq(forward, expected, "%s: query block %lld, key block %lld listed %d, brute force %d", row->name,
                         (long long)qb, (long long)kb, forward, expected);
            cr_assert_eq(backward, expected, "%s: the backward lists of key block %lld, query block %lld", row->name,
                         (long long)kb, (long long)qb);
            kinds[expected]++;
        }
    // ascending lists: the value checks (which also recompute soundness) pass on what the builder made
    assert_ok(parity_block_mask_check_values(&mask, cu_seqlens, count), row->name);
    // the rows exercise every kind where the visibility allows it
    int64_t block = row->q_block > row->kv_block ? row->q_block : row->kv_block;
    if (n > block && (row->visibility.causal || count > 2)) cr_expect_gt(kinds[PARTIAL], 0, "%s: no partial block", row->name);
    if (n > 2 * block && (row->visibility.window == 0 || row->visibility.window >= 2 * block))
        cr_expect_gt(kinds[FULL], 0, "%s: no full block", row->name);
    if (n > 2 * block && row->visibility.causal) cr_expect_gt(kinds[EMPTY], 0, "%s: no empty block", row->name);
    free(document);
    parity_block_mask_free(&mask);
    cr_assert_null(mask.kv_indices.data);
    parity_block_mask_free(&mask); // twice is safe
}

Test(block_mask, classification_is_exact) {
    for (size_t i = 0; i < ROWS(classification_rows); i++) classification_is_exact(&classification_rows[i]);
}

// ---- (b) attention through the mask equals eager (f64), forward and backward ----

typedef struct equality_row {
    const char *name;
    visibility visibility;
    int64_t query_heads, kv_heads, head_dim, value_dim;
    int64_t q_block, kv_block;
} equality_row;

static const equality_row equality_rows[] = {
    {"causal docs {1,15,100,300} gqa 2/1 64x64", {{1, 15, 100, 300}, true, 0}, 2, 1, 8, 8, 64, 64},
    {"causal docs {1,15,100,300} gqa 2/1 128x128", {{1, 15, 100, 300}, true, 0}, 2, 1, 8, 8, 128, 128},
    {"causal docs {1,15,100,300} mha 2/2 64x128", {{1, 15, 100, 300}, true, 0}, 2, 2, 8, 8, 64, 128},
    {"non-causal docs {1,15,100,300} 128x64", {{1, 15, 100, 300}, false, 0}, 2, 1, 8, 8, 128, 64},
    {"window 37 docs {1,15,100,300} 64x64", {{1, 15, 100, 300}, true, 37}, 2, 1, 8, 8, 64, 64},
    {"window 100 T=239 mla D=12 Dv=8 128x128", {{239}, true, 100}, 2, 2, 12, 8, 128, 128},
    {"causal T=1 mqa 3/1 64x64", {{1}, true, 0}, 3, 1, 8, 8, 64, 64},
};

typedef struct attention_tensors {
    parity_tensor q, k, v, cu, out, dout, dq, dk, dv;
} attention_tensors;

static void random_tensor(parity_tensor *t, const char *name, int64_t a, int64_t b, int64_t c) {
    assert_ok(parity_tensor_alloc(t, PARITY_F64, PARITY_CPU, PARITY_SHAPE(a, b, c)), name);
    assert_ok(parity_rng_fill(NULL, t, parity_rng_stream_named(77, name), PARITY_RNG_NORMAL, 0, 1), name);
}

static void attention_inputs(const equality_row *row, attention_tensors *t, parity_attention_args *args,
                             parity_attention_grads *grads) {
    int64_t cu_seqlens[MAX_DOCUMENTS + 1], count = boundaries(&row->visibility, cu_seqlens), n = cu_seqlens[count - 1];
    memset(t, 0, sizeof *t);
    random_tensor(&t->q, "q", n, row->query_heads, row->head_dim);
    random_tensor(&t->k, "k", n, row->kv_heads, row->head_dim);
    random_tensor(&t->v, "v", n, row->kv_heads, row->value_dim);
    random_tensor(&t->dout, "do", n, row->query_heads, row->value_dim);
    assert_ok(parity_tensor_alloc(&t->out, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n, row->query_heads, row->value_dim)), "o");
    assert_ok(parity_tensor_alloc(&t->dq, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n, row->query_heads, row->head_dim)), "dq");
    assert_ok(parity_tensor_alloc(&t->dk, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n, row->kv_heads, row->head_dim)), "dk");
    assert_ok(parity_tensor_alloc(&t->dv, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n, row->kv_heads, row->value_dim)), "dv");
    assert_ok(parity_tensor_alloc(&t->cu, PARITY_I64, PARITY_CPU, PARITY_SHAPE(count)), "cu_seqlens");
    memcpy(t->cu.data, cu_seqlens, (size_t)count * sizeof *cu_seqlens);
    *args = (parity_attention_args){.query = &t->q, .key = &t->k, .value = &t->v, .cu_seqlens = &t->cu,
                                    .scale = 1 / sqrt((double)row->head_dim), .causal = row->visibility.causal,
                                    .sliding_window = row->visibility.window, .output = &t->out};
    *grads = (parity_attention_grads){.doutput = &t->dout, .dquery = &t->dq, .dkey = &t->dk, .dvalue = &t->dv};
}

static void attention_release(attention_tensors *t) {
    parity_tensor *all[] = {&t->q, &t->k, &t->v, &t->cu, &t->out, &t->dout, &t->dq, &t->dk, &t->dv};
    for (size_t i = 0; i < ROWS(all); i++) parity_tensor_release(all[i]);
}

static double relative_error(const parity_tensor *reference, const parity_tensor *candidate) {
    double difference = 0, norm = 0;
    for (int64_t i = 0; i < reference->numel; i++) {
        double a = parity_tensor_get(reference, i), b = parity_tensor_get(candidate, i);
        if (!isfinite(b)) return INFINITY;
        difference += (a - b) * (a - b);
        norm += a * a;
    }
    return norm == 0 ? sqrt(difference) : sqrt(difference / norm);
}

static void copy_of(parity_tensor *out, const parity_tensor *source) {
    assert_ok(parity_tensor_to(out, source, PARITY_CPU, source->dtype), "copy");
}

static void run_kernels(const parity_attention_kernels *kernels, const parity_attention_args *args,
                        const parity_attention_grads *grads, const char *what) {
    parity_saved saved = {0};
    assert_ok(kernels->forward(parity_test_exec(PARITY_CPU), args, &saved), what);
    assert_ok(kernels->backward(parity_test_exec(PARITY_CPU), args, &saved, grads), what);
    parity_saved_release(&saved);
}

static void attention_through_the_mask_equals_eager(const equality_row *row) {
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    attention_tensors t;
    parity_attention_args args;
    parity_attention_grads grads;
    attention_inputs(row, &t, &args, &grads);
    run_kernels(parity_registry_find(PARITY_OP_ATTENTION, "eager", PARITY_DEVICE_CPU)->kernels, &args, &grads, "eager");
    parity_tensor eager[4];
    copy_of(&eager[0], &t.out);
    copy_of(&eager[1], &t.dq);
    copy_of(&eager[2], &t.dk);
    copy_of(&eager[3], &t.dv);
    int64_t n = t.q.shape[0];
    parity_block_mask mask;
    assert_ok(parity_block_mask_build(PARITY_CPU, t.cu.data, t.cu.numel, n, row->visibility.causal, row->visibility.window,
                                     row->q_block, row->kv_block, &mask),
             row->name);
    args.block_mask = &mask;
    run_kernels(&parity_block_mask_reference_kernels, &args, &grads, row->name);
    const parity_tensor *through[4] = {&t.out, &t.dq, &t.dk, &t.dv};
    const char *names[4] = {"output", "dq", "dk", "dv"};
    for (int i = 0; i < 4; i++) {
        double error = relative_error(&eager[i], through[i]);
        cr_expect(error <= 1e-13, "%s: %s differs from eager f64 by %.3e (relative)", row->name, names[i], error);
        parity_tensor_release(&eager[i]);
    }
    parity_block_mask_free(&mask);
    attention_release(&t);
}

Test(block_mask, attention_through_the_mask_equals_eager) {
    for (size_t i = 0; i < ROWS(equality_rows); i++) attention_through_the_mask_equals_eager(&equality_rows[i]);
}

// ---- (c) bad masks are rejected, naming the field ----

typedef struct rejection_row {
    const char *name;
    void (*spoil)(parity_block_mask *mask);
    const char *expected; // substring of the message
} rejection_row;

static int32_t *at(parity_tensor *t, int64_t i) { return (int32_t *)t->data + i; }
static void wrong_tokens(parity_block_mask *m) { m->tokens += 1; }
static void wrong_heads(parity_block_mask *m) { m->heads = 3; }
static void zero_block(parity_block_mask *m) { m->q_block = 0; }
static void wrong_q_blocks(parity_block_mask *m) { m->q_blocks += 1; }
static void wrong_kv_blocks(parity_block_mask *m) { m->kv_blocks -= 1; }
static void count_too_large(parity_block_mask *m) { *at(&m->kv_num_blocks, 2) = (int32_t)m->kv_blocks + 1; }
static void negative_count(parity_block_mask *m) { *at(&m->full_q_num_blocks, 0) = -1; }
static void index_out_of_range(parity_block_mask *m) { *at(&m->kv_indices, 2 * m->kv_blocks) = (int32_t)m->kv_blocks; }
static void not_ascending(parity_block_mask *m) {
    // query block 4 of N = 300 (64 x 64) lists full blocks 0..3: swap two
    int32_t *row = at(&m->full_kv_indices, 4 * m->kv_blocks);
    int32_t first = row[0];
    row[0] = row[1];
    row[1] = first;
}
static void full_over_hidden(parity_block_mask *m) { // move query block 0's partial block 0 to its full list
    *at(&m->kv_num_blocks, 0) = 0;
    *at(&m->full_kv_num_blocks, 0) = 1;
    *at(&m->full_kv_indices, 0) = 0;
    *at(&m->q_num_blocks, 0) -= 1; // and keep the transpose consistent: the soundness check must see it
    int32_t *column = at(&m->q_indices, 0);
    for (int32_t e = 0; e < *at(&m->q_num_blocks, 0); e++) column[e] = column[e + 1];
    int32_t *full = at(&m->full_q_indices, 0);
    for (int32_t e = *at(&m->full_q_num_blocks, 0); e > 0; e--) full[e] = full[e - 1];
    full[0] = 0;
    *at(&m->full_q_num_blocks, 0) += 1;
}
static void skipped_block(parity_block_mask *m) { *at(&m->kv_num_blocks, 3) = 0; *at(&m->q_num_blocks, 3) = 0; }
static void untransposed(parity_block_mask *m) { *at(&m->q_num_blocks, 1) = 0; }
static void listed_twice(parity_block_mask *m) {
    *at(&m->kv_indices, 4 * m->kv_blocks) = 0; // query block 4's partial block 4 becomes 0, also listed full
}
static void wrong_document(parity_block_mask *m) { *at(&m->mask_mod.document_ids, 0) = 5; }
static void wrong_causal(parity_block_mask *m) { m->mask_mod.causal = false; }
static void wrong_window(parity_block_mask *m) { m->mask_mod.sliding_window = 7; }
static void wrong_dtype(parity_block_mask *m) { m->full_kv_indices.dtype = PARITY_F32; }
static void wrong_shape(parity_block_mask *m) { m->q_indices.shape[2] -= 1; m->q_indices.numel = 0; }

static const rejection_row rejection_rows[] = {
    {"tokens", wrong_tokens, "block_mask.tokens is 301, expected N = 300"},
    {"heads", wrong_heads, "block_mask.heads is 3, expected 1 (head-broadcast) or Hq = 2"},
    {"block size", zero_block, "block_mask.q_block x kv_block is 0 x 64"},
    {"q_blocks", wrong_q_blocks, "block_mask.q_blocks is 6, expected ceil(300 / 64) = 5"},
    {"kv_blocks", wrong_kv_blocks, "block_mask.kv_blocks is 4, expected ceil(300 / 64) = 5"},
    {"count too large", count_too_large, "block_mask.kv_num_blocks[0, 2] = 6, expected 0..5"},
    {"negative count", negative_count, "block_mask.full_q_num_blocks[0, 0] = -1, expected 0..5"},
    {"index out of range", index_out_of_range, "block_mask.kv_indices[0, 2, 0] = 5, expected 0..4"},
    {"not ascending", not_ascending, "block_mask.full_kv_indices[0, 4] is not ascending at entry 1"},
    {"full over hidden pairs", full_over_hidden, "block_mask.full_kv_indices lists key block 0 of query block 0"},
    {"a visible block skipped", skipped_block, "skip key block 3 of query block 3"},
    {"backward not the transpose", untransposed, "block_mask.q_indices / full_q_indices are not the transpose"},
    {"listed partial and full", listed_twice, "block_mask.full_kv_indices[0, 4] lists block 0, which kv_indices also lists"},
    {"document_ids", wrong_document, "block_mask.mask_mod.document_ids[0] = 5, expected 0"},
    {"causal", wrong_causal, "block_mask.mask_mod.causal is false, the call's causal is true"},
    {"window", wrong_window, "block_mask.mask_mod.sliding_window is 7, the call's is 0"},
    {"dtype", wrong_dtype, "block_mask.full_kv_indices is fp32, expected int32"},
    {"shape", wrong_shape, "block_mask.q_indices has shape (1, 5, 4), expected (1, 5, 5) contiguous"},
};

static const equality_row rejection_call = {"N=300", {{300}, true, 0}, 2, 1, 8, 8, 64, 64};

static void expect_message(parity_error *error, const char *expected, const char *what) {
    cr_assert_not_null(error, "%s: accepted", what);
    char message[512];
    parity_error_format(error, message, sizeof message);
    cr_expect(strstr(message, expected) != NULL, "%s: \"%s\" does not contain \"%s\"", what, message, expected);
    parity_error_free(error);
}

static void a_bad_mask_is_rejected_naming_the_field(const rejection_row *row) {
    attention_tensors t;
    parity_attention_args args;
    parity_attention_grads grads;
    attention_inputs(&rejection_call, &t, &args, &grads);
    parity_attention_dims dims;
    assert_ok(parity_attention_check(&args, &dims), "the call");
    parity_block_mask mask;
    assert_ok(parity_block_mask_build(PARITY_CPU, t.cu.data, t.cu.numel, 300, true, 0, 64, 64, &mask), "build");
    args.block_mask = &mask;
    assert_ok(parity_attention_require_block_mask(&args, &dims), "the unspoilt mask");
    row->spoil(&mask);
    expect_message(parity_attention_require_block_mask(&args, &dims), row->expected, row->name);
    // and the reference backend refuses the call with it
    parity_saved saved = {0};
    expect_message(parity_block_mask_reference_kernels.forward(parity_test_exec(PARITY_CPU), &args, &saved), row->expected,
                   row->name);
    parity_saved_release(&saved);
    if (row->spoil == wrong_dtype) mask.full_kv_indices.dtype = PARITY_I32; // release frees by allocation, but be tidy
    parity_block_mask_free(&mask);
    attention_release(&t);
}

Test(block_mask, a_bad_mask_is_rejected_naming_the_field) {
    for (size_t i = 0; i < ROWS(rejection_rows); i++) a_bad_mask_is_rejected_naming_the_field(&rejection_rows[i]);
}

Test(block_mask, a_block_mask_backend_without_a_mask_is_an_error) {
    attention_tensors t;
    parity_attention_args args;
    parity_attention_grads grads;
    attention_inputs(&rejection_call, &t, &args, &grads);
    parity_attention_dims dims;
    assert_ok(parity_attention_check(&args, &dims), "the call");
    parity_error *error = parity_attention_require_block_mask(&args, &dims);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_USAGE);
    expect_message(error, "runs on a model-provided block mask and args.block_mask is NULL", "no mask");
    parity_saved saved = {0};
    expect_message(parity_block_mask_reference_kernels.forward(parity_test_exec(PARITY_CPU), &args, &saved),
                   "args.block_mask is NULL", "the reference without a mask");
    attention_release(&t);
}

Test(block_mask, the_builder_rejects_bad_visibility) {
    int64_t cu_seqlens[] = {0, 5, 9};
    parity_block_mask mask;
    expect_message(parity_block_mask_build(PARITY_CPU, cu_seqlens, 3, 9, true, 0, 0, 64, &mask), "block sizes 0 x 64",
                   "block size");
    expect_message(parity_block_mask_build(PARITY_CPU, cu_seqlens, 3, 9, false, 4, 64, 64, &mask),
                   "sliding_window 4, expected 0 or > 0 with causal attention", "window without causal");
    expect_message(parity_block_mask_build(PARITY_CPU, cu_seqlens, 3, 10, true, 0, 64, 64, &mask),
                   "cu_seqlens ends at 9, expected N = 10", "boundaries");
    cr_expect_null(mask.kv_indices.data);
}

// ---- (d) the sequence-parallel rule ----

Test(block_mask, sequence_parallel_takes_only_head_broadcast_masks) {
    int64_t cu_seqlens[] = {0, 200};
    parity_block_mask mask;
    assert_ok(parity_block_mask_build(PARITY_CPU, cu_seqlens, 2, 200, true, 0, 64, 64, &mask), "build");
    assert_ok(parity_block_mask_check_sequence_parallel(&mask, 1), "head-broadcast, sp 1");
    assert_ok(parity_block_mask_check_sequence_parallel(&mask, 4), "head-broadcast, sp 4");
    mask.heads = 8; // a head-specific mask (the sizes alone: the rule reads nothing else)
    assert_ok(parity_block_mask_check_sequence_parallel(&mask, 1), "head-specific, sp 1");
    parity_error *error = parity_block_mask_check_sequence_parallel(&mask, 4);
    cr_expect_eq(parity_error_kind_of(error), PARITY_ERROR_UNSUPPORTED);
    expect_message(error, "rank-local head indices are not rebased for head-specific masks", "head-specific, sp 4");
    expect_message(parity_block_mask_check_sequence_parallel(&mask, 0), "sequence-parallel size 0", "sp 0");
    mask.heads = 1;
    parity_block_mask_free(&mask);
}

// ---- the plumbing: op tests, bench, the model's attention node ----

// Every attention op-test row through the descriptor's prepare: the reference gets the mask of the
// row's visibility and equals eager in f64, output and gradients.
Test(block_mask, op_test_rows_get_the_mask_of_their_visibility) {
    register_reference();
    for (size_t i = 0; i < attention_case_list.count; i++) {
        const op_check_case *test_case = &attention_case_list.cases[i];
        op_check_state eager, through;
        assert_ok(op_check_run(test_case, (op_check_run_options){.dtype = PARITY_F64}, &eager), test_case->name);
        cr_expect_null(eager.prepared, "%s: eager got a block mask", test_case->name);
        assert_ok(op_check_run(test_case, (op_check_run_options){.backend = REFERENCE, .dtype = PARITY_F64}, &through),
                 test_case->name);
        cr_assert_not_null(through.prepared, "%s: no block mask prepared", test_case->name);
        op_check_error_report report;
        assert_ok(op_check_compare_states(&eager, &through, &report), test_case->name);
        cr_expect(report.tensors_compared == 4 && report.worst_error <= 1e-13, "%s: %s differs by %.3e", test_case->name,
                  report.worst_tensor, report.worst_error);
        op_check_release(&through);
        op_check_release(&eager);
    }
}

// `parity bench op attention`'s inputs: a block-mask backend fails before prepare (no mask) and runs after
// it; eager after it gets none again.
Test(block_mask, bench_inputs_get_the_mask_of_their_visibility) {
    register_reference();
    const parity_bench_op *op = parity_bench_find_op(PARITY_OP_ATTENTION);
    cr_assert_not_null(op);
    parity_bench_shape shape;
    assert_ok(parity_bench_parse_shape(op, "1x2x1x300x8x3", &shape), "shape");
    parity_bench_inputs *inputs = NULL;
    assert_ok(parity_bench_setup(op, &shape, PARITY_F64, PARITY_CPU, &inputs), "setup");
    const parity_backend *reference = parity_registry_find(PARITY_OP_ATTENTION, REFERENCE, PARITY_DEVICE_CPU);
    const parity_backend *eager = parity_registry_find(PARITY_OP_ATTENTION, "eager", PARITY_DEVICE_CPU);
    const parity_exec *exec = parity_test_exec(PARITY_CPU);
    parity_saved saved = {0};
    expect_message(parity_bench_forward(exec, op, inputs, reference->kernels, &saved), "args.block_mask is NULL",
                   "before prepare");
    assert_ok(parity_bench_prepare(op, inputs, reference), "prepare the reference");
    assert_ok(parity_bench_forward(exec, op, inputs, reference->kernels, &saved), "reference forward");
    assert_ok(parity_bench_backward(exec, op, inputs, reference->kernels, &saved), "reference backward");
    parity_saved_release(&saved);
    assert_ok(parity_bench_prepare(op, inputs, eager), "prepare eager");
    assert_ok(parity_bench_forward(exec, op, inputs, eager->kernels, &saved), "eager forward");
    parity_saved_release(&saved);
    assert_ok(parity_bench_prepare(op, inputs, reference), "prepare the reference again");
    parity_bench_teardown(inputs);
}

// The model's attention node: a block-mask backend gets the mask built from what the model passes,
// one per distinct (causal, window) on the tape, and the tape's gradients equal eager's.
static void attention_graph(const parity_backend *backend, attention_tensors *t, parity_tensor *out,
                            parity_tensor gradients[3], size_t *masks) {
    parity_tape tape;
    parity_tape_init(&tape, parity_test_exec(PARITY_CPU), PARITY_F64, true);
    parity_variable *q, *k, *v, *full, *windowed, *again, *sum, *total, *loss;
    assert_ok(parity_tape_borrow(&tape, "q", &t->q, true, &q), "q");
    assert_ok(parity_tape_borrow(&tape, "k", &t->k, true, &k), "k");
    assert_ok(parity_tape_borrow(&tape, "v", &t->v, true, &v), "v");
    double scale = 1 / sqrt((double)t->q.shape[2]);
    assert_ok(parity_node_attention(&tape, backend, "full", q, k, v, &t->cu, scale, true, 0, &full), "full");
    assert_ok(parity_node_attention(&tape, backend, "sliding", q, k, v, &t->cu, scale, true, 50, &windowed), "sliding");
    assert_ok(parity_node_attention(&tape, backend, "full again", q, k, v, &t->cu, scale, true, 0, &again), "again");
    *masks = tape.block_mask_count;
    const parity_backend *add = parity_registry_find("add", "eager", PARITY_DEVICE_CPU);
    assert_ok(parity_node_add(&tape, add, "sum", full, windowed, &sum), "sum");
    assert_ok(parity_node_add(&tape, add, "total", sum, again, &total), "total");
    // loss = cross_entropy(flat(total) @ head^T, targets): every output element reaches the loss
    int64_t n = t->q.shape[0], width = total->value.shape[1] * total->value.shape[2];
    parity_variable *flat, *head;
    assert_ok(parity_tape_reshape(&tape, total, PARITY_SHAPE(n, width), &flat), "flat");
    parity_tensor head_value, targets;
    random_tensor(&head_value, "head", 1, 5, width);
    assert_ok(parity_tensor_alloc(&targets, PARITY_I64, PARITY_CPU, PARITY_SHAPE(n)), "targets");
    for (int64_t i = 0; i < n; i++) ((int64_t *)targets.data)[i] = i % 5;
    parity_tensor head_view;
    assert_ok(parity_tensor_reshape(&head_view, &head_value, PARITY_SHAPE(5, width)), "head view");
    assert_ok(parity_tape_borrow(&tape, "head", &head_view, false, &head), "head");
    assert_ok(parity_node_cross_entropy(&tape, parity_registry_find(PARITY_OP_CROSS_ENTROPY, "eager", PARITY_DEVICE_CPU),
                                       "loss", flat, head, &targets, 0, &loss, NULL),
             "loss");
    assert_ok(parity_tape_backward(&tape, loss), "backward");
    copy_of(out, &total->value);
    copy_of(&gradients[0], &q->gradient);
    copy_of(&gradients[1], &k->gradient);
    copy_of(&gradients[2], &v->gradient);
    parity_tape_release(&tape);
    cr_expect_null(tape.block_masks, "the tape keeps its masks past release");
    parity_tensor_release(&head_value);
    parity_tensor_release(&targets);
}

Test(block_mask, the_model_node_builds_one_mask_per_visibility) {
    register_reference();
    const equality_row row = {"docs {1,15,100,300}", {{1, 15, 100, 300}, true, 0}, 2, 1, 8, 8, 128, 128};
    attention_tensors t;
    parity_attention_args args;
    parity_attention_grads grads;
    attention_inputs(&row, &t, &args, &grads);
    parity_tensor eager_out, reference_out, eager_gradients[3], reference_gradients[3];
    size_t eager_masks, reference_masks;
    attention_graph(parity_registry_find(PARITY_OP_ATTENTION, "eager", PARITY_DEVICE_CPU), &t, &eager_out,
                    eager_gradients, &eager_masks);
    attention_graph(parity_registry_find(PARITY_OP_ATTENTION, REFERENCE, PARITY_DEVICE_CPU), &t, &reference_out,
                    reference_gradients, &reference_masks);
    cr_expect_eq(eager_masks, 0, "eager got block masks");
    cr_expect_eq(reference_masks, 2, "one mask per distinct (causal, window), got %zu", reference_masks);
    cr_expect(relative_error(&eager_out, &reference_out) <= 1e-13, "output: %.3e", relative_error(&eager_out, &reference_out));
    const char *names[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; i++) {
        double error = relative_error(&eager_gradients[i], &reference_gradients[i]);
        cr_expect(error <= 1e-13, "%s: %.3e", names[i], error);
        parity_tensor_release(&eager_gradients[i]);
        parity_tensor_release(&reference_gradients[i]);
    }
    parity_tensor_release(&eager_out);
    parity_tensor_release(&reference_out);
    attention_release(&t);
}
